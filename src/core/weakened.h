// What weakens a screen's verdict: switches meant for tests and drills that, set on a production node (for
// example through the systemd unit's EnvironmentFile), turn a real check off or feed it made-up data, and
// pattern data other than the build's (`--accept-patterns`). None of them is silent: every one in effect is
// named in every output of the screen (JSON `weakened_by`, the text report, HTML, Prometheus, the NPD line),
// the history records the screen as weakened so that the resume policy never counts it, and the deploy
// wrappers refuse to screen when one is set (outside their tests).
#pragma once

#include <string>
#include <vector>

namespace sdc {

struct Weakening {
  std::string name;    // the switch: SDCSCREEN_SUPERVISE, ..., or --accept-patterns
  std::string value;   // its value ("" for an option)
  std::string effect;  // what it does to the verdict, for people
};

// The environment switches that weaken a verdict (every one this binary reads), in the order listed.
const std::vector<std::string>& weakening_switch_names();

// Those set in this process's environment so that they take effect (SDCSCREEN_SUPERVISE only when 0, the
// others when not empty), each with its value and effect.
std::vector<Weakening> weakenings_in_environment();

// The same, from a given lookup (getenv's contract: null when unset); for tests.
std::vector<Weakening> weakenings_in(const char* (*lookup)(const char*));

// "SDCSCREEN_SUPERVISE=0, --accept-patterns" (with_values) or "SDCSCREEN_SUPERVISE,--accept-patterns" (the
// names alone, for the NPD line and the Slurm reason): comma-separated.
std::string weakenings_short(const std::vector<Weakening>& w, bool with_values = true);

}  // namespace sdc
