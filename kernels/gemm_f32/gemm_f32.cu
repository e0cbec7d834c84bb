// gemm_f32 on CUDA cores: C = A * B in binary32, bit-identical to the specification in gemm_f32.h.
//
// Shapes: A is M x K, B is K x N, both row-major, as the shared generator fills them; M and N are
// multiples of 64 (the tile size), K is any length in [1, MAX_K]. The output is written in the tile
// layout the CPU path uses: 64 x 64 tile t = (i / 64) * (N / 64) + j / 64 holds C[i][j] at
// out[t * 4096 + (i % 64) * 64 + j % 64], so the generic digest pass and the host compare tiles alike.
//
// How the work is split: a register-tiled SIMT SGEMM. A thread block computes a BM x BN block of C
// (128x128 with 256 threads where the shape and the GPU's size favour it, else 128x64, 64x128 or 64x64;
// every variant has one thread per 8 x 8 outputs). Each warp owns a 64 x 32 sub-block; each lane owns
// two 4-row groups 32 rows apart times two 4-column groups 16 columns apart, so its fragment reads from
// shared memory are float4 loads that a warp serves without bank conflicts. K is walked in slabs of BK:
// while a slab is multiplied out of one shared-memory buffer, the next slab is fetched from global
// memory into registers (float4 loads) and then stored into the other buffer (A transposed, so a
// column of A is contiguous); one barrier per slab. Within a slab the fragments of step kk + 1 are read
// while step kk's fmas run. The register budget is 128 per thread (two 256-thread blocks per SM): the
// guarded loads of a partial slab are peeled out of the main loop because the loop only fits that
// budget without them (ptxas -v reports no spills for sm_90). Blocks are visited in groups of GROUP_M
// block rows so that neighbouring blocks share A and B panels in L2. One thread of each block records
// the SM of every 64 x 64 tile the block covers.
//
// Why the bits equal the specification: every output element C[i][j] lives in one register of one
// thread for the whole product. It starts at +0 and receives fmaf(A[i][k], B[k][j], acc) for k = 0, 1,
// ..., K-1: slabs are processed in increasing k, and within a slab kk runs upwards; each fmaf depends on
// the previous value of acc, so neither the compiler nor the hardware can reorder the chain, and with
// --fmad=false the compiler creates or splits no other fused operation. There is no split-K, no atomic
// and no reduction across threads. The last slab, when K is not a multiple of BK, runs only its real k
// values: padding the chain with zero products would not be harmless (fmaf(0, 0, -0) = +0 flips the
// sign of a -0 result). Loaded-but-unused zeros beyond K never enter an accumulator. Which variant runs
// changes only which thread holds an element, never its chain, so the choice cannot change any bit.
#include <memory>

#include "kernels/gemm_f32/gemm_f32.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/plain_gemm_device.h"
#include "src/core/family.h"
#include "src/core/shape.h"

