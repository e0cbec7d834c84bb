// gemm_f16_exactint on the CPU: the family's registration; the exact reference is the exact-integer GEMMs' shared one
// (kernels/exactint/exactint_ref.cpp), bound to this family's Format.
#include "../exactint/exactint_ref.h"
#include "gemm_f16_exactint.h"

namespace sdc::gemm_f16_exactint {
namespace {

std::string validate(const Case& c) { return exactint::validate(FORMAT, c); }
std::unique_ptr<Problem> prepare(const Case& c) { return exactint::prepare(FORMAT, c); }

}  // namespace

Family family() {
  return {"gemm_f16_exactint",
          "fp16 tensor-core matrix product on inputs whose every partial sum is exact (24-bit bound)",
          {Mode::exact_integer},
          {"cpu"},
          {"m", "n", "k"},
          validate,
          prepare};
}

}  // namespace sdc::gemm_f16_exactint
