// The emulated device's shared-memory bank-conflict counter and global-memory sector counter
// (src/backends/emu/bankcheck.h): their models on requests written out by hand, planted conflicts and uncoalesced
// loads in small kernels counted and the conflict-free and coalesced ones at their fewest, gemm_f64's kernel in every
// form free of conflicts in its fragment loads and its slab stores, and every other emulated kernel's shared and
// global requests. Compiled for the emulated device (-DSDC_EMU) with the race checker's instrumentation, like
// test_racecheck.cpp.
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/emu/bankcheck.h"
#include "src/backends/emu/emu_device.h"
#include "src/core/family.h"
#include "src/core/patterns.h"
#include "tests/unit/backends/emu_problem.h"
#include "tests/unit/catch.h"

using namespace sdc;
namespace bc = sdc::emu::bankcheck;

namespace {

// A request of n-byte accesses, lane l at byte offset f(l) (negative: inactive): its shared-memory wavefronts and
// their ideal, or with global set its global-memory sectors and theirs.
template <class F>
std::pair<unsigned, unsigned> request(unsigned n, F f, bool global = false) {
  int64_t offsets[32];
  for (int l = 0; l < 32; ++l) offsets[l] = f(l);
  unsigned ideal = 0;
  const unsigned w = global ? bc::sectors(offsets, n, ideal) : bc::wavefronts(offsets, n, ideal);
  return {w, ideal};
}
using Pair = std::pair<unsigned, unsigned>;

// Every thread stores an int at word STRIDE * lane of dynamic shared memory, then loads it back after a barrier.
template <int STRIDE>
__global__ void strided(int* out) {
  int* s = cuda::dynamic_shared<int>() + STRIDE * 32 * (threadIdx.x / 32);
  s[STRIDE * (threadIdx.x % 32)] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = s[STRIDE * (threadIdx.x % 32)];
}

// Even lanes only store, at word `lane` (16 words in 16 banks: conflict-free; had the odd lanes counted, at words of
// their own, still one wavefront, but 16 more lanes), in a loop that odd lanes skip; then lanes 0 and 16 store at
// words 0 and 32 (bank 0 twice: 2 wavefronts, whether the others count or not).
__global__ void even_lanes(int* out) {
  int* s = cuda::dynamic_shared<int>();
  for (unsigned i = 0; i < (threadIdx.x % 2 == 0 ? 3u : 0u); ++i) s[threadIdx.x] = static_cast<int>(i);
  if (threadIdx.x % 16 == 0) s[64 + 2 * threadIdx.x] = 1;
  out[threadIdx.x] = 0;
}

// Every thread loads the int at word STRIDE * thread of `in` and stores it at word `thread` of out.
template <int STRIDE>
__global__ void gather(int* out, const int* in) {
  out[threadIdx.x] = in[STRIDE * threadIdx.x];
}

// 16-byte cp.async copies, consecutive per lane; a volatile store beside them (not counted).
__global__ void copies(int* out, const double* src) {
  double* s = cuda::dynamic_shared<double>();
  cuda::cp_async<16>(s + 2 * threadIdx.x, src + 2 * threadIdx.x, 16);
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
  volatile int* v = reinterpret_cast<volatile int*>(s + 64);
  v[32 * threadIdx.x % 1024] = 1;  // every lane the same bank: would be 32 wavefronts, were it counted
  out[threadIdx.x] = 0;
}

std::unique_ptr<cuda::DeviceRuntime> device() {
  emu::Spec spec;
  spec.cc_major = 9;
  spec.sample_blocks = 0;  // every block
  static std::vector<std::vector<DeviceInfo>> keep;
  keep.push_back(emu::create_devices({spec}));
  auto rt = cuda::open_emulated_runtime(keep.back()[0]);
  rt->make_current();
  return rt;
}

// Waits for stream s (a copy waits for the work before it).
void finish(cuda::DeviceRuntime& rt, const cuda::DeviceBuffer& any, cudaStream_t s) {
  char c;
  rt.copy(&c, any.get(), 1, s);
}

// Runs kernel(out, extra...) as one block of `threads` with `smem` bytes of dynamic shared memory, counting its
// shared-memory requests; returns the sites.
template <class K, class... Extra>
std::vector<bc::Site> counted(cuda::DeviceRuntime& rt, const char* name, K kernel, unsigned threads, size_t smem,
                              Extra... extra) {
  cuda::Stream s(rt);
  cuda::DeviceBuffer out(rt, threads * sizeof(int));
  bc::start();
  cuda::launch_shared(name, kernel, 1, threads, smem, s.get(), out.as<int>(), extra...);
  finish(rt, out, s.get());
  bc::stop();
  return bc::sites();
}

// The shared-memory sites' totals: {requests, wavefronts, ideal}, of the stores or of the loads.
struct Sum {
  uint64_t requests = 0, wavefronts = 0, ideal = 0;
};
Sum sum(const std::vector<bc::Site>& sites, bool write) {
  Sum s;
  for (const bc::Site& x : sites)
    if (x.write == write && !x.global) s.requests += x.requests, s.wavefronts += x.wavefronts, s.ideal += x.ideal;
  return s;
}

// Counting for a scope: arm() watches the ranges and starts counting, and whatever ends the scope stops counting and
// drops the ranges (a failure must not leave a later test counting in freed buffers).
struct Counting {
  Counting() = default;
  Counting(const Counting&) = delete;
  Counting& operator=(const Counting&) = delete;
  void arm(const std::vector<test::Range>& ranges) {
    for (const test::Range& r : ranges) bc::watch_global(r.p, r.bytes);
    bc::start();
  }
  ~Counting() {
    bc::stop();
    bc::unwatch_global();
  }
};

}  // namespace

