// Bit-exact GEMM tile kernel for the CPU side of sdcscreen, one implementation for fp32 (gemm_f32, and the
// matmuls of attention_f32 and train_step_f32) and fp64 (gemm_f64): T is float or double, and the vector
// traits Avx512<T> and Avx2<T> name the few instructions that differ (vfmadd231ps or vfmadd231pd, lanes).
//
// Exactness argument
// ------------------
// The specification (tile_scalar) defines every output as the fused chain
//     acc = +0; for k = 0..K-1: acc = fma(A[i][k], B[k][j], acc);   (rounded to T at every step)
// The fast paths compute exactly that chain for every element, only for many elements at once:
//  * One vector lane always holds one output C[i][j]; lanes never interact (no horizontal adds, no
//    shuffles of accumulators), so vectorizing over j changes nothing for any single element.
//  * The accumulator starts as +0 (setzero) and advances with vfmadd231ps/pd, which rounds once per
//    step exactly like std::fma. Starting from acc = A*B instead would turn +0 into -0, so we never do it.
//  * k runs in ascending order. Blocking over K does NOT split the chain into partial sums: between
//    K blocks the accumulator is stored to the out tile and loaded back into a register before the
//    chain continues. A store/reload is the identity, so the chain is unbroken.
//  * Packing only copies B values (plus zero padding in lanes that are never stored); register
//    blocking over i and j only changes which chains are in flight, never the order within one.
//  * MXCSR is never touched: subnormals are kept (no FTZ/DAZ), rounding stays nearest-even, and inf/NaN
//    propagate through fma exactly as in std::fma. The file is built with -ffp-contract=off and without
//    -ffast-math, so the compiler cannot fuse or reassociate anything either.
//
// Blocking and memory traffic
// ---------------------------
// A 64x64 fp32 tile needs 512 fresh bytes of A and B per k step for 4096 FMAs (128 cycles at AVX-512
// peak), and B arrives strided, so the kernel is as much about moving data as about arithmetic.
// Per K block of KC = 512 / sizeof(T) rows (128 fp32, 64 fp64: a 64-column tile's B slice is 32 KiB either
// way):
//  * B's slice (KC x nt) is packed into contiguous column panels of NR = NV*VL elements. B rows are N
//    elements apart (often a multiple of 4 KiB), so in place they would all compete for one L1 set and
//    defeat every hardware prefetcher; packed, the slice (one 128 x 64 fp32 panel, two 64 x 32 fp64 panels)
//    stays in L1 while all row groups sweep it. The packing is fused into the first row group's micro-kernel call, so the
//    copy rides on load/store slots the FMA-bound loop leaves idle.
//  * The strided B rows come from L3 or DRAM on every tile, and nothing prefetches them for us. So
//    every micro-kernel call issues, one per few k steps, L2 prefetches for the NEXT K block's B
//    slice (for the last block: the slice of the tile to the right, the usual sweep order; a wrong
//    guess only wastes prefetches). Spread out like this the misses overlap the whole block's compute
//    instead of stalling the packing call.
//  * A is not packed: the micro-kernel broadcasts A[i][k] straight from MR row streams, which are
//    contiguous in k and stay in L2 across the tiles of one tile row; copying A into a buffer per K
//    block was tried and costs more than it saves. Scalars of A and B are read through memcpy: the fp64
//    families' inputs are buffers of 32-bit words (src/spec/f64.h).
//  * The AVX-512 micro-kernel holds a 6 x 4VL block of C (6 x 64 fp32, 6 x 32 fp64) in 24 zmm accumulators
//    (24 independent chains hide the 4-cycle FMA latency on two ports) and needs 6 broadcasts + 4 loads per
//    24 FMAs; the AVX2 one a 6 x 2VL block in 12 ymm (16 registers in all). C goes
//    through the out tile between K blocks. Edges (mt % MR, nt % NR) use the kernel instantiated for
//    the smaller row count / vector count, with the last vector's loads and stores masked.
#include "kernels/gemm_cpu/gemm_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace sdc::gemm_cpu {
namespace {

template <class T>
constexpr int64_t kKC = 512 / sizeof(T);
// Elements per 64-byte cache line.
template <class T>
constexpr int64_t kLine = 64 / sizeof(T);
// How far ahead the packing call touches B rows with an L1 prefetch: they are already in L2 thanks to
// the previous block's prefetches, and rows 4 KiB apart share one 12-way L1 set, so a few are enough.
constexpr int64_t kPackPrefetchRows = 4;

// One scalar of A or B (one load; the pointer may be aligned to 4 bytes only, see gemm_cpu.h).
template <class T>
inline T load(const T* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

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
template <class T>
struct Panel {
  const T* src;  // B at (k0, first column of the panel), row stride ldb (read when packing)
  int64_t ldb;
  int64_t rows_left;  // rows of B from k0 to K: bounds the packing call's prefetches
  T* packed;          // kc rows of nv*VL elements, 64-byte aligned
  int64_t kc;
  int tail;    // valid lanes (1..VL) in the panel's last vector; the rest are zero padded
  bool first;  // k0 == 0: chains start from +0 instead of the out tile
  PrefetchCursor pf;
};

template <class T>
using Kernel = void (*)(const T* a, int64_t lda, const Panel<T>& panel, T* c, int64_t ldc);

constexpr int kMaxMR = 6;
constexpr int kMaxNV = 4;
template <class T>
using Table = Kernel<T>[2][kMaxMR][kMaxNV];  // [pack][rows-1][vectors-1]

template <class T>
struct FastPath {
  int mr, nv, vl;
  Table<T> kernels;
};

// ---------------------------------------------------------------- vector traits
// What the micro-kernel needs of one instruction set's vectors of T: the full-width and tail-masked
// (loadu/storeu with a mask: lanes below `tail` only) loads and stores, a broadcast and the fused
// multiply-add. Each is called only from a micro-kernel with the same target attribute (ATTR). The
// intrinsics' names differ by width (W: _mm512, _mm256) and type (S: ps, pd), and the tail's handling by
// instruction set (AVX-512: a bit mask; AVX2: a vector, all ones in the lanes below `tail`), so one macro
// writes the four.
#define SDC_VECTOR_TRAITS(NAME, ATTR, W, TYPE, VEC, S, MASK, MASK_OF_TAIL, MASKED_LOAD, MASKED_STORE) \
  template <>                                                                                       \
  struct NAME<TYPE> {                                                                               \
    using T = TYPE;                                                                                 \
    using Vec = VEC;                                                                                \
    using Mask = MASK;                                                                              \
    static constexpr int kLanes = sizeof(Vec) / sizeof(T);                                          \
    ATTR static Mask mask(int tail) { return MASK_OF_TAIL; }                                        \
    ATTR static Vec zero() { return W##_setzero_##S(); }                                            \
    ATTR static Vec load(const T* p) { return W##_load_##S(p); }                                    \
    ATTR static Vec loadu(const T* p) { return W##_loadu_##S(p); }                                  \
    ATTR static Vec loadu(const T* p, Mask m) { return MASKED_LOAD; }                               \
    ATTR static void store(T* p, Vec v) { W##_store_##S(p, v); }                                    \
    ATTR static void storeu(T* p, Vec v) { W##_storeu_##S(p, v); }                                  \
    ATTR static void storeu(T* p, Mask m, Vec v) { MASKED_STORE; }                                  \
    ATTR static Vec broadcast(const T* p) { return W##_set1_##S(gemm_cpu::load(p)); }               \
    ATTR static Vec fma(Vec a, Vec b, Vec c) { return W##_fmadd_##S(a, b, c); }                     \
  };
#define SDC_AVX512 __attribute__((target("avx512f"), always_inline))
#define SDC_AVX2 __attribute__((target("avx2,fma"), always_inline))
template <class T>
struct Avx512;
template <class T>
struct Avx2;
SDC_VECTOR_TRAITS(Avx512, SDC_AVX512, _mm512, float, __m512, ps, __mmask16, static_cast<Mask>((1u << tail) - 1u),
                  _mm512_maskz_loadu_ps(m, p), _mm512_mask_storeu_ps(p, m, v))
SDC_VECTOR_TRAITS(Avx512, SDC_AVX512, _mm512, double, __m512d, pd, __mmask8, static_cast<Mask>((1u << tail) - 1u),
                  _mm512_maskz_loadu_pd(m, p), _mm512_mask_storeu_pd(p, m, v))
SDC_VECTOR_TRAITS(Avx2, SDC_AVX2, _mm256, float, __m256, ps, __m256i,
                  _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                  _mm256_maskload_ps(p, m), _mm256_maskstore_ps(p, m, v))
SDC_VECTOR_TRAITS(Avx2, SDC_AVX2, _mm256, double, __m256d, pd, __m256i,
                  _mm256_cmpgt_epi64(_mm256_set1_epi64x(tail), _mm256_setr_epi64x(0, 1, 2, 3)),
                  _mm256_maskload_pd(p, m), _mm256_maskstore_pd(p, m, v))
#undef SDC_VECTOR_TRAITS
#undef SDC_AVX512
#undef SDC_AVX2

// ---------------------------------------------------------------- micro-kernels
#define SDC_GEMM_TARGET __attribute__((target("avx512f")))
#define SDC_GEMM_KERNEL kernel512
#include "kernels/gemm_cpu/gemm_cpu_kernel.inc"
#undef SDC_GEMM_TARGET
#undef SDC_GEMM_KERNEL

#define SDC_GEMM_TARGET __attribute__((target("avx2,fma")))
#define SDC_GEMM_KERNEL kernel256
#include "kernels/gemm_cpu/gemm_cpu_kernel.inc"
#undef SDC_GEMM_TARGET
#undef SDC_GEMM_KERNEL

// ---------------------------------------------------------------- kernel tables
template <class T>
struct K512 {
  template <int MR, int NV, bool PACK>
  struct Fn {
    static constexpr Kernel<T> fn = &kernel512<Avx512<T>, MR, NV, PACK>;
  };
};
template <class T>
struct K256 {
  template <int MR, int NV, bool PACK>
  struct Fn {
    static constexpr Kernel<T> fn = &kernel256<Avx2<T>, MR, NV, PACK>;
  };
};

template <class T, template <int, int, bool> class Fam, int M, int... Vs>
void fill_row(Table<T>& t, std::integer_sequence<int, Vs...>) {
  ((t[0][M - 1][Vs] = Fam<M, Vs + 1, false>::fn, t[1][M - 1][Vs] = Fam<M, Vs + 1, true>::fn), ...);
}
template <class T, template <int, int, bool> class Fam, int NV, int... Ms>
void fill_rows(Table<T>& t, std::integer_sequence<int, Ms...>) {
  (fill_row<T, Fam, Ms + 1>(t, std::make_integer_sequence<int, NV>{}), ...);
}
// Instantiates Fam<m, v, pack> for every m <= MR, v <= NV, so edge blocks get exact-size kernels.
template <class T, template <int, int, bool> class Fam, int MR, int NV>
FastPath<T> make_path(int vl) {
  static_assert(MR <= kMaxMR && NV <= kMaxNV);
  FastPath<T> f{MR, NV, vl, {}};
  fill_rows<T, Fam, NV>(f.kernels, std::make_integer_sequence<int, MR>{});
  return f;
}

template <class T>
const FastPath<T>& avx512_path() {
  static const FastPath<T> f = make_path<T, K512<T>::template Fn, 6, 4>(Avx512<T>::kLanes);
  return f;
}
template <class T>
const FastPath<T>& avx2_path() {
  static const FastPath<T> f = make_path<T, K256<T>::template Fn, 6, 2>(Avx2<T>::kLanes);
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
template <class T>
struct Region {
  const T* base;
  int64_t rows, cols;
};
template <class T>
Region<T> next_b_region(const T* B, int64_t K, int64_t N, int64_t j0, int64_t nt, int64_t k_next) {
  if (k_next < K) return {B + k_next * N + j0, std::min(kKC<T>, K - k_next), nt};
  const int64_t j_next = j0 + nt < N ? j0 + nt : 0;
  return {B + j_next, std::min(kKC<T>, K), std::min(nt, N - j_next)};
}

template <class T>
void run_vector(const FastPath<T>& fp, const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                int64_t mt, int64_t nt, T* out, std::vector<T>& scratch) {
  constexpr int64_t kc_max = kKC<T>, line = kLine<T>, size = sizeof(T);
  const int64_t nr = int64_t{fp.nv} * fp.vl;
  const int64_t panels = (nt + nr - 1) / nr;
  const int64_t groups = (mt + fp.mr - 1) / fp.mr;
  const int64_t need = panels * std::min(K, kc_max) * nr + line;
  if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(static_cast<size_t>(need));
  // Cache-line aligned panels: every panel load is then a single-line access.
  T* const packed = scratch.data() + (line - reinterpret_cast<uintptr_t>(scratch.data()) / size % line) % line;

  for (int64_t k0 = 0; k0 < K; k0 += kc_max) {
    const int64_t kc = std::min(kc_max, K - k0);
    // Split the prefetch region evenly over this block's calls, row-major by cache line.
    const Region<T> rg = next_b_region(B, K, N, j0, nt, k0 + kc);
    const auto rg_addr = reinterpret_cast<uintptr_t>(rg.base);
    const bool ragged = rg_addr % 64 != 0 || N % line != 0;  // rows may straddle one more line
    const int64_t lines = (rg.cols * size + 63) / 64 + ragged;
    const int64_t total = rg.rows * lines;
    const int64_t per_call = (total + panels * groups - 1) / (panels * groups);
    const int period = static_cast<int>(std::max<int64_t>(1, kc / per_call));
    int64_t handed_out = 0;

    for (int64_t p = 0; p < panels; ++p) {
      const int64_t w = std::min(nr, nt - p * nr);
      const int64_t nv = (w + fp.vl - 1) / fp.vl;
      Panel<T> panel{B + k0 * N + j0 + p * nr,
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
        panel.pf = {rg_addr + static_cast<uintptr_t>(first_line / lines * N * size),
                    static_cast<uintptr_t>(N * size),
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
template <class T>
void run_generic(const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                 T* out) {
  for (int64_t i = 0; i < mt; ++i) {
    T* o = out + i * nt;
    std::fill(o, o + nt, T(0));
    const T* a = A + (i0 + i) * K;
    for (int64_t k = 0; k < K; ++k) {
      const T aik = load(a + k);
      const T* b = B + k * N + j0;
      for (int64_t j = 0; j < nt; ++j) o[j] = std::fma(aik, load(b + j), o[j]);
    }
  }
}

template <class T>
bool run_isa(const char* isa, const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
             int64_t nt, T* out, std::vector<T>& scratch) {
  const FastPath<T>* fp = nullptr;
  if (std::strcmp(isa, "avx512f") == 0) {
    if (!has_avx512()) return false;
    fp = &avx512_path<T>();
  } else if (std::strcmp(isa, "avx2+fma") == 0) {
    if (!has_avx2()) return false;
    fp = &avx2_path<T>();
  } else if (std::strcmp(isa, "generic") != 0) {
    return false;
  }
  if (mt <= 0 || nt <= 0) return true;
  if (K <= 0) {  // empty chain: every output is the initial +0
    std::fill(out, out + mt * nt, T(0));
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

template <class T>
void tile_fast(const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt, T* out,
               std::vector<T>& scratch) {
  run_isa(fast_path_isa(), A, B, K, N, i0, j0, mt, nt, out, scratch);
}

template <class T>
bool tile_fast_with(const char* isa, const T* A, const T* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
                    int64_t nt, T* out, std::vector<T>& scratch) {
  return run_isa(isa, A, B, K, N, i0, j0, mt, nt, out, scratch);
}

// The specification: one fused chain per output, k ascending, from +0. Vectorization is disabled
// so that this stays the literal reference the fast paths are compared against.
template <class T>
__attribute__((optimize("no-tree-vectorize"))) void tile_scalar(const T* A, const T* B, int64_t K, int64_t N,
                                                                int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                                                                T* out) {
  for (int64_t i = 0; i < mt; ++i) {
    for (int64_t j = 0; j < nt; ++j) {
      T acc = +T(0);
      for (int64_t k = 0; k < K; ++k) acc = std::fma(load(A + (i0 + i) * K + k), load(B + k * N + (j0 + j)), acc);
      out[i * nt + j] = acc;
    }
  }
}

#define SDC_GEMM_CPU_TYPE(T)                                                                                    \
  template void tile_fast<T>(const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, T*,       \
                             std::vector<T>&);                                                                   \
  template bool tile_fast_with<T>(const char*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t,   \
                                  int64_t, T*, std::vector<T>&);                                                 \
  template void tile_scalar<T>(const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, T*);
SDC_GEMM_CPU_TYPE(float)
SDC_GEMM_CPU_TYPE(double)
#undef SDC_GEMM_CPU_TYPE

}  // namespace sdc::gemm_cpu
