// The operations of train_step_f32 on the CPU: the fast path of each, and the choice of path (the plain
// path, the specification, is train_step_f32_spec.cpp).
//
// Why the fast paths give the specification's bits:
//  * Matmuls go through gemm_cpu::tile_fast, whose every output is the chain from +0 with k ascending.
//    A transposed operand is copied first (a copy is the identity), so dY W^T and X^T dY become plain
//    products whose k index is the specification's chain index (j for dX, the token for dW).
//  * Causal attention runs its chains through the masked entries of the S x S matrices with the value +0;
//    a zero step leaves a chain from +0 unchanged (train_step_f32.h, "Zero steps").
//  * Reductions use lanes.h's pairwise tree (the tree of fpmath.h, level by level) and fold_max.
//  * Element loops are compiled in instruction-set clones and vectorized by the compiler: each lane is an
//    independent output computed by the same operations (the file is built with -ffp-contract=off and
//    without fast-math, so nothing is fused or reassociated).
#include "kernels/train_step_f32/train_step_f32_ops.h"

#include <algorithm>
#include <cmath>

#include "src/spec/clones.h"
#include "src/spec/lanes.h"
#include "kernels/gemm_cpu/gemm_cpu.h"
#include "kernels/train_step_f32/train_step_f32_spec.h"

#define SDC_CLONES SDC_TARGET_CLONES("avx512f", "fma", "default")

namespace sdc::train_step_f32 {

RopeTables rope_tables(int64_t seq, int64_t head_dim) {
  RopeTables tab;
  tab.seq = seq;
  tab.head_dim = head_dim;
  const int64_t pairs = head_dim / 2;
  tab.cos.resize(static_cast<size_t>(seq * pairs));
  tab.sin.resize(tab.cos.size());
  const float log_theta = sdc_logf(ROPE_THETA);
  for (int64_t i = 0; i < pairs; ++i) {
    const float f = rope_inv_freq(i, head_dim, log_theta);
    for (int64_t p = 0; p < seq; ++p) {
      const float a = rope_angle(p, f);
      tab.cos[static_cast<size_t>(p * pairs + i)] = sdc_cosf(a);
      tab.sin[static_cast<size_t>(p * pairs + i)] = sdc_sinf(a);
    }
  }
  return tab;
}

namespace {

using std::size_t;

// ---------------------------------------------------------------------------------------------------------
// fast: gemm tiles, vectorized trees and element loops
// ---------------------------------------------------------------------------------------------------------
namespace fast {

constexpr int64_t kRowBlock = 256;  // rows per gemm call; the call sweeps all N columns in 64-wide panels

// C (M x N) = A (M x K) B (K x N), written in place row block by row block.
void gemm(const float* a, const float* b, int64_t m, int64_t k, int64_t n, float* c, Workspace& ws) {
  for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
    const int64_t mt = std::min(kRowBlock, m - i0);
    gemm_cpu::tile_fast(a, b, k, n, i0, 0, mt, n, c + i0 * n, ws.gemm);
  }
}

// dst (cols x rows) = src (rows x cols, leading dimension ld)^T
void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  constexpr int64_t kB = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kB)
    for (int64_t c0 = 0; c0 < cols; c0 += kB)
      for (int64_t c = c0; c < std::min(cols, c0 + kB); ++c)
        for (int64_t r = r0; r < std::min(rows, r0 + kB); ++r) dst[c * rows + r] = src[r * ld + c];
}

// dst (rows x cols) = the column slice of src (leading dimension ld)
void gather(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  for (int64_t r = 0; r < rows; ++r) std::copy(src + r * ld, src + r * ld + cols, dst + r * cols);
}

void scatter(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  for (int64_t r = 0; r < rows; ++r) std::copy(src + r * cols, src + (r + 1) * cols, dst + r * ld);
}

float tree(const float* x, int64_t n, Workspace& ws) {
  return lanes::pairwise_sum(x, static_cast<uint32_t>(n), ws.sum);
}

