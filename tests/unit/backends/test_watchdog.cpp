// The watchdog's polling path (src/backends/cuda/watchdog.h) with a fake event: work that finishes is seen,
// work that never finishes (a hung kernel) gives up at the deadline rather than blocking, and the device's
// error reaches the caller. The GPU executor's whole path (pinned copies behind a hung kernel) is the hang drill on
// the emulated device (tests/e2e/test_emulated.py).
#include <stdexcept>

#include "tests/unit/catch.h"
#include "src/backends/cuda/watchdog.h"

using namespace sdc::cuda;

TEST_CASE("watchdog: an event that completes is seen, however many polls it takes", "[watchdog]") {
  for (int polls_needed : {1, 2, 70, 200}) {
    int polls = 0;
    const bool done = poll_until([&] { return ++polls >= polls_needed; }, Clock::now() + std::chrono::hours(1));
    CHECK(done);
    CHECK(polls == polls_needed);
  }
}

TEST_CASE("watchdog: an event that never completes gives up at the deadline, not before", "[watchdog]") {
  int polls = 0;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(50);
  const bool done = poll_until([&] { return ++polls, false; }, deadline);
  CHECK_FALSE(done);
  CHECK(Clock::now() >= deadline);
  CHECK(polls > 1);  // it polled, and did not block in its first call
  // A deadline already past: one poll, which may still find the work done.
  CHECK(poll_until([] { return true; }, Clock::now() - std::chrono::seconds(1)));
  CHECK_FALSE(poll_until([] { return false; }, Clock::now() - std::chrono::seconds(1)));
}

TEST_CASE("watchdog: the device's error while polling reaches the caller", "[watchdog]") {
  int polls = 0;
  CHECK_THROWS_WITH(poll_until(
                        [&]() -> bool {
                          if (++polls == 3) throw std::runtime_error("illegal address");
                          return false;
                        },
                        Clock::now() + std::chrono::hours(1)),
                    "illegal address");
  CHECK(polls == 3);
}
