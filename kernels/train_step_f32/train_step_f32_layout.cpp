// train_step_f32's cases and tiles: what a case describes (replay_spec: the model, the level, the steps, the slot
// of every tile element and its name), what a case may ask for (validate_case), how much its reference keeps, the
// digests of tensors and parameter sets, and a drill's flip. The replay that fills the tiles is
// train_step_f32_family.cpp's (the tile layout is described there), its device side train_step_f32.cu.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/core/family.h"
#include "src/core/inject.h"
#include "src/core/shape.h"
#include "src/spec/digest.h"
#include "kernels/train_step_f32/train_step_f32_replay.h"

namespace sdc::train_step_f32 {

BitFlip replay_flip(const Injection& inj) {
  BitFlip f{inj.submodule, inj.output, inj.step, inj.microbatch, static_cast<int64_t>(inj.element)};
  f.mask = inj.mask;
  f.count = inj.count;
  f.stride = inj.stride;
  f.rate = inj.rate;
  return f;
}

namespace {

constexpr int64_t MAX_STEPS = 1000;
constexpr int64_t MAX_REPLICAS = 4096;

Config config_of(int64_t preset) {
  return preset == 0 ? tiny_config() : preset == 1 ? small_config() : standard_config();
}

// The case's model: its preset, with the optional shape keys `heads` (the preset's unless given) and `tp`
// (tensor-parallel ranks, 1 unless given).
int64_t optional_dim(const Case& c, const char* key, int64_t otherwise) {
  const auto it = c.shape.dims.find(key);
  return it == c.shape.dims.end() ? otherwise : it->second;
}
Config config_of(const Case& c) {
  Config cfg = config_of(dim(c, "preset"));
  cfg.heads = optional_dim(c, "heads", cfg.heads);
  cfg.tp = optional_dim(c, "tp", 1);
  cfg.bf16 = c.family == BF16_FAMILY;
  return cfg;
}

// A metric's slot, named "L<level> <site> <metric>" as element_name says.
void add_metric(ReplaySpec& sp, int level, const std::string& site, const char* metric, bool always) {
  sp.metrics.push_back({static_cast<uint32_t>(sp.names.size()), level, site, metric, always});
  std::string name = "L";  // appended: GCC 12 warns of a false bound on `"L" + std::to_string(level) + ...`
  name.append(std::to_string(level)).append(" ").append(site).append(" ").append(metric);
  sp.names.push_back(std::move(name));
}

}  // namespace

ReplaySpec replay_spec(const Case& c) {
  ReplaySpec sp;
  sp.cfg = config_of(c);
  sp.tensor_cores = c.mode == Mode::recorded;
  sp.cublaslt = optional_dim(c, "engine", 0) == 1;
  sp.level = static_cast<int>(dim(c, "level"));
  sp.steps = dim(c, "steps");
  sp.replicas = static_cast<uint64_t>(dim(c, "replicas"));
  sp.seed = c.data_seed;
  sp.subs = submodules(sp.cfg);
  sp.shapes = parameter_layout(sp.cfg);
  sp.optimizer.kind = dim(c, "optimizer") == 1 ? OptimizerKind::lamb : OptimizerKind::adamw;
  if (sp.level == 12) {
    const int nmb = static_cast<int>(sp.cfg.micro_batches());
    for (int mb = 0; mb < nmb; ++mb) {
      for (const Submodule& s : sp.subs)
        if ((s.pass == Pass::forward || s.pass == Pass::backward) || (s.pass == Pass::accumulate && mb > 0))
          for (size_t k = 0; k < s.outputs.size(); ++k) sp.sites.push_back({s.index, mb, static_cast<int>(k)});
    }
    for (const Submodule& s : sp.subs)
      if (s.pass == Pass::loss || s.pass == Pass::optimizer)
        for (size_t k = 0; k < s.outputs.size(); ++k) sp.sites.push_back({s.index, -1, static_cast<int>(k)});
    for (const L1Site& st : sp.sites) {
      const Submodule& s = sp.subs[static_cast<size_t>(st.sub)];
      const std::string base = "L1 " + s.name + (st.microbatch >= 0 ? " mb " + std::to_string(st.microbatch) : "") +
                               " out " + std::to_string(st.output) + " digest.";
      for (const char* part : {"lo", "mid", "hi"}) sp.names.push_back(base + part);
    }
    for (const Submodule& s : sp.subs)  // l1_metrics_at()
      for (const char* metric : {"mismatch_frequency", "mismatch_severity"}) add_metric(sp, 1, s.name, metric, false);
    for (const Tensor& t : sp.shapes.tensors) {  // l2_at()
      for (const char* part : {"digest.lo", "digest.mid", "digest.hi"})
        sp.names.push_back("L2 grad " + t.name + " " + part);
      for (const char* metric : {"mismatch_frequency", "mismatch_severity", "grad_diff_ratio"})
        add_metric(sp, 2, "grad " + t.name, metric, false);
    }
    add_metric(sp, 2, "grad model", "grad_diff_ratio", false);  // model_ratio_at()
    for (const Tensor& t : sp.shapes.tensors) {
      for (const char* part : {"digest.lo", "digest.mid", "digest.hi"})
        sp.names.push_back("L2 param " + t.name + " " + part);
      for (const char* metric : {"mismatch_frequency", "mismatch_severity"})
        add_metric(sp, 2, "param " + t.name, metric, false);
    }
  } else if (sp.tensor_cores) {
    for (int64_t s = 0; s < sp.steps; ++s) {  // L3_TC_STEP_SLOTS
      const std::string step = "step " + std::to_string(s);
      add_metric(sp, 3, step, "loss", true);
      for (const char* part : {"lo", "mid", "hi"}) sp.names.push_back("L3 " + step + " params digest." + part);
    }
  } else {
    for (int64_t s = 0; s < sp.steps; ++s) {  // L3_STEP_SLOTS: the trajectory, listed whole for a failing tile
      const std::string step = "step " + std::to_string(s);
      add_metric(sp, 3, step, "loss", true);
      for (const char* part : {"lo", "mid", "hi"}) sp.names.push_back("L3 " + step + " params digest." + part);
      add_metric(sp, 3, step, "param_distance", true);
    }
    add_metric(sp, 3, "final", "param_distance", true);
    add_metric(sp, 3, "final", "loss_spike", true);
  }
  return sp;
}

std::string validate_case(const Case& c) {
  for (const char* k : {"preset", "level", "steps", "optimizer", "replicas"})
    if (!c.shape.dims.count(k)) return std::string("shape needs ") + k;
  const int64_t preset = dim(c, "preset"), level = dim(c, "level"), steps = dim(c, "steps");
  if (preset < 0 || preset > 2) return "preset must be 0 (tiny), 1 (small) or 2 (standard)";
  if (level != 12 && level != 3) return "level must be 12 (submodules and steps with sync) or 3 (free-running steps)";
  if (level == 12 && preset == 2)
    return "level 12 keeps every submodule output of a step in memory: the standard preset needs gigabytes, "
           "use tiny or small";
  if (steps < 1 || steps > MAX_STEPS) return "steps must be in 1..1000";
  for (const auto& [key, value] : c.shape.dims)
    if (key != "preset" && key != "level" && key != "steps" && key != "optimizer" && key != "replicas" &&
        key != "heads" && key != "tp" && key != "engine")
      return "unknown shape key " + key +
             " (preset, level, steps, optimizer, replicas, and optionally heads, tp, engine)";
  const Config cfg = config_of(c);
  if (cfg.heads < 1 || cfg.dim % cfg.heads != 0 || cfg.head_dim() % 2 != 0)
    return "heads must divide the preset's dimension " + std::to_string(cfg.dim) + " into heads of an even size";
  if (cfg.tp != 1 && cfg.tp != 2 && cfg.tp != 4) return "tp (tensor-parallel ranks) must be 1, 2 or 4";
  if (cfg.heads % cfg.tp != 0 || cfg.ffn % cfg.tp != 0)
    return "tp " + std::to_string(cfg.tp) + " must divide the heads (" + std::to_string(cfg.heads) +
           ") and the MLP's width (" + std::to_string(cfg.ffn) + ")";
  if (const uint64_t bytes = reference_bytes(cfg, static_cast<int>(level), steps);
      bytes > MAX_REFERENCE_BYTES)
    return std::string("level ") + (level == 3 ? "3 keeps the reference's parameters after every step" :
                                                 "12 keeps every step's submodule outputs, gradients and state") +
           ": " + std::to_string(steps) + " steps of this preset take " + std::to_string(bytes >> 20) +
           " MiB, over the 1024 MiB limit; use fewer steps";
  if (c.mode == Mode::recorded && level != 3)
    return "mode recorded (the matmuls on tensor cores) runs level 3 only: levels 1 and 2 compare every step with "
           "the host's reference, which no CPU computes for tensor cores";
  if (const int64_t engine = optional_dim(c, "engine", 0); engine != 0 && engine != 1)
    return "engine must be 0 (the tensor cores through mma.sync) or 1 (cuBLASLt)";
  if (c.shape.dims.count("engine") && c.mode != Mode::recorded)
    return "engine (mma.sync or cuBLASLt) applies to mode recorded, whose matmuls run on tensor cores";
  if (dim(c, "optimizer") != 0 && dim(c, "optimizer") != 1) return "optimizer must be 0 (AdamW) or 1 (LAMB)";
  if (dim(c, "replicas") < 1 || dim(c, "replicas") > MAX_REPLICAS) return "replicas must be in 1..4096";
  return "";
}

uint64_t tensor_digest(uint64_t key, const float* v, uint64_t n) {
  return tile_digest(key, v, static_cast<uint32_t>(n));
}

uint64_t params_digest(const TensorSet& p) {
  uint64_t d = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) d += tensor_digest(i, p.tensors[i].data.data(), p.tensors[i].size());
  return d;
}

