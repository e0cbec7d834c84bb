// gemm_f64 on the fp64 tensor cores: C = A * B in binary64, bit-identical to the specification in gemm_f64.h.
//
// Shapes: A is M x K, B is K x N, both row-major doubles (the screen's word buffers: src/spec/f64.h), as
// the shared fp64 generator fills them; M and N are multiples of 64, K is any length in [1, MAX_K]. The
// output is written in the tile layout the CPU path uses: 64 x 64 tile t = (i / 64) * (N / 64) + j / 64
// holds C[i][j] as the double at out + t * TILE_WORDS words + 2 ((i % 64) * 64 + j % 64) words.
//
// How the work is split: one block per BM x BM block of C, its warps parts of it: BM = 128 (2 x 2 tiles, 8 warps
// of 64 x 32 as 2 rows of 4) where that still gives every SM a block, else BM = 64 (one tile, 4 warps of 32 x 32),
// so that small products spread over the GPU (block_rows; fixed when the case is prepared). At the right and bottom
// edges, when M or N is not a multiple of BM, the missing rows and columns read as zeros, are computed and never
// stored. The warps' parts are numbered row-major over the block (gemm_f64_device.h: warp_rows, WARP_COLUMNS);
// each lies in one tile, whose SM the warp at its corner records. A part is blocks of 8 x 8, each the D of the
// fp64 tensor-core instruction, two accumulators per lane (lane l: row l / 4, columns 2 (l % 4) + {0, 1} of each
// block). K is walked in slabs of BK = 8 (the family's forms): while a slab is multiplied out of one shared-memory
// buffer, the next one is fetched from global memory into registers (a warp's loads 32 consecutive doubles of the
// slab's rows) and then stored into the other buffer, in an order without bank conflicts (a_row); one barrier per
// slab; both buffers in dynamic shared memory. Per 4 k a lane loads one A element of each of its
// warp's row blocks and one B element of each of its column blocks (the ISA's fragment layout: A (g, t),
// B (t, g), g = lane / 4, t = lane % 4; rows padded to BK + 4 and BM + 4 doubles so that no two lanes of a
// half-warp share a bank) and issues a DMMA per 8 x 8 block. The first kernel of this family, one 4-warp block per
// 64 x 64 tile with 32 x 32 parts and slabs of 16, reached 0.325x cuBLAS DGEMM on an H100 at 4096^3; 128 x 128
// blocks halve the L2 traffic per flop, and 64 x 32 parts load 12 fragments from shared memory per 32 DMMAs
// instead of 8 per 16.
//
// Why the bits equal the specification: mma.sync.m8n8k4.f64 computes each D element as one fma chain in
// increasing k from C, rounded at every step: fma(a3, b3, fma(a2, b2, fma(a1, b1, fma(a0, b0, c)))). The ISA
// does not say the order; it was measured on an H100, bit for bit on 524,288 random outputs and on 131,072
// outputs of a GEMM chained as here (docs/gpu-validation/2026-11-26-h100-dmma-order.md), and a GPU that ordered
// otherwise fails this family's goldens. Every output C[i][j] lives in one accumulator register of one lane for
// the whole product, starts at +0 and goes through the DMMAs of k = 0..3, 4..7, ... in order: the chain of the
// specification. The last 1 to 3 k values when K is not a multiple of 4 are plain fma steps on the same
// accumulators, from the shared-memory slab (no zero-padded DMMA step: the sign of a zero result must not
// depend on one). No split-K, no atomic, no reduction across threads.
//
// The other forms (gemm_f64_device.h, kForms): slabs of 16 k; 3 or 4 stages, a ring of slab buffers that
// cp.async fills 2 or 3 slabs ahead of the one being multiplied, straight from global to shared memory (one
// cp.async group per slab, waited for, then one barrier per slab, after which the buffer of the slab before is
// refilled: every thread has finished reading it); and on sm_90 mma.sync.m16n8k8.f64 and .m16n8k16.f64, one
// instruction per 16 x 8 block and 8 or 16 k (the fp64 shapes sm_90 added), on the same accumulators. The sm_90
// instructions' order is not measured yet, so the family never runs them: the benchmark times every form and counts the
// values where each differs from the family's result.
#include <cstdint>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/gemm_f64/gemm_f64.h"
#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/plain_gemm_device.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::gemm_f64::SDC_TARGET {
namespace {

// A block of BM x BM outputs (BM = 64: one tile, 4 warps of 32 x 32; BM = 128: 2 x 2 tiles, 8 warps of 64 x 32), its
// warps' parts WM x WN, each MB x NB blocks of 8 x 8, K in slabs of BK, S slab buffers in dynamic shared memory.
template <int BM, int BK, int S>
struct Geometry {
  static constexpr int bm = BM, bk = BK;
  static constexpr int WM = warp_rows(BM), WN = WARP_COLUMNS, MB = WM / 8, NB = WN / 8;
  static constexpr int WARPS_N = BM / WN, THREADS = (BM / WM) * WARPS_N * 32;
  static_assert(TILE % WM == 0 && TILE % WN == 0 && MB % 2 == 0, "a warp's part lies in one tile");
  static constexpr int A_LD = BK + 4;  // row pitch of the A slab (m-major, k contiguous), in doubles
  static constexpr int B_LD = BM + 4;  // row pitch of the B slab (k-major, n contiguous), in doubles
  static constexpr int A_SLAB = BM * A_LD, B_SLAB = BK * B_LD;  // doubles per buffer
  static constexpr size_t SMEM = S * (A_SLAB + B_SLAB) * sizeof(double);
  // Doubles of A (and of B) a thread fetches per slab (2 stages; fetch), copies (3 or more; copy_slab).
  static constexpr int LOADS = BM * BK / THREADS;
  static_assert(BM * BK % THREADS == 0 && LOADS % 2 == 0, "the slab divides among the threads, in pairs");
  static_assert(THREADS % (2 * BK) == 0 && THREADS % BM == 0 && (THREADS / BK) % 4 == 0,
                "a thread's doubles (pairs) lie in one column of the slab, at whole groups of 4 rows apart (a_row)");
  static_assert(A_LD % 2 == 0 && B_LD % 2 == 0, "pairs of doubles stay 16-byte aligned in the slabs");
  static_assert(BK % 8 == 0, "a slab is whole steps of every instruction but m16n8k16's (BK % 16 there)");
  static_assert(S >= 2, "two slab buffers at least");
};

// A lane's accumulators: [8-row block][8-column block][column 2t + c] of its warp's part.
template <class G>
using Acc = double[G::MB][G::NB][2];

// D = A B + D on the fp64 tensor cores: one warp's 8 x 8 x 4 step (lane l: a = A(l / 4, l % 4),
// b = B(l % 4, l / 4), d = D(l / 4, 2 (l % 4) + {0, 1})).
__device__ __forceinline__ void dmma(double (&d)[2], double a, double b) {
#if defined(SDC_EMU)
  ::sdc::emu::mma_f64(d, a, b);
#else
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(d[0]), "+d"(d[1])
      : "d"(a), "d"(b));
#endif
}

