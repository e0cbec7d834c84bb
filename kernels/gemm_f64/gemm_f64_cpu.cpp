// Bit-exact fp64 GEMM tile kernel for the CPU side of sdcscreen: gemm_f32_cpu.cpp's structure over
// binary64 (read that file's comment for the design; what differs is noted here).
//
// Exactness argument
// ------------------
// The specification (tile_scalar) defines every output as the fused chain
//     acc = +0.0; for k = 0..K-1: acc = fma(A[i][k], B[k][j], acc);
// The fast paths compute exactly that chain for every element, only for many elements at once: one vector
// lane holds one output C[i][j] and lanes never interact; the accumulator starts as +0.0 (setzero) and
// advances with vfmadd231pd, which rounds once per step exactly like fma; k runs in ascending order, and
// between K blocks the accumulator goes through the out tile and back (a double store/reload is the
// identity); packing only copies B values. MXCSR is never touched (subnormals kept, round to nearest even),
// and the file is built with -ffp-contract=off and without -ffast-math.
//
// Blocking
// --------
// A panel is NV vectors of 8 (AVX-512) or 4 (AVX2) doubles; the AVX-512 micro-kernel holds a 6 x 32
// block of C in 24 zmm accumulators (6 broadcasts + 4 loads per 24 FMAs), the AVX2 one 6 x 8 in 12 ymm.
// A 64-column tile is two AVX-512 panels, so a K block is kKC = 64 rows: each packed panel is 16 KiB and
// both stay in L1 while the row groups sweep them. The next K block's B slice is prefetched into L2
// during the current block as in gemm_f32. A is read in place, as there (scalar loads go through memcpy:
// the screen's inputs are buffers of 32-bit words, src/spec/f64.h).
#include "kernels/gemm_f64/gemm_f64_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace sdc::gemm_f64 {
namespace {

constexpr int64_t kKC = 64;

// A scalar of A or B: the screen's inputs are buffers of 32-bit words (src/spec/f64.h), read as doubles
// through memcpy (one load).
inline double load(const double* p) {
  double v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// How far ahead the packing call touches B rows with an L1 prefetch: they are already in L2 thanks to
// the previous block's prefetches, and rows 4 KiB apart share one 12-way L1 set, so a few are enough.
constexpr int64_t kPackPrefetchRows = 4;

// Hands out L2 prefetches for a region of B, one line every `period` k steps.
struct PrefetchCursor {
  uintptr_t row;     // address of the current row's first element (integers: never dereferenced)
  uintptr_t stride;  // bytes between rows
  int64_t count;     // lines still to prefetch
  int line, lines;   // next line within the row, lines per row (counted from the row's aligned start)
  int period, wait;  // one prefetch every `period` k steps; rounding the period down makes a call finish
                     // its share early, so lines land well before the next block's packing call (measured
                     // faster than spacing them evenly over the whole call)
};

__attribute__((always_inline)) inline void prefetch_step(PrefetchCursor& c) {
  if (--c.wait != 0 || c.count <= 0) return;
  c.wait = c.period;
  _mm_prefetch(reinterpret_cast<const char*>((c.row & ~uintptr_t{63}) + uintptr_t(c.line) * 64), _MM_HINT_T1);
  if (++c.line == c.lines) {
    c.line = 0;
    c.row += c.stride;
  }
  --c.count;
}

// One column panel of B for one K block, as seen by a micro-kernel call.
struct Panel {
  const double* src;  // B at (k0, first column of the panel), row stride ldb (read when packing)
  int64_t ldb;
  int64_t rows_left;  // rows of B from k0 to K: bounds the packing call's prefetches
  double* packed;      // kc rows of nv*VL doubles, 64-byte aligned
  int64_t kc;
  int tail;    // valid lanes (1..VL) in the panel's last vector; the rest are zero padded
  bool first;  // k0 == 0: chains start from +0.0 instead of the out tile
  PrefetchCursor pf;
};

// a: A at (first row of the group, k0), row stride lda; c: out tile at the block, row stride ldc.
// PACK: read B from panel.src and write panel.packed while computing; otherwise read panel.packed.
using Kernel = void (*)(const double* a, int64_t lda, const Panel& panel, double* c, int64_t ldc);

constexpr int kMaxMR = 6;
constexpr int kMaxNV = 4;
using Table = Kernel[2][kMaxMR][kMaxNV];  // [pack][rows-1][vectors-1]

struct FastPath {
  int mr, nv, vl;
  Table kernels;
};

// ---------------------------------------------------------------- AVX-512
template <int MR, int NV, bool PACK>
__attribute__((target("avx512f"))) void kernel512(const double* a, int64_t lda, const Panel& panel, double* c,
                                                  int64_t ldc) {
  const __mmask8 mask = static_cast<__mmask8>((1u << panel.tail) - 1u);
  const int64_t kc = panel.kc, ldb = panel.ldb;
  const double* src = panel.src;
  double* bp = panel.packed;
  PrefetchCursor pf = panel.pf;
  __m512d acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = panel.first   ? _mm512_setzero_pd()
                  : v == NV - 1 ? _mm512_maskz_loadu_pd(mask, c + r * ldc + v * 8)
                                : _mm512_loadu_pd(c + r * ldc + v * 8);
  for (int64_t k = 0; k < kc; ++k, bp += NV * 8) {
    prefetch_step(pf);
    __m512d b[NV];
    if constexpr (PACK) {
      if (k + kPackPrefetchRows < panel.rows_left) {
        const double* ahead = src + kPackPrefetchRows * ldb;
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + (NV - 1) * 8 + panel.tail - 1), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        b[v] = v == NV - 1 ? _mm512_maskz_loadu_pd(mask, src + v * 8) : _mm512_loadu_pd(src + v * 8);
        _mm512_store_pd(bp + v * 8, b[v]);
      }
      src += ldb;
    } else {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = _mm512_load_pd(bp + v * 8);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512d av = _mm512_set1_pd(load(a + r * lda + k));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_pd(av, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (v == NV - 1)
        _mm512_mask_storeu_pd(c + r * ldc + v * 8, mask, acc[r][v]);
      else
        _mm512_storeu_pd(c + r * ldc + v * 8, acc[r][v]);
    }
}

// ---------------------------------------------------------------- AVX2 + FMA
__attribute__((target("avx2,fma"))) inline __m256i tail_mask256(int tail) {
  return _mm256_cmpgt_epi64(_mm256_set1_epi64x(tail), _mm256_setr_epi64x(0, 1, 2, 3));
}

// Same structure as kernel512 with 4-lane vectors; 16 ymm registers allow a 6 x 8 block.
template <int MR, int NV, bool PACK>
__attribute__((target("avx2,fma"))) void kernel256(const double* a, int64_t lda, const Panel& panel, double* c,
                                                   int64_t ldc) {
  const __m256i mask = tail_mask256(panel.tail);
  const int64_t kc = panel.kc, ldb = panel.ldb;
  const double* src = panel.src;
  double* bp = panel.packed;
  PrefetchCursor pf = panel.pf;
  __m256d acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = panel.first   ? _mm256_setzero_pd()
                  : v == NV - 1 ? _mm256_maskload_pd(c + r * ldc + v * 4, mask)
                                : _mm256_loadu_pd(c + r * ldc + v * 4);
  for (int64_t k = 0; k < kc; ++k, bp += NV * 4) {
    prefetch_step(pf);
    __m256d b[NV];
    if constexpr (PACK) {
      if (k + kPackPrefetchRows < panel.rows_left) {
        const double* ahead = src + kPackPrefetchRows * ldb;
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + (NV - 1) * 4 + panel.tail - 1), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        b[v] = v == NV - 1 ? _mm256_maskload_pd(src + v * 4, mask) : _mm256_loadu_pd(src + v * 4);
        _mm256_store_pd(bp + v * 4, b[v]);
      }
      src += ldb;
    } else {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = _mm256_load_pd(bp + v * 4);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256d av = _mm256_set1_pd(load(a + r * lda + k));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_pd(av, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (v == NV - 1)
        _mm256_maskstore_pd(c + r * ldc + v * 4, mask, acc[r][v]);
      else
        _mm256_storeu_pd(c + r * ldc + v * 4, acc[r][v]);
    }
}

// ---------------------------------------------------------------- kernel tables
template <int MR, int NV, bool PACK>
struct K512 {
  static constexpr Kernel fn = &kernel512<MR, NV, PACK>;
};
template <int MR, int NV, bool PACK>
struct K256 {
  static constexpr Kernel fn = &kernel256<MR, NV, PACK>;
};

template <template <int, int, bool> class Fam, int M, int... Vs>
void fill_row(Table& t, std::integer_sequence<int, Vs...>) {
  ((t[0][M - 1][Vs] = Fam<M, Vs + 1, false>::fn, t[1][M - 1][Vs] = Fam<M, Vs + 1, true>::fn), ...);
}
template <template <int, int, bool> class Fam, int NV, int... Ms>
void fill_rows(Table& t, std::integer_sequence<int, Ms...>) {
  (fill_row<Fam, Ms + 1>(t, std::make_integer_sequence<int, NV>{}), ...);
}
// Instantiates Fam<m, v, pack> for every m <= MR, v <= NV, so edge blocks get exact-size kernels.
template <template <int, int, bool> class Fam, int MR, int NV>
FastPath make_path(int vl) {
  static_assert(MR <= kMaxMR && NV <= kMaxNV);
  FastPath f{MR, NV, vl, {}};
  fill_rows<Fam, NV>(f.kernels, std::make_integer_sequence<int, MR>{});
  return f;
}

const FastPath& avx512_path() {
  static const FastPath f = make_path<K512, 6, 4>(8);
  return f;
}
const FastPath& avx2_path() {
  static const FastPath f = make_path<K256, 6, 2>(4);
  return f;
}

bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}
bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// The part of B to prefetch while computing K block [k_next - kc, k_next): see the header comment.
struct Region {
  const double* base;
  int64_t rows, cols;
};
Region next_b_region(const double* B, int64_t K, int64_t N, int64_t j0, int64_t nt, int64_t k_next) {
  if (k_next < K) return {B + k_next * N + j0, std::min(kKC, K - k_next), nt};
  const int64_t j_next = j0 + nt < N ? j0 + nt : 0;
  return {B + j_next, std::min(kKC, K), std::min(nt, N - j_next)};
}

void run_vector(const FastPath& fp, const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                int64_t mt, int64_t nt, double* out, std::vector<double>& scratch) {
  const int64_t nr = int64_t{fp.nv} * fp.vl;
  const int64_t panels = (nt + nr - 1) / nr;
  const int64_t groups = (mt + fp.mr - 1) / fp.mr;
  const int64_t need = panels * std::min(K, kKC) * nr + 8;
  if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(static_cast<size_t>(need));
  // Cache-line aligned panels: every panel load is then a single-line access.
  double* const packed = scratch.data() + (8 - reinterpret_cast<uintptr_t>(scratch.data()) / 8 % 8) % 8;

  for (int64_t k0 = 0; k0 < K; k0 += kKC) {
    const int64_t kc = std::min(kKC, K - k0);
    // Split the prefetch region evenly over this block's calls, row-major by cache line.
    const Region rg = next_b_region(B, K, N, j0, nt, k0 + kc);
    const auto rg_addr = reinterpret_cast<uintptr_t>(rg.base);
    const bool ragged = rg_addr % 64 != 0 || N % 8 != 0;  // rows may straddle one more line
    const int64_t lines = (rg.cols * 8 + 63) / 64 + ragged;
    const int64_t total = rg.rows * lines;
    const int64_t per_call = (total + panels * groups - 1) / (panels * groups);
    const int period = static_cast<int>(std::max<int64_t>(1, kc / per_call));
    int64_t handed_out = 0;

    for (int64_t p = 0; p < panels; ++p) {
      const int64_t w = std::min(nr, nt - p * nr);
      const int64_t nv = (w + fp.vl - 1) / fp.vl;
      Panel panel{B + k0 * N + j0 + p * nr,
                  N,
                  K - k0,
                  packed + p * kc * nr,
                  kc,
                  static_cast<int>(w - (nv - 1) * fp.vl),
                  k0 == 0,
                  {}};
      for (int64_t g = 0; g < groups; ++g, handed_out += per_call) {
        const int64_t m = std::min<int64_t>(fp.mr, mt - g * fp.mr);
        const int64_t first_line = std::min(handed_out, total);
        panel.pf = {rg_addr + static_cast<uintptr_t>(first_line / lines * N * 8),
                    static_cast<uintptr_t>(N * 8),
                    std::min(per_call, total - first_line),
                    static_cast<int>(first_line % lines),
                    static_cast<int>(lines),
                    period,
                    1};
        // The first row group packs the panel; the others read it from L1.
        fp.kernels[g == 0][m - 1][nv - 1](A + (i0 + g * fp.mr) * K + k0, K, panel, out + g * fp.mr * nt + p * nr, nt);
      }
    }
  }
}

// Portable path: row by row, an axpy over j per k (contiguous B accesses); out[i][j] still sees k in
// ascending order, starting from +0. std::fma is exact (glibc uses the FMA instruction when present).
void run_generic(const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                 double* out) {
  for (int64_t i = 0; i < mt; ++i) {
    double* o = out + i * nt;
    std::fill(o, o + nt, 0.0);
    const double* a = A + (i0 + i) * K;
    for (int64_t k = 0; k < K; ++k) {
      const double aik = load(a + k);
      const double* b = B + k * N + j0;
      for (int64_t j = 0; j < nt; ++j) o[j] = std::fma(aik, load(b + j), o[j]);
    }
  }
}

bool run_isa(const char* isa, const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
             int64_t nt, double* out, std::vector<double>& scratch) {
  const FastPath* fp = nullptr;
  if (std::strcmp(isa, "avx512f") == 0) {
    if (!has_avx512()) return false;
    fp = &avx512_path();
  } else if (std::strcmp(isa, "avx2+fma") == 0) {
    if (!has_avx2()) return false;
    fp = &avx2_path();
  } else if (std::strcmp(isa, "generic") != 0) {
    return false;
  }
  if (mt <= 0 || nt <= 0) return true;
  if (K <= 0) {  // empty chain: every output is the initial +0.0
    std::fill(out, out + mt * nt, 0.0);
  } else if (fp) {
    run_vector(*fp, A, B, K, N, i0, j0, mt, nt, out, scratch);
  } else {
    run_generic(A, B, K, N, i0, j0, mt, nt, out);
  }
  return true;
}

}  // namespace

const char* fast_path_isa() {
  static const char* const isa = has_avx512() ? "avx512f" : has_avx2() ? "avx2+fma" : "generic";
  return isa;
}

void tile_fast(const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
               double* out, std::vector<double>& scratch) {
  run_isa(fast_path_isa(), A, B, K, N, i0, j0, mt, nt, out, scratch);
}

bool tile_fast_with(const char* isa, const double* A, const double* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                    int64_t mt, int64_t nt, double* out, std::vector<double>& scratch) {
  return run_isa(isa, A, B, K, N, i0, j0, mt, nt, out, scratch);
}

// The specification: one fused chain per output, k ascending, from +0.0. Vectorization is disabled
// so that this stays the literal reference the fast paths are compared against.
__attribute__((optimize("no-tree-vectorize"))) void tile_scalar(const double* A, const double* B, int64_t K, int64_t N,
                                                                int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                                                                double* out) {
  for (int64_t i = 0; i < mt; ++i) {
    for (int64_t j = 0; j < nt; ++j) {
      double acc = +0.0;
      for (int64_t k = 0; k < K; ++k) acc = std::fma(load(A + (i0 + i) * K + k), load(B + k * N + (j0 + j)), acc);
      out[i * nt + j] = acc;
    }
  }
}

}  // namespace sdc::gemm_f64
