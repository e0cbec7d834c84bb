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
// On the tensor cores (mode recorded) a step has the loss and the digest alone: the distance and the spike flag are
// measured against the host's reference, which a CPU cannot compute for tensor cores.
constexpr int64_t L3_TC_STEP_SLOTS = 4;

// The replay in bf16 mixed precision (train_step_f32.h, MIXED PRECISION) is a family of its own, which this
// family's code runs with Config::bf16 set (kernels/train_step_bf16).
constexpr const char* BF16_FAMILY = "train_step_bf16";
Family bf16_family();

// The reference a case keeps, at most this much: level 3 the parameters after every step (the per-step distance
// needs them: steps x parameters x 4 bytes; the small preset's 20 steps take 305 MB); level 12 every step's L1
// outputs (computation sync) and the state each step starts from and its gradients (parameter sync).
constexpr uint64_t MAX_REFERENCE_BYTES = uint64_t{1} << 30;

// Level 12's L1 part: one slot triple per submodule output of a step (each micro-batch and output, in execution
// order), the digests of every step's output added (the key of step s's output at site k: s * sites + k).
struct L1Site {
  int sub = 0;  // index into submodules(cfg)
  int microbatch = 0;
  int output = 0;
};

struct ReplaySpec {
  Config cfg;
  int level = 12;  // 12 (L1 and L2) or 3
  bool tensor_cores = false;  // mode recorded: the matmuls on tensor cores, level 3 without a host reference
  bool cublaslt = false;      // mode recorded, engine 1: those matmuls through cuBLASLt (else mma.sync)
  int64_t steps = 1;
  uint64_t replicas = 1;
  uint64_t seed = 0;
  Optimizer optimizer;
  std::vector<Submodule> subs;
  TensorSet shapes;                // the parameters' layout (parameter_layout: no data)
  std::vector<L1Site> sites;       // level 12
  std::vector<std::string> names;  // one per tile slot
  std::vector<ReplayMetricSlot> metrics;  // the slots that hold metrics (the others are digests)
  // Level 12's slots after L1's digests: per submodule (in subs' order) its L1 frequency and severity; per
  // tensor its gradient's digest and metrics (L2_GRAD_SLOTS), the whole model's gradient ratio, per tensor its
  // parameters' digest and metrics (L2_PARAM_SLOTS).
  uint64_t l1_metrics_at() const { return DIGEST_SLOTS * sites.size(); }
  uint64_t l2_at() const { return l1_metrics_at() + 2 * subs.size(); }
  uint64_t model_ratio_at() const { return l2_at() + L2_GRAD_SLOTS * shapes.tensors.size(); }
  uint64_t l2_params_at() const { return model_ratio_at() + 1; }
  static constexpr uint64_t L2_GRAD_SLOTS = 6, L2_PARAM_SLOTS = 5;
};
// The replay of a validated case.
ReplaySpec replay_spec(const Case& c);
// "" when the case's shape and mode are a replay this family runs, else what is wrong (Family::validate).
std::string validate_case(const Case& c);

// Level 12's reference over its steps (parameter sync: step s of L2 starts from params[s], m[s], v[s]); level 3's
// free-running trajectory.
struct Reference {
  std::vector<std::vector<float>> outputs;  // level 12: every step's L1 outputs, step s's site k at s * sites + k
  std::vector<uint64_t> digests;            // level 12: their digests, each keyed by its index
  std::vector<TensorSet> params;            // level 12: params[s] step s starts from, params[steps] after the last
  std::vector<TensorSet> m, v, grads;       // level 12, per step: the moments it starts from, its gradients
  std::vector<float> losses;                // level 3: per step
  std::vector<std::vector<float>> trajectory;  // level 3: per step, every parameter after it, in tensor order
  std::vector<uint64_t> param_digests;         // level 3: per step, of the parameters after it
};

// The floats of one step's L1 outputs (every site's output once), and the bytes of a level's reference.
int64_t l1_floats_per_step(const Config& cfg);
uint64_t reference_bytes(const Config& cfg, int level, int64_t steps);

// Elements of each submodule's L1 outputs over one step (by submodule index), from the reference's step 0.
std::vector<uint64_t> l1_elements(const ReplaySpec& sp, const Reference& r);

// The digest of one tensor (its key the tensor's number) and of a parameter set (the sum of its tensors').
uint64_t tensor_digest(uint64_t key, const float* v, uint64_t n);
uint64_t params_digest(const TensorSet& p);

// The reference of a prepared train_step_f32 problem: the one its executor had computed (compute_reference),
// else computed now. Throws std::logic_error for a problem of another family.
const Reference& problem_reference(const Problem& p);

}  // namespace sdc::train_step_f32
