// train_step_f32 as a family of the screen (its device side: train_step_f32.cu): every tile is one complete
// training-step replay by the unit that computes it, so all tiles of a case hold the same values, and a unit that
// computes wrong shows as its tiles miscomparing. A tile is a vector of slots, each of which means one thing
// (element_name says which; the layout is train_step_f32_layout.cpp's replay_spec), at the seed paper's levels:
//   level 12  L1: every submodule output of each step (each micro-batch and output, in execution order) as its
//             digest, the steps' added, with computation sync: an output whose digest is not the reference's is
//             compared into its submodule's metrics and replaced by the reference tensor, so what follows runs on
//             golden values and every faulty submodule shows;
//             L2: the steps again with parameter sync, each free-running from the reference's state before it:
//             per gradient and per updated parameter its digest and the paper's metrics against the reference
//             (mismatch frequency, mismatch severity, and for gradients the worst step's gradient-difference
//             ratio), and the whole model's ratio. On a healthy unit the metrics are exactly 0.
//   level 3   `steps` free-running steps: per step the loss, a digest of the parameters and their relative
//             distance from the reference trajectory's after the same step (train_step_f32_replay.h,
//             L3_STEP_SLOTS), then the final distance and a loss-spike flag; the losses and distances of a
//             failing tile are its trajectory, classified by train_step_f32_trajectory.h.
// A 64-bit digest takes three slots of 22, 21 and 21 bits, each an integer held exactly by a float: the
// golden generator refuses NaN outputs, and a digest's raw halves would often be NaN bit patterns.
//
// The reference (one replay of the fast path, every step's submodule outputs and state kept for level 12) is computed
// once per prepared case, at the first tile or the first check of a replay injection: `list` and the
// injection checks prepare every case, and must stay cheap.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "src/core/family.h"
#include "src/core/inject.h"
#include "src/core/shape.h"
#include "src/spec/digest.h"
#include "kernels/train_step_f32/train_step_f32_replay.h"
#include "kernels/train_step_f32/train_step_f32_trajectory.h"

namespace sdc::train_step_f32 {

namespace {

uint64_t span_digest(uint64_t key, std::span<const float> v) { return tensor_digest(key, v.data(), v.size()); }

// ||p - ref|| / ||ref|| over every parameter, elements in tensor order (ref: a trajectory's step, flattened).
float distance(const TensorSet& p, const std::vector<float>& ref) {
  double diff2 = 0, ref2 = 0;
  size_t k = 0;
  for (const Tensor& t : p.tensors)
    for (const float x : t.data) {
      const double a = x, b = ref[k++];
      diff2 += (a - b) * (a - b);
      ref2 += b * b;
    }
  return relative_distance(diff2, ref2);
}

// The sum over steps of tensor i's digest in per_step[first + s] (key i + s * tensors: step 0's is i).
uint64_t steps_digest(const std::vector<TensorSet>& per_step, size_t first, int64_t steps, size_t i) {
  uint64_t d = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const TensorSet& t = per_step[first + static_cast<size_t>(s)];
    d += tensor_digest(i + static_cast<uint64_t>(s) * t.tensors.size(), t.tensors[i].data.data(), t.tensors[i].size());
  }
  return d;
}

std::vector<TensorPair> pairs(const TensorSet& a, const TensorSet& b) {
  std::vector<TensorPair> p;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    p.push_back({a.tensors[i].data.data(), b.tensors[i].data.data(), static_cast<uint64_t>(a.tensors[i].size())});
  return p;
}

std::vector<float> flatten(const TensorSet& p) {
  std::vector<float> v;
  for (const Tensor& t : p.tensors) v.insert(v.end(), t.data.begin(), t.data.end());
  return v;
}

}  // namespace

namespace {

class TrainStepProblem final : public Problem, public ReplayProblem {
 public:
  explicit TrainStepProblem(const Case& c) : sp_(replay_spec(c)) {}