namespace sdc::gemm_f32::SDC_TARGET {
namespace {

constexpr int BK = 8;       // k per shared-memory slab (a template parameter below, for tuning)
constexpr int WARP_M = 64;  // rows of C per warp
constexpr int WARP_N = 32;  // columns of C per warp
constexpr int GROUP_M = 8;  // block rows per L2 group (block swizzle)

template <int BM, int BN, int SLAB>
struct Geometry {
  static constexpr int THREADS = BM * BN / 64;  // 8 x 8 outputs per thread
  static constexpr int WARPS_N = BN / WARP_N;
  static constexpr int A_VECS = SLAB / 4;                  // float4s per row of an A slab
  static constexpr int A_LOADS = BM * SLAB / 4 / THREADS;  // float4s of A each thread fetches per slab
  static constexpr int A_ROW_STEP = THREADS / A_VECS;      // rows between a thread's A loads
  static constexpr int B_VECS = BN / 4;                    // float4s per row of a B slab
  static constexpr int B_LOADS = SLAB * BN / 4 / THREADS;
  static constexpr int B_ROW_STEP = THREADS / B_VECS;
  // 128 registers per thread at most: two 256-thread blocks (or the equivalent) per SM.
  static constexpr int MIN_BLOCKS = 512 / THREADS;
  static_assert(BM % WARP_M == 0 && BN % WARP_N == 0, "whole warps");
  static_assert(SLAB % 4 == 0 && A_LOADS * A_ROW_STEP == BM && B_LOADS * B_ROW_STEP == SLAB, "load cover");
};

// The register fragments of one k step: 8 values of A's column k (two float4 reads of the transposed
// slab) and 8 of B's row k (two float4 reads), for the thread's two row groups and two column groups.
struct Frag {
  float4 a0, a1, b0, b1;
};

template <int BM, int BN>
__device__ __forceinline__ void load_frag(Frag& f, const float (*as)[BM + 4], const float (*bs)[BN], int kk, int a_col,
                                          int b_col) {
  f.a0 = *reinterpret_cast<const float4*>(&as[kk][a_col]);
  f.a1 = *reinterpret_cast<const float4*>(&as[kk][a_col + 32]);
  f.b0 = *reinterpret_cast<const float4*>(&bs[kk][b_col]);
  f.b1 = *reinterpret_cast<const float4*>(&bs[kk][b_col + 16]);
}

// One k step of the 8 x 8 register tile: 64 fused multiply-adds, each continuing its own output's chain.
__device__ __forceinline__ void fma_step(const Frag& f, float (&acc)[8][8]) {
  const float a[8] = {f.a0.x, f.a0.y, f.a0.z, f.a0.w, f.a1.x, f.a1.y, f.a1.z, f.a1.w};
  const float b[8] = {f.b0.x, f.b0.y, f.b0.z, f.b0.w, f.b1.x, f.b1.y, f.b1.z, f.b1.w};
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Fetches one slab (k0 .. k0+SLAB-1) of A and B into registers. GUARD: the slab reaches past K; the
// missing k are filled with zeros that the compute loop never reads. VEC_A: K % 4 == 0, so rows of A
// are 16-byte aligned and a float4 of A is either wholly below K or wholly beyond it.
template <int BM, int BN, int SLAB, bool VEC_A, bool GUARD>
__device__ __forceinline__ void fetch(const float* __restrict__ A, const float* __restrict__ B, int a_off, int b_off,
                                      int a_k, int b_k, int K, int N, float4 (&ra)[Geometry<BM, BN, SLAB>::A_LOADS],
                                      float4 (&rb)[Geometry<BM, BN, SLAB>::B_LOADS]) {
  using G = Geometry<BM, BN, SLAB>;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int l = 0; l < G::A_LOADS; ++l) {
    const float* p = A + (a_off + l * G::A_ROW_STEP * K);
    if constexpr (VEC_A) {
      ra[l] = (!GUARD || a_k < K) ? *reinterpret_cast<const float4*>(p) : zero;
    } else {
      ra[l].x = (!GUARD || a_k + 0 < K) ? p[0] : 0.0f;
      ra[l].y = (!GUARD || a_k + 1 < K) ? p[1] : 0.0f;
      ra[l].z = (!GUARD || a_k + 2 < K) ? p[2] : 0.0f;
      ra[l].w = (!GUARD || a_k + 3 < K) ? p[3] : 0.0f;
    }
  }
#pragma unroll
  for (int l = 0; l < G::B_LOADS; ++l) {
    const float* p = B + (b_off + l * G::B_ROW_STEP * N);
    rb[l] = (!GUARD || b_k + l * G::B_ROW_STEP < K) ? *reinterpret_cast<const float4*>(p) : zero;
  }
}

template <int BM, int BN, int SLAB>
__device__ __forceinline__ void stash(float (*as)[BM + 4], float (*bs)[BN], int a_row, int a_k, int b_row, int b_col,
                                      const float4 (&ra)[Geometry<BM, BN, SLAB>::A_LOADS],
                                      const float4 (&rb)[Geometry<BM, BN, SLAB>::B_LOADS]) {
  using G = Geometry<BM, BN, SLAB>;
#pragma unroll
  for (int l = 0; l < G::A_LOADS; ++l) {
    const int r = a_row + l * G::A_ROW_STEP;
    as[a_k + 0][r] = ra[l].x;
    as[a_k + 1][r] = ra[l].y;
    as[a_k + 2][r] = ra[l].z;
    as[a_k + 3][r] = ra[l].w;
  }
#pragma unroll
  for (int l = 0; l < G::B_LOADS; ++l) *reinterpret_cast<float4*>(&bs[b_row + l * G::B_ROW_STEP][b_col]) = rb[l];
}

// The arithmetic of one full slab from buffer `cur`, software-pipelined: the fragments of step kk + 1
// are read from shared memory while step kk's fmas run. NEXT: the following slab's values, already
// fetched into ra/rb, go to the other buffer (which was last read before the previous barrier, so one
// barrier per slab suffices) and step 0 of that slab is read ahead. The order of the fmas on each
// accumulator is untouched: kk upwards within a slab, slab after slab.
template <int BM, int BN, int SLAB, bool NEXT>
__device__ __forceinline__ void slab(float (*as)[SLAB][BM + 4], float (*bs)[SLAB][BN], int& cur, Frag (&frag)[2],
                                     float (&acc)[8][8], int a_row, int a_k, int b_row, int b_col, int a_col,
                                     int b_col_c, const float4 (&ra)[Geometry<BM, BN, SLAB>::A_LOADS],
                                     const float4 (&rb)[Geometry<BM, BN, SLAB>::B_LOADS]) {
  static_assert(SLAB % 2 == 0, "step 0 of a slab is always read into frag[0]");
#pragma unroll
  for (int kk = 0; kk < SLAB - 1; ++kk) {
    load_frag<BM, BN>(frag[(kk + 1) % 2], as[cur], bs[cur], kk + 1, a_col, b_col_c);
    fma_step(frag[kk % 2], acc);
  }
  if constexpr (NEXT) {
    stash<BM, BN, SLAB>(as[cur ^ 1], bs[cur ^ 1], a_row, a_k, b_row, b_col, ra, rb);
    __syncthreads();
    cur ^= 1;
    load_frag<BM, BN>(frag[0], as[cur], bs[cur], 0, a_col, b_col_c);
  }
  fma_step(frag[(SLAB - 1) % 2], acc);
}

template <int BM, int BN, int SLAB, bool VEC_A>
__global__ void __launch_bounds__(Geometry<BM, BN, SLAB>::THREADS, Geometry<BM, BN, SLAB>::MIN_BLOCKS)
    gemm_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ out,
                uint32_t* __restrict__ tile_sm, int M, int N, int K) {
  using G = Geometry<BM, BN, SLAB>;
  __shared__ __align__(16) float as[2][SLAB][BM + 4];
  __shared__ __align__(16) float bs[2][SLAB][BN];

  // Block swizzle: consecutive blocks walk down GROUP_M block rows before moving one block column.
  const int gm = M / BM, gn = N / BN;
  const int per_group = GROUP_M * gn;
  const int group = static_cast<int>(blockIdx.x) / per_group;
  const int first_m = group * GROUP_M;
  const int group_m = min(gm - first_m, GROUP_M);
  const int in_group = static_cast<int>(blockIdx.x) % per_group;
  const int m0 = (first_m + in_group % group_m) * BM;
  const int n0 = (in_group / group_m) * BN;

  const int tid = static_cast<int>(threadIdx.x);
  // Global fetch coordinates: A slab rows tid / A_VECS (+ l * A_ROW_STEP), k offset (tid % A_VECS) * 4;
  // B slab rows tid / B_VECS (+ l * B_ROW_STEP), columns (tid % B_VECS) * 4.
  const int a_row = tid / G::A_VECS, a_k = (tid % G::A_VECS) * 4;
  const int b_row = tid / G::B_VECS, b_col = (tid % G::B_VECS) * 4;
  // 32-bit element offsets (M * K and K * N stay below 2^31 within the family's shape limits) keep
  // fewer registers live than 64-bit pointers; registers are what bounds this kernel's occupancy.
  int a_off = (m0 + a_row) * K + a_k;
  int b_off = b_row * N + n0 + b_col;

  // Compute coordinates: warp (wm, wn) of the block, lane (lr, lc) of the warp.
  const int warp = tid / 32, lane = tid % 32;
  const int wm = (warp / G::WARPS_N) * WARP_M, wn = (warp % G::WARPS_N) * WARP_N;
  const int lr = lane / 4, lc = lane % 4;
  const int a_col = wm + lr * 4, b_col_c = wn + lc * 4;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;  // +0: the specification's start value

  float4 ra[G::A_LOADS], rb[G::B_LOADS];
  const int full = K / SLAB;  // slabs of SLAB real k values; then K % SLAB more in a partial slab
  if (full > 0)
    fetch<BM, BN, SLAB, VEC_A, false>(A, B, a_off, b_off, a_k, b_row, K, N, ra, rb);
  else
    fetch<BM, BN, SLAB, VEC_A, true>(A, B, a_off, b_off, a_k, b_row, K, N, ra, rb);
  stash<BM, BN, SLAB>(as[0], bs[0], a_row, a_k, b_row, b_col, ra, rb);
  __syncthreads();

  // Full slabs. Software pipeline: the next slab's global loads are issued before this slab's
  // arithmetic (their latency hides behind it), and the fragments of step kk + 1 are read from shared
  // memory while step kk's fmas run. One barrier per slab suffices: the buffer being filled was last
  // read before the previous barrier. The order of the fmas on each accumulator is untouched: kk
  // upwards within a slab, slab after slab.
  int cur = 0;
  Frag frag[2];
  if (full > 0) load_frag<BM, BN>(frag[0], as[0], bs[0], 0, a_col, b_col_c);
  // Every full slab but the last has a full successor: no guards, no branches in this loop.
  for (int s = 0; s + 1 < full; ++s) {
    a_off += SLAB;
    b_off += SLAB * N;
    fetch<BM, BN, SLAB, VEC_A, false>(A, B, a_off, b_off, 0, 0, K, N, ra, rb);
    slab<BM, BN, SLAB, true>(as, bs, cur, frag, acc, a_row, a_k, b_row, b_col, a_col, b_col_c, ra, rb);
  }
  if (full > 0) {
    const int next = full * SLAB;  // first k of the partial slab (K when there is none)
    if (next < K) {
      a_off += SLAB;
      b_off += SLAB * N;
      fetch<BM, BN, SLAB, VEC_A, true>(A, B, a_off, b_off, next + a_k, next + b_row, K, N, ra, rb);
      slab<BM, BN, SLAB, true>(as, bs, cur, frag, acc, a_row, a_k, b_row, b_col, a_col, b_col_c, ra, rb);
    } else {
      slab<BM, BN, SLAB, false>(as, bs, cur, frag, acc, a_row, a_k, b_row, b_col, a_col, b_col_c, ra, rb);
    }
  }
  // The partial last slab: only its real k values, in order (never a zero-padded step).
  for (int kk = 0; kk < K - full * SLAB; ++kk) {
    load_frag<BM, BN>(frag[1], as[cur], bs[cur], kk, a_col, b_col_c);
    fma_step(frag[1], acc);
  }

  // Epilogue: rows m0+wm+lr*4+q (+32), columns n0+wn+lc*4 (+16), each 4 columns inside one 64-wide tile. So
  // thread t = 32 warp + lane stores the block's elements (x, y) with x / 64 = warp / WARPS_N, y / 32 =
  // warp % WARPS_N, (x % 32) / 4 = lane / 4 and (y % 16) / 4 = lane % 4 (GemmDevice::thread_of).
  const int tiles_n = N / TILE;
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int i = m0 + wm + h * 32 + lr * 4 + q;
#pragma unroll
      for (int g = 0; g < 2; ++g) {
        const int j = n0 + wn + g * 16 + lc * 4;
        // M * N < 2^31 within the family's shape limits: 32-bit offsets.
        const int t = (i / TILE) * tiles_n + j / TILE;
        float* dst = out + (t * (TILE * TILE) + (i % TILE) * TILE + j % TILE);
        const int r = h * 4 + q, c = g * 4;
        *reinterpret_cast<float4*>(dst) = make_float4(acc[r][c], acc[r][c + 1], acc[r][c + 2], acc[r][c + 3]);
      }
    }

