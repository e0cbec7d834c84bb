// train_step_f32 on CUDA: the training-step replay on a GPU. The step's sequence is train_step_f32_step.h's
// (the same StepRunner the CPU runs), with device memory and the kernels below as its operations; every
// tile is one complete replay by the GPU, laid out as train_step_f32_family.cpp says, so a healthy GPU's tiles
// equal the golden bit for bit.
//
// The kernels follow the plain specification of train_step_f32_ops.cpp output by output: one thread per
// output (or per row where the specification reduces a row with a fixed tree, or per column for a chain
// over tokens), each computing the specification's chain from +0 in its order, its pairwise tree and its
// fold, with the element functions of train_step_f32.h. No operation is split across threads except the
// digests (integer sums mod 2^64, order-free), so there is nothing a thread count or a schedule could
// reorder. That is simple rather than fast; the step is small, and a GPU replays it in well under a second.
//
// Level 12 compares each submodule output with the reference's digest on the device and, when they differ,
// copies the reference's output over it before the step goes on (the computation sync); the reference is the
// host's (train_step_f32_replay.h), computed and checked against the golden before the case runs
// (cuda_runner.cpp), and uploaded to device memory at every computation. The metrics and the level-3
// distance are computed by one thread per tensor in the host's order, so a faulty GPU's report shows the
// numbers the CPU computes for the same tensors.
#include <algorithm>
#include <bit>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../src/backends/cuda/device_util.cuh"
#include "../../src/core/inject.h"
#include "../../src/spec/digest.h"
#include "train_step_f32_replay.h"
#include "train_step_f32_step.h"

