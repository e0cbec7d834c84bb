// The kernels of train_step_f32's device replay, launched by train_step_f32_device_ops.cuh's DeviceDev. They
// follow the plain specification of train_step_f32_spec.cpp output by output: one thread per output (or per
// row where the specification reduces a row with a fixed tree, or per column for a chain over tokens), each
// computing the specification's chain from +0 in its order, its pairwise tree and its fold, with the element
// functions of train_step_f32.h. No operation is split across threads except the digests (integer sums mod
// 2^64, order-free), so there is nothing a thread count or a schedule could reorder. That is simple rather
// than fast; the step is small, and a GPU replays it in well under a second.
//
// Part of train_step_f32.cu's translation unit (compiled by nvcc, and as C++ for the emulated device): the
// kernels have internal linkage, included once.
#pragma once

#include <bit>
#include <cstdint>

#include "src/backends/cuda/device_util.cuh"
#include "src/spec/digest.h"
#include "kernels/exactint/mma_ops.cuh"
#include "kernels/train_step_f32/train_step_f32_chain.h"
#include "kernels/train_step_f32/train_step_f32_replay.h"

namespace sdc::train_step_f32::SDC_TARGET {
namespace {

using cuda::grid_for;
using cuda::launch;

constexpr unsigned THREADS = 256;

#define SDC_FOR_EACH(i, n)                                                                 \
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)

// ---- matmuls: one chain per output (Chain: train_step_f32_chain.h) ---------------------------------------

__global__ void chain_kernel(const float* a, const float* b, Chain m, float* out) {
  SDC_FOR_EACH(o, static_cast<uint64_t>(m.rows * m.cols)) {
    const int64_t r = static_cast<int64_t>(o) / m.cols, c = static_cast<int64_t>(o) % m.cols;
    float acc = +0.0f;
    for (int64_t q = 0; q < m.len; ++q) acc = fmaf(a[r * m.ar + q * m.aq], b[q * m.bq + c * m.bc], acc);
    out[o] = acc;
  }
}

// ---- matmuls on the tensor cores (train_step_bf16 in mode recorded) --------------------------------------
// The Chain's product by one warp per 16 x 8 output fragment: one mma.sync m16n8k16 bf16 per 16 q, f32
// accumulators from +0, q ascending from instruction to instruction (inside one the order and rounding are the
// hardware's: the reason the mode is recorded). The operands are bf16 values (to_bf16 rounded them), so the
// upper half of each fp32 is the bf16 exactly; rows, columns and q past the edges read 0. Fragment maps as
// kernels/exactint/exactint_mma.cuh states them (a register's two bf16: the lower q in the low half).
// Launched with tensor_core_threads(rows, cols) threads, in blocks of whole warps.
SDC_HD uint64_t tensor_core_threads(int64_t rows, int64_t cols) {
  return static_cast<uint64_t>((rows + 15) / 16) * static_cast<uint64_t>((cols + 7) / 8) * 32;
}

// One 16 x 8 fragment of the product at (r0, c0) by one warp (lane: group g, thread t in the group).
__device__ void mma_fragment(const float* a, const float* b, const Chain& m, float* out, int64_t r0, int64_t c0,
                             int64_t g, int64_t t) {
  auto av = [&](int64_t r, int64_t q) -> uint32_t {
    return r < m.rows && q < m.len ? float_bits(a[r * m.ar + q * m.aq]) >> 16 : 0u;
  };
  auto bv = [&](int64_t q, int64_t c) -> uint32_t {
    return c < m.cols && q < m.len ? float_bits(b[q * m.bq + c * m.bc]) >> 16 : 0u;
  };
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t q0 = 0; q0 < m.len; q0 += 16) {
    uint32_t fa[4], fb[2];
    for (int r = 0; r < 4; ++r) {
      const int64_t row = r0 + g + 8 * (r & 1), q = q0 + 2 * ((r >> 1) * 4 + t);
      fa[r] = av(row, q) | av(row, q + 1) << 16;
    }
    for (int r = 0; r < 2; ++r) {
      const int64_t q = q0 + 2 * (r * 4 + t);
      fb[r] = bv(q, c0 + g) | bv(q + 1, c0 + g) << 16;
    }
    exactint::mma_bf16(d, fa, fb);
  }
  for (int c = 0; c < 4; ++c) {
    const int64_t row = r0 + g + 8 * (c >> 1), col = c0 + 2 * t + (c & 1);
    if (row < m.rows && col < m.cols) out[row * m.cols + col] = d[c];
  }
}

