#include "src/core/probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace sdc {
namespace {

// One round: every device runs reps items on its units at once. Returns "" or why a device did not finish.
std::string probe_round(const std::vector<Executor*>& devices, uint64_t reps, Clock::time_point deadline,
                        std::vector<double>& seconds) {
  std::vector<std::vector<double>> per(devices.size());
  std::vector<std::string> why(devices.size());
  const auto one = [&](size_t d) { why[d] = devices[d]->probe(reps, deadline, per[d]); };
  if (devices.size() == 1) {
    one(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t d = 0; d < devices.size(); ++d) threads.emplace_back(one, d);
    for (std::thread& t : threads) t.join();
  }
  seconds.clear();
  for (size_t d = 0; d < devices.size(); ++d) {
    if (!why[d].empty()) return why[d];
    if (per[d].size() != devices[d]->probe_units().size())
      return fmt::format("{} measured {} units of {}", devices[d]->device(), per[d].size(),
                         devices[d]->probe_units().size());
    seconds.insert(seconds.end(), per[d].begin(), per[d].end());
  }
  return "";
}

}  // namespace

void run_probe(const std::vector<Executor*>& all, const StopToken& stop, ProbeRun& out, double floor) {
  out = ProbeRun{};
  out.target_s = PROBE_TARGET_S;
  std::vector<Executor*> devices;
  for (Executor* ex : all) {
    if (ex->stuck() || !ex->unusable().empty()) continue;  // nothing more can run there
    const std::vector<std::string> units = ex->probe_units();
    if (units.empty()) continue;
    devices.push_back(ex);
    out.units.insert(out.units.end(), units.begin(), units.end());
    if (out.work.empty()) out.work = ex->probe_work();
  }
  if (out.units.size() < 2) {
    out.not_run = out.units.empty() ? "no unit of this backend can run the probe" : "one unit: no peer to compare with";
    out.units.clear();
    return;
  }
  // A round's watchdog: generous against a unit far slower than the median (a slow unit is what the probe
  // is for), plus 10 s.
  const auto deadline_for = [](double expected_s) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(10.0 + 100.0 * std::max(expected_s, PROBE_TARGET_S)));
  };
  std::vector<double> seconds;
  uint64_t reps = 1;
  double expected = PROBE_TARGET_S;
  // Calibration: grow reps until the median unit's round takes the target time (at most 40 tries: 100^40
  // items is far more than any machine needs).
  for (int attempt = 0;; ++attempt) {
    if (stop.stop_requested()) {
      out.not_run = stop.why_stopped();
      return;
    }
    if (const std::string why = probe_round(devices, reps, deadline_for(expected), seconds); !why.empty()) {
      out.not_run = stop.stop_requested() ? stop.why_stopped() : why;
      return;
    }
    const double m = median(seconds);
    if (m >= PROBE_TARGET_S) break;
    if (attempt >= 40) {
      out.not_run = fmt::format("calibration did not reach {:.0f} ms a round", PROBE_TARGET_S * 1e3);
      return;
    }
    // Aim a fifth past the target, at most 100 times more a step (a first item timed at 0 s; a step that
    // overshoots wastes at most that step).
    const double grow = std::min(m > 0 ? 1.2 * PROBE_TARGET_S / m : 100.0, 100.0);
    reps = std::max(reps + 1, static_cast<uint64_t>(std::ceil(static_cast<double>(reps) * grow)));
    expected = m * grow;
  }
  out.reps = reps;
  for (int round = 0; round < 2 * PROBE_ROUNDS; ++round) {
    if (round == PROBE_ROUNDS) {  // the confirmation, only when a unit looks slow so far
      RunResult so_far;
      so_far.probe = out;
      so_far.throughput_floor = floor;
      assess_throughput(so_far);
      if (!so_far.any_slow()) break;
      for (int i = 0; i < 25 && !stop.stop_requested(); ++i)
        std::this_thread::sleep_for(std::chrono::duration<double>(PROBE_CONFIRM_PAUSE_S / 25));
    }
    const std::string why = stop.stop_requested() ? "" : probe_round(devices, reps, deadline_for(expected), seconds);
    if (stop.stop_requested() || !why.empty()) {
      out.not_run = stop.stop_requested() ? stop.why_stopped() : why;
      out.seconds.clear();
      out.reps = 0;
      return;
    }
    out.seconds.push_back(seconds);
    expected = median(seconds);
  }
}

}  // namespace sdc
