// train_step_f32 as a family of the screen: what a case describes (ReplaySpec) and the in-process reference
// its tiles are measured against (train_step_f32_family.cpp explains the tile layout). Shared by the CPU
// problem and the device side (train_step_f32.cu), which replays the same step on a GPU and takes the
// reference the host computed and checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/family.h"
#include "kernels/train_step_f32/train_step_f32_model.h"

namespace sdc::train_step_f32 {

// A step's loss is a spike when it leaves [ref / SPIKE, ref * SPIKE] around the reference's (or is NaN).
constexpr double SPIKE = 1.5;

// Level 3's tile: per step S, L3_STEP_SLOTS slots (the step's loss, its parameters' digest in three, and their
// distance ||p_S - p_ref_S|| / ||p_ref_S|| from the reference's after the same step), then the final distance
// (the last step's again) and the loss-spike flag.
constexpr int64_t L3_STEP_SLOTS = 5;
constexpr int64_t L3_LOSS = 0, L3_DIGEST = 1, L3_DISTANCE = 4;  // offsets within a step's slots

// Level 3's trajectory keeps the reference's parameters after every step (the per-step distance needs them):
// steps x parameters x 4 bytes, at most this much (the small preset's 20 steps take 305 MB).
constexpr uint64_t MAX_TRAJECTORY_BYTES = uint64_t{1} << 30;

// Level 12's L1 part: one slot triple per submodule output of step 0, in execution order.
struct L1Site {
  int sub = 0;  // index into submodules(cfg)
  int microbatch = 0;
  int output = 0;
};

struct ReplaySpec {
  Config cfg;
  int level = 12;  // 12 (L1 and L2) or 3
  int64_t steps = 1;
  uint64_t replicas = 1;
  uint64_t seed = 0;
  Optimizer optimizer;
  std::vector<Submodule> subs;
  TensorSet shapes;
  std::vector<L1Site> sites;       // level 12
  std::vector<std::string> names;  // one per tile slot
  std::vector<ReplayMetricSlot> metrics;  // the slots that hold metrics (the others are digests)
};
// The replay of a validated case.
ReplaySpec replay_spec(const Case& c);

struct Reference {
  std::vector<std::vector<float>> outputs;     // level 12: per L1 site, the step-0 output
  std::vector<uint64_t> digests;               // level 12: their digests
  TensorSet grads, params;                     // level 12: after step 0; level 3: params after the last step
  std::vector<float> losses;                   // level 3: per step
  std::vector<std::vector<float>> trajectory;  // level 3: per step, every parameter after it, in tensor order
  std::vector<uint64_t> param_digests;         // level 3: per step, of the parameters after it
};

// The digest of one tensor (its key the tensor's number) and of a parameter set (the sum of its tensors').
uint64_t tensor_digest(uint64_t key, const float* v, uint64_t n);
uint64_t params_digest(const TensorSet& p);

// The reference of a prepared train_step_f32 problem: the one its executor had computed (compute_reference),
// else computed now. Throws std::logic_error for a problem of another family.
const Reference& problem_reference(const Problem& p);

}  // namespace sdc::train_step_f32