// D = A B + D, one warp's 16 x 8 x K step (sm_90; K = 8 or 16): lane l holds a[i] = A(g + 8 (i % 2), t + 4 (i / 2)),
// b[i] = B(t + 4 i, g), d0 = D(g, 2t + {0, 1}), d1 = D(g + 8, 2t + {0, 1}).
template <int K>
__device__ __forceinline__ void dmma16(double (&d0)[2], double (&d1)[2], const double (&a)[K / 2],
                                       const double (&b)[K / 4]) {
#if defined(SDC_EMU)
  double d[4] = {d0[0], d0[1], d1[0], d1[1]};
  ::sdc::emu::mma_f64_m16n8(K, d, a, b);
  d0[0] = d[0], d0[1] = d[1], d1[0] = d[2], d1[1] = d[3];
#elif __CUDA_ARCH__ >= 900
  if constexpr (K == 8)
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
        "{%12, %13, %14, %15}, {%0, %1, %2, %3};"
        : "+d"(d0[0]), "+d"(d0[1]), "+d"(d1[0]), "+d"(d1[1])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]), "d"(b[1]),
          "d"(b[2]), "d"(b[3]));
#else
  __trap();  // launch_gemm refuses these forms below sm_90
#endif
}

// Where the slabs' doubles go, and which thread moves each: chosen so that no store into a slab meets a bank
// conflict (tests/unit/backends/test_bankcheck.cpp counts them on the emulated device), while the fragment loads
// stay conflict-free too (row pitches A_LD and B_LD). Double e of a slab's copy order (e = tid + l * THREADS: a
// warp moves 32 consecutive ones, whole rows of global memory) is, for A, row e / BK and k e % BK of the slab, for
// B, k e / BM and column e % BM; the cp.async path moves pairs the same way (pair c = tid + p * THREADS, doubles 2c
// and 2c + 1). A half-warp's 8-byte stores (a quarter-warp's 16-byte copies) then cover 16 consecutive doubles of
// the copy order: one row of B, or of A with slabs of 16 (128 bytes: all 32 banks once), or two rows of A with
// slabs of 8. Two consecutive rows of 12 doubles would share 8 banks; so the A rows of copy order i go to slab row
// a_row(i), which takes each 4 rows in the order 0, 2, 1, 3: rows 24 doubles apart, the two halves of the banks.
template <class G>
__device__ __forceinline__ int a_row(int i) {
  if constexpr (G::bk == 8) {
    static_assert(2 * G::A_LD % 16 == 8, "rows two apart lie 64 bytes apart modulo the 128 bytes of the banks");
    return (i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1);
  } else {
    static_assert(G::bk == 16, "a row of 16 doubles is the 32 banks once");
    return i;
  }
}

