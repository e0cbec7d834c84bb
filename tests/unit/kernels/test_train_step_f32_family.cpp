// The train_step_f32 family (kernels/train_step_f32/train_step_f32_family.cpp): a tile is one complete
// replay; its fast path equals the plain path, its slot names are unique, and a fault injected into a
// submodule output shows at the levels and slots it should, and nowhere else.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/unit/catch.h"
#include "kernels/train_step_f32/train_step_f32_model.h"
#include "kernels/train_step_f32/train_step_f32_trajectory.h"
#include "src/core/family.h"
#include "src/core/inject.h"
#include "tests/unit/train_step_test.h"

using namespace sdc;
using namespace sdc::train_step_f32;
using namespace train_step_test;

namespace {

// The slot names (without the replica) whose bits differ.
std::vector<std::string> differing(const Problem& p, const Vec& a, const Vec& b) {
  std::vector<std::string> names;
  for (uint32_t e = 0; e < p.tile_elements(); ++e)
    if (float_bits(a[e]) != float_bits(b[e]))
      names.push_back(p.element_name(e).substr(std::string("replica 0: ").size()));
  return names;
}

bool any_starts(const std::vector<std::string>& names, const std::string& prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("train_step_f32 family: a replay tile's fast path equals the plain path; names are unique", "[replay]") {
  const Family f = family();
  for (int level : {12, 3})
    for (int opt : {0, 1}) {
      const Case c = replay_case(level, 3, opt);
      REQUIRE(f.validate(c).empty());
      const auto p = f.prepare(c);
      const Vec fast = replay_tile(*p);
      Vec plain(p->tile_elements());
      const float* in = nullptr;
      p->compute_tile_scalar(&in, 1, plain.data());
      CHECK(same_bits(fast, plain));
      for (float x : fast) CHECK(x == x);  // no NaN: goldens refuse them
      std::set<std::string> names;
      for (uint64_t e = 0; e < p->output_elements(); ++e) names.insert(p->element_name(e));
      CHECK(names.size() == p->output_elements());
      if (level == 12) {  // a healthy replay's metrics are exactly 0
        for (uint32_t e = 0; e < p->tile_elements(); ++e) {
          const std::string n = p->element_name(e);
          if (n.find("mismatch_") != std::string::npos || n.find("grad_diff_ratio") != std::string::npos)
            CHECK(fast[e] == 0.0f);
        }
      } else {
        CHECK(fast[p->tile_elements() - 2] == 0.0f);  // param_distance
        CHECK(fast[p->tile_elements() - 1] == 0.0f);  // loss_spike
        REQUIRE(p->tile_elements() == L3_STEP_SLOTS * 3 + 2);
        for (int64_t st = 0; st < 3; ++st) {
          CHECK(p->element_name(L3_STEP_SLOTS * st + L3_DISTANCE) ==
                "replica 0: L3 step " + std::to_string(st) + " param_distance");
          CHECK(fast[L3_STEP_SLOTS * st + L3_DISTANCE] == 0.0f);
        }
        CHECK(p->replay()->failure_mode(fast.data(), fast.data()) == "none");
      }
    }
  Case bad = replay_case(12, 1);
  bad.shape.dims["preset"] = 2;
  CHECK_FALSE(f.validate(bad).empty());
  // Level 3 keeps every step's reference parameters, at most 1 GiB: 70 steps of the small preset, 3 of the standard.
  for (const auto& [preset, steps, ok] : {std::tuple{1, 70, true}, {1, 71, false}, {2, 3, true}, {2, 4, false}}) {
    Case c = replay_case(3, steps);
    c.shape.dims["preset"] = preset;
    INFO(preset << " " << steps);
    CHECK(f.validate(c).empty() == ok);
  }
}

TEST_CASE(
    "train_step_f32 family: a fault in one submodule shows at its L1 slots only, in the L2 tensors it reaches, "
    "and in level 3 from its step on",
    "[replay]") {
  const Family f = family();
  {
    const auto p = f.prepare(replay_case(12, 1));
    const Vec clean = replay_tile(*p);
    // token 5 of micro-batch 1 (token 0 attends to itself alone: its query and key get no gradient)
    Injection inj = replay_fault("layer0.mlp.down.backward", 0, 1, 0, 5 * 192 + 100, 20);
    REQUIRE(p->replay()->check_fault(inj).empty());
    const auto d = differing(*p, replay_tile(*p, &inj), clean);
    std::vector<std::string> l1;
    for (const auto& n : d)
      if (n.rfind("L1 ", 0) == 0) l1.push_back(n);
    REQUIRE_FALSE(l1.empty());
    for (const auto& n : l1)  // its site's digest and its submodule's metrics
      CHECK((n.rfind("L1 layer0.mlp.down.backward mb 1 out 0 digest.", 0) == 0 ||
             n.rfind("L1 layer0.mlp.down.backward mismatch_", 0) == 0));
    CHECK(any_starts(d, "L2 grad layer0.mlp.up "));
    CHECK(any_starts(d, "L2 grad layer0.attn.wq "));
    CHECK(any_starts(d, "L2 grad embed "));
    CHECK(any_starts(d, "L2 param layer0.mlp.gate "));
    CHECK_FALSE(any_starts(d, "L2 grad layer0.mlp.down "));  // its dw does not read its dx
    CHECK_FALSE(any_starts(d, "L2 grad layer1."));
    CHECK_FALSE(any_starts(d, "L2 grad lm_head "));
    CHECK_FALSE(any_starts(d, "L2 grad final_norm "));
    CHECK(any_starts(d, "L2 grad layer0.mlp.up mismatch_frequency"));
    CHECK(any_starts(d, "L2 grad layer0.mlp.up grad_diff_ratio"));

    Injection unknown = replay_fault("layer0.mlp.nothing.backward", 0, 0, 0, 0, 3);
    CHECK_FALSE(p->replay()->check_fault(unknown).empty());
    Injection late = replay_fault("layer0.mlp.down.backward", 1, 0, 0, 0, 3);
    CHECK_FALSE(p->replay()->check_fault(late).empty());
    Injection outside = replay_fault("loss.step", 0, 0, 0, 1, 3);
    CHECK_FALSE(p->replay()->check_fault(outside).empty());

    // At a rate: rate=2 hits micro-batches 0 and 2 of the step, in L1 (named there) as in L2.
    Injection rated = replay_fault("layer0.mlp.down.backward", 0, 0, 0, 5 * 192 + 100, 20);
    rated.rate = 2;
    REQUIRE(p->replay()->check_fault(rated).empty());
    std::set<std::string> l1_rated;
    for (const auto& n : differing(*p, replay_tile(*p, &rated), clean))
      if (n.rfind("L1 ", 0) == 0 && n.find(" digest.") != std::string::npos)
        l1_rated.insert(n.substr(0, n.find(" digest.")));
    CHECK(l1_rated ==
          std::set<std::string>{"L1 layer0.mlp.down.backward mb 0 out 0", "L1 layer0.mlp.down.backward mb 2 out 0"});
    // rate= is checked against how often the output is computed in a replay (one step of 4 micro-batches here).
    for (const auto& [sub, rate, ok] : {std::tuple{"layer0.mlp.down.backward", 4, true},
                                        {"layer0.mlp.down.backward", 5, false},
                                        {"embed.accumulate", 3, true},
                                        {"embed.accumulate", 4, false},
                                        {"loss.step", 1, true},
                                        {"loss.step", 2, false}}) {
      Injection r = replay_fault(sub, 0, 0, 0, 0, 3);
      r.rate = rate;
      INFO(sub << " rate " << rate << ": " << p->replay()->check_fault(r));
      CHECK(p->replay()->check_fault(r).empty() == ok);
    }
  }
  {
    const auto p = f.prepare(replay_case(3, 4));
    const Vec clean = replay_tile(*p);
    Injection inj = replay_fault("layer0.mlp.down.backward", 2, 0, 0, 100, 20);
    REQUIRE(p->replay()->check_fault(inj).empty());
    const auto d = differing(*p, replay_tile(*p, &inj), clean);
    REQUIRE_FALSE(d.empty());
    CHECK(d.front().rfind("L3 step 2 ", 0) == 0);
    CHECK_FALSE(any_starts(d, "L3 step 0 "));
    CHECK_FALSE(any_starts(d, "L3 step 1 "));
    CHECK(any_starts(d, "L3 step 3 "));
    CHECK(any_starts(d, "L3 final param_distance"));
    // The per-step distance: 0 before the faulty step, positive from it on, the last one the final one's.
    const Vec faulty = replay_tile(*p, &inj);
    for (int64_t st = 0; st < 4; ++st) CHECK((faulty[L3_STEP_SLOTS * st + L3_DISTANCE] > 0.0f) == (st >= 2));
    CHECK(faulty[L3_STEP_SLOTS * 4] == faulty[L3_STEP_SLOTS * 3 + L3_DISTANCE]);
    CHECK(p->replay()->failure_mode(clean.data(), faulty.data()) == "gradual_drift");
    // The same flip at a rate (micro-batch 0 of every step: rate=4 of 4) departs from step 0 on.
    Injection rated = replay_fault("layer0.mlp.down.backward", 0, 0, 0, 100, 20);
    rated.rate = 4;
    REQUIRE(p->replay()->check_fault(rated).empty());
    const Vec broken = replay_tile(*p, &rated);
    for (int64_t st = 0; st < 4; ++st) CHECK(broken[L3_STEP_SLOTS * st + L3_DISTANCE] > 0.0f);
    Injection too_rare = rated;
    too_rare.rate = 17;  // 16 executions in 4 steps
    CHECK(p->replay()->check_fault(too_rare).find("rate= must be in 1..16") != std::string::npos);
  }
}

TEST_CASE("train_step_f32: level 3's trajectory falls in exactly one failure mode by the stated rules", "[replay]") {
  using V = std::vector<float>;
  const V ref = {5.0f, 4.0f, 3.0f, 2.0f};
  const V zero = {0, 0, 0, 0};
  const auto mode = [&](const V& loss, const V& d) { return failure_mode_name(classify_trajectory(loss, ref, d)); };
  CHECK(std::string(mode(ref, zero)) == "none");
  // A spike: a step outside [ref / 1.5, ref * 1.5]; the class then follows the last step's excess (2%).
  CHECK(std::string(mode({5.0f, 6.5f, 3.0f, 2.039f}, {0, 0.1f, 0.01f, 0.01f})) == "spike_and_recover");
  CHECK(std::string(mode({5.0f, 6.5f, 3.0f, 2.041f}, {0, 0.1f, 0.1f, 0.1f})) == "spike_and_degrade");
  CHECK(std::string(mode({5.0f, 4.0f, 1.9f, 2.0f}, {0, 0, 0.1f, 0.1f})) == "spike_and_recover");  // below ref / 1.5
  CHECK(std::string(mode({5.0f, NAN, NAN, NAN}, {0, 1e19f, 1e19f, 1e19f})) == "spike_and_degrade");
  CHECK(std::string(mode({5.0f, 4.0f, 3.0f, INFINITY}, {0, 0, 0, 1e19f})) == "spike_and_degrade");
  // No spike: worse at the end is silent degradation; near the reference's loss, drift.
  CHECK(std::string(mode({5.0f, 4.5f, 3.5f, 2.3f}, {0, 0.01f, 0.05f, 0.2f})) == "silent_degradation");
  CHECK(std::string(mode({5.0f, 4.0f, 3.0f, 2.0f}, {0, 1e-7f, 1e-6f, 1e-5f})) == "gradual_drift");
  CHECK(std::string(mode({5.0f, 4.0f, 3.0f, 1.9f}, {0, 1e-7f, 1e-6f, 1e-5f})) == "gradual_drift");  // better is fine
  // A loss that differs with unchanged parameters (the loss's value feeds no gradient) left the trajectory too.
  CHECK(std::string(mode({5.0f, 4.0f, 3.0001f, 2.0f}, zero)) == "gradual_drift");
  CHECK_THROWS(classify_trajectory(V{1.0f}, ref, zero));
}

TEST_CASE("train_step_f32: the metrics stay finite on a top-exponent flip and are exactly 0 on a healthy unit",
          "[replay]") {
  const std::vector<float> ref = {1.0f, 0.5f, 0.0078125f, 4.0f, 0.0f};
  const Metrics healthy = tensor_metrics(ref.data(), ref.data(), ref.size());
  CHECK(healthy.frequency == 0.0f);
  CHECK(healthy.severity == 0.0f);
  CHECK(healthy.ratio == 0.0f);
  const auto flip = [](float v, int bit) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u ^= 1u << bit;
    std::memcpy(&v, &u, 4);
    return v;
  };
  for (size_t e = 0; e < ref.size(); ++e) {
    std::vector<float> a = ref;
    a[e] = flip(a[e], 30);  // 1.0 becomes inf, 4.0 about 2^-126, 0.0078125 about 2^121, 0 becomes 2
    const Metrics m = tensor_metrics(a.data(), ref.data(), a.size());
    CHECK(m.frequency == 0.2f);
    CHECK(std::isfinite(m.severity));
    CHECK(std::isfinite(m.ratio));
    CHECK(m.severity > 0.0f);
    CHECK(m.severity <= static_cast<float>(METRIC_CAP));
  }
  std::vector<float> a = ref;
  a[0] = flip(a[0], 30);  // inf: its relative difference is the cap
  CHECK(tensor_metrics(a.data(), ref.data(), a.size()).severity == static_cast<float>(METRIC_CAP));
  a = ref;
  a[3] = flip(a[3], 30);  // 4.0 vanishes: a relative difference of about 1
  CHECK(tensor_metrics(a.data(), ref.data(), a.size()).severity == 1.0f);
  CHECK(relative_distance(0, 2) == 0.0f);
  CHECK(relative_distance(INFINITY, 2) == static_cast<float>(METRIC_CAP));
}
