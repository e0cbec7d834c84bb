// train_step_f32 on CUDA: the training-step replay on a GPU. The step's sequence is train_step_f32_step.h's
// (the same StepRunner the CPU runs), with device memory and the kernels of train_step_f32_kernels.cuh as its
// operations (train_step_f32_device_ops.cuh); every tile is one complete replay by the GPU, laid out as
// train_step_f32_family.cpp says, so a healthy GPU's tiles equal the golden bit for bit. This file is the
// replay's host side: the scratch buffer's layout, the parameters' initialization, the steps of one replay
// at each level, and the slots they fill.
//
// Level 12 compares each submodule output with the reference's digest on the device and, when they differ,
// copies the reference's output over it before the step goes on (the computation sync); L2 starts each step
// from the reference's state before it (the parameter sync). The reference is the host's
// (train_step_f32_replay.h), computed and checked against the golden before the case runs (gpu_executor.cpp),
// and uploaded to device memory step by step (a step's L1 outputs before L1 runs it, its state and gradients
// before L2 does). The metrics and the level-3 distance are computed by one thread in the host's order
// (train_step_f32.h's compare, MetricSum), so a faulty GPU's report shows the numbers the CPU computes for
// the same tensors.
#include <algorithm>
#include <bit>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "src/core/inject.h"
#include "kernels/train_step_f32/train_step_f32_device_ops.cuh"
#include "kernels/train_step_f32/train_step_f32_replay.h"
#include "kernels/train_step_f32/train_step_f32_step.h"

namespace sdc::train_step_f32::SDC_TARGET {
namespace {

// Regions of the scratch buffer: fixed state, the reference's copies, then the arena.
class Layout {
 public:
  uint64_t take(uint64_t bytes) {
    const uint64_t at = size_;
    size_ += aligned(bytes);
    return at;
  }
  uint64_t size() const { return size_; }

 private:
  uint64_t size_ = 0;
};

class DeviceReplay final : public cuda::DeviceProblem {
 public:
  explicit DeviceReplay(const Case& c) : sp_(replay_spec(c)) {
    const auto& tensors = sp_.shapes.tensors;
    Layout l;
    for (auto* set : {&params_, &grads_, &m_, &v_, &sgrads_})
      for (const Tensor& t : tensors) set->push_back(l.take(static_cast<uint64_t>(t.size()) * 4));
    partials_ = l.take(static_cast<uint64_t>(sp_.cfg.micro_batches()) * 4);
    loss_ = l.take(4);
    tokens_ = l.take(static_cast<uint64_t>(sp_.cfg.batch * sp_.cfg.seq) * 4);
    targets_ = l.take(static_cast<uint64_t>(sp_.cfg.batch * sp_.cfg.seq) * 4);
    acc_ = l.take(8);
    differs_ = l.take(4);
    mismatches_ = l.take(4);
    spike_ = l.take(4);
    pairs_ = l.take(tensors.size() * sizeof(TensorPair));
    // The reference's copies: L1's outputs, L2's gradients and parameters (L3: the parameters after the step
    // being compared, uploaded before each step's distance); level 12's sums over the steps.
    if (sp_.level == 12) {  // L1's outputs follow fixed_: their sizes are the reference's (use_reference)
      for (const Tensor& t : tensors) ref_grads_.push_back(l.take(static_cast<uint64_t>(t.size()) * 4));
      grad_pairs_ = l.take(tensors.size() * sizeof(TensorPair));
      site_digests_ = l.take(sp_.sites.size() * 8);
      l1_sums_ = l.take(sp_.subs.size() * sizeof(MetricSum));
      l1_elements_ = l.take(sp_.subs.size() * 8);
      l2_digests_ = l.take(2 * tensors.size() * 8);
      l2_sums_ = l.take((2 * tensors.size() + 1) * sizeof(MetricSum));
    }
    for (const Tensor& t : tensors) ref_params_.push_back(l.take(static_cast<uint64_t>(t.size()) * 4));
    if (sp_.cublaslt) lt_workspace_ = l.take(LT_WORKSPACE_BYTES);
    fixed_ = l.size();
    // The arena's peak: one step measured with no memory.
    Arena measure(nullptr, 0);
    Ticker none_ticker;
    DeviceDev dev(sp_.cfg, measure, none_ticker, nullptr, false, nullptr, nullptr);
    std::set<MatmulShape> lt_shapes;  // cuBLASLt: the shapes to plan (the packed operands are the arena's)
    dev.tensor_cores = sp_.tensor_cores;
    if (sp_.cublaslt) dev.lt_shapes = &lt_shapes;
    std::vector<float*> none(tensors.size(), nullptr);
    std::vector<float> unused(static_cast<size_t>(sp_.cfg.micro_batches()) + 1);
    run_train_step(dev, sp_.cfg, sp_.shapes, sp_.subs, 0, StepTensors{none, none, none, none}, none, unused.data(),
                   unused.data() + sp_.cfg.micro_batches(), sp_.optimizer);
    arena_ = measure.peak();
    if (sp_.cublaslt) lt_ = std::make_unique<LtMatmuls>(lt_shapes);
  }

