// The operations of train_step_f32 on the CPU, each in two variants with one signature:
//   plain  the specification of train_step_f32.h written as scalar loops, vectorization disabled;
//   fast   matmuls through gemm_f32's exact tile kernel (explicit transposes and packing), reductions
//          through lanes.h's vectorized trees, element loops vectorized only across independent outputs.
// Both give the same bits (tests/unit/kernels/test_train_step_f32.cpp checks every op). Matrices are row-major;
// activations are T x cols with token t = b * S + p.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/train_step_f32/train_step_f32.h"

namespace sdc::train_step_f32 {

enum class Path : uint8_t { plain, fast };

// Scratch memory of the fast paths, reused across calls (one per worker; nothing is shared).
struct Workspace {
  std::vector<float> a, b, c, d, e, f, gemm, sum;
};

// The rotary tables of one sequence length: cos and sin of angle(p, i), S x D/2.
struct RopeTables {
  int64_t seq = 0, head_dim = 0;
  std::vector<float> cos, sin;
};
RopeTables rope_tables(int64_t seq, int64_t head_dim);

namespace ops {

// Y (T x N) = X (T x K) W (K x N)
void matmul(Path path, const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y, Workspace& ws);
// dX (T x K) = dY (T x N) W^T, chains over j ascending
void matmul_dx(Path path, const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx, Workspace& ws);
// dW (K x N) = X^T dY, chains over tokens ascending
void matmul_dw(Path path, const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw, Workspace& ws);

// y = RMSNorm(x) * w per row; inv[row] = 1 / sqrtf(ms + EPS) is kept for the backward
void rmsnorm(Path path, const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv,
             Workspace& ws);
// dx from dy (rows x cols), dw (cols) as chains over rows ascending
void rmsnorm_back(Path path, const float* x, const float* w, const float* inv, const float* dy, int64_t rows,
                  int64_t cols, float* dx, float* dw, Workspace& ws);

// Rotary embedding of every head of x (T x H*D), position t mod S; y may alias x.
void rope(Path path, const float* x, int64_t t, int64_t heads, const RopeTables& tab, float* y, Workspace& ws);
void rope_back(Path path, const float* dy, int64_t t, int64_t heads, const RopeTables& tab, float* dx, Workspace& ws);

// Causal attention of `seqs` sequences of S tokens, H heads of D columns: o (T x H*D).
void attention(Path path, const float* q, const float* k, const float* v, int64_t seqs, int64_t s, int64_t heads,
               int64_t d, float* o, Workspace& ws);
void attention_back(Path path, const float* q, const float* k, const float* v, const float* d_o, int64_t seqs,
                    int64_t s, int64_t heads, int64_t d, float* dq, float* dk, float* dv, Workspace& ws);

// z = silu(g) * u over n elements; the backward gives dg and du
void swiglu(Path path, const float* g, const float* u, int64_t n, float* z, Workspace& ws);
void swiglu_back(Path path, const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du,
                 Workspace& ws);

// loss[t] of each token (cross_entropy_f32's formula)
void cross_entropy(Path path, const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float* loss,
                   Workspace& ws);
// dlogits = (softmax - onehot) * scale, scale a power of two
void cross_entropy_back(Path path, const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float scale,
                        float* dlogits, Workspace& ws);

// y[t] = table[token[t]]; the backward scatter-adds dy into a +0-initialized V x d gradient in token order
void embedding(Path path, const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y, Workspace& ws);
void embedding_back(Path path, const float* dy, const int32_t* tokens, int64_t t, int64_t vocab, int64_t d,
                    float* dtable, Workspace& ws);

// y = a + b elementwise (y may alias a or b)
void add(Path path, const float* a, const float* b, int64_t n, float* y, Workspace& ws);

// pairwise_sum of x[0..n)
float sum(Path path, const float* x, int64_t n, Workspace& ws);

// One optimizer update of a tensor of n elements in place (w, m, v); LAMB uses ws for its direction.
void adamw(Path path, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, Workspace& ws);
void lamb(Path path, float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, Workspace& ws);

}  // namespace ops
}  // namespace sdc::train_step_f32
