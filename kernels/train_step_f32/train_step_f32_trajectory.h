// Level 3's trajectory read as a training run: the failure mode that a failing unit's per-step losses and
// parameter distances show against the reference's, in the classes a fault-injection study of LLM
// pre-training named (docs/families.md, "train_step_f32", "Level 3's trajectory"). Computed by the host from
// a failing tile and the tile a healthy unit computes, so a faulty device never classifies itself.
//
// The rules, over steps s = 0..N-1 (l_s the unit's loss after step s, r_s the reference's, d_s the unit's
// parameter distance ||p_s - p_ref_s|| / ||p_ref_s||):
//   spike at s          l_s outside [r_s / SPIKE, r_s * SPIKE], or not a number (the loss-spike rule,
//                       train_step_f32_replay.h)
//   degraded            the last step's loss excess (l_{N-1} - r_{N-1}) / r_{N-1} is above DEGRADED_EXCESS,
//                       or l_{N-1} is not finite: the run ends worse than the reference
//   none                every l_s is r_s bit for bit and every d_s is 0: the trajectory is the reference's
//   spike_and_recover   a spike, not degraded: the loss came back
//   spike_and_degrade   a spike, degraded
//   silent_degradation  no spike, degraded: worse with no step that a loss-spike monitor would flag
//   gradual_drift       no spike, not degraded: the run left the reference's trajectory (its parameters
//                       or a loss differ) and its loss stayed near the reference's
// The classes are exclusive and cover every trajectory; the rules read floats in a fixed order, so a tile
// has one class wherever it is classified.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/train_step_f32/train_step_f32_replay.h"

namespace sdc::train_step_f32 {

// The last step's loss may exceed the reference's by this fraction and the run still count as recovered.
constexpr double DEGRADED_EXCESS = 0.02;

enum class FailureMode { none, spike_and_recover, spike_and_degrade, silent_degradation, gradual_drift };
const char* failure_mode_name(FailureMode m);

// The class of a trajectory of N = loss.size() steps (ref_loss and distance as long).
FailureMode classify_trajectory(std::span<const float> loss, std::span<const float> ref_loss,
                                std::span<const float> distance);
// The class of a level-3 tile (actual) against the tile a healthy unit computes (expected), `steps` steps laid
// out as L3_STEP_SLOTS says.
FailureMode classify_tile(const float* expected, const float* actual, int64_t steps);

}  // namespace sdc::train_step_f32
