// The CPU side shared by the exact-integer GEMM families: shape validation and the Problem (input
// generation and the exact reference). Each family's <id>_ref.cpp binds its Format to these.
#pragma once

#include <memory>
#include <string>

#include "kernels/exactint/exactint.h"
#include "src/core/family.h"

namespace sdc::exactint {

// "" when the case can run exactly, else one line naming what is wrong (shape, K beyond the bound,
// a distribution the pattern does not define).
std::string validate(const Format& f, const Case& c);

// Only for a validated case.
std::unique_ptr<Problem> prepare(const Format& f, const Case& c);

// The pattern of a validated case (its shape's K, its seed and distribution).
Pattern case_pattern(const Format& f, const Case& c);

template <class F>
std::string validate_case(const Case& c) {
  return validate(F::FORMAT, c);
}
template <class F>
std::unique_ptr<Problem> prepare_case(const Case& c) {
  return prepare(F::FORMAT, c);
}

// The registration of a format's two families (F: a format's traits type, exactint.h), one per engine of the
// family table's SDC_GEMM_EXACTINT lines (exactint_families.cpp). The mma.sync family gemm_<f>_exactint runs
// on the CPU (the exact reference) and CUDA; its cuBLASLt twin on CUDA only, on the same inputs, so it shares
// the twin's goldens (goldens_of) and a CPU run skips it as not applicable.
// The fp8 family's own kernel is an mma.sync m16n8k32 e4m3: native on compute capability 8.9 (Ada), but on
// 9.0 (Hopper, whose fp8 tensor cores only wgmma reaches) ptxas emulates it (more SASS and registers than on
// sm_89: conversions and f16 tensor-core instructions), so there it does not exercise the fp8 tensor cores;
// gemm_fp8_exactint_cublaslt does (cuBLASLt's Hopper kernels). `list`, the docs and each test's engine say so.
inline constexpr const char* FP8_MMA_SYNC_NOTE =
    "on sm_90 the mma.sync e4m3 instruction is emulated, not Hopper's fp8 tensor cores: "
    "gemm_fp8_exactint_cublaslt exercises those";

// id: the family table line's id (gemm_<format>_exactint); the cuBLASLt twin's is id + "_cublaslt".
template <class F>
Family mma_family(const char* id) {
  static_assert(windows_ok(F::FORMAT), "formats.h's proof and the compiler agree");
  static const std::string description = std::string(F::NAME) +
                                         " tensor-core matrix product on inputs whose every partial sum is exact (" +
                                         std::to_string(F::FORMAT.bound_bits) + "-bit bound)" +
                                         (F::TYPE == Narrow::e4m3 ? std::string("; ") + FP8_MMA_SYNC_NOTE : "");
  return {id,
          description.c_str(),
          {Mode::exact_integer},
          {"cpu", "cuda"},
          {"m", "n", "k"},
          validate_case<F>,
          prepare_case<F>};
}
template <class F>
Family cublaslt_family(const char* mma_id) {
  static const std::string id = std::string(mma_id) + "_cublaslt";
  static const std::string description = std::string(F::NAME) +
                                         " cuBLASLt matrix product (pinned heuristic algorithm) on " + mma_id +
                                         "'s exact inputs (" + std::to_string(F::FORMAT.bound_bits) + "-bit bound)";
  Family f{id.c_str(),      description.c_str(), {Mode::exact_integer}, {"cuda"},
           {"m", "n", "k"}, validate_case<F>,    prepare_case<F>};
  f.goldens_of = mma_id;
  return f;
}

}  // namespace sdc::exactint
