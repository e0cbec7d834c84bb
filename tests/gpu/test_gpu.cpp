// GPU tests (CTest label `gpu`): on a machine without a usable GPU they print SKIP and exit 77, which
// CTest reports as skipped. `gpu_tests [--patterns DIR]`: the patterns as sdcscreen finds them
// (src/core/patterns_location.h) unless given. With a GPU, on device 0 (or SDC_TEST_DEVICE), for every
// battery case whose family has a CUDA side (what is done with each case is gpu_plan.h's, which a unit test
// walks on the CPU):
//   - the inputs generated on the device are bit-identical to the host generator's;
//   - every tile digest computed on the device equals the golden digest (bit identity with the CPU),
//     the digests read in the layout the family writes (a cuBLASLt family: a row-major matrix); a
//     recorded or consensus case (no CPU golden) gives the same digests in two runs;
//   - every tile records the SM that computed it, inside [0, %nsmid) (families whose kernels say so);
//   - the digest pass's fault hook flips exactly the chosen tile, or exactly the tiles of the chosen SM,
//     and is silent when off (the same inputs digest identically twice);
//   - for every exact-integer case computed by cuBLASLt, EVERY algorithm the heuristic offers (not only
//     the pinned one) gives the golden digests: the exactness argument covers any order and split, and
//     this shows the library's kernels on this GPU agree; on the small recorded cuBLASLt cases every
//     algorithm repeats its own bits;
// then gemm_f64's kernel in every form at ragged shapes against the specification's fma chain (gemm_f64_forms.h: an
// m8n8k4 form that differs fails, an sm_90 form's differences are reported);
// and then the whole GPU executor: a clean run passes, an injected output fault and an injected input fault
// are detected, attributed to the right tile and SM, and listed with the injected xor mask; on a cuBLASLt
// case, an output fault is found in the matrix layout and an SM-targeted drill is refused.
// `gpu_tests --gemm-f64-forms` runs the gemm_f64 forms alone (first light runs it under compute-sanitizer).
// Each case, each case's algorithm sweep and each GPU executor test is a step of its own (gpu_plan.h's guarded): an
// exception in one is that step's failure, on one FAIL line, and the steps after it still run. Every line is
// written when it is complete, so a run killed at its deadline keeps what it found.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_problem.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/cuda/lt_gemm_device.h"
#include "src/core/patterns.h"
#include "src/core/patterns_location.h"
#include "src/core/shape.h"
#include "src/spec/digest.h"
#include "tests/gpu/gemm_f64_forms.h"
#include "tests/gpu/gpu_plan.h"

namespace {

using namespace sdc;

int failures = 0;
#define EXPECT(cond, ...)                                       \
  do {                                                          \
    if (!(cond)) {                                              \
      ++failures;                                               \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                        \
      std::fprintf(stderr, "\n");                               \
    }                                                           \
  } while (0)

// The current GPU through the GPU executor's device seam (its buffers and streams).
cuda::DeviceRuntime& gpu_rt() { return cuda::current_cuda_runtime(); }

struct Ran {
  std::vector<uint64_t> digests;
  std::vector<uint32_t> sm;
};

// A case prepared on the device: its inputs generated there and the buffers of one computation.
struct Prepared {
  std::unique_ptr<Problem> p;
  std::unique_ptr<cuda::DeviceProblem> d;
  cuda::Stream stream{gpu_rt()};
  std::vector<cuda::DeviceBuffer> in;
  std::vector<const void*> ptrs;
  cuda::DeviceBuffer out, sm, dig, scratch;
  uint64_t tiles = 0;
  uint32_t te = 0;

