// The GPU executor's per-GPU state, shared by its iterations (gpu_executor.cpp), its retest (gpu_retest.cpp)
// and the comparison of a finished iteration with its reference (cuda_compare.cpp). Internal to the CUDA
// backend.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/core/node_consensus.h"
#include "src/core/scheduler.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/cuda/tp_exchange.h"
#include "src/backends/cuda/watchdog.h"

namespace sdc::cuda {

constexpr uint32_t NO_SM = 0xffffffffu;  // the poison of tile_sm: no kernel recorded this tile

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The watchdog's deadline for device work: generous against a slow GPU (20x at 1 TFLOP/s, or 1 ns per
// generated element), plus 10 s for start-up and clocks ramping. `slowness` stretches the work part for a
// device slower by design (DeviceRuntime::slowness: the emulated device).
inline Clock::time_point deadline_after(double work_seconds, double slowness = 1.0) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(10.0 + 20.0 * work_seconds * slowness));
}

// Waits for the event; false when the deadline passed first (watchdog.h: polling, never a blocking
// synchronize). Throws the device's error.
inline bool wait_until(DeviceRuntime& rt, cudaEvent_t ev, Clock::time_point deadline) {
  return poll_until([&] { return rt.done(ev); }, deadline);
}

// What the GPU executors share: the patterns, and the run they take part in (the scheduler's). Each
// executor writes only its own tests, units and injections.
struct Shared {
  const PatternSet& patterns;
  RunContext* run = nullptr;
  std::vector<std::string> gpu_names;  // per GPU slot, as messages name it ("GPU 1")
  TpGroups tp;                         // the tensor-parallel groups of the run's tp cases
};

// One GPU's run.
struct Gpu {
  Gpu(const DeviceInfo& i, size_t s, size_t base, int ids) : info(i), slot(s), unit_base(base), sm_ids(ids) {}
  const DeviceInfo& info;
  std::unique_ptr<DeviceRuntime> rt;  // the device (kept for the process when a kernel may still run on it)
  size_t slot;                        // position among the selected GPUs
  size_t unit_base;                   // its first SM in result.units
  int sm_ids;                         // %nsmid: SM ids lie below it
  bool stuck = false;                 // the watchdog gave up on a kernel: nothing more can run here
  std::string dead;                   // non-empty: the context is unusable after this error
  // Consensus, per case id: the digests and SMs of the case's first complete run on this GPU, which
  // later runs, the node's other GPUs and `record` compare with or keep.
  std::map<std::string, FirstRun> first_runs;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> event;
  std::unique_ptr<Event> pace[2];  // a long computation's pacing (DeviceProblem::set_pacer)
  PinnedBuffer hang_flag;          // mapped host flag that ends the hang drill's kernel
  volatile int* hang_release = nullptr;
};

// A case's device state.
struct DeviceCase {
  std::unique_ptr<Problem> problem;
  std::unique_ptr<DeviceProblem> device;
  std::vector<DeviceBuffer> inputs;
  DeviceBuffer out, tile_sm, digests, scratch;
  DeviceBuffer first_out;  // consensus: the first run's output, the expected values of a later miscompare
  DeviceBuffer fault_saved;  // input drills: the words each one changes, saved (MAX_FAULT_COUNT words a drill)
  PinnedBuffer pinned_digests, pinned_sm;  // what the device copies back while the host waits on its event
  std::vector<uint64_t> host_digests;      // their values once the iteration is done
  std::vector<uint32_t> host_sm;
  uint64_t tiles_computed = 0;  // tiles whose SM the kernels recorded (all of them, unless the device samples)
  uint64_t bytes = 0;           // device memory the case takes
  std::vector<std::vector<float>> host_inputs;  // generated on the CPU only when needed (generated_host_inputs)
  // Per SM, the tiles it got wrong against the golden and their first wrong digests (for a retest).
  std::map<int, std::map<uint64_t, uint64_t>> wrong;
  // The CPU's own copy of the inputs (generated the first time), for recomputing tiles on the host.
  const std::vector<std::vector<float>>& generated_host_inputs() {
    if (host_inputs.empty()) {
      const auto tensors = problem->inputs();
      for (size_t i = 0; i < tensors.size(); ++i) {
        host_inputs.emplace_back(tensors[i].elements);
        problem->generate_input(i, 0, tensors[i].elements, host_inputs[i].data());
      }
    }
    return host_inputs;
  }
  void leak() {
    for (DeviceBuffer& b : inputs) b.release();
    out.release();
    tile_sm.release();
    digests.release();
    scratch.release();
    first_out.release();
    fault_saved.release();
    pinned_digests.release();
    pinned_sm.release();
  }
};

// The faults of one case at one iteration on this GPU.
struct IterationFaults {
  std::vector<Injection*> input;
  Injection* output = nullptr;
  Injection* hang = nullptr;
  Injection* replay = nullptr;  // submodule=: inside the training-step replay
  DeviceFault fault;
};

// What a case's runs on one GPU are compared with (the modes of docs/design.md, "The determinism contract").
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
