// sdcscreen: screens GPUs and CPU cores for silent data corruption. Command line (CLI11), one parse into
// one options value per subcommand, and the mapping of every failure to its exit code (DESIGN.md).
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "../backends/cpu/cpu_topology.h"
#include "../backends/cuda/cuda_backend.h"
#include "../util/atomic_file.h"
#include "../core/patterns.h"
#include "../report/report.h"
#include "../util/run_lock.h"
#include "../core/runner.h"
#include "commands.h"
#include "options.h"

namespace {

using namespace sdc;

void on_signal(int sig) {
  // The first signal asks the runner to stop at the next tile and write a partial report; a second one
  // ends the process at once.
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, sig)) _exit(128 + sig);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct RunArgs {
  std::string profile = "boot";
  std::vector<std::string> enable, disable, inject;
  std::string time_budget;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string backend = "auto";
  std::string devices;
  bool devices_given = false;
  int expect_devices = 0;
  std::string cpuset;
  bool cpuset_given = false;
  std::string output_format = "text";
  std::string output;
  bool quiet = false;
  bool verbose = false;
  std::string lock_file;
  bool force = false;
  std::string max_memory;
  std::string prometheus;
  bool npd = false;
};

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
  if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) return what;
  if (!(v > 0) || v * scale > 1e18 || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))) return what;
  bytes = static_cast<uint64_t>(v * scale);
  return "";
}

// The CPUs to screen: --cpuset, checked against what this process may use, or all of those. Returns ""
// or what is wrong with --cpuset.
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

// Which backend runs and on which GPUs. --backend auto takes CUDA when a GPU is usable and says why it
// did not otherwise; --devices or --expect-devices ask for GPUs, so without one the run is an error (2),
// never a CPU screen reported in their place. Returns "" or a command-line error (64).
struct GpuChoice {
  bool cuda = false;
  std::string reason;                 // the report's backend_reason
  std::string unusable;               // why no GPU can run (cuda with nothing selected)
  std::vector<DeviceInfo> visible, selected;
  std::vector<std::string> errors;    // run-level: expected devices missing
};

std::string choose_gpus(const RunArgs& a, GpuChoice& g) {
  const bool wants_gpus = a.devices_given || a.expect_devices > 0;
  if (a.backend == "cpu") {
    if (wants_gpus) return "--devices and --expect-devices select GPUs; they do not apply to --backend cpu";
    g.reason = "--backend cpu";
    return "";
  }
  std::vector<int> wanted;
  if (a.devices_given)
    if (const std::string err = cpu::parse_index_list(a.devices, "GPU", 1 << 16, wanted); !err.empty())
      return "--devices: " + err;
  cuda::Availability avail = cuda::probe();
  if (avail.usable) try {
      g.visible = cuda::list_devices();
    } catch (const std::exception& e) {
      avail.usable = false;
      avail.reason = e.what();
    }
  if (a.backend == "auto" && !avail.usable && !wants_gpus) {
    g.reason = "--backend auto: no usable GPU (" + avail.reason + "); screening CPU cores";
    return "";
  }
  g.cuda = true;
  g.reason = a.backend == "auto" ? "--backend auto: a usable GPU was found" : "--backend cuda";
  if (!avail.usable) {
    g.unusable = "no usable GPU: " + avail.reason;
    g.errors.push_back(g.unusable);
    return "";
  }
  std::vector<int> missing;
  if (a.devices_given) {
    for (int w : wanted) {
      if (w < static_cast<int>(g.visible.size())) g.selected.push_back(g.visible[static_cast<size_t>(w)]);
      else missing.push_back(w);
    }
    if (!missing.empty())
      g.errors.push_back(fmt::format("--devices: GPU {} not visible ({} visible)", cpu::format_cpu_list(missing),
                                     g.visible.size()));
  } else {
    g.selected = g.visible;
  }
  if (a.expect_devices > 0 && static_cast<int>(g.selected.size()) < a.expect_devices) {
    std::string seen;
    for (const DeviceInfo& d : g.selected) seen += fmt::format("{}{} {} ({})", seen.empty() ? "" : ", ", d.label(), d.pci_bus_id, d.uuid);
    g.errors.push_back(fmt::format("--expect-devices {}: only {} usable GPU(s) found, {} missing{}{}", a.expect_devices,
                                   g.selected.size(), a.expect_devices - static_cast<int>(g.selected.size()),
                                   seen.empty() ? "" : "; present: ", seen));
  }
  if (g.selected.empty()) g.unusable = "none of the requested GPUs is visible";
  return "";
}

