// The device side every row-wise family shares (reduce_sum, softmax, rmsnorm, cross_entropy): an input
// of rows x cols generated from the pattern (tensor 0), optional further tensors of cols elements
// (rmsnorm's w), one block per tile of consecutive rows. A family adds its exponent window and launch.
#pragma once

#include <stdexcept>
#include <string>

#include "../../core/family.h"
#include "device_util.cuh"

namespace sdc::cuda {

class RowDevice : public DeviceProblem {
 public:
  // max_cols: the longest row the family's device reduction takes (0: no limit).
  RowDevice(const Case& c, const char* rows_key, const char* cols_key, size_t tensors, int tile_rows, uint64_t max_cols)
      : rows_(static_cast<uint64_t>(c.shape.dims.at(rows_key))),
        cols_(static_cast<uint32_t>(c.shape.dims.at(cols_key))),
        tensors_(tensors),
        tile_rows_(tile_rows),
        dist_(c.distribution),
        seed_(c.data_seed) {
    if (max_cols && cols_ > max_cols) throw std::invalid_argument(c.family + ": row too long for the device reduction");
  }

  uint64_t input_bytes(size_t tensor) const override { return elements(tensor) * sizeof(float); }
  Engine engine() const override { return {OWN_KERNELS, "simt fp32, fixed chunked pairwise trees (exact)"}; }
  void generate(size_t tensor, void* dst, cudaStream_t stream) const override {
    const auto t = static_cast<uint32_t>(tensor);
    generate_pattern(static_cast<float*>(dst), elements(tensor), dist_, window(t), tensor_key(seed_, t), stream);
  }

 protected:
  virtual ExponentWindow window(uint32_t tensor) const = 0;
  uint64_t elements(size_t tensor) const { return tensor == 0 ? rows_ * cols_ : (tensor < tensors_ ? cols_ : 0); }
  unsigned tiles() const { return static_cast<unsigned>(rows_ / static_cast<uint64_t>(tile_rows_)); }

  uint64_t rows_;
  uint32_t cols_;
  size_t tensors_;
  int tile_rows_;
  Distribution dist_;
  uint64_t seed_;
};

}  // namespace sdc::cuda
