// The operations of train_step_f32 on the CPU, the plain path: the specification of train_step_f32.h as
// scalar loops, each output's chain from +0 in its order, its pairwise tree and its fold, vectorization
// disabled (the fast path of train_step_f32_ops.cpp must give these bits; the device replay's kernels follow
// them output by output).
#include "kernels/train_step_f32/train_step_f32_spec.h"

#include <algorithm>
#include <cmath>

#include "kernels/gemm_cpu/gemm_cpu.h"

#define SDC_PLAIN __attribute__((optimize("no-tree-vectorize")))

namespace sdc::train_step_f32::plain {

SDC_PLAIN void matmul(const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y) {
  gemm_cpu::tile_scalar(x, w, k, n, 0, 0, t, n, y);
}

SDC_PLAIN void matmul_dx(const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx) {
  for (int64_t i = 0; i < t; ++i)
    for (int64_t kk = 0; kk < k; ++kk) {
      float acc = +0.0f;
      for (int64_t j = 0; j < n; ++j) acc = std::fma(dy[i * n + j], w[kk * n + j], acc);
      dx[i * k + kk] = acc;
    }
}

SDC_PLAIN void matmul_dw(const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw) {
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j) {
      float acc = +0.0f;
      for (int64_t i = 0; i < t; ++i) acc = std::fma(x[i * k + kk], dy[i * n + j], acc);
      dw[kk * n + j] = acc;
    }
}

SDC_PLAIN void rmsnorm(const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv) {
  for (int64_t r = 0; r < rows; ++r) inv[r] = rmsnorm_row(x + r * cols, w, cols, y + r * cols);
}

SDC_PLAIN void rmsnorm_back(const float* x, const float* w, const float* inv, const float* dy, int64_t rows,
                            int64_t cols, float* dx, float* dw) {
  for (int64_t r = 0; r < rows; ++r) rmsnorm_back_row(x + r * cols, dy + r * cols, w, inv[r], cols, dx + r * cols);
  for (int64_t j = 0; j < cols; ++j) dw[j] = rmsnorm_dw(x, inv, dy, rows, cols, j);
}

SDC_PLAIN void rope(const float* x, int64_t t, int64_t heads, const RopeTables& tab, float* y, bool back) {
  const int64_t dh = tab.head_dim, pairs = dh / 2, d = heads * dh;
  for (int64_t i = 0; i < t; ++i) {
    const int64_t p = i % tab.seq;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t q = 0; q < pairs; ++q) {
        const float c = tab.cos[static_cast<size_t>(p * pairs + q)], s = tab.sin[static_cast<size_t>(p * pairs + q)];
        const int64_t e = i * d + h * dh + 2 * q;
        const Pair r = back ? rope_rotate_back(x[e], x[e + 1], c, s) : rope_rotate(x[e], x[e + 1], c, s);
        y[e] = r.a;
        y[e + 1] = r.b;
      }
  }
}

SDC_PLAIN void attention(const float* q, const float* k, const float* v, int64_t seqs, int64_t s, int64_t heads,
                         int64_t dh, float* o, Workspace& ws) {
  const int64_t ld = heads * dh;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* p = grow(ws.a, s);
  for (int64_t b = 0; b < seqs; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = b * s * ld + h * dh;
      for (int64_t i = 0; i < s; ++i) {
        const float l = attention_score_row(q + off, k + off, i, ld, dh, scale, p);
        for (int64_t e = 0; e < dh; ++e) {
          float acc = +0.0f;
          for (int64_t j = 0; j <= i; ++j) acc = std::fma(p[j], v[off + j * ld + e], acc);
          o[off + i * ld + e] = acc / l;
        }
      }
    }
}

