// The outputs for fleet machinery: a Prometheus textfile and a node-problem-detector status line.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "src/report/report.h"
#include "src/report/report_gpu.h"
#include "src/report/report_host.h"

namespace sdc {
namespace {

// The value of an unlabelled series in an old textfile, or -1.
// A timestamp the previous file carries over (the last success), or -1 when it has none that can be true:
// the whole value must be a finite number, not negative, and not after `now` (a forged or corrupt file must
// not make an old success look recent, or a failure look like one).
double previous_value(const std::string& text, const std::string& name, double now) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) != 0) continue;
    const char* begin = line.c_str() + name.size() + 1;
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(begin, &end);
    if (end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < 0 || v > now) return -1;
    return v;
  }
  return -1;
}

void gauge(std::string& out, const char* name, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
}

// How the NPD line names a GPU (an index into r.devices), or an SM of it: as every output does (unit_text),
// followed by its UUID cut to the first group so that the line keeps to 80 characters ("gpu 0 sm 17
// (GPU-1a2b3c4d)": "GPU-" and the first 8 hex digits, which nvidia-smi -L shows in full); no UUID when none
// is known.
std::string npd_gpu(const RunResult& r, int device_index, int sm = -1) {
  if (device_index < 0 || static_cast<size_t>(device_index) >= r.devices.size())
    return unit_text(UnitName::of_sm(device_index, sm));
  const DeviceInfo& d = r.devices[static_cast<size_t>(device_index)];
  const size_t dash = d.uuid.find('-');
  const bool shortened =
      dash != std::string::npos && dash > 0 && d.uuid.size() >= dash + 9 &&
      std::all_of(d.uuid.begin() + static_cast<long>(dash) + 1, d.uuid.begin() + static_cast<long>(dash) + 9,
                  [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
  return unit_text(UnitName::of_sm(d.index, sm), shortened ? d.uuid.substr(0, dash + 9) : "");
}

// The GPUs' NVML events of a severity, each GPU named as above: "gpu 0 (GPU-1a2b3c4d): Xid 79; gpu 1:
// ecc_uncorrected +1".
std::string npd_gpu_causes(const RunResult& r, const char* severity) {
  std::string s;
  for (const host::GpuTelemetry& g : r.nvml.gpus)
    if (g.any(severity)) s += fmt::format("{}{}: {}", s.empty() ? "" : "; ", npd_gpu(r, g.device), g.causes(severity));
  return s;
}

}  // namespace

namespace {

// The labels of a unit's series (unit_labels): cpu="3"; gpu="0",uuid="..."; gpu="0",uuid="...",sm="5". The UUID
// (when known) lets a fleet query follow the part when CUDA renumbers it.
std::string labels_of(const RunResult& r, const UnitName& u) {
  for (const DeviceInfo& d : r.devices)
    if (!u.is_cpu() && d.index == u.gpu) return unit_labels(u, d.uuid);
  return unit_labels(u);
}

// The labels of a unit the probe names ("cpu 3", "gpu 1"); a name that is none of ours as unit="...".
std::string labels_of(const RunResult& r, const std::string& unit) {
  UnitName u;
  return parse_unit_text(unit, u) ? labels_of(r, u) : fmt::format("unit=\"{}\"", unit);
}

// The units the watchdog gave up on, for the NPD line: "cpu 3", a GPU whose every SM hung by its name
// ("gpu 0 (GPU-8c2f1a2b)", npd_gpu), an SM alone as "gpu 0 sm 5 (GPU-8c2f1a2b)".
std::string hung_units(const RunResult& r) {
  std::map<int, std::pair<size_t, size_t>> sms;  // device -> (hung SMs, SMs)
  for (const UnitResult& u : r.units)
    if (u.is_sm()) {
      sms[u.device].first += u.hung;
      ++sms[u.device].second;
    }
  std::string out;
  std::set<int> named;
  for (const UnitResult& u : r.units) {
    if (!u.hung) continue;
    std::string name;
    if (!u.is_sm())
      name = unit_text(UnitName::of_cpu(u.cpu.cpu));
    else if (sms[u.device].first < sms[u.device].second)
      name = npd_gpu(r, u.device, u.sm);
    else if (named.insert(u.device).second)
      name = npd_gpu(r, u.device);
    if (!name.empty()) out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

// "cpu 3, gpu 1": the slow units.
std::string slow_units(const RunResult& r) {
  std::string out;
  for (const UnitThroughput& u : r.throughput)
    if (u.slow) out += (out.empty() ? "" : ", ") + u.unit;
  return out;
}

// Each retested unit's classification, over the failing tests: the unit's labels -> the worst of its
// classifications (persistent over intermittent over not reproduced) and its highest rate.
struct UnitClass {
  std::string cls;
  double rate = 0;
};
int class_rank(const std::string& c) { return c == "persistent" ? 3 : c == "intermittent" ? 2 : 1; }
std::map<std::string, UnitClass> unit_classes(const RunResult& r) {
  std::map<std::string, UnitClass> out;
  for (const TestResult& t : r.tests)
    for (const UnitRetest& u : t.retests) {
      if (u.same_seed_runs == 0) continue;  // not retested after all (cut short before its first run)
      UnitClass& c = out[labels_of(r, u.device >= 0 ? UnitName::of_sm(u.device, u.unit) : UnitName::of_cpu(u.unit))];
      if (c.cls.empty() || class_rank(u.classification()) > class_rank(c.cls)) c.cls = u.classification();
      c.rate = std::max(c.rate, u.rate());
    }
  return out;
}

}  // namespace

std::string render_prometheus(const RunResult& r, const std::string& previous) {
  const bool passed = r.exit_code() == EXIT_PASS;
  std::string s;
  gauge(s, "sdcscreen_last_run_timestamp_seconds", "Unix time the last screen ended.");
  s += fmt::format("sdcscreen_last_run_timestamp_seconds {:.3f}\n", r.end_unix);
  // Absent until a screen passes (no previous success carried over), never 0: a zero would read as a success in
  // 1970 to a max_over_time or a "time() - x" panel. A node that never passed has the run's series without this
  // one, which the never-passed alert matches (a per-node absent(): deploy/prometheus/sdcscreen.rules.yml).
  const double last_success =
      passed ? r.end_unix : previous_value(previous, "sdcscreen_last_success_timestamp_seconds", r.end_unix);
  gauge(s, "sdcscreen_last_success_timestamp_seconds",
        "Unix time of the last screen that passed; absent until one has passed.");
  if (last_success >= 0) s += fmt::format("sdcscreen_last_success_timestamp_seconds {:.3f}\n", last_success);
  gauge(s, "sdcscreen_run_duration_seconds", "Wall time of the last screen.");
  s += fmt::format("sdcscreen_run_duration_seconds {:.3f}\n", r.end_unix - r.start_unix);
  gauge(s, "sdcscreen_exit_code",
        "Exit code of the last screen: 0 pass, 1 miscompare, 2 inconclusive, 3 slow (--fail-slow), 128+N signal.");
  s += fmt::format("sdcscreen_exit_code {}\n", r.exit_code());
  gauge(s, "sdcscreen_healthy", "1 when the last screen passed, else 0.");
  s += fmt::format("sdcscreen_healthy {}\n", passed ? 1 : 0);
  gauge(s, "sdcscreen_fault_injection", "1 when the last screen injected faults on purpose (a drill).");
  s += fmt::format("sdcscreen_fault_injection {}\n", r.injections.empty() ? 0 : 1);
  gauge(s, "sdcscreen_weakened",
        "1 when something weakened the last screen's verdict (a test switch in the environment, --accept-patterns; "
        "sdcscreen_weakened_by names each): its pass vouches for less than a screen's.");
  s += fmt::format("sdcscreen_weakened {}\n", r.weakened_by.empty() ? 0 : 1);
  if (!r.weakened_by.empty()) {
    gauge(s, "sdcscreen_weakened_by", "1 for each switch that weakened the last screen's verdict.");
    for (const Weakening& w : r.weakened_by) s += fmt::format("sdcscreen_weakened_by{{switch=\"{}\"}} 1\n", w.name);
  }
  gauge(s, "sdcscreen_info", "The last screen's profile and backend.");
  s += fmt::format("sdcscreen_info{{profile=\"{}\",backend=\"{}\",version=\"{}\"}} 1\n", r.profile, r.backend,
                   tool_version());
  // A device is healthy when it computed tiles and none failed; one that computed nothing is not.
  gauge(s, "sdcscreen_device_healthy",
        "1 when the device (a logical CPU: cpu label; a GPU: gpu and uuid labels) computed tiles and none miscompared "
        "(a GPU: and NVML reported no hardware failure).");
  std::vector<uint64_t> gpu_tiles(r.devices.size()), gpu_failed(r.devices.size());
  for (const TestResult& t : r.tests)  // a GPU whose context a test's work destroyed is not healthy
    if (t.verdict == Verdict::crash && t.device_index >= 0) ++gpu_failed[static_cast<size_t>(t.device_index)];
  for (const host::GpuTelemetry& g : r.nvml.gpus)  // nor one whose hardware reported a failure through NVML
    if (g.any("failure") && g.device >= 0 && static_cast<size_t>(g.device) < gpu_failed.size())
      ++gpu_failed[static_cast<size_t>(g.device)];
  for (const UnitResult& u : r.units) {
    if (u.is_sm()) {
      gpu_tiles[static_cast<size_t>(u.device)] += u.tiles;
      gpu_failed[static_cast<size_t>(u.device)] += u.failed_tiles + (u.hung ? 1 : 0);
    } else {
      s += fmt::format("sdcscreen_device_healthy{{{}}} {}\n", labels_of(r, UnitName::of_cpu(u.cpu.cpu)),
                       u.tiles > 0 && u.failed_tiles == 0 && !u.hung && !u.crash_signal ? 1 : 0);
    }
  }
  for (size_t d = 0; d < r.devices.size(); ++d)
    s += fmt::format("sdcscreen_device_healthy{{{}}} {}\n", labels_of(r, UnitName::of_gpu(r.devices[d].index)),
                     gpu_tiles[d] > 0 && gpu_failed[d] == 0 ? 1 : 0);
  gauge(s, "sdcscreen_device_relative_throughput",
        "The device's throughput over its peers' median in the last screen (median over comparable cases).");
  for (const UnitThroughput& u : r.throughput)
    s += fmt::format("sdcscreen_device_relative_throughput{{{}}} {:.4f}\n", labels_of(r, u.unit), u.relative);
  gauge(s, "sdcscreen_device_slow", "1 for a device below the throughput floor of its peers (present only then).");
  for (const UnitThroughput& u : r.throughput)
    if (u.slow) s += fmt::format("sdcscreen_device_slow{{{}}} 1\n", labels_of(r, u.unit));
  // Whether the probe measured the units (the JSON report's throughput.probe.ran): without it (run --no-probe, one
  // unit, a stop) no unit was judged slow, and the missing sdcscreen_device_slow says nothing.
  gauge(s, "sdcscreen_probe_ran",
        "1 when the throughput probe measured the units in the last screen; 0 when it did not run (--no-probe, one "
        "unit, a stop: the JSON report's throughput.probe.not_run says why) and no unit was judged slow.");
  s += fmt::format("sdcscreen_probe_ran {}\n", r.probe.not_run.empty() && !r.probe.seconds.empty() ? 1 : 0);
  const auto classes = unit_classes(r);
  gauge(s, "sdcscreen_device_fault_class",
        "1 for a unit (a logical CPU, or an SM: gpu and sm labels) whose failure was retested (--retest-on-failure), "
        "labelled with its classification: persistent, intermittent or not_reproduced (present only then).");
  for (const auto& [labels, c] : classes) {
    std::string cls = c.cls;
    std::replace(cls.begin(), cls.end(), ' ', '_');
    s += fmt::format("sdcscreen_device_fault_class{{{},class=\"{}\"}} 1\n", labels, cls);
  }
  gauge(s, "sdcscreen_device_fault_rate",
        "The fraction of a failing device's retests that failed again (present only for retested devices).");
  for (const auto& [labels, c] : classes)
    s += fmt::format("sdcscreen_device_fault_rate{{{}}} {:.4f}\n", labels, c.rate);
  // The replay's first failing site per unit (L1's slots are in execution order: the first faulty submodule);
  // bounded labels: the model's submodules and tensors, its steps.
  gauge(s, "sdcscreen_replay_failed",
        "1 for a device whose training-step replay failed, by level and its first failing site (present only then).");
  std::set<std::string> replay_devices;  // a CPU, or a GPU (its replay's kernels span it: no SM)
  for (const TestResult& t : r.tests)
    if (is_replay_family(t.family))
      for (const Miscompare& m : t.miscompares) {
        const std::string dev = labels_of(r, t.device_index >= 0 ? UnitName::of_gpu(r.devices[static_cast<size_t>(t.device_index)].index)
                                                                 : UnitName::of_cpu(m.unit));
        if (const std::string site = replay_site(m.element_name);
            !site.empty() && (t.device_index >= 0 || m.unit >= 0) && replay_devices.insert(dev).second)
          s += fmt::format("sdcscreen_replay_failed{{{},level=\"{}\",site=\"{}\"}} 1\n", dev, site.substr(1, 1),
                           site.substr(3));
      }
  // The paper's metrics of each failing replay unit, every one (the reports' replay_metrics): bounded labels as
  // above, and the metric's name.
  gauge(s, "sdcscreen_replay_metric",
        "A training-step replay's metric on a device whose replay failed, by case, level, site and metric "
        "(mismatch_frequency, mismatch_severity, grad_diff_ratio, loss, param_distance, loss_spike; present only "
        "then).");
  for (const TestResult& t : r.tests)
    for (const ReplayMetric& m : t.replay_metrics) {
      if (t.device_index < 0 && m.unit < 0) continue;  // no CPU named
      const std::string dev = labels_of(r, t.device_index >= 0 ? UnitName::of_gpu(r.devices[static_cast<size_t>(t.device_index)].index)
                                                               : UnitName::of_cpu(m.unit));
      const std::string value = std::isnan(m.value) ? "NaN"
                                : std::isinf(m.value) ? (m.value > 0 ? "+Inf" : "-Inf")
                                                      : fmt::format("{}", m.value);
      s += fmt::format("sdcscreen_replay_metric{{{},case=\"{}\",level=\"{}\",site=\"{}\",metric=\"{}\"}} {}\n", dev, t.id,
                       m.level, m.site, m.metric, value);
    }
  // Level 3's trajectory classified (the reports' replay_failure_modes): bounded labels, five modes.
  gauge(s, "sdcscreen_replay_failure_mode",
        "1 for a device whose training-step replay failed, by case and the failure mode of its level-3 trajectory "
        "(spike_and_recover, spike_and_degrade, silent_degradation, gradual_drift, none; present only then).");
  for (const TestResult& t : r.tests)
    for (const ReplayFailureMode& m : t.replay_failure_modes) {
      if (t.device_index < 0 && m.unit < 0) continue;  // no CPU named
      const std::string dev =
          labels_of(r, t.device_index >= 0 ? UnitName::of_gpu(r.devices[static_cast<size_t>(t.device_index)].index)
                                           : UnitName::of_cpu(m.unit));
      s += fmt::format("sdcscreen_replay_failure_mode{{{},case=\"{}\",mode=\"{}\"}} 1\n", dev, t.id, m.mode);
    }
  gauge(s, "sdcscreen_device_hung", "1 for a device the watchdog gave up on in the last screen (present only then).");
  for (const UnitResult& u : r.units)
    if (u.hung && !u.is_sm()) s += fmt::format("sdcscreen_device_hung{{{}}} 1\n", labels_of(r, UnitName::of_cpu(u.cpu.cpu)));
  for (size_t d = 0; d < r.devices.size(); ++d)  // a GPU whose SMs the watchdog gave up on, by ordinal and UUID
    if (std::any_of(r.units.begin(), r.units.end(),
                    [d](const UnitResult& u) { return u.hung && u.is_sm() && u.device == static_cast<int>(d); }))
      s += fmt::format("sdcscreen_device_hung{{{}}} 1\n", labels_of(r, UnitName::of_gpu(r.devices[d].index)));
  std::map<std::string, uint64_t> tiles_failed;
  std::map<std::string, int> results;
  for (const TestResult& t : r.tests) {
    tiles_failed[t.family] += t.failed_tiles;
    ++results[result_name(t)];
  }
  gauge(s, "sdcscreen_miscompared_tiles", "Tiles that miscompared in the last screen, by kernel family.");
  for (const auto& [family, n] : tiles_failed)
    s += fmt::format("sdcscreen_miscompared_tiles{{family=\"{}\"}} {}\n", family, n);
  gauge(s, "sdcscreen_tests",
        "Tests of the last screen by result (not_applicable: cases this backend or device cannot run, not skips).");
  for (const char* v : RESULT_NAMES)
    s += fmt::format("sdcscreen_tests{{result=\"{}\"}} {}\n", v, results.count(v) ? results[v] : 0);
  s += host_prometheus(r.host);
  s += gpu_prometheus(r.nvml);
  return s;
}

int npd_exit_code(const RunResult& r) {
  const int code = r.exit_code();
  return code == EXIT_PASS ? 0 : code == EXIT_FAIL ? 1 : 2;
}

std::string render_npd_line(const RunResult& r) {
  std::string line;
  const std::string drill = r.injections.empty() ? "" : " [drill]";
  switch (npd_exit_code(r)) {
    case 0: {  // skips (not applicable here) are not passes
      size_t passed = 0;
      for (const TestResult& t : r.tests) passed += t.verdict == Verdict::pass;
      const std::string skipped =
          passed < r.tests.size() ? fmt::format(", {} not applicable", r.tests.size() - passed) : "";
      line = r.devices.empty() ? fmt::format("OK: {} tests passed{} on {} cpus ({}){}", passed, skipped, r.units.size(),
                                             r.profile, drill)
                               : fmt::format("OK: {} tests passed{} on {} gpus ({}){}", passed, skipped,
                                             r.devices.size(), r.profile, drill);
      if (const std::string slow = slow_units(r); !slow.empty()) line = fmt::format("{}; slow: {}", line, slow);
      break;
    }
    case 1: {
      std::string where, families;
      std::set<std::string> named;  // "cpu 1, cpu 3": each unit once, in the order of the tests
      const auto add_unit = [&](const std::string& u) {
        if (named.insert(u).second) where += (where.empty() ? "" : ", ") + u;
      };
      for (const TestResult& t : r.tests) {
        if (t.verdict != Verdict::fail && t.verdict != Verdict::crash) continue;
        if (t.units_failed.empty() && t.device_index >= 0) {  // a GPU that lost its context: the GPU itself
          add_unit(npd_gpu(r, t.device_index));
        }
        for (int unit : t.units_failed) {  // cpu 3, or gpu 0 sm 17 (GPU-1a2b3c4d)
          add_unit(t.device_index >= 0 ? npd_gpu(r, t.device_index, unit) : unit_text(UnitName::of_cpu(unit)));
        }
        // A replay names its level and first failing site: "replay L1 layer1.mlp.down.forward"; a crashed
        // unit's family follows "crash", as in the drain reason (docs/fleet.md).
        std::string what = t.family;
        if (is_replay_family(t.family) && !t.miscompares.empty())
          if (const std::string site = replay_site(t.miscompares.front().element_name); !site.empty())
            what = "replay " + site;
        if (t.verdict == Verdict::crash) what = "crash " + what;
        if (families.find(what + ",") == std::string::npos) families += what + ",";
      }
      if (!families.empty()) families.pop_back();
      // Units the watchdog gave up on (exit 1 when their peers finished): "cpu1 hung (watchdog) in CASE".
      std::string hung = hung_units(r);
      if (!hung.empty()) {
        hung += " hung (watchdog)";
        for (const TestResult& t : r.tests)
          if (t.verdict == Verdict::error && t.reason.rfind("watchdog", 0) == 0) {
            hung += " in " + t.id;
            break;
          }
        if (where.empty()) {
          line = fmt::format("SDC: {}{}", hung, drill);
          break;
        }
      }
      // The retest's classification after the units: one word when they share it, else "mixed".
      std::string cls;
      for (const auto& [dev, c] : unit_classes(r)) cls = cls.empty() || cls == c.cls ? c.cls : "mixed";
      line = fmt::format("SDC: {} {}{}{}{}", where, cls.empty() ? "" : cls + " ", families, drill,
                         hung.empty() ? "" : "; " + hung);
      // An uncorrected hardware error during the run (EDAC, machine check) names its unit: first when no test
      // failed, after the tests' units otherwise.
      if (const std::string hw = host_fatal_units(r.host); !hw.empty()) {
        const std::string hw_drill = r.host.drill.empty() ? "" : " [drill]";
        line = where.empty() ? fmt::format("HW: {} during the screen{}{}", hw, drill, hw_drill)
                             : fmt::format("{}; HW: {}{}", line, hw, hw_drill);
      }
      // A GPU's own hardware failure (NVML: uncorrected ECC, a hardware Xid) names the GPU the same way.
      if (r.nvml.any("failure")) {
        const std::string gpu = npd_gpu_causes(r, "failure");
        line = line.rfind("SDC: ", 0) == 0 && where.empty() && host_fatal_units(r.host).empty()
                   ? fmt::format("HW: {} during the screen{}", gpu, drill)
                   : fmt::format("{}; HW: {}", line, gpu);
      }
      break;
    }
    default: {
      std::string why = r.interrupted_by ? fmt::format("interrupted by signal {}", r.interrupted_by) : "";
      if (r.exit_code() == EXIT_SLOW) why = fmt::format("every test passed; slow (--fail-slow): {}", slow_units(r));
      // A hung unit first, by name (the line is cut at 80 characters): "cpu1 hung (watchdog) in CASE".
      const std::string hung = hung_units(r);
      if (why.empty() && !hung.empty()) {
        why = hung + " hung (watchdog)";
        for (const TestResult& t : r.tests)
          if (t.verdict == Verdict::error && t.reason.rfind("watchdog", 0) == 0) {
            why += " in " + t.id;
            break;
          }
      }
      if (why.empty() && r.nvml.any("error")) why = npd_gpu_causes(r, "error");
      for (const std::string& e : r.errors)
        if (why.empty()) why = e;
      // A test that did not pass, by its result's name (a case that cannot run here is not_applicable, not a
      // skip: docs/design.md, "Verdicts"); one that could have run before one that cannot.
      for (const bool applicable : {true, false})
        for (const TestResult& t : r.tests)
          if (why.empty() && t.verdict != Verdict::pass && t.not_applicable != applicable)
            why = fmt::format("{} {}: {}", t.id, result_name(t), t.reason);
      line = fmt::format("Unknown: {}{}", why.empty() ? "screen inconclusive" : why, drill);
    }
  }
  // Whatever weakened the verdict, last, like [drill]: "OK: 5 tests passed on 8 cpus (boot) [weakened:
  // SDCSCREEN_SUPERVISE]", more than one as "[weakened: NAME+2]". Both marks are kept whole by the 80-character cut
  // (the text before them is cut instead): a drill's line must never read as a real fault's.
  const std::string weakened =
      r.weakened_by.empty()
          ? ""
          : fmt::format(" [weakened: {}{}]", r.weakened_by.front().name,
                        r.weakened_by.size() > 1 ? fmt::format("+{}", r.weakened_by.size() - 1) : std::string());
  if (line.size() + weakened.size() <= NPD_LINE_MAX) return npd_line_for(line + weakened);
  constexpr std::string_view DRILL_MARK = " [drill]";
  std::string marks = weakened;
  if (line.find(DRILL_MARK) != std::string::npos) {  // the marker moves to the end, once
    for (size_t at = line.find(DRILL_MARK); at != std::string::npos; at = line.find(DRILL_MARK))
      line.erase(at, DRILL_MARK.size());
    marks = std::string(DRILL_MARK) + marks;
  }
  if (line.size() + marks.size() > NPD_LINE_MAX) line = line.substr(0, NPD_LINE_MAX - marks.size() - 3) + "...";
  return npd_line_for(line + marks);
}

std::string npd_line_for(std::string line) {
  for (char& ch : line)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  if (line.size() > NPD_LINE_MAX) line = line.substr(0, NPD_LINE_MAX - 3) + "...";
  return line;
}

}  // namespace sdc