TEST_CASE("the bank model: 4-byte words per bank, 8-byte requests by half-warps, 16-byte by quarter-warps",
          "[racecheck][bankcheck]") {
  CHECK(request(4, [](int l) { return 4 * l; }) == Pair{1, 1});               // a word per bank
  CHECK(request(4, [](int) { return 40; }) == Pair{1, 1});                    // one word: a broadcast
  CHECK(request(4, [](int l) { return 8 * l; }) == Pair{2, 1});               // two words per bank
  CHECK(request(4, [](int l) { return 128 * l; }) == Pair{32, 1});            // every lane in bank 0
  CHECK(request(4, [](int l) { return l % 2 ? -1 : 4 * l; }) == Pair{1, 1});  // inactive lanes
  CHECK(request(2, [](int l) { return 2 * l; }) == Pair{1, 1});               // two lanes a word
  CHECK(request(8, [](int l) { return 8 * l; }) == Pair{2, 2});               // each half-warp 128 bytes
  CHECK(request(8, [](int l) { return 16 * l; }) == Pair{4, 2});              // each half-warp 256 bytes: 2-way
  CHECK(request(8, [](int l) { return l < 16 ? 8 * l : -1; }) == Pair{1, 1});
  CHECK(request(8, [](int l) { return 8 * (l % 16); }) == Pair{2, 2});  // the halves never conflict with each other
  CHECK(request(16, [](int l) { return 16 * l; }) == Pair{4, 4});
  CHECK(request(16, [](int l) { return 32 * l; }) == Pair{8, 4});  // each quarter 256 bytes
  CHECK(request(1, [](int l) { return l; }) == Pair{1, 1});        // four lanes a word
  CHECK(request(4, [](int l) { return 4 * l + 2; }) == Pair{2, 1});  // misaligned: 33 words, bank 0 twice
  CHECK_THROWS_AS(request(12, [](int l) { return 12 * l; }), std::invalid_argument);  // no such request
  // The fp64 tensor-core fragment, lane (g, t) = (l / 4, l % 4) at row g, column t, rows of 12 doubles: conflict-free;
  // rows of 8 doubles: g and g + 2 share banks.
  CHECK(request(8, [](int l) { return 8 * (l / 4 * 12 + l % 4); }) == Pair{2, 2});
  CHECK(request(8, [](int l) { return 8 * (l / 4 * 8 + l % 4); }) == Pair{4, 2});
}

TEST_CASE("the sector model: a warp's global request takes each 32-byte sector its lanes touch once",
          "[racecheck][bankcheck]") {
  const auto global = [](unsigned n, auto f) { return request(n, f, true); };
  CHECK(global(4, [](int l) { return 4 * l; }) == Pair{4, 4});               // 128 consecutive bytes
  CHECK(global(4, [](int l) { return 8 * l; }) == Pair{8, 4});               // every other word: half of each sector
  CHECK(global(4, [](int l) { return 128 * l; }) == Pair{32, 4});            // a sector per lane
  CHECK(global(8, [](int) { return 40; }) == Pair{1, 1});                    // one double: a broadcast
  CHECK(global(16, [](int l) { return 16 * l; }) == Pair{16, 16});           // 512 consecutive bytes
  CHECK(global(16, [](int l) { return 32 * l; }) == Pair{32, 16});           // half of each sector
  CHECK(global(4, [](int l) { return 4 * l + 16; }) == Pair{5, 4});          // misaligned: 128 bytes over 5 sectors
  CHECK(global(8, [](int l) { return l == 0 ? 28 : -1; }) == Pair{2, 1});    // one lane across a sector boundary
  CHECK(global(4, [](int l) { return l % 2 ? -1 : 4 * l; }) == Pair{4, 2});  // inactive lanes: 64 bytes in 4 sectors
  CHECK(global(4, [](int l) { return 4 * (l / 2); }) == Pair{2, 2});         // pairs of lanes share a word
  CHECK_THROWS_AS(global(12, [](int l) { return 12 * l; }), std::invalid_argument);
}

