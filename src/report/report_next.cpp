// The text report's "next:" lines (report.h): what an operator does now about each failing unit.
#include <fmt/format.h>

#include <map>
#include <set>

#include "src/report/report.h"

namespace sdc {
namespace {

// A failing unit as the next line names it: a logical CPU, or a GPU (the part that is drained, retested and
// replaced) with the SMs of it that failed.
struct Failing {
  UnitName unit;
  std::set<int> sms;
  std::set<std::string> classes;  // the retests' classifications of it (or of its SMs)
  bool crashed = false, hung = false, miscompared = false;
  int package = -1;  // a CPU's
  std::string uuid, pci;  // a GPU's
};

int rank(const std::string& c) { return c == "persistent" ? 3 : c == "intermittent" ? 2 : c.empty() ? 0 : 1; }

}  // namespace

std::string next_steps_text(const RunResult& r) {
  // Only a failed screen drains its node: a unit that hung alone (exit 2) is for a person to look at.
  if (r.exit_code() != EXIT_FAIL) return "";
  // Keyed by (kind, id): CPUs first, then GPUs, each in id order.
  std::map<std::pair<int, int>, Failing> failing;
  const auto cpu_entry = [&](int cpu) -> Failing& {
    Failing& f = failing[{0, cpu}];
    f.unit = UnitName::of_cpu(cpu);
    for (const UnitResult& u : r.units)
      if (!u.is_sm() && u.cpu.cpu == cpu) f.package = u.cpu.package;
    return f;
  };
  const auto gpu_entry = [&](size_t device) -> Failing& {
    const DeviceInfo& d = r.devices[device];
    Failing& f = failing[{1, d.index}];
    f.unit = UnitName::of_gpu(d.index);
    f.uuid = d.uuid;
    f.pci = d.pci_bus_id;
    return f;
  };
  for (const TestResult& t : r.tests) {
    if (t.verdict != Verdict::fail && t.verdict != Verdict::crash) continue;
    const bool gpu = t.device_index >= 0 && static_cast<size_t>(t.device_index) < r.devices.size();
    if (gpu && t.units_failed.empty()) gpu_entry(static_cast<size_t>(t.device_index)).crashed |= t.verdict == Verdict::crash;
    for (int unit : t.units_failed) {
      Failing& f = gpu ? gpu_entry(static_cast<size_t>(t.device_index)) : cpu_entry(unit);
      if (gpu) f.sms.insert(unit);
      (t.verdict == Verdict::crash ? f.crashed : f.miscompared) = true;
    }
    if (gpu && t.verdict == Verdict::fail && t.units_failed.empty())  // its kernels span the GPU
      gpu_entry(static_cast<size_t>(t.device_index)).miscompared = true;
    for (const UnitRetest& x : t.retests)
      if (x.same_seed_runs > 0) {
        if (x.device >= 0) {
          for (size_t d = 0; d < r.devices.size(); ++d)
            if (r.devices[d].index == x.device) gpu_entry(d).classes.insert(x.classification());
        } else {
          cpu_entry(x.unit).classes.insert(x.classification());
        }
      }
  }
  for (const UnitResult& u : r.units) {
    if ((!u.crash_signal && !u.hung) || (u.is_sm() && static_cast<size_t>(u.device) >= r.devices.size())) continue;
    Failing& f = u.is_sm() ? gpu_entry(static_cast<size_t>(u.device)) : cpu_entry(u.cpu.cpu);
    if (u.is_sm()) f.sms.insert(u.sm);
    (u.crash_signal ? f.crashed : f.hung) = true;
  }
  if (failing.empty()) return "";
  std::string s = "\n";
  for (const auto& [key, f] : failing) {
    std::string who = unit_text(f.unit);
    if (!f.sms.empty()) {
      std::string sms;
      for (int sm : f.sms) {
        if (!sms.empty()) sms += ", ";
        sms += unit_text(UnitName{-1, -1, sm});
      }
      who += fmt::format(" ({})", sms);
    }
    std::string worst;
    for (const std::string& c : f.classes)
      if (rank(c) > rank(worst)) worst = c;
    const std::string part =
        f.unit.is_cpu() ? (f.package >= 0 ? fmt::format("its package (package {})", f.package) : std::string("it"))
                        : fmt::format("the GPU ({}{}{})", f.uuid.empty() ? "no UUID" : f.uuid, f.pci.empty() ? "" : ", pci ",
                                      f.pci);
    std::string action;
    if (worst == "persistent")
      action = "persistent: replace or RMA " + part;
    else if (!worst.empty())
      action = fmt::format("{}: replace or RMA {} if the retest fails again", worst, part);
    else {
      const char* what = f.miscompared ? "not retested" : f.crashed ? "crashed" : "hung";
      action = fmt::format("{}: replace or RMA {} if the retest fails again", what, part);
    }
    s += fmt::format("next: {}: drain the node; retest it alone: {}; {}{}\n", who,
                     retest_line(r.argv, r.program, f.unit), action,
                     r.injections.empty() ? "" : " [drill: the failure was injected]");
  }
  return s;
}

}  // namespace sdc
