// train_step_f32: one training step of a small Llama-shaped decoder-only transformer in IEEE binary32,
// exact mode: forward, backward, micro-batch gradient accumulation and the optimizer, every rounding
// specified, so a CPU and a GPU that follow this file produce the same bits for every activation,
// gradient, parameter and loss. The replay judges a device by comparing these against goldens
// (per submodule with computation sync, per step with parameter sync, and over a free-running period).
//
// Built from the existing families where they fit, with the same element formulas and orders:
//   matmul      gemm_f32 (one fma chain per output from +0, k ascending)
//   RMSNorm     rmsnorm_f32 (pairwise_sum of squares / cols, 1 / sqrtf(ms + EPS), (x * inv) * w)
//   attention   attention_f32 (scores, fold_max, sdc_expf, pairwise_sum, P V chain divided by l)
//   loss        cross_entropy_f32 (fold_max, pairwise_sum of sdc_expf, (m + sdc_logf(s)) - x[target])
// Everything else (rotary embedding, SwiGLU, the backward ops, the optimizers) is specified here.
//
// ---------------------------------------------------------------------------------------------------------
// Notation. Matrices are row-major. A micro-batch holds T = mb * S tokens, token t = b * S + p (sequence b,
// position p). "chain_{k=a..b} x_k * y_k" means acc = +0; for k = a, a+1, ..., b: acc = fmaf(x_k, y_k, acc)
// (gemm_f32's k-chain). pairwise_sum and fold_max are fpmath.h's fixed trees over the stated index order.
// Every other operation is one IEEE binary32 operation, evaluated in the order written; fmaf is written
// wherever a fused operation is meant and nowhere else.
//
// Zero steps. A chain from +0 never holds -0 (an exact cancellation rounds to +0, and +0 + -0 = +0), so a
// step whose product is +-0 leaves any finite accumulator unchanged. The fast paths use this to run a
// chain through masked (zero) entries of a causal matrix; the specification leaves those entries out.
//
// ---------------------------------------------------------------------------------------------------------
// Parameters (Y = X W: a weight is fan_in x fan_out, row-major; the name is the tensor's stable id):
//   embed V x d;  per layer l: layer<l>.attn_norm d, layer<l>.attn.{wq,wk,wv,wo} d x d,
//   layer<l>.mlp_norm d, layer<l>.mlp.{gate,up} d x F, layer<l>.mlp.down F x d;  final_norm d;  lm_head d x V.
// Initial values: parameter number i (in the order above) has key tensor_key(seed, i); element e is
//   uniform_value(element_hash(key, e)) * 2^-c,  c = ceil(log4(fan_in)) (so the scale is the largest power
//   of two at most 1/sqrt(fan_in)); c = 0 for embed (rows are looked up, not summed). Norm weights are 1.
//
// Data of step s (tokens and targets, per sequence b of the whole batch, b = mb_index * mb + b_local):
//   key = tensor_key(seed, DATA_TENSOR + s); x_0 = element_hash(key, b * (S + 1)) mod V;
//   x_p = (x_{p-1} + 1 + (element_hash(key, b * (S + 1) + p) mod 4)) mod V for p = 1..S;
//   tokens = x_0..x_{S-1}, targets = x_1..x_S. (A walk with small random steps: the next token is
//   predictable to one of four, so a few steps of training visibly lower the loss.)
//
// ---------------------------------------------------------------------------------------------------------
// Forward of one micro-batch (the submodule names of the model in brackets):
//   [embed]        x[t][j] = embed[token[t]][j]
//   per layer l:
//   [attn_norm]    n = RMSNorm(x, attn_norm): rmsnorm_f32's formula per row; inv[t] is kept
//   [attn.wq/wk/wv] q = n wq, k = n wk, v = n wv                            matmul
//   [attn.rope_q/rope_k] rotary embedding of q and k, see ROPE below
//   [attn.core]    a = causal attention of each head (columns h*D..h*D+D-1, D = d / H) of each sequence,
//                  attention_f32's formula with scale = 1 / sqrtf(D)
//   [attn.wo]      o = a wo
//   [attn.residual] h = x + o
//   [mlp_norm]     n2 = RMSNorm(h, mlp_norm)
//   [mlp.gate/up]  g = n2 gate, u = n2 up                                   T x F
//   [mlp.swiglu]   z = silu(g) * u, silu below
//   [mlp.down]     y = z down
//   [mlp.residual] x' = h + y
//   [final_norm]   nf = RMSNorm(x, final_norm)
//   [lm_head]      logits = nf lm_head                                      T x V
//   [loss]         loss[t] = cross_entropy_f32's formula with target[t]
// The step's loss: B * S is a power of two (S, B and mb are), so the pairwise tree over all B * S token
// losses in token order is the pairwise tree of the micro-batches' sums (each a pairwise_sum over its T
// tokens, T a power of two), and loss = sum * 2^-log2(B * S) is an exact scaling.
//
// Backward of one micro-batch, in this order (gradients of a tensor are written d<tensor>):
//   [loss]         per token: m, s as in the forward; p = sdc_expf(x[v] - m) / s; p = p - 1 if v = target;
//                  dlogits[t][v] = p * 2^-log2(B * S)                       (the mean's exact scaling)
//   [lm_head]      dnf = dlogits lm_head^T, dlm_head = nf^T dlogits          MATMUL BACKWARD below
//   [final_norm]   RMSNORM BACKWARD of dnf: dx, dfinal_norm
//   per layer l = L-1 .. 0, with dx' the gradient of the layer's output (it flows unchanged to h and y):
//   [mlp.down]     dz, ddown                                                 from dy = dx'
//   [mlp.swiglu]   dg, du: SWIGLU BACKWARD
//   [mlp.up]       dn2_u, dup;   [mlp.gate] dn2_g, dgate
//   [mlp_norm]     dn2 = dn2_g + dn2_u, then RMSNORM BACKWARD: dh_n, dmlp_norm
//   [mlp.residual] dh = dx' + dh_n
//   [attn.wo]      da, dwo
//   [attn.core]    dq_r, dk_r, dv: ATTENTION BACKWARD
//   [attn.rope_q/rope_k] dq, dk: the inverse rotation
//   [attn.wv], [attn.wk], [attn.wq] dn_v, dwv; dn_k, dwk; dn_q, dwq
//   [attn_norm]    dn = (dn_q + dn_k) + dn_v, then RMSNORM BACKWARD: dx_n, dattn_norm
//   [attn.residual] dx = dh + dx_n                                           the layer's input gradient
//   [embed]        dembed[v][j] = +0 for every row, then for t = 0..T-1 ascending:
//                  dembed[token[t]][j] = dembed[token[t]][j] + dx[t][j]      (scatter-add in token order)
//
// MATMUL BACKWARD of Y = X W (X T x K, W K x N, dY T x N):
//   dX[t][k] = chain_{j=0..N-1} dY[t][j] * W[k][j]        (= dY W^T, j ascending)
//   dW[k][j] = chain_{t=0..T-1} X[t][k] * dY[t][j]        (= X^T dY, tokens ascending)
// RMSNORM BACKWARD of y = (x * inv) * w (per row; xh[j] = x[j] * inv, the forward's rounding):
//   gw[j] = dy[j] * w[j];  c = pairwise_sum_j(gw[j] * xh[j]) / cols;  dx[j] = fmaf(-xh[j], c, gw[j]) * inv
//   dw[j] = chain_{t=0..T-1} dy[t][j] * xh[t][j]
// ROPE, for position p of its sequence and pair i = 0..D/2-1 of each head (elements 2i, 2i+1):
//   inv_freq[i] = sdc_expf(-(((float)(2i) / (float)D) * sdc_logf(ROPE_THETA)))
//   angle = (float)p * inv_freq[i];  c = sdc_cosf(angle), s = sdc_sinf(angle)   (own sin/cos, below)
//   forward:  y0 = fmaf(x0, c, -(x1 * s)),   y1 = fmaf(x0, s, x1 * c)
//   backward: dx0 = fmaf(dy0, c, dy1 * s),   dx1 = fmaf(dy1, c, -(dy0 * s))   (the transposed rotation)
// ATTENTION BACKWARD per head and sequence (q, k, v the rotated D-column slices, do = da's slice). Row i:
//   n = i + 1; s[j], m, p[j], l recomputed exactly as in the forward for j < n;  P[j] = p[j] / l
//   dP[j] = chain_{e=0..D-1} do[i][e] * v[j][e]                       j < n
//   r = pairwise_sum_{j<n}(P[j] * dP[j]);  dS[i][j] = (P[j] * (dP[j] - r)) * scale
//   dq[i][e] = chain_{j=0..i} dS[i][j] * k[j][e]
//   dk[j][e] = chain_{i=j..S-1} dS[i][j] * q[i][e],   dv[j][e] = chain_{i=j..S-1} P_i[j] * do[i][e]
// SWIGLU: e = sdc_expf(-g); sg = 1 / (1 + e); silu = g * sg; z = silu * u
//   backward: du = dz * silu;  dsilu = sg * fmaf(g, 1 - sg, 1);  dg = (dz * u) * dsilu
//   (d silu / dg = sg + g sg (1 - sg); for g < -88.7, e = inf, sg = +0 and everything stays finite)
//
// MIXED PRECISION (the family train_step_bf16, Config::bf16): as training in bf16 with fp32 master weights
// does, every matmul above (the linear layers' Y = X W, dX = dY W^T and dW = X^T dY, lm_head's included; not
// attention's products, which stay fp32) reads its two operands rounded to bf16, bf16_rn below (round to
// nearest even; a NaN stays a NaN), each micro-batch anew from the fp32 tensors; the chain is the fp32 chain
// over the rounded operands. A product of two bf16 values is exact in fp32, so each chain is an fp32 sum of
// exact products in the stated order. Everything else (norms, attention, SwiGLU, the loss, the accumulation,
// the optimizer and its state, the parameters) stays fp32.
//
// TENSOR PARALLELISM (Config::tp = R ranks, R = 1, 2 or 4 dividing H and F; R = 1 is the step above): the model
// split R ways as Megatron-LM splits it. Rank r holds heads r H/R .. (r+1) H/R - 1 (the columns c_r = r d/R ..
// (r+1) d/R - 1 of wq, wk, wv and the same rows of wo) and the MLP's slice f_r = r F/R .. (r+1) F/R - 1 (columns
// of gate and up, rows of down). A column-parallel layer (wq, wk, wv, gate, up) computes its output columns
// whole, each element's chain unchanged; attention runs per head and SwiGLU per element, unchanged. The
// row-parallel layers (wo, down) and the column-parallel layers' dX sum over a dimension the ranks split, so
// each rank computes a partial, a chain over its slice ascending from +0, and the all-reduce sums the partials
// in rank order, ((P_0 + P_1) + P_2) + P_3 (the project's own fixed-order reduction, one binary32 add each):
//   [attn.wo.rank<r>]    O_r = a[:, c_r] wo[c_r, :]          [attn.wo]    o = sum of O_r in rank order
//   [mlp.down.rank<r>]   Y_r = z[:, f_r] down[f_r, :]        [mlp.down]   y = sum of Y_r
//   backward of W in {wq, wk, wv} (slices c_r) and {gate, up} (slices f_r):
//   [<W>.rank<r>]        dX_r[t][k] = chain_{j in slice r} dY[t][j] * W[k][j]      [<W>] dX = sum of dX_r
// Every other output (the row-parallel layers' dX, every dW, norms, embedding, lm_head, loss, optimizer, each
// replicated or computed per element) is the step above's. In mixed precision a rank's operands are the slices of
// the rounded operands (rounding is per element). Each partial is an output of its own, the submodule
// "<module>.rank<r>.<pass>" (layer0.attn.wo.rank1.forward), so that computation sync checks every rank's
// contribution and a fault is attributed to the rank (a GPU of a tensor-parallel group) and submodule.
//
// Micro-batch accumulation: G = g_0, then G = G + g_m for m = 1, 2, ... in order (left fold; the first
// micro-batch's gradient is the initial value, never +0 + g_0). Since the loss scaling 2^-log2(B*S) is in
// every micro-batch's dlogits, G is the gradient of the step's mean loss.
//
// Optimizer, per parameter tensor, at step index s (t = s + 1 >= 1):
//   beta^t is the left fold p = beta; p = p * beta (t - 1 times): own power, no pow(), no exp/log.
//   bc1 = 1 - beta1^t, bc2 = 1 - beta2^t. Per element (g = G):
//   m = fmaf(beta1, m, (1 - beta1) * g),  v = fmaf(beta2, v, (1 - beta2) * (g * g))
//   r = (m / bc1) / (sqrtf(v / bc2) + eps)
//   AdamW: w = fmaf(-lr, r, w * (1 - lr * wd))                          (decoupled decay, PyTorch's AdamW)
//   LAMB:  u = fmaf(wd, w, r);  wn = sqrtf(pairwise_sum(w * w)), un = sqrtf(pairwise_sum(u * u)) over the
//          tensor in element order (before the update); trust = wn > 0 && un > 0 ? wn / un : 1;
//          w = fmaf(-(lr * trust), u, w)
//   Weight decay applies to matrices (embed, lm_head, attention, MLP); norm weights use wd = 0.
//   Scalars (1 - beta, lr * wd, 1 - lr * wd, bc1, bc2) are single float operations computed once per step.
#pragma once

