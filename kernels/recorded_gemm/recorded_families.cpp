// The CPU side of the recorded tensor-core GEMM families: `Family sdc::<id>::family()` for each
// SDC_GEMM_RECORDED line of the family table (kernels/families.def), from the line's engine and format
// (recorded_gemm_ref.h). The inputs are random full-precision operands of the format (recorded_gemm.h); the
// mma engine's family and its cuBLASLt twin compute the same inputs. A line's id is the one its engine and
// format make, gemm_<format> or gemm_<format>_cublaslt: a line that names another does not compile.
#include <string_view>

#include "kernels/recorded_gemm/recorded_gemm_ref.h"

#define SDC_RECORDED_ID_mma(format) "gemm_" #format
#define SDC_RECORDED_ID_cublaslt(format) "gemm_" #format "_cublaslt"
#define SDC_GEMM_RECORDED(id, engine, format)                                                                         \
  namespace sdc::id {                                                                                                 \
  static_assert(std::string_view(#id) == SDC_RECORDED_ID_##engine(format), #id ": not its engine's and format's id"); \
  Family family() { return recorded_gemm::engine##_family<recorded_gemm::formats::format>(#id); }                     \
  }
#include "kernels/families.def"
