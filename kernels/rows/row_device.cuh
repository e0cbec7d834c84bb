// The device side every row-wise family shares (reduce_sum, softmax, rmsnorm, cross_entropy): an input
// of rows x cols generated from the pattern (tensor 0), optional further tensors of cols elements
// (rmsnorm's w), one block per tile of consecutive rows. A family adds its exponent window and launch, and
// its kernel starts from RowBlock (the block's layout) and, for softmax and cross_entropy, max_exp_sum.
#pragma once

#include <memory>
#include <utility>

#include "kernels/rows/row_family.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/spec/chunked_reduce.cuh"
#include "src/spec/fpmath.h"

// Everything here lives in the target's namespace (cuda_target.h): the GPU's and the emulated device's copies of
// these templates may be instantiated with the same types, so in one namespace the linker would keep one
// target's copy for both, and a GPU would run the emulator's.
namespace sdc::cuda::SDC_TARGET {

// One block of THREADS threads per tile of TILE_ROWS rows, so the block's SM computed the whole tile: the
// warps form GROUPS = TILE_ROWS groups of GROUP_WARPS, group g takes rows g, g + GROUPS, ... of the tile
// (one row each), and each of its warps a range of the row's 128-element segments (chunked_reduce.h).
template <int TILE_ROWS>
struct RowBlock {
  static constexpr uint32_t THREADS = 1024;
  static constexpr uint32_t WARPS = THREADS / chunked::WARP;
  static constexpr uint32_t GROUPS = TILE_ROWS;
  static constexpr uint32_t GROUP_WARPS = WARPS / GROUPS;
  static_assert(WARPS % GROUPS == 0, "groups must split the block evenly");

  uint64_t tile;
  uint32_t warp, lane;
  uint32_t group, wig;  // the thread's group and its warp in the group
  chunked::RowSplit sp;
  chunked::WarpRange wr;  // the segments of a row of `cols` elements this warp owns

  __device__ __forceinline__ explicit RowBlock(uint32_t cols)
      : tile(blockIdx.x),
        warp(threadIdx.x / chunked::WARP),
        lane(threadIdx.x % chunked::WARP),
        group(warp / GROUP_WARPS),
        wig(warp % GROUP_WARPS),
        sp(chunked::row_split(cols, GROUP_WARPS)),
        wr(chunked::warp_range(sp, wig)) {}

  // row(r, row_index) for each row r of the tile that this thread's group takes; row_index counts rows
  // from the start of the input.
  template <class Row>
  __device__ __forceinline__ void for_rows(Row row) const {
    for (uint32_t r = group; r < static_cast<uint32_t>(TILE_ROWS); r += GROUPS) row(r, tile * TILE_ROWS + r);
  }
  // For the families whose row r of x maps to row r of out (softmax, rmsnorm; rows of cols elements,
  // row-major, so tile t holds its rows at their own offsets): row(xr, yr, vec) for each row of the tile
  // that this thread's group takes, vec when both rows (and the further operands `also`, rmsnorm's w) are
  // 16-byte aligned.
  template <class Row, class... Also>
  __device__ __forceinline__ void for_row_pairs(const float* x, float* out, uint32_t cols, Row row,
                                                const Also*... also) const {
    for_rows([&](uint32_t, uint64_t row_index) {
      const float* xr = x + row_index * cols;
      float* yr = out + row_index * cols;
      row(xr, yr, ((chunked::aligned16(xr) && chunked::aligned16(yr)) && ... && chunked::aligned16(also)));
    });
  }
  // span(first, count) for each of this lane's non-empty spans of the warp's segments of a row of cols
  // elements: the elementwise passes, on the elements the same thread reduced.
  template <class Span>
  __device__ __forceinline__ void for_spans(uint32_t cols, Span span) const {
    for (uint32_t seg = wr.begin; seg < wr.end; ++seg) {
      const chunked::LaneSpan ls = chunked::lane_span(cols, seg, lane);
      if (ls.count == 0) continue;
      span(ls.first, ls.count);
    }
  }
  // The block's SM computed its whole tile.
  __device__ __forceinline__ void record_sm(uint32_t* tile_sm) const {
    if (threadIdx.x == 0) tile_sm[tile] = sm_id();
  }
};

// The first two passes of softmax and cross_entropy over the group's row x (cols elements, vec: 16-byte
// aligned): m, the leftmost maximum finished with x[0] (fold_max), and s, the fixed tree's sum of
// sdc_expf(x - m) (pairwise_sum). seen(i, count, e) gets each span of exponentials as it is summed (softmax
// writes them to y). red: the group's GROUP_WARPS floats of shared memory. U: segments in flight per warp.
struct MaxExpSum {
  float m, s;
};
template <int U, int TILE_ROWS, typename Seen>
__device__ __forceinline__ MaxExpSum max_exp_sum(const RowBlock<TILE_ROWS>& b, const float* x, uint32_t cols, bool vec,
                                                 float* red, Seen seen) {
  constexpr uint32_t G = RowBlock<TILE_ROWS>::GROUP_WARPS;
  const float wm =
      chunked::warp_max<U>([&](uint32_t i, uint32_t count, float(&e)[4]) { chunked::load_span(x, i, count, vec, e); },
                           cols, b.wr.begin, b.wr.end, b.lane);
  const float m = chunked::max_finish(x[0], chunked::group_max<G>(wm, red, b.wig, b.lane));
  const float ws = chunked::warp_sum<U>(
      [&](uint32_t i, uint32_t count, float(&e)[4]) {
        chunked::load_span(x, i, count, vec, e);
        for (uint32_t k = 0; k < count; ++k) e[k] = sdc_expf(e[k] - m);
        seen(i, count, e);
      },
      cols, b.wr.begin, b.wr.end, b.lane);
  return {m, chunked::group_sum<G>(ws, red, b.wig, b.lane, b.sp.warps)};
}

// What a row family's launch gets: one block per tile, `tiles` of them.
struct RowLaunch {
  const void* const* in;
  float* out;
  uint32_t* tile_sm;
  cudaStream_t stream;
  unsigned tiles;
  uint32_t cols;
  uint64_t seed;

