// The emulated device's shared-memory race checker (src/backends/emu/racecheck.h): planted races are
// reported with kernel, block, threads and address, the same kernels with their barrier are not, and every
// exact and exact-integer kernel of the boot battery (with the GPU executor's own passes) runs race-free, and
// without shared-memory bank conflicts (src/backends/emu/bankcheck.h, whose own tests are test_bankcheck.cpp). This
// file is compiled for the emulated device (-DSDC_EMU) with the checker's instrumentation, like the kernels
// the executable links.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/emu/bankcheck.h"
#include "src/backends/emu/racecheck.h"
#include "src/core/patterns.h"
#include "tests/unit/catch.h"

using namespace sdc;
namespace rc = sdc::emu::racecheck;
namespace bc = sdc::emu::bankcheck;

namespace {

// 128 threads: thread t and t + 64 write the same word before the barrier.
__global__ void write_write(int* out) {
  __shared__ int s[64];
  s[threadIdx.x % 64] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x % 64];
}

// Each thread reads its neighbour's word with no barrier after the neighbour's write.
__global__ void no_barrier(int* out) {
  __shared__ int s[128];
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}

// The same with its barrier: race-free.
__global__ void with_barrier(int* out) {
  __shared__ int s[128];
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}

// no_barrier and with_barrier in dynamic shared memory (launch_shared), past the 48 KiB a GPU grants by default.
constexpr size_t kDynamicOffset = 60 * 1024;
__global__ void dynamic_no_barrier(int* out) {
  int* s = cuda::dynamic_shared<int>() + kDynamicOffset / sizeof(int);
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}
__global__ void dynamic_with_barrier(int* out) {
  int* s = cuda::dynamic_shared<int>() + kDynamicOffset / sizeof(int);
  s[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}

// Thread 127 writes one int past the dynamic shared memory its launch asked for (kDynamicOffset + 128 ints).
__global__ void dynamic_overrun(int* out) {
  int* s = cuda::dynamic_shared<int>() + kDynamicOffset / sizeof(int);
  s[threadIdx.x + (threadIdx.x == 127 ? 1 : 0)] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}

// Thread 5 writes the int just before the dynamic shared memory.
__global__ void dynamic_underrun(int* out) {
  int* s = cuda::dynamic_shared<int>();
  s[threadIdx.x == 5 ? -1 : static_cast<int>(threadIdx.x)] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 0;
}

// Runs `kernel` as 2 blocks of 128 threads on an emulated device, with smem bytes of dynamic shared memory, and
// waits for it.
template <class K>
void run_planted(const char* name, K kernel, size_t smem = 0) {
  static const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  cuda::Stream s(*rt);
  cuda::DeviceBuffer out(*rt, 256 * sizeof(int));
  cuda::launch_shared(name, kernel, 2, 128, smem, s.get(), out.as<int>());
  std::vector<int> host(256);
  rt->copy(host.data(), out.get(), host.size() * sizeof(int), s.get());
}

}  // namespace

TEST_CASE("a planted write-write race is reported with kernel, block, threads and address", "[racecheck]") {
  rc::reset();
  run_planted("write_write", write_write);
  const auto races = rc::races();
  REQUIRE(rc::race_count() == 2 * 64);  // per block, threads 64..127 each meet the write of t - 64
  REQUIRE(races.size() == 128);
  const rc::Race& r = races.front();
  CHECK(r.kernel == "write_write");
  CHECK(r.block == 0);
  CHECK(r.kind == "write-write");
  CHECK(r.first == 0);
  CHECK(r.second == 64);
  CHECK(races.back().block == 1);
  CHECK(r.describe().find("write_write block 0: threads 0 and 64") != std::string::npos);
  // The same word for the same pair of threads in the other block.
  const auto same = std::find_if(races.begin(), races.end(),
                                 [&](const rc::Race& x) { return x.block == 1 && x.first == 0 && x.second == 64; });
  REQUIRE(same != races.end());
  CHECK(same->offset == r.offset);
}

TEST_CASE("a read before the writer's barrier is reported; with the barrier nothing is", "[racecheck]") {
  rc::reset();
  run_planted("no_barrier", no_barrier);
  const auto races = rc::races();
  REQUIRE(!races.empty());
  CHECK(races.front().kernel == "no_barrier");
  CHECK(races.front().kind == "read-write");  // thread 0 read word 1 before thread 1 wrote it
  CHECK(races.front().first == 0);
  CHECK(races.front().second == 1);

  rc::reset();
  run_planted("with_barrier", with_barrier);
  CHECK(rc::race_count() == 0);
  CHECK(rc::shared_accesses() == 2 * 128 * 2);  // every write and read of s was seen
}

