// Bit-exact fp32 GEMM tile kernel for the CPU side of sdcscreen.
//
// Exactness argument
// ------------------
// The specification (tile_scalar) defines every output as the fused chain
//     acc = +0.0f; for k = 0..K-1: acc = fmaf(A[i][k], B[k][j], acc);
// The fast paths compute exactly that chain for every element, only for many elements at once:
//  * One vector lane always holds one output element C[i][j]; lanes never interact (no horizontal
//    adds, no shuffles of accumulators), so vectorizing over j changes nothing per element.
//  * The accumulator starts as +0.0f (setzero) and is advanced with vfmadd231ps, which rounds once per
//    step exactly like fmaf. acc = A*B for the first step would differ (-0 vs +0), so we never do it.
//  * K is processed in ascending order. Blocking over K does NOT split the chain into partial sums:
//    between K blocks the accumulator is stored to the out tile and loaded back into a register
//    before continuing the chain. A float store/reload is the identity, so the chain is unbroken.
//  * Packing only copies B values (plus zero padding in lanes that are never stored), and the
//    register blocking over i only changes which outputs are in flight, never the order within one.
//  * MXCSR is never touched, so subnormals are kept (no FTZ/DAZ) and rounding stays nearest-even;
//    infinities and NaNs propagate through fma exactly as in fmaf. The file is compiled with
//    -ffp-contract=off and without -ffast-math, so the compiler cannot fuse or reassociate either.
//
// Blocking
// --------
// The caller hands us one tile (64x64 in the tool) and a K that can reach 8192. Per K block of KC
// rows we pack the tile's slice of B (KC x nt) into contiguous column panels of NR floats: B's rows
// are N floats apart (a power of two in practice), so reading them in place would map every row to
// the same L1 set; the packed panel (KC*NR*4 bytes) stays in L1 while we sweep all row groups.
// A is not packed: a micro-kernel broadcasts A[i][k] straight from MR row streams, which are
// contiguous in k, so the hardware prefetchers follow them and we avoid a transpose per tile.
// The micro-kernel keeps an MR x NR block of C in registers for the whole K block (MR*NV independent
// fma chains hide the fma latency), and loads/stores it through the out tile between K blocks.
// Edges (mt % MR, nt % NR) are handled by instantiating the kernel for every smaller MR / vector
// count and masking the last vector's loads and stores; padded B lanes are zero and never stored.
#include "kernels/gemm_f32/gemm_f32_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace sdc::gemm_f32 {
namespace {

#ifndef SDC_GEMM_KC
#define SDC_GEMM_KC 256
#endif
#ifndef SDC_GEMM_MR512
#define SDC_GEMM_MR512 8
#endif
#ifndef SDC_GEMM_NV512
#define SDC_GEMM_NV512 2
#endif
#ifndef SDC_GEMM_PF
#define SDC_GEMM_PF 24
#endif

constexpr int64_t kKC = SDC_GEMM_KC;
#ifndef SDC_T1
#define SDC_T1 1
#endif
#ifndef SDC_APF
#define SDC_APF 0
#endif
// How many B rows ahead the packing kernel prefetches: B's rows are N floats apart, so no hardware
// prefetcher follows them, and an L3 hit costs ~100 cycles, i.e. ~12 k-steps of an 8-row kernel.
constexpr int64_t kPrefetchRows = SDC_GEMM_PF;

// One column panel of B for one K block, as seen by a micro-kernel.
struct Panel {
    const float* src;  // B at (k0, first column of the panel), row stride ldb
    int64_t ldb;
    int64_t rows_left;  // rows of B from k0 to K: bounds the prefetches
    float* packed;      // kc rows of nv*VL floats
    int64_t kc;
    int tail;    // valid lanes (1..VL) in the panel's last vector; the rest are zero padded
    bool first;  // k0 == 0: chains start from +0.0f instead of the out tile
    // Lines of B wanted soon (see run_vector), one prefetch into L2 per k step: pf_count lines,
    // starting at line pf_line of the row at pf_row; rows are pf_stride bytes apart, pf_lines lines wide.
    const char* pf_row;
    int64_t pf_stride;
    int64_t pf_count;
    int pf_line;
    int pf_lines;
    int pf_period;  // k steps between prefetches: spread them over the call so few are in flight
    int pf_wait;
};

// One L2 prefetch per k step keeps the extra work at one load-port slot and a few scalar ops,
// which an FMA-bound loop absorbs for free.
__attribute__((always_inline)) inline void prefetch_step(Panel& p) {
    if (--p.pf_wait == 0 && p.pf_count > 0) {
        p.pf_wait = p.pf_period;
        _mm_prefetch(p.pf_row + p.pf_line * 64, _MM_HINT_T1);
        if (++p.pf_line == p.pf_lines) {
            p.pf_line = 0;
            p.pf_row += p.pf_stride;
        }
        --p.pf_count;
    }
}

// a: A at (first row of the group, k0), row stride lda; c: out tile at the block, row stride ldc.
// The PACK variant reads B from src and writes the packed panel while computing, so the copy
// rides on the load/store ports the FMA-bound loop leaves idle; later row groups read `packed`.
using Kernel = void (*)(const float* a, int64_t lda, const Panel& panel, float* c, int64_t ldc);

constexpr int kMaxMR = 16;
constexpr int kMaxNV = 4;

struct FastPath {
    const char* name;
    int mr, nv, vl;
    Kernel kernels[2][kMaxMR][kMaxNV];  // [pack][m-1][nv-1]
};

// ---------------------------------------------------------------- AVX-512
template <int MR, int NV, bool PACK>
__attribute__((target("avx512f"))) void kernel512(const float* a, int64_t lda, const Panel& panel, float* c,
                                                  int64_t ldc) {
    Panel p = panel;  // a private copy: the prefetch cursor advances in it
    const __mmask16 mask = static_cast<__mmask16>((1u << p.tail) - 1u);
    const int64_t kc = p.kc;
    const float* src = p.src;
    float* bp = p.packed;
    __m512 acc[MR][NV];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (p.first)
                acc[r][v] = _mm512_setzero_ps();
            else if (v == NV - 1)
                acc[r][v] = _mm512_maskz_loadu_ps(mask, c + r * ldc + v * 16);
            else
                acc[r][v] = _mm512_loadu_ps(c + r * ldc + v * 16);
        }
    }
    for (int64_t k = 0; k < kc; ++k, bp += NV * 16) {
        __m512 b[NV];
        prefetch_step(p);
#if SDC_APF
        _mm_prefetch(reinterpret_cast<const char*>(a + (k & (MR - 1)) * lda + k + SDC_APF), _MM_HINT_T0);
#endif
        if constexpr (PACK) {
            if (k + kPrefetchRows < p.rows_left) {
                const float* pf = src + kPrefetchRows * p.ldb;
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) _mm_prefetch(reinterpret_cast<const char*>(pf + v * 16), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(pf + NV * 16 - 1), _MM_HINT_T0);
            }
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                b[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(mask, src + v * 16) : _mm512_loadu_ps(src + v * 16);
                _mm512_storeu_ps(bp + v * 16, b[v]);
            }
            src += p.ldb;
        } else {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(bp + v * 16);
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const __m512 av = _mm512_set1_ps(a[r * lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, b[v], acc[r][v]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (v == NV - 1)
                _mm512_mask_storeu_ps(c + r * ldc + v * 16, mask, acc[r][v]);
            else
                _mm512_storeu_ps(c + r * ldc + v * 16, acc[r][v]);
        }
    }
}

