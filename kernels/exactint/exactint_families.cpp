// The CPU side of the exact-integer GEMM families: `Family sdc::<id>::family()` for each SDC_GEMM_EXACTINT
// line of the family table (kernels/families.def), from the line's engine and format (exactint_ref.h: the
// registration, formats.h: the format's traits). The exact reference is the shared one (exactint_ref.cpp).
// A line's id is the one its engine and format make, gemm_<format>_exactint or gemm_<format>_exactint_cublaslt:
// a line that names another does not compile.
#include <string_view>

#include "kernels/exactint/exactint_ref.h"
#include "kernels/exactint/formats.h"

#define SDC_EXACTINT_ID_mma(format) "gemm_" #format "_exactint"
#define SDC_EXACTINT_ID_cublaslt(format) "gemm_" #format "_exactint_cublaslt"
#define SDC_GEMM_EXACTINT(id, engine, format)                                                                         \
  namespace sdc::id {                                                                                                 \
  static_assert(std::string_view(#id) == SDC_EXACTINT_ID_##engine(format), #id ": not its engine's and format's id"); \
  Family family() { return exactint::engine##_family<exactint::formats::format>(SDC_EXACTINT_ID_mma(format)); }       \
  }
#include "kernels/families.def"