TEST_CASE(
    "races in dynamic shared memory are seen, so are accesses outside the launch's; a launch asking for more "
    "than the emulation has is refused",
    "[racecheck]") {
  const size_t smem = kDynamicOffset + 128 * sizeof(int);
  rc::reset();
  run_planted("dynamic_no_barrier", dynamic_no_barrier, smem);
  REQUIRE(rc::race_count() > 0);
  CHECK(rc::races().front().kernel == "dynamic_no_barrier");
  CHECK(rc::races().front().kind == "read-write");
  rc::reset();
  run_planted("dynamic_with_barrier", dynamic_with_barrier, smem);
  CHECK(rc::race_count() == 0);
  CHECK(rc::shared_accesses() == 2 * 128 * 2);
  CHECK_THROWS_WITH(run_planted("dynamic_with_barrier", dynamic_with_barrier, emu::kDynamicSharedBytes + 1),
                    Catch::Contains("dynamic_with_barrier"));
  rc::reset();
  run_planted("dynamic_overrun", dynamic_overrun, smem);
  REQUIRE(rc::race_count() == 2);  // thread 127's write in each block (its read stays inside)
  CHECK(rc::races().front().kind == "out-of-bounds");
  CHECK(rc::races().front().describe().find("out-of-bounds access in kernel dynamic_overrun block 0: thread 127") !=
        std::string::npos);
  CHECK(rc::races().front().region == "dynamic");
  CHECK(rc::races().front().offset == static_cast<int64_t>(smem));  // the first byte beyond
  rc::reset();
  run_planted("dynamic_underrun", dynamic_underrun, 128 * sizeof(int));
  REQUIRE(rc::race_count() == 2);  // thread 5's write in each block
  CHECK(rc::races().front().kind == "out-of-bounds");
  CHECK(rc::races().front().offset == -4);
}

// One run of the battery for both checks: the instrumented kernels are slow.
TEST_CASE("every exact and exact-integer kernel of the boot battery runs race-free and without bank conflicts",
          "[racecheck][bankcheck]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  std::vector<std::string> ids;
  for (const Case& c : ps.battery.cases) {
    const bool exact = c.mode == Mode::exact || c.mode == Mode::exact_integer;
    if (exact && find_family(c.family)->prepare_emu && c.iterations.count("boot")) ids.push_back(c.id);
  }
  REQUIRE(ids.size() >= 30);
  Selection sel;
  REQUIRE(select_cases(ps.battery, "boot", ids, {}, sel).empty());
  RunOptions opt;
  opt.seed = 5;
  opt.time_budget_s = 3600;
  emu::Spec spec;
  spec.sample_blocks = 2;  // the instrumented kernels are slow; every kernel still runs
  const std::vector<DeviceInfo> gpus = emu::create_devices({spec});
  rc::reset();
  bc::start();
  RunResult result;
  run_screen(*cuda::make_backend(ps, gpus), sel, opt, result);
  bc::stop();
  for (const TestResult& t : result.tests) {
    INFO(t.id << ": " << t.reason);
    CHECK(t.verdict == Verdict::pass);
  }
  for (const rc::Race& r : rc::races()) UNSCOPED_INFO(r.describe());
  CHECK(rc::race_count() == 0);
  CHECK(rc::shared_accesses() > 1000000);
  // Every load and store of shared memory takes the fewest wavefronts its width allows (bankcheck.h's model),
  // in every kernel that uses shared memory: the GEMMs' slabs, attention's staged tiles, the reductions.
  CHECK(bc::uncounted() == 0);  // no shared access of a size the counter does not model
  std::set<std::string> kernels;
  for (const bc::Site& x : bc::sites()) {
    kernels.insert(x.kernel);
    INFO(x.describe());
    CHECK(x.wavefronts == x.ideal);
  }
  for (const char* k : {"gemm_f32 gemm_kernel", "gemm_f64 gemm_kernel", "attention_f32 attention_kernel",
                        "attention_mma attention_kernel", "exactint mma_kernel", "gemm_i8 mma_kernel",
                        "reduce_sum_f64 reduce_kernel", "digest_kernel"})
    CHECK(kernels.count(k) == 1);
}