SDC_CLONES void mul(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

SDC_CLONES void fma_rows(const float* a, const float* b, int64_t n, float* acc) {
  for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(a[i], b[i], acc[i]);
}

SDC_CLONES void rmsnorm_dx_row(const float* gw, const float* xh, float c, float iv, int64_t n, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = rmsnorm_dx(gw[i], xh[i], c, iv);
}

SDC_CLONES void add_v(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

SDC_CLONES void swiglu(const float* g, const float* u, int64_t n, float* z) {
  for (int64_t i = 0; i < n; ++i) z[i] = train_step_f32::swiglu(g[i], u[i]);
}

SDC_CLONES void swiglu_back(const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du) {
  for (int64_t i = 0; i < n; ++i) {
    const Pair r = train_step_f32::swiglu_back(g[i], u[i], dz[i]);
    dg[i] = r.a;
    du[i] = r.b;
  }
}

// Rotates one row of `heads` heads; lanes are the pairs (independent outputs).
SDC_CLONES void rope_row(const float* x, int64_t heads, int64_t dh, const float* c, const float* s, float* y,
                         bool back) {
  const int64_t pairs = dh / 2;
  for (int64_t h = 0; h < heads; ++h) {
    const float* xh = x + h * dh;
    float* yh = y + h * dh;
    for (int64_t q = 0; q < pairs; ++q) {
      const float x0 = xh[2 * q], x1 = xh[2 * q + 1];
      const Pair r = back ? rope_rotate_back(x0, x1, c[q], s[q]) : rope_rotate(x0, x1, c[q], s[q]);
      yh[2 * q] = r.a;
      yh[2 * q + 1] = r.b;
    }
  }
}

// Every row of x (T x H*D), position t mod S; back: the inverse rotation (the backward).
void rope(const float* x, int64_t t, int64_t heads, const RopeTables& tab, float* y, bool back) {
  const int64_t dh = tab.head_dim, pairs = dh / 2;
  for (int64_t i = 0; i < t; ++i) {
    const int64_t p = i % tab.seq;
    rope_row(x + i * heads * dh, heads, dh, tab.cos.data() + p * pairs, tab.sin.data() + p * pairs, y + i * heads * dh,
             back);
  }
}

SDC_CLONES void attn_ds_row(const float* p, const float* dp, float r, float scale, int64_t n, float* ds) {
  for (int64_t j = 0; j < n; ++j) ds[j] = (p[j] * (dp[j] - r)) * scale;
}

SDC_CLONES void adamw(float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
  for (int64_t i = 0; i < n; ++i) w[i] = adamw_element(w[i], g[i], m[i], v[i], s);
}

SDC_CLONES void lamb_dir(const float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, float* u) {
  for (int64_t i = 0; i < n; ++i) u[i] = lamb_direction(w[i], g[i], m[i], v[i], s);
}

SDC_CLONES void lamb_apply_v(float* w, const float* u, float lr_trust, int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] = lamb_apply(w[i], u[i], lr_trust);
}

SDC_CLONES void ce_grad_row(const float* x, float m, float s, float scale, int32_t target, int64_t n, float* dl) {
  for (int64_t j = 0; j < n; ++j) {
    float p = sdc_expf(x[j] - m) / s;
    p = j == target ? p - 1.0f : p;
    dl[j] = p * scale;
  }
}

// The softmax statistics of one row of n logits: its maximum and the pairwise sum of exp(x - max).
struct RowStats {
  float max, sum;
};
RowStats row_stats(const float* x, int64_t n, Workspace& ws) {
  float* e = grow(ws.b, n);
  const auto un = static_cast<uint32_t>(n);
  const float m = lanes::fold_max(x, un);
  lanes::exp_shifted(x, m, e, un);
  return {m, tree(e, n, ws)};
}

// Q K^T scores of one head and sequence with the causal softmax numerators; returns nothing, fills p
// (S x S, masked entries +0) and l (S). qh, kt: packed S x D and D x S.
void scores(const float* qh, const float* kt, int64_t s, int64_t dh, float scale, float* p, float* l, Workspace& ws) {
  gemm(qh, kt, s, dh, s, p, ws);
  for (int64_t i = 0; i < s; ++i) {
    float* row = p + i * s;
    const auto n = static_cast<uint32_t>(i + 1);
    lanes::scale(row, scale, row, n);
    const float m = lanes::fold_max(row, n);
    lanes::exp_shifted(row, m, row, n);
    l[i] = tree(row, n, ws);
    std::fill(row + n, row + s, 0.0f);
  }
}

}  // namespace fast
}  // namespace

namespace ops {

void matmul(Path path, const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y, Workspace& ws) {
  if (path == Path::plain) return plain::matmul(x, w, t, k, n, y);
  fast::gemm(x, w, t, k, n, y, ws);
}

void matmul_dx(Path path, const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx, Workspace& ws) {
  if (path == Path::plain) return plain::matmul_dx(dy, w, t, k, n, dx);
  float* wt = grow(ws.a, n * k);  // W^T, N x K
  fast::transpose(w, k, n, n, wt);
  fast::gemm(dy, wt, t, n, k, dx, ws);
}

void matmul_dw(Path path, const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw, Workspace& ws) {
  if (path == Path::plain) return plain::matmul_dw(x, dy, t, k, n, dw);
  float* xt = grow(ws.a, k * t);  // X^T, K x T
  fast::transpose(x, t, k, k, xt);
  fast::gemm(xt, dy, k, t, n, dw, ws);
}

void rmsnorm(Path path, const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv,
             Workspace& ws) {
  if (path == Path::plain) return plain::rmsnorm(x, w, rows, cols, y, inv);
  float* sq = grow(ws.b, cols);
  const auto n = static_cast<uint32_t>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    lanes::square(x + r * cols, sq, n);
    const float ms = fast::tree(sq, cols, ws) / static_cast<float>(cols);
    const float iv = 1.0f / std::sqrt(ms + RMS_EPS);
    inv[r] = iv;
    lanes::scale_mul(x + r * cols, iv, w, y + r * cols, n);
  }
}

