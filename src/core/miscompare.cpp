#include "miscompare.h"

#include <fmt/format.h>

#include <cstring>

#include "../spec/digest.h"

namespace sdc {
namespace {

constexpr size_t MAX_LISTED_PER_TILE = 8;
constexpr size_t MAX_LISTED_PER_TEST = 32;

}  // namespace

uint64_t ulp_distance(uint32_t a, uint32_t b) {
  // Map the sign-magnitude encoding onto a line where adjacent floats are adjacent integers.
  auto ord = [](uint32_t u) -> int64_t { return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : u; };
  const int64_t d = ord(a) - ord(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
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
  size_t listed = 0;
  for (uint32_t e = 0; e < te; ++e) {
    uint32_t a, x;
    std::memcpy(&x, &expected[e], 4);
    std::memcpy(&a, &actual[e], 4);
    if (a == x) continue;
    ++r.miscompared_elements;
    if (listed >= MAX_LISTED_PER_TILE || r.miscompares.size() >= MAX_LISTED_PER_TEST) continue;
    ++listed;
    Miscompare m;
    m.iteration = iteration;
    m.tile = tile;
    m.unit = unit;
    m.element = problem.logical_element(tile, e);
    m.element_name = problem.element_name(m.element);
    m.expected = x;
    m.actual = a;
    m.ulps = ulp_distance(x, a);
    r.miscompares.push_back(m);
  }
}

}  // namespace sdc