namespace sdc::train_step_f32::SDC_TARGET {
namespace {

using cuda::grid_for;
using cuda::launch;

constexpr unsigned THREADS = 256;

#define SDC_FOR_EACH(i, n)                                                                 \
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)

// ---- matmuls: one chain per output ---------------------------------------------------------------------
// out[r][c] (rows x cols) = chain_{q=0..len-1} A[r * ar + q * aq] * B[q * bq + c * bc], q ascending: Y = X W,
// dX = dY W^T and dW = X^T dY are this with their strides (train_step_f32.h's chains, operands in its order).
struct Chain {
  int64_t rows, cols, len;
  int64_t ar, aq, bq, bc;
};

__global__ void chain_kernel(const float* a, const float* b, Chain m, float* out) {
  SDC_FOR_EACH(o, static_cast<uint64_t>(m.rows * m.cols)) {
    const int64_t r = static_cast<int64_t>(o) / m.cols, c = static_cast<int64_t>(o) % m.cols;
    float acc = +0.0f;
    for (int64_t q = 0; q < m.len; ++q) acc = fmaf(a[r * m.ar + q * m.aq], b[q * m.bq + c * m.bc], acc);
    out[o] = acc;
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

__global__ void add_kernel(const float* a, const float* b, int64_t n, float* y) {
  SDC_FOR_EACH(i, static_cast<uint64_t>(n)) y[i] = a[i] + b[i];
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

// L1: the digest into its slots; differs from the reference's: flag, and the reference's output goes in.
__global__ void sync_check_kernel(const uint64_t* acc, uint64_t ref, float* slots, int* differs) {
  put_digest(*acc, slots);
  *differs = *acc != ref;
}

__global__ void substitute_kernel(const int* differs, const float* ref, uint64_t n, float* x) {
  if (!*differs) return;
  SDC_FOR_EACH(i, n) x[i] = ref[i];
}

__global__ void put_digest_kernel(const uint64_t* acc, float* slots) { put_digest(*acc, slots); }

// Mismatched elements of a against b, added to *count (many threads: an integer count is order-free).
__global__ void count_mismatch_kernel(const float* a, const float* b, uint64_t n, unsigned* count) {
  unsigned c = 0;
  SDC_FOR_EACH(i, n) c += float_bits(a[i]) != float_bits(b[i]);
  if (c) atomicAdd(count, c);
}

__global__ void zero_count_kernel(unsigned* count) { *count = 0; }

// The metrics in the host's order by one thread, only where count_mismatch_kernel found a mismatch (a
// healthy GPU's are 0 without reading the tensor again, as the host's are).
__global__ void metrics_kernel(const float* a, const float* b, uint64_t n, bool ratio, const unsigned* count,
                               float* slots) {
  if (*count == 0) {
    slots[0] = slots[1] = 0;
    if (ratio) slots[2] = 0;
    return;
  }
  const Metrics m = tensor_metrics(a, b, n);
  slots[0] = m.frequency;
  slots[1] = m.severity;
  if (ratio) slots[2] = m.ratio;
}

// L3: the step's loss into its slot; a spike sets the flag (train_step_f32_family.cpp's test, in double).
__global__ void loss_slot_kernel(const float* loss, double ref, float* slot, int* spike) {
  const float l = *loss;
  *slot = l;
  if (!(l <= ref * SPIKE && l >= ref / SPIKE)) *spike = 1;
}

struct TensorPair {
  const float* a;
  const float* b;
  uint64_t n;
};

// L3's final slots: the relative distance of all parameters from the reference's, elements in the host's
// order, and the spike flag.
__global__ void distance_kernel(const TensorPair* t, int tensors, const unsigned* count, const int* spike,
                                float* slots) {
  slots[1] = *spike ? 1.0f : 0.0f;
  if (*count == 0) {  // no parameter differs: the distance is 0 (the host's sqrt(0 / ref2))
    slots[0] = 0;
    return;
  }
  double diff2 = 0, ref2 = 0;
  for (int k = 0; k < tensors; ++k)
    for (uint64_t e = 0; e < t[k].n; ++e) {
      const double a = t[k].a[e], b = t[k].b[e];
      diff2 += (a - b) * (a - b);
      ref2 += b * b;
    }
  slots[0] = static_cast<float>(sqrt(diff2 / ref2));
}

__global__ void flip_kernel(float* x, int64_t element, uint32_t mask) {
  x[element] = bits_float(float_bits(x[element]) ^ mask);
}

__global__ void zero_int_kernel(int* x) { *x = 0; }

// ---- pacing ----------------------------------------------------------------------------------------------
// Every launch of a computation goes through one Ticker: it stops launching once the runner's pacer says the
// deadline passed, and calls the pacer every CHUNK launches (DeviceProblem::set_pacer says why).
struct Ticker {
  static constexpr int CHUNK = 256;
  cuda::DeviceProblem::Pace pace = nullptr;
  void* context = nullptr;
  int queued = 0;
  bool stopped = false;
  template <class... P, class... A>
  void launch(const char* what, void (*kernel)(P...), unsigned grid, unsigned block, cudaStream_t s, A&&... args) {
    if (stopped) return;
    cuda::launch(what, kernel, grid, block, s, std::forward<A>(args)...);
    if (++queued < CHUNK) return;
    queued = 0;
    if (pace && !pace(context)) stopped = true;
  }
};

// ---- device memory of one replay ------------------------------------------------------------------------
constexpr uint64_t ALIGN = 256;
uint64_t aligned(uint64_t bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

// Buffers of the step's activations, as a stack over one region: a buffer may be given back in any order,
// and the stack pops what was given back from its top. Without a region (base null) it only measures the
// peak, for scratch_bytes.
class Arena {
 public:
  Arena(char* base, uint64_t capacity) : base_(base), capacity_(capacity) {}
  size_t take(uint64_t floats) {
    const uint64_t at = entries_.empty() ? 0 : entries_.back().end;
    entries_.push_back({at, at + aligned(floats * sizeof(float)), false});
    peak_ = std::max(peak_, entries_.back().end);
    if (base_ && entries_.back().end > capacity_) throw std::logic_error("train_step_f32: the device arena is short");
    return entries_.size() - 1;
  }
  void give(size_t entry) {
    entries_[entry].freed = true;
    while (!entries_.empty() && entries_.back().freed) entries_.pop_back();
  }
  float* ptr(size_t entry) const { return base_ ? reinterpret_cast<float*>(base_ + entries_[entry].begin) : nullptr; }
  uint64_t peak() const { return peak_; }

 private:
  struct Entry {
    uint64_t begin, end;
    bool freed;
  };
  char* base_;
  uint64_t capacity_;
  std::vector<Entry> entries_;
  uint64_t peak_ = 0;
};

class DevBuf {
 public:
  DevBuf(Arena& a, uint64_t floats) : a_(&a), entry_(a.take(floats)) {}
  DevBuf(DevBuf&& o) noexcept : a_(o.a_), entry_(o.entry_) { o.a_ = nullptr; }
  DevBuf& operator=(DevBuf&&) = delete;
  DevBuf(const DevBuf&) = delete;
  ~DevBuf() {
    if (a_) a_->give(entry_);
  }
  float* get() const { return a_->ptr(entry_); }

 private:
  Arena* a_;
  size_t entry_;
};

// What the replay does with each output: L1's computation sync, a drill's bit flip.
struct Sync {
  const Reference* ref = nullptr;
  const std::vector<float*>* ref_outputs = nullptr;  // device copies, per L1 site
  const std::vector<L1Site>* sites = nullptr;
  float* slots = nullptr;
  uint64_t* acc = nullptr;
  int* differs = nullptr;
  size_t k = 0;
};

// The device's Dev of StepRunner: kernels on one stream, activations from the arena; run = false only
// measures the arena.
class DeviceDev {
 public:
  using Buf = DevBuf;

  DeviceDev(const Config& c, Arena& arena, Ticker& ticker, cudaStream_t s, bool run, const int32_t* tokens,
            const int32_t* targets)
      : c_(c), arena_(arena), ticker_(ticker), s_(s), run_(run), tokens_(tokens), targets_(targets) {}

  Sync* sync = nullptr;
  const BitFlip* flip = nullptr;
  bool flipped = false;

  Buf alloc(int64_t n) { return Buf(arena_, static_cast<uint64_t>(n)); }
  static float* ptr(Buf& b) { return b.get(); }
  const int32_t* tokens(int mb) const { return tokens_ + mb * c_.tokens(); }
  const int32_t* targets(int mb) const { return targets_ + mb * c_.tokens(); }

  void emit(const Submodule& sub, const Site& at, float* data, int64_t n) {
    if (!run_) return;
    const auto count = static_cast<uint64_t>(n);
    if (flip && !flipped && sub.name == flip->submodule && at.output == flip->output && at.step == flip->step &&
        at.microbatch == flip->microbatch && flip->element >= 0 && flip->element < n) {
      ticker_.launch("train_step_f32 flip_kernel", flip_kernel, 1, 1, s_, data, flip->element, 1u << (flip->bit & 31));
      flipped = true;
    }
    if (!sync) return;
    Sync& y = *sync;
    const L1Site* site = y.k < y.sites->size() ? &(*y.sites)[y.k] : nullptr;
    if (!site || site->sub != sub.index || site->microbatch != at.microbatch || site->output != at.output ||
        y.ref->outputs[y.k].size() != count)
      throw std::logic_error("train_step_f32: the device's L1 layout is not the step's at " + sub.name);
    ticker_.launch("train_step_f32 zero_u64_kernel", zero_u64_kernel, 1, 1, s_, y.acc);
    digest(data, count, y.k, y.acc);
    ticker_.launch("train_step_f32 sync_check_kernel", sync_check_kernel, 1, 1, s_, static_cast<const uint64_t*>(y.acc),
                   y.ref->digests[y.k], y.slots + DIGEST_SLOTS * y.k, y.differs);
    ticker_.launch("train_step_f32 substitute_kernel", substitute_kernel, grid_for(count, THREADS), THREADS, s_,
                   static_cast<const int*>(y.differs), static_cast<const float*>((*y.ref_outputs)[y.k]), count, data);
    ++y.k;
  }
  void digest(const float* x, uint64_t n, uint64_t key, uint64_t* acc) {
    ticker_.launch("train_step_f32 digest_add_kernel", digest_add_kernel, grid_for(n, THREADS), THREADS, s_, x, n,
                   digest_key(key), acc);
  }

  // Y (T x N) = X (T x K) W (K x N): chains over k
  void matmul(const std::string&, const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y) {
    go("chain_kernel (matmul)", chain_kernel, t * n, x, w, Chain{t, n, k, k, 1, n, 1}, y);
  }
  // dX (T x K) = dY W^T: chains over j
  void matmul_dx(const std::string&, const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx) {
    go("chain_kernel (matmul_dx)", chain_kernel, t * k, dy, w, Chain{t, k, n, n, 1, 1, n}, dx);
  }
  // dW (K x N) = X^T dY: chains over tokens
  void matmul_dw(const std::string&, const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw) {
    go("chain_kernel (matmul_dw)", chain_kernel, k * n, x, dy, Chain{k, n, t, 1, k, n, 1}, dw);
  }
  void rmsnorm(const std::string&, const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv) {
    go("rmsnorm_kernel", rmsnorm_kernel, rows, x, w, rows, cols, y, inv);
  }
  void rmsnorm_back(const std::string&, const float* x, const float* w, const float* inv, const float* dy, int64_t rows,
                    int64_t cols, float* dx, float* dw) {
    go("rmsnorm_back_rows_kernel", rmsnorm_back_rows_kernel, rows, x, w, inv, dy, rows, cols, dx);
    go("rmsnorm_back_cols_kernel", rmsnorm_back_cols_kernel, cols, x, inv, dy, rows, cols, dw);
  }
  void rope(const std::string&, const float* x, int64_t t, int64_t heads, float* y) {
    go("rope_kernel", rope_kernel, t * heads * (c_.head_dim() / 2), x, t, heads, c_.seq, c_.head_dim(), false, y);
  }
  void rope_back(const std::string&, const float* dy, int64_t t, int64_t heads, float* dx) {
    go("rope_kernel", rope_kernel, t * heads * (c_.head_dim() / 2), dy, t, heads, c_.seq, c_.head_dim(), true, dx);
  }
  void attention(const std::string&, const float* q, const float* k, const float* v, int64_t seqs, int64_t s,
                 int64_t heads, int64_t d, float* o) {
    Buf p = alloc(seqs * heads * s * s);
    go("attention_kernel", attention_kernel, seqs * heads * s, q, k, v, AttnShape{seqs, s, heads, d}, p.get(), o);
  }
  void attention_back(const std::string&, const float* q, const float* k, const float* v, const float* d_o,
                      int64_t seqs, int64_t s, int64_t heads, int64_t d, float* dq, float* dk, float* dv) {
    const AttnShape a{seqs, s, heads, d};
    Buf pm = alloc(seqs * heads * s * s), ds = alloc(seqs * heads * s * s), dp = alloc(seqs * heads * s * s);
    go("attention_back_rows_kernel", attention_back_rows_kernel, seqs * heads * s, q, k, v, d_o, a, pm.get(), ds.get(),
       dp.get(), dq);
    go("attention_back_keys_kernel", attention_back_keys_kernel, seqs * heads * s * d, q, d_o, a,
       static_cast<const float*>(pm.get()), static_cast<const float*>(ds.get()), dk, dv);
  }
  void swiglu(const std::string&, const float* g, const float* u, int64_t n, float* z) {
    go("swiglu_kernel", swiglu_kernel, n, g, u, n, z);
  }
  void swiglu_back(const std::string&, const float* g, const float* u, const float* dz, int64_t n, float* dg,
                   float* du) {
    go("swiglu_back_kernel", swiglu_back_kernel, n, g, u, dz, n, dg, du);
  }
  void cross_entropy(const std::string&, const float* logits, const int32_t* targets, int64_t t, int64_t vocab,
                     float* loss) {
    go("cross_entropy_kernel", cross_entropy_kernel, t, logits, targets, t, vocab, loss);
  }
  void cross_entropy_back(const std::string&, const float* logits, const int32_t* targets, int64_t t, int64_t vocab,
                          float scale, float* dl) {
    Buf ms = alloc(2 * t);
    go("softmax_stats_kernel", softmax_stats_kernel, t, logits, t, vocab, ms.get());
    go("cross_entropy_back_kernel", cross_entropy_back_kernel, t * vocab, logits, targets, t, vocab, scale,
       static_cast<const float*>(ms.get()), dl);
  }
  void embedding(const std::string&, const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y) {
    go("embedding_kernel", embedding_kernel, t * d, table, tokens, t, d, y);
  }
  void embedding_back(const std::string&, const float* dy, const int32_t* tokens, int64_t t, int64_t vocab, int64_t d,
                      float* dtable) {
    go("fill_kernel", fill_kernel, vocab * d, dtable, static_cast<uint64_t>(vocab * d), +0.0f);
    go("embedding_back_kernel", embedding_back_kernel, d, dy, tokens, t, d, dtable);
  }
  void add(const std::string&, const float* a, const float* b, int64_t n, float* y) {
    go("add_kernel", add_kernel, n, a, b, n, y);
  }
  void sum(const std::string&, const float* x, int64_t n, float* out) { go("sum_kernel", sum_kernel, 1, x, n, out); }
  void scale(const std::string&, float* x, float factor) { go("scale_kernel", scale_kernel, 1, x, factor); }
  void adamw(const std::string&, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
    go("adamw_kernel", adamw_kernel, n, w, g, m, v, n, s);
  }
  void lamb(const std::string&, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s) {
    Buf u = alloc(n), lr_trust = alloc(1);
    go("lamb_direction_kernel", lamb_direction_kernel, n, static_cast<const float*>(w), g, m, v, n, s, u.get());
    go("lamb_trust_kernel", lamb_trust_kernel, 1, static_cast<const float*>(w), static_cast<const float*>(u.get()), n,
       s.lr, lr_trust.get());
    go("lamb_apply_kernel", lamb_apply_kernel, n, w, static_cast<const float*>(u.get()), n,
       static_cast<const float*>(lr_trust.get()));
  }

 private:
  // Launches kernel over `items` threads (grid-stride), unless only measuring.
  template <class... P, class... A>
  void go(const char* what, void (*kernel)(P...), int64_t items, A&&... args) {
    if (!run_) return;
    const auto n = static_cast<uint64_t>(items);
    ticker_.launch(what, kernel, grid_for(n, THREADS), n < THREADS ? static_cast<unsigned>(n ? n : 1) : THREADS, s_,
                   std::forward<A>(args)...);
  }

  const Config& c_;
  Arena& arena_;
  Ticker& ticker_;
  cudaStream_t s_;
  bool run_;
  const int32_t* tokens_;
  const int32_t* targets_;
};

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
    // The reference's copies: L1's outputs, L2's gradients and parameters (L3: the final parameters).
    if (sp_.level == 12)  // L1's outputs follow fixed_: their sizes are the reference's (use_reference)
      for (const Tensor& t : tensors) ref_grads_.push_back(l.take(static_cast<uint64_t>(t.size()) * 4));
    for (const Tensor& t : tensors) ref_params_.push_back(l.take(static_cast<uint64_t>(t.size()) * 4));
    fixed_ = l.size();
    // The arena's peak: one step measured with no memory.
    Arena measure(nullptr, 0);
    Ticker none_ticker;
    DeviceDev dev(sp_.cfg, measure, none_ticker, nullptr, false, nullptr, nullptr);
    std::vector<float*> none(tensors.size(), nullptr);
    std::vector<float> unused(static_cast<size_t>(sp_.cfg.micro_batches()) + 1);
    run_train_step(dev, sp_.cfg, sp_.shapes, sp_.subs, 0, StepTensors{none, none, none, none}, none, unused.data(),
                   unused.data() + sp_.cfg.micro_batches(), sp_.optimizer);
    arena_ = measure.peak();
  }

  uint64_t input_bytes(size_t) const override { return 4; }
  bool records_sm() const override { return false; }  // a replay runs on every SM of the GPU
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS,
            "train_step replay: simt fp32, one thread per output, the specification's chains and trees (exact)"};
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
    if (ref_->outputs.size() != sp_.sites.size())
      throw std::logic_error("train_step_f32: the L1 layout is not the step's");
    for (const std::vector<float>& o : ref_->outputs) l1_bytes_ += aligned(o.size() * 4);
  }
  // A drill's flip in replica 0 (in L1 and in L2, as on the CPU; level 3: once in the period).
  bool set_replay_fault(const Injection* inj) override {
    fault_.reset();
    if (inj)
      fault_ = std::make_unique<BitFlip>(BitFlip{inj->submodule, inj->output, inj->step, inj->microbatch,
                                                 static_cast<int64_t>(inj->element), std::countr_zero(inj->mask)});
    return true;
  }
  bool replay_fault_fired() const override { return fired_; }
  void set_pacer(Pace pace, void* context) override {
    ticker_.pace = pace;
    ticker_.context = context;
  }

  void compute(const void* const*, float* out, uint32_t*, void* scratch, cudaStream_t stream) const override {
    if (!ref_) throw std::logic_error("train_step_f32: the device replay has no reference");
    char* const base = static_cast<char*>(scratch);
    State st = state(base);
    upload(st, stream);
    const uint32_t te = static_cast<uint32_t>(sp_.names.size());
    fired_ = false;
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
    int *differs, *spike;
    unsigned* mismatches;
    TensorPair* pairs;
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
    st.differs = reinterpret_cast<int*>(base + differs_);
    st.spike = reinterpret_cast<int*>(base + spike_);
    st.mismatches = reinterpret_cast<unsigned*>(base + mismatches_);
    st.pairs = reinterpret_cast<TensorPair*>(base + pairs_);
    uint64_t at = fixed_;
    if (sp_.level == 12)
      for (const std::vector<float>& o : ref_->outputs) {
        st.ref_outputs.push_back(f(at));
        at += aligned(o.size() * 4);
      }
    st.arena = base + fixed_ + l1_bytes_;
    return st;
  }

  // The host's reference into device memory (the copies read host memory that lives as long as the problem).
  void upload(const State& st, cudaStream_t s) const {
    auto put = [s](float* dst, const std::vector<float>& src) {
      SDC_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * 4, cudaMemcpyHostToDevice, s));
    };
    const auto& ts = ref_->params.tensors;
    for (size_t i = 0; i < ts.size(); ++i) put(st.ref_params[i], ts[i].data);
    // L3's distance reads the tensors through a table in device memory (the host copy outlives the copy).
    pair_table_.clear();
    for (size_t i = 0; i < ts.size(); ++i)
      pair_table_.push_back({st.t.params[i], st.ref_params[i], static_cast<uint64_t>(ts[i].data.size())});
    SDC_CUDA_CHECK(cudaMemcpyAsync(st.pairs, pair_table_.data(), pair_table_.size() * sizeof(TensorPair),
                                   cudaMemcpyHostToDevice, s));
    if (sp_.level != 12) return;
    for (size_t i = 0; i < ref_->grads.tensors.size(); ++i) put(st.ref_grads[i], ref_->grads.tensors[i].data);
    for (size_t k = 0; k < ref_->outputs.size(); ++k) put(st.ref_outputs[k], ref_->outputs[k]);
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

