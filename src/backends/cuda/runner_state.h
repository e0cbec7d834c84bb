// The CUDA runner's per-GPU state, shared by the run loop (cuda_runner.cpp) and the comparison of a
// finished iteration with its reference (cuda_compare.cpp). Internal to the CUDA backend.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../../core/node_consensus.h"
#include "../../core/scheduler.h"
#include "cuda_check.h"
#include "device_memory.h"
#include "device_problem.h"

namespace sdc::cuda {

using Clock = std::chrono::steady_clock;
constexpr uint32_t NO_SM = 0xffffffffu;  // the poison of tile_sm: no kernel recorded this tile

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The watchdog's deadline for device work: generous against a slow GPU (20x at 1 TFLOP/s, or 1 ns per
// generated element), plus 10 s for start-up and clocks ramping.
inline Clock::time_point deadline_after(double work_seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(10.0 + 20.0 * work_seconds));
}

// Waits for the event; false when the deadline passed first. Polls (with short sleeps) so that the
// host thread stays in control: a blocking synchronize could never time out.
inline bool wait_until(cudaEvent_t ev, Clock::time_point deadline) {
  for (int spin = 0;; ++spin) {
    const cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) SDC_CUDA_CHECK(e);
    if (Clock::now() >= deadline) return false;
    if (spin < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// What the GPU executors share: the patterns, and the run they take part in (the scheduler's). Each
// executor writes only its own tests, units and injections.
struct Shared {
  const PatternSet& patterns;
  RunContext* run = nullptr;
};

// One GPU's run.
struct Gpu {
  Gpu(const DeviceInfo& i, size_t s, size_t base, int ids) : info(i), slot(s), unit_base(base), sm_ids(ids) {}
  const DeviceInfo& info;
  size_t slot;         // position among the selected GPUs
  size_t unit_base;    // its first SM in result.units
  int sm_ids;          // %nsmid: SM ids lie below it
  bool stuck = false;  // the watchdog gave up on a kernel: nothing more can run here
  std::string dead;    // non-empty: the context is unusable after this error
  // Consensus, per case id: the digests and SMs of the case's first complete run on this GPU, which
  // later runs, the node's other GPUs and `record` compare with or keep.
  std::map<std::string, FirstRun> first_runs;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> event;
  volatile int* hang_release = nullptr;  // mapped host flag that ends the hang drill's kernel
};

// A case's device state.
struct DeviceCase {
  std::unique_ptr<Problem> problem;
  std::unique_ptr<DeviceProblem> device;
  std::vector<DeviceBuffer> inputs;
  DeviceBuffer out, tile_sm, digests, scratch;
  DeviceBuffer first_out;  // consensus: the first run's output, the expected values of a later miscompare
  std::vector<uint64_t> host_digests;
  std::vector<uint32_t> host_sm;
  std::vector<std::vector<float>> host_inputs;  // generated on the CPU only when a tile fails
  void leak() {
    for (DeviceBuffer& b : inputs) b.release();
    out.release();
    tile_sm.release();
    digests.release();
    scratch.release();
    first_out.release();
  }
};

// The faults of one case at one iteration on this GPU.
struct IterationFaults {
  std::vector<Injection*> input;
  Injection* output = nullptr;
  Injection* hang = nullptr;
  DeviceFault fault;
};

// What a case's runs on one GPU are compared with (DESIGN.md modes).
struct Reference {
  enum Kind { golden, recorded, repeats } kind = golden;
  const std::vector<uint64_t>* digests = nullptr;  // repeats: first->digests, empty before run 1
  FirstRun* first = nullptr;                       // repeats: the case's first run on this GPU
};

// The golden for an exact case; for a recorded case the accepted recording of this GPU's architecture
// and engine, else (and for consensus cases, and always when recording) the case's own first run.
// Says in r which mode judges it and why.
Reference choose_reference(Shared& sh, Gpu& g, const Case& c, const DeviceCase& dc, TestResult& r);

// Compares one finished iteration with the reference digests and localizes what differs: to the SM and
// tile always (when the kernel records SMs), to elements where expected values exist (an exact case's
// CPU recomputation, or a consensus case's first run kept on the device).
void compare_iteration(Shared& sh, Gpu& g, DeviceCase& dc, const IterationFaults& f, int it, const Reference& ref,
                       std::map<uint64_t, std::vector<float>>& expected_cache, Workspace& ws, TestResult& r);

}  // namespace sdc::cuda
