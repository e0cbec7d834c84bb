// The device side shared by the exact-integer GEMM families: input generation in the narrow encoding
// and a tensor-core GEMM on mma.sync, parametrized by a family's Traits:
//   Storage                      the narrow element (uint16_t bf16/fp16 bits, uint32_t tf32, uint8_t e4m3)
//   Pattern                      what generates the inputs (exactint::Pattern, or a recorded family's)
//   bits(pattern, tensor, i)     SDC_HD: the encoding of element i (the family header's element_bits)
//   mma(d, a, b)                 __device__: one m16n8k(8 * 4 / sizeof(Storage)) mma.sync with f32 accumulators
//   fp8                          true when the instruction needs compute capability 8.9
//   ALGORITHM                    the Engine algorithm text (instruction and work split)
//
// Shapes (exactint.h): A is M x K, B is N x K, both row-major and K-contiguous, so a 32-bit word holds
// E = 4 / sizeof(Storage) consecutive k of one row. Every mma.sync used here has the same fragment
// shape in words: A 4 registers, B 2, C/D 4 floats, and k of one instruction = 8 words (8E elements):
//   A register r: row groupID + 8 * (r & 1), word (r >> 1) * 4 + threadID_in_group
//   B register r: column groupID,           word r * 4 + threadID_in_group
//   D element c:  row groupID + 8 * (c >> 1), column 2 * threadID_in_group + (c & 1)
// (groupID = lane / 4, threadID_in_group = lane % 4; PTX ISA, "Matrix fragments for mma.m16n8k16 /
// m16n8k8 (tf32) / m16n8k32 (e4m3)"). Which k a register's elements carry only has to agree between A
// and B: a dot product does not depend on the order of its k, so the loads use the same word for
// "A register pair p" and "B register p".
//
// Work split: one 64 x 64 output tile per block of 4 warps (2 x 2, 32 x 32 each: 2 m16 by 4 n8
// fragments). K goes through shared memory in stages of K_STEP = 32 elements (32 / E words per row),
// double-buffered: the next stage is fetched into registers while the current one feeds the
// tensor cores, then stored to the other buffer; one barrier per stage. Rows are padded by 4 words so
// that the 8 rows x 4 words of a fragment load fall in 32 different banks, and the stores take the rows in an
// order whose 16-byte stores meet no bank conflict either (MmaGeometry::row). Any order of accumulation is
// exact for these inputs (exactint.h, bound (*)), so nothing here fixes one; the accumulators are fp32
// and start at +0. Thread 0 records the SM of the block's tile.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/shape.h"
#include "kernels/exactint/exactint_ref.h"
#include "kernels/exactint/mma_ops.cuh"

