// The watchdog's polling: the host thread asks whether device work is done until a deadline, and never
// blocks in a call that could wait for a hung kernel (a synchronize, or a copy to pageable memory: the GPU executor
// copies results to pinned buffers for that reason). Plain C++ with the event behind a callable, so that a
// unit test drives it with a fake event (tests/unit/backends/test_watchdog.cpp).
#pragma once

#include <chrono>
#include <thread>

namespace sdc::cuda {

using Clock = std::chrono::steady_clock;

// Polls done() until it says true (returns true) or the deadline passes first (returns false); an exception
// from done() (the device's error) goes to the caller. Yields for the first polls, then sleeps 100 us between
// them, so a short kernel is seen at once and a long one costs the host little.
template <class Done>
bool poll_until(Done&& done, Clock::time_point deadline) {
  for (int spin = 0;; ++spin) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    if (spin < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace sdc::cuda
