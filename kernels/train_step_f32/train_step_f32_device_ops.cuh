// The device's operations of train_step_f32's replay: DeviceDev, the Dev of StepRunner (train_step_f32_step.h)
// that launches train_step_f32_kernels.cuh's kernels on one stream, with the activations in an arena over the
// scratch buffer and every launch paced by one Ticker. Level 12's computation sync happens here, output by
// output (Sync): each submodule output's digest is compared with the reference's on the device and, when they
// differ, the reference's output is copied over it before the step goes on.
//
// Part of train_step_f32.cu's translation unit (compiled by nvcc, and as C++ for the emulated device).
#pragma once

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/train_step_f32/train_step_f32_kernels.cuh"
#include "kernels/train_step_f32/train_step_f32_lt.h"
#include "src/backends/cuda/device_problem.h"
#include "src/backends/cuda/tp_exchange.h"
#include "kernels/train_step_f32/train_step_f32_step.h"

namespace sdc::train_step_f32::SDC_TARGET {
namespace {

// ---- pacing ----------------------------------------------------------------------------------------------
// Every launch of a computation goes through one Ticker: it stops launching once the GPU executor's pacer says the
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
    queue();
  }
  // Counts one launch made elsewhere (a library's), and paces as launch() does.
  void queue() {
    if (++queued < CHUNK) return;
    queued = 0;
    if (pace && !pace(context)) stopped = true;
  }
  // Waits for everything launched so far (two pacer calls: the second waits for the first's event), until the
  // pacer's deadline; false when it passed (launching stops).
  bool drain(cudaStream_t s) {
    if (stopped) return false;
    if (!pace) {
      SDC_CUDA_CHECK(cudaStreamSynchronize(s));
      return true;
    }
    queued = 0;
    for (int i = 0; i < 2; ++i)
      if (!pace(context)) {
        stopped = true;
        return false;
      }
    return true;
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
  const std::vector<float*>* ref_outputs = nullptr;  // device copies of the step's, per L1 site
  const std::vector<L1Site>* sites = nullptr;
  uint64_t* site_digests = nullptr;  // per L1 site, added over the steps
  MetricSum* sums = nullptr;         // per submodule
  uint64_t* acc = nullptr;
  int* differs = nullptr;
  size_t k = 0;  // the site within the step
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
  FlipTally tally;  // this run's (a DeviceDev is one run: L1, L2 or level 3's steps)
  bool tensor_cores = false;  // the matmuls on mma.sync (train_step_bf16 in mode recorded)
  // The matmuls on cuBLASLt instead (mode recorded, engine 1): its plans and workspace; while only measuring, the
  // shapes it needs plans for go to lt_shapes.
  const LtMatmuls* lt = nullptr;
  void* lt_workspace = nullptr;
  std::set<MatmulShape>* lt_shapes = nullptr;

  // Tensor parallelism across GPUs (StepRunner::ranks): this GPU's place in its group, null where it computes
  // every rank's partial itself.
  cuda::TpLink* link = nullptr;

  Buf alloc(int64_t n) { return Buf(arena_, static_cast<uint64_t>(n)); }
  static float* ptr(Buf& b) { return b.get(); }
  const int32_t* tokens(int mb) const { return tokens_ + mb * c_.tokens(); }
  const int32_t* targets(int mb) const { return targets_ + mb * c_.tokens(); }

  void emit(const Submodule& sub, const Site& at, float* data, int64_t n) {
    if (!run_) return;
    const auto count = static_cast<uint64_t>(n);
    if (flip && flip->hits(sub.name, at, n, tally)) {
      ticker_.launch("train_step_f32 flip_kernel", flip_kernel, 1, 1, s_, data, n, flip->element, flip->count,
                     flip->stride, flip->mask);
      flipped = true;
    }
    if (!sync) return;
    Sync& y = *sync;
    const size_t n_sites = y.sites->size(), key = static_cast<size_t>(at.step) * n_sites + y.k;
    const L1Site* site = y.k < n_sites ? &(*y.sites)[y.k] : nullptr;
    if (!site || site->sub != sub.index || site->microbatch != at.microbatch || site->output != at.output ||
        key >= y.ref->outputs.size() || y.ref->outputs[key].size() != count)
      throw std::logic_error("train_step_f32: the device's L1 layout is not the step's at " + sub.name);
    const auto* ref = static_cast<const float*>((*y.ref_outputs)[y.k]);
    const auto* differs = static_cast<const int*>(y.differs);
    ticker_.launch("train_step_f32 zero_u64_kernel", zero_u64_kernel, 1, 1, s_, y.acc);
    digest(data, count, key, y.acc);
    ticker_.launch("train_step_f32 sync_check_kernel", sync_check_kernel, 1, 1, s_, static_cast<const uint64_t*>(y.acc),
                   y.ref->digests[key], y.site_digests + y.k, y.differs);
    ticker_.launch("train_step_f32 l1_compare_kernel", l1_compare_kernel, 1, 1, s_, differs,
                   static_cast<const float*>(data), ref, count, y.sums + sub.index);
    ticker_.launch("train_step_f32 substitute_kernel", substitute_kernel, grid_for(count, THREADS), THREADS, s_,
                   differs, ref, count, data);
    ++y.k;
  }
  void digest(const float* x, uint64_t n, uint64_t key, uint64_t* acc) {
    ticker_.launch("train_step_f32 digest_add_kernel", digest_add_kernel, grid_for(n, THREADS), THREADS, s_, x, n,
                   digest_key(key), acc);
  }

  // Y (T x N) = X (T x K) W (K x N): chains over k
  void matmul(const std::string&, const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y) {
    chain("chain_kernel (matmul)", "mma_chain_kernel (matmul)", x, w, matmul_chain(t, k, n), y);
  }
  // dX (T x K) = dY W^T: chains over j
  void matmul_dx(const std::string&, const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx) {
    chain("chain_kernel (matmul_dx)", "mma_chain_kernel (matmul_dx)", dy, w, matmul_dx_chain(t, k, n), dx);
  }
  // dW (K x N) = X^T dY: chains over tokens
  void matmul_dw(const std::string&, const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw) {
    chain("chain_kernel (matmul_dw)", "mma_chain_kernel (matmul_dw)", x, dy, matmul_dw_chain(t, k, n), dw);
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
  void to_bf16(const std::string&, const float* x, int64_t n, float* y) {
    go("bf16_kernel", bf16_kernel, n, x, static_cast<uint64_t>(n), y);
  }
  void cols(const std::string&, const float* x, int64_t rows, int64_t cols, int64_t c0, int64_t width, float* y) {
    go("cols_kernel", cols_kernel, rows * width, x, rows, cols, c0, width, y);
  }
  // This GPU's rank in its group, or -1: it computes every rank.
  int rank() const { return link ? link->rank : -1; }
  // This rank's partial to its peers, once the stream has computed (and synced) it: the stream drained within the
  // watchdog's deadline (else nothing is sent: the GPU executor ends this rank, and its peers stop waiting), the
  // partial copied to the host, the message left in the exchange.
  void send(const std::string&, const float* x, int64_t n) {
    if (!run_ || !ticker_.drain(s_)) return;
    std::vector<float> host(static_cast<size_t>(n));
    SDC_CUDA_CHECK(cudaMemcpyAsync(host.data(), x, host.size() * 4, cudaMemcpyDeviceToHost, s_));
    SDC_CUDA_CHECK(cudaStreamSynchronize(s_));  // the stream is idle but for this copy
    link->exchange->send(link->rank, link->seq, host.data(), host.size());
  }
  // Rank src's partial from its GPU into y (throws cuda::TpError when it does not come). A copy from pageable memory
  // may wait for the stream's earlier work, so the stream is drained first (within the watchdog's deadline); the
  // host copy is kept in the link until the computation is done.
  void receive(const std::string&, int src, float* y, int64_t n) {
    if (!run_ || ticker_.stopped) return;
    link->staged.emplace_back(static_cast<size_t>(n));
    std::vector<float>& host = link->staged.back();
    link->exchange->receive(link->rank, src, link->seq, host.data(), host.size(), link->deadline);
    if (!ticker_.drain(s_)) return;
    SDC_CUDA_CHECK(cudaMemcpyAsync(y, host.data(), host.size() * 4, cudaMemcpyHostToDevice, s_));
  }
  // The split layer's exchange is over: the next has the next number.
  void exchanged() {
    if (link) ++link->seq;
  }
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

  // A matmul: the specification's chains (SIMT, one thread per output), or on the tensor cores (the recorded
  // mode's engines: mma.sync, or cuBLASLt).
  void chain(const char* simt, const char* mma, const float* a, const float* b, const Chain& m, float* out) {
    if (tensor_cores && !c_.bf16)  // both engines read the upper half of each operand: bf16 values only
      throw std::logic_error("train_step_f32: the tensor-core matmuls need bf16 operands (Config::bf16)");
    if (tensor_cores && (lt || lt_shapes))
      lt_chain(a, b, m, out);
    else if (tensor_cores)
      go(mma, mma_chain_kernel, static_cast<int64_t>(tensor_core_threads(m.rows, m.cols)), a, b, m, out);
    else
      go(simt, chain_kernel, m.rows * m.cols, a, b, m, out);
  }
  // cuBLASLt's product of the two operands, each packed first into a buffer of bf16 rows (its TN layout).
  void lt_chain(const float* a, const float* b, const Chain& m, float* out) {
    const MatmulShape shape{m.rows, m.cols, m.len};
    if (lt_shapes) lt_shapes->insert(shape);
    Buf pa = alloc((m.rows * m.len + 1) / 2), pb = alloc((m.cols * m.len + 1) / 2);  // two bf16 a float
    if (!run_) return;
    auto* ya = reinterpret_cast<uint16_t*>(ptr(pa));
    auto* yb = reinterpret_cast<uint16_t*>(ptr(pb));
    go("pack_bf16_kernel (A)", pack_bf16_kernel, m.rows * m.len, a, m, false, ya);
    go("pack_bf16_kernel (B)", pack_bf16_kernel, m.cols * m.len, b, m, true, yb);
    if (ticker_.stopped) return;
    lt->run(shape, ya, yb, out, lt_workspace, s_);
    ticker_.queue();
  }

  const Config& c_;
  Arena& arena_;
  Ticker& ticker_;
  cudaStream_t s_;
  bool run_;
  const int32_t* tokens_;
  const int32_t* targets_;
};

}  // namespace
}  // namespace sdc::train_step_f32::SDC_TARGET
