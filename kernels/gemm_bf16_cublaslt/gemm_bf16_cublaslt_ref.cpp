// gemm_bf16_cublaslt on the CPU: the family's registration. The inputs are gemm_bf16's (random full-precision bf16
// operands, kernels/recorded_gemm/recorded_gemm.h); cuBLASLt computes them with its pinned algorithm. No CPU
// reference: the golden is recorded on GPUs (keyed by the library's version and that algorithm) or the case is
// judged by consensus. GPU only (backends "cuda"): a CPU run skips it as not applicable.
#include "../recorded_gemm/recorded_gemm_ref.h"

namespace sdc::gemm_bf16_cublaslt {
namespace {

std::unique_ptr<Problem> prepare(const Case& c) { return recorded_gemm::prepare(recorded_gemm::BF16, c); }

}  // namespace

Family family() {
  return {"gemm_bf16_cublaslt",
          "bf16 cuBLASLt matrix product (pinned heuristic algorithm) on full-precision random data,"
          " judged by recorded goldens or consensus",
          {Mode::recorded, Mode::consensus},
          {"cuda"},
          {"m", "n", "k"},
          recorded_gemm::validate,
          prepare};
}

}  // namespace sdc::gemm_bf16_cublaslt