// Fetches slab k0 .. k0+BK-1 of A (rows m0..m0+BM-1) and B (columns n0..n0+BM-1) into registers (2 stages), double
// tid + l * THREADS of the copy order into ra[l] and rb[l]; a k at or beyond K, a row at or beyond M and a column
// at or beyond N read as 0 (never stored).
template <class G>
__device__ __forceinline__ void fetch(const double* __restrict__ A, const double* __restrict__ B, int m0, int n0,
                                      int k0, int M, int N, int K, double (&ra)[G::LOADS], double (&rb)[G::LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
  const int ar = m0 + a_row<G>(tid / G::bk), ak = k0 + tid % G::bk;  // for l = 0; rows advance by THREADS / BK
  const int bk = k0 + tid / G::bm, bc = n0 + tid % G::bm;            // k advances by THREADS / BM
  const bool a_k = ak < K, b_c = bc < N;
#pragma unroll
  for (int l = 0; l < G::LOADS; ++l) {
    const int r = ar + l * (G::THREADS / G::bk), kb = bk + l * (G::THREADS / G::bm);
    ra[l] = a_k && r < M ? A[static_cast<int64_t>(r) * K + ak] : 0.0;
    rb[l] = b_c && kb < K ? B[static_cast<int64_t>(kb) * N + bc] : 0.0;
  }
}

// Stores what fetch fetched into the slab buffers as, bs.
template <class G>
__device__ __forceinline__ void stash(double* as, double* bs, const double (&ra)[G::LOADS],
                                      const double (&rb)[G::LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
  double* const a = as + a_row<G>(tid / G::bk) * G::A_LD + tid % G::bk;
  double* const b = bs + (tid / G::bm) * G::B_LD + tid % G::bm;
#pragma unroll
  for (int l = 0; l < G::LOADS; ++l) {
    a[l * (G::THREADS / G::bk) * G::A_LD] = ra[l];
    b[l * (G::THREADS / G::bm) * G::B_LD] = rb[l];
  }
}

// Issues the cp.async copies of slab k0 .. k0+BK-1 of A and B into the buffers as, bs (3 or more stages): pairs
// tid + p * THREADS of the copy order, p < LOADS / 2. A double of a row at or beyond M, a k at or beyond K or a
// column at or beyond N is zero-filled, never read. a_pairs, b_pairs: every pair of A (of B) is 16-byte aligned in
// global memory (A is and K is even; B is, N being even), one copy per pair; else two of 8 bytes (whose stores into
// either slab meet 2-way bank conflicts: 16 lanes' first doubles of pairs fill 8 of the 16 bank pairs).
template <class G>
__device__ __forceinline__ void copy_slab(const double* __restrict__ A, const double* __restrict__ B, int m0, int n0,
                                          int k0, int M, int N, int K, bool a_pairs, bool b_pairs, double* as,
                                          double* bs) {
  constexpr int A_PAIRS = G::bk / 2, B_PAIRS = G::bm / 2;  // pairs per row of the A slab, of the B slab
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int p = 0; p < G::LOADS / 2; ++p) {
    const int ar = a_row<G>(tid / A_PAIRS) + p * (G::THREADS / A_PAIRS), ak = 2 * (tid % A_PAIRS);
    const int br = tid / B_PAIRS + p * (G::THREADS / B_PAIRS), bc = 2 * (tid % B_PAIRS);
    const int a_left = m0 + ar < M ? K - (k0 + ak) : 0;  // doubles of the pair that lie in A: min(this, 2)
    const bool b_in = k0 + br < K && n0 + bc < N;        // N is a multiple of 64: both doubles or neither
    const double* a = a_left > 0 ? A + static_cast<int64_t>(m0 + ar) * K + k0 + ak : A;
    const double* b = b_in ? B + static_cast<int64_t>(k0 + br) * N + n0 + bc : B;
    double* ad = as + ar * G::A_LD + ak;
    double* bd = bs + br * G::B_LD + bc;
    if (a_pairs) {  // K even: a_left is even, a pair lies in A or not
      cuda::cp_async<16>(ad, a, a_left > 0 ? 16 : 0);
    } else {
      cuda::cp_async<8>(ad, a, a_left > 0 ? 8 : 0);
      cuda::cp_async<8>(ad + 1, a_left > 1 ? a + 1 : A, a_left > 1 ? 8 : 0);
    }
    if (b_pairs) {
      cuda::cp_async<16>(bd, b, b_in ? 16 : 0);
    } else {
      cuda::cp_async<8>(bd, b, b_in ? 8 : 0);
      cuda::cp_async<8>(bd + 1, b_in ? b + 1 : B, b_in ? 8 : 0);
    }
  }
}

// The warp's MB x NB m8n8k4 DMMAs of the 4 k values kk..kk+3 of the slab. as/bs: the slab; r0, c0: the warp's
// part.
template <class G>
__device__ __forceinline__ void quad(const double* as, const double* bs, int kk, int r0, int c0, int g, int t,
                                     Acc<G>& acc) {
  double a[G::MB], b[G::NB];
#pragma unroll
  for (int i = 0; i < G::MB; ++i) a[i] = as[(r0 + 8 * i + g) * G::A_LD + kk + t];
#pragma unroll
  for (int j = 0; j < G::NB; ++j) b[j] = bs[(kk + t) * G::B_LD + c0 + 8 * j + g];
#pragma unroll
  for (int i = 0; i < G::MB; ++i)
#pragma unroll
    for (int j = 0; j < G::NB; ++j) dmma(acc[i][j], a[i], b[j]);
}

// The warp's MB / 2 x NB m16n8kK DMMAs of the K values kk..kk+K-1 of the slab: its 16-row blocks are the
// accumulator blocks 2i and 2i + 1. B's fragments for the column blocks first, then A's a row block at a time
// (registers: a 64 x 32 part's accumulators take 128 of a thread's 255).
template <class G, int K>
__device__ __forceinline__ void step16(const double* as, const double* bs, int kk, int r0, int c0, int g, int t,
                                       Acc<G>& acc) {
  double b[G::NB][K / 4];
#pragma unroll
  for (int j = 0; j < G::NB; ++j)
#pragma unroll
    for (int v = 0; v < K / 4; ++v) b[j][v] = bs[(kk + t + 4 * v) * G::B_LD + c0 + 8 * j + g];
#pragma unroll
  for (int i = 0; i < G::MB / 2; ++i) {
    double a[K / 2];
#pragma unroll
    for (int v = 0; v < K / 2; ++v) a[v] = as[(r0 + 16 * i + 8 * (v % 2) + g) * G::A_LD + kk + t + 4 * (v / 2)];
#pragma unroll
    for (int j = 0; j < G::NB; ++j) dmma16<K>(acc[2 * i][j], acc[2 * i + 1][j], a, b[j]);
  }
}

// A whole slab of BK k values, in the form's instruction.
template <Dmma I, class G, int BK>
__device__ __forceinline__ void slab(const double* as, const double* bs, int r0, int c0, int g, int t, Acc<G>& acc) {
  if constexpr (I == Dmma::m8n8k4) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 4) quad<G>(as, bs, kk, r0, c0, g, t, acc);
  } else {
    constexpr int K = I == Dmma::m16n8k8 ? 8 : 16;
    static_assert(BK % K == 0, "a slab is whole steps of the instruction");
#pragma unroll
    for (int kk = 0; kk < BK; kk += K) step16<G, K>(as, bs, kk, r0, c0, g, t, acc);
  }
}

