#include "src/host/periodic.h"

#include <chrono>
#include <utility>

namespace sdc::host {

void PeriodicThread::start(double interval_s, std::function<void()> tick) {
  thread_ = std::thread([this, interval_s, tick = std::move(tick)] {
    std::unique_lock<std::mutex> lock(mutex_);
    do {
      lock.unlock();
      tick();
      lock.lock();
      cv_.wait_for(lock, std::chrono::duration<double>(interval_s), [this] { return stopping_; });
    } while (!stopping_);
  });
}

bool PeriodicThread::stop() {
  if (!thread_.joinable()) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  return true;
}

}  // namespace sdc::host