  // The executor wants an input: one element, which the replay does not read (it generates its own).
  std::vector<TensorInfo> inputs() const override { return {{"unused", 1}}; }
  void generate_input(size_t, uint64_t begin, uint64_t end, float* dst) const override {
    std::fill(dst, dst + (end - begin), 0.0f);
  }
  uint64_t tile_count() const override { return replicas_; }
  TileGrid tile_grid() const override { return {1, replicas_, "replicas (each a whole replay)"}; }
  uint32_t tile_elements() const override { return static_cast<uint32_t>(names_.size()); }
  void compute_tile(const float* const*, uint64_t, float* out, sdc::Workspace&) const override {
    replay(out, Path::fast, nullptr);
  }
  void compute_tile_scalar(const float* const*, uint64_t, float* out) const override {
    replay(out, Path::plain, nullptr);
  }
  bool compute_tile_with_fault(const float* const*, uint64_t, float* out, sdc::Workspace&,
                               const Injection& inj) const override {
    const BitFlip flip = replay_flip(inj);
    return replay(out, Path::fast, &flip);
  }
  std::string check_fault(Injection& inj) const override {
    const Submodule* s = nullptr;
    for (const Submodule& x : subs_)
      if (x.name == inj.submodule) s = &x;
    if (!s)
      return "unknown submodule '" + inj.submodule +
             "': names are <module>.<pass> in execution order, e.g. layer0.mlp.down.backward (docs/families.md "
             "lists them)";
    if (inj.step >= steps_)
      return "step " + std::to_string(inj.step) + " is not replayed by this case (" + std::to_string(steps_) + " step" +
             (steps_ == 1 ? "" : "s") + ")";
    if (inj.output >= static_cast<int>(s->outputs.size()))
      return s->name + " has " + std::to_string(s->outputs.size()) + " output(s)";
    const int nmb = static_cast<int>(cfg_.micro_batches());
    const bool once_a_step = s->pass == Pass::loss || s->pass == Pass::optimizer;
    if (inj.rate > 0) {  // every rate-th execution of the output in a run: it must run that often
      const int64_t runs = steps_ * (once_a_step ? 1 : s->pass == Pass::accumulate ? nmb - 1 : nmb);
      if (inj.rate > runs)
        return "rate=" + std::to_string(inj.rate) + ": " + s->name + " output " + std::to_string(inj.output) +
               " is computed " + std::to_string(runs) + " time" + (runs == 1 ? "" : "s") +
               " in a replay of this case (" + std::to_string(steps_) + " step" + (steps_ == 1 ? "" : "s") +
               "); rate= must be in 1.." + std::to_string(runs);
    } else if (once_a_step) {
      if (inj.microbatch_given) return s->name + " runs once per step: give no microbatch=";
      inj.microbatch = -1;
    } else if (inj.microbatch >= nmb || (s->pass == Pass::accumulate && inj.microbatch == 0)) {
      return s->name + " runs at micro-batches " + (s->pass == Pass::accumulate ? "1" : "0") + ".." +
             std::to_string(nmb - 1);
    }
    const uint64_t size = output_size(*s, inj.output);
    if (inj.element >= size)
      return "element " + std::to_string(inj.element) + " is outside " + s->name + " output " +
             std::to_string(inj.output) + " (" + std::to_string(size) + " elements)";
    return "";
  }
  uint64_t output_elements() const override { return replicas_ * tile_elements(); }
  void locate(uint64_t element, uint64_t& tile, uint32_t& offset) const override {
    tile = element / tile_elements();
    offset = static_cast<uint32_t>(element % tile_elements());
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * tile_elements() + offset; }
  std::string element_name(uint64_t element) const override {
    return tile_name(element / tile_elements()) + ": " + names_[element % tile_elements()];
  }
  std::string tile_name(uint64_t tile) const override { return "replica " + std::to_string(tile); }
  const ReplayProblem* replay() const override { return this; }
  const std::vector<ReplayMetricSlot>& metric_slots() const override { return sp_.metrics; }
  std::string failure_mode(const float* expected, const float* actual) const override {
    if (level_ != 3 || sp_.tensor_cores) return "";
    return failure_mode_name(classify_tile(expected, actual, steps_));
  }
  bool compute_reference(const Injection* fault) const override {
    std::unique_ptr<BitFlip> flip;
    if (fault)
      flip = std::make_unique<BitFlip>(replay_flip(*fault));
    bool fired = false;
    auto r = make_reference(flip.get(), fired);
    std::lock_guard<std::mutex> lock(ref_mutex_);
    ref_ = std::move(r);
    return fired;
  }
  // A healthy unit's tile as the reference says: every L1 digest the reference's, L2's digests of its
  // gradients and parameters with metrics of 0, L3's losses and parameter digests with a distance of 0.
  void reference_tile(uint64_t, float* out) const override {
    const Reference& r = reference();
    if (level_ == 12) {
      const size_t n = sites_.size();
      for (size_t k = 0; k < n; ++k) {
        uint64_t d = 0;
        for (int64_t s = 0; s < steps_; ++s) d += r.digests[static_cast<size_t>(s) * n + k];
        put_digest(d, out + DIGEST_SLOTS * k);
      }
      std::fill(out + sp_.l1_metrics_at(), out + sp_.l2_at(), 0.0f);
      float* o = out + sp_.l2_at();
      for (size_t i = 0; i < shapes_.tensors.size(); ++i, o += ReplaySpec::L2_GRAD_SLOTS) {
        put_digest(steps_digest(r.grads, 0, steps_, i), o);
        o[3] = o[4] = o[5] = 0;
      }
      *o++ = 0;  // the model's gradient ratio
      for (size_t i = 0; i < shapes_.tensors.size(); ++i, o += ReplaySpec::L2_PARAM_SLOTS) {
        put_digest(steps_digest(r.params, 1, steps_, i), o);
        o[3] = o[4] = 0;
      }
      return;
    }
    for (int64_t s = 0; s < steps_; ++s) {
      float* o = out + L3_STEP_SLOTS * s;
      o[L3_LOSS] = r.losses[static_cast<size_t>(s)];
      put_digest(r.param_digests[static_cast<size_t>(s)], o + L3_DIGEST);
      o[L3_DISTANCE] = 0;
    }
    out[L3_STEP_SLOTS * steps_] = 0;
    out[L3_STEP_SLOTS * steps_ + 1] = 0;
  }
  // About 6 operations per parameter and token for forward and backward; the replays of a tile, and the
  // reference (computed by the first tile) counted once more.
  double tile_flops() const override {
    double params = 0;
    for (const Tensor& t : shapes_.tensors) params += static_cast<double>(t.size());
    const double steps = (level_ == 12 ? 3.0 : 2.0) * static_cast<double>(steps_);
    return 6.0 * params * static_cast<double>(cfg_.batch * cfg_.seq) * steps;
  }