// One k value of the slab as plain fma steps on the lane's accumulators (the K tail; multiply below).
template <class G>
__device__ __forceinline__ void fma_step(const double* as, const double* bs, int kk, int r0, int c0, int g, int t,
                                         Acc<G>& acc) {
#pragma unroll
  for (int i = 0; i < G::MB; ++i) {
    const double a = as[(r0 + 8 * i + g) * G::A_LD + kk];
#pragma unroll
    for (int j = 0; j < G::NB; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) acc[i][j][c] = fma(a, bs[kk * G::B_LD + c0 + 8 * j + 2 * t + c], acc[i][j][c]);
  }
}

// The slab of k0 .. k0+BK-1 in buffers as, bs, of which K - k0 are real k values: a whole slab in the form's
// instruction; the last, shorter one as m8n8k4 DMMAs over its whole quads, then 1..3 fma steps.
template <Dmma I, class G, int BK>
__device__ __forceinline__ void multiply(const double* as, const double* bs, int k0, int K, int r0, int c0, int g,
                                         int t, Acc<G>& acc) {
  if (K - k0 >= BK) {
    slab<I, G, BK>(as, bs, r0, c0, g, t, acc);
  } else {
    const int real = K - k0, whole = real / 4 * 4;  // real k values only: DMMAs, then 1..3 fma steps
    for (int kk = 0; kk < whole; kk += 4) quad<G>(as, bs, kk, r0, c0, g, t, acc);
    for (int kk = whole; kk < real; ++kk) fma_step<G>(as, bs, kk, r0, c0, g, t, acc);
  }
}