  explicit Prepared(const Case& c) : p(find_family(c.family)->prepare(c)), d(find_family(c.family)->prepare_cuda(c)) {
    tiles = p->tile_count();
    te = p->tile_elements();
    if (p->replay()) {  // the training-step replay: the host's reference, as the GPU executor gives it
      p->replay()->compute_reference(nullptr);
      d->use_reference(*p);
    }
    for (size_t t = 0; t < p->inputs().size(); ++t) {
      in.emplace_back(gpu_rt(), d->input_bytes(t));
      ptrs.push_back(in.back().get());
      d->generate(t, in.back().get(), stream.get());
    }
    out = cuda::DeviceBuffer(gpu_rt(), tiles * te * 4);
    sm = cuda::DeviceBuffer(gpu_rt(), tiles * 4);
    dig = cuda::DeviceBuffer(gpu_rt(), tiles * 8);
    scratch = cuda::DeviceBuffer(gpu_rt(), d->scratch_bytes());
    SDC_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  // A synchronous copy on this case's stream (cudaMemcpy would go to the legacy default stream, which the
  // non-blocking stream's work is not ordered with).
  void copy_to_host(void* dst, const void* src, size_t bytes) {
    SDC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream.get()));
    SDC_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  }
  // Poisons the output and SM ids (a tile nobody writes can never match), then enqueues the computation.
  void poison() {
    SDC_CUDA_CHECK(cudaMemsetAsync(out.get(), 0xff, tiles * te * 4, stream.get()));
    SDC_CUDA_CHECK(cudaMemsetAsync(sm.get(), 0xff, tiles * 4, stream.get()));
  }
  // Digests the output where the family writes it, applying `fault`, and copies digests and SM ids back.
  Ran digest(cuda::DeviceFault fault) {
    cuda::gpu::digest_tiles(out.as<float>(), d->output_layout(), tiles, te, sm.as<uint32_t>(), fault,
                            dig.as<uint64_t>(), stream.get());
    Ran r{std::vector<uint64_t>(tiles), std::vector<uint32_t>(tiles)};
    SDC_CUDA_CHECK(cudaMemcpyAsync(r.digests.data(), dig.get(), tiles * 8, cudaMemcpyDeviceToHost, stream.get()));
    SDC_CUDA_CHECK(cudaMemcpyAsync(r.sm.data(), sm.get(), tiles * 4, cudaMemcpyDeviceToHost, stream.get()));
    SDC_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    return r;
  }
};

// Generates a case's inputs on the device, checks them against the host, computes and digests it.
Ran run_case(const Case& c, cuda::DeviceFault fault, bool check_inputs) {
  Prepared pc(c);
  const auto tensors = pc.p->inputs();
  for (size_t t = 0; check_inputs && t < tensors.size(); ++t) {
    if (pc.d->input_bytes(t) == tensors[t].elements * 2 &&
        (c.family.rfind("attention_bf16", 0) == 0 || c.family == "gemm_bf16")) {
      // bf16 inputs: the host's floats are the device's bf16 bits shifted up, low half zero.
      std::vector<float> host(tensors[t].elements);
      std::vector<uint16_t> dev(tensors[t].elements);
      pc.p->generate_input(t, 0, host.size(), host.data());
      pc.copy_to_host(dev.data(), pc.in[t].get(), dev.size() * 2);
      size_t differ = 0;
      for (size_t i = 0; i < host.size(); ++i) differ += float_bits(host[i]) != static_cast<uint32_t>(dev[i]) << 16;
      EXPECT(differ == 0, "%s: input %s: %zu bf16 elements generated differently on the device", c.id.c_str(),
             tensors[t].name.c_str(), differ);
    }
    if (pc.d->input_bytes(t) != tensors[t].elements * 4) continue;  // other narrow dtypes: their unit tests
    std::vector<float> host(tensors[t].elements), dev(tensors[t].elements);
    pc.p->generate_input(t, 0, host.size(), host.data());
    pc.copy_to_host(dev.data(), pc.in[t].get(), host.size() * 4);
    EXPECT(std::memcmp(host.data(), dev.data(), host.size() * 4) == 0,
           "%s: input %s generated differently on the device", c.id.c_str(), tensors[t].name.c_str());
  }
  pc.poison();
  pc.d->compute(pc.ptrs.data(), pc.out.as<float>(), pc.sm.as<uint32_t>(), pc.scratch.get(), pc.stream.get());
  return pc.digest(fault);
}

// Every tile of the run computed on one of the GPU's sm_ids SMs, as the kernel recorded it.
void check_sm_ids(const Case& c, const Ran& ran, int sm_ids) {
  for (uint64_t t = 0; t < ran.sm.size(); ++t)
    if (static_cast<int>(ran.sm[t]) >= sm_ids || ran.sm[t] == 0xffffffffu) {
      EXPECT(false, "%s: tile %llu has no valid SM id (%u)", c.id.c_str(), static_cast<unsigned long long>(t),
             ran.sm[t]);
      return;
    }
}

