#include "src/core/miscompare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "src/core/signature.h"
#include "src/spec/digest.h"

namespace sdc {
namespace {

constexpr size_t MAX_LISTED_PER_TILE = 8;
constexpr size_t MAX_LISTED_PER_TEST = 32;

// A replay's metrics from a unit's first failing tile: those that differ from the reference's, and those
// listed always.
void add_replay_metrics(const Problem& problem, uint64_t tile, const float* expected, const float* actual,
                        int iteration, int unit, TestResult& r) {
  const ReplayProblem* replay = problem.replay();
  if (!replay || std::any_of(r.replay_metrics.begin(), r.replay_metrics.end(),
                             [unit](const ReplayMetric& m) { return m.unit == unit; }))
    return;
  for (const ReplayMetricSlot& s : replay->metric_slots()) {
    const float x = expected[s.offset], a = actual[s.offset];
    if (!s.always && std::memcmp(&x, &a, sizeof x) == 0) continue;
    r.replay_metrics.push_back({unit, iteration, tile, s.level, s.site, s.metric, a, x});
  }
  if (std::string mode = replay->failure_mode(expected, actual); !mode.empty())
    r.replay_failure_modes.push_back({unit, iteration, tile, std::move(mode)});
}

}  // namespace

WordFormat word_format(const Family* f) {
  if (f && f->int32_outputs) return WordFormat::int32;
  return f && f->value_words == 2 ? WordFormat::binary64 : WordFormat::fp32;
}

void analyse_tile(const Problem& problem, const std::vector<std::vector<float>>& inputs, uint64_t golden_digest,
                  uint64_t tile, const float* actual, int iteration, int unit, Workspace& ws,
                  std::vector<float>& expected, TestResult& r) {
  const uint32_t te = problem.tile_elements();
  if (expected.size() != te) {  // not cached yet: recompute on this CPU
    expected.resize(te);
    std::vector<const float*> in;
    for (const auto& v : inputs) in.push_back(v.data());
    problem.compute_tile(in.data(), tile, expected.data(), ws);
    if (tile_digest(tile, expected.data(), te) != golden_digest)
      r.notes.push_back(
          fmt::format("tile {}: the analysing CPU's recomputation does not match the golden digest "
                      "either; element lists for this tile are unreliable",
                      tile));
  }
  const Family* family = find_family(r.family);
  const unsigned value_words = family ? family->value_words : 1;
  const WordFormat format = word_format(family);
  size_t listed = 0;
  Signature* sig = nullptr;  // looked up at the first differing element: a failing tile can have none
  for (uint32_t e = 0; e < te; ++e) {
    uint32_t a, x;
    std::memcpy(&x, &expected[e], 4);
    std::memcpy(&a, &actual[e], 4);
    if (a == x) continue;
    ++r.miscompared_elements;
    // Every differing element goes into the unit's signature, listed or not: where it lies in the output is
    // read from its name, the one place every family spells out its output's indices.
    const uint64_t element = problem.logical_element(tile, e);
    std::string name = problem.element_name(element);
    if (!sig) sig = &signature_of(r.signatures, unit, format);
    // A binary64 value's two words are at offsets 2v (low) and 2v + 1.
    const uint32_t lo = e & ~1u;
    uint64_t x64 = 0, a64 = 0;
    if (value_words == 2) {
      std::memcpy(&x64, &expected[lo], 8);
      std::memcpy(&a64, &actual[lo], 8);
      // The value is one element of the signature however many of its two words differ: added at its low
      // word, or at the high word when the low word matched.
      if (e == lo || static_cast<uint32_t>(x64) == static_cast<uint32_t>(a64))
        sig->add(iteration, tile, position_from_name(name), x64, a64);
    } else {
      sig->add(iteration, tile, position_from_name(name), x, a);
    }
    if (listed >= MAX_LISTED_PER_TILE || r.miscompares.size() >= MAX_LISTED_PER_TEST) continue;
    ++listed;
    Miscompare m;
    m.iteration = iteration;
    m.tile = tile;
    m.unit = unit;
    m.element = element;
    m.element_name = std::move(name);
    m.expected = x;
    m.actual = a;
    m.ulps = ulp_distance(x, a);
    if (family && family->int32_outputs) {
      m.int32 = true;
      m.ulps = static_cast<uint64_t>(std::llabs(int32_difference(x, a)));
    }
    if (value_words == 2) {
      m.binary64 = true;
      m.expected64 = x64;
      m.actual64 = a64;
      m.ulps64 = ulp_distance64(x64, a64);
    }
    r.miscompares.push_back(m);
  }
  if (sig) add_replay_metrics(problem, tile, expected.data(), actual, iteration, unit, r);
  if (listed > 0)  // with the tile's listed elements (so at most as many tiles per test)
    if (std::string line = problem.describe_tile(tile, actual); !line.empty()) r.notes.push_back(std::move(line));
}

}  // namespace sdc
