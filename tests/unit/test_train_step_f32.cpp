// Training-step replay's core (kernels/train_step_f32): the fast path of every op equals the plain
// specification bit for bit, the backward ops are the derivatives of the forward (finite differences of an
// independent double-precision forward), micro-batch accumulation has a fixed order that matters, training
// lowers the loss reproducibly, the observer sees and can replace every submodule output, and the own
// sine and cosine are accurate over the rotary angles.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "catch.h"
#include "kernels/train_step_f32/train_step_f32_model.h"
#include "src/core/family.h"
#include "src/core/inject.h"

using namespace sdc;
using namespace sdc::train_step_f32;

namespace {

using Vec = std::vector<float>;
using DVec = std::vector<double>;

Vec random_vec(int64_t n, uint32_t tensor, float scale = 1.0f) {
  Vec v(static_cast<size_t>(n));
  const uint64_t key = tensor_key(99, tensor);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = uniform_value(element_hash(key, i)) * scale;
  return v;
}

bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool same_bits(const TensorSet& a, const TensorSet& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].name != b.tensors[i].name || !same_bits(a.tensors[i].data, b.tensors[i].data)) return false;
  return true;
}

DVec to_d(const Vec& v) { return DVec(v.begin(), v.end()); }

int64_t ulps(float a, float b) {
  auto ord = [](float x) -> int64_t {
    const uint32_t u = float_bits(x);
    return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : u;
  };
  return std::llabs(ord(a) - ord(b));
}

constexpr Path kPaths[] = {Path::plain, Path::fast};

// ---- double-precision reference forward, written independently of the ops --------------------------------
DVec d_matmul(const DVec& x, const DVec& w, int64_t t, int64_t k, int64_t n) {
  DVec y(static_cast<size_t>(t * n), 0.0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j) y[i * n + j] += x[i * k + kk] * w[kk * n + j];
  return y;
}

DVec d_rmsnorm(const DVec& x, const DVec& w, int64_t rows, int64_t cols) {
  DVec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < cols; ++j) ss += x[r * cols + j] * x[r * cols + j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + static_cast<double>(RMS_EPS));
    for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = x[r * cols + j] * inv * w[j];
  }
  return y;
}

// The rotary angles are part of the specification (fp32 formula); their sine and cosine here are libm's.
DVec d_rope(const DVec& x, int64_t t, int64_t heads, int64_t dh, int64_t seq) {
  DVec y(x.size());
  const float log_theta = sdc_logf(ROPE_THETA);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t q = 0; q < dh / 2; ++q) {
        const double a = rope_angle(i % seq, rope_inv_freq(q, dh, log_theta));
        const int64_t e = i * heads * dh + h * dh + 2 * q;
        y[e] = x[e] * std::cos(a) - x[e + 1] * std::sin(a);
        y[e + 1] = x[e] * std::sin(a) + x[e + 1] * std::cos(a);
      }
  return y;
}

DVec d_attention(const DVec& q, const DVec& k, const DVec& v, int64_t seqs, int64_t s, int64_t heads, int64_t dh) {
  const int64_t ld = heads * dh;
  DVec o(q.size(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  std::vector<double> p(static_cast<size_t>(s));
  for (int64_t b = 0; b < seqs; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = b * s * ld + h * dh;
      for (int64_t i = 0; i < s; ++i) {
        double m = -1e300, l = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < dh; ++e) acc += q[off + i * ld + e] * k[off + j * ld + e];
          p[j] = acc * scale;
          m = std::max(m, p[j]);
        }
        for (int64_t j = 0; j <= i; ++j) l += (p[j] = std::exp(p[j] - m));
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t e = 0; e < dh; ++e) o[off + i * ld + e] += p[j] / l * v[off + j * ld + e];
      }
    }
  return o;
}