  uint64_t input_bytes(size_t) const override { return 4; }
  bool records_sm() const override { return false; }  // a replay runs on every SM of the GPU
  std::string why_no_thread_map() const override {
    return "a replayed step's output (its metrics and parameters) is the end of thousands of launches over every SM, "
           "not one block's stores";
  }
  std::string unsupported(int, int) const override { return lt_ ? lt_->refusal() : ""; }
  cuda::Engine engine() const override {
    if (lt_) return lt_->engine();
    if (sp_.tensor_cores)
      return {cuda::OWN_KERNELS,
              "train_step replay: bf16 matmul operands on mma.sync m16n8k16 (f32 accumulators, a warp per 16x8 "
              "fragment, k ascending in steps of 16), the rest simt fp32 (recorded)"};
    return {cuda::OWN_KERNELS, sp_.cfg.bf16 ? "train_step replay: simt, bf16 matmul operands, fp32 chains and trees, "
                                              "one thread per output, the specification's order (exact)"
                                            : "train_step replay: simt fp32, one thread per output, the "
                                              "specification's chains and trees (exact)"};
  }
  uint64_t scratch_bytes() const override { return fixed_ + l1_bytes_ + arena_; }
  void generate(size_t, void* dst, cudaStream_t stream) const override {
    launch("train_step_f32 fill_kernel", fill_kernel, 1, 1, stream, static_cast<float*>(dst), uint64_t{1}, 0.0f);
  }
  // Before scratch_bytes: L1's copies of the reference's outputs are part of the scratch memory.
  void use_reference(const Problem& host) override {
    ref_ = &problem_reference(host);
    l1_bytes_ = 0;
    if (sp_.level != 12) return;
    if (ref_->outputs.size() != sp_.sites.size() * static_cast<size_t>(sp_.steps))
      throw std::logic_error("train_step_f32: the L1 layout is not the step's");
    for (size_t k = 0; k < sp_.sites.size(); ++k) l1_bytes_ += aligned(ref_->outputs[k].size() * 4);
    for (size_t k = sp_.sites.size(); k < ref_->outputs.size(); ++k)  // every step's fits step 0's copies
      if (ref_->outputs[k].size() != ref_->outputs[k % sp_.sites.size()].size())
        throw std::logic_error("train_step_f32: a step's L1 outputs are not step 0's sizes");
    l1_elements_table_ = l1_elements(sp_, *ref_);
    for (uint64_t& e : l1_elements_table_) e *= static_cast<uint64_t>(sp_.steps);
  }
  // A drill's flip in replica 0 (in L1 and in L2, as on the CPU; level 3: once in the period).
  bool set_replay_fault(const Injection* inj) override {
    fault_.reset();
    if (inj)
      fault_ = std::make_unique<BitFlip>(replay_flip(*inj));
    return true;
  }
  bool replay_fault_fired() const override { return fired_; }
  // Level 12's L1 runs over a tensor-parallel group when the GPU executor links one: this GPU computes its rank's
  // partials and receives its peers' (synced by them, so a fault stays on the GPU that made it). L2 and level 3 run
  // free, and a free-running group would carry one GPU's fault into every peer's result: this GPU computes every
  // rank there, so that its verdict is its own.
  int tp_ranks() const override { return sp_.level == 12 ? static_cast<int>(sp_.cfg.tp) : 1; }
  void set_tp_link(cuda::TpLink* link) override { link_ = link; }
  void set_pacer(Pace pace, void* context) override {
    ticker_.pace = pace;
    ticker_.context = context;
  }

