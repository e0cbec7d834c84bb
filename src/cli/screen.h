// What `run` and `record` share: the stop token and the signal handlers that set it, the choice of
// GPUs, and one set-up of a screen (patterns, selection, GPUs, the node's lock, the RunResult and
// RunOptions it starts from), then running it on the chosen backend.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/core/node_consensus.h"
#include "src/core/patterns.h"
#include "src/core/scheduler.h"
#include "src/util/run_lock.h"

namespace sdc {

// The process's stop token. After install_signal_handlers(), the first SIGINT, SIGTERM or SIGHUP asks
// the run to stop at the next tile and write a partial report; a second one ends the process at once.
StopToken stop_token();
void install_signal_handlers();
// run --deadline: in `seconds` (wall clock; at once when not positive) the stop token asks the run to stop as a
// first signal does, unless a signal asked first; the token then says the deadline stopped it. One deadline
// per process (SIGALRM); a forked child does not inherit it.
void arm_deadline(double seconds);

double unix_now();

// Which backend runs and on which GPUs. --backend auto takes CUDA when a GPU is usable and says why it
// did not otherwise; --devices or --expect-devices ask for GPUs, so without one the run is an error (2),
// never a CPU screen reported in their place.
struct GpuRequest {
  std::string backend = "auto";  // auto, cpu, cuda
  bool devices_given = false;
  std::string devices;
  int expect_devices = 0;
  bool expect_pci = false;  // --expect-devices pci: as many as the NVIDIA GPUs on the PCI bus (none: no GPU asked)
  bool cpuset = false;      // --cpuset named the CPUs to screen: the CPU backend (auto or cpu only)
};
struct GpuChoice {
  bool cuda = false;
  std::string reason;    // the report's backend_reason
  std::string unusable;  // why no GPU can run (cuda with nothing selected)
  std::vector<DeviceInfo> visible, selected;
  std::vector<std::string> errors;  // run-level: expected devices missing
};
// Returns "" or a command-line error (64).
std::string choose_gpus(const GpuRequest& a, GpuChoice& g);

struct ScreenRequest {
  std::string profile;  // the report's; a battery profile gives the default budget and whether rounds fill it
  std::vector<std::string> argv;
  std::string program;  // the name the program was invoked by (argv[0]), for the reproduce line; "": argv[0]
  std::string patterns_dir;
  double time_budget_s = 0;  // 0: the profile's
  uint64_t seed = 0;
  bool seed_given = false;  // not given: drawn at random and added to the reproduce line
  GpuRequest gpu;
  bool force = false;      // run without the node's lock
  std::string lock_file;   // "": the default
  std::string force_hint;  // appended to a busy lock's message: " (--force runs anyway)"
  // Pattern data other than the build's (built_pattern_digests) is refused (78) unless accepted; an accepted
  // one is named in result.weakened_by.
  bool accept_patterns = false;
  // The options the screen starts from (CPUs, injections, limits, what it keeps); set_up_screen adds the
  // seed, the budget and the profile's defaults.
  RunOptions options;
  int retest = -1;  // --retest-on-failure; -1: the profile's default (3 when it fills its budget, else 0)
};

struct Screen {
  PatternSet patterns;
  Selection sel;
  GpuChoice gpu;
  RunLock lock;
  RunResult result;
  RunOptions opt;
};

// A set-up that did not complete: its exit code (64, 78, or 2) and its message; code 0 when it did.
struct SetupFailure {
  int code = 0;
  std::string message;
};

// Loads the patterns (78; 78 too when they are not the build's and not accepted), selects the cases with `select` ("" or a command-line error, 64), chooses the
// GPUs, lets `check` refuse what the choice cannot run, takes the node's lock (2 when busy, 78), and
// fills s.result and s.opt (from req.options) as every screen starts.
SetupFailure set_up_screen(const ScreenRequest& req,
                           const std::function<std::string(const Battery&, Selection&)>& select,
                           const std::function<SetupFailure(Screen&)>& check, Screen& s);

// Installs the signal handlers and runs the screen on the chosen backend (CPUs, or the selected GPUs;
// where none can run, every test is an error that says why), stamping its start and end: run_screen
// (src/core/scheduler.h) with the chosen backend. first_runs: see cuda::make_backend.
void execute_screen(Screen& s, std::vector<FirstRun>* first_runs = nullptr);

}  // namespace sdc
