// The model of train_step_f32 on the CPU (train_step_f32_model.h).
#include "train_step_f32_model.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace sdc::train_step_f32 {

Tensor& TensorSet::operator[](std::string_view name) {
  return const_cast<Tensor&>(static_cast<const TensorSet&>(*this)[name]);
}

const Tensor& TensorSet::operator[](std::string_view name) const {
  const Tensor* t = find(name);
  if (!t) throw std::out_of_range("train_step_f32: no tensor " + std::string(name));
  return *t;
}

const Tensor* TensorSet::find(std::string_view name) const {
  for (const Tensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void check_config(const Config& c) {
  const bool ok = c.vocab > 0 && c.dim > 0 && c.heads > 0 && c.layers > 0 && c.ffn > 0 && is_pow2(c.seq) &&
                  is_pow2(c.batch) && is_pow2(c.micro) && c.micro <= c.batch && c.dim % c.heads == 0 &&
                  c.head_dim() % 2 == 0 && c.seq <= 8192 && c.vocab <= (int64_t{1} << 24);
  if (!ok) throw std::invalid_argument("train_step_f32: sizes violate the specification's requirements");
}

TensorSet parameter_shapes(const Config& c) {
  TensorSet s;
  auto add = [&s](std::string name, int64_t rows, int64_t cols, bool decay) {
    s.tensors.push_back({std::move(name), rows, cols, decay, std::vector<float>(static_cast<size_t>(rows * cols))});
  };
  add("embed", c.vocab, c.dim, true);
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layer" + std::to_string(l);
    add(p + ".attn_norm", 1, c.dim, false);
    for (const char* w : {".attn.wq", ".attn.wk", ".attn.wv", ".attn.wo"}) add(p + w, c.dim, c.dim, true);
    add(p + ".mlp_norm", 1, c.dim, false);
    add(p + ".mlp.gate", c.dim, c.ffn, true);
    add(p + ".mlp.up", c.dim, c.ffn, true);
    add(p + ".mlp.down", c.ffn, c.dim, true);
  }
  add("final_norm", 1, c.dim, false);
  add("lm_head", c.dim, c.vocab, true);
  return s;
}

TensorSet init_params(const Config& cfg, uint64_t seed) {
  check_config(cfg);
  TensorSet s = parameter_shapes(cfg);
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    Tensor& t = s.tensors[i];
    if (!t.decay) {  // norm weights
      std::fill(t.data.begin(), t.data.end(), 1.0f);
      continue;
    }
    const float scale = pow2f(t.name == "embed" ? 0 : -init_scale_exponent(t.rows));
    const uint64_t key = tensor_key(seed, static_cast<uint32_t>(i));
    for (int64_t e = 0; e < t.size(); ++e)
      t.data[static_cast<size_t>(e)] = uniform_value(element_hash(key, static_cast<uint64_t>(e))) * scale;
  }
  return s;
}

OptState init_opt_state(const Config& cfg) {
  return {parameter_shapes(cfg), parameter_shapes(cfg), parameter_shapes(cfg)};
}

Batch step_data(const Config& c, uint64_t seed, int64_t step) {
  if (step < 0 || step > DATA_STEP_LIMIT) throw std::invalid_argument("train_step_f32: step out of range");
  const uint64_t key = tensor_key(seed, DATA_TENSOR + static_cast<uint32_t>(step));
  Batch b;
  b.tokens.resize(static_cast<size_t>(c.batch * c.seq));
  b.targets.resize(b.tokens.size());
  const auto v = static_cast<uint64_t>(c.vocab);
  for (int64_t q = 0; q < c.batch; ++q) {
    const auto base = static_cast<uint64_t>(q * (c.seq + 1));
    uint64_t x = element_hash(key, base) % v;
    for (int64_t p = 0; p < c.seq; ++p) {
      b.tokens[static_cast<size_t>(q * c.seq + p)] = static_cast<int32_t>(x);
      x = (x + 1 + element_hash(key, base + static_cast<uint64_t>(p) + 1) % 4) % v;
      b.targets[static_cast<size_t>(q * c.seq + p)] = static_cast<int32_t>(x);
    }
  }
  return b;
}

