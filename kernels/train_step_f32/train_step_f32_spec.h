// The plain path of train_step_f32's operations (train_step_f32_ops.h, Path::plain): the specification of
// train_step_f32.h written as scalar loops with vectorization disabled, one function per operation with the
// operation's arguments (the attention's take a workspace for their score rows). Defined in
// train_step_f32_spec.cpp; train_step_f32_ops.cpp calls them for Path::plain and holds the fast path beside.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/train_step_f32/train_step_f32_ops.h"

namespace sdc::train_step_f32 {

// v with room for n floats (a workspace vector only grows).
inline float* grow(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

namespace plain {

void matmul(const float* x, const float* w, int64_t t, int64_t k, int64_t n, float* y);
void matmul_dx(const float* dy, const float* w, int64_t t, int64_t k, int64_t n, float* dx);
void matmul_dw(const float* x, const float* dy, int64_t t, int64_t k, int64_t n, float* dw);
void rmsnorm(const float* x, const float* w, int64_t rows, int64_t cols, float* y, float* inv);
void rmsnorm_back(const float* x, const float* w, const float* inv, const float* dy, int64_t rows, int64_t cols,
                  float* dx, float* dw);
void rope(const float* x, int64_t t, int64_t heads, const RopeTables& tab, float* y, bool back);
void attention(const float* q, const float* k, const float* v, int64_t seqs, int64_t s, int64_t heads, int64_t dh,
               float* o, Workspace& ws);
void attention_back(const float* q, const float* k, const float* v, const float* d_o, int64_t seqs, int64_t s,
                    int64_t heads, int64_t dh, float* dq, float* dk, float* dv, Workspace& ws);
void swiglu(const float* g, const float* u, int64_t n, float* z);
void swiglu_back(const float* g, const float* u, const float* dz, int64_t n, float* dg, float* du);
void cross_entropy(const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float* loss);
void cross_entropy_back(const float* logits, const int32_t* targets, int64_t t, int64_t vocab, float scale, float* dl);
void embedding(const float* table, const int32_t* tokens, int64_t t, int64_t d, float* y);
void embedding_back(const float* dy, const int32_t* tokens, int64_t t, int64_t vocab, int64_t d, float* dtable);
void add(const float* a, const float* b, int64_t n, float* y);
float sum(const float* x, int64_t n);
void adamw(float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s);
void lamb(float* w, const float* g, float* m, float* v, int64_t n, const OptScalars& s, float* u);

}  // namespace plain
}  // namespace sdc::train_step_f32