// ---------------------------------------------------------------- AVX2 + FMA
__attribute__((target("avx2,fma"))) inline __m256i tail_mask256(int tail) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <int MR, int NV, bool PACK>
__attribute__((target("avx2,fma"))) void kernel256(const float* a, int64_t lda, const Panel& panel, float* c,
                                                   int64_t ldc) {
    Panel p = panel;
    const __m256i mask = tail_mask256(p.tail);
    const int64_t kc = p.kc;
    const float* src = p.src;
    float* bp = p.packed;
    __m256 acc[MR][NV];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (p.first)
                acc[r][v] = _mm256_setzero_ps();
            else if (v == NV - 1)
                acc[r][v] = _mm256_maskload_ps(c + r * ldc + v * 8, mask);
            else
                acc[r][v] = _mm256_loadu_ps(c + r * ldc + v * 8);
        }
    }
    for (int64_t k = 0; k < kc; ++k, bp += NV * 8) {
        __m256 b[NV];
        prefetch_step(p);
        if constexpr (PACK) {
            if (k + kPrefetchRows < p.rows_left) {
                const float* pf = src + kPrefetchRows * p.ldb;
                _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T0);
                _mm_prefetch(reinterpret_cast<const char*>(pf + NV * 8 - 1), _MM_HINT_T0);
            }
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) {
                b[v] = v == NV - 1 ? _mm256_maskload_ps(src + v * 8, mask) : _mm256_loadu_ps(src + v * 8);
                _mm256_storeu_ps(bp + v * 8, b[v]);
            }
            src += p.ldb;
        } else {
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) b[v] = _mm256_loadu_ps(bp + v * 8);
        }
#pragma GCC unroll 16
        for (int r = 0; r < MR; ++r) {
            const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(av, b[v], acc[r][v]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            if (v == NV - 1)
                _mm256_maskstore_ps(c + r * ldc + v * 8, mask, acc[r][v]);
            else
                _mm256_storeu_ps(c + r * ldc + v * 8, acc[r][v]);
        }
    }
}

