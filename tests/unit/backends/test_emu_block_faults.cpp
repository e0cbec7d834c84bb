// The faults a kernel's misuse of the emulated device's execution model must raise (src/backends/emu/block.h),
// with messages that say where: deadlocks, collectives naming lanes that returned or disagreeing, __trap, and
// exceptions escaping a kernel thread.
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "src/backends/emu/block.h"
#include "tests/unit/emu_block_test.h"

using namespace sdc::emu;
using sdc::test::fault_of;
using sdc::test::launch;

namespace {

// Checks that the fault message m says each of `parts`; m is shown with any that it lacks.
void check_says(const std::string& m, std::initializer_list<std::string> parts) {
  INFO(m);
  for (const std::string& part : parts) CHECK(m.find(part) != std::string::npos);
}

}  // namespace

TEST_CASE("a deadlock is reported with the block and what each thread waits at", "[emu]") {
  BlockRunner r;
  // Warp 0 waits at the barrier; in warp 1, lane 0 waits there too while lanes 1-31 wait at a
  // __syncwarp whose mask names lane 0.
  auto kernel = [] {
    const ThreadContext& t = here();
    if (t.warp == 0 || t.lane == 0)
      syncthreads();
    else
      syncwarp(0xffffffffu);
  };
  check_says(fault_of(r, Dim3{64, 1, 1}, kernel, Dim3{2, 1, 0}),
             {"faulty_kernel", "block (2,1,0)", "deadlock",
              "threads 0-32 [threadIdx (0,0,0)..(32,0,0), warps 0-1] wait at __syncthreads",
              "threads 33-63 [threadIdx (33,0,0)..(63,0,0), warp 1 lanes 1-31] wait at __syncwarp(mask 0xffffffff)",
              "waits for lane 0 of warp 1"});

  // The runner is still good for the next block.
  std::vector<unsigned> out(64, 0);
  auto good = [&] {
    const ThreadContext& t = here();
    syncthreads();
    out[t.linear] = shfl(0xffffffffu, t.linear, 0, 32, Shfl::idx);
  };
  launch(r, Dim3{64, 1, 1}, good);
  for (unsigned i = 0; i < 64; ++i) CHECK(out[i] == i / 32 * 32);
}

TEST_CASE("a deadlock of threads that returned around a barrier others wait at", "[emu]") {
  BlockRunner r;
  // Threads 0-9 wait at a second barrier the others never reach: found when the last thread returns.
  auto kernel = [] {
    syncthreads();
    if (here().linear < 10) syncthreads();
    if (here().linear < 10) syncthreads();
  };
  const std::string m = fault_of(r, Dim3{40, 1, 1}, kernel);
  INFO(m);
  // The barrier completes once the others have returned, so threads 0-9 pass both and the block finishes.
  CHECK(m == "no fault");

  auto stuck = [] {
    if (here().linear < 10) {
      syncthreads();
    } else {
      syncwarp(activemask() & ~0x3ffu);
      syncwarp(0xffffffffu);  // names lanes 0-9, stuck at the barrier: nobody can go on
    }
  };
  check_says(fault_of(r, Dim3{32, 1, 1}, stuck),
             {"deadlock", "threads 0-9", "__syncthreads (10 of the 32 threads still running have arrived)",
              "waits for lanes 0-9 of warp 0"});
}

TEST_CASE("a collective whose mask names a lane that returned faults", "[emu]") {
  BlockRunner r;
  SECTION("returned before the call") {
    auto kernel = [] {
      if (here().lane == 5) return;
      syncthreads();  // lane 5 has returned by now
      shfl(0xffffffffu, 1, 0, 32, Shfl::idx);
    };
    // Thread 31 completes the barrier, goes on first, and is the first to call the shuffle.
    check_says(fault_of(r, Dim3{32, 1, 1}, kernel),
               {"thread 31 [threadIdx (31,0,0), warp 0 lane 31]", "names lane 5, which has returned"});
  }
  SECTION("returned while the others wait") {
    auto kernel = [] {
      if (here().lane == 31) return;
      syncwarp(0xffffffffu);
    };
    check_says(fault_of(r, Dim3{32, 1, 1}, kernel),
               {"thread 31", "returned while lanes 0-30 of its warp wait at __syncwarp(mask 0xffffffff)"});
  }
  SECTION("past the end of the block") {
    auto kernel = [] { ballot(0xffffffffu, true); };
    check_says(fault_of(r, Dim3{20, 1, 1}, kernel), {"names lanes 20-31"});
  }
}

TEST_CASE("other misuses of warp collectives fault", "[emu]") {
  BlockRunner r;
  SECTION("a mask leaving out the calling lane") {
    auto kernel = [] { syncwarp(here().lane == 3 ? 0xfffffff7u : 0xffffffffu); };
    check_says(fault_of(r, Dim3{32, 1, 1}, kernel), {"thread 3 ", "leaves out the calling lane"});
  }
  SECTION("lanes of one mask at different collectives") {
    auto kernel = [] {
      if (here().lane < 16)
        syncwarp(0xffffffffu);
      else
        ballot(0xffffffffu, true);
    };
    check_says(
        fault_of(r, Dim3{32, 1, 1}, kernel),
        {"thread 16 ", "called __ballot_sync(mask 0xffffffff) while lanes 0-15 of the same mask wait at __syncwarp"});
  }
  SECTION("a shuffle reading a lane outside its mask") {
    auto kernel = [] { shfl(0x0000ffffu, 1, 20, 32, Shfl::idx); };
    auto low_half = [&] {
      if (here().lane < 16) kernel();
    };
    check_says(fault_of(r, Dim3{32, 1, 1}, low_half), {"thread 0 ", "reads lane 20, outside the mask"});
  }
  SECTION("a width that is not a power of two") {
    auto kernel = [] { shfl(0xffffffffu, 1, 1, 12, Shfl::down); };
    check_says(fault_of(r, Dim3{32, 1, 1}, kernel), {"power of two"});
  }
}

TEST_CASE("__trap ends the block with a fault naming the thread", "[emu]") {
  BlockRunner r;
  auto kernel = [] {
    syncthreads();
    if (here().linear == 70) trap("checksum mismatch");
    syncthreads();
  };
  check_says(
      fault_of(r, Dim3{8, 16, 1}, kernel, Dim3{0, 3, 1}),
      {"kernel faulty_kernel block (0,3,1): thread 70 [threadIdx (6,8,0), warp 2 lane 6]: __trap: checksum mismatch"});

  // A trap inside the exchange function, on the lane completing the exchange.
  auto in_exchange = [] {
    int x = 0;
    warp_exchange(
        0xffffffffu, &x, [](void*, void* const*) { trap("from the exchange"); }, nullptr);
  };
  check_says(fault_of(r, Dim3{32, 1, 1}, in_exchange), {"thread 31 ", "from the exchange"});
}

TEST_CASE("an exception escaping a kernel thread is rethrown by run", "[emu]") {
  BlockRunner r;
  auto kernel = [] {
    syncthreads();
    if (here().linear == 9) throw std::range_error("thrown in a fiber");
    syncthreads();
  };
  CHECK_THROWS_WITH(launch(r, Dim3{64, 1, 1}, kernel), "thrown in a fiber");
  unsigned count = 0;
  auto good = [&] {
    syncthreads();
    ++count;
  };
  launch(r, Dim3{64, 1, 1}, good);
  CHECK(count == 64);
}