  void compute(const void* const*, float* out, uint32_t*, void* scratch, cudaStream_t stream) const override {
    if (!ref_ && !sp_.tensor_cores) throw std::logic_error("train_step_f32: the device replay has no reference");
    char* const base = static_cast<char*>(scratch);
    State st = state(base);
    upload(st, stream);
    if (sp_.level == 12 && sp_.steps == 1) {  // one step: every replica compares with the same copies
      upload_l1(st, 0, stream);
      upload_refs(st, 0, stream);
    }
    const uint32_t te = static_cast<uint32_t>(sp_.names.size());
    fired_ = false;
    if (link_) link_->staged.clear();  // the previous computation's host copies: it is done
    ticker_.queued = 0;
    ticker_.stopped = false;
    for (uint64_t r = 0; r < sp_.replicas; ++r)
      fired_ = replay(st, out + r * te, r == 0 ? fault_.get() : nullptr, stream) || fired_;
  }

 private:
  struct State {
    StepTensors t;
    std::vector<float*> sgrads, ref_grads, ref_params, ref_outputs;
    float *partials, *loss;
    int32_t *tokens, *targets;
    uint64_t* acc;
    void* lt_workspace;
    int *differs, *spike;
    unsigned* mismatches;
    TensorPair *pairs, *grad_pairs;
    uint64_t *site_digests, *l1_elements, *grad_digests, *param_digests;
    MetricSum *l1_sums, *grad_sums, *param_sums, *model;
    char* arena;
  };

  State state(char* base) const {
    State st;
    auto f = [base](uint64_t off) { return reinterpret_cast<float*>(base + off); };
    for (uint64_t o : params_) st.t.params.push_back(f(o));
    for (uint64_t o : grads_) st.t.grads.push_back(f(o));
    for (uint64_t o : m_) st.t.m.push_back(f(o));
    for (uint64_t o : v_) st.t.v.push_back(f(o));
    for (uint64_t o : sgrads_) st.sgrads.push_back(f(o));
    for (uint64_t o : ref_grads_) st.ref_grads.push_back(f(o));
    for (uint64_t o : ref_params_) st.ref_params.push_back(f(o));
    st.partials = f(partials_);
    st.loss = f(loss_);
    st.tokens = reinterpret_cast<int32_t*>(base + tokens_);
    st.targets = reinterpret_cast<int32_t*>(base + targets_);
    st.acc = reinterpret_cast<uint64_t*>(base + acc_);
    st.lt_workspace = sp_.cublaslt ? base + lt_workspace_ : nullptr;
    st.differs = reinterpret_cast<int*>(base + differs_);
    st.spike = reinterpret_cast<int*>(base + spike_);
    st.mismatches = reinterpret_cast<unsigned*>(base + mismatches_);
    st.pairs = reinterpret_cast<TensorPair*>(base + pairs_);
    const size_t nt = sp_.shapes.tensors.size();
    auto u64 = [base](uint64_t off) { return reinterpret_cast<uint64_t*>(base + off); };
    auto sums = [base](uint64_t off) { return reinterpret_cast<MetricSum*>(base + off); };
    st.grad_pairs = reinterpret_cast<TensorPair*>(base + grad_pairs_);
    st.site_digests = u64(site_digests_);
    st.l1_elements = u64(l1_elements_);
    st.grad_digests = u64(l2_digests_);
    st.param_digests = st.grad_digests + nt;
    st.l1_sums = sums(l1_sums_);
    st.grad_sums = sums(l2_sums_);
    st.param_sums = st.grad_sums + nt;
    st.model = st.param_sums + nt;
    uint64_t at = fixed_;
    if (sp_.level == 12)
      for (size_t k = 0; k < sp_.sites.size(); ++k) {
        st.ref_outputs.push_back(f(at));
        at += aligned(ref_->outputs[k].size() * 4);
      }
    st.arena = base + fixed_ + l1_bytes_;
    return st;
  }

