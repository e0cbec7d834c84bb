// One worker thread pinned to each selected logical CPU. run() hands every worker the same job and
// returns when all have finished it; a job learns its worker index and must not throw.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/backends/cpu/cpu_topology.h"

namespace sdc::cpu {

class WorkerPool {
 public:
  // Starts and pins the workers; throws std::runtime_error naming the CPU when pinning fails.
  explicit WorkerPool(const std::vector<LogicalCpu>& cpus);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  size_t size() const { return cpus_.size(); }
  const LogicalCpu& cpu(size_t worker) const { return cpus_[worker]; }
  void run(const std::function<void(size_t worker)>& job);
  // Like run, but gives up at the deadline, or as soon as abort() returns true (polled every 100 ms):
  // returns false then, with the job possibly still running on some workers (see busy_cpus). The job
  // must stay valid until the process ends; after a false return, call abandon() before destruction.
  bool run_until(const std::function<void(size_t worker)>& job, std::chrono::steady_clock::time_point deadline,
                 const std::function<bool()>& abort);
  // After run_until gave up: waits until every worker has returned from the job, at most until the
  // deadline. true: the pool is idle and usable again, and the job may be destroyed.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  // The CPUs whose worker has not finished the current job.
  std::vector<int> busy_cpus();
  // Detaches the workers (a stuck one cannot be joined); the pool is unusable afterwards.
  void abandon();

 private:
  void loop(size_t worker);

  std::vector<LogicalCpu> cpus_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(size_t)>* job_ = nullptr;
  unsigned long generation_ = 0;
  size_t running_ = 0;
  std::vector<char> busy_;
  bool stop_ = false;
  std::vector<std::string> pin_errors_;
};

}  // namespace sdc::cpu