TEST_CASE(
    "planted uncoalesced global loads are counted in the watched range, coalesced ones at their fewest, "
    "unwatched memory not at all",
    "[racecheck][bankcheck]") {
  auto rt = device();
  cuda::DeviceBuffer in(*rt, 64 * 32 * 4);
  std::vector<bc::Site> one, wide;
  {
    Counting scope;
    bc::watch_global(in.get(), 64 * 32 * 4);  // not the output: its stores are not counted
    one = counted(*rt, "gather<1>", gather<1>, 64, 0, in.as<const int>());
    wide = counted(*rt, "gather<32>", gather<32>, 64, 0, in.as<const int>());
  }
  const auto unwatched = counted(*rt, "gather<32>", gather<32>, 64, 0, in.as<const int>());
  REQUIRE(one.size() == 1);
  CHECK(one[0].global);
  CHECK(!one[0].write);
  CHECK(one[0].requests == 2);  // a load per warp
  CHECK(one[0].wavefronts == 2 * 4);
  CHECK(one[0].ideal == 2 * 4);
  REQUIRE(wide.size() == 1);
  CHECK(wide[0].wavefronts == 2 * 32);  // 128 bytes apart: a sector per lane
  CHECK(wide[0].ideal == 2 * 4);
  CHECK(wide[0].describe().find("loads in kernel gather<32>") == 0);
  CHECK(wide[0].describe().find("take 64 global-memory sectors, 8 at best") != std::string::npos);
  CHECK(unwatched.empty());
}

TEST_CASE("planted bank conflicts are counted, at their site, and conflict-free requests are not",
          "[racecheck][bankcheck]") {
  auto rt = device();
  const auto one = counted(*rt, "strided<1>", strided<1>, 64, 64 * 4);
  const Sum w1 = sum(one, true), r1 = sum(one, false);
  CHECK(w1.requests == 2);  // a store per warp
  CHECK(w1.wavefronts == 2);
  CHECK(w1.ideal == 2);
  CHECK(r1.requests == 2);
  CHECK(r1.wavefronts == 2);

  const auto two = counted(*rt, "strided<2>", strided<2>, 64, 2 * 64 * 4);
  CHECK(sum(two, true).wavefronts == 4);
  CHECK(sum(two, false).wavefronts == 4);

  const auto all = counted(*rt, "strided<32>", strided<32>, 64, 32 * 64 * 4);
  REQUIRE(all.size() == 2);  // one store site, one load site
  const bc::Site& st = all[0].write ? all[0] : all[1];
  CHECK(st.kernel == "strided<32>");
  CHECK(st.bytes == 4);
  CHECK(st.requests == 2);
  CHECK(st.wavefronts == 64);
  CHECK(st.ideal == 2);
  CHECK(st.example.rfind("0:0 1:128 2:256", 0) == 0);  // offsets relative to the start of shared memory
  CHECK(st.describe().find("64 shared-memory wavefronts, 2 at best") != std::string::npos);
}

TEST_CASE("lanes that skip a request do not count in it; cp.async counts as a store, volatile accesses not at all",
          "[racecheck][bankcheck]") {
  auto rt = device();
  const auto even = counted(*rt, "even_lanes", even_lanes, 32, 128 * 4);
  REQUIRE(even.size() == 2);
  const bc::Site& loop = even[0].requests == 3 ? even[0] : even[1];
  const bc::Site& pair = even[0].requests == 3 ? even[1] : even[0];
  CHECK(loop.requests == 3);  // three trips of the even lanes' loop
  CHECK(loop.wavefronts == 3);
  CHECK(loop.example == "0:0 2:8 4:16 6:24 8:32 10:40 12:48 14:56 16:64 18:72 20:80 22:88 24:96 26:104 28:112 30:120");
  CHECK(pair.requests == 1);
  CHECK(pair.wavefronts == 2);
  CHECK(pair.ideal == 1);
  CHECK(pair.example == "0:256 16:384");

  cuda::DeviceBuffer src(*rt, 64 * sizeof(double));
  const auto cp = counted(*rt, "copies", copies, 32, 64 * 8 + 4096, src.as<const double>());
  REQUIRE(cp.size() == 1);
  CHECK(cp[0].write);
  CHECK(cp[0].bytes == 16);
  CHECK(cp[0].requests == 1);
  CHECK(cp[0].wavefronts == 4);
  CHECK(cp[0].ideal == 4);
}