#include "src/spec/fpmath.h"
#include "src/spec/generator.h"

namespace sdc::train_step_f32 {

constexpr float RMS_EPS = 1e-6f;  // rmsnorm_f32::EPS
constexpr float ROPE_THETA = 10000.0f;
constexpr uint32_t DATA_TENSOR = 0x40000000u;  // tensor ids of the data: DATA_TENSOR + step
constexpr uint32_t DATA_STEP_LIMIT = 0x3fffffffu;

// The model's sizes. S, B and mb are powers of two (the loss mean is then an exact scaling), H divides d,
// D = d / H is even (rotary pairs), mb divides B, S <= 8192 (the range of the own sine and cosine).
// The presets keep every matmul dimension a multiple of 64 (the tiny one excepted: T = S = D = 32);
// gemm_f32's tile kernel handles ragged edges anyway, so nothing depends on it. tiny has B / mb = 4
// micro-batches so that the accumulation order is observable (two terms would commute).
struct Config {
  int64_t vocab;   // V
  int64_t dim;     // d
  int64_t heads;   // H
  int64_t layers;  // L
  int64_t seq;     // S
  int64_t batch;   // B sequences per step
  int64_t micro;   // mb sequences per micro-batch
  int64_t ffn;     // F
  bool bf16 = false;  // the matmuls read bf16-rounded operands (MIXED PRECISION above)
  int64_t tp = 1;     // tensor-parallel ranks R (TENSOR PARALLELISM above)

