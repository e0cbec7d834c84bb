// One training step of train_step_f32 (train_step_f32.h specifies it) as a sequence of named submodule
// computations, written once for every place that runs it: the CPU (train_step_f32_model.cpp, its buffers
// host vectors and its operations train_step_f32_ops.h) and the device (train_step_f32.cu, its buffers device
// memory and its operations kernels). The order of the operations, which buffer each reads and writes, and
// which outputs are reported are this file's; a Dev supplies memory and the operations:
//
//   Buf alloc(int64_t n); float* ptr(Buf&);            memory of n floats (contents unspecified)
//   const int32_t* tokens(int mb), targets(int mb);    the step's data of micro-batch mb
//   the operations of train_step_f32_ops.h, each with the submodule's name first and without Path and
//   Workspace (matmul, matmul_dx, matmul_dw, rmsnorm, rmsnorm_back, rope, rope_back, attention,
//   attention_back, swiglu, swiglu_back, cross_entropy, cross_entropy_back, embedding, embedding_back,
//   add, adamw, lamb), sum(name, x, n, out) writing the sum to out[0], scale(name, x, factor): x[0] *= factor,
//   to_bf16(name, x, n, y): y[i] = bf16_rn(x[i]) (the matmuls' operands in mixed precision, Config::bf16), and
//   cols(name, x, rows, cols, c0, width, y): y (rows x width) = the columns c0 .. c0 + width - 1 of x (rows x cols),
//   a rank's slice of a tensor-parallel layer's operand (Config::tp); and for a GPU that is one rank of a group
//   (tp_exchange.h): rank() (-1: this Dev computes every rank), send(name, x, n) its partial to its peers,
//   receive(name, src, y, n) rank src's, exchanged() after each split layer
//   emit(const Submodule&, const Site&, float* data, int64_t n)   an output, which the Dev may read and
//                                                                  overwrite before the step goes on
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/train_step_f32/train_step_f32_model.h"

namespace sdc::train_step_f32 {

// The step's parameter-shaped tensors, by parameter index (parameter_shapes' order).
struct StepTensors {
  std::vector<float*> params, grads, m, v;
};

template <class Dev>
class StepRunner {
 public:
  using Buf = typename Dev::Buf;

  StepRunner(Dev& dev, const Config& cfg, const TensorSet& shapes, const std::vector<Submodule>& subs, int64_t step)
      : d_(dev), c_(cfg), shapes_(shapes), subs_(subs), step_(step) {
    for (const Submodule& s : subs_) index_.emplace(s.name, s.index);
    for (size_t i = 0; i < shapes_.tensors.size(); ++i) tensor_.emplace(shapes_.tensors[i].name, i);
  }

  // Forward and backward of micro-batch mb with parameters `params`, gradients into `g`; the micro-batch's
  // loss sum into loss_sum[0].
  void microbatch(int mb, const std::vector<float*>& params, const std::vector<float*>& g, float* loss_sum);
  // acc = acc + g per tensor (micro-batch mb >= 1).
  void accumulate(int mb, const std::vector<float*>& acc, const std::vector<float*>& g) {
    for (size_t i = 0; i < shapes_.tensors.size(); ++i) {
      const std::string n = shapes_.tensors[i].name + ".accumulate";
      d_.add(n, acc[i], g[i], shapes_.tensors[i].size(), acc[i]);
      emit(n, mb, 0, acc[i], shapes_.tensors[i].size());
    }
  }
  // The step's mean loss from the micro-batches' sums, into loss[0].
  void step_loss(float* partials, int64_t n, float* loss) {
    d_.sum("loss.step", partials, n, loss);
    d_.scale("loss.step", loss, pow2f(-log2_exact(c_.batch * c_.seq)));
    emit("loss.step", -1, 0, loss, 1);
  }
  void optimize(const StepTensors& t, const Optimizer& o) {
    for (size_t i = 0; i < shapes_.tensors.size(); ++i) {
      const Tensor& p = shapes_.tensors[i];
      const std::string n = p.name + ".optimizer";
      const OptScalars s = opt_scalars(o.lr, o.beta1, o.beta2, o.eps, p.decay ? o.weight_decay : 0.0f, step_ + 1);
      if (o.kind == OptimizerKind::adamw)
        d_.adamw(n, t.params[i], t.grads[i], t.m[i], t.v[i], p.size(), s);
      else
        d_.lamb(n, t.params[i], t.grads[i], t.m[i], t.v[i], p.size(), s);
      emit(n, -1, 0, t.params[i], p.size());
      emit(n, -1, 1, t.m[i], p.size());
      emit(n, -1, 2, t.v[i], p.size());
    }
  }