std::vector<Submodule> submodules(const Config& c) {
  std::vector<Submodule> s;
  auto add = [&s](std::string name, Pass pass, int layer, std::vector<std::string> outputs) {
    s.push_back({std::move(name), static_cast<int>(s.size()), pass, layer, std::move(outputs)});
  };
  const int layers = static_cast<int>(c.layers);
  auto lp = [](int l) { return "layer" + std::to_string(l) + "."; };
  add("embed.forward", Pass::forward, -1, {"y"});
  for (int l = 0; l < layers; ++l) {
    const std::string p = lp(l);
    add(p + "attn_norm.forward", Pass::forward, l, {"y"});
    for (const char* w :
         {"attn.wq", "attn.wk", "attn.wv", "attn.rope_q", "attn.rope_k", "attn.core", "attn.wo", "attn.residual"})
      add(p + w + ".forward", Pass::forward, l, {"y"});
    add(p + "mlp_norm.forward", Pass::forward, l, {"y"});
    for (const char* w : {"mlp.gate", "mlp.up", "mlp.swiglu", "mlp.down", "mlp.residual"})
      add(p + w + ".forward", Pass::forward, l, {"y"});
  }
  add("final_norm.forward", Pass::forward, -1, {"y"});
  add("lm_head.forward", Pass::forward, -1, {"y"});
  add("loss.forward", Pass::forward, -1, {"token_loss", "sum"});
  add("loss.backward", Pass::backward, -1, {"dx"});
  add("lm_head.backward", Pass::backward, -1, {"dx", "dw"});
  add("final_norm.backward", Pass::backward, -1, {"dx", "dw"});
  for (int l = layers - 1; l >= 0; --l) {
    const std::string p = lp(l);
    add(p + "mlp.down.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "mlp.swiglu.backward", Pass::backward, l, {"dgate", "dup"});
    add(p + "mlp.up.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "mlp.gate.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "mlp_norm.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "mlp.residual.backward", Pass::backward, l, {"dx"});
    add(p + "attn.wo.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "attn.core.backward", Pass::backward, l, {"dq", "dk", "dv"});
    add(p + "attn.rope_q.backward", Pass::backward, l, {"dx"});
    add(p + "attn.rope_k.backward", Pass::backward, l, {"dx"});
    for (const char* w : {"attn.wv", "attn.wk", "attn.wq"}) add(p + w + ".backward", Pass::backward, l, {"dx", "dw"});
    add(p + "attn_norm.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "attn.residual.backward", Pass::backward, l, {"dx"});
  }
  add("embed.backward", Pass::backward, -1, {"dw"});
  const TensorSet shapes = parameter_shapes(c);
  auto layer_of = [](const std::string& n) { return n.rfind("layer", 0) == 0 ? std::stoi(n.substr(5)) : -1; };
  for (const Tensor& t : shapes.tensors) add(t.name + ".accumulate", Pass::accumulate, layer_of(t.name), {"grad"});
  add("loss.step", Pass::loss, -1, {"loss"});
  for (const Tensor& t : shapes.tensors)
    add(t.name + ".optimizer", Pass::optimizer, layer_of(t.name), {"param", "m", "v"});
  return s;
}

void BitFlipInjector::output(const Submodule& s, const Site& at, std::span<float> out) {
  if (!fired_ && s.name == flip_.submodule && at.output == flip_.output && at.step == flip_.step &&
      at.microbatch == flip_.microbatch && flip_.element >= 0 && flip_.element < static_cast<int64_t>(out.size())) {
    float& x = out[static_cast<size_t>(flip_.element)];
    x = bits_float(float_bits(x) ^ (1u << (flip_.bit & 31)));
    fired_ = true;
  }
  if (next_) next_->output(s, at, out);
}

Path Options::path_for(std::string_view submodule) const {
  const auto it = per_submodule.find(submodule);
  return it == per_submodule.end() ? path : it->second;
}

namespace {

using Buf = std::vector<float>;

Buf buf(int64_t n) { return Buf(static_cast<size_t>(n)); }

// The forward activations of one layer that its backward needs.
struct LayerActs {
  Buf n1, inv1, qr, kr, v, a, h, n2, inv2, g, u, z;
};

class Runner {
 public:
  Runner(const Config& cfg, const TensorSet& params, int64_t step, uint64_t seed, Observer* obs, const Options& opts)
      : c_((check_config(cfg), cfg)),
        p_(params),
        step_(step),
        obs_(obs),
        opts_(opts),
        data_(step_data(cfg, seed, step)),
        rope_(rope_tables(cfg.seq, cfg.head_dim())),
        subs_(submodules(cfg)) {
    for (const Submodule& s : subs_) index_.emplace(s.name, s.index);
  }

  // Forward and backward of micro-batch mb into g (shaped like the parameters); returns its loss sum.
  float microbatch(int mb, TensorSet& g);
  void accumulate(int mb, TensorSet& acc, const TensorSet& g);
  float step_loss(std::span<float> partials);
  void optimize(TensorSet& params, OptState& opt, const Optimizer& o);

 private:
  const Submodule& sub(const std::string& name) const { return subs_[static_cast<size_t>(index_.at(name))]; }
  Path path(const std::string& name) const { return opts_.path_for(name); }
  void emit(const std::string& name, int mb, int out, float* data, int64_t n) {
    if (obs_) obs_->output(sub(name), Site{step_, mb, out}, std::span<float>(data, static_cast<size_t>(n)));
  }
  void emit(const std::string& name, int mb, int out, Buf& b) { emit(name, mb, out, b.data(), std::ssize(b)); }
  const float* w(const std::string& name) const { return p_[name].data.data(); }

  // Linear backward: dx then dw, both reported.
  void linear_back(const std::string& m, int mb, const Buf& x, const Buf& dy, int64_t k, int64_t n, Buf& dx,
                   TensorSet& g) {
    const std::string name = m + ".backward";
    const Path pa = path(name);
    const int64_t t = c_.tokens();
    if (opts_.matmuls)
      opts_.matmuls->dx(dy.data(), w(m), t, k, n, dx.data());
    else
      ops::matmul_dx(pa, dy.data(), w(m), t, k, n, dx.data(), ws_);
    emit(name, mb, 0, dx);
    Buf& dw = g[m].data;
    if (opts_.matmuls)
      opts_.matmuls->dw(x.data(), dy.data(), t, k, n, dw.data());
    else
      ops::matmul_dw(pa, x.data(), dy.data(), t, k, n, dw.data(), ws_);
    emit(name, mb, 1, dw);
  }
  void linear(const std::string& m, int mb, const Buf& x, int64_t k, int64_t n, Buf& y) {
    const std::string name = m + ".forward";
    if (opts_.matmuls)
      opts_.matmuls->y(x.data(), w(m), c_.tokens(), k, n, y.data());
    else
      ops::matmul(path(name), x.data(), w(m), c_.tokens(), k, n, y.data(), ws_);
    emit(name, mb, 0, y);
  }

  const Config& c_;
  const TensorSet& p_;
  int64_t step_;
  Observer* obs_;
  const Options& opts_;
  Batch data_;
  RopeTables rope_;
  std::vector<Submodule> subs_;
  std::unordered_map<std::string, int> index_;
  Workspace ws_;
};

float Runner::microbatch(int mb, TensorSet& g) {
  const int64_t t = c_.tokens(), d = c_.dim, f = c_.ffn, vocab = c_.vocab, hd = c_.head_dim();
  const int64_t nl = c_.layers;
  const int32_t* tokens = data_.tokens.data() + mb * t;
  const int32_t* targets = data_.targets.data() + mb * t;
  std::vector<Buf> xs(static_cast<size_t>(nl + 1), buf(t * d));
  std::vector<LayerActs> acts(static_cast<size_t>(nl));
  Buf q = buf(t * d), k = buf(t * d), o = buf(t * d), y = buf(t * d);

  ops::embedding(path("embed.forward"), w("embed"), tokens, t, d, xs[0].data(), ws_);
  emit("embed.forward", mb, 0, xs[0]);
  for (int64_t l = 0; l < nl; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    LayerActs& a = acts[static_cast<size_t>(l)];
    a = {buf(t * d), buf(t),     buf(t * d), buf(t * d), buf(t * d), buf(t * d),
         buf(t * d), buf(t * d), buf(t),     buf(t * f), buf(t * f), buf(t * f)};
    Buf& x = xs[static_cast<size_t>(l)];
    ops::rmsnorm(path(p + "attn_norm.forward"), x.data(), w(p + "attn_norm"), t, d, a.n1.data(), a.inv1.data(), ws_);
    emit(p + "attn_norm.forward", mb, 0, a.n1);
    linear(p + "attn.wq", mb, a.n1, d, d, q);
    linear(p + "attn.wk", mb, a.n1, d, d, k);
    linear(p + "attn.wv", mb, a.n1, d, d, a.v);
    ops::rope(path(p + "attn.rope_q.forward"), q.data(), t, c_.heads, rope_, a.qr.data(), ws_);
    emit(p + "attn.rope_q.forward", mb, 0, a.qr);
    ops::rope(path(p + "attn.rope_k.forward"), k.data(), t, c_.heads, rope_, a.kr.data(), ws_);
    emit(p + "attn.rope_k.forward", mb, 0, a.kr);
    ops::attention(path(p + "attn.core.forward"), a.qr.data(), a.kr.data(), a.v.data(), c_.micro, c_.seq, c_.heads, hd,
                   a.a.data(), ws_);
    emit(p + "attn.core.forward", mb, 0, a.a);
    linear(p + "attn.wo", mb, a.a, d, d, o);
    ops::add(path(p + "attn.residual.forward"), x.data(), o.data(), t * d, a.h.data(), ws_);
    emit(p + "attn.residual.forward", mb, 0, a.h);
    ops::rmsnorm(path(p + "mlp_norm.forward"), a.h.data(), w(p + "mlp_norm"), t, d, a.n2.data(), a.inv2.data(), ws_);
    emit(p + "mlp_norm.forward", mb, 0, a.n2);
    linear(p + "mlp.gate", mb, a.n2, d, f, a.g);
    linear(p + "mlp.up", mb, a.n2, d, f, a.u);
    ops::swiglu(path(p + "mlp.swiglu.forward"), a.g.data(), a.u.data(), t * f, a.z.data(), ws_);
    emit(p + "mlp.swiglu.forward", mb, 0, a.z);
    linear(p + "mlp.down", mb, a.z, f, d, y);
    Buf& xn = xs[static_cast<size_t>(l + 1)];
    ops::add(path(p + "mlp.residual.forward"), a.h.data(), y.data(), t * d, xn.data(), ws_);
    emit(p + "mlp.residual.forward", mb, 0, xn);
  }
  Buf nf = buf(t * d), invf = buf(t), logits = buf(t * vocab), losses = buf(t);
  const Buf& xl = xs[static_cast<size_t>(nl)];
  ops::rmsnorm(path("final_norm.forward"), xl.data(), w("final_norm"), t, d, nf.data(), invf.data(), ws_);
  emit("final_norm.forward", mb, 0, nf);
  linear("lm_head", mb, nf, d, vocab, logits);
  const Path lp = path("loss.forward");
  ops::cross_entropy(lp, logits.data(), targets, t, vocab, losses.data(), ws_);
  emit("loss.forward", mb, 0, losses);
  float loss_sum = ops::sum(lp, losses.data(), t, ws_);
  emit("loss.forward", mb, 1, &loss_sum, 1);

  // Backward.
  Buf dlogits = buf(t * vocab);
  const float scale = pow2f(-log2_exact(c_.batch * c_.seq));  // the mean over the step's B * S tokens
  ops::cross_entropy_back(path("loss.backward"), logits.data(), targets, t, vocab, scale, dlogits.data(), ws_);
  emit("loss.backward", mb, 0, dlogits);
  Buf dx = buf(t * d), dtmp = buf(t * d), dh = buf(t * d);
  linear_back("lm_head", mb, nf, dlogits, d, vocab, dtmp, g);
  ops::rmsnorm_back(path("final_norm.backward"), xl.data(), w("final_norm"), invf.data(), dtmp.data(), t, d, dx.data(),
                    g["final_norm"].data.data(), ws_);
  emit("final_norm.backward", mb, 0, dx);
  emit("final_norm.backward", mb, 1, g["final_norm"].data);

  Buf dz = buf(t * f), dg = buf(t * f), du = buf(t * f);
  Buf d1 = buf(t * d), d2 = buf(t * d), d3 = buf(t * d), dq = buf(t * d), dk = buf(t * d), dv = buf(t * d);
  for (int64_t l = nl - 1; l >= 0; --l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    LayerActs& a = acts[static_cast<size_t>(l)];
    // MLP: dx is the gradient of the layer's output.
    linear_back(p + "mlp.down", mb, a.z, dx, f, d, dz, g);
    ops::swiglu_back(path(p + "mlp.swiglu.backward"), a.g.data(), a.u.data(), dz.data(), t * f, dg.data(), du.data(),
                     ws_);
    emit(p + "mlp.swiglu.backward", mb, 0, dg);
    emit(p + "mlp.swiglu.backward", mb, 1, du);
    linear_back(p + "mlp.up", mb, a.n2, du, d, f, d1, g);
    linear_back(p + "mlp.gate", mb, a.n2, dg, d, f, d2, g);
    {
      const std::string n = p + "mlp_norm.backward";
      const Path pa = path(n);
      ops::add(pa, d2.data(), d1.data(), t * d, d3.data(), ws_);  // gate + up
      ops::rmsnorm_back(pa, a.h.data(), w(p + "mlp_norm"), a.inv2.data(), d3.data(), t, d, d1.data(),
                        g[p + "mlp_norm"].data.data(), ws_);
      emit(n, mb, 0, d1);
      emit(n, mb, 1, g[p + "mlp_norm"].data);
    }
    ops::add(path(p + "mlp.residual.backward"), dx.data(), d1.data(), t * d, dh.data(), ws_);
    emit(p + "mlp.residual.backward", mb, 0, dh);
    // Attention.
    linear_back(p + "attn.wo", mb, a.a, dh, d, d, d1, g);
    {
      const std::string n = p + "attn.core.backward";
      ops::attention_back(path(n), a.qr.data(), a.kr.data(), a.v.data(), d1.data(), c_.micro, c_.seq, c_.heads, hd,
                          dq.data(), dk.data(), dv.data(), ws_);
      emit(n, mb, 0, dq);
      emit(n, mb, 1, dk);
      emit(n, mb, 2, dv);
    }
    ops::rope_back(path(p + "attn.rope_q.backward"), dq.data(), t, c_.heads, rope_, q.data(), ws_);
    emit(p + "attn.rope_q.backward", mb, 0, q);
    ops::rope_back(path(p + "attn.rope_k.backward"), dk.data(), t, c_.heads, rope_, k.data(), ws_);
    emit(p + "attn.rope_k.backward", mb, 0, k);
    linear_back(p + "attn.wv", mb, a.n1, dv, d, d, d1, g);
    linear_back(p + "attn.wk", mb, a.n1, k, d, d, d2, g);
    linear_back(p + "attn.wq", mb, a.n1, q, d, d, d3, g);
    {
      const std::string n = p + "attn_norm.backward";
      const Path pa = path(n);
      ops::add(pa, d3.data(), d2.data(), t * d, d3.data(), ws_);  // (dn_q + dn_k)
      ops::add(pa, d3.data(), d1.data(), t * d, d3.data(), ws_);  // + dn_v
      ops::rmsnorm_back(pa, xs[static_cast<size_t>(l)].data(), w(p + "attn_norm"), a.inv1.data(), d3.data(), t, d,
                        d1.data(), g[p + "attn_norm"].data.data(), ws_);
      emit(n, mb, 0, d1);
      emit(n, mb, 1, g[p + "attn_norm"].data);
    }
    ops::add(path(p + "attn.residual.backward"), dh.data(), d1.data(), t * d, dx.data(), ws_);
    emit(p + "attn.residual.backward", mb, 0, dx);
  }
  ops::embedding_back(path("embed.backward"), dx.data(), tokens, t, vocab, d, g["embed"].data.data(), ws_);
  emit("embed.backward", mb, 0, g["embed"].data);
  return loss_sum;
}

void Runner::accumulate(int mb, TensorSet& acc, const TensorSet& g) {
  for (size_t i = 0; i < acc.tensors.size(); ++i) {
    Tensor& a = acc.tensors[i];
    const std::string n = a.name + ".accumulate";
    ops::add(path(n), a.data.data(), g.tensors[i].data.data(), a.size(), a.data.data(), ws_);
    emit(n, mb, 0, a.data);
  }
}

float Runner::step_loss(std::span<float> partials) {
  float loss = ops::sum(path("loss.step"), partials.data(), std::ssize(partials), ws_);
  loss = loss * pow2f(-log2_exact(c_.batch * c_.seq));
  emit("loss.step", -1, 0, &loss, 1);
  return loss;
}

void Runner::optimize(TensorSet& params, OptState& opt, const Optimizer& o) {
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    Tensor& p = params.tensors[i];
    const std::string n = p.name + ".optimizer";
    const OptScalars s = opt_scalars(o.lr, o.beta1, o.beta2, o.eps, p.decay ? o.weight_decay : 0.0f, step_ + 1);
    float* m = opt.m.tensors[i].data.data();
    float* v = opt.v.tensors[i].data.data();
    const float* g = opt.grads.tensors[i].data.data();
    if (o.kind == OptimizerKind::adamw)
      ops::adamw(path(n), p.data.data(), g, m, v, p.size(), s, ws_);
    else
      ops::lamb(path(n), p.data.data(), g, m, v, p.size(), s, ws_);
    emit(n, -1, 0, p.data);
    emit(n, -1, 1, opt.m.tensors[i].data);
    emit(n, -1, 2, opt.v.tensors[i].data);
  }
}

}  // namespace

float train_step(const Config& cfg, TensorSet& params, OptState& opt, int64_t step, uint64_t seed,
                 const Optimizer& optimizer, Observer* observer, const Options& options) {
  Runner r(cfg, params, step, seed, observer, options);
  const auto nmb = static_cast<int>(cfg.micro_batches());
  std::vector<float> partials(static_cast<size_t>(nmb));
  TensorSet g = parameter_shapes(cfg);
  for (int mb = 0; mb < nmb; ++mb) {
    if (mb == 0) {
      // The first micro-batch's gradient is the accumulator's initial value (no +0 + g_0).
      partials[0] = r.microbatch(0, opt.grads);
    } else {
      partials[static_cast<size_t>(mb)] = r.microbatch(mb, g);
      r.accumulate(mb, opt.grads, g);
    }
  }
  const float loss = r.step_loss(partials);
  r.optimize(params, opt, optimizer);
  return loss;
}

std::vector<float> train(const Config& cfg, int64_t steps, uint64_t seed, const Optimizer& optimizer,
                         Observer* observer, const Options& options, TensorSet* params_out) {
  TensorSet params = init_params(cfg, seed);
  OptState opt = init_opt_state(cfg);
  std::vector<float> losses;
  for (int64_t s = 0; s < steps; ++s)
    losses.push_back(train_step(cfg, params, opt, s, seed, optimizer, observer, options));
  if (params_out) *params_out = std::move(params);
  return losses;
}

float microbatch_gradients(const Config& cfg, const TensorSet& params, int64_t step, uint64_t seed, int mb,
                           TensorSet& grads, Observer* observer, const Options& options) {
  if (grads.tensors.empty()) grads = parameter_shapes(cfg);
  Runner r(cfg, params, step, seed, observer, options);
  return r.microbatch(mb, grads);
}

}  // namespace sdc::train_step_f32