  SDC_HD int64_t head_dim() const { return dim / heads; }
  SDC_HD int64_t micro_batches() const { return batch / micro; }
  SDC_HD int64_t tokens() const { return micro * seq; }  // T, tokens of one micro-batch
};

constexpr Config tiny_config() { return {256, 64, 2, 2, 32, 4, 1, 192}; }
constexpr Config small_config() { return {4096, 256, 4, 2, 128, 4, 1, 768}; }
constexpr Config standard_config() { return {8192, 1024, 16, 4, 1024, 4, 1, 2816}; }

SDC_HD bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

SDC_HD int log2_exact(int64_t n) {
  int e = 0;
  while ((int64_t{1} << e) < n) ++e;
  return e;
}

// c = ceil(log4(fan_in)): the initial scale 2^-c is the largest power of two <= 1/sqrt(fan_in).
SDC_HD int init_scale_exponent(int64_t fan_in) {
  int c = 0;
  while ((int64_t{1} << (2 * c)) < fan_in) ++c;
  return c;
}

// ---- bf16 ----------------------------------------------------------------------------------------------
// x rounded to bf16 (8 significant bits), returned as the fp32 value it is: round to nearest, ties to even
// (the upper half of the bits after adding 0x7fff and the kept half's lowest bit); an overflow rounds to an
// infinity, a NaN stays a NaN of its sign (its quiet bit set, so that no payload rounds into an infinity).
SDC_HD float bf16_rn(float x) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bits_float((u | 0x00400000u) & 0xffff0000u);
  return bits_float((u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u);
}

// ---- own sine and cosine -------------------------------------------------------------------------------
// sdc_sinf and sdc_cosf of src/spec/fpmath.h: a Cody-Waite reduction by pi/2 and Cephes' polynomials, valid
// for |x| <= 2^13 (the rotary angles are below S <= 8192).

// ---- rotary embedding ----------------------------------------------------------------------------------
// log_theta = sdc_logf(ROPE_THETA), computed once by the caller.
SDC_HD float rope_inv_freq(int64_t pair, int64_t head_dim, float log_theta) {
  const float e = static_cast<float>(2 * pair) / static_cast<float>(head_dim);
  return sdc_expf(-(e * log_theta));
}

SDC_HD float rope_angle(int64_t position, float inv_freq) { return static_cast<float>(position) * inv_freq; }

struct Pair {
  float a, b;
};

SDC_HD Pair rope_rotate(float x0, float x1, float c, float s) { return {fmaf(x0, c, -(x1 * s)), fmaf(x0, s, x1 * c)}; }

SDC_HD Pair rope_rotate_back(float dy0, float dy1, float c, float s) {
  return {fmaf(dy0, c, dy1 * s), fmaf(dy1, c, -(dy0 * s))};
}

// ---- SwiGLU --------------------------------------------------------------------------------------------
SDC_HD float sigmoid(float g) { return 1.0f / (1.0f + sdc_expf(-g)); }

SDC_HD float silu(float g) { return g * sigmoid(g); }

// d silu / dg = sg * (1 + g * (1 - sg))
SDC_HD float silu_grad(float g) {
  const float sg = sigmoid(g);
  return sg * fmaf(g, 1.0f - sg, 1.0f);
}

SDC_HD float swiglu(float g, float u) { return silu(g) * u; }

SDC_HD Pair swiglu_back(float g, float u, float dz) {  // {dg, du}
  return {(dz * u) * silu_grad(g), dz * silu(g)};
}

// ---- RMSNorm ------------------------------------------------------------------------------------------
SDC_HD float rmsnorm_dx(float gw, float xh, float c, float inv) { return fmaf(-xh, c, gw) * inv; }

// One row of the forward (rmsnorm_f32's formula): y = (x * inv) * w; returns inv.
SDC_HD float rmsnorm_row(const float* x, const float* w, int64_t cols, float* y) {
  const float ss = pairwise_sum([x](uint32_t j) { return x[j] * x[j]; }, static_cast<uint32_t>(cols));
  const float ms = ss / static_cast<float>(cols);
  const float inv = 1.0f / sqrtf(ms + RMS_EPS);
  for (int64_t j = 0; j < cols; ++j) y[j] = (x[j] * inv) * w[j];
  return inv;
}

// One row of the backward's dx (RMSNORM BACKWARD above), from the row's x, dy and the forward's inv.
SDC_HD void rmsnorm_back_row(const float* x, const float* dy, const float* w, float inv, int64_t cols, float* dx) {
  const float dot =
      pairwise_sum([&](uint32_t j) { return (dy[j] * w[j]) * (x[j] * inv); }, static_cast<uint32_t>(cols));
  const float c = dot / static_cast<float>(cols);
  for (int64_t j = 0; j < cols; ++j) dx[j] = rmsnorm_dx(dy[j] * w[j], x[j] * inv, c, inv);
}

// dw[j]: the chain over rows of dy[r][j] * xh[r][j].
SDC_HD float rmsnorm_dw(const float* x, const float* inv, const float* dy, int64_t rows, int64_t cols, int64_t j) {
  float acc = +0.0f;
  for (int64_t r = 0; r < rows; ++r) acc = fmaf(dy[r * cols + j], x[r * cols + j] * inv[r], acc);
  return acc;
}

// ---- cross-entropy ------------------------------------------------------------------------------------
// m and s of one logits row (cross_entropy_f32's order): m = fold_max(x), s = pairwise_sum(sdc_expf(x - m)).
SDC_HD void softmax_row_stats(const float* x, int64_t vocab, float& m, float& s) {
  const auto n = static_cast<uint32_t>(vocab);
  m = fold_max([x](uint32_t j) { return x[j]; }, n);
  const float mm = m;
  s = pairwise_sum([x, mm](uint32_t j) { return sdc_expf(x[j] - mm); }, n);
}

// ---- optimizers ----------------------------------------------------------------------------------------
// beta^t by the left fold of multiplications (t >= 1).
SDC_HD float own_pow(float beta, int64_t t) {
  float p = beta;
  for (int64_t i = 1; i < t; ++i) p = p * beta;
  return p;
}

// The per-step scalars of one tensor (single float operations, computed once).
struct OptScalars {
  float lr, beta1, beta2, one_minus_beta1, one_minus_beta2, eps, wd, decay, bc1, bc2;
};

SDC_HD OptScalars opt_scalars(float lr, float beta1, float beta2, float eps, float wd, int64_t t) {
  OptScalars s;
  s.lr = lr;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.one_minus_beta1 = 1.0f - beta1;
  s.one_minus_beta2 = 1.0f - beta2;
  s.eps = eps;
  s.wd = wd;
  s.decay = 1.0f - lr * wd;
  s.bc1 = 1.0f - own_pow(beta1, t);
  s.bc2 = 1.0f - own_pow(beta2, t);
  return s;
}

// Updates the moments in place and returns the Adam direction r.
SDC_HD float adam_direction(float g, float& m, float& v, const OptScalars& s) {
  m = fmaf(s.beta1, m, s.one_minus_beta1 * g);
  v = fmaf(s.beta2, v, s.one_minus_beta2 * (g * g));
  return (m / s.bc1) / (sqrtf(v / s.bc2) + s.eps);
}

SDC_HD float adamw_element(float w, float g, float& m, float& v, const OptScalars& s) {
  const float r = adam_direction(g, m, v, s);
  return fmaf(-s.lr, r, w * s.decay);
}

// LAMB's first pass: the update direction u (the norms of w and u follow, then lamb_apply).
SDC_HD float lamb_direction(float w, float g, float& m, float& v, const OptScalars& s) {
  return fmaf(s.wd, w, adam_direction(g, m, v, s));
}

SDC_HD float lamb_trust(float w_norm, float u_norm) {
  return (w_norm > 0.0f && u_norm > 0.0f) ? w_norm / u_norm : 1.0f;
}

SDC_HD float lamb_apply(float w, float u, float lr_trust) { return fmaf(-lr_trust, u, w); }

// ---- attention ---------------------------------------------------------------------------------------------
// Scores, max, exponentials and sum of query row i (n = i + 1 keys) of one head, attention_f32's order:
// p[j] = chain_e q[i][e] * k[j][e] * scale, m = fold_max(p), p[j] = sdc_expf(p[j] - m); returns
// pairwise_sum(p). q and k are that head's columns, rows `ld` apart, dh of them.
SDC_HD float attention_score_row(const float* q, const float* k, int64_t i, int64_t ld, int64_t dh, float scale,
                                 float* p) {
  const int64_t n = i + 1;
  for (int64_t j = 0; j < n; ++j) {
    float acc = +0.0f;
    for (int64_t e = 0; e < dh; ++e) acc = fmaf(q[i * ld + e], k[j * ld + e], acc);
    p[j] = acc * scale;
  }
  const float m = fold_max([p](uint32_t j) { return p[j]; }, static_cast<uint32_t>(n));
  for (int64_t j = 0; j < n; ++j) p[j] = sdc_expf(p[j] - m);
  return pairwise_sum([p](uint32_t j) { return p[j]; }, static_cast<uint32_t>(n));
}

// ---- the replay's tiles ------------------------------------------------------------------------------
// A 64-bit digest takes three slots of 22, 21 and 21 bits, each an integer held exactly by a float (a
// digest's raw halves would often be NaN bit patterns, which the golden generator refuses).
constexpr int DIGEST_SLOTS = 3;

SDC_HD void put_digest(uint64_t d, float* slot) {
  slot[0] = static_cast<float>(d & 0x3fffffu);
  slot[1] = static_cast<float>((d >> 22) & 0x1fffffu);
  slot[2] = static_cast<float>(d >> 43);
}

// The seed paper's metrics of a tensor a against the reference b (n elements), in double, elements in
// order. Severity is the mean over mismatched elements of their relative difference |a - b| / |b| (|a - b|
// where b is 0); the ratio is ||a - b|| / ||b|| (||a - b|| where b is 0). All three are exactly 0 when a is b
// bit for bit.
//
// Every metric stays finite: an element's relative difference above METRIC_CAP (2^64), or one that is not a
// number (an output that became infinite or NaN), counts as METRIC_CAP, and so does a ratio or level 3's
// distance above it. A flip of the top exponent bit multiplies a finite value by 2^128 or divides it by as
// much: the element's relative difference is then METRIC_CAP (the value was wrecked) or about 1 (it vanished),
// never infinite. Below the cap each number is the paper's. Host and device compute these functions, so a
// faulty GPU reports the numbers a CPU computes for the same tensors (double adds, multiplies, divides and
// square roots, correctly rounded on both; no contraction into fma: the CUDA build's --fmad=false).
constexpr double METRIC_CAP = 18446744073709551616.0;  // 2^64
SDC_HD double capped(double v) { return v < METRIC_CAP ? v : METRIC_CAP; }  // NaN fails the test: the cap

struct Metrics {
  float frequency = 0, severity = 0, ratio = 0;
};

// One comparison of a tensor a with the reference's b, elements in index order: the elements whose bits
// differ, the sum of their relative differences (capped), and the sums of squares of the ratio (diff2 over
// the differing elements, ref2 over all).
struct Comparison {
  uint64_t mismatched = 0;
  double severity = 0, diff2 = 0, ref2 = 0;
};
SDC_HD Comparison compare(const float* a, const float* b, uint64_t n) {
  Comparison c;
  for (uint64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    c.ref2 += y * y;
    if (float_bits(a[i]) == float_bits(b[i])) continue;
    ++c.mismatched;
    const double d = fabs(x - y);
    c.severity += capped(y == 0 ? d : d / fabs(y));
    c.diff2 += (x - y) * (x - y);
  }
  return c;
}

// ||a - b|| / ||b|| from the sums of squares, capped as the metrics are.
SDC_HD float relative_distance(double diff2, double ref2) {
  return static_cast<float>(capped(ref2 == 0 ? sqrt(diff2) : sqrt(diff2 / ref2)));
}

// The comparisons of one tensor (or submodule, or the whole model) over a replay's steps, added in step order:
// frequency = mismatched / elements compared, severity = the mean relative difference of the mismatched
// elements, ratio = the largest of the steps' ratios (the paper's worst-case noise-to-signal ratio). Host and
// device keep it in the same layout (the device in its memory, written by one thread).
struct MetricSum {
  uint64_t mismatched = 0;
  double severity = 0;
  float ratio = 0;