 private:
  size_t tensor(const std::string& name) const { return tensor_.at(name); }
  void emit(const std::string& name, int mb, int out, float* data, int64_t n) {
    d_.emit(subs_[static_cast<size_t>(index_.at(name))], Site{step_, mb, out}, data, n);
  }
  void emit(const std::string& name, int mb, int out, Buf& b, int64_t n) { emit(name, mb, out, d_.ptr(b), n); }

  // A matmul's operand as the matmul reads it: x itself, or in mixed precision its bf16 rounding in `copy`.
  const float* operand(const std::string& name, const float* x, int64_t n, std::vector<Buf>& copies) {
    if (!c_.bf16) return x;
    copies.push_back(d_.alloc(n));
    d_.to_bf16(name, x, n, d_.ptr(copies.back()));
    return d_.ptr(copies.back());
  }
  // Whether module's pass is split over the tensor-parallel ranks (is_split).
  bool split(const std::string& module, Pass pass) const { return c_.tp > 1 && is_split(module, pass); }
  // A split layer's sum over the ranks (TENSOR PARALLELISM): rank r's partial of n elements, computed by
  // part(r, out) and emitted as its rank's submodule, then the partials summed in rank order into y. A Dev that is
  // one rank of a group computes its own partial and receives the others': those of lower ranks before it emits its
  // own (whose computation sync, at level 12, happens before it sends it), those of higher ranks after.
  template <class Part>
  void ranks(const std::string& module, const char* pass, int mb, int64_t n, float* y, Part&& part) {
    std::vector<Buf> parts;
    parts.reserve(static_cast<size_t>(c_.tp));
    for (int64_t r = 0; r < c_.tp; ++r) parts.push_back(d_.alloc(n));
    const int own = d_.rank();
    if (own >= 0) part(own, d_.ptr(parts[static_cast<size_t>(own)]));
    for (int64_t r = 0; r < c_.tp; ++r) {
      const std::string rn = rank_submodule(module, r, pass);
      float* at = d_.ptr(parts[static_cast<size_t>(r)]);
      if (own < 0)
        part(r, at);
      else if (r != own)
        d_.receive(rn, static_cast<int>(r), at, n);
      emit(rn, mb, 0, parts[static_cast<size_t>(r)], n);
      if (r == own) d_.send(rn, at, n);
    }
    d_.exchanged();
    const std::string name = module + pass;
    d_.add(name, d_.ptr(parts[0]), d_.ptr(parts[1]), n, y);
    for (size_t r = 2; r < parts.size(); ++r) d_.add(name, y, d_.ptr(parts[r]), n, y);
  }
  // Linear backward: dx then dw, both reported; a column-parallel layer's dx summed over the ranks' columns.
  void linear_back(const std::string& m, int mb, Buf& x, Buf& dy, int64_t k, int64_t n, Buf& dx) {
    const std::string name = m + ".backward";
    const int64_t t = c_.tokens();
    std::vector<Buf> copies;
    copies.reserve(5);
    const float* dy_in = operand(name, d_.ptr(dy), t * n, copies);
    const float* w_in = operand(name, w_[tensor(m)], k * n, copies);
    if (split(m, Pass::backward)) {
      const int64_t nr = n / c_.tp;
      copies.push_back(d_.alloc(t * nr));
      float* dy_r = d_.ptr(copies.back());
      copies.push_back(d_.alloc(k * nr));
      float* w_r = d_.ptr(copies.back());
      ranks(m, ".backward", mb, t * k, d_.ptr(dx), [&](int64_t r, float* part) {
        const std::string rn = rank_submodule(m, r, ".backward");
        d_.cols(rn, dy_in, t, n, r * nr, nr, dy_r);
        d_.cols(rn, w_in, k, n, r * nr, nr, w_r);
        d_.matmul_dx(rn, dy_r, w_r, t, k, nr, part);
      });
    } else {
      d_.matmul_dx(name, dy_in, w_in, t, k, n, d_.ptr(dx));
    }
    emit(name, mb, 0, dx, t * k);
    float* dw = g_[tensor(m)];
    d_.matmul_dw(name, operand(name, d_.ptr(x), t * k, copies), dy_in, t, k, n, dw);
    emit(name, mb, 1, dw, k * n);
  }
  // Linear forward; a row-parallel layer's output summed over the ranks' rows of W.
  void linear(const std::string& m, int mb, Buf& x, int64_t k, int64_t n, Buf& y) {
    const std::string name = m + ".forward";
    const int64_t t = c_.tokens();
    std::vector<Buf> copies;
    copies.reserve(3);
    const float* x_in = operand(name, d_.ptr(x), t * k, copies);
    const float* w_in = operand(name, w_[tensor(m)], k * n, copies);
    if (split(m, Pass::forward)) {
      const int64_t kr = k / c_.tp;
      copies.push_back(d_.alloc(t * kr));
      float* x_r = d_.ptr(copies.back());
      ranks(m, ".forward", mb, t * n, d_.ptr(y), [&](int64_t r, float* part) {
        const std::string rn = rank_submodule(m, r, ".forward");
        d_.cols(rn, x_in, t, k, r * kr, kr, x_r);
        d_.matmul(rn, x_r, w_in + r * kr * n, t, kr, n, part);
      });
    } else {
      d_.matmul(name, x_in, w_in, t, k, n, d_.ptr(y));
    }
    emit(name, mb, 0, y, t * n);
  }
  const float* w(const std::string& name) const { return w_[tensor(name)]; }

