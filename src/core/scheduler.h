// The scheduler: the run policy every backend shares. It selects cases, sets up one TestResult per case
// and device, runs rounds of iterations within the time budget, says why a test did not start, settles
// each verdict and calls the progress callbacks. What runs an iteration, on which units, and how its
// output is compared is a backend's executor (src/backends/cpu/cpu_executor.h, src/backends/cuda/); a
// backend (Backend) makes its executors and judges what they leave across them, and run_screen dispatches
// a screen to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/core/patterns.h"
#include "src/core/result.h"

namespace sdc {

// Asks a run to stop: it reads an atomic that the command line's signal handler sets to the signal's
// number, or to DEADLINE when the run's own deadline (run --deadline) came first. A default token never asks.
class StopToken {
 public:
  static constexpr int DEADLINE = -1;
  StopToken() = default;
  explicit StopToken(const std::atomic<int>* flag) : flag_(flag) {}
  bool stop_requested() const { return value() != 0; }
  int signal() const { return std::max(value(), 0); }  // the signal that asked, 0 for none (or the deadline)
  bool deadline_reached() const { return value() == DEADLINE; }
  // Why a part of the run did not run, for a reason: "interrupted" or "the deadline ended the run".
  const char* why_stopped() const { return deadline_reached() ? "the deadline ended the run" : "interrupted"; }

 private:
  int value() const { return flag_ ? flag_->load() : 0; }
  const std::atomic<int>* flag_ = nullptr;
};

struct Selection {
  std::vector<const Case*> cases;
  std::vector<int> iterations;  // per case
};

// What a run selects, as globs matched against case ids and family ids: the cases of `profile` that an
// `enable` glob matches (all of them when neither `enable` nor `enable_any` is given), the cases of any
// profile that an `enable_any` glob matches, less those a `disable` glob matches. A case from outside the
// profile runs its smallest iteration count. An empty profile selects nothing of its own (`record`).
struct CaseChoice {
  std::string profile;
  std::vector<std::string> enable, enable_any, disable;
};

// Returns "" or what is wrong: an unknown profile, a glob that matches no case, an --enable glob that
// matches none of the profile's cases (naming the profiles that hold what it matches, and --enable-any),
// an empty selection.
std::string select_cases(const Battery& battery, const CaseChoice& choice, Selection& out);
// The same without --enable-any.
std::string select_cases(const Battery& battery, const std::string& profile, const std::vector<std::string>& enable,
                         const std::vector<std::string>& disable, Selection& out);

struct RunOptions {
  uint64_t seed = 0;
  double time_budget_s = 0;
  std::vector<int> cpus;
  std::vector<Injection> injections;
  uint64_t max_memory_bytes = 0;  // 0: no limit
  bool fill_budget = false;       // repeat rounds of every case until the time budget ends
  // `record`: recorded cases are judged by their repeats and the node's GPUs only, never by an accepted
  // recording (the run produces the digests a recording keeps).
  bool recording = false;
  // run --digests: each test keeps its last complete iteration's tile digests (TestResult::tile_digests).
  bool keep_digests = false;
  // --retest-on-failure N: after a test fails on a unit, the failing tiles again, N times each way (UnitRetest).
  int retest = 0;
  bool probe = false;  // after the battery, the throughput probe (src/core/probe.h), for slow units
  std::string probe_skipped;  // without the probe: why, for the report (--no-probe)
  double throughput_floor = 0.85;  // the probe's floor (--throughput-floor): a unit below it is measured again
  StopToken stop;      // the run stops at the next tile when it asks
  // Progress: index and count number the cases that apply to the device (a not-applicable case is no step of
  // the screen, and on_test_done is not called for it).
  std::function<void(const TestResult&, size_t index, size_t count)> on_test_done;  // after round 0
  std::function<void(const Case&, size_t index, size_t count, int iteration, int iterations)> on_progress;
};

// A test as it starts: the case's identity on one device ("cpu", "cuda:N"; index into
// RunResult::devices, -1 for the CPU), not run yet.
TestResult new_test(const Case& c, const std::string& device, int device_index);

using Clock = std::chrono::steady_clock;

// What every device's executor sees of the run it takes part in.
struct RunContext {
  const RunOptions& opt;
  RunResult& result;
  Clock::time_point start, deadline;
  double elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start).count(); }
  bool stopping() const { return opt.stop.stop_requested(); }
};

// A device's words for why a test is a skip on it: the watchdog kept it from starting; its iterations did not
// reach every unit before an interruption (or the run's deadline), or before the end of the time budget.
struct SkipReasons {
  const char* watchdog;
  const char* interrupted;
  const char* budget;
};

// A case as its executor prepared it for the scheduler.
struct PreparedCase {
  uint64_t tiles = 0;     // per iteration
  double tile_flops = 0;  // operations per tile
  TileGrid grid;          // where the tiles lie over the output
  // Iterations after which every unit of the device has computed a tile of the case.
  int coverage_iterations = 1;
  // At least this many iterations when a case starts (a GPU's consensus needs two runs).
  int minimum_iterations = 1;
};

