// Level 12 of the train_step_f32 replay over several steps (kernels/train_step_f32/train_step_f32_family.cpp):
// L1's per-submodule metrics over every step with computation sync, L2's parameter sync (each step from the
// reference's state before it) with metrics summed over the steps and the worst step's ratio, and the size of
// the reference each case keeps. Every expected number is recomputed here from the reference's public state.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
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

Case l12_case(int steps, int preset = 0) { return replay_case(12, steps, 0, 11, 1, preset); }

// The slot of a tile named `name` (without the replica).
float slot(const Problem& p, const Vec& t, const std::string& name) { return replay_slot(p, t, name); }

class Sizes final : public Observer {
 public:
  void output(const Submodule&, const Site&, std::span<float> out) override { floats += out.size(); }
  uint64_t floats = 0;
};

}  // namespace

TEST_CASE("train_step_f32 level 12: the reference's L1 outputs are l1_floats_per_step a step", "[replay]") {
  const Family f = family();
  const auto p = f.prepare(l12_case(2));
  const Reference& r = problem_reference(*p);
  uint64_t floats = 0;
  for (const Vec& o : r.outputs) floats += o.size();
  CHECK(floats == 2 * static_cast<uint64_t>(l1_floats_per_step(tiny_config())));
  CHECK(r.params.size() == 3);
  CHECK(r.grads.size() == 2);
  // Another shape: two sequences a micro-batch, one layer, F not a multiple of d.
  const Config c{128, 32, 2, 1, 16, 4, 2, 80};
  Sizes sizes;
  TensorSet params = init_params(c, 3);
  OptState opt = init_opt_state(c);
  train_step(c, params, opt, 0, 3, Optimizer{}, &sizes);
  CHECK(sizes.floats == static_cast<uint64_t>(l1_floats_per_step(c)));
  // The limit: the small preset's reference holds three steps in 1 GiB, not four; level 3's 70.
  for (const auto& [level, steps, ok] : {std::tuple{12, 3, true}, {12, 4, false}, {3, 70, true}, {3, 71, false}}) {
    Case k = l12_case(steps, 1);
    k.shape.dims["level"] = level;
    INFO(level << " " << steps);
    CHECK(f.validate(k).empty() == ok);
    CHECK((reference_bytes(small_config(), level, steps) <= MAX_REFERENCE_BYTES) == ok);
  }
}

TEST_CASE("train_step_f32 level 12 over steps: L1 names the submodule and its step's share, L2 its step's metrics",
          "[replay]") {
  const Family f = family();
  const int steps = 3;
  const auto p = f.prepare(l12_case(steps));
  const Reference& r = problem_reference(*p);
  const Vec clean = replay_tile(*p);
  // A flip at step 2 (the optimizer is past its first step there) of layer0.mlp.up.forward, micro-batch 1.
  const std::string sub = "layer0.mlp.up.forward";
  const uint64_t element = 7 * 192 + 5;
  Injection inj = replay_fault(sub, 2, 1, 0, element, 22);
  REQUIRE(p->replay()->check_fault(inj).empty());
  const Vec faulty = replay_tile(*p, &inj);

  // L1: the one flipped element, over its submodule's outputs of every step and micro-batch.
  const ReplaySpec sp = replay_spec(l12_case(steps));
  uint64_t sub_elements = 0;
  for (size_t k = 0; k < sp.sites.size(); ++k)
    if (sp.subs[static_cast<size_t>(sp.sites[k].sub)].name == sub) sub_elements += r.outputs[k].size();
  CHECK(sub_elements == 4 * 32 * 192);  // four micro-batches of T x F
  const double freq = 1.0 / static_cast<double>(sub_elements * steps);
  CHECK(slot(*p, faulty, "L1 " + sub + " mismatch_frequency") == static_cast<float>(freq));
  size_t site = 0;  // step 2's output of micro-batch 1
  while (sp.subs[static_cast<size_t>(sp.sites[site].sub)].name != sub || sp.sites[site].microbatch != 1) ++site;
  const float golden = r.outputs[2 * sp.sites.size() + site][element];
  uint32_t bits;
  std::memcpy(&bits, &golden, 4);
  bits ^= 1u << 22;
  float flipped;
  std::memcpy(&flipped, &bits, 4);
  const double rel = std::fabs(static_cast<double>(flipped) - golden) / std::fabs(static_cast<double>(golden));
  CHECK(slot(*p, faulty, "L1 " + sub + " mismatch_severity") == static_cast<float>(rel));
  for (uint32_t e = 0; e < p->tile_elements(); ++e) {  // every other L1 slot is the healthy one's
    const std::string n = p->element_name(e);
    if (n.rfind("replica 0: L1 ", 0) == 0 && n.find(" " + sub + " ") == std::string::npos)
      CHECK(float_bits(faulty[e]) == float_bits(clean[e]));
  }

  // L2: step 2 alone departs (steps 0 and 1 start from the reference's state and meet no fault); recompute it.
  TensorSet params = r.params[2];
  OptState opt{r.m[2], r.v[2], parameter_shapes(tiny_config())};
  BitFlipInjector flip(replay_flip(inj));
  train_step(tiny_config(), params, opt, 2, 11, Optimizer{}, &flip);
  REQUIRE(flip.fired());
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < opt.grads.tensors.size(); ++i) {
    const Tensor& g = opt.grads.tensors[i];
    const Comparison c = compare(g.data.data(), r.grads[2].tensors[i].data.data(), g.data.size());
    diff2 += c.diff2;
    ref2 += c.ref2;
    const std::string site_name = "L2 grad " + g.name + " ";
    INFO(g.name);
    CHECK(slot(*p, faulty, site_name + "mismatch_frequency") ==
          static_cast<float>(static_cast<double>(c.mismatched) / static_cast<double>(g.size() * steps)));
    CHECK(slot(*p, faulty, site_name + "grad_diff_ratio") == (c.mismatched ? relative_distance(c.diff2, c.ref2) : 0));
  }
  CHECK(slot(*p, faulty, "L2 grad model grad_diff_ratio") == relative_distance(diff2, ref2));
  CHECK(slot(*p, faulty, "L2 grad model grad_diff_ratio") > 0.0f);
  CHECK(slot(*p, clean, "L2 grad model grad_diff_ratio") == 0.0f);
  // The parameters after step 2, the optimizer's third step, against the reference's after it.
  for (size_t i = 0; i < params.tensors.size(); ++i) {
    const Tensor& w = params.tensors[i];
    const Metrics m = tensor_metrics(w.data.data(), r.params[3].tensors[i].data.data(), w.data.size());
    const Comparison c = compare(w.data.data(), r.params[3].tensors[i].data.data(), w.data.size());
    INFO(w.name);
    CHECK(slot(*p, faulty, "L2 param " + w.name + " mismatch_frequency") ==
          static_cast<float>(static_cast<double>(c.mismatched) / static_cast<double>(w.size() * steps)));
    CHECK(slot(*p, faulty, "L2 param " + w.name + " mismatch_severity") == m.severity);
  }
  CHECK(slot(*p, faulty, "L2 param layer0.mlp.up mismatch_frequency") > 0.0f);
}