  const float* x() const { return static_cast<const float*>(in[0]); }
  const float* w() const { return static_cast<const float*>(in[1]); }
  // Enqueues kernel(args...) as one block of RowBlock's threads per tile (launch: `what` names it).
  template <class... P, class... A>
  void operator()(const char* what, void (*kernel)(P...), A&&... args) const {
    launch(what, kernel, tiles, RowBlock<1>::THREADS, stream, std::forward<A>(args)...);
  }
};

// The inputs of a case of the row family F (generated from its pattern in F's exponent windows) and the
// launch of its kernel: launch(const RowLaunch&) enqueues it and checks the launch (SDC_CUDA_CHECK_LAUNCH).
template <class Launch>
class RowDevice final : public DeviceProblem {
 public:
  RowDevice(const Case& c, const RowFamily& f, Launch launch)
      : f_(f),
        rows_(static_cast<uint64_t>(c.shape.dims.at(f.layout.rows_key))),
        cols_(static_cast<uint32_t>(c.shape.dims.at(f.layout.cols_key))),
        dist_(c.distribution),
        seed_(c.data_seed),
        launch_(launch) {}

  uint64_t input_bytes(size_t tensor) const override { return elements(tensor) * sizeof(float); }
  Engine engine() const override { return {OWN_KERNELS, "simt fp32, fixed chunked pairwise trees (exact)"}; }
  // The row kernels' stores (each kernel says so beside its store): group r (warps GROUP_WARPS r ..) owns row r
  // of the tile. An elementwise family's y[r][c] is stored by the warp of the group whose segments hold c
  // (warp_range) and, in that segment, the lane whose span holds it (lane_span); a per-row output by the group's
  // first warp's lane 0; a tile output after the rows (cross_entropy's partial sum) by thread 0.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const auto rows = static_cast<uint32_t>(f_.tile_rows);
    const uint32_t group_warps = RowBlock<1>::WARPS / rows;
    if (f_.layout.elementwise && offset < rows * cols_) {
      const uint32_t r = offset / cols_, c = offset % cols_, seg = c / chunked::SEG;
      const chunked::RowSplit sp = chunked::row_split(cols_, group_warps);
      warp = static_cast<int>(r * group_warps + seg / sp.per_warp);
      lane = static_cast<int>(c % chunked::SEG / chunked::LANE_ELEMS);
      return true;
    }
    if (!f_.layout.elementwise && offset < rows) {
      warp = static_cast<int>(offset * group_warps);
      lane = 0;
      return true;
    }
    warp = lane = 0;
    return true;
  }
  void generate(size_t tensor, void* dst, cudaStream_t stream) const override {
    const auto t = static_cast<uint32_t>(tensor);
    cuda::SDC_TARGET::generate_pattern(static_cast<float*>(dst), elements(tensor), dist_, f_.window(t, dist_),
                                       tensor_key(seed_, t), stream);
  }
  void compute(const void* const* in, float* out, uint32_t* tile_sm, void*, cudaStream_t stream) const override {
    launch_(RowLaunch{in, out, tile_sm, stream, static_cast<unsigned>(rows_ / static_cast<uint64_t>(f_.tile_rows)),
                      cols_, seed_});
  }

 private:
  uint64_t elements(size_t tensor) const {
    return tensor == 0 ? rows_ * cols_ : (tensor < f_.layout.tensors() ? cols_ : 0);
  }

  const RowFamily& f_;
  uint64_t rows_;
  uint32_t cols_;
  Distribution dist_;
  uint64_t seed_;
  Launch launch_;
};

// A validated case of the row family F (its specification header's ROW_FAMILY): its rows are at most
// max_cols long, which the device reduction must take.
template <const RowFamily& F, class Launch>
std::unique_ptr<DeviceProblem> make_row_device(const Case& c, Launch launch) {
  static_assert(F.max_cols <= chunked::MAX_ROW, "a row must fit the warp's streaming accumulator");
  return std::make_unique<RowDevice<Launch>>(c, F, launch);
}

}  // namespace sdc::cuda::SDC_TARGET

// Defines a row family's prepare_cuda, in its namespace sdc::<id>::SDC_TARGET after its kernel: a RowDevice of
// its ROW_FAMILY whose launch enqueues `kernel` (named `what` in errors) with the arguments that follow, read
// from the RowLaunch l (l.x(), l.w(), l.cols, l.seed, l.out, l.tile_sm).
#define SDC_ROW_PREPARE_CUDA(what, kernel, ...)                                         \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) {                    \
    return cuda::SDC_TARGET::make_row_device<ROW_FAMILY>(                               \
        c, [](const cuda::SDC_TARGET::RowLaunch& l) { l(what, kernel, __VA_ARGS__); }); \
  }
