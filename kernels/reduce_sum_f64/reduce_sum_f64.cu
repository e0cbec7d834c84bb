// reduce_sum_f64 on the fp64 units: y[r] = pairwise_sum<double>(X[r][0..cols)), bit-identical to the
// specification (reduce_sum_f64.h).
// Shapes: rows x cols row-major doubles (the screen's word buffers), cols <= 2^16.
// Work split: one block of 16 warps per tile (16 rows), so the block's SM computed the whole tile; warp w
// sums row w of the tile. Lane l sums the l-th span of span(cols) consecutive elements (a power of two)
// with the serial tree, and lane 0 adds the span sums with the serial tree: the specification's tree by
// chunked_reduce.h's (A), as reduce_sum_f64.h says. Every addition is a binary64 add (--fmad=false keeps
// them unfused); no atomic, no order that depends on the schedule.
#include <memory>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/core/shape.h"
#include "src/spec/fpmath.h"
#include "kernels/reduce_sum_f64/reduce_sum_f64.h"

namespace sdc::reduce_sum_f64::SDC_TARGET {
namespace {

constexpr unsigned THREADS = 32 * TILE_ROWS;

__global__ void __launch_bounds__(THREADS)
    reduce_kernel(const double* x, uint32_t cols, float* out, uint32_t* tile_sm) {
  __shared__ double spans[TILE_ROWS][32];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint64_t tile = blockIdx.x;
  const double* row = x + (tile * TILE_ROWS + warp) * cols;
  const uint32_t s = span(cols);
  const uint32_t begin = lane * s;
  if (begin < cols) {
    const double* p = row + begin;
    const uint32_t n = cols - begin < s ? cols - begin : s;
    spans[warp][lane] = pairwise_sum<double>([p](uint32_t j) { return p[j]; }, n);
  }
  // Every warp's span sums before its lane 0 reads them. A block barrier, not __syncwarp: the emulated
  // device's race checker orders shared accesses by block barriers only, and the barrier costs nothing here.
  __syncthreads();
  if (lane == 0) {
    const uint32_t k = (cols + s - 1) / s;
    const double* sums = spans[warp];
    const double y = pairwise_sum<double>([sums](uint32_t j) { return sums[j]; }, k);
    reinterpret_cast<double*>(out + tile * TILE_WORDS)[warp] = y;  // words 2w, 2w + 1: warp w's lane 0
  }
  if (threadIdx.x == 0) tile_sm[tile] = cuda::sm_id();
}

class ReduceDevice final : public cuda::DeviceProblem {
 public:
  explicit ReduceDevice(const Case& c)
      : rows_(dim(c, "rows")), cols_(dim(c, "cols")), dist_(c.distribution), seed_(c.data_seed) {}

  uint64_t input_bytes(size_t) const override { return elements() * sizeof(double); }
  // reduce_kernel's store: the tile's row r (words 2r and 2r + 1) is lane 0 of warp r's.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    warp = static_cast<int>(offset / 2);
    lane = 0;
    return true;
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS, "simt fp64, a warp per row: 32 spans by the serial tree, then the span sums"};
  }
  void generate(size_t tensor, void* dst, cudaStream_t s) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern_f64(dst, elements(), dist_, input_window(t, dist_), tensor_key(seed_, t), s);
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("reduce_sum_f64 reduce_kernel", reduce_kernel, static_cast<unsigned>(rows_ / TILE_ROWS), THREADS, s,
                 static_cast<const double*>(in[0]), static_cast<uint32_t>(cols_), out, tile_sm);
  }

 private:
  uint64_t elements() const { return static_cast<uint64_t>(rows_ * cols_); }

  int64_t rows_, cols_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<ReduceDevice>(c); }

}  // namespace sdc::reduce_sum_f64::SDC_TARGET
