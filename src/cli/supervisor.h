// Crash supervision of `run`. Real silent data corruption often shows as a crash: a core that corrupts an
// address takes a segmentation fault. Without supervision that killed the whole screen: no report, no unit
// named, and a health check that logged "Unknown" and left the node in service.
//
// So `run` forks the screen as a child and stays as its parent. The child's workers publish what they do
// on a shared page (src/core/activity.h); a fatal signal in a worker records its slot there and kills the
// child. The parent then knows the unit, case, iteration, tile and signal, and screens again, in a new
// child, on the CPUs that did not crash; that child reports the crashed unit's test as `crash` (a failure:
// exit 1) beside every other unit's verdict. Signals to the parent are passed to the child, so an
// interruption still ends with the child's report. SDCSCREEN_SUPERVISE=0 in the environment runs the
// screen in the process itself (for a debugger).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/core/activity.h"
#include "src/core/inject.h"
#include "src/core/patterns.h"
#include "src/core/result.h"
#include "src/host/host_readers.h"
#include "src/host/host_state.h"
#include "src/report/outputs.h"

namespace sdc {

struct Crash {
  int cpu = -1;
  int signal = 0;  // 0: the unit's work called exit() (a library, or the exit drill) and ended the screen
  std::string case_id;  // "" when the worker had not worked on a case yet
  int iteration = -1;   // -1: not in an iteration (a retest, input generation...)
  int64_t tile = -1;
  int stage = 0;  // where its worker was (activity::Stage): in a tile, between tiles, generating inputs...
  // "cpu 7 died of SIGSEGV (signal 11) in gemm_f32.uniform_1024, iteration 3, tile 17"; "... between tiles
  // (after tile 17)"; "... while generating the inputs of gemm_f32.uniform_1024"
  std::string describe() const;
};

// How the last screen ended when it did not finish (supervise's `end`): what the supervisor saw.
struct ScreenEnd {
  bool finished = true;  // its completion record was there: it wrote every output itself
  int signal = 0;        // the signal that ended it (0: it exited, or was not killed by one)
  int interrupted = 0;   // the signal it quit at once on (a repeated one), 0 when none
  std::string why;       // what happened, as the stderr line says
  std::string verdict;   // the supervisor's one-line verdict (the NPD line's text)
  // The shared progress record (activity.h) at its end.
  bool miscompare = false;
  std::string miscompare_case;
  int miscompare_unit = -1, miscompare_device = -1;
  DeviceInfo miscompare_gpu;  // with miscompare_device >= 0: that GPU, as the screen knew it
  double miscompare_time_s = -1;  // its test's time to fail, -1 when not known
  bool seed_set = false;
  uint64_t seed = 0;
  int outputs = 0;  // activity::Output bits: the final outputs the screen wrote before it ended
  // It did not finish, and ended in its set-up: before its in-progress files (no test had started).
  bool in_set_up() const { return !finished && !(outputs & activity::OUT_IN_PROGRESS); }
};

// In the parent: runs screens in children until one finishes (its completion record on the board), and
// returns its exit code; or the code for a screen that did not finish (killed, crashed outside any unit's
// work, or exited without its record): 1 when it had found a miscompare or a unit crashed before, else 2.
// Then `verdict` (when given) is the parent's own one-line verdict, for the NPD line the screen did not
// print. In a child: returns nullopt at once, with `crashes` the units that crashed (or called exit()) in
// earlier children of this run. Without supervision (disabled, or fork failed): nullopt, no crashes.
// deadline_s (run --deadline; 0: none): seconds from now by which the screen must be over; one still running
// then is killed (and the parent does not start another after a crash): 1 when it had found a miscompare or
// a unit crashed before, else 2. The screen itself stops a margin earlier (arm_deadline, screen.h).
// `end` (when given) says how the last screen ended.
std::optional<int> supervise(std::vector<Crash>& crashes, std::string* verdict = nullptr, double deadline_s = 0,
                             ScreenEnd* end = nullptr);

// "SIGKILL (signal 9)".
std::string signal_name(int sig);

// SIGALRM in `seconds` (wall clock, once); 0 or less disarms it. The one timer of the process: the supervisor's
// deadline in the parent, the screen's own (arm_deadline, screen.h) in a child, which does not inherit it.
void set_alarm(double seconds);

// A failing screen that ended without writing its outputs (killed outright by the OOM killer, a crash in its
// report writer, a deadline it overran, a repeated signal): the supervisor writes, from what it saw (the
// shared progress record, the crashes), every output the screen did not write (ScreenEnd::outputs), and never
// one it did: the -o report (JSON or text), the Prometheus file, the HTML page and the history line (then the
// screen's unrecorded marker is removed). Its report says that the supervisor wrote it and why, names the
// signal, lists the failing test (its unit, no element detail), the crashed units, every other selected
// test as `skip` (not known), and every other unit it knows the screen was given as `idle` (no tile on
// record: the CPUs of a CPU screen, the SMs of the GPU a GPU screen failed on). What the run was asked to
// do, from run's options:
struct RunRequest;
struct SupervisorOutputs {
  const RunRequest* request = nullptr;  // the run's checked options (options.h): selection, outputs, drills
  HistoryTarget history;                // where the history line goes, and this run's id
  double start_unix = 0;
  host::HostRoot host_root;
  host::HostTelemetry telemetry;  // the identity and the reading before the run
};
// Returns code; writes only when the screen did not finish (end.finished false) and code is 1 (a miscompare,
// or a unit that crashed): an inconclusive end keeps the in-progress files and the marker. An inconclusive
// screen that ended in its set-up, before its in-progress files (a stalled GPU start-up, a short --deadline),
// left the previous screen's files: those (-o, --html, --prometheus; no history line: no test had started, and
// run.cpp removes the run's marker) are replaced by the supervisor's report of the run, under the node's lock
// (taken by another screen meanwhile: left as they are, and said; a file that cannot be written: said).
int write_supervisor_outputs(const SupervisorOutputs& o, const std::vector<Crash>& crashes, const ScreenEnd& end,
                             int code);
// The units that crashed in earlier screens of this run: a `crash` test each (a failure), and the unit;
// battery (may be null) gives each test its case's identity.
void add_crashes(const std::vector<Crash>& crashes, const Battery* battery, RunResult& result);

}  // namespace sdc