DVec d_swiglu(const DVec& g, const DVec& u) {
  DVec z(g.size());
  for (size_t i = 0; i < g.size(); ++i) z[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return z;
}

// sum over tokens of the cross-entropy loss
double d_cross_entropy(const DVec& x, const int32_t* targets, int64_t t, int64_t vocab) {
  double total = 0;
  for (int64_t i = 0; i < t; ++i) {
    double m = -1e300, s = 0;
    for (int64_t j = 0; j < vocab; ++j) m = std::max(m, x[i * vocab + j]);
    for (int64_t j = 0; j < vocab; ++j) s += std::exp(x[i * vocab + j] - m);
    total += m + std::log(s) - x[i * vocab + targets[i]];
  }
  return total;
}

DVec d_add(const DVec& a, const DVec& b) {
  DVec y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = a[i] + b[i];
  return y;
}

using DParams = std::map<std::string, DVec>;

// The step's mean loss of the whole model in double.
double d_model_loss(const Config& c, const DParams& p, const Batch& data) {
  const int64_t t = c.tokens(), d = c.dim, f = c.ffn;
  double total = 0;
  for (int64_t mb = 0; mb < c.micro_batches(); ++mb) {
    const int32_t* tokens = data.tokens.data() + mb * t;
    DVec x(static_cast<size_t>(t * d));
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < d; ++j) x[i * d + j] = p.at("embed")[tokens[i] * d + j];
    for (int64_t l = 0; l < c.layers; ++l) {
      const std::string pre = "layer" + std::to_string(l) + ".";
      const DVec n1 = d_rmsnorm(x, p.at(pre + "attn_norm"), t, d);
      const DVec q = d_rope(d_matmul(n1, p.at(pre + "attn.wq"), t, d, d), t, c.heads, c.head_dim(), c.seq);
      const DVec k = d_rope(d_matmul(n1, p.at(pre + "attn.wk"), t, d, d), t, c.heads, c.head_dim(), c.seq);
      const DVec v = d_matmul(n1, p.at(pre + "attn.wv"), t, d, d);
      const DVec a = d_attention(q, k, v, c.micro, c.seq, c.heads, c.head_dim());
      const DVec h = d_add(x, d_matmul(a, p.at(pre + "attn.wo"), t, d, d));
      const DVec n2 = d_rmsnorm(h, p.at(pre + "mlp_norm"), t, d);
      const DVec z =
          d_swiglu(d_matmul(n2, p.at(pre + "mlp.gate"), t, d, f), d_matmul(n2, p.at(pre + "mlp.up"), t, d, f));
      x = d_add(h, d_matmul(z, p.at(pre + "mlp.down"), t, f, d));
    }
    const DVec logits = d_matmul(d_rmsnorm(x, p.at("final_norm"), t, d), p.at("lm_head"), t, d, c.vocab);
    total += d_cross_entropy(logits, data.targets.data() + mb * t, t, c.vocab);
  }
  return total / static_cast<double>(c.batch * c.seq);
}

// Central difference of f with respect to x[i] (x is restored).
template <typename F>
double central_diff(DVec& x, size_t i, F f) {
  const double x0 = x[i], h = 1e-4 * std::max(1.0, std::fabs(x0));
  x[i] = x0 + h;
  const double up = f();
  x[i] = x0 - h;
  const double down = f();
  x[i] = x0;
  return (up - down) / (2 * h);
}

// Checks a float gradient against finite differences at a few elements: the largest and some spread out.
// Tolerance: 1e-3 of the tensor's largest gradient (float rounding over a few hundred operations is far
// below it; a wrong formula is not).
template <typename F>
void check_grad(const char* what, const Vec& grad, DVec& x, F f, int samples = 12) {
  INFO(what);
  REQUIRE(grad.size() == x.size());
  size_t imax = 0;
  double gmax = 0;
  for (size_t i = 0; i < grad.size(); ++i)
    if (std::fabs(grad[i]) > gmax) gmax = std::fabs(grad[i]), imax = i;
  REQUIRE(gmax > 0);
  std::vector<size_t> idx{imax};
  for (int s = 1; s < samples; ++s) idx.push_back(element_hash(7, s) % grad.size());
  for (size_t i : idx) {
    const double fd = central_diff(x, i, f);
    INFO("element " << i << " float " << grad[i] << " fd " << fd << " max " << gmax);
    CHECK(std::fabs(fd - grad[i]) <= 1e-3 * gmax);
  }
}

double dot(const DVec& y, const Vec& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

// Records every output of a step: (submodule, micro-batch, output) -> values, and the call order.
struct Recorder final : Observer {
  std::map<std::tuple<std::string, int, int>, Vec> outputs;
  std::vector<std::tuple<int, int, int>> calls;  // submodule index, micro-batch, output
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    outputs[{s.name, at.microbatch, at.output}] = Vec(out.begin(), out.end());
    calls.emplace_back(s.index, at.microbatch, at.output);
  }
};

// Computation sync: compares every output with a golden run's and substitutes the golden one.
struct Sync final : Observer {
  const Recorder& golden;
  std::vector<std::string> mismatches;
  explicit Sync(const Recorder& g) : golden(g) {}
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    const Vec& want = golden.outputs.at({s.name, at.microbatch, at.output});
    if (std::memcmp(want.data(), out.data(), want.size() * sizeof(float)) != 0) {
      mismatches.push_back(s.name + "#" + std::to_string(at.output));
      std::copy(want.begin(), want.end(), out.begin());
    }
  }
};

}  // namespace