 private:
  // The reference: computed by compute_reference (the executor, on a unit of its choice), else the first
  // time it is needed (the injection checks, and `golden`, whose every tile is computed twice).
 public:
  const Reference& reference() const {
    no_cpu_tiles();
    std::lock_guard<std::mutex> lock(ref_mutex_);
    if (!ref_) {
      bool fired = false;
      ref_ = make_reference(nullptr, fired);
    }
    return *ref_;
  }

 private:
  std::unique_ptr<Reference> make_reference(const BitFlip* flip, bool& fired) const {
    auto r = std::make_unique<Reference>();
    std::unique_ptr<BitFlipInjector> inj;
    if (level_ == 12) {
      // Records every output of a free-running step 0: the L1 reference and, after it, L2's.
      class Record final : public Observer {
       public:
        explicit Record(Reference& r) : r_(r) {}
        void output(const Submodule&, const train_step_f32::Site&, std::span<float> out) override {
          r_.digests.push_back(span_digest(r_.outputs.size(), out));
          r_.outputs.emplace_back(out.begin(), out.end());
        }

       private:
        Reference& r_;
      } record(*r);
      if (flip) inj = std::make_unique<BitFlipInjector>(*flip, &record);
      TensorSet params = init_params(cfg_, seed_);
      OptState opt = init_opt_state(cfg_);
      for (int64_t s = 0; s < steps_; ++s) {  // train(), keeping the state each step starts from
        r->params.push_back(params);
        r->m.push_back(opt.m);
        r->v.push_back(opt.v);
        train_step(cfg_, params, opt, s, seed_, optimizer_, inj ? static_cast<Observer*>(inj.get()) : &record);
        r->grads.push_back(opt.grads);
      }
      r->params.push_back(std::move(params));
      if (r->outputs.size() != sites_.size() * static_cast<size_t>(steps_))
        throw std::logic_error("train_step_f32: the L1 layout is not the step's");
    } else {
      if (flip) inj = std::make_unique<BitFlipInjector>(*flip);
      TensorSet params = init_params(cfg_, seed_);
      OptState opt = init_opt_state(cfg_);
      for (int64_t s = 0; s < steps_; ++s) {  // train(), keeping each step's parameter digest
        r->losses.push_back(train_step(cfg_, params, opt, s, seed_, optimizer_, inj.get()));
        r->param_digests.push_back(params_digest(params));
        r->trajectory.push_back(flatten(params));
      }
    }
    fired = inj && inj->fired();
    return r;
  }