__global__ void mma_chain_kernel(const float* a, const float* b, Chain m, float* out) {
  const int64_t tiles_n = (m.cols + 7) / 8, tiles = static_cast<int64_t>(tensor_core_threads(m.rows, m.cols) / 32);
  const auto g = static_cast<int64_t>(threadIdx.x % 32 / 4), t = static_cast<int64_t>(threadIdx.x % 4);
  const auto warps = static_cast<int64_t>(static_cast<uint64_t>(gridDim.x) * blockDim.x / 32);
  // Whole warps stride over the fragments (blockDim is a multiple of 32), so a grid that grid_for capped
  // still covers every one.
  for (auto warp = static_cast<int64_t>((blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x) / 32);
       warp < tiles; warp += warps)
    mma_fragment(a, b, m, out, warp / tiles_n * 16, warp % tiles_n * 8, g, t);
}

// ---- matmuls through cuBLASLt (train_step_bf16 in mode recorded, engine 1) --------------------------------
// One operand of a chain as cuBLASLt's TN product reads it (src/backends/cuda/cublaslt.h: C = A B^T, A rows x len
// and B cols x len, each row-major in bf16): the chain's A (b false) or B (b true) as y[r * len + q] =
// x[packed_source(m, b, r, q)], the upper half of an fp32 that holds a bf16 value (the mixed-precision step's matmul
// operands are rounded to bf16: the half is the value exactly).
__global__ void pack_bf16_kernel(const float* x, Chain m, bool b, uint16_t* y) {
  const int64_t rows = b ? m.cols : m.rows;
  SDC_FOR_EACH(o, static_cast<uint64_t>(rows * m.len)) {
    const int64_t r = static_cast<int64_t>(o) / m.len, q = static_cast<int64_t>(o) % m.len;
    y[o] = static_cast<uint16_t>(float_bits(x[packed_source(m, b, r, q)]) >> 16);
  }
}

// ---- RMSNorm: a row per thread (its tree), the weight gradient a column per thread -----------------------
__global__ void rmsnorm_kernel(const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv) {
  SDC_FOR_EACH(r, static_cast<uint64_t>(rows)) inv[r] = rmsnorm_row(x + r * cols, w, cols, y + r * cols);
}

__global__ void rmsnorm_back_rows_kernel(const float* x, const float* w, const float* inv, const float* dy,
                                         int64_t rows, int64_t cols, float* dx) {
  SDC_FOR_EACH(r, static_cast<uint64_t>(rows))
  rmsnorm_back_row(x + r * cols, dy + r * cols, w, inv[r], cols, dx + r * cols);
}

__global__ void rmsnorm_back_cols_kernel(const float* x, const float* inv, const float* dy, int64_t rows, int64_t cols,
                                         float* dw) {
  SDC_FOR_EACH(j, static_cast<uint64_t>(cols)) dw[j] = rmsnorm_dw(x, inv, dy, rows, cols, static_cast<int64_t>(j));
}

// ---- rotary embedding: a pair per thread, its angle's sine and cosine computed in place ------------------
__global__ void rope_kernel(const float* x, int64_t t, int64_t heads, int64_t seq, int64_t dh, bool back, float* y) {
  const int64_t pairs = dh / 2;
  SDC_FOR_EACH(o, static_cast<uint64_t>(t * heads * pairs)) {
    const int64_t q = static_cast<int64_t>(o) % pairs, h = static_cast<int64_t>(o) / pairs % heads,
                  i = static_cast<int64_t>(o) / (pairs * heads);
    const float a = rope_angle(i % seq, rope_inv_freq(q, dh, sdc_logf(ROPE_THETA)));
    const float c = sdc_cosf(a), s = sdc_sinf(a);
    const int64_t e = i * heads * dh + h * dh + 2 * q;
    const Pair r = back ? rope_rotate_back(x[e], x[e + 1], c, s) : rope_rotate(x[e], x[e + 1], c, s);
    y[e] = r.a;
    y[e + 1] = r.b;
  }
}

