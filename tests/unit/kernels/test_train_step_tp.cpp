// The training-step replay split over tensor-parallel ranks (train_step_f32.h, TENSOR PARALLELISM): the partials
// of the split layers recomputed here from the specification's chains over each rank's slice and their sum in
// rank order, the outputs before the first split equal to the unsplit model's, a fault in one rank's partial
// attributed to that rank's submodule by computation sync, and the cases' validation.
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "kernels/train_step_f32/train_step_f32_replay.h"
#include "src/core/family.h"
#include "src/core/inject.h"
#include "tests/unit/train_step_test.h"

using namespace sdc;
using namespace sdc::train_step_f32;
using namespace train_step_test;

namespace {

// Every output of micro-batch 0 of step 0, by submodule name and output index.
class Capture final : public Observer {
 public:
  void output(const Submodule& s, const Site& at, std::span<float> out) override {
    if (at.step == 0 && at.microbatch == 0) outputs[s.name + "#" + std::to_string(at.output)] = {out.begin(), out.end()};
  }
  const Vec& at(const std::string& name, int output = 0) const {
    const auto it = outputs.find(name + "#" + std::to_string(output));
    REQUIRE(it != outputs.end());
    return it->second;
  }
  std::map<std::string, Vec> outputs;
};

Config tp_config(int64_t tp) {
  Config c = tiny_config();
  c.heads = 4;
  c.tp = tp;
  return c;
}

// A step's outputs (step 0 from the initial parameters, seed 5).
Capture run(const Config& c, TensorSet* params_out = nullptr) {
  Capture cap;
  TensorSet params = init_params(c, 5);
  OptState opt = init_opt_state(c);
  train_step(c, params, opt, 0, 5, Optimizer{}, &cap);
  if (params_out) *params_out = params;
  return cap;
}

// Rank r's partial of Y = X W over k (row-parallel forward): the chain over the rank's rows of W from +0.
Vec row_partial(const Vec& x, const Vec& w, int64_t t, int64_t k, int64_t n, int64_t r, int64_t ranks) {
  Vec y(static_cast<size_t>(t * n));
  const int64_t kr = k / ranks;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = +0.0f;
      for (int64_t q = r * kr; q < (r + 1) * kr; ++q) acc = std::fmaf(x[i * k + q], w[q * n + j], acc);
      y[i * n + j] = acc;
    }
  return y;
}

// Rank r's partial of dX = dY W^T over the rank's columns of W (column-parallel backward).
Vec col_partial(const Vec& dy, const Vec& w, int64_t t, int64_t k, int64_t n, int64_t r, int64_t ranks) {
  Vec dx(static_cast<size_t>(t * k));
  const int64_t nr = n / ranks;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t q = 0; q < k; ++q) {
      float acc = +0.0f;
      for (int64_t j = r * nr; j < (r + 1) * nr; ++j) acc = std::fmaf(dy[i * n + j], w[q * n + j], acc);
      dx[i * k + q] = acc;
    }
  return dx;
}

// ((P_0 + P_1) + P_2) + P_3.
Vec rank_sum(const std::vector<Vec>& parts) {
  Vec s = parts[0];
  for (size_t r = 1; r < parts.size(); ++r)
    for (size_t i = 0; i < s.size(); ++i) s[i] = s[i] + parts[r][i];
  return s;
}

std::string rank_sub(const std::string& module, int64_t r, const char* pass) {
  return module + ".rank" + std::to_string(r) + pass;
}

}  // namespace

