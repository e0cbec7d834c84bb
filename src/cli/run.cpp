// `sdcscreen run`: parses the run's option values, sets up the screen (src/cli/screen.h), runs it, and
// writes the report, the Prometheus textfile and the node-problem-detector line.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "../backends/cpu/cpu_topology.h"
#include "../core/activity.h"
#include "../core/history.h"
#include "../host/cpu_sampler.h"
#include "../host/host_readers.h"
#include "../report/html.h"
#include "../report/progress.h"
#include "../report/report.h"
#include "../util/atomic_file.h"
#include "../util/say.h"
#include "commands.h"
#include "options.h"
#include "screen.h"
#include "supervisor.h"

namespace sdc {
namespace {

// "512M", "8G", "1T", "1048576" (bytes): a positive size.
std::string parse_size(const std::string& text, uint64_t& bytes) {
  const std::string what = fmt::format("'{}' is not a size like 512M or 8G", text);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return what;
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return what;
  if (!(v > 0) || v * scale > 1e18 || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))) return what;
  bytes = static_cast<uint64_t>(v * scale);
  return "";
}

// Whether path (a file to write) would land inside directory dir, symbolic links resolved.
bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path d = std::filesystem::weakly_canonical(dir, ec);
  if (ec || d.empty()) return false;
  const std::filesystem::path f = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return false;
  const auto rel = f.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

// The HTML page of a result: rendered from its JSON report, so that the page and the JSON never disagree.
std::string html_of(const RunResult& r, const HostInfo& host) {
  return render_html(nlohmann::json::parse(render_json(r, host)));
}

// Before the run, the report file, the HTML page and the Prometheus file say that a screen is in progress (exit 2, an
// error naming the process): a screen killed outright (SIGKILL, power) then leaves that, not the previous screen's
// verdict, for a reader who cannot tell that the previous one is stale. Replaced at the end.
void mark_in_progress(const RunArgs& a, const std::string& output, const Screen& s) {
  if (output.empty() && a.prometheus.empty() && a.html.empty()) return;
  RunResult pending = s.result;
  pending.start_unix = pending.end_unix = unix_now();
  pending.injections = s.opt.injections;
  const long pid = activity::owner_pid();
  pending.errors.push_back(
      fmt::format("screen in progress (pid {}, started at unix time {:.0f}): if this stays, that screen never finished",
                  pid, pending.start_unix));
  try {  // a failure here shows again, and is reported, when the final files are written
    if (!output.empty())
      write_file_atomic(
          output, a.output_format == "json" ? render_json(pending, host_info()) : render_text(pending, host_info()));
    if (!a.html.empty()) write_file_atomic(a.html, html_of(pending, host_info()));
    if (!a.prometheus.empty()) {
      std::string previous;
      try {
        previous = read_file(a.prometheus);
      } catch (const FileError&) {
      }
      write_file_atomic(a.prometheus, render_prometheus(pending, previous));
    }
  } catch (const FileError&) {
  }
}

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

}  // namespace

// The CPUs to screen: --cpuset, checked against what this process may use, or all of those.
std::string choose_cpus(bool given, const std::string& cpuset, std::vector<int>& cpus) {
  std::vector<int> allowed;
  for (const auto& c : cpu::allowed_cpus()) allowed.push_back(c.cpu);
  if (!given) {
    cpus = allowed;
    return "";
  }
  if (const std::string err = cpu::parse_cpu_list(cpuset, cpus); !err.empty()) return fmt::format("--cpuset: {}", err);
  for (int c : cpus)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      return fmt::format("--cpuset: CPU {} does not exist or is not available to this process (available: {})", c,
                         cpu::format_cpu_list(allowed));
  return "";
}

