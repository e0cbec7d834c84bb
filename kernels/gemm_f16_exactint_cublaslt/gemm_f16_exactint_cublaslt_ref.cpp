// gemm_f16_exactint_cublaslt on the CPU: the family's registration. Its inputs, exact reference and goldens are
// gemm_f16_exactint's (the same format traits); only the GPU computes it (cuBLASLt).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_f16_exactint_cublaslt {

Family family() { return exactint::lt_family<gemm_f16_exactint::F16>(); }

}  // namespace sdc::gemm_f16_exactint_cublaslt