  uint64_t output_size(const Submodule& s, int output) const {
    if (level_ == 12) {
      const Reference& r = reference();
      for (size_t i = 0; i < sites_.size(); ++i)
        if (subs_[static_cast<size_t>(sites_[i].sub)].name == s.name && sites_[i].output == output)
          return r.outputs[i].size();
      return 0;
    }
    // Level 3 keeps no outputs: one step of the replay, observed, tells the size.
    class Size final : public Observer {
     public:
      Size(const std::string& n, int k) : n_(n), k_(k) {}
      void output(const Submodule& s, const train_step_f32::Site& at, std::span<float> out) override {
        if (s.name == n_ && at.output == k_) size = out.size();
      }
      uint64_t size = 0;

     private:
      const std::string& n_;
      int k_;
    } size(s.name, output);
    TensorSet params = init_params(cfg_, seed_);
    OptState opt = init_opt_state(cfg_);
    train_step(cfg_, params, opt, 0, seed_, optimizer_, &size);
    return size.size;
  }

  // L1's observer over the steps: adds every output's digest to its site's, and where it is not the
  // reference's, adds the comparison to its submodule's metrics and puts the reference in its place.
  class Sync final : public Observer {
   public:
    Sync(const TrainStepProblem& p, const Reference& r, std::vector<uint64_t>& digests, std::vector<MetricSum>& sums)
        : p_(p), r_(r), digests_(digests), sums_(sums) {}
    void begin_step() { k_ = 0; }
    void output(const Submodule& s, const train_step_f32::Site& at, std::span<float> out) override {
      const size_t n = p_.sites_.size(), at_ref = static_cast<size_t>(at.step) * n + k_;
      if (k_ >= n || p_.sites_[k_].sub != s.index || p_.sites_[k_].microbatch != at.microbatch ||
          p_.sites_[k_].output != at.output || at.step >= p_.steps_ || r_.outputs[at_ref].size() != out.size())
        throw std::logic_error("train_step_f32: the L1 layout is not the step's at " + s.name);
      const uint64_t d = span_digest(at_ref, out);
      digests_[k_] += d;
      if (d != r_.digests[at_ref]) {
        const std::vector<float>& ref = r_.outputs[at_ref];
        sums_[static_cast<size_t>(s.index)].add(compare(out.data(), ref.data(), ref.size()));
        std::copy(ref.begin(), ref.end(), out.begin());
      }
      ++k_;
    }
    size_t seen() const { return k_; }

