// Helpers shared by the unit tests of the training-step replay (test_train_step_f32*.cpp): deterministic
// input vectors and bitwise comparisons of vectors and tensor sets.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/train_step_f32/train_step_f32_model.h"

namespace train_step_test {

using Vec = std::vector<float>;

// n values of the generator's uniform distribution for test tensor `tensor`, times scale.
inline Vec random_vec(int64_t n, uint32_t tensor, float scale = 1.0f) {
  Vec v(static_cast<size_t>(n));
  const uint64_t key = sdc::tensor_key(99, tensor);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = sdc::uniform_value(sdc::element_hash(key, i)) * scale;
  return v;
}

inline bool same_bits(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline bool same_bits(const sdc::train_step_f32::TensorSet& a, const sdc::train_step_f32::TensorSet& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].name != b.tensors[i].name || !same_bits(a.tensors[i].data, b.tensors[i].data)) return false;
  return true;
}

}  // namespace train_step_test
