// Level 3's failure modes (train_step_f32_trajectory.h states the rules).
#include "kernels/train_step_f32/train_step_f32_trajectory.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace sdc::train_step_f32 {

const char* failure_mode_name(FailureMode m) {
  switch (m) {
    case FailureMode::none: return "none";
    case FailureMode::spike_and_recover: return "spike_and_recover";
    case FailureMode::spike_and_degrade: return "spike_and_degrade";
    case FailureMode::silent_degradation: return "silent_degradation";
    case FailureMode::gradual_drift: return "gradual_drift";
  }
  return "none";
}

FailureMode classify_trajectory(std::span<const float> loss, std::span<const float> ref_loss,
                                std::span<const float> distance) {
  if (loss.size() != ref_loss.size() || loss.size() != distance.size())
    throw std::logic_error("train_step_f32: a trajectory's series differ in length");
  if (loss.empty()) return FailureMode::none;
  bool departed = false, spike = false;
  for (size_t s = 0; s < loss.size(); ++s) {
    const double l = loss[s], r = ref_loss[s];
    if (std::memcmp(&loss[s], &ref_loss[s], sizeof(float)) != 0 || distance[s] != 0.0f) departed = true;
    if (!(l <= r * SPIKE && l >= r / SPIKE)) spike = true;
  }
  if (!departed) return FailureMode::none;
  const double last = loss.back(), ref = ref_loss.back();
  const bool degraded = !std::isfinite(last) || !((last - ref) / ref <= DEGRADED_EXCESS);
  if (spike) return degraded ? FailureMode::spike_and_degrade : FailureMode::spike_and_recover;
  return degraded ? FailureMode::silent_degradation : FailureMode::gradual_drift;
}

FailureMode classify_tile(const float* expected, const float* actual, int64_t steps) {
  std::vector<float> loss, ref, distance;
  for (int64_t s = 0; s < steps; ++s) {
    loss.push_back(actual[L3_STEP_SLOTS * s + L3_LOSS]);
    ref.push_back(expected[L3_STEP_SLOTS * s + L3_LOSS]);
    distance.push_back(actual[L3_STEP_SLOTS * s + L3_DISTANCE]);
  }
  return classify_trajectory(loss, ref, distance);
}

}  // namespace sdc::train_step_f32