void test_case(const gpu_tests::CasePlan& cp, const PatternSet& ps, const DeviceInfo& gpu, int sm_ids) {
  const Case& c = *cp.c;
  if (!find_family(c.family)->prepare_cuda) return;
  if (const std::string why = find_family(c.family)->prepare_cuda(c)->unsupported(gpu.cc_major, gpu.cc_minor);
      !why.empty()) {
    std::printf("%-48s not applicable: %s\n", c.id.c_str(), why.c_str());
    return;
  }
  const Ran clean = run_case(c, {}, true);
  const bool records_sm = find_family(c.family)->prepare_cuda(c)->records_sm();
  if (!cp.golden) {
    // recorded and consensus: no CPU golden; two runs on one GPU must agree bit for bit, every tile on an SM
    // (where the kernel records SMs: a library's does not).
    const Ran again = run_case(c, {}, false);
    uint64_t differ = 0;
    for (uint64_t t = 0; t < clean.digests.size(); ++t) differ += clean.digests[t] != again.digests[t];
    EXPECT(differ == 0, "%s: two runs differ in %llu of %zu tiles", c.id.c_str(),
           static_cast<unsigned long long>(differ), clean.digests.size());
    if (records_sm) check_sm_ids(c, again, sm_ids);
    std::printf("%-48s %6zu tiles  %s\n", c.id.c_str(), clean.digests.size(), differ ? "RUNS DIFFER" : "repeatable");
  }
  if (!cp.golden) return;
  const GoldenCase& g = ps.golden.at(c.id);
  uint64_t bad = 0, first_bad = ~0ull;
  for (uint64_t t = 0; t < clean.digests.size(); ++t)
    if (clean.digests[t] != g.tile_digests[t] && bad++ == 0) first_bad = t;
  EXPECT(bad == 0, "%s: %llu of %zu tiles differ from the golden (first: tile %llu)", c.id.c_str(),
         static_cast<unsigned long long>(bad), clean.digests.size(), static_cast<unsigned long long>(first_bad));
  if (records_sm) check_sm_ids(c, clean, sm_ids);
  std::printf("%-48s %6zu tiles  %s\n", c.id.c_str(), clean.digests.size(), bad ? "MISMATCH" : "bit-identical");
  if (!cp.hooks) return;  // once per family
  // The fault hook: one tile, then every tile of one SM; the rest must stay untouched.
  const uint64_t tile = clean.digests.size() / 2;
  cuda::DeviceFault f;
  f.word.mask = 1u << 7;
  f.offset = cp.tile_elements - 1;
  f.tile = tile;
  const Ran one = run_case(c, f, false);
  for (uint64_t t = 0; t < one.digests.size(); ++t)
    EXPECT((one.digests[t] != clean.digests[t]) == (t == tile), "%s: tile fault hook changed tile %llu (target %llu)",
           c.id.c_str(), static_cast<unsigned long long>(t), static_cast<unsigned long long>(tile));
  {  // a warp-aligned multi-bit cluster (src/spec/fault.h) changes that tile only, too
    cuda::DeviceFault cl = f;
    cl.word = WordFault{0x00400003u, FAULT_FLIP, cp.tile_elements < 32 ? cp.tile_elements : 32u, 1};
    cl.offset = 0;
    const Ran cluster = run_case(c, cl, false);
    for (uint64_t t = 0; t < cluster.digests.size(); ++t)
      EXPECT((cluster.digests[t] != clean.digests[t]) == (t == tile),
             "%s: cluster fault hook changed tile %llu (target %llu)", c.id.c_str(), static_cast<unsigned long long>(t),
             static_cast<unsigned long long>(tile));
  }
  if (!records_sm) return;  // a library kernel names no SM: the GPU executor refuses SM-targeted drills
  f.tile = ~0ull;
  f.sm = static_cast<int32_t>(clean.sm[0]);
  const Ran by_sm = run_case(c, f, false);
  for (uint64_t t = 0; t < by_sm.digests.size(); ++t)
    EXPECT((by_sm.digests[t] != clean.digests[t]) == (by_sm.sm[t] == clean.sm[0]),
           "%s: SM fault hook wrong on tile %llu", c.id.c_str(), static_cast<unsigned long long>(t));
}

