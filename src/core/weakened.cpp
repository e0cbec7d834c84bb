// The switches that weaken a verdict (weakened.h).
#include "src/core/weakened.h"

#include <cstdlib>
#include <cstring>

namespace sdc {
namespace {

struct Switch {
  const char* name;
  const char* effect;  // {} is the value
};

// Every environment variable sdcscreen reads that can turn a check off or feed it other data than the
// node's. SDCSCREEN_PATTERNS is not here: pattern data other than the build's is refused unless
// --accept-patterns says otherwise (that option is the weakening). SDCSCREEN_HISTORY changes where the
// history is kept, not a verdict.
const Switch SWITCHES[] = {
    {"SDCSCREEN_SUPERVISE", "crash supervision is off: a crashing unit ends the screen by a signal, with no report"},
    {"SDCSCREEN_SYSFS_ROOT", "the PCI bus and sysfs are read under this directory, not /sys: a GPU node can screen as "
                             "a CPU node, its GPUs unchecked"},
    {"SDCSCREEN_HOST_ROOT", "the host's identity and telemetry (EDAC, machine checks) are read under this directory, "
                            "not the node's"},
    {"SDCSCREEN_NVML_LIBRARY", "the GPUs' telemetry (ECC errors, Xid) comes from this library, not the driver's NVML"},
    {"SDCSCREEN_DRILL_REPORT_CRASH", "drill: the screen crashes in its report writer"},
    {"SDCSCREEN_DRILL_TELEMETRY_AFTER", "drill: the after-run host telemetry is read under this directory"},
    {"SDCSCREEN_DRILL_TELEMETRY_DURING", "drill: the host telemetry sampled during the run is read under this directory"},
    {"SDCSCREEN_DRILL_WORKER_EXIT", "drill: this CPU's worker exits at its first iteration"},
    {"SDCSCREEN_DRILL_WORKER_CRASH", "drill: this CPU's worker crashes outside any tile (CPU[:inputs|between|stack])"},
    {"SDCSCREEN_DRILL_SLOW_CPU", "drill: this CPU does ten times the throughput probe's work"},
    {"SDCSCREEN_DRILL_HISTORY_FULL", "drill: appending the history line fails as on a full disk"},
    {"SDCSCREEN_DRILL_SLOW_NODE", "drill: every CPU does this many times the throughput probe's work"},
    {"SDCSCREEN_DRILL_SETUP_DELAY", "drill: the run's set-up takes this many seconds longer"},
    {"SDCSCREEN_DRILL_FORK_DELAY", "drill: the screen waits this many seconds after its supervisor forked it"},
};

const char* from_environment(const char* name) { return std::getenv(name); }

}  // namespace

const std::vector<std::string>& weakening_switch_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Switch& s : SWITCHES) n.emplace_back(s.name);
    return n;
  }();
  return names;
}

std::vector<Weakening> weakenings_in(const char* (*lookup)(const char*)) {
  std::vector<Weakening> out;
  for (const Switch& s : SWITCHES) {
    const char* v = lookup(s.name);
    if (!v || !*v) continue;
    if (std::strcmp(s.name, "SDCSCREEN_SUPERVISE") == 0 && std::strcmp(v, "0") != 0) continue;  // 0 turns it off
    out.push_back({s.name, v, s.effect});
  }
  return out;
}

std::vector<Weakening> weakenings_in_environment() { return weakenings_in(from_environment); }

std::string weakenings_short(const std::vector<Weakening>& w, bool with_values) {
  std::string s;
  for (const Weakening& x : w) {
    s += s.empty() ? "" : with_values ? ", " : ",";
    s += x.name;
    if (with_values && !x.value.empty()) s += "=" + x.value;
  }
  return s;
}

}  // namespace sdc
