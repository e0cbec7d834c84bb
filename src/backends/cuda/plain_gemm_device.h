// The host side of a plain GEMM's device problem (gemm_f32, gemm_f64): the case's dimensions, distribution and
// seed, inputs A (m x k) and B (k x n) of T values, and an engine of the project's own kernels. A family adds
// its generation and its launch.
#pragma once

#include "src/backends/cuda/cuda_target.h"
#include "src/backends/cuda/device_problem.h"
#include "src/core/family.h"
#include "src/core/shape.h"

// In the target's namespace (cuda_target.h), as everything the GPU's and the emulated device's compilations
// both instantiate.
namespace sdc::cuda::SDC_TARGET {

template <class T>
class PlainGemmDevice : public DeviceProblem {
 public:
  // algorithm: the engine's description of the family's kernel.
  PlainGemmDevice(const Case& c, const char* algorithm)
      : m_(dim(c, "m")),
        n_(dim(c, "n")),
        k_(dim(c, "k")),
        dist_(c.distribution),
        seed_(c.data_seed),
        algorithm_(algorithm) {}

  uint64_t input_bytes(size_t tensor) const override { return elements(tensor) * sizeof(T); }
  Engine engine() const override { return {OWN_KERNELS, algorithm_}; }

 protected:
  // Elements (T values) of input tensor `tensor`: A, then B.
  uint64_t elements(size_t tensor) const { return static_cast<uint64_t>(tensor == 0 ? m_ * k_ : k_ * n_); }

  int64_t m_, n_, k_;
  Distribution dist_;
  uint64_t seed_;

 private:
  const char* algorithm_;
};

}  // namespace sdc::cuda::SDC_TARGET