  Dev& d_;
  const Config& c_;
  const TensorSet& shapes_;
  const std::vector<Submodule>& subs_;
  int64_t step_;
  std::unordered_map<std::string, int> index_;
  std::unordered_map<std::string, size_t> tensor_;
  std::vector<float*> w_, g_;  // the current micro-batch's parameters and gradients
};

template <class Dev>
void StepRunner<Dev>::microbatch(int mb, const std::vector<float*>& params, const std::vector<float*>& g,
                                 float* loss_sum) {
  w_ = params;
  g_ = g;
  const int64_t t = c_.tokens(), d = c_.dim, f = c_.ffn, vocab = c_.vocab, hd = c_.head_dim();
  const int64_t nl = c_.layers, td = t * d, tf = t * f;
  const int32_t* tokens = d_.tokens(mb);
  const int32_t* targets = d_.targets(mb);
  // The forward activations of one layer that its backward needs.
  struct LayerActs {
    Buf n1, inv1, qr, kr, v, a, h, n2, inv2, g, u, z;
  };
  std::vector<Buf> xs;
  for (int64_t l = 0; l <= nl; ++l) xs.push_back(d_.alloc(td));
  std::vector<LayerActs> acts;
  Buf q = d_.alloc(td), k = d_.alloc(td), o = d_.alloc(td), y = d_.alloc(td);
  auto p = [&](Buf& b) { return d_.ptr(b); };

  d_.embedding("embed.forward", w("embed"), tokens, t, d, p(xs[0]));
  emit("embed.forward", mb, 0, xs[0], td);
  for (int64_t l = 0; l < nl; ++l) {
    const std::string pre = "layer" + std::to_string(l) + ".";
    acts.push_back({d_.alloc(td), d_.alloc(t), d_.alloc(td), d_.alloc(td), d_.alloc(td), d_.alloc(td), d_.alloc(td),
                    d_.alloc(td), d_.alloc(t), d_.alloc(tf), d_.alloc(tf), d_.alloc(tf)});
    LayerActs& a = acts.back();
    Buf& x = xs[static_cast<size_t>(l)];
    d_.rmsnorm(pre + "attn_norm.forward", p(x), w(pre + "attn_norm"), t, d, p(a.n1), p(a.inv1));
    emit(pre + "attn_norm.forward", mb, 0, a.n1, td);
    linear(pre + "attn.wq", mb, a.n1, d, d, q);
    linear(pre + "attn.wk", mb, a.n1, d, d, k);
    linear(pre + "attn.wv", mb, a.n1, d, d, a.v);
    d_.rope(pre + "attn.rope_q.forward", p(q), t, c_.heads, p(a.qr));
    emit(pre + "attn.rope_q.forward", mb, 0, a.qr, td);
    d_.rope(pre + "attn.rope_k.forward", p(k), t, c_.heads, p(a.kr));
    emit(pre + "attn.rope_k.forward", mb, 0, a.kr, td);
    d_.attention(pre + "attn.core.forward", p(a.qr), p(a.kr), p(a.v), c_.micro, c_.seq, c_.heads, hd, p(a.a));
    emit(pre + "attn.core.forward", mb, 0, a.a, td);
    linear(pre + "attn.wo", mb, a.a, d, d, o);
    d_.add(pre + "attn.residual.forward", p(x), p(o), td, p(a.h));
    emit(pre + "attn.residual.forward", mb, 0, a.h, td);
    d_.rmsnorm(pre + "mlp_norm.forward", p(a.h), w(pre + "mlp_norm"), t, d, p(a.n2), p(a.inv2));
    emit(pre + "mlp_norm.forward", mb, 0, a.n2, td);
    linear(pre + "mlp.gate", mb, a.n2, d, f, a.g);
    linear(pre + "mlp.up", mb, a.n2, d, f, a.u);
    d_.swiglu(pre + "mlp.swiglu.forward", p(a.g), p(a.u), tf, p(a.z));
    emit(pre + "mlp.swiglu.forward", mb, 0, a.z, tf);
    linear(pre + "mlp.down", mb, a.z, f, d, y);
    Buf& xn = xs[static_cast<size_t>(l + 1)];
    d_.add(pre + "mlp.residual.forward", p(a.h), p(y), td, p(xn));
    emit(pre + "mlp.residual.forward", mb, 0, xn, td);
  }
  Buf nf = d_.alloc(td), invf = d_.alloc(t), logits = d_.alloc(t * vocab), losses = d_.alloc(t);
  Buf& xl = xs[static_cast<size_t>(nl)];
  d_.rmsnorm("final_norm.forward", p(xl), w("final_norm"), t, d, p(nf), p(invf));
  emit("final_norm.forward", mb, 0, nf, td);
  linear("lm_head", mb, nf, d, vocab, logits);
  d_.cross_entropy("loss.forward", p(logits), targets, t, vocab, p(losses));
  emit("loss.forward", mb, 0, losses, t);
  d_.sum("loss.forward", p(losses), t, loss_sum);
  emit("loss.forward", mb, 1, loss_sum, 1);

  // Backward.
  Buf dlogits = d_.alloc(t * vocab);
  const float scale = pow2f(-log2_exact(c_.batch * c_.seq));  // the mean over the step's B * S tokens
  d_.cross_entropy_back("loss.backward", p(logits), targets, t, vocab, scale, p(dlogits));
  emit("loss.backward", mb, 0, dlogits, t * vocab);
  Buf dx = d_.alloc(td), dtmp = d_.alloc(td), dh = d_.alloc(td);
  linear_back("lm_head", mb, nf, dlogits, d, vocab, dtmp);
  d_.rmsnorm_back("final_norm.backward", p(xl), w("final_norm"), p(invf), p(dtmp), t, d, p(dx),
                  g_[tensor("final_norm")]);
  emit("final_norm.backward", mb, 0, dx, td);
  emit("final_norm.backward", mb, 1, g_[tensor("final_norm")], d);

  Buf dz = d_.alloc(tf), dg = d_.alloc(tf), du = d_.alloc(tf);
  Buf d1 = d_.alloc(td), d2 = d_.alloc(td), d3 = d_.alloc(td), dq = d_.alloc(td), dk = d_.alloc(td), dv = d_.alloc(td);
  for (int64_t l = nl - 1; l >= 0; --l) {
    const std::string pre = "layer" + std::to_string(l) + ".";
    LayerActs& a = acts[static_cast<size_t>(l)];
    // MLP: dx is the gradient of the layer's output.
    linear_back(pre + "mlp.down", mb, a.z, dx, f, d, dz);
    d_.swiglu_back(pre + "mlp.swiglu.backward", p(a.g), p(a.u), p(dz), tf, p(dg), p(du));
    emit(pre + "mlp.swiglu.backward", mb, 0, dg, tf);
    emit(pre + "mlp.swiglu.backward", mb, 1, du, tf);
    linear_back(pre + "mlp.up", mb, a.n2, du, d, f, d1);
    linear_back(pre + "mlp.gate", mb, a.n2, dg, d, f, d2);
    {
      const std::string n = pre + "mlp_norm.backward";
      float* dw = g_[tensor(pre + "mlp_norm")];
      d_.add(n, p(d2), p(d1), td, p(d3));  // gate + up
      d_.rmsnorm_back(n, p(a.h), w(pre + "mlp_norm"), p(a.inv2), p(d3), t, d, p(d1), dw);
      emit(n, mb, 0, d1, td);
      emit(n, mb, 1, dw, d);
    }
    d_.add(pre + "mlp.residual.backward", p(dx), p(d1), td, p(dh));
    emit(pre + "mlp.residual.backward", mb, 0, dh, td);
    // Attention.
    linear_back(pre + "attn.wo", mb, a.a, dh, d, d, d1);
    {
      const std::string n = pre + "attn.core.backward";
      d_.attention_back(n, p(a.qr), p(a.kr), p(a.v), p(d1), c_.micro, c_.seq, c_.heads, hd, p(dq), p(dk), p(dv));
      emit(n, mb, 0, dq, td);
      emit(n, mb, 1, dk, td);
      emit(n, mb, 2, dv, td);
    }
    d_.rope_back(pre + "attn.rope_q.backward", p(dq), t, c_.heads, p(q));
    emit(pre + "attn.rope_q.backward", mb, 0, q, td);
    d_.rope_back(pre + "attn.rope_k.backward", p(dk), t, c_.heads, p(k));
    emit(pre + "attn.rope_k.backward", mb, 0, k, td);
    linear_back(pre + "attn.wv", mb, a.n1, dv, d, d, d1);
    linear_back(pre + "attn.wk", mb, a.n1, k, d, d, d2);
    linear_back(pre + "attn.wq", mb, a.n1, q, d, d, d3);
    {
      const std::string n = pre + "attn_norm.backward";
      float* dw = g_[tensor(pre + "attn_norm")];
      d_.add(n, p(d3), p(d2), td, p(d3));  // (dn_q + dn_k)
      d_.add(n, p(d3), p(d1), td, p(d3));  // + dn_v
      d_.rmsnorm_back(n, p(xs[static_cast<size_t>(l)]), w(pre + "attn_norm"), p(a.inv1), p(d3), t, d, p(d1), dw);
      emit(n, mb, 0, d1, td);
      emit(n, mb, 1, dw, d);
    }
    d_.add(pre + "attn.residual.backward", p(dh), p(d1), td, p(dx));
    emit(pre + "attn.residual.backward", mb, 0, dx, td);
  }
  float* dembed = g_[tensor("embed")];
  d_.embedding_back("embed.backward", p(dx), tokens, t, vocab, d, dembed);
  emit("embed.backward", mb, 0, dembed, vocab * d);
}

// One training step on `dev`: every micro-batch, the accumulation into t.grads (the first micro-batch's
// gradient is the accumulator's initial value, no +0 + g_0), the step's loss into loss[0], the optimizer.
// `scratch_grads`: parameter-shaped gradients of the later micro-batches.
template <class Dev>
void run_train_step(Dev& dev, const Config& cfg, const TensorSet& shapes, const std::vector<Submodule>& subs,
                    int64_t step, const StepTensors& t, const std::vector<float*>& scratch_grads, float* partials,
                    float* loss, const Optimizer& optimizer) {
  StepRunner<Dev> r(dev, cfg, shapes, subs, step);
  const auto nmb = static_cast<int>(cfg.micro_batches());
  for (int mb = 0; mb < nmb; ++mb) {
    if (mb == 0) {
      r.microbatch(0, t.params, t.grads, partials);
    } else {
      r.microbatch(mb, t.params, scratch_grads, partials + mb);
      r.accumulate(mb, t.grads, scratch_grads);
    }
  }
  r.step_loss(partials, nmb, loss);
  r.optimize(t, optimizer);
}

}  // namespace sdc::train_step_f32
