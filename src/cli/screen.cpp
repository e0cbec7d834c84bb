#include "src/cli/screen.h"

#include <fmt/format.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include "src/cli/commands.h"
#include "src/cli/gpu_watch.h"
#include "src/cli/supervisor.h"
#include "src/backends/cpu/cpu_executor.h"
#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/pci_gpus.h"
#include "src/backends/emu/emu_device.h"
#include "src/core/activity.h"
#include "src/report/report.h"
#include "src/util/int_list.h"

namespace sdc {
namespace {

std::atomic<int> stop_signal{0};  // the signal that asked to stop, 0 while none did
std::atomic<int64_t> stop_at_ns{0};  // when it came (CLOCK_MONOTONIC)

// Signals after the first within this grace period are the same request again, not a second one: a signal
// to the process group (systemd's KillMode, timeout, Ctrl-C) reaches the screen twice, from the group and
// passed on by its supervisor, and must not cut short the report of a screen that found a miscompare.
constexpr int64_t GRACE_NS = 2'000'000'000;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void on_signal(int sig) {
  const int64_t now = monotonic_ns();
  int64_t first = 0;  // the time is claimed first: two signals at once on two threads see one of them first
  if (stop_at_ns.compare_exchange_strong(first, now)) {
    stop_signal.store(sig);
    return;  // an orderly stop: the run settles what ran and writes its report
  }
  // A second request after the grace period: quit at once, as asked (the supervisor still reports a
  // miscompare already found: activity.h).
  if (now - first >= GRACE_NS) _exit(128 + sig);
}

// The run's deadline (arm_deadline): the same orderly stop as a first signal, unless a signal came first.
void on_deadline(int) {
  int64_t none = 0;
  if (stop_at_ns.compare_exchange_strong(none, monotonic_ns())) stop_signal.store(StopToken::DEADLINE);
}

}  // namespace

StopToken stop_token() { return StopToken(&stop_signal); }

