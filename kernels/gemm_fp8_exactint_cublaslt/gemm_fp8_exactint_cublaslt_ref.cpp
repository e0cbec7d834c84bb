// gemm_fp8_exactint_cublaslt on the CPU: the family's registration. Its inputs, exact reference and goldens are
// gemm_fp8_exactint's (the same format traits); only the GPU computes it (cuBLASLt).
#include "../exactint/exactint_ref.h"
#include "../exactint/formats.h"

namespace sdc::gemm_fp8_exactint_cublaslt {

Family family() { return exactint::lt_family<gemm_fp8_exactint::E4m3>(); }

}  // namespace sdc::gemm_fp8_exactint_cublaslt