// Per micro-batch (T tokens): the forward's outputs are (4 + 27 L) T x d activations with the backward's (both
// ends' two, 12 a layer forward and 15 backward), 6 L T x F (gate, up, SwiGLU and their gradients), the logits and
// their gradient (2 T x V), the T token losses and their sum, and every parameter's gradient once (P), with R > 1
// tensor-parallel ranks each rank's T x d partial of the 7 split passes of a layer; then the accumulation of the
// later micro-batches (P each), the step's loss, and the optimizer's parameters and moments.
int64_t l1_floats_per_step(const Config& c) {
  const int64_t t = c.tokens(), p = parameter_count(c), partials = c.tp > 1 ? 7 * c.tp * c.layers * t * c.dim : 0;
  const int64_t microbatch =
      (4 + 27 * c.layers) * t * c.dim + 6 * c.layers * t * c.ffn + 2 * t * c.vocab + t + 1 + p + partials;
  return c.micro_batches() * microbatch + (c.micro_batches() - 1) * p + 1 + 3 * p;
}

uint64_t reference_bytes(const Config& c, int level, int64_t steps) {
  const auto p = static_cast<uint64_t>(parameter_count(c)), s = static_cast<uint64_t>(steps);
  if (level == 3) return s * p * 4;
  return (s * (static_cast<uint64_t>(l1_floats_per_step(c)) + 4 * p) + p) * 4;
}

std::vector<uint64_t> l1_elements(const ReplaySpec& sp, const Reference& r) {
  std::vector<uint64_t> e(sp.subs.size());
  for (size_t k = 0; k < sp.sites.size(); ++k) e[static_cast<size_t>(sp.sites[k].sub)] += r.outputs[k].size();
  return e;
}
}  // namespace sdc::train_step_f32