TEST_CASE("train_step_f32 tensor parallel: each rank's partial is its slice's chain, the output their rank-order sum",
          "[replay][tp]") {
  for (const int64_t ranks : {2, 4}) {
    INFO("tp " << ranks);
    const Config c = tp_config(ranks);
    TensorSet init = init_params(c, 5);
    const Capture cap = run(c);
    const int64_t t = c.tokens(), d = c.dim, f = c.ffn;
    // Row-parallel forwards: attn.wo over the heads' columns of a, mlp.down over the MLP's slices of z.
    for (const auto& [module, input, k, n] :
         {std::tuple{std::string("layer1.attn.wo"), std::string("layer1.attn.core.forward"), d, d},
          std::tuple{std::string("layer0.mlp.down"), std::string("layer0.mlp.swiglu.forward"), f, d}}) {
      INFO(module);
      std::vector<Vec> parts;
      for (int64_t r = 0; r < ranks; ++r) {
        parts.push_back(row_partial(cap.at(input), init[module].data, t, k, n, r, ranks));
        CHECK(same_bits(cap.at(rank_sub(module, r, ".forward")), parts.back()));
      }
      CHECK(same_bits(cap.at(module + ".forward"), rank_sum(parts)));
    }
    // Column-parallel backwards' dX: attn.wq from the rotated-back dq, mlp.gate from dgate.
    for (const auto& [module, grad, out, k, n] :
         {std::tuple{std::string("layer0.attn.wq"), std::string("layer0.attn.rope_q.backward"), 0, d, d},
          std::tuple{std::string("layer1.mlp.gate"), std::string("layer1.mlp.swiglu.backward"), 0, d, f}}) {
      INFO(module);
      std::vector<Vec> parts;
      for (int64_t r = 0; r < ranks; ++r) {
        parts.push_back(col_partial(cap.at(grad, out), init[module].data, t, k, n, r, ranks));
        CHECK(same_bits(cap.at(rank_sub(module, r, ".backward")), parts.back()));
      }
      CHECK(same_bits(cap.at(module + ".backward"), rank_sum(parts)));
    }
  }
}

TEST_CASE("train_step_f32 tensor parallel: only the split sums change the arithmetic", "[replay][tp]") {
  TensorSet after_one, after_two;
  const Capture one = run(tp_config(1), &after_one), two = run(tp_config(2), &after_two);
  // Before the first split (layer 0's attn.wo) every output is the unsplit model's; the split output is not
  // (the sum of two chains rounds otherwise than one chain), nor the parameters after the step.
  for (const char* sub : {"embed.forward", "layer0.attn_norm.forward", "layer0.attn.wq.forward",
                          "layer0.attn.wv.forward", "layer0.attn.rope_k.forward", "layer0.attn.core.forward"})
    CHECK(same_bits(one.at(sub), two.at(sub)));
  CHECK_FALSE(same_bits(one.at("layer0.attn.wo.forward"), two.at("layer0.attn.wo.forward")));
  CHECK_FALSE(same_bits(after_one, after_two));
  // tp 1 has no rank submodules; tp 2 one per rank for each of a layer's 7 split passes.
  auto ranked = [](const Config& c) {
    int n = 0;
    for (const Submodule& s : submodules(c)) n += s.name.find(".rank") != std::string::npos;
    return n;
  };
  CHECK(ranked(tp_config(1)) == 0);
  CHECK(ranked(tp_config(2)) == 2 * 7 * 2);
  CHECK(ranked(tp_config(4)) == 4 * 7 * 2);
}

