// gemm_f64 on the fp64 units: C = A * B in binary64, bit-identical to the specification in gemm_f64.h.
//
// Shapes: A is M x K, B is K x N, both row-major doubles (the screen's word buffers: src/spec/f64.h), as
// the shared fp64 generator fills them; M and N are multiples of 64, K is any length in [1, MAX_K]. The
// output is written in the tile layout the CPU path uses: 64 x 64 tile t = (i / 64) * (N / 64) + j / 64
// holds C[i][j] as the double at out + t * TILE_WORDS words + 2 ((i % 64) * 64 + j % 64) words.
//
// How the work is split: a register-tiled SIMT DGEMM, one 256-thread block per 64 x 64 tile of C. Thread
// (ty, tx) = (tid / 16, tid % 16) owns the 4 x 4 outputs of rows ty + 16 r (r = 0..3) and columns
// 2 tx + 32 c + {0, 1} (c = 0, 1): its A fragment reads broadcast within a half-warp, its B fragment reads
// are double2 loads that 16 lanes take from 256 consecutive bytes. K is walked in slabs of BK = 16: while
// a slab is multiplied out of one shared-memory buffer, the next one is fetched from global memory into
// registers (coalesced: each A row's 16 doubles, each B row's 64) and then stored into the other buffer
// (A transposed, so a column of A is contiguous); one barrier per slab. Thread 0 records the SM.
//
// Why the bits equal the specification: every output C[i][j] lives in one register of one thread for the
// whole product. It starts at +0 and receives fma(A[i][k], B[k][j], acc) for k = 0, 1, ..., K-1: slabs are
// processed in increasing k and kk runs upwards within a slab; each fma depends on the previous value of
// acc, and with --fmad=false the compiler creates or splits no other fused operation. There is no split-K,
// no atomic and no reduction across threads. The last slab, when K is not a multiple of BK, runs only its
// real k values (a zero-padded step would turn a -0 result into +0); the zeros loaded beyond K never enter
// an accumulator.
#include <memory>

#include "kernels/gemm_f64/gemm_f64.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/plain_gemm_device.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::gemm_f64::SDC_TARGET {
namespace {

constexpr int BK = 16;                      // k per shared-memory slab
constexpr int THREADS = 256;                // 16 x 16 threads, 4 x 4 outputs each
constexpr int LOADS = TILE * BK / THREADS;  // doubles of A (and of B) each thread fetches per slab
static_assert(LOADS * THREADS == TILE * BK, "load cover");

// Fetches slab k0 .. k0+BK-1 of A (rows m0..m0+63) and B (columns n0..n0+63) into registers; k at or
// beyond K reads as 0 (never used: see the header).
__device__ __forceinline__ void fetch(const double* __restrict__ A, const double* __restrict__ B, int m0, int n0,
                                      int k0, int K, int N, double (&ra)[LOADS], double (&rb)[LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = tid + l * THREADS;
    const int ar = idx / BK, ak = k0 + idx % BK;  // A: 16 consecutive k of one row per 16 threads
    ra[l] = ak < K ? A[static_cast<int64_t>(m0 + ar) * K + ak] : 0.0;
    const int bk = k0 + idx / TILE, bc = n0 + idx % TILE;  // B: one row's 64 columns per 64 threads
    rb[l] = bk < K ? B[static_cast<int64_t>(bk) * N + bc] : 0.0;
  }
}

__device__ __forceinline__ void stash(double (*as)[TILE + 2], double (*bs)[TILE], const double (&ra)[LOADS],
                                      const double (&rb)[LOADS]) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int l = 0; l < LOADS; ++l) {
    const int idx = tid + l * THREADS;
    as[idx % BK][idx / BK] = ra[l];
    bs[idx / TILE][idx % TILE] = rb[l];
  }
}

// One k step of the thread's 4 x 4 outputs: 16 fused multiply-adds, each continuing its own chain.
__device__ __forceinline__ void fma_step(const double (*as)[TILE + 2], const double (*bs)[TILE], int kk, int ty, int tx,
                                         double (&acc)[4][4]) {
  double a[4], b[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) a[r] = as[kk][ty + 16 * r];
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const double2 v = *reinterpret_cast<const double2*>(&bs[kk][2 * tx + 32 * c]);
    b[2 * c] = v.x;
    b[2 * c + 1] = v.y;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = fma(a[r], b[c], acc[r][c]);
}

__global__ void __launch_bounds__(THREADS)
    gemm_kernel(const double* __restrict__ A, const double* __restrict__ B, float* __restrict__ out,
                uint32_t* __restrict__ tile_sm, int N, int K) {
  __shared__ __align__(16) double as[2][BK][TILE + 2];
  __shared__ __align__(16) double bs[2][BK][TILE];

  const int tiles_n = N / TILE;
  const int t = static_cast<int>(blockIdx.x);
  const int m0 = (t / tiles_n) * TILE, n0 = (t % tiles_n) * TILE;
  const int tid = static_cast<int>(threadIdx.x);
  const int ty = tid / 16, tx = tid % 16;

  double acc[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[r][c] = 0.0;  // +0: the specification's start value

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
      for (int kk = 0; kk < BK; ++kk) fma_step(as[cur], bs[cur], kk, ty, tx, acc);
    } else {
      for (int kk = 0; kk < K - k0; ++kk) fma_step(as[cur], bs[cur], kk, ty, tx, acc);  // real k values only
    }
    if (more) {
      // The other buffer was last read before the previous barrier: one barrier per slab suffices.
      stash(as[cur ^ 1], bs[cur ^ 1], ra, rb);
      __syncthreads();
      cur ^= 1;
    }
  }

  double* tile = reinterpret_cast<double*>(out + static_cast<int64_t>(t) * TILE_WORDS);
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      *reinterpret_cast<double2*>(tile + (ty + 16 * r) * TILE + 2 * tx + 32 * c) =
          make_double2(acc[r][2 * c], acc[r][2 * c + 1]);
  if (tid == 0) tile_sm[t] = cuda::sm_id();
}

class GemmDevice final : public cuda::SDC_TARGET::PlainGemmDevice<double> {
 public:
  explicit GemmDevice(const Case& c) : PlainGemmDevice(c, "simt fp64, one k-chain per output in k order (exact)") {}

  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern_f64(dst, elements(tensor), dist_, input_window(t, dist_), tensor_key(seed_, t),
                                           s);
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