TEST_CASE(
    "gemm_f64's kernel in every form loads its fragments and stores its slabs without bank conflicts, and "
    "reads A and B in its fewest sectors",
    "[racecheck][bankcheck][mma]") {
  auto rt = device();
  // 256 x 256 x 48: whole blocks of either size, 6 slabs of 8 or 3 of 16, so every ring wraps; no K tail (its fma
  // steps read a column of the slab, the way no whole slab is read).
  constexpr int64_t M = 256, N = 256, K = 48;
  cuda::Stream s(*rt);
  cuda::DeviceBuffer a(*rt, M * K * 8), b(*rt, K * N * 8), out(*rt, M * N * 8), sm(*rt, 64);
  for (const gemm_f64::emu::Form& f : gemm_f64::emu::kForms) {
    INFO("form " << gemm_f64::emu::form_name(f));
    {
      Counting counting;
      counting.arm({{a.get(), M * K * 8}, {b.get(), K * N * 8}});
      REQUIRE(gemm_f64::emu::launch_gemm(f, a.as<const double>(), b.as<const double>(), out.as<float>(),
                                         sm.as<uint32_t>(), M, N, K, s.get()));
      finish(*rt, out, s.get());
    }
    const auto sites = bc::sites();
    for (const bc::Site& x : sites)
      if (x.wavefronts != x.ideal) UNSCOPED_INFO(x.describe());
    const Sum loads = sum(sites, false), stores = sum(sites, true);
    CHECK(bc::uncounted() == 0);
    CHECK(loads.requests > 0);
    CHECK(loads.wavefronts == loads.ideal);
    CHECK(stores.requests > 0);
    CHECK(stores.wavefronts == stores.ideal);
    // Global loads of A and B (the 2-stage forms' fetch, the cp.async forms' copies, read at their issue), each
    // request whole sectors.
    uint64_t global_requests = 0;
    for (const bc::Site& x : sites)
      if (x.global) {
        INFO(x.describe());
        CHECK(!x.write);
        CHECK(x.wavefronts == x.ideal);
        global_requests += x.requests;
      }
    CHECK(global_requests > 0);
  }
}

