// gemm_f64's kernel in each of its forms (kernels/gemm_f64/gemm_f64_device.h, kForms: blocks of 64 and 128, slabs
// of 8 and 16 k, 2 stages through registers or 3 and 4 through cp.async, the instruction the family runs, mma.sync
// m8n8k4, whose order was measured, and on sm_90 m16n8k8 and m16n8k16): the speed of each against cuBLAS DGEMM, and
// whether its bits equal the family's. The family can take an sm_90 instruction only once a GPU shows both: faster, and
// equal bits on every battery case and on the benchmark shapes (docs/gpu.md). A difference is reported, not turned into
// the benchmark's exit status: it says how the instruction rounds, not that this GPU is faulty.
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/backends/cuda/cuda_check.h"
#include "src/core/shape.h"

namespace sdc::bench {
namespace {

using gemm_f64::gpu::Dmma;
using gemm_f64::gpu::Form;
using gemm_f64::gpu::form_name;
using gemm_f64::gpu::instr_name;

// Runs one form on dc's inputs into out / tile_sm; false (nothing run) where the device cannot run it (unavailable).
bool run_form(const Form& f, DeviceCase& dc, const Case& c, DeviceBuffer& out, DeviceBuffer& tile_sm, cudaStream_t s) {
  return gemm_f64::gpu::launch_gemm(f, static_cast<const double*>(dc.ptrs[0]), static_cast<const double*>(dc.ptrs[1]),
                                    out.as<float>(), tile_sm.as<uint32_t>(), dim(c, "m"), dim(c, "n"), dim(c, "k"), s);
}

std::vector<double> host_doubles(const DeviceBuffer& b, uint64_t count, cudaStream_t s) {
  std::vector<double> h(count);
  SDC_CUDA_CHECK(cudaMemcpyAsync(h.data(), b.get(), count * sizeof(double), cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

// Runs f, which measures one form into row: a CUDA error that leaves the context usable becomes the row's "error"
// (the other forms and the benchmark's other sections still run); one that loses the context is rethrown.
template <class F>
void guarded(const char* what, Json& row, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    if (const auto* ce = dynamic_cast<const cuda::CudaError*>(&e); ce && ce->sticky()) throw;
    std::printf("  %s: ERROR: %s\n", what, e.what());
    row["error"] = e.what();
  }
}

}  // namespace

Json bench_dmma_forms(DeviceCase& dc, const Case& c, int reps, double blas_ms, cudaStream_t s) {
  const uint64_t values = dc.tiles * dc.te / 2;  // two words per double
  const Form family = gemm_f64::gpu::family_form(dim(c, "m"), dim(c, "n"));
  dc.compute(s);
  const std::vector<double> family_values = host_doubles(dc.out, values, s);
  DeviceBuffer out(gpu(), values * sizeof(double)), tile_sm(gpu(), dc.tiles * sizeof(uint32_t));
  const double flops = dc.flops();
  Json rows = Json::array();
  for (const Form& f : gemm_f64::gpu::kForms) {
    const bool is_family = f == family;
    Json row = {{"form", form_name(f)}, {"instruction", std::string("mma.sync.") + instr_name(f.instr) + ".f64"},
                {"block", f.bm},        {"slab", f.bk},
                {"stages", f.stages},   {"family_form", is_family}};
    guarded(instr_name(f.instr), row, [&] {
      if (const std::string why = gemm_f64::gpu::unavailable(f); !why.empty()) {
        std::printf("  form %-18s not run (%s)\n", (form_name(f) + ":").c_str(), why.c_str());
        row["skipped"] = why;
        return;
      }
      run_form(f, dc, c, out, tile_sm, s);
      const std::vector<double> mine = host_doubles(out, values, s);
      uint64_t differing = 0;
      for (uint64_t i = 0; i < values; ++i) differing += std::memcmp(&mine[i], &family_values[i], sizeof(double)) != 0;
      const double ms = time_ms(s, reps, [&] { run_form(f, dc, c, out, tile_sm, s); });
      std::printf(
          "  form %-18s %9.3f ms %8.2f TFLOP/s %7.3fx cuBLAS DGEMM; %llu of %llu values differ from the family's%s\n",
          (form_name(f) + ":").c_str(), ms, flops / ms * 1e-9, blas_ms / ms, static_cast<unsigned long long>(differing),
          static_cast<unsigned long long>(values), is_family ? " (the family's form)" : "");
      row["ms"] = ms;
      row["tflops"] = flops / ms * 1e-9;
      row["ratio_vs_cublas"] = blas_ms / ms;
      row["values"] = values;
      row["values_differing_from_family"] = differing;
    });
    rows.push_back(row);
  }
  return rows;
}

Json sm90_golden(DeviceCase& dc, const Case& c, const std::vector<uint64_t>& want, cudaStream_t s) {
  DeviceBuffer tile_sm(gpu(), dc.tiles * sizeof(uint32_t));
  Json rows = Json::array();
  for (const Form& f : gemm_f64::gpu::kForms) {
    if (f.instr == Dmma::m8n8k4 || f.bm != 128) continue;
    Json row = {{"form", form_name(f)},
                {"instruction", std::string("mma.sync.") + instr_name(f.instr) + ".f64"},
                {"block", f.bm},
                {"slab", f.bk},
                {"stages", f.stages}};
    guarded(instr_name(f.instr), row, [&] {
      if (const std::string why = gemm_f64::gpu::unavailable(f); !why.empty()) {
        row["skipped"] = why;
        return;
      }
      run_form(f, dc, c, dc.out, tile_sm, s);
      dc.digest(s);
      const std::vector<uint64_t> got = dc.host_digests(s);
      uint64_t bad = 0;
      for (uint64_t t = 0; t < dc.tiles; ++t) bad += t >= want.size() || got[t] != want[t];
      std::printf("%-44s form %s: %llu of %llu tiles differ from the golden digests\n", c.id.c_str(),
                  form_name(f).c_str(), static_cast<unsigned long long>(bad),
                  static_cast<unsigned long long>(dc.tiles));
      row["mismatched_tiles"] = bad;
    });
    rows.push_back(row);
  }
  dc.compute(s);  // the family's result back in dc.out
  return rows;
}

}  // namespace sdc::bench