namespace sdc::exactint {

constexpr int MMA_THREADS = 128;
constexpr const char* FP8_NEEDS = "fp8 tensor cores need compute capability 8.9 or newer";

template <class Traits>
struct MmaGeometry {
  static constexpr int E = 4 / static_cast<int>(sizeof(typename Traits::Storage));  // elements per word
  static constexpr int ROW_WORDS = static_cast<int>(K_STEP) / E;                    // words of one stage row
  static constexpr int LD = ROW_WORDS + 4;                                          // padded row, in words
  static constexpr int STEPS = ROW_WORDS / 8;                                       // mma k-steps per stage
  static constexpr int VECS = TILE * ROW_WORDS / 4 / MMA_THREADS;                   // uint4 per thread, per operand
  static_assert(ROW_WORDS % 8 == 0 && VECS >= 1 && TILE * ROW_WORDS / 4 == VECS * MMA_THREADS, "stage cover");
  // The row of vector v of a stage (uint4 v % (ROW_WORDS / 4) of it). A quarter-warp's 16-byte stores cover
  // R = 32 / ROW_WORDS rows: consecutive rows (LD words apart) would share banks, so of each 8 rows it takes
  // R rows 8 / R apart, whose offsets modulo 32 words are then the R multiples of ROW_WORDS: all 32 banks once
  // (a step of an odd multiple of ROW_WORDS walks them all, R being a power of 2).
  static constexpr int R = 32 / ROW_WORDS, STEP = 8 / R * LD % 32;
  static_assert(32 % ROW_WORDS == 0, "a quarter-warp's stores cover whole rows");
  static_assert(R == 1 || (STEP % ROW_WORDS == 0 && STEP / ROW_WORDS % 2 == 1), "R rows cover the 32 banks");
  static constexpr __host__ __device__ int row(int v) {
    const int i = v / (ROW_WORDS / 4);
    return (i & ~7) | (i % R) * (8 / R) | (i % 8) / R;
  }
};

template <class Traits>
__global__ void generate_kernel(typename Traits::Storage* dst, uint64_t n, typename Traits::Pattern p,
                                uint32_t tensor) {
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    dst[i] = Traits::bits(p, tensor, i);
}

// One stage of a 64-row operand (rows row0.., words w0.. of each row) from global memory into registers.
template <class Traits>
__device__ __forceinline__ void fetch_stage(const uint32_t* __restrict__ src, int64_t k_words, int64_t w0,
                                            uint4 (&r)[MmaGeometry<Traits>::VECS]) {
  using G = MmaGeometry<Traits>;
#pragma unroll
  for (int l = 0; l < G::VECS; ++l) {
    const int v = static_cast<int>(threadIdx.x) + l * MMA_THREADS;
    const int row = G::row(v), col = v % (G::ROW_WORDS / 4) * 4;
    r[l] = *reinterpret_cast<const uint4*>(src + row * k_words + w0 + col);
  }
}

template <class Traits>
__device__ __forceinline__ void stash_stage(uint32_t (*s)[MmaGeometry<Traits>::LD],
                                            const uint4 (&r)[MmaGeometry<Traits>::VECS]) {
  using G = MmaGeometry<Traits>;
#pragma unroll
  for (int l = 0; l < G::VECS; ++l) {
    const int v = static_cast<int>(threadIdx.x) + l * MMA_THREADS;
    *reinterpret_cast<uint4*>(&s[G::row(v)][v % (G::ROW_WORDS / 4) * 4]) = r[l];
  }
}

// C tile t = A[rb*64 .. +64][:] * B[cb*64 .. +64][:]^T, rb = t / n_blocks, cb = t % n_blocks.
// A and B are read as words; k_words = K / E.
template <class Traits>
__global__ void __launch_bounds__(MMA_THREADS)
    mma_kernel(const uint32_t* __restrict__ A, const uint32_t* __restrict__ B, int64_t k_words, int64_t n_blocks,
               float* __restrict__ out, uint32_t* __restrict__ tile_sm) {
  using G = MmaGeometry<Traits>;
  __shared__ __align__(16) uint32_t as[2][TILE][G::LD];
  __shared__ __align__(16) uint32_t bs[2][TILE][G::LD];
  const int64_t tile = blockIdx.x;
  const uint32_t* a = A + (tile / n_blocks) * TILE * k_words;
  const uint32_t* b = B + (tile % n_blocks) * TILE * k_words;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32, g = lane >> 2, t = lane & 3;

  float acc[2][4][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[mi][ni][c] = 0.0f;

  uint4 ra[G::VECS], rb[G::VECS];
  fetch_stage<Traits>(a, k_words, 0, ra);
  fetch_stage<Traits>(b, k_words, 0, rb);
  stash_stage<Traits>(as[0], ra);
  stash_stage<Traits>(bs[0], rb);
  __syncthreads();
  const int64_t stages = k_words / G::ROW_WORDS;
  int cur = 0;
  for (int64_t s = 0; s < stages; ++s) {
    const bool next = s + 1 < stages;
    if (next) {
      fetch_stage<Traits>(a, k_words, (s + 1) * G::ROW_WORDS, ra);
      fetch_stage<Traits>(b, k_words, (s + 1) * G::ROW_WORDS, rb);
    }
#pragma unroll
    for (int step = 0; step < G::STEPS; ++step) {
      uint32_t af[2][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int r = 0; r < 4; ++r) af[mi][r] = as[cur][wm + mi * 16 + g + 8 * (r & 1)][step * 8 + (r >> 1) * 4 + t];
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int r = 0; r < 2; ++r) bf[ni][r] = bs[cur][wn + ni * 8 + g][step * 8 + r * 4 + t];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) Traits::mma(acc[mi][ni], af[mi], bf[ni]);
    }
    if (next) {  // the other buffer was last read before the previous barrier
      stash_stage<Traits>(as[cur ^ 1], ra);
      stash_stage<Traits>(bs[cur ^ 1], rb);
    }
    __syncthreads();
    cur ^= 1;
  }

  float* o = out + tile * (TILE * TILE);
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
      const int r0 = wm + mi * 16 + g, c0 = wn + ni * 8 + 2 * t;
      *reinterpret_cast<float2*>(&o[r0 * TILE + c0]) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
      *reinterpret_cast<float2*>(&o[(r0 + 8) * TILE + c0]) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
    }
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