template <Dmma I, int BM, int BK, int S>
__global__ void __launch_bounds__(Geometry<BM, BK, S>::THREADS)
    gemm_kernel(const double* __restrict__ A, const double* __restrict__ B, float* __restrict__ out,
                uint32_t* __restrict__ tile_sm, int M, int N, int K) {
  using G = Geometry<BM, BK, S>;
  constexpr int TILES = BM / TILE;  // TILES x TILES tiles per block
  // The S buffers: A slabs at a_buf + b * A_SLAB, B slabs at b_buf + b * B_SLAB. Addressed by offsets, not through
  // an array of pointers (indexed by the running buffer, such an array lives in local memory, and every slab access
  // becomes a generic load behind a local one).
  double* const a_buf = cuda::dynamic_shared<double>();
  double* const b_buf = a_buf + S * G::A_SLAB;

  const int blocks_n = (N + BM - 1) / BM;
  const int bm = static_cast<int>(blockIdx.x) / blocks_n, bn = static_cast<int>(blockIdx.x) % blocks_n;
  const int m0 = bm * BM, n0 = bn * BM;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int r0 = G::WM * (warp / G::WARPS_N), c0 = G::WN * (warp % G::WARPS_N);  // the warp's part of the block
  const int g = lane / 4, t = lane % 4;

  Acc<G> acc;
#pragma unroll
  for (int i = 0; i < G::MB; ++i)
#pragma unroll
    for (int j = 0; j < G::NB; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;  // +0: the specification's start value

  if constexpr (S == 2) {
    double ra[G::LOADS], rb[G::LOADS];
    fetch<G>(A, B, m0, n0, 0, M, N, K, ra, rb);
    stash<G>(a_buf, b_buf, ra, rb);
    __syncthreads();

    int cur = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
      const bool more = k0 + BK < K;
      if (more) fetch<G>(A, B, m0, n0, k0 + BK, M, N, K, ra, rb);  // latency hidden behind this slab's arithmetic
      multiply<I, G, BK>(a_buf + cur * G::A_SLAB, b_buf + cur * G::B_SLAB, k0, K, r0, c0, g, t, acc);
      if (more) {
        // The other buffer was last read before the previous barrier: one barrier per slab suffices.
        cur ^= 1;
        stash<G>(a_buf + cur * G::A_SLAB, b_buf + cur * G::B_SLAB, ra, rb);
        __syncthreads();
      }
    }
  } else {
    // A ring of S buffers: slab i in buffer i % S, its copies one cp.async group, issued S - 1 slabs ahead. Group
    // i is slab i's (empty past the last slab), so when slab i is due S - 2 younger groups may still be in flight.
    const bool a_pairs = K % 2 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0,
               b_pairs = reinterpret_cast<uintptr_t>(B) % 16 == 0;
#pragma unroll
    for (int i = 0; i < S - 1; ++i) {
      if (i * BK < K)
        copy_slab<G>(A, B, m0, n0, i * BK, M, N, K, a_pairs, b_pairs, a_buf + i * G::A_SLAB, b_buf + i * G::B_SLAB);
      cuda::cp_async_commit();
    }
    int rd = 0, wr = S - 1;  // the buffers of this slab and of the one S - 1 ahead
    for (int k0 = 0; k0 < K; k0 += BK) {
      cuda::cp_async_wait<S - 2>();  // this thread's copies of this slab have landed
      // Everyone's have, and everyone is done with buffer wr, which held the slab before this one.
      __syncthreads();
      const int ahead = k0 + (S - 1) * BK;
      if (ahead < K)
        copy_slab<G>(A, B, m0, n0, ahead, M, N, K, a_pairs, b_pairs, a_buf + wr * G::A_SLAB, b_buf + wr * G::B_SLAB);
      cuda::cp_async_commit();
      multiply<I, G, BK>(a_buf + rd * G::A_SLAB, b_buf + rd * G::B_SLAB, k0, K, r0, c0, g, t, acc);
      rd = rd + 1 == S ? 0 : rd + 1;
      wr = wr + 1 == S ? 0 : wr + 1;
    }
  }

  const int tiles_n = N / TILE;
  const int ti = TILES * bm + r0 / TILE, tj = TILES * bn + c0 / TILE;  // the warp's tile
  if (ti >= M / TILE || tj >= tiles_n) return;                         // beyond an edge
  const int64_t t_id = static_cast<int64_t>(ti) * tiles_n + tj;
  const int rt = r0 % TILE, ct = c0 % TILE;  // the warp's part in the tile
  double* tile = reinterpret_cast<double*>(out + t_id * TILE_WORDS);
#pragma unroll
  for (int i = 0; i < G::MB; ++i)
#pragma unroll
    for (int j = 0; j < G::NB; ++j)
      *reinterpret_cast<double2*>(tile + (rt + 8 * i + g) * TILE + ct + 8 * j + 2 * t) =
          make_double2(acc[i][j][0], acc[i][j][1]);
  if (rt == 0 && ct == 0 && lane == 0) tile_sm[t_id] = cuda::sm_id();  // the warp at the tile's corner
}