// Every case in a step of its own (gpu_tests::guarded): an exception ends that case only.
void test_cases(const std::vector<gpu_tests::CasePlan>& plan, const PatternSet& ps, const DeviceInfo& gpu, int sm_ids) {
  for (const gpu_tests::CasePlan& cp : plan)
    gpu_tests::guarded(cp.c->id, failures, stderr, [&] { test_case(cp, ps, gpu, sm_ids); });
}

// Every algorithm cuBLASLt's heuristic offers, on every exact-integer case a cuBLASLt family computes:
// each must give the golden digests. On the small recorded cuBLASLt cases (random data, no golden), each
// algorithm must repeat its own bits, and the count of distinct results says how much the pinned algorithm
// matters to a recording. Prints a line per case and total lines gpu-validate.sh records.
void test_lt_algorithms(const std::vector<gpu_tests::CasePlan>& plan, const PatternSet& ps, const DeviceInfo& gpu) {
  size_t total = 0, cases = 0, mismatched = 0, rec_total = 0, rec_cases = 0, rec_unstable = 0, threw = 0;
  // One case's sweep (a step of its own: an exception, such as cuBLASLt failing to load, ends that case only).
  const auto sweep = [&](const gpu_tests::CasePlan& cp) {
    const Case& c = *cp.c;
    const bool exact = cp.lt == gpu_tests::LtCheck::golden;
    Prepared pc(c);
    const auto* lt = dynamic_cast<const cuda::LtGemmDevice*>(pc.d.get());
    if (!lt) return;
    if (const std::string why = lt->unsupported(gpu.cc_major, gpu.cc_minor); !why.empty()) {
      std::printf("%-48s cuBLASLt: not applicable: %s\n", c.id.c_str(), why.c_str());
      return;
    }
    EXPECT(lt->plan() != nullptr, "%s: a supported GPU got no cuBLASLt plan", c.id.c_str());
    if (!lt->plan()) return;
    const auto& algos = lt->plan()->algorithms();
    // Recordings are keyed on the description: two different configurations (their bytes) offered for one
    // case must never share one. The same configuration offered twice may.
    std::map<std::string, std::array<uint64_t, 8>> configs;
    for (const cuda::LtAlgorithm& a : algos) {
      std::array<uint64_t, 8> bytes{};
      static_assert(sizeof bytes == sizeof a.algo.data, "cublasLtMatmulAlgo_t is 8 words");
      std::memcpy(bytes.data(), a.algo.data, sizeof bytes);
      const auto [it, added] = configs.emplace(a.description, bytes);
      EXPECT(added || it->second == bytes, "%s: two different cuBLASLt configurations are both described as '%s'",
             c.id.c_str(), a.description.c_str());
    }
    auto run_algo = [&](size_t i) {
      pc.poison();
      lt->plan()->run(pc.ptrs[0], pc.ptrs[1], pc.out.as<float>(), pc.scratch.get(), pc.stream.get(), i);
      return pc.digest({});
    };
    auto differing = [](const std::vector<uint64_t>& x, const std::vector<uint64_t>& y) {
      uint64_t n = 0;
      for (size_t t = 0; t < x.size(); ++t) n += x[t] != y[t];
      return n;
    };
    if (!exact) {
      size_t unstable = 0;
      std::set<std::vector<uint64_t>> results;
      for (size_t i = 0; i < algos.size(); ++i) {
        const Ran first = run_algo(i), again = run_algo(i);
        const uint64_t bad = differing(first.digests, again.digests);
        EXPECT(bad == 0, "%s: cuBLASLt algorithm %zu (%s) does not repeat: %llu of %zu tiles differ between two runs",
               c.id.c_str(), i, algos[i].description.c_str(), static_cast<unsigned long long>(bad),
               first.digests.size());
        unstable += bad != 0;
        results.insert(first.digests);
      }
      std::printf("%-48s cuBLASLt: %zu algorithms each run twice, %zu not repeatable, %zu distinct results\n",
                  c.id.c_str(), algos.size(), unstable, results.size());
      rec_total += algos.size();
      rec_unstable += unstable;
      ++rec_cases;
      return;
    }
    const GoldenCase& g = ps.golden.at(c.id);
    size_t bad_algos = 0;
    for (size_t i = 0; i < algos.size(); ++i) {
      const uint64_t bad = differing(run_algo(i).digests, g.tile_digests);
      EXPECT(bad == 0, "%s: cuBLASLt algorithm %zu (%s): %llu of %zu tiles differ from the golden", c.id.c_str(), i,
             algos[i].description.c_str(), static_cast<unsigned long long>(bad), g.tile_digests.size());
      bad_algos += bad != 0;
    }
    std::printf("%-48s cuBLASLt: %zu algorithms checked, %zu mismatched; pinned: %s\n", c.id.c_str(), algos.size(),
                bad_algos, algos.front().description.c_str());
    total += algos.size();
    mismatched += bad_algos;
    ++cases;
  };
  for (const gpu_tests::CasePlan& cp : plan)
    if (cp.lt != gpu_tests::LtCheck::none && find_family(cp.c->family)->prepare_cuda)
      threw += !gpu_tests::guarded(cp.c->id + " (cuBLASLt algorithms)", failures, stderr, [&] { sweep(cp); });
  std::printf("cublasLt algorithms checked: %zu over %zu cases, %zu mismatched\n", total, cases, mismatched);
  std::printf("cublasLt algorithms repeated on recorded cases: %zu over %zu cases, %zu not repeatable\n", rec_total,
              rec_cases, rec_unstable);
  if (threw) std::printf("cublasLt algorithm sweep: %zu case(s) ended by an error, not counted above\n", threw);
}

