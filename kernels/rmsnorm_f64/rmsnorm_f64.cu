// rmsnorm_f64 on the fp64 units: per row ms = pairwise_sum<double>(x * x) / cols, inv = 1 / sqrt(ms + EPS),
// y = (x * inv) * w, bit-identical to the specification (rmsnorm_f64.h).
// Shapes: rows x cols row-major doubles and w of cols doubles (the screen's word buffers), cols <= 2^14.
// Work split: one block of 1024 threads per tile (4 rows), so the block's SM computed the whole tile; the
// 32 warps form 4 groups of 8, one row per group (ROW_THREADS = 256 threads). Thread i of a group owns the
// i-th span of span(cols) consecutive elements (a power of two): it sums their squares by the serial tree,
// lane 0 of each warp sums the warp's 32 span sums, and the group's first thread the 8 warp sums, each by
// the serial tree (the specification's tree by chunked_reduce.h's (A), as rmsnorm_f64.h says). Every thread
// of the group then divides and takes the square root itself, and scales the elements of its own span. Every
// operation is a binary64 one: --fmad=false keeps the squares' products apart from the sums' additions,
// division and square root are IEEE (div.rn.f64, sqrt.rn.f64). No atomic, no order that depends on the
// schedule. Loads are not coalesced (a thread reads its own span) and the scaling pass reads x again: the
// kernel is written to screen the fp64 units, not to reach the memory's bandwidth.
#include <memory>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"
#include "src/spec/fpmath.h"
#include "kernels/rmsnorm_f64/rmsnorm_f64.h"

namespace sdc::rmsnorm_f64::SDC_TARGET {
namespace {

constexpr unsigned THREADS = ROW_THREADS * TILE_ROWS;
constexpr uint32_t ROW_WARPS = ROW_THREADS / 32;

__global__ void __launch_bounds__(THREADS)
    rmsnorm_kernel(const double* x, const double* w, uint32_t cols, float* out, uint32_t* tile_sm) {
  __shared__ double spans[TILE_ROWS][ROW_THREADS];
  __shared__ double warps[TILE_ROWS][ROW_WARPS];
  __shared__ double sums[TILE_ROWS];
  const uint32_t group = threadIdx.x / ROW_THREADS, i = threadIdx.x % ROW_THREADS;
  const uint32_t wig = i / 32, lane = i % 32;  // the thread's warp in the group, its lane
  const uint64_t tile = blockIdx.x;
  const uint64_t row = tile * TILE_ROWS + group;
  const double* xr = x + row * cols;
  const uint32_t s = span(cols);
  const uint32_t begin = i * s;
  const uint32_t n = begin < cols ? (cols - begin < s ? cols - begin : s) : 0;
  const double* p = xr + (n > 0 ? begin : 0);  // a span past the row's end is empty, and never formed
  if (n > 0) {
    spans[group][i] = pairwise_sum<double>(
        [p](uint32_t j) {
          const double v = p[j];
          return v * v;
        },
        n);
  }
  // Block barriers, not __syncwarp: the emulated device's race checker orders shared accesses by block
  // barriers only. Present spans: k = ceil(cols / s), warp g's chunk holds spans 32 g .. min(32 g + 32, k).
  __syncthreads();
  const uint32_t k = (cols + s - 1) / s;
  if (lane == 0 && 32 * wig < k) {
    const double* chunk = spans[group] + 32 * wig;
    const uint32_t m = k - 32 * wig < 32 ? k - 32 * wig : 32;
    warps[group][wig] = pairwise_sum<double>([chunk](uint32_t j) { return chunk[j]; }, m);
  }
  __syncthreads();
  if (i == 0) {
    const double* ws = warps[group];
    sums[group] = pairwise_sum<double>([ws](uint32_t j) { return ws[j]; }, (k + 31) / 32);
  }
  __syncthreads();
  const double ms = sums[group] / static_cast<double>(cols);
  const double inv = 1.0 / sqrt(ms + EPS);
  double* yr = reinterpret_cast<double*>(out) + row * cols;
  // y[r][c] (words 2 (r cols + c), + 1): thread c / span(cols) of group r % 4, the one that squared x[r][c]
  for (uint32_t j = 0; j < n; ++j) yr[begin + j] = (p[j] * inv) * w[begin + j];
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

class RmsnormDevice final : public cuda::DeviceProblem {
 public:
  explicit RmsnormDevice(const Case& c)
      : rows_(dim(c, "rows")), cols_(dim(c, "cols")), dist_(c.distribution), seed_(c.data_seed) {}

  uint64_t input_bytes(size_t tensor) const override { return elements(tensor) * sizeof(double); }
  // rmsnorm_kernel's store: y[r][c] of the tile (words 2 (r cols + c) and the one after) is thread
  // 256 r + c / span(cols) of the block's.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const auto cols = static_cast<uint32_t>(cols_);
    const uint32_t v = offset / 2, r = v / cols, c = v % cols;
    const uint32_t t = r * ROW_THREADS + c / span(cols);
    warp = static_cast<int>(t / 32);
    lane = static_cast<int>(t % 32);
    return true;
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS, "simt fp64, 256 threads per row: spans by the serial tree, then warps, then the row"};
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern_f64(dst, elements(tensor), dist_, input_window(t, dist_), tensor_key(seed_, t),
                                           s);
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("rmsnorm_f64 rmsnorm_kernel", rmsnorm_kernel, static_cast<unsigned>(rows_ / TILE_ROWS), THREADS, s,
                 static_cast<const double*>(in[0]), static_cast<const double*>(in[1]), static_cast<uint32_t>(cols_),
                 out, tile_sm);
  }

 private:
  // Values (not words) of tensor 0 (x) and 1 (w).
  uint64_t elements(size_t tensor) const { return static_cast<uint64_t>(tensor == 0 ? rows_ * cols_ : cols_); }

  int64_t rows_, cols_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<RmsnormDevice>(c); }

}  // namespace sdc::rmsnorm_f64::SDC_TARGET
