// gemm_f64 on the fp64 tensor cores: C = A * B in binary64, bit-identical to the specification in gemm_f64.h.
//
// Shapes: A is M x K, B is K x N, both row-major doubles (the screen's word buffers: src/spec/f64.h), as
// the shared fp64 generator fills them; M and N are multiples of 64, K is any length in [1, MAX_K]. The
// output is written in the tile layout the CPU path uses: 64 x 64 tile t = (i / 64) * (N / 64) + j / 64
// holds C[i][j] as the double at out + t * TILE_WORDS words + 2 ((i % 64) * 64 + j % 64) words.
//
// How the work is split: one block of 4 warps per 64 x 64 tile of C, warp w owning the 32 x 32 quarter at rows
// 32 (w / 2), columns 32 (w % 2): 4 x 4 blocks of 8 x 8, each the D of mma.sync.m8n8k4.f64 (DMMA), two
// accumulators per lane (lane l: row l / 4, columns 2 (l % 4) + {0, 1} of each block). K is walked in slabs of
// BK = 16: while a slab is multiplied out of one shared-memory buffer, the next one is fetched from global memory
// into registers (coalesced: half a row of the A slab, an eighth of a row of the B slab per thread) and then
// stored into the other buffer; one barrier per slab. Each 4-k step loads, per lane, one A element of each of
// the warp's 4 row blocks and one B element of each of its 4 column blocks (the ISA's fragment layout: A (g, t),
// B (t, g), g = lane / 4, t = lane % 4; rows padded to 20 and 68 doubles so that no two lanes of a half-warp
// share a bank) and issues the 16 DMMAs. Thread 0 records the SM.
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
#include <memory>

#include "kernels/gemm_f64/gemm_f64.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/plain_gemm_device.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::gemm_f64::SDC_TARGET {
namespace {

constexpr int BK = 16;                      // k per shared-memory slab
constexpr int THREADS = 128;                // 4 warps, 2 x 2 over the tile
constexpr int A_LD = BK + 4;                // row pitch of the A slab (m-major, k contiguous), in doubles
constexpr int B_LD = TILE + 4;              // row pitch of the B slab (k-major, n contiguous), in doubles
constexpr int LOADS = TILE * BK / THREADS;  // doubles of A (and of B) each thread fetches per slab
static_assert(LOADS == 8 && TILE == 64, "a thread fetches half an A row and an eighth of a B row of the slab");

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

// Fetches slab k0 .. k0+BK-1 of A (rows m0..m0+63) and B (columns n0..n0+63) into registers; k at or beyond K
// reads as 0 (never used).
__device__ __forceinline__ void fetch(const double* __restrict__ A, const double* __restrict__ B, int m0, int n0,
                                      int k0, int K, int N, double (&ra)[LOADS], double (&rb)[LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
  const int ar = tid / 2, ak = k0 + (tid % 2) * LOADS;       // A: half of one row's 16 k
  const int bk = k0 + tid / 8, bc = n0 + (tid % 8) * LOADS;  // B: an eighth of one k row's 64 columns
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    ra[l] = ak + l < K ? A[static_cast<int64_t>(m0 + ar) * K + ak + l] : 0.0;
    rb[l] = bk < K ? B[static_cast<int64_t>(bk) * N + bc + l] : 0.0;
  }
}

__device__ __forceinline__ void stash(double* as, double* bs, const double (&ra)[LOADS], const double (&rb)[LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    as[(tid / 2) * A_LD + (tid % 2) * LOADS + l] = ra[l];
    bs[(tid / 8) * B_LD + (tid % 8) * LOADS + l] = rb[l];
  }
}

// The warp's 16 DMMAs of the 4 k values kk..kk+3 of the slab. as/bs: the slab; r0, c0: the warp's quarter.
__device__ __forceinline__ void dmma_step(const double* as, const double* bs, int kk, int r0, int c0, int g, int t,
                                          double (&acc)[4][4][2]) {
  double a[4], b[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = as[(r0 + 8 * i + g) * A_LD + kk + t];
#pragma unroll
  for (int j = 0; j < 4; ++j) b[j] = bs[(kk + t) * B_LD + c0 + 8 * j + g];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) dmma(acc[i][j], a[i], b[j]);
}

// One k value of the slab as plain fma steps on the lane's accumulators (the K tail).
__device__ __forceinline__ void fma_step(const double* as, const double* bs, int kk, int r0, int c0, int g, int t,
                                         double (&acc)[4][4][2]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const double a = as[(r0 + 8 * i + g) * A_LD + kk];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) acc[i][j][c] = fma(a, bs[kk * B_LD + c0 + 8 * j + 2 * t + c], acc[i][j][c]);
  }
}

