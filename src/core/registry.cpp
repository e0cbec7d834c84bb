// The registry of kernel families: one explicit list, in a stable order. Adding a family means one
// folder under kernels/ and one line here.
#include "family.h"

namespace sdc {

// Each family's CPU side (kernels/<f>/<f>_ref.cpp) and, in a CUDA build, its device side (<f>.cu).
#if SDC_HAVE_CUDA
#define SDC_FAMILY(ns)                                                            \
  namespace ns {                                                                  \
  Family family();                                                                \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c);               \
  }                                                                               \
  static Family ns##_family() { return with_cuda(ns::family(), ns::prepare_cuda); }
#else
#define SDC_FAMILY(ns)  \
  namespace ns {        \
  Family family();      \
  }                     \
  static Family ns##_family() { return ns::family(); }
#endif

// A family with no device side yet: registered for the CPU backend only, in any build.
#define SDC_FAMILY_CPU(ns) \
  namespace ns {           \
  Family family();         \
  }                        \
  static Family ns##_family() { return ns::family(); }

namespace {
[[maybe_unused]] Family with_cuda(Family f, std::unique_ptr<cuda::DeviceProblem> (*prepare_cuda)(const Case&)) {
  f.prepare_cuda = prepare_cuda;
  f.backends.push_back("cuda");
  return f;
}
}  // namespace

SDC_FAMILY(gemm_f32)
SDC_FAMILY(attention_f32)
SDC_FAMILY(reduce_sum_f32)
SDC_FAMILY(softmax_f32)
SDC_FAMILY(rmsnorm_f32)
SDC_FAMILY(cross_entropy_f32)
SDC_FAMILY(gemm_bf16_exactint)
SDC_FAMILY(gemm_f16_exactint)
SDC_FAMILY(gemm_tf32_exactint)
SDC_FAMILY(gemm_fp8_exactint)
SDC_FAMILY(gemm_bf16)
SDC_FAMILY(gemm_f16)
SDC_FAMILY(attention_bf16_exactint)
SDC_FAMILY(attention_bf16)
SDC_FAMILY(gemm_bf16_exactint_cublaslt)
SDC_FAMILY(gemm_f16_exactint_cublaslt)
SDC_FAMILY(gemm_tf32_exactint_cublaslt)
SDC_FAMILY(gemm_fp8_exactint_cublaslt)
SDC_FAMILY(gemm_bf16_cublaslt)
SDC_FAMILY(gemm_f16_cublaslt)

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      gemm_f32_family(),    attention_f32_family(), reduce_sum_f32_family(),
      softmax_f32_family(), rmsnorm_f32_family(),   cross_entropy_f32_family(),
      gemm_bf16_exactint_family(), gemm_f16_exactint_family(), gemm_tf32_exactint_family(),
      gemm_fp8_exactint_family(), gemm_bf16_family(), gemm_f16_family(), attention_bf16_exactint_family(),
      attention_bf16_family(),
      gemm_bf16_exactint_cublaslt_family(), gemm_f16_exactint_cublaslt_family(), gemm_tf32_exactint_cublaslt_family(),
      gemm_fp8_exactint_cublaslt_family(), gemm_bf16_cublaslt_family(), gemm_f16_cublaslt_family(),
  };
  return all;
}

const Family* find_family(const std::string& id) {
  for (const Family& f : families())
    if (id == f.id) return &f;
  return nullptr;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::exact: return "exact";
    case Mode::exact_integer: return "exact-integer";
    case Mode::recorded: return "recorded";
    case Mode::consensus: return "consensus";
  }
  return "?";
}

}  // namespace sdc