void rmsnorm_back(Path path, const float* x, const float* w, const float* inv, const float* dy, int64_t rows,
                  int64_t cols, float* dx, float* dw, Workspace& ws) {
  if (path == Path::plain) return plain::rmsnorm_back(x, w, inv, dy, rows, cols, dx, dw);
  float* xh = grow(ws.b, cols);
  float* gw = grow(ws.c, cols);
  float* pr = grow(ws.d, cols);
  std::fill(dw, dw + cols, 0.0f);
  const auto n = static_cast<uint32_t>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    lanes::scale(x + r * cols, inv[r], xh, n);
    fast::mul(dy + r * cols, w, cols, gw);
    fast::mul(gw, xh, cols, pr);
    const float c = fast::tree(pr, cols, ws) / static_cast<float>(cols);
    fast::rmsnorm_dx_row(gw, xh, c, inv[r], cols, dx + r * cols);
    fast::fma_rows(dy + r * cols, xh, cols, dw);  // one step of each column's chain over rows
  }
}

void rope(Path path, const float* x, int64_t t, int64_t heads, const RopeTables& tab, float* y, Workspace&) {
  if (path == Path::plain) return plain::rope(x, t, heads, tab, y, false);
  fast::rope(x, t, heads, tab, y, false);
}

void rope_back(Path path, const float* dy, int64_t t, int64_t heads, const RopeTables& tab, float* dx, Workspace&) {
  if (path == Path::plain) return plain::rope(dy, t, heads, tab, dx, true);
  fast::rope(dy, t, heads, tab, dx, true);
}

void attention(Path path, const float* q, const float* k, const float* v, int64_t seqs, int64_t s, int64_t heads,
               int64_t dh, float* o, Workspace& ws) {
  if (path == Path::plain) return plain::attention(q, k, v, seqs, s, heads, dh, o, ws);
  const int64_t ld = heads * dh;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  float* qh = grow(ws.a, s * dh);
  float* kt = grow(ws.b, s * dh);
  float* vh = grow(ws.c, s * dh);
  float* p = grow(ws.d, s * s);
  float* oh = grow(ws.e, s * dh + s);
  float* l = oh + s * dh;
  for (int64_t b = 0; b < seqs; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = b * s * ld + h * dh;
      fast::gather(q + off, s, dh, ld, qh);
      fast::transpose(k + off, s, dh, ld, kt);
      fast::gather(v + off, s, dh, ld, vh);
      fast::scores(qh, kt, s, dh, scale, p, l, ws);
      fast::gemm(p, vh, s, s, dh, oh, ws);  // chains over keys j, masked keys add +0 at the end
      for (int64_t i = 0; i < s; ++i) lanes::divide(oh + i * dh, l[i], oh + i * dh, static_cast<uint32_t>(dh));
      fast::scatter(oh, s, dh, ld, o + off);
    }
}

void attention_back(Path path, const float* q, const float* k, const float* v, const float* d_o, int64_t seqs,
                    int64_t s, int64_t heads, int64_t dh, float* dq, float* dk, float* dv, Workspace& ws) {
  if (path == Path::plain) return plain::attention_back(q, k, v, d_o, seqs, s, heads, dh, dq, dk, dv, ws);
  const int64_t ld = heads * dh;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  // a: the q, k, do slices (S x D each) and K^T or V^T; b: P; c: dP then dS; d: products, then transposes;
  // e: one result slice; f: l
  float* qh = grow(ws.a, 4 * s * dh);
  float* kh = qh + s * dh;
  float* doh = kh + s * dh;
  float* t1 = doh + s * dh;  // K^T, then V^T
  float* p = grow(ws.b, s * s);
  float* ds = grow(ws.c, s * s);
  float* tr = grow(ws.d, s * s);
  float* res = grow(ws.e, s * dh);
  float* l = grow(ws.f, s);
  for (int64_t b = 0; b < seqs; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t off = b * s * ld + h * dh;
      fast::gather(q + off, s, dh, ld, qh);
      fast::gather(k + off, s, dh, ld, kh);
      fast::gather(d_o + off, s, dh, ld, doh);
      fast::transpose(k + off, s, dh, ld, t1);
      fast::scores(qh, t1, s, dh, scale, p, l, ws);
      for (int64_t i = 0; i < s; ++i) lanes::divide(p + i * s, l[i], p + i * s, static_cast<uint32_t>(i + 1));
      fast::transpose(v + off, s, dh, ld, t1);
      fast::gemm(doh, t1, s, dh, s, ds, ws);  // dP, full S x S (masked entries are overwritten below)
      for (int64_t i = 0; i < s; ++i) {
        float* dpr = ds + i * s;
        const int64_t n = i + 1;
        fast::mul(p + i * s, dpr, n, tr);  // tr as scratch for the products
        const float r = fast::tree(tr, n, ws);
        fast::attn_ds_row(p + i * s, dpr, r, scale, n, dpr);
        std::fill(dpr + n, dpr + s, 0.0f);
      }
      fast::gemm(ds, kh, s, s, dh, res, ws);  // dq: chains over j, masked +0 steps at the end
      fast::scatter(res, s, dh, ld, dq + off);
      fast::transpose(ds, s, s, s, tr);  // dS^T: row j holds i = 0..S-1, masked +0 steps first
      fast::gemm(tr, qh, s, s, dh, res, ws);
      fast::scatter(res, s, dh, ld, dk + off);
      fast::transpose(p, s, s, s, tr);
      fast::gemm(tr, doh, s, s, dh, res, ws);
      fast::scatter(res, s, dh, ld, dv + off);
    }
}

