// The model of train_step_f32 on the CPU: named parameters and gradients, and one training step as a
// sequence of named submodule computations (train_step_f32.h specifies each). Every computed output is
// handed to an Observer, which may read it (to digest and compare it) and may overwrite it (to put the
// golden output in its place: the replay's computation sync); the step goes on from whatever the buffer
// then holds. Single-threaded: one CPU worker runs one replay; there is no global state.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/train_step_f32/train_step_f32.h"
#include "kernels/train_step_f32/train_step_f32_ops.h"

namespace sdc {
struct Injection;
}

namespace sdc::train_step_f32 {

struct Tensor {
  std::string name;
  int64_t rows = 0, cols = 0;  // a vector (norm weight) has rows = 1
  bool decay = false;          // weight decay applies (matrices) or not (norm weights)
  std::vector<float> data;
  int64_t size() const { return rows * cols; }
};

// Tensors in a fixed order (the parameter order of train_step_f32.h), found by name.
struct TensorSet {
  std::vector<Tensor> tensors;
  Tensor& operator[](std::string_view name);
  const Tensor& operator[](std::string_view name) const;
  const Tensor* find(std::string_view name) const;
};

// Parameters in their fixed order with zero data (the shape of every parameter, gradient and moment set).
TensorSet parameter_shapes(const Config& cfg);
// The same names, shapes and decay flags without data: for code that reads only the layout (a replay's
// specification, the submodule table), which would otherwise zero-fill a whole model's worth of memory.
TensorSet parameter_layout(const Config& cfg);
// How many parameters the model has (parameter_shapes' elements, counted without allocating them).
int64_t parameter_count(const Config& cfg);
// Initial parameters (train_step_f32.h: uniform times 2^-ceil(log4(fan_in)), norm weights 1).
TensorSet init_params(const Config& cfg, uint64_t seed);
// Throws std::invalid_argument unless the sizes satisfy train_step_f32.h's requirements.
void check_config(const Config& cfg);

enum class Pass : uint8_t { forward, backward, accumulate, loss, optimizer };

// One computation of the step. name is "<module>.<pass>" ("layer1.attn.wo.forward", "lm_head.backward",
// "layer0.mlp.down.accumulate", "loss.step", "embed.optimizer"); outputs names its output tensors in the
// order they are reported (a backward matmul reports {"dx", "dw"}).
struct Submodule {
  std::string name;
  int index = 0;  // position in execution order
  Pass pass = Pass::forward;
  int layer = -1;  // -1 outside the layers
  std::vector<std::string> outputs;
};

// Whether a layer's pass sums over a dimension the tensor-parallel ranks split (train_step_f32.h, TENSOR
// PARALLELISM): the row-parallel forwards (attn.wo, mlp.down) and the column-parallel backwards' dX (attn.wq, wk, wv,
// mlp.gate, up). `module` is the layer's name without the pass ("layer0.attn.wo").
bool is_split(std::string_view module, Pass pass);
// The submodule of rank r's partial of a split layer: "<module>.rank<r><pass>" (pass ".forward" or ".backward").
std::string rank_submodule(const std::string& module, int64_t rank, const char* pass);

// All submodules in execution order: one micro-batch's forward and backward, the accumulation (run from
// micro-batch 1 on), the step's loss, then the optimizer of every parameter.
std::vector<Submodule> submodules(const Config& cfg);

// Where an output was computed: microbatch is -1 for the step-level passes (loss, optimizer).
struct Site {
  int64_t step = 0;
  int microbatch = 0;
  int output = 0;  // index into Submodule::outputs
};

class Observer {
 public:
  virtual ~Observer() = default;
  // out is the computed output; the step continues from its contents when this returns.
  virtual void output(const Submodule& s, const Site& at, std::span<float> out) = 0;
};

// What one run of the step has seen of a BitFlip's output: a replay's L1 run, its L2 run, level 3's steps and a
// reference each keep their own, from zero.
struct FlipTally {
  int64_t executions = 0;  // of the flip's submodule output so far, in execution order (micro-batches, steps)
  int64_t flips = 0;       // of those, the ones the flip hit
};

// A drill's fault in one output of one submodule: `mask` (one bit, or several: a multi-bit flip) XORed into
// `count` words `stride` apart from `element` (count=32 from a multiple of 32: a warp-aligned cluster); words
// past the output's end are left alone. Once (rate 0) at one step and micro-batch; at a rate K, as a datapath
// that is broken, at the 1st, (K+1)th, (2K+1)th ... execution of that output in a run (K 1: every one).
struct BitFlip {
  std::string submodule;
  int output = 0;
  int64_t step = 0;
  int microbatch = 0;
  int64_t element = 0;
  uint32_t mask = 1;
  int64_t count = 1, stride = 1;
  int64_t rate = 0;