// Calls fn(std::integral_constant<size_t, N>{}) for the form kForms[N] equal to f; false (fn not called) for none.
template <size_t N = 0, class Fn>
bool with_form(const Form& f, Fn&& fn) {
  if constexpr (N == std::size(kForms)) {
    return false;
  } else {
    if (!(f == kForms[N])) return with_form<N + 1>(f, fn);
    fn(std::integral_constant<size_t, N>{});
    return true;
  }
}

}  // namespace

int block_rows(int64_t m, int64_t n, int sms) { return ((m + 127) / 128) * ((n + 127) / 128) >= sms ? 128 : 64; }

Form family_form(int64_t m, int64_t n) { return {Dmma::m8n8k4, block_rows(m, n, cuda::sm_count()), 8, 2}; }

std::string form_name(const Form& f) {
  return std::string(instr_name(f.instr)) + "/" + std::to_string(f.bm) + "/k" + std::to_string(f.bk) + "/s" +
         std::to_string(f.stages);
}

std::string unavailable(const Form& f) {
  std::string why;
  const bool known = with_form(f, [&](auto n) {
    constexpr Form g = kForms[decltype(n)::value];
    using G = Geometry<g.bm, g.bk, g.stages>;
    if constexpr (g.instr != Dmma::m8n8k4) {
      // The sm_90 instructions exist only in code compiled for sm_90 or later: the device's own compute capability
      // is not enough (a GPU that runs PTX of an older target would reach the kernel's __trap).
      cudaFuncAttributes attr{};
      if (cudaFuncGetAttributes(&attr, gemm_kernel<g.instr, g.bm, g.bk, g.stages>) != cudaSuccess ||
          attr.ptxVersion < 90) {
        why = "needs code for sm_90";
        return;
      }
    }
    if constexpr (G::SMEM > 48 * 1024) {  // more than every GPU grants without asking
      if (const size_t granted = cuda::max_dynamic_shared(); G::SMEM > granted)
        why = "needs " + std::to_string(G::SMEM) + " bytes of shared memory per block, the device grants " +
              std::to_string(granted);
    }
  });
  return known ? why : "not a form gemm_f64's kernel is compiled in";
}

