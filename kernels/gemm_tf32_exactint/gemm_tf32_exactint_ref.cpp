// gemm_tf32_exactint on the CPU: the family's registration, from the format's traits (kernels/exactint/formats.h);
// the exact reference is the exact-integer GEMMs' shared one (kernels/exactint/exactint_ref.cpp).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_tf32_exactint {

Family family() { return exactint::mma_family<Tf32>(); }

}  // namespace sdc::gemm_tf32_exactint