template <class Traits>
class MmaDevice final : public cuda::DeviceProblem {
 public:
  // refusal: why the current device cannot run the kernel ("" when it can); compute() throws it.
  // algorithm: the engine's text on the current device (fp8 on sm_90 says that ptxas emulates the instruction).
  MmaDevice(const Case& c, typename Traits::Pattern pattern, std::string refusal, std::string algorithm)
      : m_(dim(c, "m")),
        n_(dim(c, "n")),
        k_(dim(c, "k")),
        pat_(pattern),
        refusal_(std::move(refusal)),
        algorithm_(std::move(algorithm)) {}

  uint64_t input_bytes(size_t tensor) const override { return elements(tensor) * sizeof(typename Traits::Storage); }
  cuda::Engine engine() const override { return {cuda::OWN_KERNELS, algorithm_}; }
  // mma_kernel's store: warp w holds the 32 x 32 quarter at rows 32 (w >> 1), columns 32 (w & 1); in it, D
  // element c of fragment (mi, ni) of lane l is row 16 mi + l / 4 + 8 (c >> 1), column 8 ni + 2 (l % 4) + (c & 1).
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const int r = static_cast<int>(offset) / TILE, c = static_cast<int>(offset) % TILE;
    warp = (r / 32) * 2 + c / 32;
    lane = (r % 8) * 4 + (c % 8) / 2;
    return true;
  }
  std::string unsupported(int cc_major, int cc_minor) const override {
    return Traits::fp8 && cc_major * 10 + cc_minor < 89 ? FP8_NEEDS : "";
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const uint64_t n = elements(tensor);
    cuda::launch("exactint generate_kernel", generate_kernel<Traits>, cuda::grid_for(n, 256), 256, s,
                 static_cast<typename Traits::Storage*>(dst), n, pat_, static_cast<uint32_t>(tensor));
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    if (!refusal_.empty()) throw std::runtime_error(refusal_);
    const int64_t tiles = (m_ / TILE) * (n_ / TILE);  // at most 256 * 256: one block each
    cuda::launch("exactint mma_kernel", mma_kernel<Traits>, static_cast<unsigned>(tiles), MMA_THREADS, s,
                 static_cast<const uint32_t*>(in[0]), static_cast<const uint32_t*>(in[1]), k_ / MmaGeometry<Traits>::E,
                 n_ / TILE, out, tile_sm);
  }

 private:
  uint64_t elements(size_t tensor) const { return static_cast<uint64_t>((tensor == 0 ? m_ : n_) * k_); }

  int64_t m_, n_, k_;
  typename Traits::Pattern pat_;
  std::string refusal_;
  std::string algorithm_;
};

// The fp8 instruction exists from compute capability 8.9 on, and only in code compiled for such a target.
// An older GPU: the case is not applicable there (unsupported(), which the GPU executor asks before anything
// runs), and compute() throws if called all the same. A capable GPU that this build has no such code for:
// an error of the build, thrown at once. Either way the trap in the kernel is never reached.
template <class Traits>
std::string fp8_refusal(int major, int minor) {
  if (major * 10 + minor < 89) return FP8_NEEDS;
  cudaFuncAttributes attr{};
  SDC_CUDA_CHECK(cudaFuncGetAttributes(&attr, mma_kernel<Traits>));
  if (attr.binaryVersion < 89)
    throw std::runtime_error("this build has no fp8 tensor-core code for compute capability " + std::to_string(major) +
                             "." + std::to_string(minor) + " (add it to CMAKE_CUDA_ARCHITECTURES)");
  return "";
}

// c is a validated case of an M x N x K GEMM family; `pattern` generates its inputs.
template <class Traits>
std::unique_ptr<cuda::DeviceProblem> make_device(const Case& c, typename Traits::Pattern pattern) {
  std::string refusal, algorithm = Traits::ALGORITHM;
  if constexpr (Traits::fp8) {
    int dev = 0, major = 0, minor = 0;
    SDC_CUDA_CHECK(cudaGetDevice(&dev));
    SDC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    SDC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    refusal = fp8_refusal<Traits>(major, minor);
    if (major == 9) algorithm += std::string(" (") + FP8_MMA_SYNC_NOTE + ")";
  }
  return std::make_unique<MmaDevice<Traits>>(c, pattern, std::move(refusal), std::move(algorithm));
}

}  // namespace sdc::exactint
