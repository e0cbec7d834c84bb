// The outputs of a failing screen that died before it wrote them, written by its supervisor (supervisor.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "src/backends/cpu/cpu_topology.h"
#include "src/cli/options.h"
#include "src/cli/screen.h"
#include "src/cli/supervisor.h"
#include "src/core/activity.h"
#include "src/core/patterns.h"
#include "src/core/scheduler.h"
#include "src/host/host_readers.h"
#include "src/report/report.h"
#include "src/util/run_lock.h"
#include "src/util/say.h"

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

// Every unit the screen was given that the record does not name yet, with no tile on record (what it computed
// died with the screen): idle, so that no output counts it healthy (Prometheus sdcscreen_device_healthy 0, the
// SilentDataCorruptionUnit alert's series). A CPU screen's units are its CPUs; a GPU screen's, the SMs of the GPU
// it failed on (the one GPU the supervisor knows: the progress record names it), ids 0 to its SM count.
void add_units_not_known(const std::vector<int>& cpus, const DeviceInfo* gpu, RunResult& r) {
  const auto named = [&r](bool sm, int id) {
    return std::any_of(r.units.begin(), r.units.end(),
                       [&](const UnitResult& u) { return u.is_sm() == sm && (sm ? u.sm : u.cpu.cpu) == id; });
  };
  if (gpu) {
    for (int sm = 0; sm < gpu->sm_count; ++sm)
      if (!named(true, sm)) {
        UnitResult u;
        u.device = 0;
        u.sm = sm;
        r.units.push_back(u);
      }
  } else {
    const auto all = cpu::allowed_cpus();
    for (int c : cpus)
      if (!named(false, c)) {
        UnitResult u;
        u.cpu.cpu = c;
        for (const auto& l : all)
          if (l.cpu == c) u.cpu = l;
        r.units.push_back(u);
      }
  }
  std::stable_sort(r.units.begin(), r.units.end(), [](const UnitResult& a, const UnitResult& b) {
    return a.is_sm() != b.is_sm() ? !a.is_sm() : a.is_sm() ? a.sm < b.sm : a.cpu.cpu < b.cpu.cpu;
  });
}

// The run as the supervisor saw it: the selection it asked for, the miscompare and the crashes on the shared
// progress record, every other test `skip` (not known: the screen's own record of it died with it).
RunResult supervisor_result(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end) {
  const ScreenRequest& q = o.request->screen;
  RunResult r;
  r.profile = q.profile;
  r.argv = q.argv;
  r.patterns_dir = q.patterns_dir;
  r.seed = end.seed;
  const ReproduceLine repro =
      reproduce_line(q.argv, q.program, q.seed_given || !end.seed_set ? "" : std::to_string(end.seed));
  r.reproduce = repro.command;
  r.reproduce_left_out = repro.left_out;
  r.weakened_by = weakenings_in_environment();
  if (q.accept_patterns)
    r.weakened_by.push_back(
        {"--accept-patterns", "", "the pattern data may not be the build's (the screen that checked it died)"});
  r.start_unix = o.start_unix;
  r.end_unix = unix_now();
  r.injections = q.options.injections;
  r.interrupted_by = end.interrupted;
  r.host = o.telemetry;
  r.host.after = host::read_telemetry(o.host_root);
  r.host.events = host::compare_telemetry(r.host.before, r.host.after);
  std::string said = "this report was written by the screen's supervisor after the screen " + end.why;
  if (end.signal && end.why.find("SIG") == std::string::npos) said += fmt::format(" ({})", signal_name(end.signal));
  said += end.miscompare ? fmt::format(
                               ": it had found a miscompare in {} (the shared progress record) before it "
                               "wrote its own outputs; its other results died with it (every other unit is "
                               "listed idle: no tile of it is on record)",
                               end.miscompare_case)
          : !crashes.empty() ? ": a unit had crashed in an earlier screen of this run (its test below); the last "
                               "screen's results died with it (every other unit is listed idle: no tile of it is on "
                               "record)"
          : !end.in_set_up() ? ": its results died with it (every unit is listed idle: no tile of it is on record)"
                             : ": it ended in its set-up (the pattern data, the GPUs' start-up, the node's lock), "
                               "before it wrote any output: nothing was screened";
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
    patterns = load_patterns(q.patterns_dir);
    selected = select_cases(patterns.battery, o.request->cases, sel).empty();
  } catch (const std::exception&) {  // the screen loaded them; without them, the failing test alone
  }
  const auto failing = [&](TestResult& t) {
    t.verdict = Verdict::fail;
    t.units_failed = {end.miscompare_unit};
    t.failed_tiles = 1;
    t.time_to_fail_s = end.miscompare_time_s >= 0 ? end.miscompare_time_s : r.end_unix - r.start_unix;
    t.notes.emplace_back(
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
  const Profile* profile = selected ? patterns.battery.find_profile(q.profile) : nullptr;
  // The budget the screen had; not known without the patterns: then the time the run lasted.
  r.time_budget_s = q.time_budget_s > 0 ? q.time_budget_s
                    : profile           ? profile->time_budget_s
                                        : std::max(r.end_unix - r.start_unix, 1e-3);
  r.throughput_floor = q.options.throughput_floor;
  add_crashes(crashes, selected ? &patterns.battery : nullptr, r);
  if (end.in_set_up() &&
      crashes.empty()) {  // it had not chosen its backend nor its units: neither is named (not "cpu" by default)
    r.backend_reason = "not known: the screen ended in its set-up, before it chose the GPUs or the CPUs";
  } else {
    add_units_not_known(q.options.cpus, gpu ? &r.devices[0] : nullptr, r);
  }
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

// A screen that ended in its set-up left the previous screen's -o, --html and --prometheus in place, a verdict
// this run does not share: replaced by the supervisor's report (exit 2, or 128+N), under the node's lock as a
// screen writes them. No history line is written: no test had started (run.cpp removes the run's marker).
void replace_previous(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end) {
  const RunRequest& req = *o.request;
  const OutputPlan& out = req.outputs;
  if (out.report.empty() && out.html.empty() && out.prometheus.empty()) return;
  RunLock lock;
  bool busy = false;
  if (!req.screen.force)
    if (const std::string err = lock.acquire(RunLock::path(req.screen.lock_file), &busy); !err.empty()) {
      say_err("sdcscreen: error: -o, --html and --prometheus are left as they were: {}\n", err);
      return;
    }
  unsetenv("SDCSCREEN_DRILL_REPORT_CRASH");  // the screen's drill; the supervisor must not die of it too
  for (const std::string& failed : write_in_progress(out, supervisor_result(o, crashes, end)))
    say_err("sdcscreen: error: {} (it still holds the previous screen's verdict)\n", failed);
}

}  // namespace

int write_supervisor_outputs(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end,
                             int code) {
  if (end.finished) return code;  // it wrote its own
  if (code != EXIT_FAIL) {        // the in-progress files stay where the screen wrote them
    if (end.in_set_up()) replace_previous(o, crashes, end);
    return code;
  }
  const RunResult r = supervisor_result(o, crashes, end);
  // The outputs the screen did not write (a failure to write one is said; the exit code stays 1).
  // The report-writing drill that killed the screen is the screen's (already named in r.weakened_by): the
  // supervisor writes through the same code and must not die of it too.
  unsetenv("SDCSCREEN_DRILL_REPORT_CRASH");
  write_outputs(o.request->outputs, o.history, r, end.outputs);  // its NPD line is the caller's (run.cpp)
  return code;
}

}  // namespace sdc