// The boot battery's exact kernels are counted in test_racecheck.cpp's race test; here every other kernel the
// emulated device runs: the least costly case of each family and engine (the recorded families' kernels, gemm_i8's
// dp4a, the fp64 norm, sfu_f32, the memory test...), and the bf16 attention kernel at every head
// dimension it takes (its staging copies rows of dim / 8 16-byte pieces: a quarter-warp meets two rows unless a row
// is a multiple of 128 bytes, which the battery's dims 64 and 128 are and its 96 is not).
TEST_CASE(
    "every emulated kernel, and the bf16 attention kernel at every head dimension, loads and stores shared "
    "memory at its fewest wavefronts and global memory in its fewest sectors",
    "[racecheck][bankcheck]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  cuda::DeviceRuntime& rt = test::emulated(4, 1);  // one block of each kernel: the instrumented kernels are slow
  std::vector<std::pair<const Family*, Case>> runs;
  for (const auto& [f, c] : test::least_costly_per_engine(ps)) runs.emplace_back(f, *c);
  const Family* attention = find_family("attention_bf16_exactint");
  REQUIRE(attention);
  const Case* base = nullptr;
  for (const auto& [f, c] : runs) base = f == attention ? &c : base;
  REQUIRE(base);
  const Case battery_case = *base;  // a copy: runs grows below
  for (int64_t dim = 16; dim <= 128; dim += 16) {
    Case c = battery_case;
    c.id = "attention_bf16_exactint.dim_" + std::to_string(dim);
    c.shape.dims["heads"] = 1;
    c.shape.dims["seq"] = 128;
    c.shape.dims["causal"] = 0;  // two key blocks for every tile
    c.shape.dims["dim"] = dim;
    REQUIRE(attention->validate(c) == "");
    runs.emplace_back(attention, c);
  }
  std::set<std::string> families_run, kernels, loading, storing;
  // Global memory too (the problem's inputs and output watched): every load and store takes its fewest sectors, but
  // in the row kernels whose lanes each own a contiguous segment of a row (the chunked order of
  // src/spec/chunked_reduce.h), where a warp's request spreads over the lanes' segments: about 4 times the fewest
  // (bounded at 5 here), for the L1 cache to absorb over the lane's next requests; and the stores of the kernels that
  // write each element's 8 output words together (a pair's 16 in convert_f32): a lane's 16-byte stores lie 32 or 64
  // bytes apart, each half of every sector it touches (bounded at 2). docs/emulator-counters.md has the survey.
  const std::set<std::string> segmented = {"reduce_sum_f32 reduce_kernel", "reduce_sum_f64 reduce_kernel",
                                           "softmax_f32 softmax_kernel", "rmsnorm_f32 rmsnorm_kernel",
                                           "rmsnorm_f64 rmsnorm_kernel"};
  const std::set<std::string> per_element = {"convert_f32 convert_kernel", "elementwise_f32 elementwise_kernel",
                                             "sfu_f32 sfu_kernel"};
  for (const auto& [f, c] : runs) {
    // A training-step replay's device side needs the CPU's replay beside it (the engine's): its kernels use no shared
    // memory (train_step_f32's run in the race test's boot battery, whose count sees none of their accesses).
    if (f->replay) continue;
    const auto p = f->prepare(c);
    const auto dev = f->prepare_emu(c);
    INFO(c.id << " [" << dev->engine().algorithm << "]");
    {
      Counting counting;
      test::run_problem(rt, *dev, p->inputs().size(), p->tile_count(), p->tile_elements(),
                        [&](const std::vector<test::Range>& ranges) { counting.arm(ranges); });
    }
    families_run.insert(f->id);
    CHECK(bc::uncounted() == 0);
    for (const bc::Site& x : bc::sites()) {
      if (x.global) {
        (x.write ? storing : loading).insert(x.kernel);
        INFO(x.describe());
        if (segmented.count(x.kernel)) {
          CHECK(x.wavefronts <= 5 * x.ideal);
        } else if (x.write && per_element.count(x.kernel)) {
          CHECK(x.wavefronts <= 2 * x.ideal);
        } else {
          CHECK(x.wavefronts == x.ideal);
        }
        continue;
      }
      kernels.insert(x.kernel);
      INFO(x.describe());
      CHECK(x.wavefronts == x.ideal);
    }
  }
  for (const Family& f : families()) {
    INFO(f.id);
    if (f.prepare_emu && !f.replay) CHECK(families_run.count(f.id) == 1);
  }
  // Every kernel that uses shared memory (sfu_f32's, convert_f32's, elementwise_f32's and the memory test's do not;
  // the engine's digest kernel is in the race test).
  for (const char* k :
       {"attention_f32 attention_kernel", "attention_mma attention_kernel", "cross_entropy_f32 cross_entropy_kernel",
        "exactint mma_kernel", "gemm_f32 gemm_kernel", "gemm_f64 gemm_kernel", "gemm_i8 dp4a_kernel",
        "gemm_i8 mma_kernel", "reduce_sum_f32 reduce_kernel", "reduce_sum_f64 reduce_kernel",
        "rmsnorm_f32 rmsnorm_kernel", "rmsnorm_f64 rmsnorm_kernel", "softmax_f32 softmax_kernel"})
    CHECK(kernels.count(k) == 1);
  // The kernels whose global loads were counted (the memory test's sweep its own region, not watched).
  for (const char* k : {"gemm_f32 gemm_kernel", "gemm_f64 gemm_kernel", "exactint mma_kernel", "gemm_i8 mma_kernel",
                        "gemm_i8 dp4a_kernel", "attention_mma attention_kernel", "attention_f32 attention_kernel",
                        "sfu_f32 sfu_kernel", "convert_f32 convert_kernel", "cross_entropy_f32 cross_entropy_kernel"})
    CHECK(loading.count(k) == 1);
  for (const char* k : {"gemm_f32 gemm_kernel", "gemm_f64 gemm_kernel", "exactint mma_kernel", "gemm_i8 mma_kernel",
                        "gemm_i8 dp4a_kernel", "attention_mma attention_kernel", "attention_f32 attention_kernel"})
    CHECK(storing.count(k) == 1);
}
