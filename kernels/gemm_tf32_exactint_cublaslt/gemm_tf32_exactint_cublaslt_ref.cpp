// gemm_tf32_exactint_cublaslt on the CPU: the family's registration. Its inputs, exact reference and goldens are
// gemm_tf32_exactint's (the same format traits); only the GPU computes it (cuBLASLt).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_tf32_exactint_cublaslt {

Family family() { return exactint::lt_family<gemm_tf32_exactint::Tf32>(); }

}  // namespace sdc::gemm_tf32_exactint_cublaslt