  SDC_HD void add(const Comparison& c) {
    if (c.mismatched == 0) return;
    mismatched += c.mismatched;
    severity += c.severity;
    const float r = relative_distance(c.diff2, c.ref2);
    if (r > ratio) ratio = r;
  }
  SDC_HD Metrics metrics(uint64_t elements) const {
    Metrics m;
    if (mismatched == 0) return m;
    m.frequency = static_cast<float>(static_cast<double>(mismatched) / static_cast<double>(elements));
    m.severity = static_cast<float>(severity / static_cast<double>(mismatched));
    m.ratio = ratio;
    return m;
  }
};

SDC_HD Metrics tensor_metrics(const float* a, const float* b, uint64_t n) {
  MetricSum s;
  s.add(compare(a, b, n));
  return s.metrics(n);
}

// A tensor and the reference's copy of it (n elements each).
struct TensorPair {
  const float* a;
  const float* b;
  uint64_t n;
};

// One step of level 2's comparisons: every tensor of the table against its reference, in table order, added to
// its MetricSum; their sum (the whole model's comparison) added to *model when model is not null. A step
// without a mismatch adds nothing, so the device runs this only where it counted one.
SDC_HD void compare_step(const TensorPair* t, int tensors, MetricSum* sums, MetricSum* model) {
  Comparison all;
  for (int k = 0; k < tensors; ++k) {
    const Comparison c = compare(t[k].a, t[k].b, t[k].n);
    sums[k].add(c);
    all.mismatched += c.mismatched;
    all.severity += c.severity;
    all.diff2 += c.diff2;
    all.ref2 += c.ref2;
  }
  if (model) model->add(all);
}

}  // namespace sdc::train_step_f32