// ---------------------------------------------------------------- tables
template <int MR, int NV, bool PACK>
struct K512 {
    static constexpr Kernel fn = &kernel512<MR, NV, PACK>;
};
template <int MR, int NV, bool PACK>
struct K256 {
    static constexpr Kernel fn = &kernel256<MR, NV, PACK>;
};

// Fills table[pack][m-1][v-1] with Fam<m, v, pack>::fn for all m <= MR, v <= NV.
using Table = Kernel[2][kMaxMR][kMaxNV];
template <template <int, int, bool> class Fam, int M, int... Vs>
void fill_row(Table& t, std::integer_sequence<int, Vs...>) {
    ((t[0][M - 1][Vs] = Fam<M, Vs + 1, false>::fn, t[1][M - 1][Vs] = Fam<M, Vs + 1, true>::fn), ...);
}
template <template <int, int, bool> class Fam, int NV, int... Ms>
void fill_rows(Table& t, std::integer_sequence<int, Ms...>) {
    (fill_row<Fam, Ms + 1>(t, std::make_integer_sequence<int, NV>{}), ...);
}
template <template <int, int, bool> class Fam, int MR, int NV>
FastPath make_path(const char* name, int vl) {
    static_assert(MR <= kMaxMR && NV <= kMaxNV);
    FastPath f{name, MR, NV, vl, {}};
    fill_rows<Fam, NV>(f.kernels, std::make_integer_sequence<int, MR>{});
    return f;
}

