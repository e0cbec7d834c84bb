#pragma once
// The CPU GEMM tile kernel of gemm_f32 (T = float) and gemm_f64 (T = double), and of the CPU paths that
// multiply fp32 matrices (attention_f32, train_step_f32): one implementation over the element type.
#include <cstdint>
#include <vector>
namespace sdc::gemm_cpu {
// Which instruction set the fast path uses on this CPU ("avx512f", "avx2+fma", "generic"), for both types.
const char* fast_path_isa();
// Computes the tile of C = A*B with rows [i0, i0+mt) and columns [j0, j0+nt) into out (mt x nt, row-major,
// leading dimension nt). A: M x K row-major (lda = K), B: K x N row-major (ldb = N).
// scratch is caller-owned working memory the function may resize (packing buffers); reuse it across calls.
// Defined for T = float and T = double. A and B need only the alignment of 32-bit words (the fp64 families'
// inputs are buffers of words).
template <class T>
void tile_fast(const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt, T* out,
               std::vector<T>& scratch);
// The specification itself: plain triple loop with std::fma, no vectorization (marked with
// __attribute__((optimize("no-tree-vectorize")))), used to cross-check the fast path.
template <class T>
void tile_scalar(const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt, T* out);
// For tests: run the fast path with a forced instruction set ("avx512f", "avx2+fma", "generic");
// returns false (and does nothing) when this CPU lacks it.
template <class T>
bool tile_fast_with(const char* isa, const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
                    int64_t nt, T* out, std::vector<T>& scratch);
}  // namespace sdc::gemm_cpu
