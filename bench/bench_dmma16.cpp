// gemm_f64's kernel in its sm_90 form (mma.sync m16n8k8, kernels/gemm_f64/gemm_f64_device.h) beside the form the
// family runs (m8n8k4, whose order was measured): its speed, and whether its bits equal the family's. The family
// can take the sm_90 form only once a GPU shows both: faster, and equal bits on every battery case and on the
// benchmark shapes (docs/gpu-validation/README.md, what the records still owe). A difference is reported, not
// turned into the benchmark's exit status: it says how the instruction rounds, not that this GPU is faulty.
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/core/shape.h"

namespace sdc::bench {
namespace {

// Runs the sm_90 form on dc's inputs into out / tile_sm, with the block the family takes on this GPU; false
// (nothing run) below compute capability 9.0.
bool run_form(DeviceCase& dc, const Case& c, DeviceBuffer& out, DeviceBuffer& tile_sm, cudaStream_t s) {
  int device = 0, sms = 0;
  SDC_CUDA_CHECK(cudaGetDevice(&device));
  SDC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t m = dim(c, "m"), n = dim(c, "n");
  return gemm_f64::gpu::launch_gemm(gemm_f64::gpu::Dmma::m16n8k8, gemm_f64::gpu::block_rows(m, n, sms),
                                    static_cast<const double*>(dc.ptrs[0]), static_cast<const double*>(dc.ptrs[1]),
                                    out.as<float>(), tile_sm.as<uint32_t>(), m, n, dim(c, "k"), s);
}

std::vector<double> host_doubles(const DeviceBuffer& b, uint64_t count, cudaStream_t s) {
  std::vector<double> h(count);
  SDC_CUDA_CHECK(cudaMemcpyAsync(h.data(), b.get(), count * sizeof(double), cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

}  // namespace

Json bench_dmma16(DeviceCase& dc, const Case& c, int reps, double blas_ms, cudaStream_t s) {
  const uint64_t values = dc.tiles * dc.te / 2;  // two words per double
  DeviceBuffer out(gpu(), values * sizeof(double)), tile_sm(gpu(), dc.tiles * sizeof(uint32_t));
  if (!run_form(dc, c, out, tile_sm, s)) {
    std::printf("  sm_90 form (m16n8k8): not run, the device is below compute capability 9.0\n");
    return {{"skipped", "below compute capability 9.0"}};
  }
  dc.compute(s);
  const std::vector<double> mine = host_doubles(out, values, s), family = host_doubles(dc.out, values, s);
  uint64_t differing = 0;
  for (uint64_t i = 0; i < values; ++i) differing += std::memcmp(&mine[i], &family[i], sizeof(double)) != 0;
  const double form_ms = time_ms(s, reps, [&] { run_form(dc, c, out, tile_sm, s); });
  const double family_ms = time_ms(s, reps, [&] { dc.compute(s); });
  const double flops = dc.flops();
  std::printf("  sm_90 form (m16n8k8): %.3f ms, %.2f TFLOP/s, %.3fx cuBLAS DGEMM, %.3fx the m8n8k4 form (%.3f ms); "
              "%llu of %llu values differ from the m8n8k4 form's\n",
              form_ms, flops / form_ms * 1e-9, blas_ms / form_ms, family_ms / form_ms, family_ms,
              static_cast<unsigned long long>(differing), static_cast<unsigned long long>(values));
  return {{"instruction", "mma.sync.m16n8k8.f64"},
          {"ms", form_ms},
          {"tflops", flops / form_ms * 1e-9},
          {"ratio_vs_cublas", blas_ms / form_ms},
          {"m8n8k4_ms", family_ms},
          {"speedup_vs_m8n8k4", family_ms / form_ms},
          {"values", values},
          {"values_differing_from_m8n8k4", differing}};
}

Json dmma16_golden(DeviceCase& dc, const Case& c, const std::vector<uint64_t>& want, cudaStream_t s) {
  DeviceBuffer tile_sm(gpu(), dc.tiles * sizeof(uint32_t));
  if (!run_form(dc, c, dc.out, tile_sm, s)) return {{"skipped", "below compute capability 9.0"}};
  dc.digest(s);
  const std::vector<uint64_t> got = dc.host_digests(s);
  uint64_t bad = 0;
  for (uint64_t t = 0; t < dc.tiles; ++t) bad += t >= want.size() || got[t] != want[t];
  dc.compute(s);  // the family's result back in dc.out
  std::printf("%-44s sm_90 form (m16n8k8): %llu of %llu tiles differ from the golden digests\n", c.id.c_str(),
              static_cast<unsigned long long>(bad), static_cast<unsigned long long>(dc.tiles));
  return {{"instruction", "mma.sync.m16n8k8.f64"}, {"mismatched_tiles", bad}};
}

}  // namespace sdc::bench