SDC_PLAIN void attention_back(const float* q, const float* k, const float* v, const float* d_o, int64_t seqs, int64_t s,
                              int64_t heads, int64_t dh, float* dq, float* dk, float* dv, Workspace& ws) {
  const int64_t ld = heads * dh;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* pm = grow(ws.a, s * s);  // P, row i holds keys 0..i
  float* ds = grow(ws.b, s * s);  // dS
  float* dp = grow(ws.c, s);
  for (int64_t b = 0; b < seqs; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = b * s * ld + h * dh;
      for (int64_t i = 0; i < s; ++i) {
        float* pr = pm + i * s;
        const float l = attention_score_row(q + off, k + off, i, ld, dh, scale, pr);
        const int64_t n = i + 1;
        for (int64_t j = 0; j < n; ++j) pr[j] = pr[j] / l;
        for (int64_t j = 0; j < n; ++j) {
          float acc = +0.0f;
          for (int64_t e = 0; e < dh; ++e) acc = std::fma(d_o[off + i * ld + e], v[off + j * ld + e], acc);
          dp[j] = acc;
        }
        const float r = pairwise_sum([&](uint32_t j) { return pr[j] * dp[j]; }, static_cast<uint32_t>(n));
        for (int64_t j = 0; j < n; ++j) ds[i * s + j] = (pr[j] * (dp[j] - r)) * scale;
      }
      for (int64_t i = 0; i < s; ++i)
        for (int64_t e = 0; e < dh; ++e) {
          float acc = +0.0f;
          for (int64_t j = 0; j <= i; ++j) acc = std::fma(ds[i * s + j], k[off + j * ld + e], acc);
          dq[off + i * ld + e] = acc;
        }
      for (int64_t j = 0; j < s; ++j)
        for (int64_t e = 0; e < dh; ++e) {
          float ak = +0.0f, av = +0.0f;
          for (int64_t i = j; i < s; ++i) {
            ak = std::fma(ds[i * s + j], q[off + i * ld + e], ak);
            av = std::fma(pm[i * s + j], d_o[off + i * ld + e], av);
          }
          dk[off + j * ld + e] = ak;
          dv[off + j * ld + e] = av;
        }
    }
}

SDC_PLAIN void swiglu(const float* g, const float* u, int64_t n, float* z) {
  for (int64_t i = 0; i < n; ++i) z[i] = train_step_f32::swiglu(g[i], u[i]);
}

SDC_PLAIN void swiglu_back(const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du) {
  for (int64_t i = 0; i < n; ++i) {
    const Pair r = train_step_f32::swiglu_back(g[i], u[i], dz[i]);
    dg[i] = r.a;
    du[i] = r.b;
  }
}

SDC_PLAIN void cross_entropy(const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float* loss) {
  for (int64_t i = 0; i < t; ++i) {
    const float* x = logits + i * vocab;
    float m, s;
    softmax_row_stats(x, vocab, m, s);
    loss[i] = (m + sdc_logf(s)) - x[targets[i]];
  }
}

SDC_PLAIN void cross_entropy_back(const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float scale,
                                  float* dl) {
  for (int64_t i = 0; i < t; ++i) {
    const float* x = logits + i * vocab;
    float m, s;
    softmax_row_stats(x, vocab, m, s);
    for (int64_t j = 0; j < vocab; ++j) {
      float p = sdc_expf(x[j] - m) / s;
      if (j == targets[i]) p = p - 1.0f;
      dl[i * vocab + j] = p * scale;
    }
  }
}

SDC_PLAIN void embedding(const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y) {
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < d; ++j) y[i * d + j] = table[tokens[i] * d + j];
}

SDC_PLAIN void embedding_back(const float* dy, const int32_t* tokens, int64_t t, int64_t vocab, int64_t d,
                              float* dtable) {
  for (int64_t i = 0; i < vocab * d; ++i) dtable[i] = +0.0f;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < d; ++j) dtable[tokens[i] * d + j] = dtable[tokens[i] * d + j] + dy[i * d + j];
}

SDC_PLAIN void add(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

SDC_PLAIN float sum(const float* x, int64_t n) {
  return pairwise_sum([x](uint32_t i) { return x[i]; }, static_cast<uint32_t>(n));
}

SDC_PLAIN void adamw(float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
  for (int64_t i = 0; i < n; ++i) w[i] = adamw_element(w[i], g[i], m[i], v[i], s);
}

SDC_PLAIN void lamb(float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, float* u) {
  for (int64_t i = 0; i < n; ++i) u[i] = lamb_direction(w[i], g[i], m[i], v[i], s);
  const auto nn = static_cast<uint32_t>(n);
  const float wn = std::sqrt(pairwise_sum([w](uint32_t i) { return w[i] * w[i]; }, nn));
  const float un = std::sqrt(pairwise_sum([u](uint32_t i) { return u[i] * u[i]; }, nn));
  const float lr_trust = s.lr * lamb_trust(wn, un);
  for (int64_t i = 0; i < n; ++i) w[i] = lamb_apply(w[i], u[i], lr_trust);
}

}  // namespace sdc::train_step_f32::plain