  void step(const State& st, int64_t index, DeviceDev& dev, cudaStream_t s) const {
    ticker_.launch("train_step_f32 step_data_kernel", step_data_kernel, 1, 32, s,
                   tensor_key(sp_.seed, DATA_TENSOR + static_cast<uint32_t>(index)), sp_.cfg.batch, sp_.cfg.seq,
                   sp_.cfg.vocab, st.tokens, st.targets);
    run_train_step(dev, sp_.cfg, sp_.shapes, sp_.subs, index, st.t, st.sgrads, st.partials, st.loss, sp_.optimizer);
  }

  // The digest of tensor i (its key i) into three slots.
  void digest_slots(DeviceDev& dev, const State& st, const float* x, uint64_t n, uint64_t key, float* slots,
                    cudaStream_t s) const {
    ticker_.launch("train_step_f32 zero_u64_kernel", zero_u64_kernel, 1, 1, s, st.acc);
    dev.digest(x, n, key, st.acc);
    ticker_.launch("train_step_f32 put_digest_kernel", put_digest_kernel, 1, 1, s, static_cast<const uint64_t*>(st.acc),
                   slots);
  }

  void count_mismatches(const State& st, const float* a, const float* b, int64_t n, cudaStream_t s) const {
    const auto count = static_cast<uint64_t>(n);
    ticker_.launch("train_step_f32 count_mismatch_kernel", count_mismatch_kernel, grid_for(count, THREADS), THREADS, s,
                   a, b, count, st.mismatches);
  }
  // The seed paper's metrics of tensor a against the reference's b into slots (ratio: the third too).
  void metrics(const State& st, const float* a, const float* b, int64_t n, bool ratio, float* slots,
               cudaStream_t s) const {
    ticker_.launch("train_step_f32 zero_count_kernel", zero_count_kernel, 1, 1, s, st.mismatches);
    count_mismatches(st, a, b, n, s);
    ticker_.launch("train_step_f32 metrics_kernel", metrics_kernel, 1, 1, s, a, b, static_cast<uint64_t>(n), ratio,
                   static_cast<const unsigned*>(st.mismatches), slots);
  }