TEST_CASE("train_step_f32: every op's fast path equals the plain specification bit for bit", "[replay]") {
  const Config c = tiny_config();
  const int64_t t = c.tokens() * 2, d = c.dim, f = c.ffn, hd = c.head_dim(), vocab = c.vocab;
  train_step_f32::Workspace ws;
  auto both = [&](auto run) {
    const Vec a = run(Path::plain), b = run(Path::fast);
    CHECK(same_bits(a, b));
  };
  const Vec x = random_vec(t * d, 1), w = random_vec(d * f, 2, 0.125f), dy = random_vec(t * f, 3);
  SECTION("matmul forward and backward, also with ragged sizes") {
    for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{t, d, f}, {37, 70, 45}, {1, 3, 130}}) {
      const Vec xm = random_vec(m * k, 4), wm = random_vec(k * n, 5), dym = random_vec(m * n, 6);
      both([&](Path p) {
        Vec y(m * n);
        ops::matmul(p, xm.data(), wm.data(), m, k, n, y.data(), ws);
        return y;
      });
      both([&](Path p) {
        Vec y(m * k);
        ops::matmul_dx(p, dym.data(), wm.data(), m, k, n, y.data(), ws);
        return y;
      });
      both([&](Path p) {
        Vec y(k * n);
        ops::matmul_dw(p, xm.data(), dym.data(), m, k, n, y.data(), ws);
        return y;
      });
    }
  }
  SECTION("rmsnorm") {
    const Vec nw = random_vec(d, 7), dyn = random_vec(t * d, 8);
    both([&](Path p) {
      Vec y(t * d + t);
      ops::rmsnorm(p, x.data(), nw.data(), t, d, y.data(), y.data() + t * d, ws);
      return y;
    });
    Vec inv(t), tmp(t * d);
    ops::rmsnorm(Path::plain, x.data(), nw.data(), t, d, tmp.data(), inv.data(), ws);
    both([&](Path p) {
      Vec y(t * d + d);
      ops::rmsnorm_back(p, x.data(), nw.data(), inv.data(), dyn.data(), t, d, y.data(), y.data() + t * d, ws);
      return y;
    });
  }
  SECTION("rope") {
    const RopeTables tab = rope_tables(c.seq, hd);
    both([&](Path p) {
      Vec y(t * d);
      ops::rope(p, x.data(), t, c.heads, tab, y.data(), ws);
      return y;
    });
    both([&](Path p) {
      Vec y(t * d);
      ops::rope_back(p, x.data(), t, c.heads, tab, y.data(), ws);
      return y;
    });
  }
  SECTION("attention") {
    const Vec q = random_vec(t * d, 9, 2.0f), k = random_vec(t * d, 10, 2.0f), v = random_vec(t * d, 11);
    const Vec d_o = random_vec(t * d, 12);
    const int64_t seqs = t / c.seq;
    both([&](Path p) {
      Vec o(t * d);
      ops::attention(p, q.data(), k.data(), v.data(), seqs, c.seq, c.heads, hd, o.data(), ws);
      return o;
    });
    both([&](Path p) {
      Vec g(3 * t * d);
      ops::attention_back(p, q.data(), k.data(), v.data(), d_o.data(), seqs, c.seq, c.heads, hd, g.data(),
                          g.data() + t * d, g.data() + 2 * t * d, ws);
      return g;
    });
  }
  SECTION("swiglu, including saturated gates") {
    Vec g = random_vec(t * f, 13, 8.0f);
    g[0] = -100.0f;
    g[1] = 100.0f;
    g[2] = -0.0f;
    const Vec u = random_vec(t * f, 14);
    both([&](Path p) {
      Vec z(t * f);
      ops::swiglu(p, g.data(), u.data(), t * f, z.data(), ws);
      return z;
    });
    both([&](Path p) {
      Vec r(2 * t * f);
      ops::swiglu_back(p, g.data(), u.data(), dy.data(), t * f, r.data(), r.data() + t * f, ws);
      return r;
    });
  }
  SECTION("cross-entropy, embedding, add, sum") {
    const Vec logits = random_vec(t * vocab, 15, 4.0f);
    std::vector<int32_t> tg(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) tg[i] = static_cast<int32_t>(element_hash(3, i) % (i % 5 == 0 ? 3 : vocab));
    both([&](Path p) {
      Vec l(t);
      ops::cross_entropy(p, logits.data(), tg.data(), t, vocab, l.data(), ws);
      return l;
    });
    both([&](Path p) {
      Vec g(t * vocab);
      ops::cross_entropy_back(p, logits.data(), tg.data(), t, vocab, pow2f(-7), g.data(), ws);
      return g;
    });
    const Vec table = random_vec(vocab * d, 16);
    both([&](Path p) {
      Vec y(t * d);
      ops::embedding(p, table.data(), tg.data(), t, d, y.data(), ws);
      return y;
    });
    both([&](Path p) {
      Vec y(vocab * d);
      ops::embedding_back(p, x.data(), tg.data(), t, vocab, d, y.data(), ws);  // repeated tokens
      return y;
    });
    both([&](Path p) {
      Vec y(t * d);
      ops::add(p, x.data(), table.data(), t * d, y.data(), ws);
      return y;
    });
    for (int64_t n : {int64_t{1}, int64_t{7}, t * d - 3})
      both([&](Path p) { return Vec{ops::sum(p, x.data(), n, ws)}; });
  }
  SECTION("optimizers") {
    const int64_t n = 1000;
    const Vec g = random_vec(n, 17, 0.01f);
    for (int64_t step : {0, 5}) {
      const OptScalars s = opt_scalars(1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, step + 1);
      for (int kind = 0; kind < 2; ++kind)
        both([&](Path p) {
          Vec w = random_vec(n, 18), m = random_vec(n, 19, 0.01f), v = random_vec(n, 20, 0.0001f);
          for (float& e : v) e = std::fabs(e);
          if (kind == 0)
            ops::adamw(p, w.data(), g.data(), m.data(), v.data(), n, s, ws);
          else
            ops::lamb(p, w.data(), g.data(), m.data(), v.data(), n, s, ws);
          w.insert(w.end(), m.begin(), m.end());
          w.insert(w.end(), v.begin(), v.end());
          return w;
        });
    }
  }
}

