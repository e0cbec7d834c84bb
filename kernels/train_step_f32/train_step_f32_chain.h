// The replay's matmuls as the device computes them (train_step_f32.h's chains): out[r][c] (rows x cols) =
// chain_{q=0..len-1} A[r * ar + q * aq] * B[q * bq + c * bc], q ascending. Y = X W, dX = dY W^T and dW = X^T dY
// are this with their strides, operands in the specification's order. Plain C++ as well as device code: the unit
// tests check the strides and cuBLASLt's operand packing on the host.
#pragma once

#include <cstdint>

#include "src/spec/hd.h"

namespace sdc::train_step_f32 {
namespace {  // each translation unit its own copy: the GPU's and the emulated device's share no symbol

struct Chain {
  int64_t rows, cols, len;
  int64_t ar, aq, bq, bc;
};

// Y (T x N) = X (T x K) W (K x N): chains over k
SDC_HD Chain matmul_chain(int64_t t, int64_t k, int64_t n) { return Chain{t, n, k, k, 1, n, 1}; }
// dX (T x K) = dY (T x N) W^T: chains over j
SDC_HD Chain matmul_dx_chain(int64_t t, int64_t k, int64_t n) { return Chain{t, k, n, n, 1, 1, n}; }
// dW (K x N) = X^T dY: chains over tokens
SDC_HD Chain matmul_dw_chain(int64_t t, int64_t k, int64_t n) { return Chain{k, n, t, 1, k, n, 1}; }

// cuBLASLt's operands (src/backends/cuda/cublaslt.h: C = A B^T with A rows x len and B cols x len, row-major):
// the offset in the chain's A (b false) or B (b true) of element q of the packed operand's row r.
SDC_HD int64_t packed_source(const Chain& m, bool b, int64_t r, int64_t q) {
  return b ? q * m.bq + r * m.bc : r * m.ar + q * m.aq;
}

}  // namespace
}  // namespace sdc::train_step_f32
