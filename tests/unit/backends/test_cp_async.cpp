// cp.async on the emulated device (device_util.cuh: cp_async, cp_async_commit, cp_async_wait): a copy lands at
// the wait that completes its group and zero-fills past its source bytes; the race checker reports any access to
// its bytes between the issue and the wait (the issuer's own read, a second copy in flight to them, another thread
// before the issue in the same interval) and another thread's after the wait without a barrier, and a copy into
// memory that is not shared; a misaligned copy, and a thread that returns with copies not waited for, end the
// block. Compiled for the emulated device with the race checker's instrumentation, like test_racecheck.cpp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/emu/racecheck.h"
#include "tests/unit/catch.h"

using namespace sdc;
namespace rc = sdc::emu::racecheck;

namespace {

constexpr int kThreads = 64;

// Each thread copies 16 bytes of `in` (doubles 2t, 2t + 1) into shared memory through a group, waits, meets the
// block at a barrier and stores its neighbour's pair: every double of `in`, rotated by one pair. Group 1, issued
// after group 0 and left in flight by wait<1>, then waited for, copies the same pair to a second buffer with only
// 8 of its 16 bytes read (the second double zero-filled). out: 2 x 2 kThreads doubles.
__global__ void pipeline(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();  // [0, 2 kThreads): group 0's; [2 kThreads, 4 kThreads): group 1's
  const int t = static_cast<int>(threadIdx.x), n = (t + 1) % kThreads;
  cuda::cp_async<16>(s + 2 * t, in + 2 * t, 16);
  cuda::cp_async_commit();
  cuda::cp_async<16>(s + 2 * kThreads + 2 * t, in + 2 * t, 8);
  cuda::cp_async_commit();
  cuda::cp_async_wait<1>();  // group 0 only
  __syncthreads();
  out[2 * t] = s[2 * n], out[2 * t + 1] = s[2 * n + 1];
  cuda::cp_async_wait<0>();
  __syncthreads();
  out[2 * kThreads + 2 * t] = s[2 * kThreads + 2 * n], out[2 * kThreads + 2 * t + 1] = s[2 * kThreads + 2 * n + 1];
}

// Reads its own copy's bytes before waiting: on a GPU they may or may not have landed.
__global__ void read_before_wait(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  const int t = static_cast<int>(threadIdx.x);
  cuda::cp_async<8>(s + t, in + t, 8);
  cuda::cp_async_commit();
  out[t] = s[t];
  cuda::cp_async_wait<0>();
}

// Two copies to the same bytes in flight at once (a ring refilled one slab too early). Then both are waited for
// before the block reads them, or (kFirstOnly) the first only: the neighbour's second copy is still in flight when
// a thread reads.
template <bool kFirstOnly>
__global__ void two_in_flight(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  const int t = static_cast<int>(threadIdx.x);
  cuda::cp_async<8>(s + t, in + t, 8);
  cuda::cp_async_commit();
  cuda::cp_async<8>(s + t, in + kThreads + t, 8);
  cuda::cp_async_commit();
  if (kFirstOnly)
    cuda::cp_async_wait<1>();
  else
    cuda::cp_async_wait<0>();
  __syncthreads();
  out[t] = s[(t + 1) % kThreads];
  cuda::cp_async_wait<0>();
}

// A copy into global memory.
__global__ void into_global(const double* in, double* out) {
  const int t = static_cast<int>(threadIdx.x);
  cuda::cp_async<8>(out + t, in + t, 8);
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
}

// Reads the neighbour's copy after its own wait, with no barrier: the neighbour's copy may not have landed.
__global__ void no_barrier_after_wait(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  const int t = static_cast<int>(threadIdx.x);
  cuda::cp_async<8>(s + t, in + t, 8);
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
  out[t] = s[(t + 1) % kThreads];
}

// Issues a copy into the buffer its neighbour reads in the same barrier interval (a ring refilled too early).
__global__ void refill_while_read(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  const int t = static_cast<int>(threadIdx.x);
  s[t] = 0.0;
  __syncthreads();
  out[t] = s[(t + 1) % kThreads];
  cuda::cp_async<8>(s + t, in + t, 8);
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
}

__global__ void misaligned(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  cuda::cp_async<16>(s + 1, in, 16);
  cuda::cp_async_commit();
  cuda::cp_async_wait<0>();
  out[threadIdx.x] = s[1];
}

// Thread 5 commits a copy and returns without waiting for it.
__global__ void never_waited(const double* in, double* out) {
  double* s = cuda::dynamic_shared<double>();
  const int t = static_cast<int>(threadIdx.x);
  cuda::cp_async<8>(s + t, in + t, 8);
  cuda::cp_async_commit();
  if (t != 5) cuda::cp_async_wait<0>();
  out[t] = 0.0;
}

// Runs `kernel` as one block of kThreads threads with 4 kThreads doubles of dynamic shared memory on in = 1, 2, 3,
// ... and returns out (4 kThreads doubles, NaN where nothing was stored). A device of its own: a fault loses it.
template <class K>
std::vector<double> run(const char* name, K kernel) {
  const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  cuda::Stream s(*rt);
  std::vector<double> in(4 * kThreads), out(4 * kThreads, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i + 1);
  cuda::DeviceBuffer din(*rt, in.size() * 8), dout(*rt, out.size() * 8);
  rt->copy(din.get(), in.data(), in.size() * 8, s.get());
  rt->copy(dout.get(), out.data(), out.size() * 8, s.get());
  cuda::launch_shared(name, kernel, 1, kThreads, 4 * kThreads * sizeof(double), s.get(), din.as<const double>(),
                      dout.as<double>());
  rt->copy(out.data(), dout.get(), out.size() * 8, s.get());
  return out;
}

}  // namespace