TEST_CASE("train_step_f32: a whole tiny step, fast equals plain in every output, gradient and parameter", "[replay]") {
  Config two_per_micro = tiny_config();
  two_per_micro.micro = 2;  // two sequences per micro-batch: attention per sequence, positions t mod S
  for (const Config& c : {tiny_config(), two_per_micro})
    for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb}) {
      Optimizer o;
      o.kind = kind;
      o.lr = 1e-2f;
      TensorSet params[2];
      OptState st[2];
      Recorder rec[2];
      float loss[2][2];
      for (int i = 0; i < 2; ++i) {
        Options opts;
        opts.path = kPaths[i];
        params[i] = init_params(c, 5);
        st[i] = init_opt_state(c);
        for (int step = 0; step < 2; ++step) loss[i][step] = train_step(c, params[i], st[i], step, 5, o, &rec[i], opts);
      }
      CHECK(float_bits(loss[0][0]) == float_bits(loss[1][0]));
      CHECK(float_bits(loss[0][1]) == float_bits(loss[1][1]));
      CHECK(same_bits(params[0], params[1]));
      CHECK(same_bits(st[0].grads, st[1].grads));
      CHECK(same_bits(st[0].m, st[1].m));
      CHECK(same_bits(st[0].v, st[1].v));
      REQUIRE(rec[0].outputs.size() == rec[1].outputs.size());
      for (const auto& [key, values] : rec[0].outputs) {
        INFO(std::get<0>(key) << " micro-batch " << std::get<1>(key) << " output " << std::get<2>(key));
        CHECK(same_bits(values, rec[1].outputs.at(key)));
      }
    }
}

