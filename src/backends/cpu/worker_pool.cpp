#include "worker_pool.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace sdc::cpu {

WorkerPool::WorkerPool(const std::vector<LogicalCpu>& cpus) : cpus_(cpus) {
  pin_errors_.resize(cpus_.size());
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
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &job;
  running_ = cpus_.size();
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
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
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) done_cv_.notify_all();
  }
}

}  // namespace sdc::cpu