TEST_CASE("cp.async copies land at their group's wait and zero-fill past their source bytes, race-free with a barrier",
          "[racecheck]") {
  rc::reset();
  const std::vector<double> out = run("pipeline", pipeline);
  for (int t = 0; t < kThreads; ++t) {
    const int n = (t + 1) % kThreads;
    INFO("thread " << t);
    CHECK(out[2 * t] == 2 * n + 1);
    CHECK(out[2 * t + 1] == 2 * n + 2);
    CHECK(out[2 * kThreads + 2 * t] == 2 * n + 1);
    CHECK(out[2 * kThreads + 2 * t + 1] == 0.0);  // beyond the 8 source bytes
  }
  for (const rc::Race& r : rc::races()) UNSCOPED_INFO(r.describe());
  CHECK(rc::race_count() == 0);
}

TEST_CASE("the race checker reports any access to a cp.async copy's bytes from its issue to its wait", "[racecheck]") {
  rc::reset();
  run("no_barrier_after_wait", no_barrier_after_wait);
  REQUIRE(rc::race_count() > 0);
  CHECK(rc::races().front().kernel == "no_barrier_after_wait");
  CHECK(rc::races().front().kind == "read-write");  // thread 0 read double 1 before thread 1's copy landed

  rc::reset();
  run("refill_while_read", refill_while_read);
  REQUIRE(rc::race_count() > 0);
  CHECK(rc::races().front().kernel == "refill_while_read");
  CHECK(rc::races().front().kind == "read-write");  // thread 0 read double 1, thread 1's copy may land now

  rc::reset();
  run("read_before_wait", read_before_wait);
  REQUIRE(rc::race_count() == kThreads);  // every thread, once
  CHECK(rc::races().front().kind == "pending-copy");
  CHECK(rc::races().front().first == 0);  // its own copy
  CHECK(rc::races().front().describe().find("access to a cp.async copy in flight in kernel read_before_wait block 0: "
                                            "thread 0") != std::string::npos);

  rc::reset();
  run("two_in_flight", two_in_flight<false>);
  REQUIRE(rc::race_count() == 2 * kThreads);  // each thread's second copy: its store at the issue (a read, a write)
  CHECK(rc::races().front().kind == "pending-copy");
  CHECK(rc::races().front().region == "dynamic");
  CHECK(rc::races().front().offset == 0);

  rc::reset();
  run("one_of_two_landed", two_in_flight<true>);
  // As above, the first copy's store when it lands (the second is in flight), and each read after the barrier.
  REQUIRE(rc::race_count() > 2 * kThreads);
  const auto races = rc::races();
  CHECK(std::any_of(races.begin(), races.end(), [](const rc::Race& r) {  // thread 63 read double 0: thread 0's second
    return r.kind == "pending-copy" && r.second == kThreads - 1 && r.first == 0 && r.offset == 0;  // copy in flight
  }));

  rc::reset();
  run("into_global", into_global);
  REQUIRE(rc::race_count() == kThreads);
  CHECK(rc::races().front().kind == "not-shared");
}

TEST_CASE("a misaligned cp.async and a thread that returns with copies in flight end the block", "[racecheck]") {
  CHECK_THROWS_WITH(run("misaligned", misaligned), Catch::Contains("not aligned"));
  CHECK_THROWS_WITH(run("never_waited", never_waited),
                    Catch::Contains("thread 5") && Catch::Contains("1 cp.async copies not waited for"));
}