__global__ void __launch_bounds__(THREADS)
    gemm_kernel(const double* __restrict__ A, const double* __restrict__ B, float* __restrict__ out,
                uint32_t* __restrict__ tile_sm, int N, int K) {
  __shared__ __align__(16) double as[2][TILE * A_LD];
  __shared__ __align__(16) double bs[2][BK * B_LD];

  const int tiles_n = N / TILE;
  const int t_id = static_cast<int>(blockIdx.x);
  const int m0 = (t_id / tiles_n) * TILE, n0 = (t_id % tiles_n) * TILE;
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int r0 = 32 * (warp / 2), c0 = 32 * (warp % 2);  // the warp's quarter of the tile
  const int g = lane / 4, t = lane % 4;

  double acc[4][4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j][0] = acc[i][j][1] = 0.0;  // +0: the specification's start value

  double ra[LOADS], rb[LOADS];
  fetch(A, B, m0, n0, 0, K, N, ra, rb);
  stash(as[0], bs[0], ra, rb);
  __syncthreads();

  int cur = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool more = k0 + BK < K;
    if (more) fetch(A, B, m0, n0, k0 + BK, K, N, ra, rb);  // latency hidden behind this slab's arithmetic
    if (K - k0 >= BK) {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 4) dmma_step(as[cur], bs[cur], kk, r0, c0, g, t, acc);
    } else {
      const int real = K - k0, whole = real / 4 * 4;  // real k values only: DMMAs, then 1..3 fma steps
      for (int kk = 0; kk < whole; kk += 4) dmma_step(as[cur], bs[cur], kk, r0, c0, g, t, acc);
      for (int kk = whole; kk < real; ++kk) fma_step(as[cur], bs[cur], kk, r0, c0, g, t, acc);
    }
    if (more) {
      // The other buffer was last read before the previous barrier: one barrier per slab suffices.
      stash(as[cur ^ 1], bs[cur ^ 1], ra, rb);
      __syncthreads();
      cur ^= 1;
    }
  }

  double* tile = reinterpret_cast<double*>(out + static_cast<int64_t>(t_id) * TILE_WORDS);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<double2*>(tile + (r0 + 8 * i + g) * TILE + c0 + 8 * j + 2 * t) =
          make_double2(acc[i][j][0], acc[i][j][1]);
  if (tid == 0) tile_sm[t_id] = cuda::sm_id();
}

class GemmDevice final : public cuda::SDC_TARGET::PlainGemmDevice<double> {
 public:
  explicit GemmDevice(const Case& c)
      : PlainGemmDevice(c, "dmma m8n8k4 fp64 tensor cores, one k-chain per output in k order (exact)") {}

  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern_f64(dst, elements(tensor), dist_, input_window(t, dist_), tensor_key(seed_, t),
                                           s);
  }

  // gemm_kernel's store: warp w holds the 32 x 32 quarter at rows 32 (w / 2), columns 32 (w % 2), as 8 x 8
  // DMMA blocks whose element (i, j) lane 4 i + j / 2 holds; two words per value.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const int v = static_cast<int>(offset / 2), r = v / TILE, c = v % TILE;
    warp = (r / 32) * 2 + c / 32;
    lane = (r % 8) * 4 + (c % 8) / 2;
    return true;
  }

  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    const unsigned blocks = static_cast<unsigned>((m_ / TILE) * (n_ / TILE));
    cuda::launch("gemm_f64 gemm_kernel", gemm_kernel, blocks, THREADS, s, static_cast<const double*>(in[0]),
                 static_cast<const double*>(in[1]), out, tile_sm, static_cast<int>(n_), static_cast<int>(k_));
  }
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<GemmDevice>(c); }

}  // namespace sdc::gemm_f64::SDC_TARGET