  // The tables of the reference's comparisons into device memory (the copies read host memory that lives as
  // long as the problem; the tables' host side is kept until the next computation).
  void upload(const State& st, cudaStream_t s) const {
    const auto& ts = sp_.shapes.tensors;
    pair_table_.clear();
    for (size_t i = 0; i < ts.size(); ++i)
      pair_table_.push_back({st.t.params[i], st.ref_params[i], static_cast<uint64_t>(ts[i].size())});
    SDC_CUDA_CHECK(cudaMemcpyAsync(st.pairs, pair_table_.data(), pair_table_.size() * sizeof(TensorPair),
                                   cudaMemcpyHostToDevice, s));
    if (sp_.level != 12) return;
    grad_pair_table_.clear();
    for (size_t i = 0; i < ts.size(); ++i)
      grad_pair_table_.push_back({st.t.grads[i], st.ref_grads[i], static_cast<uint64_t>(ts[i].size())});
    SDC_CUDA_CHECK(cudaMemcpyAsync(st.grad_pairs, grad_pair_table_.data(), grad_pair_table_.size() * sizeof(TensorPair),
                                   cudaMemcpyHostToDevice, s));
    SDC_CUDA_CHECK(cudaMemcpyAsync(st.l1_elements, l1_elements_table_.data(), l1_elements_table_.size() * 8,
                                   cudaMemcpyHostToDevice, s));
  }

  static void put(float* dst, const std::vector<float>& src, cudaStream_t s) {
    SDC_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * 4, cudaMemcpyHostToDevice, s));
  }
  static void put(const std::vector<float*>& dst, const TensorSet& src, cudaStream_t s) {
    for (size_t i = 0; i < dst.size(); ++i) put(dst[i], src.tensors[i].data, s);
  }
  // Level 12, step k: its L1 outputs (before L1 runs it); the state it starts from, its gradients and the
  // parameters after it (before L2 does).
  void upload_l1(const State& st, int64_t k, cudaStream_t s) const {
    const size_t n = sp_.sites.size();
    for (size_t i = 0; i < n; ++i) put(st.ref_outputs[i], ref_->outputs[static_cast<size_t>(k) * n + i], s);
  }
  // Step 0 starts from the initial state, which the device generates (init); a later step from the reference's.
  void upload_l2(const State& st, int64_t k, cudaStream_t s) const {
    const auto at = static_cast<size_t>(k);
    if (k == 0) {
      init(st, s);
    } else {
      put(st.t.params, ref_->params[at], s);
      put(st.t.m, ref_->m[at], s);
      put(st.t.v, ref_->v[at], s);
    }
    if (sp_.steps > 1) upload_refs(st, k, s);  // one step: uploaded once per computation (compute)
  }
  // The reference's gradients of step k and its parameters after it, which L2 compares with.
  void upload_refs(const State& st, int64_t k, cudaStream_t s) const {
    const auto at = static_cast<size_t>(k);
    put(st.ref_grads, ref_->grads[at], s);
    put(st.ref_params, ref_->params[at + 1], s);
  }