// ---- causal attention: a query row per thread; the backward's key columns a (key, column) per thread -----
struct AttnShape {
  int64_t seqs, s, heads, dh;
  __device__ int64_t ld() const { return heads * dh; }
  // Row `row` of all seqs * heads * s: its sequence-and-head offset into q/k/v/o and its position.
  __device__ void split(int64_t row, int64_t& off, int64_t& i, int64_t& sh) const {
    i = row % s;
    sh = row / s;  // sequence * heads + head
    off = (sh / heads) * s * ld() + (sh % heads) * dh;
  }
};

__global__ void attention_kernel(const float* q, const float* k, const float* v, AttnShape a, float* p_all, float* o) {
  const float scale = 1.0f / sqrtf(static_cast<float>(a.dh));
  SDC_FOR_EACH(row, static_cast<uint64_t>(a.seqs * a.heads * a.s)) {
    int64_t off, i, sh;
    a.split(static_cast<int64_t>(row), off, i, sh);
    float* p = p_all + row * a.s;
    const int64_t ld = a.ld();
    const float l = attention_score_row(q + off, k + off, i, ld, a.dh, scale, p);
    for (int64_t e = 0; e < a.dh; ++e) {
      float acc = +0.0f;
      for (int64_t j = 0; j <= i; ++j) acc = fmaf(p[j], v[off + j * ld + e], acc);
      o[off + i * ld + e] = acc / l;
    }
  }
}

// Per query row: P (row i of pm, keys 0..i), dP (dp) and dS (ds), then dq.
__global__ void attention_back_rows_kernel(const float* q, const float* k, const float* v, const float* d_o,
                                           AttnShape a, float* pm, float* ds, float* dp_all, float* dq) {
  const float scale = 1.0f / sqrtf(static_cast<float>(a.dh));
  SDC_FOR_EACH(row, static_cast<uint64_t>(a.seqs * a.heads * a.s)) {
    int64_t off, i, sh;
    a.split(static_cast<int64_t>(row), off, i, sh);
    const int64_t ld = a.ld(), n = i + 1;
    float* pr = pm + row * a.s;
    float* dsr = ds + row * a.s;
    float* dp = dp_all + row * a.s;
    const float l = attention_score_row(q + off, k + off, i, ld, a.dh, scale, pr);
    for (int64_t j = 0; j < n; ++j) pr[j] = pr[j] / l;
    for (int64_t j = 0; j < n; ++j) {
      float acc = +0.0f;
      for (int64_t e = 0; e < a.dh; ++e) acc = fmaf(d_o[off + i * ld + e], v[off + j * ld + e], acc);
      dp[j] = acc;
    }
    const float r = pairwise_sum([&](uint32_t j) { return pr[j] * dp[j]; }, static_cast<uint32_t>(n));
    for (int64_t j = 0; j < n; ++j) dsr[j] = (pr[j] * (dp[j] - r)) * scale;
    for (int64_t e = 0; e < a.dh; ++e) {
      float acc = +0.0f;
      for (int64_t j = 0; j <= i; ++j) acc = fmaf(dsr[j], k[off + j * ld + e], acc);
      dq[off + i * ld + e] = acc;
    }
  }
}

// Per key j and column e: dk and dv, chains over the queries i = j..S-1.
__global__ void attention_back_keys_kernel(const float* q, const float* d_o, AttnShape a, const float* pm,
                                           const float* ds, float* dk, float* dv) {
  SDC_FOR_EACH(o, static_cast<uint64_t>(a.seqs * a.heads * a.s * a.dh)) {
    const int64_t e = static_cast<int64_t>(o) % a.dh;
    int64_t off, j, sh;
    a.split(static_cast<int64_t>(o) / a.dh, off, j, sh);
    const int64_t ld = a.ld();
    const float* pmh = pm + sh * a.s * a.s;  // this sequence-and-head's S x S rows
    const float* dsh = ds + sh * a.s * a.s;
    float ak = +0.0f, av = +0.0f;
    for (int64_t i = j; i < a.s; ++i) {
      ak = fmaf(dsh[i * a.s + j], q[off + i * ld + e], ak);
      av = fmaf(pmh[i * a.s + j], d_o[off + i * ld + e], av);
    }
    dk[off + j * ld + e] = ak;
    dv[off + j * ld + e] = av;
  }
}