TEST_CASE("train_step_f32: backward ops are the derivatives of the forward (finite differences in double)",
          "[replay]") {
  const Config c = tiny_config();
  const int64_t t = c.tokens(), d = c.dim, f = c.ffn, hd = c.head_dim();
  train_step_f32::Workspace ws;
  const Vec r = random_vec(t * f, 30);  // the objective sum(Y * R) gives dY = R
  SECTION("matmul") {
    const Vec x = random_vec(t * d, 31), w = random_vec(d * f, 32, 0.125f);
    Vec dx(t * d), dw(d * f);
    ops::matmul_dx(Path::plain, r.data(), w.data(), t, d, f, dx.data(), ws);
    ops::matmul_dw(Path::plain, x.data(), r.data(), t, d, f, dw.data(), ws);
    DVec xd = to_d(x), wd = to_d(w);
    auto fn = [&] { return dot(d_matmul(xd, wd, t, d, f), r); };
    check_grad("dx", dx, xd, fn);
    check_grad("dw", dw, wd, fn);
  }
  SECTION("rmsnorm") {
    const Vec x = random_vec(t * d, 33, 3.0f), w = random_vec(d, 34);
    Vec y(t * d), inv(t), dx(t * d), dw(d);
    ops::rmsnorm(Path::plain, x.data(), w.data(), t, d, y.data(), inv.data(), ws);
    ops::rmsnorm_back(Path::plain, x.data(), w.data(), inv.data(), r.data(), t, d, dx.data(), dw.data(), ws);
    DVec xd = to_d(x), wd = to_d(w);
    auto fn = [&] { return dot(d_rmsnorm(xd, wd, t, d), r); };
    check_grad("dx", dx, xd, fn);
    check_grad("dw", dw, wd, fn);
  }
  SECTION("rope") {
    const Vec x = random_vec(t * d, 35);
    const RopeTables tab = rope_tables(c.seq, hd);
    Vec dx(t * d);
    ops::rope_back(Path::plain, r.data(), t, c.heads, tab, dx.data(), ws);
    DVec xd = to_d(x);
    check_grad("dx", dx, xd, [&] { return dot(d_rope(xd, t, c.heads, hd, c.seq), r); });
  }
  SECTION("attention") {
    const Vec q = random_vec(t * d, 36, 2.0f), k = random_vec(t * d, 37, 2.0f), v = random_vec(t * d, 38);
    Vec dq(t * d), dk(t * d), dv(t * d);
    ops::attention_back(Path::plain, q.data(), k.data(), v.data(), r.data(), c.micro, c.seq, c.heads, hd, dq.data(),
                        dk.data(), dv.data(), ws);
    DVec qd = to_d(q), kd = to_d(k), vd = to_d(v);
    auto fn = [&] { return dot(d_attention(qd, kd, vd, c.micro, c.seq, c.heads, hd), r); };
    check_grad("dq", dq, qd, fn, 20);
    check_grad("dk", dk, kd, fn, 20);
    check_grad("dv", dv, vd, fn, 20);
  }
  SECTION("swiglu") {
    const Vec g = random_vec(t * f, 39, 6.0f), u = random_vec(t * f, 40);
    Vec dg(t * f), du(t * f);
    ops::swiglu_back(Path::plain, g.data(), u.data(), r.data(), t * f, dg.data(), du.data(), ws);
    DVec gd = to_d(g), ud = to_d(u);
    auto fn = [&] { return dot(d_swiglu(gd, ud), r); };
    check_grad("dg", dg, gd, fn);
    check_grad("du", du, ud, fn);
  }
  SECTION("cross-entropy (the mean's scaling included)") {
    const Vec logits = random_vec(t * c.vocab, 41, 4.0f);
    const Batch data = step_data(c, 3, 0);
    Vec dl(t * c.vocab);
    const float scale = pow2f(-5);
    ops::cross_entropy_back(Path::plain, logits.data(), data.targets.data(), t, c.vocab, scale, dl.data(), ws);
    DVec ld = to_d(logits);
    check_grad("dlogits", dl, ld, [&] { return d_cross_entropy(ld, data.targets.data(), t, c.vocab) * scale; });
  }
  SECTION("the whole tiny model's loss") {
    Config mc = tiny_config();
    mc.micro = 2;  // two sequences per micro-batch, two micro-batches
    TensorSet params = init_params(mc, 11);
    OptState st = init_opt_state(mc);
    Optimizer o;
    o.lr = 0.0f;  // AdamW with lr 0 leaves the parameters as they are: only the gradients are wanted
    train_step(mc, params, st, 2, 11, o);
    const Batch data = step_data(mc, 11, 2);
    DParams dp;
    for (const Tensor& tn : params.tensors) dp[tn.name] = to_d(tn.data);
    for (const Tensor& g : st.grads.tensors) {
      DVec& x = dp[g.name];
      check_grad(
          g.name.c_str(), g.data, x, [&] { return d_model_loss(mc, dp, data); }, 4);
    }
  }
}

TEST_CASE("train_step_f32: micro-batch gradients are accumulated in the specified order, and order matters",
          "[replay]") {
  const Config c = tiny_config();
  REQUIRE(c.micro_batches() >= 3);  // two terms commute; three or more need not associate
  const TensorSet params = init_params(c, 21);
  std::vector<TensorSet> g(static_cast<size_t>(c.micro_batches()));
  for (int mb = 0; mb < c.micro_batches(); ++mb) microbatch_gradients(c, params, 0, 21, mb, g[mb]);
  auto fold = [&](bool reversed) {
    TensorSet acc = g[reversed ? g.size() - 1 : 0];
    for (size_t i = 1; i < g.size(); ++i) {
      const TensorSet& next = g[reversed ? g.size() - 1 - i : i];
      for (size_t tn = 0; tn < acc.tensors.size(); ++tn)
        for (size_t e = 0; e < acc.tensors[tn].data.size(); ++e)
          acc.tensors[tn].data[e] = acc.tensors[tn].data[e] + next.tensors[tn].data[e];
    }
    return acc;
  };
  const TensorSet forward = fold(false), reversed = fold(true);
  Optimizer o;
  OptState st[2] = {init_opt_state(c), init_opt_state(c)};
  TensorSet p[2] = {params, params};
  for (int run = 0; run < 2; ++run) train_step(c, p[run], st[run], 0, 21, o);
  CHECK(same_bits(st[0].grads, forward));  // train_step's accumulation is the left fold from micro-batch 0
  CHECK(same_bits(st[0].grads, st[1].grads));
  CHECK(same_bits(p[0], p[1]));
  int64_t differing = 0;
  for (size_t tn = 0; tn < forward.tensors.size(); ++tn)
    for (size_t e = 0; e < forward.tensors[tn].data.size(); ++e)
      differing += float_bits(forward.tensors[tn].data[e]) != float_bits(reversed.tensors[tn].data[e]);
  INFO("elements whose bits depend on the order: " << differing);
  CHECK(differing > 0);
}

