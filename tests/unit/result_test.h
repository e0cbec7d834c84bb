// Shared by the unit tests that build a screen's results by hand (the history, the node's consensus, the
// weakened-run refusal, the reports) or read its text renderings.
#pragma once

#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/core/result.h"
#include "tests/unit/catch.h"

namespace sdc::test {

// A test of case `id` (of the family its id begins with) on device device_index (-1: the CPUs) with verdict
// v, failed on the units units_failed.
inline TestResult test_of(const std::string& id, Verdict v, std::vector<int> units_failed = {}, int device_index = -1) {
  TestResult t;
  t.id = id;
  t.family = id.substr(0, id.find('.'));
  t.verdict = v;
  t.units_failed = std::move(units_failed);
  t.device_index = device_index;
  return t;
}

// A run of `profile` on CPUs 0 to cpus - 1, each having computed `tiles` tiles.
inline RunResult cpu_units_run(const std::string& profile, int cpus, int64_t tiles) {
  RunResult r;
  r.profile = profile;
  for (int c = 0; c < cpus; ++c) {
    UnitResult u;
    u.cpu.cpu = c;
    u.tiles = tiles;
    r.units.push_back(u);
  }
  return r;
}

// A run on one GPU: the CUDA backend, device `index` of that UUID.
inline RunResult one_gpu_run(int index, const std::string& uuid) {
  RunResult r;
  r.backend = "cuda";
  DeviceInfo d;
  d.index = index;
  d.uuid = uuid;
  r.devices = {d};
  return r;
}

// The lines of a text rendering, without their line ends.
inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Checks that a rendering (a Prometheus page, a text report) holds each of `expected` somewhere in it; a
// missing one is named in the failure.
inline void check_contains(const std::string& text, std::initializer_list<std::string> expected) {
  for (const std::string& e : expected) {
    INFO("expected in the rendering: " << e);
    CHECK(text.find(e) != std::string::npos);
  }
}

}  // namespace sdc::test