// ---- elementwise -----------------------------------------------------------------------------------------
__global__ void swiglu_kernel(const float* g, const float* u, int64_t n, float* z) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) z[i] = swiglu(g[i], u[i]);
}

__global__ void swiglu_back_kernel(const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) {
    const Pair r = swiglu_back(g[i], u[i], dz[i]);
    dg[i] = r.a;
    du[i] = r.b;
  }
}

__global__ void bf16_kernel(const float* x, uint64_t n, float* y) { SDC_FOR_EACH(i, n) y[i] = bf16_rn(x[i]); }

__global__ void add_kernel(const float* a, const float* b, int64_t n, float* y) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) y[i] = a[i] + b[i];
}

// y (rows x width) = the columns c0 .. c0 + width - 1 of x (rows x cols): a tensor-parallel rank's slice.
__global__ void cols_kernel(const float* x, int64_t rows, int64_t cols, int64_t c0, int64_t width, float* y) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(rows * width)) {
    const auto w = static_cast<uint64_t>(width);
    y[i] = x[(i / w) * static_cast<uint64_t>(cols) + static_cast<uint64_t>(c0) + i % w];
  }
}

__global__ void fill_kernel(float* x, uint64_t n, float v) { SDC_FOR_EACH(i, n) x[i] = v; }

// ---- loss ------------------------------------------------------------------------------------------------
__global__ void cross_entropy_kernel(const float* logits, const int32_t* targets, int64_t t, int64_t vocab,
                                     float* loss) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(t)) {
    const float* x = logits + i * vocab;
    float m, s;
    softmax_row_stats(x, vocab, m, s);
    loss[i] = (m + sdc_logf(s)) - x[targets[i]];
  }
}

__global__ void softmax_stats_kernel(const float* logits, int64_t t, int64_t vocab, float* ms) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(t)) softmax_row_stats(logits + i * vocab, vocab, ms[2 * i], ms[2 * i + 1]);
}

__global__ void cross_entropy_back_kernel(const float* logits, const int32_t* targets, int64_t t, int64_t vocab,
                                          float scale, const float* ms, float* dl) {
  SDC_FOR_EACH(o, static_cast<uint64_t>(t * vocab)) {
    const int64_t i = static_cast<int64_t>(o) / vocab, j = static_cast<int64_t>(o) % vocab;
    float p = sdc_expf(logits[o] - ms[2 * i]) / ms[2 * i + 1];
    if (j == targets[i]) p = p - 1.0f;
    dl[o] = p * scale;
  }
}

// ---- embedding -------------------------------------------------------------------------------------------
__global__ void embedding_kernel(const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y) {
  SDC_FOR_EACH(o, static_cast<uint64_t>(t * d)) {
    const int64_t i = static_cast<int64_t>(o) / d, j = static_cast<int64_t>(o) % d;
    y[o] = table[tokens[i] * d + j];
  }
}

// The scatter-add in token order: a column per thread, so each element's additions keep that order.
__global__ void embedding_back_kernel(const float* dy, const int32_t* tokens, int64_t t, int64_t d, float* dtable) {
  SDC_FOR_EACH(j, static_cast<uint64_t>(d)) {
    for (int64_t i = 0; i < t; ++i) dtable[tokens[i] * d + j] = dtable[tokens[i] * d + j] + dy[i * d + j];
  }
}

// ---- reductions of one value: one thread -----------------------------------------------------------------
__global__ void sum_kernel(const float* x, int64_t n, float* out) {
  *out = pairwise_sum([x](uint32_t i) { return x[i]; }, static_cast<uint32_t>(n));
}

__global__ void scale_kernel(float* x, float factor) { *x = *x * factor; }

