// What the GPU tests (test_gpu.cpp) do with each battery case, decided on the host alone: which cases run on
// the device, which are compared with a CPU golden and which must repeat their own bits, on which case of a
// family the fault hooks run, and which cuBLASLt cases have every heuristic algorithm checked; and how each of
// their steps runs (guarded: one step's exception is its own failure, never the end of the steps after it).
// A unit test (tests/unit/backends/test_gpu_plan.cpp) walks the battery through this same function on every build, so a
// case the GPU tests cannot describe (a shape key a check assumes, a missing golden) fails in CI, not on the
// first GPU.
#pragma once

#include <cstdio>
#include <exception>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/core/family.h"
#include "src/core/patterns.h"

namespace sdc::gpu_tests {

// Recorded cuBLASLt cases (random data, no golden) are checked algorithm by algorithm only up to this many
// flops: every algorithm runs twice, and the heuristic may offer dozens.
inline constexpr double LT_RECORDED_FLOP_LIMIT = 1e10;

enum class LtCheck {
  none,
  golden,   // an exact-integer cuBLASLt case: every algorithm must give the golden digests
  repeats,  // a small recorded cuBLASLt case: every algorithm run twice must repeat its own bits
};

struct CasePlan {
  const Case* c = nullptr;
  uint64_t tiles = 0;          // digests one run gives
  uint32_t tile_elements = 0;  // elements per tile (the fault hook flips the last one)
  bool golden = false;         // compared with the CPU golden; otherwise two runs must agree
  bool hooks = false;          // the family's first golden case: the tile and SM fault hooks run on it
  LtCheck lt = LtCheck::none;
};

// Every battery case whose family has a device side, in battery order. Throws std::runtime_error naming the
// case when the GPU tests could not describe it.
inline std::vector<CasePlan> plan(const PatternSet& ps) {
  std::vector<CasePlan> out;
  std::set<std::string> hooked;
  for (const Case& c : ps.battery.cases) {
    const Family* fam = find_family(c.family);
    if (!fam) throw std::runtime_error(c.id + ": no family " + c.family);
    const std::string side = fam->device_side;
    if (side == "none") continue;
    CasePlan p;
    p.c = &c;
    const auto problem = fam->prepare(c);
    p.tiles = problem->tile_count();
    p.tile_elements = problem->tile_elements();
    if (p.tiles == 0 || p.tile_elements == 0) throw std::runtime_error(c.id + ": a case without tiles");
    p.golden = has_cpu_golden(c.mode);
    if (p.golden) {
      const auto g = ps.golden.find(c.id);
      if (g == ps.golden.end()) throw std::runtime_error(c.id + ": no golden digests");
      if (g->second.tile_digests.size() != p.tiles)
        throw std::runtime_error(c.id + ": " + std::to_string(g->second.tile_digests.size()) + " golden digests for " +
                                 std::to_string(p.tiles) + " tiles");
      p.hooks = hooked.insert(c.family).second;
    }
    if (side == "library") {
      const double flops = problem->tile_flops() * static_cast<double>(p.tiles);
      p.lt = c.mode == Mode::exact_integer                 ? LtCheck::golden
             : !p.golden && flops <= LT_RECORDED_FLOP_LIMIT ? LtCheck::repeats
                                                             : LtCheck::none;
    }
    out.push_back(p);
  }
  return out;
}

// Runs one step of the GPU tests (a case, one case's cuBLASLt algorithm sweep, a GPU executor test) so that an
// exception out of it (cuBLASLt that cannot be loaded, a CUDA error, a missing golden) is that step's failure,
// counted in `failures` and said on one line of `log` ("FAIL <step>: <what>"), and the steps after it still
// run. The line is flushed at once: a run killed at its deadline keeps it. False when the step threw.
template <class Body>
bool guarded(const std::string& step, int& failures, std::FILE* log, Body&& body) {
  try {
    body();
    return true;
  } catch (const std::exception& e) {
    ++failures;
    std::fprintf(log, "FAIL %s: %s\n", step.c_str(), e.what());
  } catch (...) {
    ++failures;
    std::fprintf(log, "FAIL %s: an exception that is not a std::exception\n", step.c_str());
  }
  std::fflush(log);
  return false;
}

}  // namespace sdc::gpu_tests
