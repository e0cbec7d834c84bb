// gemm_bf16_exactint_cublaslt on the CPU: the family's registration. Its inputs, exact reference and goldens are
// gemm_bf16_exactint's (the same format traits); only the GPU computes it (cuBLASLt).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_bf16_exactint_cublaslt {

Family family() { return exactint::lt_family<gemm_bf16_exactint::Bf16>(); }

}  // namespace sdc::gemm_bf16_exactint_cublaslt