// ---- optimizers ------------------------------------------------------------------------------------------
__global__ void adamw_kernel(float* w, const float* g, float* m, float* v, int64_t n, OptScalars s) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) w[i] = adamw_element(w[i], g[i], m[i], v[i], s);
}

__global__ void lamb_direction_kernel(const float* w, const float* g, float* m, float* v, int64_t n, OptScalars s,
                                      float* u) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) u[i] = lamb_direction(w[i], g[i], m[i], v[i], s);
}

__global__ void lamb_trust_kernel(const float* w, const float* u, int64_t n, float lr, float* lr_trust) {
  const auto nn = static_cast<uint32_t>(n);
  const float wn = sqrtf(pairwise_sum([w](uint32_t i) { return w[i] * w[i]; }, nn));
  const float un = sqrtf(pairwise_sum([u](uint32_t i) { return u[i] * u[i]; }, nn));
  *lr_trust = lr * lamb_trust(wn, un);
}

__global__ void lamb_apply_kernel(float* w, const float* u, int64_t n, const float* lr_trust) {
  const float lt = *lr_trust;
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) w[i] = lamb_apply(w[i], u[i], lt);
}

// ---- parameters and data ---------------------------------------------------------------------------------
// Initial values of parameter number `index` (init_params): uniform times 2^-scale_exp, or 1 for a norm.
__global__ void init_param_kernel(float* p, uint64_t n, uint64_t key, int scale_exp, bool norm) {
  const float scale = pow2f(-scale_exp);
  SDC_FOR_EACH(e, n) p[e] = norm ? 1.0f : uniform_value(element_hash(key, e)) * scale;
}

// step_data: a sequence per thread, its walk in position order.
__global__ void step_data_kernel(uint64_t key, int64_t batch, int64_t seq, int64_t vocab, int32_t* tokens,
                                 int32_t* targets) {
  SDC_FOR_EACH(q, static_cast<uint64_t>(batch)) {
    const auto v = static_cast<uint64_t>(vocab);
    const uint64_t base = q * static_cast<uint64_t>(seq + 1);
    uint64_t x = element_hash(key, base) % v;
    for (int64_t p = 0; p < seq; ++p) {
      tokens[q * seq + p] = static_cast<int32_t>(x);
      x = (x + 1 + element_hash(key, base + static_cast<uint64_t>(p) + 1) % 4) % v;
      targets[q * seq + p] = static_cast<int32_t>(x);
    }
  }
}

// ---- digests, sync and the replay's slots ----------------------------------------------------------------
__global__ void digest_add_kernel(const float* x, uint64_t n, uint64_t key, uint64_t* acc) {
  uint64_t sum = 0;
  SDC_FOR_EACH(i, n) sum += digest_term(key, static_cast<uint32_t>(i), float_bits(x[i]));
  atomicAdd(reinterpret_cast<unsigned long long*>(acc), static_cast<unsigned long long>(sum));
}

__global__ void zero_u64_kernel(uint64_t* acc) { *acc = 0; }

// L1: the step's digest of an output added to its site's; differs from the reference's: flag, and (the kernels
// below) the comparison goes to the submodule's metrics and the reference's output in its place.
__global__ void sync_check_kernel(const uint64_t* acc, uint64_t ref, uint64_t* site, int* differs) {
  *site += *acc;
  *differs = *acc != ref;
}

// L1's comparison of a differing output with the reference's, added to its submodule's sums (one thread, the
// host's order).
__global__ void l1_compare_kernel(const int* differs, const float* x, const float* ref, uint64_t n, MetricSum* sum) {
  if (*differs) sum->add(compare(x, ref, n));
}

__global__ void substitute_kernel(const int* differs, const float* ref, uint64_t n, float* x) {
  if (!*differs) return;
  SDC_FOR_EACH(i, n) x[i] = ref[i];
}

__global__ void put_digest_kernel(const uint64_t* acc, float* slots) { put_digest(*acc, slots); }

// n digests into their slot triples.
__global__ void put_digests_kernel(const uint64_t* acc, uint64_t n, float* slots) {
  SDC_FOR_EACH(i, n) put_digest(acc[i], slots + DIGEST_SLOTS * i);
}

