// GPU tests (CTest label `gpu`): on a machine without a usable GPU they print SKIP and exit 77, which
// CTest reports as skipped. With a GPU, on device 0 (or SDC_TEST_DEVICE), for every battery case whose
// family has a CUDA kernel:
//   - the inputs generated on the device are bit-identical to the host generator's;
//   - every tile digest computed on the device equals the golden digest (bit identity with the CPU);
//     a recorded or consensus case (no CPU golden) gives the same digests in two runs;
//   - every tile records the SM that computed it, inside [0, %nsmid);
//   - the digest pass's fault hook flips exactly the chosen tile, or exactly the tiles of the chosen SM,
//     and is silent when off (the same inputs digest identically twice);
// and then the whole runner: a clean run passes, an injected output fault and an injected input fault
// are detected, attributed to the right tile and SM, and listed with the injected xor mask.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_problem.h"
#include "src/core/digest.h"
#include "src/core/patterns.h"

namespace {

using namespace sdc;

int failures = 0;
#define EXPECT(cond, ...)                                    \
  do {                                                       \
    if (!(cond)) {                                           \
      ++failures;                                            \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                     \
      std::fprintf(stderr, "\n");                            \
    }                                                        \
  } while (0)

struct Ran {
  std::vector<uint64_t> digests;
  std::vector<uint32_t> sm;
};

// Generates a case's inputs on the device, checks them against the host, computes and digests it.
Ran run_case(const Case& c, cuda::DeviceFault fault, bool check_inputs) {
  const Family* f = find_family(c.family);
  const auto p = f->prepare(c);
  const auto d = f->prepare_cuda(c);
  const uint64_t tiles = p->tile_count();
  const uint32_t te = p->tile_elements();
  cuda::Stream stream;
  std::vector<cuda::DeviceBuffer> in;
  std::vector<const void*> ptrs;
  const auto tensors = p->inputs();
  for (size_t t = 0; t < tensors.size(); ++t) {
    in.emplace_back(d->input_bytes(t));
    ptrs.push_back(in.back().get());
    d->generate(t, in.back().get(), stream.get());
  }
  SDC_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  for (size_t t = 0; check_inputs && t < tensors.size(); ++t) {
    if (d->input_bytes(t) == tensors[t].elements * 2 && c.family.rfind("attention_bf16", 0) == 0) {
      // bf16 inputs: the host's floats are the device's bf16 bits shifted up, low half zero.
      std::vector<float> host(tensors[t].elements);
      std::vector<uint16_t> dev(tensors[t].elements);
      p->generate_input(t, 0, host.size(), host.data());
      SDC_CUDA_CHECK(cudaMemcpy(dev.data(), in[t].get(), dev.size() * 2, cudaMemcpyDeviceToHost));
      size_t differ = 0;
      for (size_t i = 0; i < host.size(); ++i) differ += float_bits(host[i]) != static_cast<uint32_t>(dev[i]) << 16;
      EXPECT(differ == 0, "%s: input %s: %zu bf16 elements generated differently on the device", c.id.c_str(),
             tensors[t].name.c_str(), differ);
    }
    if (d->input_bytes(t) != tensors[t].elements * 4) continue;  // other narrow dtypes: their unit tests
    std::vector<float> host(tensors[t].elements), dev(tensors[t].elements);
    p->generate_input(t, 0, host.size(), host.data());
    SDC_CUDA_CHECK(cudaMemcpy(dev.data(), in[t].get(), host.size() * 4, cudaMemcpyDeviceToHost));
    EXPECT(std::memcmp(host.data(), dev.data(), host.size() * 4) == 0, "%s: input %s generated differently on the device",
           c.id.c_str(), tensors[t].name.c_str());
  }
  cuda::DeviceBuffer out(tiles * te * 4), sm(tiles * 4), dig(tiles * 8), scratch(d->scratch_bytes());
  SDC_CUDA_CHECK(cudaMemsetAsync(sm.get(), 0xff, tiles * 4, stream.get()));
  d->compute(ptrs.data(), out.as<float>(), sm.as<uint32_t>(), scratch.get(), stream.get());
  cuda::digest_tiles(out.as<float>(), cuda::OutputLayout{}, tiles, te, sm.as<uint32_t>(), fault, dig.as<uint64_t>(),
                     stream.get());
  Ran r{std::vector<uint64_t>(tiles), std::vector<uint32_t>(tiles)};
  SDC_CUDA_CHECK(cudaMemcpyAsync(r.digests.data(), dig.get(), tiles * 8, cudaMemcpyDeviceToHost, stream.get()));
  SDC_CUDA_CHECK(cudaMemcpyAsync(r.sm.data(), sm.get(), tiles * 4, cudaMemcpyDeviceToHost, stream.get()));
  SDC_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  return r;
}

void test_cases(const PatternSet& ps, const DeviceInfo& gpu, int sm_ids) {
  for (const Case& c : ps.battery.cases) {
    if (!find_family(c.family)->prepare_cuda) continue;
    if (const std::string why = find_family(c.family)->prepare_cuda(c)->unsupported(gpu.cc_major, gpu.cc_minor);
        !why.empty()) {
      std::printf("%-48s not applicable: %s\n", c.id.c_str(), why.c_str());
      continue;
    }
    const Ran clean = run_case(c, {}, true);
    if (!has_cpu_golden(c.mode)) {
      // recorded and consensus: no CPU golden; two runs on one GPU must agree bit for bit, every tile on an SM.
      const Ran again = run_case(c, {}, false);
      uint64_t differ = 0;
      for (uint64_t t = 0; t < clean.digests.size(); ++t) differ += clean.digests[t] != again.digests[t];
      EXPECT(differ == 0, "%s: two runs differ in %llu of %zu tiles", c.id.c_str(), static_cast<unsigned long long>(differ),
             clean.digests.size());
      for (uint64_t t = 0; t < again.sm.size(); ++t)
        if (static_cast<int>(again.sm[t]) >= sm_ids || again.sm[t] == 0xffffffffu) {
          EXPECT(false, "%s: tile %llu has no valid SM id (%u)", c.id.c_str(), static_cast<unsigned long long>(t), again.sm[t]);
          break;
        }
      std::printf("%-48s %6zu tiles  %s\n", c.id.c_str(), clean.digests.size(), differ ? "RUNS DIFFER" : "repeatable");
    }
    if (!has_cpu_golden(c.mode)) continue;
    const GoldenCase& g = ps.golden.at(c.id);
    uint64_t bad = 0, first_bad = ~0ull;
    for (uint64_t t = 0; t < clean.digests.size(); ++t)
      if (clean.digests[t] != g.tile_digests[t] && bad++ == 0) first_bad = t;
    EXPECT(bad == 0, "%s: %llu of %zu tiles differ from the golden (first: tile %llu)", c.id.c_str(),
           static_cast<unsigned long long>(bad), clean.digests.size(), static_cast<unsigned long long>(first_bad));
    for (uint64_t t = 0; t < clean.sm.size(); ++t)
      if (static_cast<int>(clean.sm[t]) >= sm_ids || clean.sm[t] == 0xffffffffu) {
        EXPECT(false, "%s: tile %llu has no valid SM id (%u)", c.id.c_str(), static_cast<unsigned long long>(t), clean.sm[t]);
        break;
      }
    std::printf("%-48s %6zu tiles  %s\n", c.id.c_str(), clean.digests.size(), bad ? "MISMATCH" : "bit-identical");
    if (&c != &ps.battery.cases.front() && c.family == (&c - 1)->family) continue;  // hooks: once per family
    // The fault hook: one tile, then every tile of one SM; the rest must stay untouched.
    const uint64_t tile = clean.digests.size() / 2;
    cuda::DeviceFault f;
    f.mask = 1u << 7;
    f.offset = find_family(c.family)->prepare(c)->tile_elements() - 1;
    f.tile = tile;
    const Ran one = run_case(c, f, false);
    for (uint64_t t = 0; t < one.digests.size(); ++t)
      EXPECT((one.digests[t] != clean.digests[t]) == (t == tile), "%s: tile fault hook changed tile %llu (target %llu)",
             c.id.c_str(), static_cast<unsigned long long>(t), static_cast<unsigned long long>(tile));
    f.tile = ~0ull;
    f.sm = static_cast<int32_t>(clean.sm[0]);
    const Ran by_sm = run_case(c, f, false);
    for (uint64_t t = 0; t < by_sm.digests.size(); ++t)
      EXPECT((by_sm.digests[t] != clean.digests[t]) == (by_sm.sm[t] == clean.sm[0]),
             "%s: SM fault hook wrong on tile %llu", c.id.c_str(), static_cast<unsigned long long>(t));
  }
}

// The runner end to end: clean, then an output fault on one SM and an input fault.
void test_runner(const PatternSet& ps, const DeviceInfo& gpu) {
  const Case* c = ps.battery.find_case("gemm_f32.uniform_2048");
  EXPECT(c != nullptr, "battery lacks gemm_f32.uniform_2048");
  if (!c || !find_family(c->family)->prepare_cuda) return;
  Selection sel{{c}, {2}};
  RunOptions opt;
  opt.time_budget_s = 60;
  RunResult clean;
  cuda::run_screen(ps, sel, opt, {gpu}, clean);
  EXPECT(clean.exit_code() == EXIT_PASS, "clean runner pass gave exit %d (%s)", clean.exit_code(),
         clean.tests.empty() ? "" : clean.tests[0].reason.c_str());

  Injection out;
  EXPECT(parse_injection("case=gemm_f32.uniform_2048,element=140000,bit=30,unit=0,iteration=0", out).empty(), "parse");
  Injection in;
  EXPECT(parse_injection("case=gemm_f32.uniform_2048,target=input,tensor=b,element=5,bit=22,iteration=1", in).empty(), "parse");
  std::vector<DeviceInfo> gpus{gpu};
  EXPECT(check_injection(out, ps.battery, {}, &gpus).empty() && check_injection(in, ps.battery, {}, &gpus).empty(), "check");
  opt.injections = {out, in};
  RunResult faulty;
  cuda::run_screen(ps, sel, opt, gpus, faulty);
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

}  // namespace

int main() {
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
    std::printf("device %s %s (%s), %d SMs\n", gpu.label().c_str(), gpu.name.c_str(), gpu.architecture().c_str(), gpu.sm_count);
    const PatternSet ps = load_patterns(SDC_SOURCE_DIR "/patterns");
    test_cases(ps, gpu, std::max(gpu.sm_count, cuda::sm_id_limit()));
    test_runner(ps, gpu);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