void arm_deadline(double seconds) {
  struct sigaction sa {};
  sa.sa_handler = on_deadline;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, nullptr);
  set_alarm(std::max(seconds, 1e-3));  // already past (a screen started again after a crash, late): at once
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string choose_gpus(const GpuRequest& req, GpuChoice& g) {
  // --expect-devices pci: one configuration for every node of a fleet; a GPU node must screen all the GPUs its
  // PCI bus has (one the driver lost is missing, exit 2), a CPU node screens its CPUs.
  GpuRequest a = req;
  std::string expect_what = fmt::format("--expect-devices {}", a.expect_devices);
  if (a.expect_pci) {
    std::string bus_error;
    const size_t on_bus = cuda::pci_gpus(bus_error).size();
    // A bus that cannot be read gives no count to expect: the screen runs on what the backend finds and is
    // inconclusive (2), never a pass of a node whose GPUs nobody looked for.
    if (!bus_error.empty()) g.errors.push_back("--expect-devices pci: " + bus_error);
    if ((a.backend == "cpu" || a.cpuset) && on_bus > 0)
      return fmt::format("--expect-devices pci: {} NVIDIA GPU(s) on the PCI bus, which {} does not screen", on_bus,
                         a.backend == "cpu" ? "--backend cpu" : "--cpuset (CPUs)");
    a.expect_devices = static_cast<int>(on_bus);
    expect_what = fmt::format("--expect-devices pci ({} NVIDIA GPU(s) on the PCI bus)", on_bus);
  }
  const bool wants_gpus = a.devices_given || a.expect_devices > 0;
  if (a.backend == "cpu" || a.cpuset) {
    const char* why = a.backend == "cpu" ? "--backend cpu" : "--cpuset, which names the CPUs to screen";
    if (wants_gpus) return fmt::format("--devices and --expect-devices select GPUs; they do not apply to {}", why);
    g.reason = why;
    return "";
  }
  std::vector<int> wanted;
  if (a.devices_given)
    if (const std::string err = parse_index_list(a.devices, "GPU", 1 << 16, wanted); !err.empty())
      return "--devices: " + err;
  cuda::Availability avail;
  const bool emulated = a.backend.rfind("emulated:", 0) == 0;
  if (emulated) {  // test-only: GPUs emulated on the CPU running the CUDA kernels (src/backends/emu)
    std::vector<emu::Spec> specs;
    if (const std::string err = emu::parse_specs(a.backend.substr(9), specs); !err.empty())
      return "--backend emulated: " + err;
    g.visible = emu::create_devices(specs);
    avail.usable = true;
    avail.device_count = static_cast<int>(g.visible.size());
  } else {
    avail = cuda::probe();
  }
  if (avail.usable && !emulated) try {
      g.visible = cuda::list_devices();
    } catch (const std::exception& e) {
      avail.usable = false;
      avail.reason = e.what();
    }
  // A GPU node whose driver failed is not a CPU node: NVIDIA GPUs on the PCI bus that CUDA cannot use make
  // --backend auto a GPU screen that cannot run (exit 2), never a pass on the CPUs alone.
  std::vector<std::string> on_bus;
  if (a.backend == "auto" && !avail.usable && !wants_gpus) {
    std::string bus_error;
    on_bus = cuda::pci_gpus(bus_error);
    // Unknown is not "no GPUs": the CPUs are screened, and the run is inconclusive (2) saying why.
    if (!bus_error.empty() && !a.expect_pci) g.errors.push_back("--backend auto: " + bus_error);
  }
  if (!on_bus.empty()) {
    std::string list;
    for (const std::string& b : on_bus) list += (list.empty() ? "" : ", ") + b;
    g.cuda = true;
    g.reason = "--backend auto: NVIDIA GPUs are on the PCI bus";
    g.unusable =
        fmt::format("{} NVIDIA GPU(s) on the PCI bus ({}) but none usable: {}", on_bus.size(), list, avail.reason);
    g.errors.push_back(g.unusable);
    return "";
  }
  if (a.backend == "auto" && !avail.usable && !wants_gpus) {
    g.reason = "--backend auto: no usable GPU (" + avail.reason + "); screening CPU cores";
    return "";
  }
  g.cuda = true;
  g.reason = a.backend == "auto" ? (avail.usable ? "--backend auto: a usable GPU was found"
                                                 : "--backend auto: GPUs were asked for (--devices, --expect-devices)")
             : emulated          ? "--backend emulated (tests only): the CUDA kernels on GPUs emulated on the CPU"
                                 : "--backend cuda";
  if (!avail.usable) {
    g.unusable = a.expect_pci ? fmt::format("{}, but no usable GPU: {}", expect_what, avail.reason)
                              : "no usable GPU: " + avail.reason;
    g.errors.push_back(g.unusable);
    return "";
  }
  std::vector<int> missing;
  if (a.devices_given) {
    for (int w : wanted) {
      if (w < static_cast<int>(g.visible.size()))
        g.selected.push_back(g.visible[static_cast<size_t>(w)]);
      else
        missing.push_back(w);
    }
    if (!missing.empty())
      g.errors.push_back(
          fmt::format("--devices: GPU {} not visible ({} visible)", format_cpu_list(missing), g.visible.size()));
  } else {
    g.selected = g.visible;
  }
  if (a.expect_devices > 0 && static_cast<int>(g.selected.size()) < a.expect_devices) {
    std::string seen;
    for (const DeviceInfo& d : g.selected)
      seen += fmt::format("{}{} {} ({})", seen.empty() ? "" : ", ", d.label(), d.pci_bus_id, d.uuid);
    g.errors.push_back(fmt::format("{}: only {} usable GPU(s) found, {} missing{}{}", expect_what, g.selected.size(),
                                   a.expect_devices - static_cast<int>(g.selected.size()),
                                   seen.empty() ? "" : "; present: ", seen));
  }
  if (g.selected.empty()) g.unusable = "none of the requested GPUs is visible";
  return "";
}