const FastPath& avx512_path() {
    static const FastPath f = make_path<K512, SDC_GEMM_MR512, SDC_GEMM_NV512>("avx512f", 16);
    return f;
}
const FastPath& avx2_path() {
    static const FastPath f = make_path<K256, 6, 2>("avx2+fma", 8);
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

#ifdef SDC_PROF
}
uint64_t g_prof[2];
namespace {
#endif
// Where B will be needed next, so that the whole K block's compute can pull it toward L2 (B rows
// are N floats apart: no hardware prefetcher follows them, and a packing pass that waits for L3
// would stall ~3x longer than its own compute). Within a tile that is the next K block; after the
// last block we guess the caller's next tile is the one to the right (or the first column of the
// next row of tiles), the usual sweep order; a wrong guess only wastes prefetches.
struct PrefetchRegion {
    const float* base;
    int64_t rows, cols;
};
PrefetchRegion next_b_region(const float* B, int64_t K, int64_t N, int64_t j0, int64_t nt, int64_t k_next) {
    if (k_next < K) return {B + k_next * N + j0, std::min(kKC, K - k_next), nt};
    const int64_t j_next = j0 + nt < N ? j0 + nt : 0;
    return {B + j_next, std::min(kKC, K), std::min(nt, N - j_next)};
}

void run_vector(const FastPath& fp, const float* A, const float* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                int64_t mt, int64_t nt, float* out, std::vector<float>& scratch) {
    const int64_t nr = int64_t{fp.nv} * fp.vl;
    const int64_t panels = (nt + nr - 1) / nr;
    const int64_t bsize = panels * std::min(K, kKC) * nr;
#if SDC_ACOPY
    const int64_t lda_p = (std::min(K, kKC) + 15) / 16 * 16 + 16;
#else
    const int64_t lda_p = 0;
#endif
    const int64_t need = bsize + mt * lda_p;
    if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(static_cast<size_t>(need));
    const int64_t groups = (mt + fp.mr - 1) / fp.mr;
    for (int64_t k0 = 0; k0 < K; k0 += kKC) {
        const int64_t kc = std::min(kKC, K - k0);
        const PrefetchRegion pr = next_b_region(B, K, N, j0, nt, k0 + kc);
        const auto start = reinterpret_cast<uintptr_t>(pr.base) % 64;
        // Lines per row: exact for the first row, one more when rows are not all aligned alike.
        const int64_t lines = static_cast<int64_t>((start + pr.cols * 4 + 63) / 64) + (N % 16 != 0);
        const int64_t per_call = SDC_T1 * (pr.rows * lines + panels * groups - 1) / (panels * groups);
        const int period = static_cast<int>(std::max<int64_t>(1, kc / std::max<int64_t>(1, per_call)));
        int64_t pf_next = 0;  // next line of the region to hand out, row-major
#if SDC_ACOPY
        float* apack = scratch.data() + bsize;
        for (int64_t i = 0; i < mt; ++i) std::memcpy(apack + i * lda_p, A + (i0 + i) * K + k0, kc * 4);
#endif
#if SDC_ORDER
        for (int64_t g = 0; g < groups; ++g) {
        for (int64_t p = 0; p < panels; ++p, pf_next += per_call) {
            const int64_t w = std::min(nr, nt - p * nr);
            const int64_t nv = (w + fp.vl - 1) / fp.vl;
#else
        for (int64_t p = 0; p < panels; ++p) {
            const int64_t w = std::min(nr, nt - p * nr);
            const int64_t nv = (w + fp.vl - 1) / fp.vl;
            for (int64_t g = 0; g < groups; ++g, pf_next += per_call) {
#endif
                const int64_t i = g * fp.mr;
                const int64_t m = std::min<int64_t>(fp.mr, mt - i);
                const int64_t row = std::min(pf_next / lines, pr.rows);
                const Panel panel{B + k0 * N + j0 + p * nr,
                                  N,
                                  K - k0,
                                  scratch.data() + p * kc * nr,
                                  kc,
                                  static_cast<int>(w - (nv - 1) * fp.vl),
                                  k0 == 0,
                                  reinterpret_cast<const char*>(pr.base + row * N),
                                  N * 4,
                                  std::max<int64_t>(0, std::min(per_call, pr.rows * lines - pf_next)),
                                  static_cast<int>(pf_next % lines),
                                  static_cast<int>(lines),
                                  period,
                                  1};
#ifdef SDC_PROF
                const uint64_t t0 = __rdtsc();
#endif
#if SDC_ACOPY
                fp.kernels[g == 0][m - 1][nv - 1](apack + i * lda_p, lda_p, panel, out + i * nt + p * nr, nt);
#else
                fp.kernels[SDC_NOPACK ? 0 : g == 0][m - 1][nv - 1](A + (i0 + i) * K + k0, K, panel, out + i * nt + p * nr, nt);
#endif
#ifdef SDC_PROF
                g_prof[g == 0] += __rdtsc() - t0;
#endif
            }
        }
    }
}

// Portable path: same chains as the spec, row by row (an axpy over j per k keeps B accesses
// contiguous); out[i][j] still sees k in ascending order, starting from +0.
void run_generic(const float* A, const float* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                 float* out) {
    for (int64_t i = 0; i < mt; ++i) {
        float* o = out + i * nt;
        std::fill(o, o + nt, 0.0f);
        const float* a = A + (i0 + i) * K;
        for (int64_t k = 0; k < K; ++k) {
            const float aik = a[k];
            const float* b = B + k * N + j0;
            for (int64_t j = 0; j < nt; ++j) o[j] = std::fma(aik, b[j], o[j]);
        }
    }
}

bool run_isa(const char* isa, const float* A, const float* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt,
             int64_t nt, float* out, std::vector<float>& scratch) {
    if (mt <= 0 || nt <= 0) return true;
    if (K <= 0) {  // empty chain: every output is the initial +0.0f
        std::fill(out, out + mt * nt, 0.0f);
        return true;
    }
    if (std::strcmp(isa, "avx512f") == 0) {
        if (!has_avx512()) return false;
        run_vector(avx512_path(), A, B, K, N, i0, j0, mt, nt, out, scratch);
    } else if (std::strcmp(isa, "avx2+fma") == 0) {
        if (!has_avx2()) return false;
        run_vector(avx2_path(), A, B, K, N, i0, j0, mt, nt, out, scratch);
    } else if (std::strcmp(isa, "generic") == 0) {
        run_generic(A, B, K, N, i0, j0, mt, nt, out);
    } else {
        return false;
    }
    return true;
}

}  // namespace

const char* fast_path_isa() {
    static const char* const isa = has_avx512() ? "avx512f" : has_avx2() ? "avx2+fma" : "generic";
    return isa;
}

void tile_fast(const float* A, const float* B, int64_t K, int64_t N, int64_t i0, int64_t j0, int64_t mt, int64_t nt,
               float* out, std::vector<float>& scratch) {
    run_isa(fast_path_isa(), A, B, K, N, i0, j0, mt, nt, out, scratch);
}

bool tile_fast_with(const char* isa, const float* A, const float* B, int64_t K, int64_t N, int64_t i0, int64_t j0,
                    int64_t mt, int64_t nt, float* out, std::vector<float>& scratch) {
    return run_isa(isa, A, B, K, N, i0, j0, mt, nt, out, scratch);
}

__attribute__((optimize("no-tree-vectorize"))) void tile_scalar(const float* A, const float* B, int64_t K, int64_t N,
                                                                int64_t i0, int64_t j0, int64_t mt, int64_t nt,
                                                                float* out) {
    for (int64_t i = 0; i < mt; ++i) {
        for (int64_t j = 0; j < nt; ++j) {
            float acc = +0.0f;
            for (int64_t k = 0; k < K; ++k) acc = std::fma(A[(i0 + i) * K + k], B[k * N + (j0 + j)], acc);
            out[i * nt + j] = acc;
        }
    }
}

}  // namespace sdc::gemm_f32