TEST_CASE("train_step_f32 level 12: a fault at every step sums L2's metrics over the steps, the ratio the worst step's",
          "[replay]") {
  const Family f = family();
  const int steps = 3;
  const auto p = f.prepare(l12_case(steps));
  const Reference& r = problem_reference(*p);
  // A broken datapath: element 40 of layer1.attn.wv.forward's output, every micro-batch of every step.
  Injection inj = replay_fault("layer1.attn.wv.forward", 0, 0, 0, 40, 21);
  inj.rate = 1;
  REQUIRE(p->replay()->check_fault(inj).empty());
  const Vec faulty = replay_tile(*p, &inj);
  // Each step recomputed from the reference's state before it (parameter sync), the fault in every micro-batch.
  const size_t nt = r.grads[0].tensors.size();
  std::vector<uint64_t> mismatched(nt);
  std::vector<double> severity(nt);
  std::vector<float> worst(nt);
  float model_worst = 0;
  int steps_departing = 0;
  for (int s = 0; s < steps; ++s) {
    TensorSet params = r.params[static_cast<size_t>(s)];
    OptState opt{r.m[static_cast<size_t>(s)], r.v[static_cast<size_t>(s)], parameter_shapes(tiny_config())};
    BitFlipInjector flip(replay_flip(inj));
    train_step(tiny_config(), params, opt, s, 11, Optimizer{}, &flip);
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < nt; ++i) {
      const std::vector<float>& g = opt.grads.tensors[i].data;
      const Comparison c = compare(g.data(), r.grads[static_cast<size_t>(s)].tensors[i].data.data(), g.size());
      mismatched[i] += c.mismatched;
      severity[i] += c.severity;
      if (c.mismatched) worst[i] = std::max(worst[i], relative_distance(c.diff2, c.ref2));
      diff2 += c.diff2;
      ref2 += c.ref2;
    }
    const float model = relative_distance(diff2, ref2);
    steps_departing += model > 0;
    model_worst = std::max(model_worst, model);
  }
  CHECK(steps_departing == steps);
  bool any = false;
  for (size_t i = 0; i < nt; ++i) {
    const std::string name = "L2 grad " + r.grads[0].tensors[i].name + " ";
    const auto elements = static_cast<double>(r.grads[0].tensors[i].data.size() * steps);
    INFO(name);
    CHECK(slot(*p, faulty, name + "mismatch_frequency") == static_cast<float>(static_cast<double>(mismatched[i]) / elements));
    CHECK(slot(*p, faulty, name + "mismatch_severity") ==
          (mismatched[i] ? static_cast<float>(severity[i] / static_cast<double>(mismatched[i])) : 0.0f));
    CHECK(slot(*p, faulty, name + "grad_diff_ratio") == worst[i]);
    any = any || mismatched[i] > 0;
  }
  CHECK(any);
  CHECK(slot(*p, faulty, "L2 grad model grad_diff_ratio") == model_worst);
  CHECK(model_worst > 0.0f);
}
