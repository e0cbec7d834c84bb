#include "src/backends/cpu/worker_pool.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "src/core/activity.h"

namespace sdc::cpu {

WorkerPool::WorkerPool(const std::vector<LogicalCpu>& cpus) : cpus_(cpus) {
  pin_errors_.resize(cpus_.size());
  busy_.assign(cpus_.size(), 0);
  running_ = cpus_.size();
  for (size_t w = 0; w < cpus_.size(); ++w) threads_.emplace_back([this, w] { loop(w); });
  // Wait until every worker has pinned itself (or failed to): a screen on the wrong CPU is no screen.
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return running_ == 0; });
  for (size_t w = 0; w < cpus_.size(); ++w) {
    if (pin_errors_[w].empty()) continue;
    stop_ = true;
    lock.unlock();
    start_cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    throw std::runtime_error(pin_errors_[w]);
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(const std::function<void(size_t)>& job) {
  run_until(job, std::chrono::steady_clock::time_point::max(), [] { return false; });
}

bool WorkerPool::run_until(const std::function<void(size_t)>& job, std::chrono::steady_clock::time_point deadline,
                           const std::function<bool()>& abort) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &job;
  running_ = cpus_.size();
  std::fill(busy_.begin(), busy_.end(), 1);
  ++generation_;
  start_cv_.notify_all();
  for (;;) {
    const auto wake = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    if (done_cv_.wait_until(lock, wake, [this] { return running_ == 0; })) break;
    if (std::chrono::steady_clock::now() >= deadline || abort()) return false;
  }
  job_ = nullptr;
  return true;
}

bool WorkerPool::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!done_cv_.wait_until(lock, deadline, [this] { return running_ == 0; })) return false;
  job_ = nullptr;
  return true;
}

std::vector<int> WorkerPool::busy_cpus() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (size_t w = 0; w < cpus_.size(); ++w)
    if (busy_[w]) out.push_back(cpus_[w].cpu);
  return out;
}

void WorkerPool::abandon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : threads_) t.detach();
  threads_.clear();
}

void WorkerPool::loop(size_t worker) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus_[worker].cpu, &set);
  std::string err;
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
    err = fmt::format("cannot pin a worker to CPU {}: {}", cpus_[worker].cpu, std::strerror(rc));
  else if (sched_getcpu() != cpus_[worker].cpu)
    err = fmt::format("a worker pinned to CPU {} runs on CPU {}", cpus_[worker].cpu, sched_getcpu());
  // From here on a crash on this thread names its CPU (activity.h), between tiles and between jobs too, and
  // a stack overflow is caught on the thread's alternate signal stack.
  const activity::AltStack alt_stack;
  if (err.empty()) activity::bind_worker(static_cast<int>(worker), cpus_[worker].cpu);
  unsigned long seen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pin_errors_[worker] = err;
    if (--running_ == 0) done_cv_.notify_all();
  }
  for (;;) {
    const std::function<void(size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(worker);
    activity::publish_stage(activity::STAGE_IDLE);
    std::lock_guard<std::mutex> lock(mu_);
    busy_[worker] = 0;
    if (--running_ == 0) done_cv_.notify_all();
  }
}

}  // namespace sdc::cpu
