// train_step_bf16's device side: train_step_f32's device replay (kernels/train_step_f32/train_step_f32.cu), which
// reads the precision from the case's family (replay_spec).
#include <memory>

#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"

namespace sdc::train_step_f32::SDC_TARGET {
std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c);
}

namespace sdc::train_step_bf16::SDC_TARGET {

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return train_step_f32::SDC_TARGET::prepare_cuda(c); }

}  // namespace sdc::train_step_bf16::SDC_TARGET
