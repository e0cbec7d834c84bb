// The training-step replay in bf16 mixed precision (train_step_bf16; kernels/train_step_f32/train_step_f32.h,
// MIXED PRECISION): bf16_rn's rounding, a matmul's output recomputed here from its operands rounded to bf16,
// and a model that still trains, on a trajectory of its own.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "tests/unit/catch.h"
#include "kernels/train_step_f32/train_step_f32_model.h"
#include "kernels/train_step_f32/train_step_f32_replay.h"
#include "tests/unit/train_step_test.h"

using namespace sdc;
using namespace sdc::train_step_f32;
using namespace train_step_test;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Keeps the step-0 outputs of micro-batch 0 by submodule name and output.
struct Keep final : Observer {
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    if (at.step == 0 && at.microbatch <= 0) kept[{s.name, at.output}] = Vec(out.begin(), out.end());
  }
  std::map<std::pair<std::string, int>, Vec> kept;
};

}  // namespace

TEST_CASE("bf16_rn rounds to nearest even, overflows to infinity and keeps NaN a NaN", "[replay][bf16]") {
  for (const auto& [in, out] : std::vector<std::tuple<uint32_t, uint32_t>>{
           {0x3f800000u, 0x3f800000u},  // 1 is a bf16
           {0x3f808000u, 0x3f800000u},  // halfway, kept half even: down
           {0x3f818000u, 0x3f820000u},  // halfway, kept half odd: up
           {0x3f807fffu, 0x3f800000u},  // below halfway
           {0x3f808001u, 0x3f810000u},  // above halfway
           {0xbf818000u, 0xbf820000u},  // the sign is kept
           {0x7f7fffffu, 0x7f800000u},  // the largest float rounds to infinity
           {0x7f800000u, 0x7f800000u},  // infinity
           {0x00000001u, 0x00000000u},  // the smallest subnormal rounds to zero
           {0x80000000u, 0x80000000u},  // -0
       })
    CHECK(to_bits(bf16_rn(from_bits(in))) == out);
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7fbfffffu}) {
    const float r = bf16_rn(from_bits(nan));
    CHECK(std::isnan(r));
    CHECK((to_bits(r) & 0xffffu) == 0);
    CHECK((to_bits(r) >> 31) == (nan >> 31));
  }
}

TEST_CASE("train_step_bf16: a matmul reads its operands rounded to bf16, the chain in fp32", "[replay][bf16]") {
  Config c = tiny_config();
  c.bf16 = true;
  TensorSet params = init_params(c, 5);
  OptState opt = init_opt_state(c);
  Keep keep;
  train_step(c, params, opt, 0, 5, Optimizer{}, &keep);
  // layer0.attn.wq.forward = bf16(attn_norm's output) bf16(wq): one fp32 fma chain per output, k ascending.
  const Vec& n1 = keep.kept.at({"layer0.attn_norm.forward", 0});
  const Vec& q = keep.kept.at({"layer0.attn.wq.forward", 0});
  const TensorSet initial = init_params(c, 5);
  const Tensor& wq = initial["layer0.attn.wq"];
  const int64_t t = c.tokens(), d = c.dim;
  int64_t differs_from_fp32 = 0;
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < d; ++j) {
      float acc = 0, acc32 = 0;
      for (int64_t k = 0; k < d; ++k) {
        const float x = n1[static_cast<size_t>(r * d + k)], w = wq.data[static_cast<size_t>(k * d + j)];
        acc = std::fmaf(bf16_rn(x), bf16_rn(w), acc);
        acc32 = std::fmaf(x, w, acc32);
      }
      REQUIRE(to_bits(q[static_cast<size_t>(r * d + j)]) == to_bits(acc));
      differs_from_fp32 += to_bits(acc) != to_bits(acc32);
    }
  CHECK(differs_from_fp32 > t * d / 2);  // the rounding shows in most outputs
  // The plain path is the fast path's, bit for bit, in mixed precision too.
  TensorSet p_plain = init_params(c, 5), p_fast = init_params(c, 5);
  OptState o_plain = init_opt_state(c), o_fast = init_opt_state(c);
  Options plain;
  plain.path = Path::plain;
  CHECK(to_bits(train_step(c, p_plain, o_plain, 0, 5, Optimizer{}, nullptr, plain)) ==
        to_bits(train_step(c, p_fast, o_fast, 0, 5, Optimizer{}, nullptr)));
  CHECK(same_bits(p_plain, p_fast));
}

