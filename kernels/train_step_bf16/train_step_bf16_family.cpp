// train_step_bf16: the training-step replay in bf16 mixed precision, a family of its own (its cases, goldens and
// report lines apart from the fp32 replay's) run by train_step_f32's code with Config::bf16 set
// (kernels/train_step_f32/train_step_f32.h, MIXED PRECISION; docs/families.md).
#include "kernels/train_step_f32/train_step_f32_replay.h"

namespace sdc::train_step_bf16 {

Family family() { return train_step_f32::bf16_family(); }

}  // namespace sdc::train_step_bf16