// gemm_f64's kernel in every form (kForms) at the ragged shapes of gemm_f64_forms.h against the fma chain. An m8n8k4
// form that differs is a failure (that instruction's order was measured: gemm_f64.cu); an sm_90 form's differences
// are reported, not failed: they say how that instruction orders its products (the family never runs it).
void test_gemm_f64_forms() {
  unsigned long long runs = 0, not_runnable = 0, sm90_differing = 0;
  gemm_f64_forms::check_forms(
      gpu_rt(), gemm_f64::gpu::kForms, [](auto&&... args) { return gemm_f64::gpu::launch_gemm(args...); },
      [&](const gemm_f64_forms::Dims& d, const gemm_f64::gpu::Form& f, bool ran, uint64_t differ, uint64_t values) {
        const std::string form = gemm_f64::gpu::form_name(f);
        if (!ran) {
          ++not_runnable;
          return;
        }
        ++runs;
        const auto m = static_cast<long long>(d.m), n = static_cast<long long>(d.n), k = static_cast<long long>(d.k);
        if (f.instr == gemm_f64::gpu::Dmma::m8n8k4) {
          EXPECT(differ == 0,
                 "gemm_f64 form %s at %lldx%lldx%lld (shifts %lld, %lld): %llu of %llu values differ from the fma "
                 "chain",
                 form.c_str(), m, n, k, static_cast<long long>(d.a_shift), static_cast<long long>(d.b_shift),
                 static_cast<unsigned long long>(differ), static_cast<unsigned long long>(values));
        } else if (differ) {
          sm90_differing += differ;
          std::printf(
              "gemm_f64 form %s at %lldx%lldx%lld: %llu of %llu values differ from the fma chain (how the "
              "sm_90 instruction orders its products; not a failure)\n",
              form.c_str(), m, n, k, static_cast<unsigned long long>(differ), static_cast<unsigned long long>(values));
        }
      });
  std::printf(
      "gemm_f64 forms checked: %llu runs over %zu shapes, %llu not runnable on this device, %llu values of "
      "sm_90 forms differing\n",
      runs, std::size(gemm_f64_forms::kShapes), not_runnable, sm90_differing);
}

