// The checked-in goldens are what the specification computes: a random sample of golden tiles is
// recomputed with the plain scalar path (not the fast path that wrote them) and must match.
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "src/core/family.h"
#include "src/core/patterns.h"
#include "src/spec/digest.h"

using namespace sdc;

TEST_CASE("a random sample of golden tiles recomputes to the checked-in digests", "[golden]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  std::random_device rd;
  const unsigned seed = rd();
  INFO("sample seed " << seed);
  std::mt19937_64 rng(seed);
  size_t checked = 0;
  size_t with_golden = 0;
  const bool sanitized = std::getenv("SDC_SANITIZED") != nullptr;
  // Under a sanitizer (SDC_SANITIZED, the suite's environment) one case per family, its least costly tile: what a
  // sanitizer looks for is in the code, which every case of a family shares; the release suite checks every
  // case's goldens.
  std::map<std::string, std::pair<double, std::string>> cheapest;  // family -> (tile flops, case id)
  if (sanitized)
    for (const Case& c : ps.battery.cases) {
      if (!has_cpu_golden(c.mode) || (find_family(c.family)->replay && c.shape.dims.at("preset") != 0)) continue;
      const double flops = find_family(c.family)->prepare(c)->tile_flops();
      auto [it, fresh] = cheapest.try_emplace(c.family, flops, c.id);
      if (!fresh && flops < it->second.first) it->second = {flops, c.id};
    }
  for (const Case& c : ps.battery.cases) {
    if (!has_cpu_golden(c.mode)) continue;  // recorded on GPUs: no CPU recomputation exists
    if (sanitized && cheapest.at(c.family).second != c.id) continue;
    // A training-step replay's tiles are identical whole replays; the plain path of a small-preset replay takes
    // minutes, so its goldens are left to `golden`'s two computations, and the tiny presets' one tile here
    // stands for them (test_train_step_f32.cpp checks the paths agree).
    const bool replay = find_family(c.family)->replay;
    if (replay && c.shape.dims.at("preset") != 0) continue;
    ++with_golden;
    const test::CaseInputs k = test::prepare_inputs(c);
    const Problem* p = k.p.get();
    const GoldenCase& g = ps.golden.at(c.id);
    std::vector<float> out(p->tile_elements());
    // Three tiles per case: the first, the last and one at random. Under a sanitizer (SDC_SANITIZED, the
    // suite's environment) the one at random: the scalar path of a large case's tile is seconds of work there,
    // and what a sanitizer looks for is the same on every tile.
    const uint64_t n = p->tile_count();
    const uint64_t random_tile = rng() % n;
    // Each distinct tile once: a case of one or two tiles (a long-K product's single tile is seconds of scalar work)
    // does not recompute the same one again.
    for (uint64_t t : std::set<uint64_t>{0, n - 1, random_tile}) {
      if (replay && t != 0) continue;
      if (sanitized && !replay && t != random_tile) continue;
      INFO(c.id << " tile " << t);
      p->compute_tile_scalar(k.ptrs.data(), t, out.data());
      REQUIRE(tile_digest(t, out.data(), p->tile_elements()) == g.tile_digests[t]);
      ++checked;
    }
  }
  REQUIRE(with_golden >= 1);
  REQUIRE(checked >= with_golden);
}

// The small-preset replays' goldens against the plain path: minutes of single-threaded work, so hidden from the
// default run (`unit_tests "[replay-small]"`); the GPU's kernels follow the plain path, and the GPU runbook
// runs the small cases, so this says beforehand that a healthy GPU can match them.
TEST_CASE("the small training-step replays' goldens recompute with the plain path", "[.][replay-small]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  size_t checked = 0;
  for (const Case& c : ps.battery.cases) {
    if (!find_family(c.family)->replay || c.shape.dims.at("preset") == 0) continue;
    const auto p = find_family(c.family)->prepare(c);
    std::vector<float> unused(1);
    const float* ptrs[] = {unused.data()};
    std::vector<float> out(p->tile_elements());
    INFO(c.id);
    p->compute_tile_scalar(ptrs, 0, out.data());
    CHECK(tile_digest(0, out.data(), p->tile_elements()) == ps.golden.at(c.id).tile_digests[0]);
    ++checked;
  }
  REQUIRE(checked >= 2);
}