TEST_CASE("train_step_f32: tiny training lowers the loss with AdamW and LAMB, reproducibly", "[replay]") {
  const Config c = tiny_config();
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb}) {
    Optimizer o;
    o.kind = kind;
    o.lr = 1e-2f;
    TensorSet p1, p2;
    const std::vector<float> l1 = train(c, 20, 77, o, nullptr, {}, &p1);
    const std::vector<float> l2 = train(c, 20, 77, o, nullptr, {}, &p2);
    REQUIRE(l1.size() == 20);
    CHECK(same_bits(l1, l2));
    CHECK(same_bits(p1, p2));
    float first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += l1[i], last += l1[15 + i];
    INFO((kind == OptimizerKind::adamw ? "adamw" : "lamb")
         << ": first five " << first / 5 << ", last five " << last / 5);
    CHECK(last / 5 < first / 5 - (kind == OptimizerKind::adamw ? 1.0f : 0.3f));
    CHECK(l1[19] < l1[0]);
  }
}

TEST_CASE("train_step_f32: submodules are unique, reported in execution order, and observable", "[replay]") {
  const Config c = tiny_config();
  const std::vector<Submodule> subs = submodules(c);
  std::set<std::string> names;
  for (size_t i = 0; i < subs.size(); ++i) {
    CHECK(subs[i].index == static_cast<int>(i));
    CHECK(names.insert(subs[i].name).second);
  }
  CHECK(names.count("layer1.attn.wo.forward"));
  CHECK(names.count("layer0.mlp.down.backward"));
  CHECK(names.count("lm_head.backward"));
  CHECK(names.count("loss.forward"));
  Optimizer o;
  TensorSet params = init_params(c, 3);
  OptState st = init_opt_state(c);
  Recorder clean;
  train_step(c, params, st, 0, 3, o, &clean);
  const TensorSet clean_grads = st.grads, clean_params = params;

  SECTION("every submodule reports every output, in execution order") {
    // Calls go micro-batch by micro-batch; within one, submodule indices rise and a submodule's outputs
    // come in their order. Every (submodule, output) appears: forward and backward in every micro-batch,
    // accumulation from micro-batch 1 on, loss and optimizer once.
    // Order key: (micro-batch, with the step-level passes last; submodule index; output index).
    std::tuple<int64_t, int, int> prev{-1, 0, 0};
    std::set<std::tuple<int, int, int>> seen;
    for (const auto& call : clean.calls) {
      const auto [idx, mb, out] = call;
      const std::tuple<int64_t, int, int> key{mb < 0 ? c.micro_batches() : mb, idx, out};
      CHECK(key > prev);
      const Submodule& s = subs[static_cast<size_t>(idx)];
      CHECK((mb < 0) == (s.pass == Pass::loss || s.pass == Pass::optimizer));
      CHECK(out < static_cast<int>(s.outputs.size()));
      seen.insert(call);
      prev = key;
    }
    size_t expected = 0;
    for (const Submodule& s : subs) {
      const size_t runs = s.pass == Pass::forward || s.pass == Pass::backward ? c.micro_batches()
                          : s.pass == Pass::accumulate                        ? c.micro_batches() - 1
                                                                              : 1;
      expected += runs * s.outputs.size();
    }
    CHECK(seen.size() == expected);
    CHECK(std::get<0>(clean.calls.back()) == static_cast<int>(subs.size()) - 1);
  }

  SECTION("substituting an output changes what follows; substituting the golden one restores everything") {
    struct Zero final : Observer {
      void output(const Submodule& s, const Site& at, std::span<float> out) override {
        if (s.name == "layer1.attn.wo.forward" && at.microbatch == 1) std::fill(out.begin(), out.end(), 0.0f);
      }
    } zero;
    TensorSet p2 = init_params(c, 3);
    OptState s2 = init_opt_state(c);
    train_step(c, p2, s2, 0, 3, o, &zero);
    CHECK_FALSE(same_bits(s2.grads["layer1.mlp.down"].data, clean_grads["layer1.mlp.down"].data));
    CHECK(same_bits(s2.grads["lm_head"].data, clean_grads["lm_head"].data) == false);

    // A bit flip in the middle of the backward, caught and replaced by computation sync: the step ends
    // exactly as the clean one and exactly one output was found wrong.
    Sync sync(clean);
    BitFlipInjector inject({"layer0.attn.core.backward", 1, 0, 2, 17, 20}, &sync);
    TensorSet p3 = init_params(c, 3);
    OptState s3 = init_opt_state(c);
    train_step(c, p3, s3, 0, 3, o, &inject);
    CHECK(inject.fired());
    REQUIRE(sync.mismatches.size() == 1);
    CHECK(sync.mismatches[0] == "layer0.attn.core.backward#1");
    CHECK(same_bits(s3.grads, clean_grads));
    CHECK(same_bits(p3, clean_params));
  }

  SECTION("a bit flip in layer0.mlp.down.backward reaches layer 0 and the embedding, not what came before") {
    // Token 5, not 0: position 0 attends only to itself, so its query and key get no gradient at all.
    BitFlipInjector inject({"layer0.mlp.down.backward", 0, 0, 0, 5 * c.ffn + 7, 22});
    TensorSet p2 = init_params(c, 3);
    OptState s2 = init_opt_state(c);
    train_step(c, p2, s2, 0, 3, o, &inject);
    REQUIRE(inject.fired());
    for (const Tensor& g : s2.grads.tensors) {
      const bool before = g.name == "lm_head" || g.name == "final_norm" || g.name.rfind("layer1.", 0) == 0 ||
                          g.name == "layer0.mlp.down";  // its dw does not depend on its dx
      INFO(g.name);
      CHECK(same_bits(g.data, clean_grads[g.name].data) == before);
    }
  }
}

