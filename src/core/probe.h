// The throughput probe: slowness measured by a phase of its own, never read off the battery's incidental
// timings. After the battery, every unit of the node (each logical CPU; each GPU as a whole) runs the same
// fixed work item at the same time, `reps` times a round. `reps` is calibrated first, so that a round takes
// about PROBE_TARGET_S on the median unit whatever the machine's speed: a fast CPU and a slow one both get
// a measurement far above the clock's resolution (a thread's CPU time counts in nanoseconds), while the
// whole probe stays near a tenth of a second a run. Then PROBE_ROUNDS rounds are
// measured; src/core/result.h (assess_throughput) judges them on the median and spread per unit.
#pragma once

#include <vector>

#include "src/core/scheduler.h"

namespace sdc {

constexpr double PROBE_TARGET_S = 0.010;
constexpr int PROBE_ROUNDS = 7;
// A unit judged slow on the first PROBE_ROUNDS rounds is measured again: PROBE_ROUNDS more rounds after
// this pause, and the judgement takes all of them. A real slow unit is slow in both; a disturbance that
// lasted through the first rounds (another process's burst, a virtual CPU's stolen time that its guest
// counts as the thread's) rarely lasts through the pause and the second set, and two thirds of all the
// rounds must be below the floor.
constexpr double PROBE_CONFIRM_PAUSE_S = 0.25;

// Calibrates and measures the probe on every device at once (each device's rounds on a thread of its
// own when there are several) and fills out; out.not_run says why when it could not (fewer than two
// units, a stop, the watchdog, the deadline). floor: the run's --throughput-floor, for the confirmation.
void run_probe(const std::vector<Executor*>& devices, const StopToken& stop, ProbeRun& out, double floor = 0.85);

}  // namespace sdc