TEST_CASE("train_step_bf16: the model trains in mixed precision, on a trajectory of its own", "[replay][bf16]") {
  Config c = tiny_config();
  const std::vector<float> fp32 = train(c, 8, 9, Optimizer{});
  c.bf16 = true;
  const std::vector<float> mixed = train(c, 8, 9, Optimizer{});
  CHECK(mixed.back() < mixed.front() - 0.2f);  // eight steps of the tiny model: 5.8 -> 5.5
  CHECK(to_bits(mixed.front()) != to_bits(fp32.front()));
  CHECK(std::fabs(mixed.back() - fp32.back()) < 0.05f * fp32.back());  // close to fp32's, not equal
  CHECK(std::string(BF16_FAMILY) == "train_step_bf16");
}

TEST_CASE("train_step_bf16: a backward matmul rounds dy once for dX and dW, and w and x, to bf16", "[replay][bf16]") {
  Config c = tiny_config();
  c.bf16 = true;
  const TensorSet initial = init_params(c, 5);
  TensorSet params = initial;
  OptState opt = init_opt_state(c);
  Keep keep;
  train_step(c, params, opt, 0, 5, Optimizer{}, &keep);
  // layer1.mlp.down: y = z down (z T x F, down F x d). Its backward: dz = bf16(dy) bf16(down)^T, ddown = bf16(z)^T
  // bf16(dy), where dy is the gradient of the layer's output: final_norm.backward's dx of micro-batch 0.
  const Vec& z = keep.kept.at({"layer1.mlp.swiglu.forward", 0});
  const Vec& dy = keep.kept.at({"final_norm.backward", 0});
  const Vec& dz = keep.kept.at({"layer1.mlp.down.backward", 0});
  const Vec& ddown = keep.kept.at({"layer1.mlp.down.backward", 1});
  const Tensor& down = initial["layer1.mlp.down"];
  const int64_t t = c.tokens(), f = c.ffn, d = c.dim;
  for (int64_t r = 0; r < t; ++r)
    for (int64_t k = 0; k < f; k += 7) {  // a sample of dX's outputs: chains over j
      float acc = 0;
      for (int64_t j = 0; j < d; ++j)
        acc = std::fmaf(bf16_rn(dy[static_cast<size_t>(r * d + j)]), bf16_rn(down.data[static_cast<size_t>(k * d + j)]),
                        acc);
      REQUIRE(to_bits(dz[static_cast<size_t>(r * f + k)]) == to_bits(acc));
    }
  for (int64_t k = 0; k < f; k += 5)
    for (int64_t j = 0; j < d; ++j) {  // a sample of dW's outputs: chains over tokens
      float acc = 0;
      for (int64_t r = 0; r < t; ++r)
        acc = std::fmaf(bf16_rn(z[static_cast<size_t>(r * f + k)]), bf16_rn(dy[static_cast<size_t>(r * d + j)]), acc);
      REQUIRE(to_bits(ddown[static_cast<size_t>(k * d + j)]) == to_bits(acc));
    }
}

TEST_CASE("train_step_bf16: the tensor-core engine (mma.sync or cuBLASLt) is a key of mode recorded only",
          "[replay][bf16]") {
  const Family f = bf16_family();
  auto with = [](Mode mode, int level, std::map<std::string, int64_t> extra) {
    Case c = replay_case(level, 2);
    c.family = BF16_FAMILY;
    c.mode = mode;
    for (const auto& [k, v] : extra) c.shape.dims[k] = v;
    return c;
  };
  CHECK(f.validate(with(Mode::recorded, 3, {})).empty());
  CHECK(f.validate(with(Mode::recorded, 3, {{"engine", 0}})).empty());
  CHECK(f.validate(with(Mode::recorded, 3, {{"engine", 1}})).empty());
  CHECK(f.validate(with(Mode::recorded, 3, {{"engine", 2}})).find("engine must be 0") != std::string::npos);
  CHECK(f.validate(with(Mode::exact, 3, {{"engine", 1}})).find("applies to mode recorded") != std::string::npos);
  CHECK(f.validate(with(Mode::exact, 12, {{"engine", 0}})).find("applies to mode recorded") != std::string::npos);
  CHECK(!replay_spec(with(Mode::recorded, 3, {})).cublaslt);
  CHECK(!replay_spec(with(Mode::recorded, 3, {{"engine", 0}})).cublaslt);
  const ReplaySpec lt = replay_spec(with(Mode::recorded, 3, {{"engine", 1}}));
  CHECK((lt.cublaslt && lt.tensor_cores && lt.cfg.bf16));
  // Listed among the family's optional shape keys (list --format json).
  CHECK(std::find(f.optional_shape_keys.begin(), f.optional_shape_keys.end(), "engine") != f.optional_shape_keys.end());
}
