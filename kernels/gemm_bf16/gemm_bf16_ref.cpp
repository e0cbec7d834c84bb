// gemm_bf16 on the CPU: the family's registration. Recorded mode (kernels/recorded_gemm/recorded_gemm.h): random
// full-precision bf16 operands, no CPU reference; the golden is recorded on GPUs or the case is judged by
// consensus. Registered for the CUDA backend only (the CPU executor skips it as not applicable).
#include "../recorded_gemm/recorded_gemm_ref.h"

namespace sdc::gemm_bf16 {
namespace {

std::unique_ptr<Problem> prepare(const Case& c) { return recorded_gemm::prepare(recorded_gemm::BF16, c); }

}  // namespace

Family family() {
  return {"gemm_bf16",
          "bf16 tensor-core matrix product on full-precision random data, judged by recorded goldens or consensus",
          {Mode::recorded, Mode::consensus},
          {"cuda"},
          {"m", "n", "k"},
          recorded_gemm::validate,
          prepare};
}

}  // namespace sdc::gemm_bf16
