// The samplers' clock (cpu_sampler.h, nvml.h): a thread that calls a function at once and then every interval
// until stopped. The first call comes whatever follows, so a screen shorter than the interval still has one
// reading; stop() wakes the thread at once, lets the call in progress finish and joins.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace sdc::host {

class PeriodicThread {
 public:
  PeriodicThread() = default;
  ~PeriodicThread() { stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Starts the thread: tick() now, then every interval_s seconds. Once per object.
  void start(double interval_s, std::function<void()> tick);
  // Stops and joins the thread; false when it was not running (never started, or stopped before).
  bool stop();
  bool running() const { return thread_.joinable(); }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace sdc::host
