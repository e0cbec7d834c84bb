// Training-step replay's backward (kernels/train_step_f32): every backward op is the derivative of its
// forward, checked by finite differences of an independent double-precision forward of the model.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "kernels/train_step_f32/train_step_f32_model.h"
#include "tests/unit/train_step_test.h"

using namespace sdc;
using namespace sdc::train_step_f32;
using namespace train_step_test;

namespace {

using DVec = std::vector<double>;

DVec to_d(const Vec& v) { return DVec(v.begin(), v.end()); }

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
  // Under a sanitizer (SDC_SANITIZED, the suite's environment) a third of the elements: each one is two runs of
  // the double-precision forward, and what a sanitizer looks for does not grow with their count.
  if (std::getenv("SDC_SANITIZED")) samples = std::max(samples / 3, 3);
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

}  // namespace

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
    // Under a sanitizer (SDC_SANITIZED) three tensors, the first, a middle one and the last (the model's whole
    // chain of backward ops runs for each; the release suite checks every tensor): each sample is two
    // double-precision runs of the whole model.
    const size_t n_tensors = st.grads.tensors.size();
    const bool sanitized = std::getenv("SDC_SANITIZED") != nullptr;
    for (size_t i = 0; i < n_tensors; ++i) {
      if (sanitized && i != 0 && i != n_tensors / 2 && i != n_tensors - 1) continue;
      const Tensor& g = st.grads.tensors[i];
      DVec& x = dp[g.name];
      check_grad(
          g.name.c_str(), g.data, x, [&] { return d_model_loss(mc, dp, data); }, 4);
    }
  }
}