  // One replay into out; returns whether the flip (if any) was applied.
  bool replay(const State& st, float* out, const BitFlip* flip, cudaStream_t s) const {
    const auto& tensors = sp_.shapes.tensors;
    const uint64_t arena_bytes = arena_;
    bool fired = false;
    if (sp_.level == 12) {
      {  // L1: computation sync
        Arena arena(st.arena, arena_bytes);
        DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
        Sync sync{ref_, &st.ref_outputs, &sp_.sites, out, st.acc, st.differs, 0};
        dev.sync = &sync;
        dev.flip = flip;
        init(st, s);
        step(st, 0, dev, s);
        if (sync.k != sp_.sites.size()) throw std::logic_error("train_step_f32: L1 saw fewer outputs than its layout");
        fired = dev.flipped;
      }
      // L2: parameter sync, free-running from the initial parameters.
      Arena arena(st.arena, arena_bytes);
      DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
      dev.flip = flip;
      init(st, s);
      step(st, 0, dev, s);
      fired = fired || dev.flipped;
      float* o = out + DIGEST_SLOTS * sp_.sites.size();
      for (size_t i = 0; i < tensors.size(); ++i, o += 6) {
        const auto n = static_cast<uint64_t>(tensors[i].size());
        digest_slots(dev, st, st.t.grads[i], n, i, o, s);
        metrics(st, st.t.grads[i], st.ref_grads[i], n, true, o + 3, s);
      }
      for (size_t i = 0; i < tensors.size(); ++i, o += 5) {
        const auto n = static_cast<uint64_t>(tensors[i].size());
        digest_slots(dev, st, st.t.params[i], n, i, o, s);
        metrics(st, st.t.params[i], st.ref_params[i], n, false, o + 3, s);
      }
      return fired;
    }
    // Level 3: free-running steps.
    Arena arena(st.arena, arena_bytes);
    DeviceDev dev(sp_.cfg, arena, ticker_, s, true, st.tokens, st.targets);
    dev.flip = flip;
    init(st, s);
    ticker_.launch("train_step_f32 zero_int_kernel", zero_int_kernel, 1, 1, s, st.spike);
    for (int64_t k = 0; k < sp_.steps; ++k) {
      step(st, k, dev, s);
      float* o = out + 4 * k;
      ticker_.launch("train_step_f32 loss_slot_kernel", loss_slot_kernel, 1, 1, s, static_cast<const float*>(st.loss),
                     static_cast<double>(ref_->losses[static_cast<size_t>(k)]), o, st.spike);
      ticker_.launch("train_step_f32 zero_u64_kernel", zero_u64_kernel, 1, 1, s, st.acc);
      for (size_t i = 0; i < tensors.size(); ++i)
        dev.digest(st.t.params[i], static_cast<uint64_t>(tensors[i].size()), i, st.acc);
      ticker_.launch("train_step_f32 put_digest_kernel", put_digest_kernel, 1, 1, s,
                     static_cast<const uint64_t*>(st.acc), o + 1);
    }
    ticker_.launch("train_step_f32 zero_count_kernel", zero_count_kernel, 1, 1, s, st.mismatches);
    for (size_t i = 0; i < tensors.size(); ++i)
      count_mismatches(st, st.t.params[i], st.ref_params[i], tensors[i].size(), s);
    ticker_.launch("train_step_f32 distance_kernel", distance_kernel, 1, 1, s, static_cast<const TensorPair*>(st.pairs),
                   static_cast<int>(tensors.size()), static_cast<const unsigned*>(st.mismatches),
                   static_cast<const int*>(st.spike), out + 4 * sp_.steps);
    return dev.flipped;
  }

  ReplaySpec sp_;
  std::vector<uint64_t> params_, grads_, m_, v_, sgrads_, ref_grads_, ref_params_;
  uint64_t partials_ = 0, loss_ = 0, tokens_ = 0, targets_ = 0, acc_ = 0, differs_ = 0, mismatches_ = 0, spike_ = 0,
           pairs_ = 0;
  uint64_t fixed_ = 0, l1_bytes_ = 0, arena_ = 0;
  const Reference* ref_ = nullptr;
  std::unique_ptr<BitFlip> fault_;
  mutable bool fired_ = false;
  mutable Ticker ticker_;
  mutable std::vector<TensorPair> pair_table_;  // the host side of L3's table (upload)
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<DeviceReplay>(c); }

}  // namespace sdc::train_step_f32::SDC_TARGET