  if (tid == 0) {
    const uint32_t sm = cuda::sm_id();
#pragma unroll
    for (int a = 0; a < BM / TILE; ++a)
#pragma unroll
      for (int b = 0; b < BN / TILE; ++b) tile_sm[(m0 / TILE + a) * tiles_n + n0 / TILE + b] = sm;
  }
}

// The block tile compute() takes: the largest that still gives every SM two blocks; small products take smaller
// tiles so that they spread over the whole GPU. Only speed and which thread holds an element depend on it (see
// the header). {BM, BN}.
struct BlockShape {
  int bm, bn;
};
BlockShape block_shape(int m, int n, int sms) {
  const int64_t enough = 2 * static_cast<int64_t>(sms);
  const bool m128 = m % 128 == 0, n128 = n % 128 == 0;
  if (m128 && n128 && (m / 128) * static_cast<int64_t>(n / 128) >= enough) return {128, 128};
  if (m128 && (m / 128) * static_cast<int64_t>(n / 64) >= enough) return {128, 64};
  if (n128 && (m / 64) * static_cast<int64_t>(n / 128) >= enough) return {64, 128};
  return {64, 64};
}

template <int BM, int BN>
void launch(const float* a, const float* b, float* out, uint32_t* tile_sm, int m, int n, int k, cudaStream_t s) {
  using G = Geometry<BM, BN, BK>;
  const unsigned blocks = static_cast<unsigned>((m / BM) * (n / BN));
  if (k % 4 == 0) {
    cuda::launch("gemm_f32 gemm_kernel", gemm_kernel<BM, BN, BK, true>, blocks, G::THREADS, s, a, b, out, tile_sm, m, n,
                 k);
  } else {
    cuda::launch("gemm_f32 gemm_kernel (unaligned k)", gemm_kernel<BM, BN, BK, false>, blocks, G::THREADS, s, a, b, out,
                 tile_sm, m, n, k);
  }
}