int cmd_run(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir) {
  // Before the run: one line on stderr, and with --npd the plugin's line on stdout too, so that the node
  // condition says why (the exit code stays 64 or 78, which node-problem-detector reads as Unknown).
  // In a supervised screen, also its completion record (activity.h): the supervisor takes no exit code
  // from a screen that did not publish one.
  auto fail = [&a](int code, const std::string& msg) {
    say_err("sdcscreen: {}{}\n", code == EXIT_INCONCLUSIVE ? "" : "error: ", msg);
    if (a.npd) say("{}\n", npd_line_for("Unknown: " + msg));
    std::fflush(stdout);
    activity::publish_completion(code);
    return code;
  };
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed_s = [started] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  double budget = 0;
  if (!a.time_budget.empty())
    if (const std::string err = cli::parse_duration(a.time_budget, budget); !err.empty())
      return fail(EXIT_USAGE, fmt::format("--time-budget: {}", err));
  double deadline = 0;
  if (!a.deadline.empty())
    if (const std::string err = cli::parse_duration(a.deadline, deadline); !err.empty())
      return fail(EXIT_USAGE, fmt::format("--deadline: {}", err));
  std::vector<Injection> injections(a.inject.size());
  for (size_t i = 0; i < a.inject.size(); ++i)
    if (const std::string err = parse_injection(a.inject[i], injections[i]); !err.empty())
      return fail(EXIT_USAGE, fmt::format("--inject '{}': {}", a.inject[i], err));
  uint64_t max_memory = 0;
  if (!a.max_memory.empty())
    if (const std::string err = parse_size(a.max_memory, max_memory); !err.empty())
      return fail(EXIT_USAGE, fmt::format("--max-memory: {}", err));
  std::vector<int> cpus;
  if (const std::string err = choose_cpus(a.cpuset_given, a.cpuset, cpus); !err.empty()) return fail(EXIT_USAGE, err);
  // -o - is stdout: the report goes there in the chosen format, -q or not.
  const bool report_to_stdout = a.output == "-";
  const std::string output = report_to_stdout ? "" : a.output;
  if (report_to_stdout && a.npd) return fail(EXIT_USAGE, "-o - and --npd both write stdout: choose one");
  if (patterns_dir.empty()) return fail(EXIT_CONFIG, a.patterns_not_found);
  for (const auto& [flag, path] :
       {std::pair{"-o", output}, std::pair{"--prometheus", a.prometheus}, std::pair{"--html", a.html}}) {
    if (path.empty()) continue;
    if (inside(path, patterns_dir))
      return fail(EXIT_USAGE, fmt::format("{}: {} is inside the pattern directory {}: writing there would replace "
                                          "pattern data",
                                          flag, path, patterns_dir));
    try {
      check_writable(path);
    } catch (const FileError& e) {
      return fail(EXIT_CONFIG, fmt::format("{}: {}", flag, e.what()));
    }
  }
  // The node's history: --history DIR, or by default (history::default_dir) the system's when root. A
  // default that cannot be used is said and skipped: the screen was not asked for it.
  std::string history_dir = a.history == "none" ? "" : a.history;
  const bool history_default = a.history.empty();
  if (history_default) history_dir = history::default_dir();
  if (!history_dir.empty())
    if (const std::string err = history::prepare_dir(history_dir); !err.empty()) {
      if (!history_default) return fail(EXIT_CONFIG, err);
      if (!a.npd) say_err("sdcscreen: warning: this screen is not recorded in the default history: {}\n", err);
      history_dir.clear();
    }
  // This screen's run id (the screens a crash supervisor forks share it) and, with a history, the marker that
  // says its line is not written yet: created and locked here, removed once the line is on disk, or when the
  // screen ends before its first test (src/core/history.h). A screen that dies after that leaves it behind.
  const std::string run_id = history::new_run_id();
  int pending_fd = -1;  // kept open to the end: it holds the marker's lock while this screen (or its children) run
  if (!history_dir.empty()) {
    std::string err;
    pending_fd = history::begin_pending(history_dir, run_id, err);
    if (pending_fd < 0) {
      if (!history_default) return fail(EXIT_CONFIG, err);
      if (!a.npd) say_err("sdcscreen: warning: this screen is not recorded in the default history: {}\n", err);
      history_dir.clear();
    }
  }
  struct Pending {
    std::string dir, run_id;
    bool before_screen = true;  // removed on the way out: no test ran, nothing can be missing
    ~Pending() {
      if (before_screen && !dir.empty()) history::end_pending(dir, run_id);
    }
  } pending{history_dir, run_id};
  // Crash supervision (supervisor.h): the parent waits here for the screens it forks; a child goes on, without
  // the CPUs that crashed in earlier children, whose crash drills have then fired.
  // The host's identity and telemetry before the run, read once here: every screen the supervisor forks
  // below inherits them, so a rescreen after a crash compares with the state before the first screen.
  const host::HostRoot host_root = host::HostRoot::from_env();
  host::HostTelemetry telemetry;
  telemetry.identity = host::read_identity(host_root);
  telemetry.identity_read = true;
  telemetry.before = host::read_telemetry(host_root);
  std::vector<Crash> crashes;
  // The supervisor's own verdict when the screen did not finish: the NPD line the screen never printed.
  std::string unfinished;
  ScreenEnd screen_end;
  const double run_start = unix_now();
  if (const std::optional<int> code =
          supervise(crashes, &unfinished, deadline > 0 ? std::max(deadline - elapsed_s(), 1e-3) : 0, &screen_end)) {
    pending.before_screen = false;  // the supervisor: its screens removed the marker, or left it for good reason
    // A failing screen that died before its outputs: the supervisor writes those it did not (supervisor.h).
    SupervisorOutputs so;
    so.output = output;
    so.report_to_stdout = report_to_stdout;
    so.print_report = !a.quiet && !a.npd;
    so.format = a.output_format;
    so.html = a.html;
    so.prometheus = a.prometheus;
    so.history_dir = history_dir;
    so.history_default = history_default;
    so.run_id = run_id;
    so.full_profile = a.enable.empty() && a.disable.empty();
    so.patterns_dir = patterns_dir;
    so.profile = a.profile;
    so.program = a.program;
    so.enable = a.enable;
    so.disable = a.disable;
    so.argv = argv;
    so.seed_given = a.seed_given;
    so.accept_patterns = a.accept_patterns;
    so.time_budget_s = budget;
    so.throughput_floor = a.throughput_floor;
    so.injections = injections;
    so.start_unix = run_start;
    so.host_root = host_root;
    so.telemetry = telemetry;
    write_supervisor_outputs(so, crashes, screen_end, *code);
    if (a.npd && !unfinished.empty()) say("{}\n", npd_line_for(unfinished));
    return a.npd && !unfinished.empty() ? (*code == EXIT_FAIL ? 1 : 2) : *code;
  }
  // The screen stops a margin before the deadline (a third of it, at most 3 s) to write every output in time;
  // its supervisor kills it at the deadline itself.
  if (deadline > 0) arm_deadline(deadline - std::min(3.0, deadline / 3) - elapsed_s());
  for (const Crash& c : crashes) {
    std::erase(cpus, c.cpu);
    for (Injection& inj : injections)
      if (inj.crash && inj.case_id == c.case_id && (inj.unit < 0 || inj.unit == c.cpu)) {
        inj.fired = true;
        inj.fired_unit = c.cpu;
      }
  }
  ScreenRequest req;
  req.profile = a.profile;
  req.argv = argv;
  req.program = a.program;
  req.patterns_dir = patterns_dir;
  req.time_budget_s = budget;
  req.seed = a.seed;
  req.seed_given = a.seed_given;
  req.gpu = {a.backend, a.devices_given, a.devices,
             a.expect_devices.empty() || a.expect_devices == "pci" ? 0 : std::stoi(a.expect_devices),
             a.expect_devices == "pci"};
  req.force = a.force;
  req.lock_file = a.lock_file;
  req.force_hint = " (--force runs anyway)";
  req.accept_patterns = a.accept_patterns;
  const auto select = [&a](const Battery& battery, Selection& sel) {
    return select_cases(battery, a.profile, a.enable, a.disable, sel);
  };
  const auto check = [&injections, &cpus](Screen& s) -> SetupFailure {
    const GpuChoice& gpu = s.gpu;
    for (Injection& inj : injections) {
      if (inj.crash && inj.fired) continue;  // taken by an earlier screen of this run, on a CPU left out now
      if (const std::string err = check_injection(inj, s.patterns.battery, cpus, gpu.cuda ? &gpu.selected : nullptr);
          !err.empty())
        return {EXIT_USAGE, fmt::format("--inject '{}': {}", inj.spec, err)};
      if (std::none_of(s.sel.cases.begin(), s.sel.cases.end(), [&](const Case* c) { return c->id == inj.case_id; }))
        return {EXIT_USAGE, fmt::format("--inject '{}': case {} is not selected in this run", inj.spec, inj.case_id)};
    }
    if (gpu.cuda)  // the digest pass applies one output fault per case, GPU and iteration
      for (size_t i = 0; i < injections.size(); ++i)
        for (size_t j = 0; j < i; ++j) {
          const Injection &x = injections[i], &y = injections[j];
          if (!x.input && !y.input && !x.hang && !y.hang && x.case_id == y.case_id && x.device == y.device &&
              x.iteration == y.iteration)
            return {EXIT_USAGE, fmt::format("--inject '{}': a GPU takes one output fault per case, device and "
                                            "iteration ('{}' is another)",
                                            x.spec, y.spec)};
        }
    return {};
  };
  Screen screen;
  if (const SetupFailure f = set_up_screen(req, select, check, screen); f.code != 0) return fail(f.code, f.message);
  RunResult& result = screen.result;
  activity::publish_seed(result.seed);
  result.host = telemetry;
  RunOptions& opt = screen.opt;
  opt.cpus = cpus;
  opt.injections = injections;
  opt.max_memory_bytes = max_memory;
  opt.keep_digests = a.digests;
  opt.probe = true;  // slow units: measured by the probe after the battery (src/core/probe.h)
  opt.throughput_floor = a.throughput_floor;
  const Profile* profile = screen.patterns.battery.find_profile(a.profile);
  opt.retest = a.retest >= 0 ? a.retest : profile && profile->fill ? 3 : 0;
  result.retest = opt.retest;
  // Progress on a terminal only: one line rewritten in place (case, iteration, elapsed, remaining).
  const bool progress = !a.quiet && !a.npd && isatty(STDERR_FILENO);
  const double t_start = unix_now();
  if (progress)
    opt.on_progress = [t_start, budget = result.time_budget_s, shown = -1.0](const Case& c, size_t i, size_t n, int it,
                                                                             int its) mutable {
      const double elapsed = unix_now() - t_start;
      if (it > 0 && elapsed - shown < 0.2) return;  // at most five updates a second
      shown = elapsed;
      const std::string line = fmt::format("[{}/{}] {} iteration {}/{}  elapsed {:.0f} s  remaining {:.0f} s", i + 1, n,
                                           c.id, it + 1, its, elapsed, std::max(0.0, budget - elapsed));
      // Cut to the terminal's width: a wrapped line would leave its first part behind at each update.
      say_err("\r\033[K{}", fit_progress_line(line, terminal_columns(STDERR_FILENO)));
    };
  if (a.verbose)
    opt.on_test_done = [progress](const TestResult& t, size_t i, size_t n) {
      // Over the progress line, when there is one: it is drawn again by the next update.
      say_err("{}[{}/{}] {} {} {} ({} iterations, {:.2f} s)\n", progress ? "\r\033[K" : "", i + 1, n, t.id, t.device,
              verdict_name(t.verdict), t.iterations_done, t.duration_s);
    };
  mark_in_progress(a, output, screen);
  pending.before_screen = false;
  if (cpus.empty() && !crashes.empty()) {  // every selected CPU crashed: nothing is left to screen
    result.backend = "cpu";
    result.start_unix = result.end_unix = unix_now();
    result.injections = opt.injections;
  } else {
    result.max_temperature_c = a.max_temperature;  // GPUs: judged by the NVML sampler (gpu_watch.h)
    // CPUs: their hwmon temperatures sampled every second during the screen (cpu_sampler.h), the sampler
    // stopped on every way out of this scope. Drill (SDCSCREEN_DRILL_TELEMETRY_DURING=DIR): the samples come
    // from the host tree under DIR instead, so that a test can show a CPU too hot while a case ran; compiled
    // in, off unless asked, and said in every output.
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
  if (result.deadline_reached) {
    result.errors.insert(result.errors.begin(),
                         fmt::format("the deadline (--deadline {}) stopped the run before it finished: what did not "
                                     "run is not judged",
                                     a.deadline));
  }
  add_crashes(crashes, &screen.patterns.battery, screen.result);
  read_host_after(host_root, result.host);
  host::judge_cpu_tests(result, a.max_temperature);
  result.throughput_floor = a.throughput_floor;
  result.fail_slow = a.fail_slow;
  assess_throughput(result);
  if (!a.quiet && !a.npd && isatty(STDERR_FILENO)) say_err("\r\033[K");
  // A file that cannot be written after the run loses nothing: the report falls back to stdout (stderr with
  // --npd, whose stdout is one line), the NPD line is still printed, and the exit code says the write
  // failed (78) unless a miscompare makes it 1: a miscompare is never hidden behind a file error.
  // Drill for the reports' own failure: the screen dies in its reporting code, outside any unit's work. The
  // supervisor then says so: exit 2 with the in-progress files in place (never the previous screen's verdict),
  // or, after a miscompare or a unit's crash, exit 1 and it writes the outputs the screen did not
  // (supervisor.h). Each final output is published as written (activity.h). Compiled in, off unless asked.
  // SDCSCREEN_DRILL_REPORT_CRASH=html dies later, after the Prometheus file and -o, before --html and the history.
  const char* report_crash = std::getenv("SDCSCREEN_DRILL_REPORT_CRASH");
  if (report_crash && std::strcmp(report_crash, "1") == 0) std::raise(SIGSEGV);
  bool write_failed = false;
  if (!a.prometheus.empty()) {
    std::string previous;
    try {
      previous = read_file(a.prometheus);
    } catch (const FileError&) {  // first run: no previous success to carry over
    }
    try {
      write_file_atomic(a.prometheus, render_prometheus(result, previous));
      activity::publish_output(activity::OUT_PROMETHEUS);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: --prometheus: {}\n", e.what());
      write_failed = true;
    }
  }
  const HostInfo host = host_info();
  const std::string report = a.output_format == "json" ? render_json(result, host) : render_text(result, host);
  std::string report_written;  // absolute, for the history (bundle collects it)
  if (!output.empty()) {
    try {
      write_file_atomic(output, report);
      if (char* abs = realpath(output.c_str(), nullptr)) {
        report_written = abs;
        std::free(abs);
      }
      activity::publish_output(activity::OUT_REPORT);
      if (!a.quiet && !a.npd) say("{}", a.output_format == "json" ? render_text(result, host) : report);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: -o: {}; the report follows on {}\n", e.what(), a.npd ? "stderr" : "stdout");
      write_text(a.npd ? stderr : stdout, report);
      write_failed = true;
    }
  } else if (report_to_stdout || (!a.quiet && !a.npd)) {
    say("{}", report);
    activity::publish_output(activity::OUT_REPORT);
  }
  if (report_crash && std::strcmp(report_crash, "html") == 0) std::raise(SIGSEGV);
  if (!a.html.empty()) {  // after the report: a failure here leaves it, and the exit code says so (78)
    try {
      write_file_atomic(a.html, html_of(result, host));
      activity::publish_output(activity::OUT_HTML);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: --html: {}\n", e.what());
      write_failed = true;
    }
  }
  if (!history_dir.empty()) {  // the node's record of this screen (src/core/history.h), after the report
    try {
      history::Record rec = history::record_of(result, host.hostname, a.enable.empty() && a.disable.empty());
      rec.report = report_written;
      rec.run_id = run_id;
      rec.report_digest = xxh3_128_hex(report);
      history::append(history_dir, rec);
      activity::publish_output(activity::OUT_HISTORY);
      history::end_pending(history_dir, run_id);  // the line is on disk
    } catch (const FileError& e) {
      if (history_default) {  // not asked for: said, and the exit code stays the screen's
        say_err("sdcscreen: warning: this screen is not recorded in the default history: {}\n", e.what());
      } else {
        say_err("sdcscreen: error: --history: {}\n", e.what());
        write_failed = true;
      }
    }
  }
  if (a.npd) say("{}\n", render_npd_line(result));
  std::fflush(stdout);
  int code = a.npd ? npd_exit_code(result) : result.exit_code();
  if (write_failed && result.exit_code() != EXIT_FAIL) code = a.npd ? 2 : EXIT_CONFIG;
  activity::publish_completion(code);  // last: every output is written
  // A stuck worker cannot be joined: leave without unwinding (the report is already written).
  if (result.workers_abandoned) std::_Exit(code);
  return code;
}

}  // namespace sdc
