// The CPU executor's case state and its one pass over a case's tiles (src/backends/cpu/cpu_executor.cpp),
// shared with the retest of a failing unit (cpu_retest.h). Internal to the CPU backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/core/family.h"
#include "src/core/inject.h"
#include "src/core/scheduler.h"
#include "src/backends/cpu/worker_pool.h"

namespace sdc::cpu {

// One case's buffers: inputs generated once, the output of the current iteration, and per tile the
// digest and the worker that computed it (the unit a miscompare is attributed to).
struct CaseState {
  std::unique_ptr<Problem> problem;
  std::vector<std::vector<float>> inputs;
  std::vector<float> out;
  std::vector<uint64_t> digest;
  std::vector<uint32_t> worker_of;
  std::vector<char> computed_by;          // per worker, in the current iteration: computed a tile with a faulty input
  std::vector<std::string> worker_error;  // per worker: why it could not compute a tile
  std::vector<double> busy_s;             // per worker, in the current iteration: time spent on its tiles
  std::vector<uint64_t> done;             // per worker, in the current iteration: tiles computed
};

// The injections of one case at one iteration, resolved to workers and tiles.
struct ActiveFault {
  Injection* inj;
  int worker;  // -1: any worker
  uint64_t tile = 0;
  uint32_t offset = 0;
  std::vector<float> corrupted;  // input injections: the tensor as the faulty unit reads it
};

// How a job under the watch ended. A stop makes the workers return at their next tile: `stopped` when they
// all did so within STOP_GRACE (the pool is usable and nothing is leaked); `stuck` when the deadline
// passed, or a worker did not return in the grace, so the job may still be running.
enum class JobEnd { finished, stopped, stuck };

// When a job must end: its deadline (the watchdog) and the stop signal.
struct Watch {
  Clock::time_point deadline;
  StopToken stop;
  bool ok(WorkerPool& pool, const std::function<void(size_t)>& job) const {
    return pool.run_until(job, deadline, [stop = stop] { return stop.stop_requested(); });
  }
};

// Runs job on every worker under the watch. A job that may still be running on a stuck worker is leaked
// rather than destroyed; the caller leaks what the job refers to as well.
JobEnd run_watched(WorkerPool& pool, const Watch& watch, std::function<void(size_t)> fn);

// The watchdog's deadline for one pass over a case (cpu_passes.cpp).
Clock::time_point pass_deadline(double work_seconds);

uint64_t string_hash(const std::string& s);
double seconds_since(Clock::time_point t);

// Allocates the buffers of a prepared case and generates its inputs, every worker a slice of every tensor.
// case_id names the work on the activity board.
JobEnd generate_inputs(WorkerPool& pool, const StopToken& stop, CaseState& s, const char* case_id = "");

// Computes every tile of the case once, under the watchdog: tile t on worker (t + rotation) mod W unless a
// fault pins it to its unit; applies the active faults and digests each tile into s.digest. A retest
// (only_tiles) gives the listed tiles to only_worker and computes no other tile. case_id and iteration name
// the work on the activity board (src/core/activity.h).
JobEnd compute_iteration(CaseState& s, WorkerPool& pool, const StopToken& stop, std::vector<Workspace>& ws,
                         uint64_t rotation, std::vector<ActiveFault>& faults, const char* case_id = "",
                         int iteration = -1, const std::vector<uint64_t>* only_tiles = nullptr,
                         uint32_t only_worker = 0);

// Host memory a case needs: its inputs and its output.
uint64_t case_bytes(const Problem& p);

}  // namespace sdc::cpu
