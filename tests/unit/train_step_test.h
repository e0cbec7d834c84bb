// Helpers shared by the unit tests of the training-step replay (test_train_step_f32*.cpp): deterministic
// input vectors and bitwise comparisons of vectors and tensor sets.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/train_step_f32/train_step_f32_model.h"
#include "src/core/family.h"
#include "src/core/inject.h"
#include "tests/unit/catch.h"

namespace sdc::train_step_f32 {
Family family();  // the family's entry point (train_step_f32_family.cpp)
}

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

// A train_step_f32 case of the tiny preset unless `preset` says otherwise.
inline sdc::Case replay_case(int level, int steps, int optimizer = 0, uint64_t seed = 7, int64_t replicas = 2,
                             int64_t preset = 0) {
  sdc::Case c;
  c.id = "train_step_f32.test";
  c.family = "train_step_f32";
  c.data_seed = seed;
  c.shape.dims = {
      {"preset", preset}, {"level", level}, {"steps", steps}, {"optimizer", optimizer}, {"replicas", replicas}};
  return c;
}

// Tile 0 of a replay case, with a drill's fault inside the replay when inj is given (which must fire).
inline Vec replay_tile(const sdc::Problem& p, const sdc::Injection* inj = nullptr) {
  Vec out(p.tile_elements());
  sdc::Workspace ws;
  const float* in = nullptr;
  if (inj) {
    REQUIRE(p.replay());
    REQUIRE(p.replay()->compute_tile_with_fault(&in, 0, out.data(), ws, *inj));
  } else {
    p.compute_tile(&in, 0, out.data(), ws);
  }
  return out;
}

// The slot of replica 0's tile named `name` (element_name without "replica 0: ").
inline float replay_slot(const sdc::Problem& p, const Vec& tile, const std::string& name) {
  for (uint32_t e = 0; e < p.tile_elements(); ++e)
    if (p.element_name(e) == "replica 0: " + name) return tile[e];
  FAIL("no slot " << name);
  return 0;
}

// A drill's flip of one bit of one element of a submodule's output at (step, micro-batch, output).
inline sdc::Injection replay_fault(const std::string& sub, int64_t step, int mb, int output, uint64_t element,
                                   int bit) {
  sdc::Injection inj;
  inj.submodule = sub;
  inj.step = step;
  inj.microbatch = mb;
  inj.output = output;
  inj.element = element;
  inj.mask = 1u << bit;
  return inj;
}

}  // namespace train_step_test
