// The CPU temperatures during a CPU screen: a thread reads the host's hwmon CPU sensors (host_readers.h) once
// a second, from construction until stop() or the destructor (every way out of a screen ends it), and each
// CPU test is then judged by the readings taken while it ran, as GPU tests are by NVML's (gpu_watch.h).
#pragma once

#include <atomic>

#include "src/host/host_readers.h"
#include "src/host/periodic.h"

namespace sdc {
struct RunResult;
}

namespace sdc::host {

class CpuTemperatureSampler {
 public:
  // Appends to t.samples and raises t.peak; both are written by the sampler's thread alone while it runs:
  // read them after stop().
  CpuTemperatureSampler(HostRoot root, HostTelemetry& t, double interval_s = 1.0);
  ~CpuTemperatureSampler();
  CpuTemperatureSampler(const CpuTemperatureSampler&) = delete;
  CpuTemperatureSampler& operator=(const CpuTemperatureSampler&) = delete;
  void stop();
  bool running() const { return clock_.running(); }
  // Sampler threads alive in this process (tests: 0 after every exit path).
  static int live();

 private:
  void sample_once();
  HostRoot root_;
  HostTelemetry& t_;
  PeriodicThread clock_;
  static std::atomic<int> live_;
};

// Each CPU test (device "cpu") by the hottest CPU sensor read within a sampling interval of a round it ran
// (the samples, and the before and after readings): above max_c (--max-temperature; 0: none) a pass becomes
// an error that gives the sensor and its temperature, another verdict gets it as a note.
void judge_cpu_tests(RunResult& r, double max_c);

}  // namespace sdc::host
