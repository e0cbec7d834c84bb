// The CPU side shared by the recorded tensor-core GEMMs: shape validation and the Problem (geometry,
// input generation, tile names). It has no CPU reference: recorded and consensus cases are judged on GPUs.
#pragma once

#include <memory>
#include <string>

#include "src/backends/cuda/lt_dtype.h"
#include "kernels/recorded_gemm/recorded_gemm.h"

namespace sdc::recorded_gemm {

// "" when the case is valid, else one line naming what is wrong.
std::string validate(const Case& c);
// Only for a validated case.
std::unique_ptr<Problem> prepare(const Encoding& e, const Case& c);
// The pattern of a validated case.
Pattern case_pattern(const Encoding& e, const Case& c);

// The formats by the names the family table's SDC_GEMM_RECORDED lines give them (kernels/families.def): the
// element encoding, cuBLASLt's dtype (the device side's traits) and the name descriptions give it.
namespace formats {
struct bf16 {
  static constexpr const Encoding& ENCODING = BF16;
  static constexpr cuda::LtDtype DTYPE = cuda::LtDtype::bf16;
  static constexpr const char* NAME = "bf16";
};
struct f16 {
  static constexpr const Encoding& ENCODING = F16;
  static constexpr cuda::LtDtype DTYPE = cuda::LtDtype::fp16;
  static constexpr const char* NAME = "fp16";
};
}  // namespace formats

template <class F>
std::unique_ptr<Problem> prepare_case(const Case& c) {
  return prepare(F::ENCODING, c);
}

// The registration of a format's family on each engine of the table (recorded_families.cpp; ENGINE: what
// computes it, in its description). No CPU reference: the golden is recorded on GPUs (keyed by the
// architecture, or by the library's version and its pinned algorithm) or the case is judged by consensus;
// GPU only (backends "cuda"), so a CPU run skips it as not applicable.
template <class F, const char* ENGINE>
Family recorded_family(const char* id) {
  static const std::string description =
      std::string(F::NAME) + ENGINE + " on full-precision random data, judged by recorded goldens or consensus";
  return {id,       description.c_str(), {Mode::recorded, Mode::consensus}, {"cuda"}, {"m", "n", "k"},
          validate, prepare_case<F>};
}
inline constexpr char MMA_ENGINE[] = " tensor-core matrix product";
inline constexpr char CUBLASLT_ENGINE[] = " cuBLASLt matrix product (pinned heuristic algorithm)";
template <class F>
Family mma_family(const char* id) {
  return recorded_family<F, MMA_ENGINE>(id);
}
template <class F>
Family cublaslt_family(const char* id) {
  return recorded_family<F, CUBLASLT_ENGINE>(id);
}

}  // namespace sdc::recorded_gemm
