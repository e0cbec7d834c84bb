// gemm_tf32_exactint_cublaslt on the CPU: the family's registration. Its inputs, exact reference and therefore goldens
// are gemm_tf32_exactint's (kernels/exactint/exactint_ref.cpp, bound to that family's Format); only the GPU
// computes it (cuBLASLt), so it has no CPU backend: `sdcscreen golden` still computes its goldens, and a
// CPU run skips it as not applicable.
#include "../gemm_tf32_exactint/gemm_tf32_exactint.h"
#include "../exactint/exactint_ref.h"

namespace sdc::gemm_tf32_exactint_cublaslt {
namespace {

std::string validate(const Case& c) { return exactint::validate(gemm_tf32_exactint::FORMAT, c); }
std::unique_ptr<Problem> prepare(const Case& c) { return exactint::prepare(gemm_tf32_exactint::FORMAT, c); }

}  // namespace

Family family() {
  return {"gemm_tf32_exactint_cublaslt",
          "tf32 cuBLASLt matrix product (pinned heuristic algorithm)"
          " on gemm_tf32_exactint's exact inputs (24-bit bound)",
          {Mode::exact_integer},
          {},  // GPU only: the CUDA build adds "cuda" (registry.cpp)
          {"m", "n", "k"},
          validate,
          prepare};
}

}  // namespace sdc::gemm_tf32_exactint_cublaslt