TEST_CASE("train_step_f32: own sine and cosine are within a few ulps over the rotary angles", "[replay]") {
  int64_t worst_sin = 0, worst_cos = 0;
  double worst_abs = 0;
  auto check = [&](float a) {
    const float s = sdc_sinf(a), co = sdc_cosf(a);
    const double ds = std::sin(static_cast<double>(a)), dc = std::cos(static_cast<double>(a));
    worst_sin = std::max(worst_sin, ulps(s, static_cast<float>(ds)));
    worst_cos = std::max(worst_cos, ulps(co, static_cast<float>(dc)));
    worst_abs = std::max({worst_abs, std::fabs(s - ds), std::fabs(co - dc)});
  };
  // Every angle the presets can use (positions below 8192, head dims 32..128), then a dense sweep.
  const float log_theta = sdc_logf(ROPE_THETA);
  for (int64_t hd : {16, 32, 64, 128})
    for (int64_t i = 0; i < hd / 2; ++i) {
      const float f = rope_inv_freq(i, hd, log_theta);
      for (int64_t p = 0; p < 8192; ++p) check(rope_angle(p, f));
    }
  for (float a = -8192.0f; a <= 8192.0f; a += 0.0137f) check(a);
  for (float a = 1e-30f; a < 1.0f; a *= 1.37f) check(a), check(-a);
  INFO("max ulps: sin " << worst_sin << ", cos " << worst_cos << "; max absolute error " << worst_abs);
  CHECK(worst_sin <= 3);  // measured: 2
  CHECK(worst_cos <= 3);  // measured: 2
  CHECK(worst_abs < 1.2e-7);
  CHECK(float_bits(sdc_sinf(0.0f)) == float_bits(0.0f));
  CHECK(sdc_cosf(0.0f) == 1.0f);
}

// ---- the family: a tile is one replay (kernels/train_step_f32/train_step_f32_family.cpp) ----------------------

namespace sdc::train_step_f32 {
Family family();
}