SetupFailure set_up_screen(const ScreenRequest& req,
                           const std::function<std::string(const Battery&, Selection&)>& select,
                           const std::function<SetupFailure(Screen&)>& check, Screen& s) {
  try {
    s.patterns = load_patterns(req.patterns_dir);
  } catch (const PatternError& e) {
    return {EXIT_CONFIG, e.what()};
  }
  s.result.weakened_by = weakenings_in_environment();
  if (const std::string mismatch = pattern_digest_mismatch(s.patterns, built_pattern_digests()); !mismatch.empty()) {
    if (!req.accept_patterns) return {EXIT_CONFIG, mismatch};
    const PatternDigests built = built_pattern_digests();
    s.result.weakened_by.push_back(
        {"--accept-patterns", "",
         fmt::format("the pattern data is not the build's: battery.json {} (built with {}), manifest.json {} (built "
                     "with {}); its goldens and cases are whatever that data says",
                     s.patterns.battery_xxh3_128, built.battery_xxh3_128, s.patterns.manifest_xxh3_128,
                     built.manifest_xxh3_128)});
  }
  s.opt = req.options;
  if (const std::string err = select(s.patterns.battery, s.sel); !err.empty()) return {EXIT_USAGE, err};
  if (const std::string err = choose_gpus(req.gpu, s.gpu); !err.empty()) return {EXIT_USAGE, err};
  if (check)
    if (SetupFailure f = check(s); f.code != 0) return f;
  if (!req.force) {
    bool busy = false;
    if (const std::string err = s.lock.acquire(RunLock::path(req.lock_file), &busy, activity::owner_pid());
        !err.empty())
      return {busy ? EXIT_INCONCLUSIVE : EXIT_CONFIG, err + (busy ? req.force_hint : "")};
  }
  const Profile* profile = s.patterns.battery.find_profile(req.profile);
  RunResult& result = s.result;
  result.profile = req.profile;
  result.argv = req.argv;
  result.program = !req.program.empty() ? req.program : req.argv.empty() ? "sdcscreen" : req.argv.front();
  result.patterns_dir = s.patterns.dir;
  result.seed =
      req.seed_given ? req.seed : (std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32)) >> 1;
  result.time_budget_s = req.time_budget_s > 0 || !profile ? req.time_budget_s : profile->time_budget_s;
  ReproduceLine repro = reproduce_line(req.argv, req.program, req.seed_given ? "" : std::to_string(result.seed));
  result.reproduce = repro.command;
  result.reproduce_left_out = repro.left_out;
  s.opt.seed = result.seed;
  s.opt.time_budget_s = result.time_budget_s;
  s.opt.fill_budget = profile && profile->fill;
  s.opt.retest = req.retest >= 0 ? req.retest : profile && profile->fill ? 3 : 0;
  result.retest = s.opt.retest;
  return {};
}

void execute_screen(Screen& s, std::vector<FirstRun>* first_runs) {
  install_signal_handlers();
  s.opt.stop = stop_token();
  RunResult& result = s.result;
  result.backend = s.gpu.cuda ? "cuda" : "cpu";
  result.backend_reason = s.gpu.reason;
  for (const std::string& e : s.gpu.errors) result.errors.push_back(e);
  result.start_unix = unix_now();
  if (s.gpu.cuda && s.gpu.selected.empty()) {
    result.devices = s.gpu.visible;
    for (const Case* c : s.sel.cases) {  // nothing can run: every test is an error that says why
      TestResult t = new_test(*c, "cuda", -1);
      t.verdict = Verdict::error;
      t.reason = s.gpu.unusable;
      result.tests.push_back(t);
    }
  } else {
    try {
      if (s.gpu.cuda) {
        // The GPUs' NVML telemetry: before, sampled during (its thread stops on every way out of this scope,
        // an exception included) and after the screen, once the backend has let go of the GPUs.
        GpuWatch watch(result, s.gpu.selected);
        run_screen(*cuda::make_backend(s.patterns, s.gpu.selected, first_runs), s.sel, s.opt, result);
        watch.finish();
      } else {
        run_screen(*cpu::make_backend(s.patterns), s.sel, s.opt, result);
      }
    } catch (const std::exception& e) {
      result.errors.push_back(e.what());  // set-up failure (pinning): the run is inconclusive
    }
  }
  result.flag_masked_injections();
  result.flag_nothing_applicable();
  result.end_unix = unix_now();
}

}  // namespace sdc