  // Whether this output (n words), the run's next, is one the fault hits; counts it in the run's tally. The
  // CPU's injector and the device's replay both decide here, so they hit the same executions.
  bool hits(std::string_view name, const Site& at, int64_t n, FlipTally& run) const {
    if (name != submodule || at.output != output) return false;
    const int64_t j = run.executions++;
    const bool hit =
        element >= 0 && element < n && (rate > 0 ? j % rate == 0 : at.step == step && at.microbatch == microbatch);
    run.flips += hit;
    return hit;
  }
};

// The flip a drill (`--inject ...,submodule=...`) asks for.
BitFlip replay_flip(const Injection& inj);

// Test hook: applies a BitFlip to the output it names, then hands the output on to `next` (which sees the
// corrupted value, as it would a faulty device's).

class BitFlipInjector final : public Observer {
 public:
  explicit BitFlipInjector(BitFlip flip, Observer* next = nullptr) : flip_(std::move(flip)), next_(next) {}
  void output(const Submodule& s, const Site& at, std::span<float> out) override;
  bool fired() const { return tally_.flips > 0; }
  int64_t flips() const { return tally_.flips; }  // how many outputs it hit

 private:
  BitFlip flip_;
  Observer* next_;
  FlipTally tally_;
};

// Which path each submodule runs: `path`, unless `per_submodule` names it.
// Stand-ins for the three matmuls, for the benchmark that times the step against the same step with a BLAS
// library's sgemm (whose results are not this specification's, so never in a screen). Shapes as ops::matmul,
// ops::matmul_dx and ops::matmul_dw; each overwrites its output.
struct MatmulHooks {
  void (*y)(const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y);
  void (*dx)(const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx);
  void (*dw)(const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw);
};

struct Options {
  Path path = Path::fast;
  std::map<std::string, Path, std::less<>> per_submodule;
  const MatmulHooks* matmuls = nullptr;  // null: the specification's matmuls (ops)
  Path path_for(std::string_view submodule) const;
};

enum class OptimizerKind : uint8_t { adamw, lamb };

struct Optimizer {
  OptimizerKind kind = OptimizerKind::adamw;
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

// The optimizer's moments, and the last step's accumulated gradients (by parameter name).
struct OptState {
  TensorSet m, v, grads;
};
OptState init_opt_state(const Config& cfg);

// Tokens and targets of a whole step (B x S each, sequence-major), train_step_f32.h's data formula.
struct Batch {
  std::vector<int32_t> tokens, targets;
};
Batch step_data(const Config& cfg, uint64_t seed, int64_t step);

// One training step: forward and backward of every micro-batch, accumulation, loss, optimizer. Returns the
// step's mean loss; opt.grads holds the accumulated gradients afterwards.
float train_step(const Config& cfg, TensorSet& params, OptState& opt, int64_t step, uint64_t seed,
                 const Optimizer& optimizer, Observer* observer = nullptr, const Options& options = {});

// Steps 0..steps-1 from init_params(cfg, seed); returns the per-step losses (params_out: the final ones).
std::vector<float> train(const Config& cfg, int64_t steps, uint64_t seed, const Optimizer& optimizer,
                         Observer* observer = nullptr, const Options& options = {}, TensorSet* params_out = nullptr);

// The gradients of micro-batch `mb` of a step alone (forward and backward, no accumulation, no update);
// returns the micro-batch's loss sum (unscaled). train_step's gradients are the left fold of these.
float microbatch_gradients(const Config& cfg, const TensorSet& params, int64_t step, uint64_t seed, int mb,
                           TensorSet& grads, Observer* observer = nullptr, const Options& options = {});

}  // namespace sdc::train_step_f32