// One device's executor: a CPU pool, or one GPU. The scheduler runs one loop per executor, each in a
// thread of its own when there are several; an executor touches only its own tests, units and
// injections.
class Executor {
 public:
  virtual ~Executor() = default;
  // The device as its tests name it, and its index into RunResult::devices (-1 for the CPU).
  virtual std::string device() const = 0;
  virtual int device_index() const = 0;
  // The units it computes on (appended to RunResult::units, starting at unit_base), and the run it
  // joins; called once, before the loop.
  virtual std::vector<UnitResult> units() const = 0;
  virtual void attach(RunContext& ctx, size_t unit_base) = 0;
  // Called on the executor's own thread before its first case (a GPU binds its context there).
  virtual void open() {}
  // Non-empty: the device cannot run anything more (an unusable GPU); a test not started becomes an
  // error with this reason.
  virtual std::string unusable() const { return ""; }
  // A watchdog gave up on a job that may still be running: nothing more can run on this device.
  virtual bool stuck() const = 0;
  // This device's words for a skip of each cause.
  virtual SkipReasons skip_reasons() const = 0;
  // A round after the first repeats passing tests, and failing ones too when this says so.
  virtual bool repeats_failed() const = 0;
  // false when c cannot run on this device at all; r then says why (a skip).
  virtual bool applicable(const Case& c, TestResult& r) const = 0;
  // Prepares c (its problem, buffers, inputs): once per run of a case. Nothing when it cannot run after
  // all (r says why: not applicable, or the watchdog); throws for an error.
  virtual std::optional<PreparedCase> prepare(const Case& c, TestResult& r) = 0;
  // Runs iteration `it` of the prepared case; false when it did not complete (the watchdog, or an
  // interruption): r then says why when it is an error.
  virtual bool run_iteration(const Case& c, int it, TestResult& r) = 0;
  // Compares the completed iteration with its reference and localizes what differs, into r.
  virtual void compare(const Case& c, int it, TestResult& r) = 0;
  // After the iterations of a round in which the prepared case failed: retests each failing unit not yet
  // retested, opt.retest times (UnitRetest), into r.retests. A device that cannot says so in r.notes.
  virtual void retest(const Case&, TestResult& r) {
    const char* note = "not retested: this backend does not retest a failure yet";
    if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.emplace_back(note);
  }
  // Done with the prepared case (kept alive when a job may still use it).
  virtual void release_case() = 0;
  // Whether a later round (a profile that fills its budget) may run c again after its first round: not a case
  // whose runs meet other devices' (a tensor-parallel group of GPUs), whose rounds are not aligned.
  virtual bool repeats(const Case&) const { return true; }
  // Called on the executor's own thread after its last case (a GPU leaves its tensor-parallel groups).
  virtual void close() {}
  // The reason of a test that ended with an exception (and whether the device survives it).
  virtual std::string error_reason(const std::exception& e);
  // The result of such a test: error (it could not run), or crash when the exception says the unit's work
  // destroyed the device's context (a GPU's sticky error: that GPU failed). Called after error_reason.
  virtual Verdict error_verdict(const std::exception&) const { return Verdict::error; }
  // A verdict the device settles itself before the common rules (a GPU's consensus with one run).
  virtual bool settle(TestResult&) const { return false; }
  // After the run, on a stuck device: let go of what a job may still use.
  virtual void abandon() {}
  // The throughput probe (src/core/probe.h): the units it measures on this device ("cpu 3"; a GPU as a
  // whole, "gpu 1"), none when the device has no probe or cannot run one now.
  virtual std::vector<std::string> probe_units() const { return {}; }
  // What one work item of the probe is, for the report.
  virtual std::string probe_work() const { return ""; }
  // Runs the probe's fixed work item `reps` times on every probe unit at once and gives each unit's
  // seconds, in probe_units() order. Returns "" when it did, else why not (the watchdog at `deadline`, a
  // stop, a device error; the device is then stuck if a job may still run).
  virtual std::string probe(uint64_t /*reps*/, Clock::time_point /*deadline*/, std::vector<double>& /*seconds*/) {
    return "this device has no probe";
  }
};

// A backend as the scheduler drives it: it makes the run's executors and settles, after the schedule, what it
// judges across them. It owns its executors, and leaks rather than destroys one a job may still use (a GPU
// whose kernel may still run).
class Backend {
 public:
  virtual ~Backend() = default;
  // The factory: the executors of the run (a CPU pool, or one per GPU), made once before the schedule, with
  // what RunResult says of the devices. Throws std::runtime_error for a set-up failure (a CPU that cannot be
  // pinned): nothing ran.
  virtual std::vector<Executor*> make_executors(const RunOptions& opt, RunResult& result) = 0;
  // The finishing step, after the schedule that started at `start` (the GPUs' node consensus).
  virtual void finish(RunResult& /*result*/, Clock::time_point /*start*/) {}
};

// Runs the selection on every executor at once and fills result: one test per case and executor (test
// index case * executors + executor), the executors' units, interrupted_by, and for stuck devices
// watchdog_fired and workers_abandoned. result.injections is set from opt first. Returns when the run
// started.
Clock::time_point run_schedule(const Selection& sel, const RunOptions& opt, const std::vector<Executor*>& devices,
                               RunResult& result);

// The screen on a backend: its executors (Backend::make_executors), the schedule (run_schedule) and the
// backend's finishing step. Throws what make_executors throws.
void run_screen(Backend& backend, const Selection& sel, const RunOptions& opt, RunResult& result);

}  // namespace sdc