   private:
    const TrainStepProblem& p_;
    const Reference& r_;
    std::vector<uint64_t>& digests_;
    std::vector<MetricSum>& sums_;
    size_t k_ = 0;
  };

  // Mode recorded: tensor cores compute the tiles, whose accumulation no CPU reproduces.
  void no_cpu_tiles() const {
    if (sp_.tensor_cores)
      throw std::logic_error("train_step_bf16 in mode recorded computes on tensor cores: no CPU computes its tiles");
  }

  // One replay into out; returns whether the flip (if any) was applied.
  bool replay(float* out, Path path, const BitFlip* flip) const {
    const Reference& ref = reference();
    Options options;
    options.path = path;
    bool fired = false;
    if (level_ == 12) {
      const size_t n = sites_.size(), nt = shapes_.tensors.size();
      std::vector<uint64_t> digests(n);
      std::vector<MetricSum> sums(subs_.size());
      {  // L1: computation sync, every step
        Sync sync(*this, ref, digests, sums);
        std::unique_ptr<BitFlipInjector> inj = flip ? std::make_unique<BitFlipInjector>(*flip, &sync) : nullptr;
        TensorSet params = init_params(cfg_, seed_);
        OptState opt = init_opt_state(cfg_);
        for (int64_t s = 0; s < steps_; ++s) {
          sync.begin_step();
          train_step(cfg_, params, opt, s, seed_, optimizer_, inj ? static_cast<Observer*>(inj.get()) : &sync, options);
          if (sync.seen() != n) throw std::logic_error("train_step_f32: L1 saw fewer outputs than its layout");
        }
        fired = inj && inj->fired();
      }
      for (size_t k = 0; k < n; ++k) put_digest(digests[k], out + DIGEST_SLOTS * k);
      const std::vector<uint64_t> elements = l1_elements(sp_, ref);
      for (size_t i = 0; i < subs_.size(); ++i) {
        const Metrics m = sums[i].metrics(elements[i] * static_cast<uint64_t>(steps_));
        out[sp_.l1_metrics_at() + 2 * i] = m.frequency;
        out[sp_.l1_metrics_at() + 2 * i + 1] = m.severity;
      }
      // L2: parameter sync, each step free-running from the reference's state before it.
      std::unique_ptr<BitFlipInjector> inj = flip ? std::make_unique<BitFlipInjector>(*flip) : nullptr;
      std::vector<uint64_t> grad_digests(nt), param_digests(nt);
      std::vector<MetricSum> grad_sums(nt), param_sums(nt);
      MetricSum model;
      for (int64_t s = 0; s < steps_; ++s) {
        const auto at = static_cast<size_t>(s);
        TensorSet params = ref.params[at];
        OptState opt{ref.m[at], ref.v[at], parameter_shapes(cfg_)};
        train_step(cfg_, params, opt, s, seed_, optimizer_, inj.get(), options);
        for (size_t i = 0; i < nt; ++i) {
          const uint64_t key = i + at * nt;
          grad_digests[i] += span_digest(key, opt.grads.tensors[i].data);
          param_digests[i] += span_digest(key, params.tensors[i].data);
        }
        const std::vector<TensorPair> g = pairs(opt.grads, ref.grads[at]), p = pairs(params, ref.params[at + 1]);
        compare_step(g.data(), static_cast<int>(nt), grad_sums.data(), &model);
        compare_step(p.data(), static_cast<int>(nt), param_sums.data(), nullptr);
      }
      fired = fired || (inj && inj->fired());
      float* o = out + sp_.l2_at();
      for (size_t i = 0; i < nt; ++i, o += ReplaySpec::L2_GRAD_SLOTS) {
        put_digest(grad_digests[i], o);
        const Metrics m = grad_sums[i].metrics(static_cast<uint64_t>(shapes_.tensors[i].size() * steps_));
        o[3] = m.frequency;
        o[4] = m.severity;
        o[5] = m.ratio;
      }
      *o++ = model.ratio;
      for (size_t i = 0; i < nt; ++i, o += ReplaySpec::L2_PARAM_SLOTS) {
        put_digest(param_digests[i], o);
        const Metrics m = param_sums[i].metrics(static_cast<uint64_t>(shapes_.tensors[i].size() * steps_));
        o[3] = m.frequency;
        o[4] = m.severity;
      }
      return fired;
    }
    // Level 3: free-running steps.
    std::unique_ptr<BitFlipInjector> inj = flip ? std::make_unique<BitFlipInjector>(*flip) : nullptr;
    TensorSet params = init_params(cfg_, seed_);
    OptState opt = init_opt_state(cfg_);
    bool spike = false;
    for (int64_t s = 0; s < steps_; ++s) {
      const float loss = train_step(cfg_, params, opt, s, seed_, optimizer_, inj.get(), options);
      float* o = out + L3_STEP_SLOTS * s;
      o[L3_LOSS] = loss;
      put_digest(params_digest(params), o + L3_DIGEST);
      o[L3_DISTANCE] = distance(params, ref.trajectory[static_cast<size_t>(s)]);
      const double r = ref.losses[static_cast<size_t>(s)];
      if (!(loss <= r * SPIKE && loss >= r / SPIKE)) spike = true;
    }
    out[L3_STEP_SLOTS * steps_] = out[L3_STEP_SLOTS * (steps_ - 1) + L3_DISTANCE];
    out[L3_STEP_SLOTS * steps_ + 1] = spike ? 1.0f : 0.0f;
    return inj && inj->fired();
  }

