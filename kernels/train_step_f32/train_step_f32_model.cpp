// The model of train_step_f32 on the CPU (train_step_f32_model.h).
#include "kernels/train_step_f32/train_step_f32_model.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "kernels/train_step_f32/train_step_f32_step.h"

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
                  c.head_dim() % 2 == 0 && c.seq <= 8192 && c.vocab <= (int64_t{1} << 24) &&
                  (c.tp == 1 || c.tp == 2 || c.tp == 4) && c.heads % c.tp == 0 && c.ffn % c.tp == 0;
  if (!ok) throw std::invalid_argument("train_step_f32: sizes violate the specification's requirements");
}

namespace {

// Calls add(name, rows, cols, decay) for every parameter, in the fixed order.
template <class Add>
void for_each_parameter(const Config& c, Add&& add) {
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
}

}  // namespace

TensorSet parameter_layout(const Config& c) {
  TensorSet s;
  for_each_parameter(c, [&s](std::string name, int64_t rows, int64_t cols, bool decay) {
    s.tensors.push_back({std::move(name), rows, cols, decay, {}});
  });
  return s;
}

TensorSet parameter_shapes(const Config& c) {
  TensorSet s = parameter_layout(c);
  for (Tensor& t : s.tensors) t.data.resize(static_cast<size_t>(t.size()));
  return s;
}

