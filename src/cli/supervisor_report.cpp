// The outputs of a failing screen that died before it wrote them, written by its supervisor (supervisor.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../backends/cpu/cpu_topology.h"
#include "../core/activity.h"
#include "../core/history.h"
#include "../core/patterns.h"
#include "../core/scheduler.h"
#include "../host/host_readers.h"
#include "../report/html.h"
#include "../report/report.h"
#include "../util/atomic_file.h"
#include "../util/say.h"
#include "screen.h"
#include "supervisor.h"

namespace sdc {

void add_crashes(const std::vector<Crash>& crashes, const Battery* battery, RunResult& result) {
  const auto all = cpu::allowed_cpus();
  for (const Crash& c : crashes) {
    const Case* cs = battery ? battery->find_case(c.case_id) : nullptr;
    TestResult t = cs ? new_test(*cs, "cpu", -1) : TestResult{};
    if (!cs) {  // outside the battery's cases: the throughput probe's work, or a worker before any case
      t.id = c.case_id.empty() ? "worker" : c.case_id;
      t.family = t.id.substr(0, t.id.find('.'));
      t.mode = "exact";
    }
    t.verdict = Verdict::crash;
    t.reason = c.describe() + ": its work killed the screen; the other CPUs were screened again without it";
    t.units_failed = {c.cpu};
    result.tests.push_back(t);
    UnitResult u;
    u.cpu.cpu = c.cpu;
    for (const auto& l : all)
      if (l.cpu == c.cpu) u.cpu = l;
    u.crash_signal = c.signal != 0 ? c.signal : -1;  // -1: its work called exit() (a crash all the same)
    result.units.push_back(u);
  }
}

namespace {

// The run as the supervisor saw it: the selection it asked for, the miscompare and the crashes on the shared
// progress record, every other test `skip` (not known: the screen's own record of it died with it).
RunResult supervisor_result(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end) {
  RunResult r;
  r.profile = o.profile;
  r.argv = o.argv;
  r.patterns_dir = o.patterns_dir;
  r.seed = end.seed;
  const ReproduceLine repro =
      reproduce_line(o.argv, o.program, o.seed_given || !end.seed_set ? "" : std::to_string(end.seed));
  r.reproduce = repro.command;
  r.reproduce_left_out = repro.left_out;
  r.weakened_by = weakenings_in_environment();
  if (o.accept_patterns)
    r.weakened_by.push_back(
        {"--accept-patterns", "", "the pattern data may not be the build's (the screen that checked it died)"});
  r.start_unix = o.start_unix;
  r.end_unix = unix_now();
  r.injections = o.injections;
  r.interrupted_by = end.interrupted;
  r.host = o.telemetry;
  r.host.after = host::read_telemetry(o.host_root);
  r.host.events = host::compare_telemetry(r.host.before, r.host.after);
  std::string said = "this report was written by the screen's supervisor after the screen " + end.why;
  if (end.signal && end.why.find("SIG") == std::string::npos) said += fmt::format(" ({})", signal_name(end.signal));
  said += end.miscompare ? fmt::format(
                               ": it had found a miscompare in {} (the shared progress record) before it "
                               "wrote its own outputs; its other results died with it",
                               end.miscompare_case)
                         : ": a unit had crashed in an earlier screen of this run (its test below); the last "
                           "screen's results died with it";
  r.errors.push_back(said);
  const bool gpu = end.miscompare && end.miscompare_device >= 0;
  if (gpu) {
    r.devices.push_back(end.miscompare_gpu);
    r.backend = "cuda";
  }
  PatternSet patterns;
  Selection sel;
  bool selected = false;
  try {
    patterns = load_patterns(o.patterns_dir);
    selected = select_cases(patterns.battery, o.profile, o.enable, o.disable, sel).empty();
  } catch (const std::exception&) {  // the screen loaded them; without them, the failing test alone
  }
  const auto failing = [&](TestResult& t) {
    t.verdict = Verdict::fail;
    t.units_failed = {end.miscompare_unit};
    t.failed_tiles = 1;
    t.time_to_fail_s = end.miscompare_time_s >= 0 ? end.miscompare_time_s : r.end_unix - r.start_unix;
    t.notes.push_back(
        "a miscompare the screen found before it died (the shared progress record): its details died with it");
    UnitResult u;
    if (gpu) {
      u.device = 0;
      u.sm = end.miscompare_unit;
    } else {
      u.cpu.cpu = end.miscompare_unit;
      for (const auto& l : cpu::allowed_cpus())
        if (l.cpu == end.miscompare_unit) u.cpu = l;
    }
    u.tiles = u.failed_tiles = 1;
    if (end.miscompare_unit >= 0) r.units.push_back(u);
    if (end.miscompare_unit < 0) t.units_failed.clear();
  };
  bool found = false;
  for (const Case* c : sel.cases) {
    const bool crashed =
        std::any_of(crashes.begin(), crashes.end(), [c](const Crash& x) { return x.case_id == c->id; });
    if (crashed) continue;  // its crash test (add_crashes) says what is known
    TestResult t = new_test(*c, gpu ? fmt::format("cuda:{}", end.miscompare_device) : "cpu", gpu ? 0 : -1);
    if (end.miscompare && c->id == end.miscompare_case) {
      failing(t);
      found = true;
    } else {
      t.reason = "not known: the screen died before it wrote its report";
    }
    r.tests.push_back(t);
  }
  if (end.miscompare && !found) {  // the patterns could not be read again: the failing test alone
    TestResult t;
    t.id = end.miscompare_case;
    t.family = t.id.substr(0, t.id.find('.'));
    t.mode = "exact";
    t.device = gpu ? fmt::format("cuda:{}", end.miscompare_device) : "cpu";
    t.device_index = gpu ? 0 : -1;
    failing(t);
    r.tests.push_back(t);
  }
  if (!selected) r.errors.push_back("the pattern data could not be read again: only the failing test is listed");
  const Profile* profile = selected ? patterns.battery.find_profile(o.profile) : nullptr;
  // The budget the screen had; not known without the patterns: then the time the run lasted.
  r.time_budget_s = o.time_budget_s > 0 ? o.time_budget_s
                    : profile           ? profile->time_budget_s
                                        : std::max(r.end_unix - r.start_unix, 1e-3);
  r.throughput_floor = o.throughput_floor;
  add_crashes(crashes, selected ? &patterns.battery : nullptr, r);
  // The drills aimed at what failed fired (their failures are drills': history.h).
  for (Injection& inj : r.injections) {
    const bool crash = inj.crash && std::any_of(crashes.begin(), crashes.end(), [&inj](const Crash& x) {
                         return x.case_id == inj.case_id && (inj.unit < 0 || inj.unit == x.cpu);
                       });
    const bool miscompare = !inj.crash && !inj.hang && end.miscompare && inj.case_id == end.miscompare_case &&
                            (gpu ? inj.device == end.miscompare_device
                                 : inj.device < 0 && (inj.unit < 0 || inj.unit == end.miscompare_unit));
    if (crash || miscompare) {
      inj.fired = true;
      inj.fired_unit = gpu ? -1 : (crash ? inj.unit : end.miscompare_unit);
    }
  }
  return r;
}

}  // namespace

int write_supervisor_outputs(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end,
                             int code) {
  if (end.finished || code != EXIT_FAIL) return code;  // a finished screen wrote its own; else the in-progress stay
  const RunResult r = supervisor_result(o, crashes, end);
  const HostInfo host = host_info();
  const std::string report = o.format == "json" ? render_json(r, host) : render_text(r, host);
  const auto written = [&end](int output) { return (end.outputs & output) != 0; };
  // Each output the screen did not write; a failure to write one is said, and the exit code stays 1.
  const auto write = [](const char* flag, const std::string& path, const std::string& text) {
    try {
      write_file_atomic(path, text);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: {}: {}\n", flag, e.what());
    }
  };
  if (!o.prometheus.empty() && !written(activity::OUT_PROMETHEUS)) {
    std::string previous;
    try {
      previous = read_file(o.prometheus);
    } catch (const FileError&) {
    }
    write("--prometheus", o.prometheus, render_prometheus(r, previous));
  }
  std::string report_path;  // for the history line: the screen's report when it wrote it, else the supervisor's
  if (!o.output.empty()) {
    if (!written(activity::OUT_REPORT)) write("-o", o.output, report);
    if (char* abs = realpath(o.output.c_str(), nullptr)) {
      report_path = abs;
      std::free(abs);
    }
  }
  if (!written(activity::OUT_REPORT) && (o.report_to_stdout || (o.print_report && o.output.empty()))) say("{}", report);
  if (!o.html.empty() && !written(activity::OUT_HTML))
    write("--html", o.html, render_html(nlohmann::json::parse(render_json(r, host))));
  if (!o.history_dir.empty() && !written(activity::OUT_HISTORY)) {
    try {
      history::Record rec = history::record_of(r, host.hostname, o.full_profile);
      rec.report = report_path;
      rec.run_id = o.run_id;
      std::string on_disk = report;
      if (written(activity::OUT_REPORT) && !report_path.empty()) try {
          on_disk = read_file(report_path);  // the screen's own report: the digest of what is there
        } catch (const FileError&) {
        }
      rec.report_digest = xxh3_128_hex(on_disk);
      history::append(o.history_dir, rec);
      history::end_pending(o.history_dir, o.run_id);  // the line is on disk
    } catch (const FileError& e) {
      say_err("sdcscreen: {}: {}\n",
              o.history_default ? "warning: this screen is not recorded in the default history" : "error: --history",
              e.what());
    }
  }
  return code;
}

}  // namespace sdc