bool launch_gemm(const Form& f, const double* a, const double* b, float* out, uint32_t* tile_sm, int64_t m, int64_t n,
                 int64_t k, cudaStream_t s) {
  if (!unavailable(f).empty()) return false;
  return with_form(f, [&](auto i) {
    constexpr Form g = kForms[decltype(i)::value];
    using G = Geometry<g.bm, g.bk, g.stages>;
    const auto blocks = static_cast<unsigned>(((m + g.bm - 1) / g.bm) * ((n + g.bm - 1) / g.bm));
    cuda::launch_shared("gemm_f64 gemm_kernel", gemm_kernel<g.instr, g.bm, g.bk, g.stages>, blocks, G::THREADS, G::SMEM,
                        s, a, b, out, tile_sm, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
  });
}

namespace {

class GemmDevice final : public cuda::SDC_TARGET::PlainGemmDevice<double> {
 public:
  // Prepared on the GPU that computes it (DeviceProblem::engine): its SM count fixes the block (family_form).
  explicit GemmDevice(const Case& c)
      : PlainGemmDevice(c, "dmma m8n8k4 fp64 tensor cores, one k-chain per output in k order (exact)"),
        form_(family_form(m_, n_)) {}

  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern_f64(dst, elements(tensor), dist_, input_window(t, dist_), tensor_key(seed_, t),
                                           s);
  }

  // gemm_kernel's store: tile (ti, tj) is the part (ti % b, tj % b) of its block of b x b tiles (b = bm / 64), whose
  // warps are parts of warp_rows(bm) x WARP_COLUMNS numbered row-major over the block; within a part, the 8 x 8
  // DMMA blocks' element (i, j) lane 4 i + j / 2 holds; two words per value.
  bool thread_of(uint64_t tile, uint32_t offset, int& warp, int& lane) const override {
    const int bm = form_.bm;
    const auto tiles_n = static_cast<uint64_t>(n_ / TILE), b = static_cast<uint64_t>(bm / TILE);
    const int v = static_cast<int>(offset / 2), r = v / TILE, c = v % TILE;
    const int row = static_cast<int>(tile / tiles_n % b) * TILE + r,
              col = static_cast<int>(tile % tiles_n % b) * TILE + c;
    warp = row / warp_rows(bm) * (bm / WARP_COLUMNS) + col / WARP_COLUMNS;
    lane = (r % 8) * 4 + (c % 8) / 2;
    return true;
  }

  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    // The family's forms run on every GPU of sm_80 and later; were one refused, nothing would be computed, and the
    // case must fail rather than compare whatever the output buffer holds.
    if (!launch_gemm(form_, static_cast<const double*>(in[0]), static_cast<const double*>(in[1]), out, tile_sm, m_, n_,
                     k_, s))
      throw std::runtime_error("gemm_f64: the device cannot run form " + form_name(form_) + ": " + unavailable(form_));
  }

 private:
  Form form_;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<GemmDevice>(c); }

}  // namespace sdc::gemm_f64::SDC_TARGET
