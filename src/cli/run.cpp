// `sdcscreen run`: the request from the options step (options.h), the node's history, the crash supervisor,
// the screen set up (screen.h) and run, and its outputs written (src/report/outputs.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "src/core/activity.h"
#include "src/core/history.h"
#include "src/host/cpu_sampler.h"
#include "src/host/host_readers.h"
#include "src/report/progress.h"
#include "src/report/outputs.h"
#include "src/report/report.h"
#include "src/util/say.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/screen.h"
#include "src/cli/supervisor.h"

namespace sdc {
namespace {

// The telemetry after the run, and what changed. Drill (SDCSCREEN_DRILL_TELEMETRY_AFTER=DIR): the after
// reading comes from the host tree under DIR (DIR/proc, DIR/sys, DIR/dev) instead, so that a test can show
// an uncorrected error failing the run; compiled in, off unless asked, and said in every output.
void read_host_after(const host::HostRoot& root, host::HostTelemetry& t) {
  host::HostRoot after = root;
  if (const char* d = std::getenv("SDCSCREEN_DRILL_TELEMETRY_AFTER"); d && *d) {
    after = host::HostRoot::under(d);
    t.drill += fmt::format("{}the after-run telemetry was read from {} (SDCSCREEN_DRILL_TELEMETRY_AFTER)",
                           t.drill.empty() ? "" : "; ", d);
  }
  t.after = host::read_telemetry(after);
  t.events = host::compare_telemetry(t.before, t.after);
}

// The node's history (--history DIR, or by default history::default_dir(), the system's when root) and this
// screen's run id (the screens a crash supervisor forks share it). With a history, the marker that says the
// screen's line is not written yet is created and locked here (src/core/history.h); *pending_fd keeps it open
// to the end, holding the marker's lock while this screen (or its children) run. A default that cannot be
// used is said and skipped: the screen was not asked for it; one asked for is an error (78).
SetupFailure open_history(const RunRequest& r, HistoryTarget& h, int* pending_fd) {
  h.dir = r.history == "none" ? "" : r.history;
  h.is_default = r.history.empty();
  h.full_battery = r.full_battery;
  if (h.is_default) h.dir = history::default_dir();
  const auto skip_default = [&](const std::string& err) -> SetupFailure {
    if (!h.is_default) return {EXIT_CONFIG, err};
    if (!r.outputs.npd) say_err("sdcscreen: warning: this screen is not recorded in the default history: {}\n", err);
    h.dir.clear();
    return {};
  };
  if (!h.dir.empty())
    if (const std::string err = history::prepare_dir(h.dir); !err.empty())
      if (const SetupFailure f = skip_default(err); f.code != 0) return f;
  h.run_id = history::new_run_id();
  *pending_fd = -1;
  if (!h.dir.empty()) {
    std::string err;
    *pending_fd = history::begin_pending(h.dir, h.run_id, err);
    if (*pending_fd < 0)
      if (const SetupFailure f = skip_default(err); f.code != 0) return f;
  }
  return {};
}

// The CPUs that crashed in earlier screens of this run are left out, and the crash drills that fired there
// are marked as fired.
void leave_out_crashed(const std::vector<Crash>& crashes, RunOptions& opt) {
  for (const Crash& c : crashes) {
    std::erase(opt.cpus, c.cpu);
    for (Injection& inj : opt.injections)
      if (inj.crash && inj.case_id == c.case_id && (inj.unit < 0 || inj.unit == c.cpu)) {
        inj.fired = true;
        inj.fired_unit = c.cpu;
      }
  }
}

// What the report, the HTML page and the Prometheus file say while the screen runs (outputs.h): exit 2, an
// error naming the process.
RunResult in_progress(const Screen& s) {
  RunResult pending = s.result;
  pending.start_unix = pending.end_unix = unix_now();
  pending.injections = s.opt.injections;
  const long pid = activity::owner_pid();
  pending.errors.push_back(
      fmt::format("screen in progress (pid {}, started at unix time {:.0f}): if this stays, that screen never finished",
                  pid, pending.start_unix));
  return pending;
}

// Progress on a terminal only: one line rewritten in place (case, iteration, elapsed, remaining); with -v each
// test's result as it finishes.
void show_progress(const RunRequest& r, bool progress, Screen& screen) {
  RunOptions& opt = screen.opt;
  const double t_start = unix_now();
  if (progress)
    opt.on_progress = [t_start, budget = screen.result.time_budget_s, shown = -1.0](
                          const Case& c, size_t i, size_t n, int it, int its) mutable {
      const double elapsed = unix_now() - t_start;
      if (it > 0 && elapsed - shown < 0.2) return;  // at most five updates a second
      shown = elapsed;
      const std::string line = fmt::format("[{}/{}] {} iteration {}/{}  elapsed {:.0f} s  remaining {:.0f} s", i + 1, n,
                                           c.id, it + 1, its, elapsed, std::max(0.0, budget - elapsed));
      // Cut to the terminal's width: a wrapped line would leave its first part behind at each update.
      say_err("\r\033[K{}", fit_progress_line(line, terminal_columns(STDERR_FILENO)));
    };
  if (r.verbose)
    opt.on_test_done = [progress](const TestResult& t, size_t i, size_t n) {
      // Over the progress line, when there is one: it is drawn again by the next update.
      say_err("{}[{}/{}] {} {} {} ({} iterations, {:.2f} s)\n", progress ? "\r\033[K" : "", i + 1, n, t.id, t.device,
              verdict_name(t.verdict), t.iterations_done, t.duration_s);
    };
}

// Runs the screen. CPUs: their hwmon temperatures sampled every second during the screen (cpu_sampler.h), the
// sampler stopped on every way out of this scope; GPUs are judged by the NVML sampler (gpu_watch.h). Drill
// (SDCSCREEN_DRILL_TELEMETRY_DURING=DIR): the samples come from the host tree under DIR instead, so that a test
// can show a CPU too hot while a case ran; compiled in, off unless asked, and said in every output.
void run_sampled(const RunRequest& r, const host::HostRoot& host_root, Screen& screen) {
  RunResult& result = screen.result;
  result.max_temperature_c = r.max_temperature;
  std::optional<host::CpuTemperatureSampler> cpu_temperatures;
  if (!screen.gpu.cuda) {
    host::HostRoot during = host_root;
    if (const char* d = std::getenv("SDCSCREEN_DRILL_TELEMETRY_DURING"); d && *d) {
      during = host::HostRoot::under(d);
      result.host.drill = fmt::format("the CPU temperatures sampled during the run were read from {} "
                                      "(SDCSCREEN_DRILL_TELEMETRY_DURING)",
                                      d);
    }
    cpu_temperatures.emplace(during, result.host);
  }
  execute_screen(screen);
  if (cpu_temperatures) cpu_temperatures->stop();
}

// After the screen: the deadline said, the crashed units, the host's telemetry after the run and what it
// judges, and the units' throughput.
void settle(const RunArgs& a, const RunRequest& r, const std::vector<Crash>& crashes, const host::HostRoot& host_root,
            Screen& screen) {
  RunResult& result = screen.result;
  if (result.deadline_reached) {
    result.errors.insert(result.errors.begin(),
                         fmt::format("the deadline (--deadline {}) stopped the run before it finished: what did not "
                                     "run is not judged",
                                     a.deadline));
  }
  add_crashes(crashes, &screen.patterns.battery, screen.result);
  read_host_after(host_root, result.host);
  host::judge_cpu_tests(result, r.max_temperature);
  result.throughput_floor = screen.opt.throughput_floor;
  result.fail_slow = r.fail_slow;
  assess_throughput(result);
}

}  // namespace

int cmd_run(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir) {
  // Before the run: one line on stderr, and with --npd the plugin's line on stdout too, so that the node
  // condition says why (the exit code stays 64 or 78, which node-problem-detector reads as Unknown).
  // In a supervised screen, also its completion record (activity.h): the supervisor takes no exit code
  // from a screen that did not publish one.
  auto fail = [&a](const SetupFailure& f) {
    say_err("sdcscreen: {}{}\n", f.code == EXIT_INCONCLUSIVE ? "" : "error: ", f.message);
    if (a.npd) say("{}\n", npd_line_for("Unknown: " + f.message));
    std::fflush(stdout);
    activity::publish_completion(f.code);
    return f.code;
  };
  // A signal from here on asks for an orderly stop (screen.h), also while the patterns load and before the
  // supervisor forks the screen: the screen it forks inherits the request, marks every test interrupted and
  // writes its outputs (without this, a SIGTERM in the first second ended the process with no report at all).
  install_signal_handlers();
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed_s = [started] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  RunRequest req;
  if (const SetupFailure f = run_request(a, argv, patterns_dir, req); f.code != 0) return fail(f);
  // Drill (SDCSCREEN_DRILL_SETUP_DELAY=SECONDS): the set-up takes that much longer, so that a test can signal
  // the run while it is in its set-up; a signal ends the wait. Compiled in, off unless set.
  if (const char* d = std::getenv("SDCSCREEN_DRILL_SETUP_DELAY"); d && *d) {
    const double wait_s = std::strtod(d, nullptr);
    const StopToken stop = stop_token();
    while (!stop.stop_requested() && elapsed_s() < wait_s) ::usleep(20000);
  }
  HistoryTarget history;
  int pending_fd = -1;  // kept open to the end: it holds the marker's lock while this screen (or its children) run
  if (const SetupFailure f = open_history(req, history, &pending_fd); f.code != 0) return fail(f);
  struct Pending {
    std::string dir, run_id;
    bool before_screen = true;  // removed on the way out: no test ran, nothing can be missing
    ~Pending() {
      if (before_screen && !dir.empty()) history::end_pending(dir, run_id);
    }
  } pending{history.dir, history.run_id};
  // The host's identity and telemetry before the run, read once here: every screen the supervisor forks
  // below inherits them, so a rescreen after a crash compares with the state before the first screen.
  const host::HostRoot host_root = host::HostRoot::from_env();
  host::HostTelemetry telemetry;
  telemetry.identity = host::read_identity(host_root);
  telemetry.identity_read = true;
  telemetry.before = host::read_telemetry(host_root);
  // Crash supervision (supervisor.h): the parent waits here for the screens it forks; a child goes on, without
  // the CPUs that crashed in earlier children, whose crash drills have then fired. The supervisor's own verdict
  // when the screen did not finish: the NPD line the screen never printed.
  std::vector<Crash> crashes;
  std::string unfinished;
  const double deadline = req.deadline_s;
  ScreenEnd screen_end;
  const double run_start = unix_now();
  if (const std::optional<int> code =
          supervise(crashes, &unfinished, deadline > 0 ? std::max(deadline - elapsed_s(), 1e-3) : 0, &screen_end)) {
    // The supervisor: its screens removed the marker, or left it for good reason; a screen that ended in its set-up
    // (before its in-progress files: no test had started) did neither, and nothing of it can be missing.
    pending.before_screen = screen_end.in_set_up() && *code != EXIT_FAIL;
    // A failing screen that died before its outputs: the supervisor writes those it did not (supervisor.h).
    write_supervisor_outputs({&req, history, run_start, host_root, telemetry}, crashes, screen_end, *code);
    if (a.npd && !unfinished.empty()) say("{}\n", npd_line_for(unfinished));
    return a.npd && !unfinished.empty() ? (*code == EXIT_FAIL ? 1 : 2) : *code;
  }
  // The screen stops a margin before the deadline (a third of it, at most 3 s) to write every output in time;
  // its supervisor kills it at the deadline itself.
  if (deadline > 0) arm_deadline(deadline - std::min(3.0, deadline / 3) - elapsed_s());
  leave_out_crashed(crashes, req.screen.options);
  const auto select = [&req](const Battery& battery, Selection& sel) { return select_cases(battery, req.cases, sel); };
  Screen screen;
  if (const SetupFailure f = set_up_screen(req.screen, select, check_injections, screen); f.code != 0) return fail(f);
  RunResult& result = screen.result;
  activity::publish_seed(result.seed);
  result.host = telemetry;
  const bool progress = !a.quiet && !a.npd && isatty(STDERR_FILENO);
  show_progress(req, progress, screen);
  write_in_progress(req.outputs, in_progress(screen));
  activity::publish_output(activity::OUT_IN_PROGRESS);
  pending.before_screen = false;
  if (screen.opt.cpus.empty() && !crashes.empty()) {  // every selected CPU crashed: nothing is left to screen
    result.backend = "cpu";
    result.start_unix = result.end_unix = unix_now();
    result.injections = screen.opt.injections;
  } else {
    run_sampled(req, host_root, screen);
  }
  settle(a, req, crashes, host_root, screen);
  if (progress) say_err("\r\033[K");
  // Drill for the reports' own failure: the screen dies in its reporting code, outside any unit's work. The
  // supervisor then says so: exit 2 with the in-progress files in place (never the previous screen's verdict),
  // or, after a miscompare or a unit's crash, exit 1 and it writes the outputs the screen did not
  // (supervisor.h). Each final output is published as written (activity.h). Compiled in, off unless asked.
  // SDCSCREEN_DRILL_REPORT_CRASH=html dies later, after the Prometheus file and -o (outputs.cpp).
  if (const char* d = std::getenv("SDCSCREEN_DRILL_REPORT_CRASH"); d && std::strcmp(d, "1") == 0) std::raise(SIGSEGV);
  const bool write_failed = write_outputs(req.outputs, history, result);
  if (a.npd) say("{}\n", render_npd_line(result));
  std::fflush(stdout);
  const int code = exit_code_after_outputs(result, a.npd, write_failed);
  activity::publish_completion(code);  // last: every output is written
  // A stuck worker cannot be joined: leave without unwinding (the report is already written).
  if (result.workers_abandoned) std::_Exit(code);
  return code;
}

}  // namespace sdc