void swiglu(Path path, const float* g, const float* u, int64_t n, float* z, Workspace&) {
  if (path == Path::plain) return plain::swiglu(g, u, n, z);
  fast::swiglu(g, u, n, z);
}

void swiglu_back(Path path, const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du,
                 Workspace&) {
  if (path == Path::plain) return plain::swiglu_back(g, u, dz, n, dg, du);
  fast::swiglu_back(g, u, dz, n, dg, du);
}

void cross_entropy(Path path, const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float* loss,
                   Workspace& ws) {
  if (path == Path::plain) return plain::cross_entropy(logits, targets, t, vocab, loss);
  for (int64_t i = 0; i < t; ++i) {
    const float* x = logits + i * vocab;
    const fast::RowStats r = fast::row_stats(x, vocab, ws);
    loss[i] = (r.max + sdc_logf(r.sum)) - x[targets[i]];
  }
}

void cross_entropy_back(Path path, const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float scale,
                        float* dl, Workspace& ws) {
  if (path == Path::plain) return plain::cross_entropy_back(logits, targets, t, vocab, scale, dl);
  for (int64_t i = 0; i < t; ++i) {
    const float* x = logits + i * vocab;
    const fast::RowStats r = fast::row_stats(x, vocab, ws);
    fast::ce_grad_row(x, r.max, r.sum, scale, targets[i], vocab, dl + i * vocab);
  }
}

void embedding(Path path, const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y, Workspace&) {
  if (path == Path::plain) return plain::embedding(table, tokens, t, d, y);
  for (int64_t i = 0; i < t; ++i) std::copy(table + tokens[i] * d, table + (tokens[i] + 1) * d, y + i * d);
}

void embedding_back(Path path, const float* dy, const int32_t* tokens, int64_t t, int64_t vocab, int64_t d,
                    float* dtable, Workspace&) {
  if (path == Path::plain) return plain::embedding_back(dy, tokens, t, vocab, d, dtable);
  std::fill(dtable, dtable + vocab * d, 0.0f);
  // Token order is kept (a row's additions happen in token order); lanes are the d columns.
  for (int64_t i = 0; i < t; ++i) fast::add_v(dtable + tokens[i] * d, dy + i * d, d, dtable + tokens[i] * d);
}

void add(Path path, const float* a, const float* b, int64_t n, float* y, Workspace&) {
  if (path == Path::plain) return plain::add(a, b, n, y);
  fast::add_v(a, b, n, y);
}

float sum(Path path, const float* x, int64_t n, Workspace& ws) {
  if (path == Path::plain) return plain::sum(x, n);
  return fast::tree(x, n, ws);
}

void adamw(Path path, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, Workspace&) {
  if (path == Path::plain) return plain::adamw(w, g, m, v, n, s);
  fast::adamw(w, g, m, v, n, s);
}

void lamb(Path path, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, Workspace& ws) {
  float* u = grow(ws.a, n);
  if (path == Path::plain) return plain::lamb(w, g, m, v, n, s, u);
  fast::lamb_dir(w, g, m, v, n, s, u);
  float* sq = grow(ws.b, n);
  lanes::square(w, sq, static_cast<uint32_t>(n));
  const float wn = std::sqrt(fast::tree(sq, n, ws));
  lanes::square(u, sq, static_cast<uint32_t>(n));
  const float un = std::sqrt(fast::tree(sq, n, ws));
  fast::lamb_apply_v(w, u, s.lr * lamb_trust(wn, un), n);
}

}  // namespace ops
}  // namespace sdc::train_step_f32