// The GPU executor end to end: clean, then an output fault on one SM and an input fault.
void test_executor(const PatternSet& ps, const DeviceInfo& gpu) {
  const Case* c = ps.battery.find_case("gemm_f32.uniform_2048");
  EXPECT(c != nullptr, "battery lacks gemm_f32.uniform_2048");
  if (!c || !find_family(c->family)->prepare_cuda) return;
  Selection sel{{c}, {2}};
  RunOptions opt;
  opt.time_budget_s = 60;
  RunResult clean;
  run_screen(*cuda::make_backend(ps, {gpu}), sel, opt, clean);
  EXPECT(clean.exit_code() == EXIT_PASS, "clean GPU executor pass gave exit %d (%s)", clean.exit_code(),
         clean.tests.empty() ? "" : clean.tests[0].reason.c_str());

  Injection out;
  EXPECT(parse_injection("case=gemm_f32.uniform_2048,element=140000,bit=30,unit=0,iteration=0", out).empty(), "parse");
  Injection in;
  EXPECT(parse_injection("case=gemm_f32.uniform_2048,target=input,tensor=b,element=5,bit=22,iteration=1", in).empty(),
         "parse");
  std::vector<DeviceInfo> gpus{gpu};
  EXPECT(check_injection(out, ps.battery, {}, &gpus).empty() && check_injection(in, ps.battery, {}, &gpus).empty(),
         "check");
  opt.injections = {out, in};
  RunResult faulty;
  run_screen(*cuda::make_backend(ps, gpus), sel, opt, faulty);
  EXPECT(faulty.exit_code() == EXIT_FAIL, "injected run gave exit %d", faulty.exit_code());
  EXPECT(faulty.injections[0].fired && faulty.injections[0].fired_unit == 0, "SM 0 fault did not fire on SM 0");
  EXPECT(faulty.injections[1].fired, "input fault did not fire");
  bool saw_mask = false, saw_column = false;
  for (const Miscompare& m : faulty.tests[0].miscompares) {
    saw_mask = saw_mask || (m.iteration == 0 && m.unit == 0 && (m.expected ^ m.actual) == (1u << 30));
    saw_column = saw_column || (m.iteration == 1 && m.element % 2048 == 5);  // B[0][5] feeds column 5 of C
  }
  EXPECT(saw_mask, "the SM fault's miscompare was not listed on SM 0 with xor 0x40000000");
  EXPECT(saw_column, "the input fault's miscompares are not in column 5");
}

// The GPU executor on a cuBLASLt case: a clean run passes; an output fault is found at its element, in the
// matrix layout, with its xor mask and no SM; an SM-targeted drill is refused (the library names no SM).
void test_executor_cublaslt(const PatternSet& ps, const DeviceInfo& gpu) {
  const char* id = "gemm_bf16_exactint_cublaslt.uniform_256x192x512";
  const Case* c = ps.battery.find_case(id);
  EXPECT(c != nullptr, "battery lacks %s", id);
  if (!c) return;
  Selection sel{{c}, {1}};
  RunOptions opt;
  opt.time_budget_s = 60;
  std::vector<DeviceInfo> gpus{gpu};
  RunResult clean;
  run_screen(*cuda::make_backend(ps, gpus), sel, opt, clean);
  EXPECT(clean.exit_code() == EXIT_PASS, "%s: clean GPU executor pass gave exit %d (%s)", id, clean.exit_code(),
         clean.tests.empty() ? "" : clean.tests[0].reason.c_str());

  Injection out;  // C[64][57]: tile 3 (row block 1, column block 0), not the tile's first row
  EXPECT(parse_injection(std::string("case=") + id + ",element=12345,bit=3,iteration=0", out).empty(), "parse");
  EXPECT(check_injection(out, ps.battery, {}, &gpus).empty(), "check");
  opt.injections = {out};
  RunResult faulty;
  run_screen(*cuda::make_backend(ps, gpus), sel, opt, faulty);
  EXPECT(faulty.exit_code() == EXIT_FAIL, "%s: injected run gave exit %d", id, faulty.exit_code());
  bool found = false;
  for (const Miscompare& m : faulty.tests.empty() ? std::vector<Miscompare>{} : faulty.tests[0].miscompares)
    found = found || (m.element == 12345 && (m.expected ^ m.actual) == 8u && m.unit == -1);
  EXPECT(found, "%s: the output fault was not listed at element 12345 with xor 0x8 and no SM", id);

  Injection by_sm;
  EXPECT(parse_injection(std::string("case=") + id + ",element=12345,bit=3,unit=0,iteration=0", by_sm).empty(),
         "parse");
  EXPECT(check_injection(by_sm, ps.battery, {}, &gpus).empty(), "check");
  opt.injections = {by_sm};
  RunResult refused;
  run_screen(*cuda::make_backend(ps, gpus), sel, opt, refused);
  EXPECT(refused.exit_code() == EXIT_INCONCLUSIVE && !refused.tests.empty() &&
             refused.tests[0].reason.find("does not say which SM") != std::string::npos,
         "%s: an SM-targeted drill was not refused (exit %d)", id, refused.exit_code());
}

}  // namespace

