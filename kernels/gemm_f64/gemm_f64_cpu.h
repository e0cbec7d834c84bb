#pragma once
#include <cstdint>
#include <vector>
namespace sdc::gemm_f64 {
// Which instruction set the fast path uses on this CPU ("avx512f", "avx2+fma", "generic").
const char* fast_path_isa();
// Computes the tile of C = A*B with rows [i0, i0+mt) and columns [j0, j0+nt) into out (mt x nt, row-major,
// leading dimension nt). A: M x K row-major (lda = K), B: K x N row-major (ldb = N).
// scratch is caller-owned working memory the function may resize (packing buffers); reuse it across calls.
void tile_fast(const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
               double* out, std::vector<double>& scratch);
// The specification itself: plain triple loop with std::fma, no vectorization, used to cross-check the
// fast path.
void tile_scalar(const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
                 int64_t nt, double* out);
// For tests: run the fast path with a forced instruction set ("avx512f", "avx2+fma", "generic");
// returns false (and does nothing) when this CPU lacks it.
bool tile_fast_with(const char* isa, const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                    int64_t mt, int64_t nt, double* out, std::vector<double>& scratch);
}  // namespace sdc::gemm_f64