  ReplaySpec sp_;
  const Config& cfg_ = sp_.cfg;
  const int level_ = sp_.level;
  const int64_t steps_ = sp_.steps;
  const uint64_t replicas_ = sp_.replicas;
  const uint64_t seed_ = sp_.seed;
  const Optimizer& optimizer_ = sp_.optimizer;
  const std::vector<Submodule>& subs_ = sp_.subs;
  const TensorSet& shapes_ = sp_.shapes;
  const std::vector<L1Site>& sites_ = sp_.sites;  // level 12: the L1 sites in execution order
  const std::vector<std::string>& names_ = sp_.names;
  mutable std::mutex ref_mutex_;
  mutable std::unique_ptr<Reference> ref_;
};

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<TrainStepProblem>(c); }

}  // namespace

const Reference& problem_reference(const Problem& p) {
  const auto* r = dynamic_cast<const TrainStepProblem*>(&p);
  if (!r) throw std::logic_error("train_step_f32: the device replay needs the host's train_step_f32 problem");
  return r->reference();
}

namespace {

Family make_family(const char* id, const char* description, std::vector<Mode> modes) {
  Family f{id, description, std::move(modes), {"cpu", "cuda"}, {"preset", "level", "steps", "optimizer", "replicas"},
           validate_case, prepare};
  f.optional_shape_keys = {"heads", "tp", "engine"};
  f.replay = true;
  return f;
}

}  // namespace

Family family() {
  return make_family("train_step_f32",
                     "fp32 training-step replay of a small Llama-shaped model: per submodule with computation sync, "
                     "steps with parameter sync, free-running steps",
                     {Mode::exact});
}

Family bf16_family() {
  return make_family(BF16_FAMILY,
                     "the training-step replay in bf16 mixed precision (bf16 matmul operands, fp32 chains, master "
                     "weights and optimizer): per submodule, steps with parameter sync, free-running steps; "
                     "mode recorded: the matmuls on tensor cores, free-running steps",
                     {Mode::exact, Mode::recorded});
}

}  // namespace sdc::train_step_f32
