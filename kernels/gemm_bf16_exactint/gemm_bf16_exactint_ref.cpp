// gemm_bf16_exactint on the CPU: the family's registration, from the format's traits (kernels/exactint/formats.h);
// the exact reference is the exact-integer GEMMs' shared one (kernels/exactint/exactint_ref.cpp).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_bf16_exactint {

Family family() { return exactint::mma_family<Bf16>(); }

}  // namespace sdc::gemm_bf16_exactint