class GemmDevice final : public cuda::SDC_TARGET::PlainGemmDevice<float> {
 public:
  // Prepared on the GPU that computes it (DeviceProblem::engine): its SM count fixes the block tile.
  explicit GemmDevice(const Case& c) : PlainGemmDevice(c, "simt fp32, one k-chain per output in k order (exact)") {
    shape_ = block_shape(static_cast<int>(m_), static_cast<int>(n_), cuda::sm_count());
  }

  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern(static_cast<float*>(dst), elements(tensor), dist_, input_window(t, dist_),
                                       tensor_key(seed_, t), s);
  }

  // gemm_kernel's epilogue: tile (r, c) of the block's (BM / 64) x (BN / 64) tiles holds the block's elements
  // x = 64 (tile row % (BM / 64)) + row, y = 64 (tile column % (BN / 64)) + column.
  bool thread_of(uint64_t tile, uint32_t offset, int& warp, int& lane) const override {
    const uint64_t tiles_n = static_cast<uint64_t>(n_) / TILE;
    const int x = static_cast<int>(tile / tiles_n % static_cast<uint64_t>(shape_.bm / TILE)) * TILE +
                  static_cast<int>(offset) / TILE;
    const int y = static_cast<int>(tile % tiles_n % static_cast<uint64_t>(shape_.bn / TILE)) * TILE +
                  static_cast<int>(offset) % TILE;
    warp = (x / WARP_M) * (shape_.bn / WARP_N) + y / WARP_N;
    lane = (x % 32) / 4 * 4 + (y % 16) / 4;
    return true;
  }

  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    const auto* a = static_cast<const float*>(in[0]);
    const auto* b = static_cast<const float*>(in[1]);
    const int m = static_cast<int>(m_), n = static_cast<int>(n_), k = static_cast<int>(k_);
    if (shape_.bm == 128 && shape_.bn == 128)
      launch<128, 128>(a, b, out, tile_sm, m, n, k, s);
    else if (shape_.bm == 128)
      launch<128, 64>(a, b, out, tile_sm, m, n, k, s);
    else if (shape_.bn == 128)
      launch<64, 128>(a, b, out, tile_sm, m, n, k, s);
    else
      launch<64, 64>(a, b, out, tile_sm, m, n, k, s);
  }

 private:
  BlockShape shape_;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<GemmDevice>(c); }

}  // namespace sdc::gemm_f32::SDC_TARGET
