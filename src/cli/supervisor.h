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

namespace sdc {

struct Crash {
  int cpu = -1;
  int signal = 0;  // 0: the unit's work called exit() (a library, or the exit drill) and ended the screen
  std::string case_id;
  int iteration = -1;
  int64_t tile = -1;
  std::string describe() const;  // "cpu 7 died of SIGSEGV (signal 11) in gemm_f32.uniform_1024, iteration 3, tile 17"
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
std::optional<int> supervise(std::vector<Crash>& crashes, std::string* verdict = nullptr, double deadline_s = 0);

// SIGALRM in `seconds` (wall clock, once); 0 or less disarms it. The one timer of the process: the supervisor's
// deadline in the parent, the screen's own (arm_deadline, screen.h) in a child, which does not inherit it.
void set_alarm(double seconds);

}  // namespace sdc