TEST_CASE("train_step_f32 tensor parallel level 12: a fault in one rank's partial is that rank's submodule",
          "[replay][tp]") {
  const Family f = family();
  Case c = replay_case(12, 1, 0, 11, 1);
  c.shape.dims["heads"] = 4;
  c.shape.dims["tp"] = 4;
  REQUIRE(f.validate(c).empty());
  const auto p = f.prepare(c);
  const ReplaySpec sp = replay_spec(c);
  CHECK(static_cast<uint64_t>(l1_floats_per_step(sp.cfg)) * 1 ==
        [&] {
          uint64_t n = 0;
          for (const Vec& o : problem_reference(*p).outputs) n += o.size();
          return n;
        }());
  const Vec clean = replay_tile(*p);
  auto slot = [&p](const Vec& tile, const std::string& name) { return replay_slot(*p, tile, name); };
  for (const int64_t rank : {0, 2, 3}) {
    INFO("rank " << rank);
    const std::string sub = rank_sub("layer1.mlp.down", rank, ".forward");
    Injection inj = replay_fault(sub, 0, 2, 0, 100, 21);
    REQUIRE(p->replay()->check_fault(inj).empty());
    const Vec faulty = replay_tile(*p, &inj);
    // L1: that rank's submodule alone, one element of its 4 micro-batches of T x d; the sum it feeds and the other
    // ranks are synced, so healthy.
    CHECK(slot(faulty, "L1 " + sub + " mismatch_frequency") == static_cast<float>(1.0 / (4 * 32 * 64)));
    for (int64_t r = 0; r < 4; ++r)
      if (r != rank) CHECK(slot(faulty, "L1 " + rank_sub("layer1.mlp.down", r, ".forward") + " mismatch_frequency") == 0);
    CHECK(slot(faulty, "L1 layer1.mlp.down.forward mismatch_frequency") == 0);
    // L2 runs free: the fault reaches mlp.down's gradient through the sum.
    CHECK(slot(faulty, "L2 grad layer1.mlp.down grad_diff_ratio") > 0);
  }
}

TEST_CASE("train_step_f32 tensor parallel: what a case may ask for", "[replay][tp][families]") {
  const Family f = family();
  auto with = [](std::map<std::string, int64_t> extra) {
    Case c = replay_case(12, 1);
    for (const auto& [k, v] : extra) c.shape.dims[k] = v;
    return c;
  };
  CHECK(f.validate(with({{"tp", 2}})).empty());
  CHECK(f.validate(with({{"tp", 4}, {"heads", 4}})).empty());
  CHECK(f.validate(with({{"tp", 4}})).find("must divide the heads (2)") != std::string::npos);
  CHECK(f.validate(with({{"tp", 3}})).find("1, 2 or 4") != std::string::npos);
  CHECK(f.validate(with({{"tp", 0}})).find("1, 2 or 4") != std::string::npos);
  CHECK(f.validate(with({{"heads", 3}})).find("heads must divide") != std::string::npos);
  CHECK(f.validate(with({{"heads", 32}})).empty());  // heads of 2 columns
  CHECK(f.validate(with({{"heads", 64}})).find("heads must divide") != std::string::npos);  // head size 1: odd
  CHECK(f.validate(with({{"ranks", 2}})).find("unknown shape key ranks") != std::string::npos);
  // The partials are L1 sites: l1_floats_per_step counts them (checked against a reference above).
  Config two = tiny_config();
  two.tp = 2;
  CHECK(l1_floats_per_step(two) - l1_floats_per_step(tiny_config()) == 4 * 7 * 2 * 2 * 32 * 64);
}

TEST_CASE("train_step_f32 tensor parallel level 3: a flip in one rank's partial moves the trajectory from its step",
          "[replay][tp]") {
  const Family f = family();
  Case c = replay_case(3, 5, 0, 11, 1);
  c.shape.dims["tp"] = 2;
  REQUIRE(f.validate(c).empty());
  const auto p = f.prepare(c);
  auto slot = [&p](const Vec& tile, const std::string& name) { return replay_slot(*p, tile, name); };
  const Vec clean = replay_tile(*p);
  CHECK(slot(clean, "L3 final param_distance") == 0);
  Injection inj = replay_fault("layer1.attn.wo.rank1.forward", 2, 3, 0, 40, 22);
  REQUIRE(p->replay()->check_fault(inj).empty());
  const Vec faulty = replay_tile(*p, &inj);
  for (int s = 0; s < 2; ++s) CHECK(slot(faulty, "L3 step " + std::to_string(s) + " param_distance") == 0);
  CHECK(slot(faulty, "L3 step 2 param_distance") > 0);
  CHECK(slot(faulty, "L3 final param_distance") > 0);
}