__global__ void zero_u64s_kernel(uint64_t* x, uint64_t n) { SDC_FOR_EACH(i, n) x[i] = 0; }

__global__ void zero_sums_kernel(MetricSum* x, uint64_t n) { SDC_FOR_EACH(i, n) x[i] = MetricSum{}; }

// Mismatched elements of a against b, added to *count (many threads: an integer count is order-free).
__global__ void count_mismatch_kernel(const float* a, const float* b, uint64_t n, unsigned* count) {
  unsigned c = 0;
  SDC_FOR_EACH(i, n) c += float_bits(a[i]) != float_bits(b[i]);
  if (c) atomicAdd(count, c);
}

__global__ void zero_count_kernel(unsigned* count) { *count = 0; }

// Level 2's comparisons of one step (compare_step, one thread in the host's order), only where
// count_mismatch_kernel found a mismatch: a healthy GPU's add nothing without reading the tensors again, as
// the host's add nothing.
__global__ void compare_step_kernel(const TensorPair* t, int tensors, const unsigned* count, MetricSum* sums,
                                    MetricSum* model) {
  if (*count) compare_step(t, tensors, sums, model);
}

// A MetricSum's metrics over `elements` into slots (frequency, severity, and the ratio when asked).
__global__ void metric_slots_kernel(const MetricSum* sum, uint64_t elements, bool ratio, float* slots) {
  const Metrics m = sum->metrics(elements);
  slots[0] = m.frequency;
  slots[1] = m.severity;
  if (ratio) slots[2] = m.ratio;
}

// L1's per-submodule metrics: frequency and severity of submodule i into slots 2i, 2i + 1.
__global__ void l1_metric_slots_kernel(const MetricSum* sums, const uint64_t* elements, uint64_t n, float* slots) {
  SDC_FOR_EACH(i, n) {
    const Metrics m = sums[i].metrics(elements[i]);
    slots[2 * i] = m.frequency;
    slots[2 * i + 1] = m.severity;
  }
}

__global__ void model_ratio_kernel(const MetricSum* model, float* slot) { *slot = model->ratio; }

// L3: the step's loss into its slot; a spike sets the flag (train_step_f32_family.cpp's test, in double).
__global__ void loss_slot_kernel(const float* loss, double ref, float* slot, int* spike) {
  const float l = *loss;
  *slot = l;
  if (spike && !(l <= ref * SPIKE && l >= ref / SPIKE)) *spike = 1;  // null: no reference (tensor cores)
}

// The relative distance of all parameters from the reference's, elements in the host's order; 0 when `count`
// (of the elements whose bits differ) is 0, as the host's relative_distance(0, ref2) is.
__device__ float pairs_distance(const TensorPair* t, int tensors, const unsigned* count) {
  if (*count == 0) return 0;
  double diff2 = 0, ref2 = 0;
  for (int k = 0; k < tensors; ++k)
    for (uint64_t e = 0; e < t[k].n; ++e) {
      const double a = t[k].a[e], b = t[k].b[e];
      diff2 += (a - b) * (a - b);
      ref2 += b * b;
    }
  return relative_distance(diff2, ref2);
}

// L3's distance of one step (its slot L3_DISTANCE).
__global__ void step_distance_kernel(const TensorPair* t, int tensors, const unsigned* count, float* slot) {
  *slot = pairs_distance(t, tensors, count);
}

// L3's final slots: the distance after the last step and the spike flag.
__global__ void distance_kernel(const TensorPair* t, int tensors, const unsigned* count, const int* spike,
                                float* slots) {
  slots[1] = *spike ? 1.0f : 0.0f;
  slots[0] = pairs_distance(t, tensors, count);
}

// A drill's BitFlip (train_step_f32_model.h) on an output of n words, by one thread.
__global__ void flip_kernel(float* x, int64_t n, int64_t element, int64_t count, int64_t stride, uint32_t mask) {
  for (int64_t i = 0, e = element; i < count && e < n; ++i, e += stride) x[e] = bits_float(float_bits(x[e]) ^ mask);
}

__global__ void zero_int_kernel(int* x) { *x = 0; }

}  // namespace
}  // namespace sdc::train_step_f32::SDC_TARGET