  // The reference's parameters after step k into their copies (level 3's distance of that step).
  void upload_step(const State& st, int64_t k, cudaStream_t s) const {
    const std::vector<float>& p = ref_->trajectory[static_cast<size_t>(k)];
    const auto& tensors = sp_.shapes.tensors;
    size_t at = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto n = static_cast<size_t>(tensors[i].size());
      SDC_CUDA_CHECK(cudaMemcpyAsync(st.ref_params[i], p.data() + at, n * 4, cudaMemcpyHostToDevice, s));
      at += n;
    }
  }

  // Initial parameters and zero moments.
  void init(const State& st, cudaStream_t s) const {
    const auto& tensors = sp_.shapes.tensors;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      const auto n = static_cast<uint64_t>(t.size());
      ticker_.launch("train_step_f32 init_param_kernel", init_param_kernel, grid_for(n, THREADS), THREADS, s,
                     st.t.params[i], n, tensor_key(sp_.seed, static_cast<uint32_t>(i)),
                     t.name == "embed" ? 0 : init_scale_exponent(t.rows), !t.decay);
      for (float* p : {st.t.m[i], st.t.v[i]})
        ticker_.launch("train_step_f32 fill_kernel", fill_kernel, grid_for(n, THREADS), THREADS, s, p, n, 0.0f);
    }
  }

  // The matmuls' engine: the specification's chains, or in mode recorded mma.sync or cuBLASLt (engine 1).
  void engines(DeviceDev& dev, const State& st) const {
    dev.tensor_cores = sp_.tensor_cores;
    dev.lt = lt_.get();
    dev.lt_workspace = st.lt_workspace;
  }

  void step(const State& st, int64_t index, DeviceDev& dev, cudaStream_t s) const {
    ticker_.launch("train_step_f32 step_data_kernel", step_data_kernel, 1, 32, s,
                   tensor_key(sp_.seed, DATA_TENSOR + static_cast<uint32_t>(index)), sp_.cfg.batch, sp_.cfg.seq,
                   sp_.cfg.vocab, st.tokens, st.targets);
    run_train_step(dev, sp_.cfg, sp_.shapes, sp_.subs, index, st.t, st.sgrads, st.partials, st.loss, sp_.optimizer);
  }

  void count_mismatches(const State& st, const float* a, const float* b, int64_t n, cudaStream_t s) const {
    const auto count = static_cast<uint64_t>(n);
    ticker_.launch("train_step_f32 count_mismatch_kernel", count_mismatch_kernel, grid_for(count, THREADS), THREADS, s,
                   a, b, count, st.mismatches);
  }
  // Level 2's comparisons of one step: every tensor a[i] against b[i], added to sums (and the whole model's to
  // model when not null) where any element differs.
  void compare_tensors(const State& st, const std::vector<float*>& a, const std::vector<float*>& b,
                       const TensorPair* table, MetricSum* sums, MetricSum* model, cudaStream_t s) const {
    const auto& tensors = sp_.shapes.tensors;
    ticker_.launch("train_step_f32 zero_count_kernel", zero_count_kernel, 1, 1, s, st.mismatches);
    for (size_t i = 0; i < tensors.size(); ++i) count_mismatches(st, a[i], b[i], tensors[i].size(), s);
    ticker_.launch("train_step_f32 compare_step_kernel", compare_step_kernel, 1, 1, s, table,
                   static_cast<int>(tensors.size()), static_cast<const unsigned*>(st.mismatches), sums, model);
  }
  template <class T>
  void zero(T* x, uint64_t n, cudaStream_t s) const {
    if constexpr (std::is_same_v<T, MetricSum>)
      ticker_.launch("train_step_f32 zero_sums_kernel", zero_sums_kernel, grid_for(n, THREADS), THREADS, s, x, n);
    else
      ticker_.launch("train_step_f32 zero_u64s_kernel", zero_u64s_kernel, grid_for(n, THREADS), THREADS, s, x, n);
  }

  // Level 12: L1 over the steps with computation sync, then L2 with parameter sync.
  bool replay_l12(const State& st, float* out, const BitFlip* flip, cudaStream_t s) const {
    const auto& tensors = sp_.shapes.tensors;
    const size_t n = sp_.sites.size(), nt = tensors.size();
    bool fired = false;
    zero(st.site_digests, n, s);
    zero(st.l1_sums, sp_.subs.size(), s);
    {  // L1: computation sync
      Arena arena(st.arena, arena_);
      DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
      engines(dev, st);
      Sync sync{ref_, &st.ref_outputs, &sp_.sites, st.site_digests, st.l1_sums, st.acc, st.differs, 0};
      dev.sync = &sync;
      dev.flip = flip;
      dev.link = link_;
      init(st, s);
      for (int64_t k = 0; k < sp_.steps; ++k) {
        if (sp_.steps > 1) upload_l1(st, k, s);  // one step: uploaded once per computation (compute)
        sync.k = 0;
        step(st, k, dev, s);
        if (sync.k != n) throw std::logic_error("train_step_f32: L1 saw fewer outputs than its layout");
      }
      fired = dev.flipped;
    }
    launch_n("train_step_f32 put_digests_kernel", put_digests_kernel, n, s,
             static_cast<const uint64_t*>(st.site_digests), uint64_t{n}, out);
    launch_n("train_step_f32 l1_metric_slots_kernel", l1_metric_slots_kernel, sp_.subs.size(), s,
             static_cast<const MetricSum*>(st.l1_sums), static_cast<const uint64_t*>(st.l1_elements),
             uint64_t{sp_.subs.size()}, out + sp_.l1_metrics_at());
    // L2: parameter sync, each step free-running from the reference's state before it.
    zero(st.grad_digests, 2 * nt, s);
    zero(st.grad_sums, 2 * nt + 1, s);
    Arena arena(st.arena, arena_);
    DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
    engines(dev, st);
    dev.flip = flip;
    for (int64_t k = 0; k < sp_.steps; ++k) {
      upload_l2(st, k, s);
      step(st, k, dev, s);
      for (size_t i = 0; i < nt; ++i) {
        const auto size = static_cast<uint64_t>(tensors[i].size()), key = i + static_cast<uint64_t>(k) * nt;
        dev.digest(st.t.grads[i], size, key, st.grad_digests + i);
        dev.digest(st.t.params[i], size, key, st.param_digests + i);
      }
      compare_tensors(st, st.t.grads, st.ref_grads, st.grad_pairs, st.grad_sums, st.model, s);
      compare_tensors(st, st.t.params, st.ref_params, st.pairs, st.param_sums, nullptr, s);
    }
    fired = fired || dev.flipped;
    // Per tensor its digest and metrics (the gradients' with the ratio), the model's ratio between the two blocks.
    auto tensor_slots = [&](const uint64_t* digests, const MetricSum* sums, bool ratio, uint64_t stride, float* o) {
      for (size_t i = 0; i < nt; ++i, o += stride) {
        const auto elements = static_cast<uint64_t>(tensors[i].size() * sp_.steps);
        ticker_.launch("train_step_f32 put_digest_kernel", put_digest_kernel, 1, 1, s, digests + i, o);
        ticker_.launch("train_step_f32 metric_slots_kernel", metric_slots_kernel, 1, 1, s, sums + i, elements, ratio,
                       o + 3);
      }
    };
    tensor_slots(st.grad_digests, st.grad_sums, true, ReplaySpec::L2_GRAD_SLOTS, out + sp_.l2_at());
    ticker_.launch("train_step_f32 model_ratio_kernel", model_ratio_kernel, 1, 1, s,
                   static_cast<const MetricSum*>(st.model), out + sp_.model_ratio_at());
    tensor_slots(st.param_digests, st.param_sums, false, ReplaySpec::L2_PARAM_SLOTS, out + sp_.l2_params_at());
    return fired;
  }
  template <class Kernel, class... Args>
  void launch_n(const char* name, Kernel k, uint64_t n, cudaStream_t s, Args... args) const {
    ticker_.launch(name, k, grid_for(n, THREADS), THREADS, s, args...);
  }

  // One replay into out; returns whether the flip (if any) was applied.
  bool replay(const State& st, float* out, const BitFlip* flip, cudaStream_t s) const {
    if (sp_.level == 12) return replay_l12(st, out, flip, s);
    // Level 3: free-running steps.
    const auto& tensors = sp_.shapes.tensors;
    Arena arena(st.arena, arena_);
    DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
    engines(dev, st);
    dev.flip = flip;
    init(st, s);
    ticker_.launch("train_step_f32 zero_int_kernel", zero_int_kernel, 1, 1, s, st.spike);
    for (int64_t k = 0; k < sp_.steps; ++k) {
      step(st, k, dev, s);
      float* o = out + (sp_.tensor_cores ? L3_TC_STEP_SLOTS : L3_STEP_SLOTS) * k;
      // The loss; with a host reference, its spike test too (on the tensor cores: the loss alone).
      const double ref_loss = sp_.tensor_cores ? 0.0 : static_cast<double>(ref_->losses[static_cast<size_t>(k)]);
      ticker_.launch("train_step_f32 loss_slot_kernel", loss_slot_kernel, 1, 1, s, static_cast<const float*>(st.loss),
                     ref_loss, o + L3_LOSS, sp_.tensor_cores ? nullptr : st.spike);
      ticker_.launch("train_step_f32 zero_u64_kernel", zero_u64_kernel, 1, 1, s, st.acc);
      for (size_t i = 0; i < tensors.size(); ++i)
        dev.digest(st.t.params[i], static_cast<uint64_t>(tensors[i].size()), i, st.acc);
      ticker_.launch("train_step_f32 put_digest_kernel", put_digest_kernel, 1, 1, s,
                     static_cast<const uint64_t*>(st.acc), o + L3_DIGEST);
      if (sp_.tensor_cores) continue;  // no host reference to measure the distance from
      // The step's distance from the reference's parameters after the same step (the last one's stays for
      // the final slots).
      upload_step(st, k, s);
      ticker_.launch("train_step_f32 zero_count_kernel", zero_count_kernel, 1, 1, s, st.mismatches);
      for (size_t i = 0; i < tensors.size(); ++i)
        count_mismatches(st, st.t.params[i], st.ref_params[i], tensors[i].size(), s);
      ticker_.launch("train_step_f32 step_distance_kernel", step_distance_kernel, 1, 1, s,
                     static_cast<const TensorPair*>(st.pairs), static_cast<int>(tensors.size()),
                     static_cast<const unsigned*>(st.mismatches), o + L3_DISTANCE);
    }
    if (sp_.tensor_cores) return dev.flipped;
    ticker_.launch("train_step_f32 distance_kernel", distance_kernel, 1, 1, s, static_cast<const TensorPair*>(st.pairs),
                   static_cast<int>(tensors.size()), static_cast<const unsigned*>(st.mismatches),
                   static_cast<const int*>(st.spike), out + L3_STEP_SLOTS * sp_.steps);
    return dev.flipped;
  }

  ReplaySpec sp_;
  std::vector<uint64_t> params_, grads_, m_, v_, sgrads_, ref_grads_, ref_params_;
  uint64_t partials_ = 0, loss_ = 0, tokens_ = 0, targets_ = 0, acc_ = 0, differs_ = 0, mismatches_ = 0, spike_ = 0,
           pairs_ = 0, grad_pairs_ = 0, site_digests_ = 0, l1_sums_ = 0, l1_elements_ = 0, l2_digests_ = 0,
           l2_sums_ = 0, lt_workspace_ = 0;
  uint64_t fixed_ = 0, l1_bytes_ = 0, arena_ = 0;
  const Reference* ref_ = nullptr;
  std::unique_ptr<BitFlip> fault_;
  std::unique_ptr<LtMatmuls> lt_;  // engine 1: the plans of the step's matmuls on cuBLASLt
  mutable bool fired_ = false;
  cuda::TpLink* link_ = nullptr;
  mutable Ticker ticker_;
  mutable std::vector<TensorPair> pair_table_, grad_pair_table_;  // the host side of the tables (upload)
  std::vector<uint64_t> l1_elements_table_;  // per submodule, its L1 outputs' elements over the steps
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<DeviceReplay>(c); }

}  // namespace sdc::train_step_f32::SDC_TARGET