int main(int argc, char** argv) {
  // A line at a time, into a file or a pipe too: a run killed at its deadline keeps every line it wrote
  // (stderr, where failures go, is unbuffered).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string patterns;
  bool forms_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--patterns" && i + 1 < argc && *argv[i + 1]) {
      patterns = argv[++i];
    } else if (arg == "--gemm-f64-forms") {
      forms_only = true;
    } else {
      std::fprintf(stderr, "usage: gpu_tests [--patterns DIR] [--gemm-f64-forms]\n");
      return 64;
    }
  }
  if (forms_only) {  // no battery: the forms' own shapes
    if (const cuda::Availability a = cuda::probe(); !a.usable) {
      std::printf("SKIP: no usable GPU: %s\n", a.reason.c_str());
      return 77;
    }
    const char* which = std::getenv("SDC_TEST_DEVICE");
    gpu_tests::guarded("gemm_f64 forms", failures, stderr, [&] {
      SDC_CUDA_CHECK(cudaSetDevice(cuda::list_devices().at(which ? static_cast<size_t>(std::atoi(which)) : 0).index));
      test_gemm_f64_forms();
    });
    std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
  }
  if (patterns.empty()) {
    const PatternsLocation located = locate_patterns();
    if (located.dir.empty()) {
      std::fprintf(stderr, "gpu_tests: %s\n", located.not_found_message().c_str());
      return 78;
    }
    patterns = located.dir;
  }
  PatternSet ps;
  std::vector<gpu_tests::CasePlan> plan;
  try {
    ps = load_patterns(patterns);
    plan = gpu_tests::plan(ps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_tests: %s\n", e.what());
    return 78;
  }
  const cuda::Availability a = cuda::probe();
  if (!a.usable) {
    std::printf("SKIP: no usable GPU: %s\n", a.reason.c_str());
    return 77;
  }
  try {
    const auto devices = cuda::list_devices();
    const char* which = std::getenv("SDC_TEST_DEVICE");
    const DeviceInfo& gpu = devices.at(which ? static_cast<size_t>(std::atoi(which)) : 0);
    SDC_CUDA_CHECK(cudaSetDevice(gpu.index));
    std::printf("device %s %s (%s), %d SMs\n", gpu.label().c_str(), gpu.name.c_str(), gpu.architecture().c_str(),
                gpu.sm_count);
    std::printf("patterns %s: %zu cases on the device\n", patterns.c_str(), plan.size());
    const int sm_ids = std::max(gpu.sm_count, cuda::gpu::sm_id_limit());
    // Each family of checks, and each case within one, is a step of its own (gpu_tests::guarded): an exception
    // in one (cuBLASLt that cannot be loaded) is its failure, and every later step still runs.
    test_cases(plan, ps, gpu, sm_ids);
    gpu_tests::guarded("gemm_f64 forms", failures, stderr, [&] { test_gemm_f64_forms(); });
    gpu_tests::guarded("cuBLASLt algorithm sweep", failures, stderr, [&] { test_lt_algorithms(plan, ps, gpu); });
    gpu_tests::guarded("GPU executor", failures, stderr, [&] { test_executor(ps, gpu); });
    gpu_tests::guarded("GPU executor on cuBLASLt", failures, stderr, [&] { test_executor_cublaslt(ps, gpu); });
  } catch (const std::exception& e) {  // the device itself could not be set up: nothing ran
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