int64_t parameter_count(const Config& c) {
  int64_t n = 0;
  for_each_parameter(c, [&n](const std::string&, int64_t rows, int64_t cols, bool) { n += rows * cols; });
  return n;
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

bool is_split(std::string_view module, Pass pass) {
  const size_t dot = module.find('.');
  if (dot == std::string_view::npos || module.rfind("layer", 0) != 0) return false;
  const std::string_view layer = module.substr(dot + 1);
  if (pass == Pass::forward) return layer == "attn.wo" || layer == "mlp.down";
  return pass == Pass::backward &&
         (layer == "attn.wq" || layer == "attn.wk" || layer == "attn.wv" || layer == "mlp.gate" || layer == "mlp.up");
}

std::string rank_submodule(const std::string& module, int64_t rank, const char* pass) {
  return module + ".rank" + std::to_string(rank) + pass;
}

std::vector<Submodule> submodules(const Config& c) {
  std::vector<Submodule> s;
  auto add = [&s](std::string name, Pass pass, int layer, std::vector<std::string> outputs) {
    s.push_back({std::move(name), static_cast<int>(s.size()), pass, layer, std::move(outputs)});
  };
  const int layers = static_cast<int>(c.layers);
  auto lp = [](int l) { return "layer" + std::to_string(l) + "."; };
  // A split layer's partials (TENSOR PARALLELISM), each rank's a submodule before the one that sums them.
  auto ranks = [&add, &c](const std::string& module, const char* pass, Pass ps, int l, const char* out) {
    if (c.tp > 1 && is_split(module, ps))
      for (int64_t r = 0; r < c.tp; ++r) add(rank_submodule(module, r, pass), ps, l, {out});
  };
  add("embed.forward", Pass::forward, -1, {"y"});
  for (int l = 0; l < layers; ++l) {
    const std::string p = lp(l);
    add(p + "attn_norm.forward", Pass::forward, l, {"y"});
    for (const char* w :
         {"attn.wq", "attn.wk", "attn.wv", "attn.rope_q", "attn.rope_k", "attn.core", "attn.wo", "attn.residual"}) {
      ranks(p + w, ".forward", Pass::forward, l, "y");
      add(p + w + ".forward", Pass::forward, l, {"y"});
    }
    add(p + "mlp_norm.forward", Pass::forward, l, {"y"});
    for (const char* w : {"mlp.gate", "mlp.up", "mlp.swiglu", "mlp.down", "mlp.residual"}) {
      ranks(p + w, ".forward", Pass::forward, l, "y");
      add(p + w + ".forward", Pass::forward, l, {"y"});
    }
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
    for (const char* w : {"mlp.up", "mlp.gate"}) {
      ranks(p + w, ".backward", Pass::backward, l, "dx");
      add(p + w + ".backward", Pass::backward, l, {"dx", "dw"});
    }
    add(p + "mlp_norm.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "mlp.residual.backward", Pass::backward, l, {"dx"});
    add(p + "attn.wo.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "attn.core.backward", Pass::backward, l, {"dq", "dk", "dv"});
    add(p + "attn.rope_q.backward", Pass::backward, l, {"dx"});
    add(p + "attn.rope_k.backward", Pass::backward, l, {"dx"});
    for (const char* w : {"attn.wv", "attn.wk", "attn.wq"}) {
      ranks(p + w, ".backward", Pass::backward, l, "dx");
      add(p + w + ".backward", Pass::backward, l, {"dx", "dw"});
    }
    add(p + "attn_norm.backward", Pass::backward, l, {"dx", "dw"});
    add(p + "attn.residual.backward", Pass::backward, l, {"dx"});
  }
  add("embed.backward", Pass::backward, -1, {"dw"});
  const TensorSet shapes = parameter_layout(c);
  auto layer_of = [](const std::string& n) { return n.rfind("layer", 0) == 0 ? std::stoi(n.substr(5)) : -1; };
  for (const Tensor& t : shapes.tensors) add(t.name + ".accumulate", Pass::accumulate, layer_of(t.name), {"grad"});
  add("loss.step", Pass::loss, -1, {"loss"});
  for (const Tensor& t : shapes.tensors)
    add(t.name + ".optimizer", Pass::optimizer, layer_of(t.name), {"param", "m", "v"});
  return s;
}

void BitFlipInjector::output(const Submodule& s, const Site& at, std::span<float> out) {
  const auto n = static_cast<int64_t>(out.size());
  if (flip_.hits(s.name, at, n, tally_))
    for (int64_t i = 0, e = flip_.element; i < flip_.count && e < n; ++i, e += flip_.stride) {
      float& x = out[static_cast<size_t>(e)];
      x = bits_float(float_bits(x) ^ flip_.mask);
    }
  if (next_) next_->output(s, at, out);
}

Path Options::path_for(std::string_view submodule) const {
  const auto it = per_submodule.find(submodule);
  return it == per_submodule.end() ? path : it->second;
}

namespace {

// The CPU's Dev of StepRunner: host vectors, the operations of train_step_f32_ops.h on the path Options
// gives each submodule (or the benchmark's matmul stand-ins), outputs handed to the Observer.
class CpuDev {
 public:
  using Buf = std::vector<float>;

  CpuDev(const Config& cfg, int64_t step, uint64_t seed, Observer* obs, const Options& opts)
      : c_((check_config(cfg), cfg)),
        obs_(obs),
        opts_(opts),
        data_(step_data(cfg, seed, step)),
        rope_(rope_tables(cfg.seq, cfg.head_dim())) {}

  Buf alloc(int64_t n) { return Buf(static_cast<size_t>(n)); }
  static float* ptr(Buf& b) { return b.data(); }
  const int32_t* tokens(int mb) const { return data_.tokens.data() + mb * c_.tokens(); }
  const int32_t* targets(int mb) const { return data_.targets.data() + mb * c_.tokens(); }
  void emit(const Submodule& s, const Site& at, float* data, int64_t n) {
    if (obs_) obs_->output(s, at, std::span<float>(data, static_cast<size_t>(n)));
  }

  void matmul(const std::string& name, const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y) {
    if (opts_.matmuls) return opts_.matmuls->y(x, w, t, k, n, y);
    ops::matmul(path(name), x, w, t, k, n, y, ws_);
  }
  void matmul_dx(const std::string& name, const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx) {
    if (opts_.matmuls) return opts_.matmuls->dx(dy, w, t, k, n, dx);
    ops::matmul_dx(path(name), dy, w, t, k, n, dx, ws_);
  }
  void matmul_dw(const std::string& name, const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw) {
    if (opts_.matmuls) return opts_.matmuls->dw(x, dy, t, k, n, dw);
    ops::matmul_dw(path(name), x, dy, t, k, n, dw, ws_);
  }
  void rmsnorm(const std::string& name, const float* x, const float* w, int64_t rows, int64_t cols, float* y,
               float* inv) {
    ops::rmsnorm(path(name), x, w, rows, cols, y, inv, ws_);
  }
  void rmsnorm_back(const std::string& name, const float* x, const float* w, const float* inv, const float* dy,
                    int64_t rows, int64_t cols, float* dx, float* dw) {
    ops::rmsnorm_back(path(name), x, w, inv, dy, rows, cols, dx, dw, ws_);
  }
  void rope(const std::string& name, const float* x, int64_t t, int64_t heads, float* y) {
    ops::rope(path(name), x, t, heads, rope_, y, ws_);
  }
  void rope_back(const std::string& name, const float* dy, int64_t t, int64_t heads, float* dx) {
    ops::rope_back(path(name), dy, t, heads, rope_, dx, ws_);
  }
  void attention(const std::string& name, const float* q, const float* k, const float* v, int64_t seqs, int64_t s,
                 int64_t heads, int64_t d, float* o) {
    ops::attention(path(name), q, k, v, seqs, s, heads, d, o, ws_);
  }
  void attention_back(const std::string& name, const float* q, const float* k, const float* v, const float* d_o,
                      int64_t seqs, int64_t s, int64_t heads, int64_t d, float* dq, float* dk, float* dv) {
    ops::attention_back(path(name), q, k, v, d_o, seqs, s, heads, d, dq, dk, dv, ws_);
  }
  void swiglu(const std::string& name, const float* g, const float* u, int64_t n, float* z) {
    ops::swiglu(path(name), g, u, n, z, ws_);
  }
  void swiglu_back(const std::string& name, const float* g, const float* u, const float* dz, int64_t n, float* dg,
                   float* du) {
    ops::swiglu_back(path(name), g, u, dz, n, dg, du, ws_);
  }
  void cross_entropy(const std::string& name, const float* logits, const int32_t* targets, int64_t t, int64_t vocab,
                     float* loss) {
    ops::cross_entropy(path(name), logits, targets, t, vocab, loss, ws_);
  }
  void cross_entropy_back(const std::string& name, const float* logits, const int32_t* targets, int64_t t,
                          int64_t vocab, float scale, float* dl) {
    ops::cross_entropy_back(path(name), logits, targets, t, vocab, scale, dl, ws_);
  }
  void embedding(const std::string& name, const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y) {
    ops::embedding(path(name), table, tokens, t, d, y, ws_);
  }
  void embedding_back(const std::string& name, const float* dy, const int32_t* tokens, int64_t t, int64_t vocab,
                      int64_t d, float* dtable) {
    ops::embedding_back(path(name), dy, tokens, t, vocab, d, dtable, ws_);
  }
  void add(const std::string& name, const float* a, const float* b, int64_t n, float* y) {
    ops::add(path(name), a, b, n, y, ws_);
  }
  void sum(const std::string& name, const float* x, int64_t n, float* out) { *out = ops::sum(path(name), x, n, ws_); }
  void scale(const std::string&, float* x, float factor) { *x = *x * factor; }
  void to_bf16(const std::string&, const float* x, int64_t n, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_rn(x[i]);
  }
  // The CPU computes every rank's partial (a GPU of a tensor-parallel group exchanges them: DeviceDev).
  static int rank() { return -1; }
  [[noreturn]] static void send(const std::string& name, const float*, int64_t) { no_exchange(name); }
  [[noreturn]] static void receive(const std::string& name, int, float*, int64_t) { no_exchange(name); }
  static void exchanged() {}
  [[noreturn]] static void no_exchange(const std::string& name) {
    throw std::logic_error("train_step_f32: the CPU has no tensor-parallel peers (" + name + ")");
  }
  void cols(const std::string&, const float* x, int64_t rows, int64_t cols, int64_t c0, int64_t width, float* y) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < width; ++j) y[r * width + j] = x[r * cols + c0 + j];
  }
  void adamw(const std::string& name, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
    ops::adamw(path(name), w, g, m, v, n, s, ws_);
  }
  void lamb(const std::string& name, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
    ops::lamb(path(name), w, g, m, v, n, s, ws_);
  }

 private:
  Path path(const std::string& name) const { return opts_.path_for(name); }

  const Config& c_;
  Observer* obs_;
  const Options& opts_;
  Batch data_;
  RopeTables rope_;
  Workspace ws_;
};

std::vector<float*> pointers(TensorSet& s) {
  std::vector<float*> p;
  for (Tensor& t : s.tensors) p.push_back(t.data.data());
  return p;
}

}  // namespace

float train_step(const Config& cfg, TensorSet& params, OptState& opt, int64_t step, uint64_t seed,
                 const Optimizer& optimizer, Observer* observer, const Options& options) {
  CpuDev dev(cfg, step, seed, observer, options);
  const TensorSet shapes = parameter_layout(cfg);
  const std::vector<Submodule> subs = submodules(cfg);
  TensorSet g = parameter_shapes(cfg);
  std::vector<float> partials(static_cast<size_t>(cfg.micro_batches()));
  float loss = 0;
  run_train_step(dev, cfg, shapes, subs, step,
                 {pointers(params), pointers(opt.grads), pointers(opt.m), pointers(opt.v)}, pointers(g),
                 partials.data(), &loss, optimizer);
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
  CpuDev dev(cfg, step, seed, observer, options);
  const TensorSet shapes = parameter_layout(cfg);
  const std::vector<Submodule> subs = submodules(cfg);
  StepRunner<CpuDev> r(dev, cfg, shapes, subs, step);
  std::vector<float*> w;
  for (const Tensor& t : params.tensors) w.push_back(const_cast<float*>(t.data.data()));  // read only
  float loss_sum = 0;
  r.microbatch(mb, w, pointers(grads), &loss_sum);
  return loss_sum;
}

}  // namespace sdc::train_step_f32