namespace {

Case replay_case(int level, int steps, int optimizer = 0) {
  Case c;
  c.id = "train_step_f32.test";
  c.family = "train_step_f32";
  c.data_seed = 7;
  c.shape.dims = {{"preset", 0}, {"level", level}, {"steps", steps}, {"optimizer", optimizer}, {"replicas", 2}};
  return c;
}

Vec replay_tile(const Problem& p, const Injection* inj = nullptr) {
  Vec out(p.tile_elements());
  sdc::Workspace ws;
  const float* in = nullptr;
  if (inj) {
    REQUIRE(p.replay());
    REQUIRE(p.replay()->compute_tile_with_fault(&in, 0, out.data(), ws, *inj));
  } else {
    p.compute_tile(&in, 0, out.data(), ws);
  }
  return out;
}

// The slot names (without the replica) whose bits differ.
std::vector<std::string> differing(const Problem& p, const Vec& a, const Vec& b) {
  std::vector<std::string> names;
  for (uint32_t e = 0; e < p.tile_elements(); ++e)
    if (float_bits(a[e]) != float_bits(b[e]))
      names.push_back(p.element_name(e).substr(std::string("replica 0: ").size()));
  return names;
}

bool any_starts(const std::vector<std::string>& names, const std::string& prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

Injection replay_fault(const std::string& sub, int64_t step, int mb, int output, uint64_t element, int bit) {
  Injection inj;
  inj.submodule = sub;
  inj.step = step;
  inj.microbatch = mb;
  inj.output = output;
  inj.element = element;
  inj.mask = 1u << bit;
  return inj;
}

}  // namespace

TEST_CASE("train_step_f32 family: a replay tile's fast path equals the plain path; names are unique", "[replay]") {
  const Family f = family();
  for (int level : {12, 3})
    for (int opt : {0, 1}) {
      const Case c = replay_case(level, 3, opt);
      REQUIRE(f.validate(c).empty());
      const auto p = f.prepare(c);
      const Vec fast = replay_tile(*p);
      Vec plain(p->tile_elements());
      const float* in = nullptr;
      p->compute_tile_scalar(&in, 1, plain.data());
      CHECK(same_bits(fast, plain));
      for (float x : fast) CHECK(x == x);  // no NaN: goldens refuse them
      std::set<std::string> names;
      for (uint64_t e = 0; e < p->output_elements(); ++e) names.insert(p->element_name(e));
      CHECK(names.size() == p->output_elements());
      if (level == 12) {  // a healthy replay's metrics are exactly 0
        for (uint32_t e = 0; e < p->tile_elements(); ++e) {
          const std::string n = p->element_name(e);
          if (n.find("mismatch_") != std::string::npos || n.find("grad_diff_ratio") != std::string::npos)
            CHECK(fast[e] == 0.0f);
        }
      } else {
        CHECK(fast[p->tile_elements() - 2] == 0.0f);  // param_distance
        CHECK(fast[p->tile_elements() - 1] == 0.0f);  // loss_spike
      }
    }
  Case bad = replay_case(12, 1);
  bad.shape.dims["preset"] = 2;
  CHECK_FALSE(f.validate(bad).empty());
}

TEST_CASE(
    "train_step_f32 family: a fault in one submodule shows at its L1 slots only, in the L2 tensors it reaches, "
    "and in level 3 from its step on",
    "[replay]") {
  const Family f = family();
  {
    const auto p = f.prepare(replay_case(12, 1));
    const Vec clean = replay_tile(*p);
    // token 5 of micro-batch 1 (token 0 attends to itself alone: its query and key get no gradient)
    Injection inj = replay_fault("layer0.mlp.down.backward", 0, 1, 0, 5 * 192 + 100, 20);
    REQUIRE(p->replay()->check_fault(inj).empty());
    const auto d = differing(*p, replay_tile(*p, &inj), clean);
    std::vector<std::string> l1;
    for (const auto& n : d)
      if (n.rfind("L1 ", 0) == 0) l1.push_back(n);
    REQUIRE_FALSE(l1.empty());
    for (const auto& n : l1) CHECK(n.rfind("L1 layer0.mlp.down.backward mb 1 out 0 digest.", 0) == 0);
    CHECK(any_starts(d, "L2 grad layer0.mlp.up "));
    CHECK(any_starts(d, "L2 grad layer0.attn.wq "));
    CHECK(any_starts(d, "L2 grad embed "));
    CHECK(any_starts(d, "L2 param layer0.mlp.gate "));
    CHECK_FALSE(any_starts(d, "L2 grad layer0.mlp.down "));  // its dw does not read its dx
    CHECK_FALSE(any_starts(d, "L2 grad layer1."));
    CHECK_FALSE(any_starts(d, "L2 grad lm_head "));
    CHECK_FALSE(any_starts(d, "L2 grad final_norm "));
    CHECK(any_starts(d, "L2 grad layer0.mlp.up mismatch_frequency"));
    CHECK(any_starts(d, "L2 grad layer0.mlp.up grad_diff_ratio"));

    Injection unknown = replay_fault("layer0.mlp.nothing.backward", 0, 0, 0, 0, 3);
    CHECK_FALSE(p->replay()->check_fault(unknown).empty());
    Injection late = replay_fault("layer0.mlp.down.backward", 1, 0, 0, 0, 3);
    CHECK_FALSE(p->replay()->check_fault(late).empty());
    Injection outside = replay_fault("loss.step", 0, 0, 0, 1, 3);
    CHECK_FALSE(p->replay()->check_fault(outside).empty());
  }
  {
    const auto p = f.prepare(replay_case(3, 4));
    const Vec clean = replay_tile(*p);
    Injection inj = replay_fault("layer0.mlp.down.backward", 2, 0, 0, 100, 20);
    REQUIRE(p->replay()->check_fault(inj).empty());
    const auto d = differing(*p, replay_tile(*p, &inj), clean);
    REQUIRE_FALSE(d.empty());
    CHECK(d.front().rfind("L3 step 2 ", 0) == 0);
    CHECK_FALSE(any_starts(d, "L3 step 0 "));
    CHECK_FALSE(any_starts(d, "L3 step 1 "));
    CHECK(any_starts(d, "L3 step 3 "));
    CHECK(any_starts(d, "L3 final param_distance"));
  }
}