int cmd_run(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir) {
  // Before the run: one line on stderr, and with --npd the plugin's line on stdout too, so that the node
  // condition says why (the exit code stays 64 or 78, which node-problem-detector reads as Unknown).
  auto fail = [&a](int code, const std::string& msg) {
    fmt::print(stderr, "sdcscreen: {}{}\n", code == EXIT_INCONCLUSIVE ? "" : "error: ", msg);
    if (a.npd) fmt::print("{}\n", npd_line_for("Unknown: " + msg));
    return code;
  };
  double budget = 0;
  if (!a.time_budget.empty())
    if (const std::string err = cli::parse_duration(a.time_budget, budget); !err.empty())
      return fail(EXIT_USAGE, fmt::format("--time-budget: {}", err));
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
  for (const auto& [flag, path] : {std::pair{"-o", a.output}, std::pair{"--prometheus", a.prometheus}}) {
    if (path.empty()) continue;
    try {
      check_writable(path);
    } catch (const FileError& e) {
      return fail(EXIT_CONFIG, fmt::format("{}: {}", flag, e.what()));
    }
  }
  PatternSet patterns;
  try {
    patterns = load_patterns(patterns_dir);
  } catch (const PatternError& e) {
    return fail(EXIT_CONFIG, e.what());
  }
  Selection sel;
  if (const std::string err = select_cases(patterns.battery, a.profile, a.enable, a.disable, sel); !err.empty())
    return fail(EXIT_USAGE, err);
  GpuChoice gpu;
  if (const std::string err = choose_gpus(a, gpu); !err.empty()) return fail(EXIT_USAGE, err);
  for (Injection& inj : injections) {
    if (const std::string err = check_injection(inj, patterns.battery, cpus, gpu.cuda ? &gpu.selected : nullptr);
        !err.empty())
      return fail(EXIT_USAGE, fmt::format("--inject '{}': {}", inj.spec, err));
    if (std::none_of(sel.cases.begin(), sel.cases.end(), [&](const Case* c) { return c->id == inj.case_id; }))
      return fail(EXIT_USAGE, fmt::format("--inject '{}': case {} is not selected in this run", inj.spec, inj.case_id));
  }
  if (gpu.cuda)  // the digest pass applies one output fault per case, GPU and iteration
    for (size_t i = 0; i < injections.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const Injection &x = injections[i], &y = injections[j];
        if (!x.input && !y.input && !x.hang && !y.hang && x.case_id == y.case_id && x.device == y.device &&
            x.iteration == y.iteration)
          return fail(EXIT_USAGE, fmt::format("--inject '{}': a GPU takes one output fault per case, device and "
                                              "iteration ('{}' is another)", x.spec, y.spec));
      }

  RunLock lock;
  if (!a.force) {
    bool busy = false;
    if (const std::string err = lock.acquire(a.lock_file.empty() ? RunLock::default_path() : a.lock_file, &busy); !err.empty()) {
      return fail(busy ? EXIT_INCONCLUSIVE : EXIT_CONFIG, err + (busy ? " (--force runs anyway)" : ""));
    }
  }

  RunResult result;
  result.profile = a.profile;
  result.argv = argv;
  result.patterns_dir = patterns.dir;
  result.seed = a.seed_given ? a.seed : (std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32)) >> 1;
  result.time_budget_s = budget > 0 ? budget : patterns.battery.find_profile(a.profile)->time_budget_s;
  std::vector<std::string> repro = argv;
  if (!a.seed_given) {
    repro.push_back("--seed");
    repro.push_back(std::to_string(result.seed));
  }
  result.reproduce = shell_join(repro);
  result.start_unix = unix_now();
  RunOptions opt;
  opt.seed = result.seed;
  opt.time_budget_s = result.time_budget_s;
  opt.cpus = cpus;
  opt.injections = injections;
  opt.max_memory_bytes = max_memory;
  opt.fill_budget = patterns.battery.find_profile(a.profile)->fill;
  // Progress on a terminal only: one line rewritten in place (case, iteration, elapsed, remaining).
  const bool progress = !a.quiet && !a.npd && isatty(STDERR_FILENO);
  const double t_start = unix_now();
  if (progress)
    opt.on_progress = [t_start, budget = result.time_budget_s, shown = -1.0](const Case& c, size_t i, size_t n, int it,
                                                                             int its) mutable {
      const double elapsed = unix_now() - t_start;
      if (it > 0 && elapsed - shown < 0.2) return;  // at most five updates a second
      shown = elapsed;
      fmt::print(stderr, "\r\033[K[{}/{}] {} iteration {}/{}  elapsed {:.0f} s  remaining {:.0f} s", i + 1, n, c.id,
                 it + 1, its, elapsed, std::max(0.0, budget - elapsed));
    };
  if (a.verbose)
    opt.on_test_done = [](const TestResult& t, size_t i, size_t n) {
      fmt::print(stderr, "[{}/{}] {} {} {} ({} iterations, {:.2f} s)\n", i + 1, n, t.id, t.device,
                 verdict_name(t.verdict), t.iterations_done, t.duration_s);
    };
  install_signal_handlers();
  result.backend = gpu.cuda ? "cuda" : "cpu";
  result.backend_reason = gpu.reason;
  for (const std::string& e : gpu.errors) result.errors.push_back(e);
  if (gpu.cuda && gpu.selected.empty()) {
    result.devices = gpu.visible;
    for (const Case* c : sel.cases) {  // nothing can run: every test is an error that says why
      TestResult t;
      t.id = c->id;
      t.family = c->family;
      t.mode = mode_name(c->mode);
      t.distribution = distribution_name(c->distribution);
      t.device = "cuda";
      t.verdict = Verdict::error;
      t.reason = gpu.unusable;
      result.tests.push_back(t);
    }
  } else {
    try {
      if (gpu.cuda) cuda::run_screen(patterns, sel, opt, gpu.selected, result);
      else run_screen(patterns, sel, opt, result);
    } catch (const std::exception& e) {
      result.errors.push_back(e.what());  // set-up failure (pinning): the run is inconclusive
    }
  }
  result.end_unix = unix_now();
  if (!a.quiet && !a.npd && isatty(STDERR_FILENO)) fmt::print(stderr, "\r\033[K");
  if (!a.prometheus.empty()) {
    std::string previous;
    try {
      previous = read_file(a.prometheus);
    } catch (const FileError&) {  // first run: no previous success to carry over
    }
    try {
      write_file_atomic(a.prometheus, render_prometheus(result, previous));
    } catch (const FileError& e) {
      fmt::print(stderr, "sdcscreen: error: --prometheus: {}\n", e.what());
    }
  }
  const HostInfo host = host_info();
  const std::string report = a.output_format == "json" ? render_json(result, host) : render_text(result, host);
  if (!a.output.empty()) {
    try {
      write_file_atomic(a.output, report);
    } catch (const FileError& e) {
      fmt::print(stderr, "sdcscreen: error: -o: {}\n", e.what());
      // A miscompare is never hidden behind a file error.
      const int code = result.exit_code() == EXIT_FAIL ? EXIT_FAIL : EXIT_CONFIG;
      if (result.workers_abandoned) std::_Exit(code);
      return code;
    }
    if (!a.quiet && !a.npd) fmt::print("{}", a.output_format == "json" ? render_text(result, host) : report);
  } else if (!a.quiet && !a.npd) {
    fmt::print("{}", report);
  }
  if (a.npd) fmt::print("{}\n", render_npd_line(result));
  std::fflush(stdout);
  // A stuck worker cannot be joined: leave without unwinding (the report is already written).
  const int code = a.npd ? npd_exit_code(result) : result.exit_code();
  if (result.workers_abandoned) std::_Exit(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  args[0] = "sdcscreen";
  CLI::App app{"sdcscreen: screens GPUs and CPU cores for silent data corruption with bit-exact golden results.\n"
               "Exit codes: 0 pass, 1 miscompare (drain), 2 inconclusive (could not run everything), 64 bad command line,\n"
               "78 bad configuration or pattern data, 128+N interrupted by signal N.",
               "sdcscreen"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("sdcscreen {} ({})", tool_version(), tool_git()));
  std::string patterns_dir = default_patterns_dir();
  const std::string patterns_help = fmt::format("pattern directory (battery, goldens, manifest); default {}", patterns_dir);

  // An option given with an empty value is a mistake, never "use the default".
  const CLI::Validator non_empty([](std::string& v) { return v.empty() ? std::string("empty value") : std::string(); },
                                 "NON-EMPTY");
  RunArgs ra;
  CLI::App* run = app.add_subcommand("run", "run the screen and report pass/fail per test and unit");
  run->add_option("--profile", ra.profile, "boot (under 45 s, at node boot), standard (about 5 min) or burnin (30 min+)")
      ->capture_default_str();
  run->add_option("--enable", ra.enable, "run only tests whose id or family matches ID|GLOB (repeatable)");
  run->add_option("--disable", ra.disable, "do not run tests whose id or family matches ID|GLOB (repeatable)");
  run->add_option("--time-budget", ra.time_budget, "stop starting new work after DURATION (45s, 5m, 1h30m); default: the profile's")
      ->check(non_empty);
  run->add_option("--seed", ra.seed, "schedule seed (which CPU computes which tile); the report gives it, reuse it to replay");
  run->add_option("--backend", ra.backend, "auto (CUDA when a GPU is usable, else CPU), cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  run->add_option("--devices", ra.devices, "GPUs to screen, like 0-3,6 (CUDA ordinals; default: every visible GPU)")
      ->check(non_empty);
  run->add_option("--expect-devices", ra.expect_devices,
                  "the number of GPUs this node must have: fewer usable is an error (exit 2) naming what is missing")
      ->check(CLI::Range(1, 1 << 16));
  run->add_option("--cpuset", ra.cpuset, "logical CPUs to screen, like 0-3,8 (default: every CPU this process may use)");
  run->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  run->add_option("--output-format", ra.output_format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  run->add_option("-o,--output", ra.output, "write the report to FILE atomically (stdout then gets the text report)")
      ->check(non_empty);
  run->add_flag("-q,--quiet", ra.quiet, "print nothing on stdout; rely on the exit code and -o");
  run->add_flag("-v,--verbose", ra.verbose, "print each test's result on stderr as it finishes");
  run->add_option("--prometheus", ra.prometheus, "also write a node_exporter textfile (gauges, written atomically)")
      ->check(non_empty);
  run->add_flag("--npd", ra.npd,
                "node-problem-detector plugin mode: one line of at most 80 characters on stdout, exit 0 OK, 1 NonOK, "
                "2 Unknown");
  run->add_option("--lock-file", ra.lock_file, fmt::format("lock that keeps one screen at a time on this node (default {})",
                                                          RunLock::default_path()))
      ->check(non_empty);
  run->add_flag("--force", ra.force, "run even when another screen holds the lock");
  run->add_option("--max-memory", ra.max_memory, "memory a case may use (512M, 8G); a larger case is an error, not a crash")
      ->check(non_empty);
  run->add_option("--inject", ra.inject,
                  "fault drill: case=ID,element=N,bit=B[,target=input,tensor=T][,unit=CPU|SM][,device=GPU][,iteration=I] "
                  "(repeatable); on a GPU, unit=SM flips the element's offset in every tile that SM computes; the run "
                  "is marked as injected in every output");
  const char* examples =
      "Examples:\n"
      "  node boot (systemd, Slurm HealthCheckProgram):\n"
      "    sdcscreen run --profile boot -q -o /var/lib/sdcscreen/report.json --output-format json\n"
      "  fleet automation (read the exit code and the JSON):\n"
      "    sdcscreen run --profile standard --output-format json -o report.json\n"
      "  every GPU of an 8-GPU node, failing (exit 2) if one is missing:\n"
      "    sdcscreen run --backend cuda --expect-devices 8 --output-format json -o report.json\n"
      "  triage of a suspect GPU with a drill on SM 17:\n"
      "    sdcscreen run --backend cuda --devices 3 --profile standard --inject case=gemm_f32.uniform_1024,element=0,bit=3,unit=17\n"
      "  triage of a suspect core, replaying a failing run's schedule:\n"
      "    sdcscreen run --profile burnin --cpuset 12 --enable 'gemm_f32.*' --seed 1234 -v";
  run->footer(examples);
  app.footer(examples);

  ListArgs la;
  CLI::App* list = app.add_subcommand("list", "list families, test cases, profiles, modes and distributions");
  list->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  list->add_option("--profile", la.profile, "list only the cases of this profile");
  list->add_option("--output-format", la.output_format, "text or json (families, cases with their geometry, ...)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  CLI::App* info = app.add_subcommand("info", "show host, CPUs, devices and versions");
  GoldenArgs ga;
  CLI::App* golden = app.add_subcommand("golden", "recompute every golden digest on this machine's CPUs and rewrite the manifest");
  golden->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  golden->add_option("--cpuset", ga.cpuset, "CPUs to compute on (default: all available)");
  CLI::App* verify = app.add_subcommand("verify-patterns", "check the pattern data: manifest hashes, versions, goldens");
  verify->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  ConsensusArgs ca;
  CLI::App* consensus = app.add_subcommand(
      "consensus", "merge recordings of known-good devices (one device per FILE) into recorded goldens; exit 0 every "
                   "key accepted, 1 a device disagrees (suspect), 2 a key has no majority");
  consensus->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  consensus->add_flag("--write", ca.write, "write the accepted goldens to recordings/ in the pattern directory and update its manifest");
  consensus->add_option("FILE", ca.files, "recording files, one device each (written by 'record')")
      ->required()
      ->check(non_empty);
  consensus->footer("Example: merge the recordings of four known-good GPUs, write the accepted goldens, commit them:\n"
                    "  sdcscreen consensus --write --patterns patterns rec-gpu0.json rec-gpu1.json rec-gpu2.json rec-gpu3.json\n"
                    "  git add patterns/recordings patterns/manifest.json");

  RecordArgs rec;
  CLI::App* record = app.add_subcommand(
      "record", "run the recorded cases on this node's GPUs (each at least twice, judged by consensus) and write one "
                "recording per GPU for 'consensus'; exit 0 all recorded, 1 a GPU disagreed (suspect), 2 could not run");
  record->add_option("-o,--output-dir", rec.output_dir, "directory for the recordings (<hostname>-<gpu uuid>.json)")
      ->required()
      ->check(non_empty);
  record->add_option("--enable", rec.enable, "record only cases whose id or family matches ID|GLOB (default: every recorded case)");
  record->add_option("--disable", rec.disable, "do not record cases whose id or family matches ID|GLOB");
  record->add_option("--devices", rec.devices, "GPUs to record on, like 0-3 (default: every visible GPU)")->check(non_empty);
  record->add_option("--repeats", rec.repeats, "runs per case and GPU that must agree bit for bit (at least 2)")
      ->capture_default_str();
  record->add_option("--time-budget", rec.time_budget, "stop starting new work after DURATION (default 1h)")->check(non_empty);
  record->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  record->add_flag("--force", rec.force, "record even when another screen holds the node's lock");
  record->footer("Example: record on four known-good GPUs of two nodes, then accept what a majority agrees on:\n"
                 "  node-a$ sdcscreen record -o rec/      node-b$ sdcscreen record -o rec/\n"
                 "  sdcscreen consensus --write rec/*.json");

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
    if (!known) return usage_error(fmt::format("unknown subcommand '{}' (run, list, info, golden, verify-patterns, record, consensus)", argv[1]));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad command line";
    fmt::print(stderr, "sdcscreen: error: {} (see 'sdcscreen --help')\n", what);
    return EXIT_USAGE;
  }
  try {
    if (run->parsed()) {
      ra.seed_given = run->count("--seed") > 0;
      ra.cpuset_given = run->count("--cpuset") > 0;
      ra.devices_given = run->count("--devices") > 0;
      return cmd_run(ra, args, patterns_dir);
    }
    if (list->parsed()) return cmd_list(la, patterns_dir);
    if (info->parsed()) return cmd_info();
    if (golden->parsed()) {
      std::vector<int> cpus;
      if (const std::string err = choose_cpus(golden->count("--cpuset") > 0, ga.cpuset, cpus); !err.empty())
        return usage_error(err);
      return cmd_golden(patterns_dir, cpus);
    }
    if (verify->parsed()) return cmd_verify(patterns_dir);
    if (consensus->parsed()) return cmd_consensus(ca, patterns_dir);
    if (record->parsed()) return cmd_record(rec, args, patterns_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "sdcscreen: error: {}\n", e.what());
    return EXIT_INCONCLUSIVE;
  }
  return EXIT_USAGE;
}
