// The emulated device's execution engine (src/backends/emu/block.h): barriers, shuffles against a
// reference written from CUDA's documented semantics, votes, the general warp exchange, each thread's own
// state, and runners under load (the faults a kernel's misuse raises: test_emu_block_faults.cpp).
#include <cfenv>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/catch.h"
#include "src/backends/emu/block.h"
#include "tests/unit/emu_block_test.h"

using namespace sdc::emu;
using sdc::test::fault_of;
using sdc::test::launch;

namespace {

uint32_t value_of(unsigned warp, unsigned lane, unsigned round) {
  uint32_t h = (warp * 131u + lane) * 2654435761u + round * 40503u;
  return h ^ (h >> 15);
}

// CUDA Programming Guide, "Warp Shuffle Functions", in its own words: __shfl_sync reads srcLane modulo
// width within the caller's segment; __shfl_up_sync lane - delta, own value when that leaves the segment
// (below); __shfl_down_sync lane + delta, own value past the segment's end; __shfl_xor_sync lane ^
// laneMask, own value when that lies in a later segment (an earlier one is read).
unsigned reference_source(unsigned lane, int arg, unsigned width, Shfl mode) {
  const unsigned seg = lane / width * width;
  switch (mode) {
    case Shfl::idx: return seg + static_cast<unsigned>(((arg % static_cast<int>(width)) + width) % width);
    case Shfl::up: return lane % width >= static_cast<unsigned>(arg) ? lane - arg : lane;
    case Shfl::down: return lane % width + arg < width ? lane + arg : lane;
    case Shfl::bfly: return (lane ^ arg) < seg + width ? lane ^ arg : lane;
  }
  return lane;
}

// An argument that differs per lane: a source lane of any size for idx, a delta or lane mask below 32 else.
int per_lane_arg(unsigned lane, Shfl mode) {
  const int a = static_cast<int>(lane * 7 + 3);
  return mode == Shfl::idx ? a : a % 32;
}

}  // namespace

TEST_CASE("every thread sees its neighbour's write after each barrier", "[emu]") {
  const Dim3 shapes[] = {{1024, 1, 1}, {32, 32, 1}, {8, 8, 16}, {5, 3, 7}, {1, 1, 1}, {33, 1, 1}};
  BlockRunner r;
  for (const Dim3 dim : shapes) {
    const unsigned n = dim.x * dim.y * dim.z;
    const unsigned rounds = 40;
    std::vector<uint32_t> slot(n);
    std::vector<unsigned> seen(n, 0), bad_index(n, 0);
    std::vector<uint64_t> epochs(n, 0);
    auto kernel = [&] {
      ThreadContext& t = here();
      const unsigned expect = t.thread_idx.x + t.thread_idx.y * dim.x + t.thread_idx.z * dim.x * dim.y;
      if (expect != t.linear || t.lane != t.linear % 32 || t.warp != t.linear / 32 || t.sm != 3 || t.nsmid != 132 ||
          t.grid_dim.x != 4 || t.block_dim.y != dim.y)
        ++bad_index[t.linear];
      for (unsigned round = 0; round < rounds; ++round) {
        slot[t.linear] = value_of(round, t.linear, 7);
        syncthreads();
        const unsigned nb = (t.linear + 1) % n;
        seen[t.linear] += slot[nb] == value_of(round, nb, 7);
        syncthreads();
      }
      epochs[t.linear] = t.epoch;
    };
    launch(r, dim, kernel);
    unsigned ok = 0, bad = 0;
    for (unsigned i = 0; i < n; ++i) {
      ok += seen[i] == rounds && epochs[i] == 2 * rounds;
      bad += bad_index[i];
    }
    INFO("block " << dim.x << "x" << dim.y << "x" << dim.z);
    CHECK(ok == n);
    CHECK(bad == 0);
  }
}

TEST_CASE("every shuffle mode and width matches CUDA's documented semantics", "[emu]") {
  BlockRunner r;
  const Shfl modes[] = {Shfl::idx, Shfl::up, Shfl::down, Shfl::bfly};
  for (const Shfl mode : modes)
    for (unsigned width = 1; width <= 32; width *= 2) {
      // idx: sources out of range and negative (taken modulo width); every mode: then one that differs per lane.
      std::vector<int> args;
      if (mode == Shfl::idx)
        for (int a = -40; a <= 70; a += 3) args.push_back(a);
      else
        for (int a = 0; a < 32; ++a) args.push_back(a);
      const unsigned n = 64;
      std::vector<uint32_t> got32(n * (args.size() + 1));
      std::vector<uint64_t> got64(n * (args.size() + 1));
      auto kernel = [&] {
        const ThreadContext& t = here();
        for (size_t k = 0; k <= args.size(); ++k) {
          const int a = k < args.size() ? args[k] : per_lane_arg(t.lane, mode);
          got32[t.linear * (args.size() + 1) + k] = shfl(0xffffffffu, value_of(t.warp, t.lane, k), a, width, mode);
          const uint64_t v64 = (uint64_t{value_of(t.warp, t.lane, k + 1000)} << 32) | value_of(t.warp, t.lane, k);
          got64[t.linear * (args.size() + 1) + k] = shfl64(0xffffffffu, v64, a, width, mode);
        }
      };
      launch(r, Dim3{n, 1, 1}, kernel);
      unsigned wrong = 0;
      for (unsigned i = 0; i < n; ++i)
        for (size_t k = 0; k <= args.size(); ++k) {
          const unsigned lane = i % 32, warp = i / 32;
          const int a = k < args.size() ? args[k] : per_lane_arg(lane, mode);
          const unsigned src = reference_source(lane, a, width, mode);
          const uint64_t want64 = (uint64_t{value_of(warp, src, k + 1000)} << 32) | value_of(warp, src, k);
          wrong += got32[i * (args.size() + 1) + k] != value_of(warp, src, k);
          wrong += got64[i * (args.size() + 1) + k] != want64;
        }
      INFO("mode " << static_cast<int>(mode) << " width " << width);
      CHECK(wrong == 0);
    }
}

TEST_CASE("shuffles among a partial mask and a tail warp", "[emu]") {
  BlockRunner r;
  const unsigned n = 48;  // warp 1 has 16 lanes
  std::vector<uint32_t> got(n, 0);
  auto kernel = [&] {
    const ThreadContext& t = here();
    if (t.warp == 0 && t.lane < 16) got[t.linear] = shfl(0x0000ffffu, t.lane * 10, t.lane ^ 3, 32, Shfl::idx);
    if (t.warp == 0 && t.lane >= 16) got[t.linear] = shfl(0xffff0000u, t.lane * 10, 1, 32, Shfl::down);
    if (t.warp == 1) got[t.linear] = shfl(activemask(), t.lane * 10, 1, 16, Shfl::up);
  };
  launch(r, Dim3{n, 1, 1}, kernel);
  for (unsigned l = 0; l < 16; ++l) CHECK(got[l] == (l ^ 3) * 10);
  for (unsigned l = 16; l < 32; ++l) CHECK(got[l] == (l < 31 ? l + 1 : l) * 10);
  for (unsigned l = 0; l < 16; ++l) CHECK(got[32 + l] == (l > 0 ? l - 1 : 0) * 10);
}

TEST_CASE("ballot and activemask see the lanes that returned early", "[emu]") {
  BlockRunner r;
  const unsigned n = 80;  // warp 2 has 16 lanes
  std::vector<unsigned> active(n, 0), votes(n, 0), full(n, 0);
  auto kernel = [&] {
    const ThreadContext& t = here();
    full[t.linear] = ballot(activemask(), t.lane % 2 == 1);
    if (t.linear % 3 == 0) return;
    syncthreads();  // every early return has happened: exited threads count as arrived
    active[t.linear] = activemask();
    votes[t.linear] = ballot(active[t.linear], t.lane % 2 == 1);
  };
  launch(r, Dim3{n, 1, 1}, kernel);
  for (unsigned w = 0; w < 3; ++w) {
    uint32_t live = 0, all = 0;
    for (unsigned l = 0; l < 32 && w * 32 + l < n; ++l) {
      all |= 1u << l;
      if ((w * 32 + l) % 3 != 0) live |= 1u << l;
    }
    for (unsigned l = 0; l < 32 && w * 32 + l < n; ++l) {
      const unsigned i = w * 32 + l;
      CHECK(full[i] == (all & 0xaaaaaaaau));
      if (i % 3 == 0) continue;
      CHECK(active[i] == live);
      CHECK(votes[i] == (live & 0xaaaaaaaau));
    }
  }
}

namespace {
struct ExchangeCounts {
  unsigned calls[32] = {};
};
void sum_lanes(void* ctx, void* const* lanes) {
  auto* counts = static_cast<ExchangeCounts*>(ctx);
  uint32_t sum = 0;
  int warp = -1;
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l]) {
      const auto* v = static_cast<uint32_t*>(lanes[l]);
      sum += v[0];
      warp = static_cast<int>(v[1]);
    }
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l]) static_cast<uint32_t*>(lanes[l])[0] = sum;
  ++counts->calls[warp];
}
}  // namespace

TEST_CASE("warp_exchange runs its function once per warp per call", "[emu]") {
  BlockRunner r;
  const unsigned n = 128, calls = 50;
  ExchangeCounts counts;
  std::vector<unsigned> wrong(n, 0);
  auto kernel = [&] {
    const ThreadContext& t = here();
    for (unsigned c = 0; c < calls; ++c) {
      uint32_t mine[2] = {t.lane + c, t.warp};
      // The odd calls exchange among the low half of each warp only; the high half sits them out.
      const unsigned mask = c % 2 ? 0x0000ffffu : 0xffffffffu;
      if (!((mask >> t.lane) & 1u)) continue;
      warp_exchange(mask, mine, sum_lanes, &counts);
      const unsigned nl = c % 2 ? 16 : 32;
      wrong[t.linear] += mine[0] != nl * (nl - 1) / 2 + nl * c;
    }
  };
  launch(r, Dim3{n, 1, 1}, kernel);
  for (unsigned w = 0; w < n / 32; ++w) CHECK(counts.calls[w] == calls);
  unsigned total = 0;
  for (unsigned i = 0; i < n; ++i) total += wrong[i];
  CHECK(total == 0);
}

TEST_CASE("each thread has its own stack and floating-point control state", "[emu]") {
  BlockRunner r;
  const unsigned n = 256;
  std::vector<unsigned> wrong(n, 0);
  const int outer = std::fegetround();
  auto kernel = [&] {
    const ThreadContext& t = here();
    volatile uint32_t big[8192];  // 32 KiB of each 128 KiB stack
    for (unsigned i = 0; i < 8192; i += 61) big[i] = t.linear * 8192 + i;
    if (t.linear % 2) std::fesetround(FE_TOWARDZERO);
    syncthreads();
    for (unsigned i = 0; i < 8192; i += 61) wrong[t.linear] += big[i] != t.linear * 8192 + i;
    wrong[t.linear] += std::fegetround() != (t.linear % 2 ? FE_TOWARDZERO : FE_TONEAREST);
    volatile float third = 1.0f;
    third = third / 3.0f;  // rounds differently toward zero
    wrong[t.linear] += (third == 0x1.555556p-2f) != (t.linear % 2 == 0);
    syncthreads();
  };
  launch(r, Dim3{n, 1, 1}, kernel);
  unsigned total = 0;
  for (unsigned i = 0; i < n; ++i) total += wrong[i];
  CHECK(total == 0);
  CHECK(std::fegetround() == outer);
}

TEST_CASE("a runner runs 10000 small blocks", "[emu]") {
  BlockRunner r;
  const unsigned n = 64;
  std::vector<uint32_t> out(n);
  unsigned wrong = 0;
  for (unsigned blk = 0; blk < 10000; ++blk) {
    auto kernel = [&] {
      const ThreadContext& t = here();
      out[t.linear] = t.linear + blk;
      syncthreads();
      const uint32_t v = out[(t.linear + 5) % n];
      out[t.linear] = shfl(0xffffffffu, v, 1, 32, Shfl::bfly);
    };
    launch(r, Dim3{n, 1, 1}, kernel, "small", Dim3{blk, 0, 0});
    for (unsigned i = 0; i < n; ++i) wrong += out[i] != ((i ^ 1) + 5) % n + blk;
  }
  CHECK(wrong == 0);
}

TEST_CASE("a runner survives many faulting blocks", "[emu]") {
  BlockRunner r;
  unsigned faults = 0;
  for (unsigned blk = 0; blk < 100; ++blk) {
    // Half the threads at a barrier with a frame in use, the other half at a __syncwarp naming them.
    auto kernel = [] {
      if (here().lane % 2) {
        syncwarp(0xffffffffu);
      } else {
        volatile char frame[4096];
        frame[here().linear] = 1;
        syncthreads();
        frame[0] = frame[here().linear];
      }
    };
    faults += fault_of(r, Dim3{64, 1, 1}, kernel) != "no fault";
  }
  CHECK(faults == 100);
  unsigned count = 0;
  auto good = [&] {
    syncthreads();
    count += shfl(0xffffffffu, 1, 3, 32, Shfl::idx);
  };
  launch(r, Dim3{64, 1, 1}, good);
  CHECK(count == 64);
}

TEST_CASE("two runners in two OS threads at once", "[emu]") {
  auto work = [](unsigned seed, unsigned* wrong) {
    BlockRunner r;
    const unsigned n = 256;
    std::vector<uint32_t> out(n);
    for (unsigned blk = 0; blk < 300; ++blk) {
      auto kernel = [&] {
        const ThreadContext& t = here();
        uint32_t v = t.linear * seed + blk;
        for (unsigned o = 1; o < 32; o *= 2) v += shfl(0xffffffffu, v, o, 32, Shfl::bfly);
        out[t.linear] = v;
        syncthreads();
        const uint32_t next = out[(t.linear + 32) % n];
        syncthreads();
        out[t.linear] = next;
      };
      launch(r, Dim3{n, 1, 1}, kernel);
      for (unsigned i = 0; i < n; ++i) {
        const unsigned w = (i + 32) % n / 32;
        uint32_t sum = 0;
        for (unsigned l = 0; l < 32; ++l) sum += (w * 32 + l) * seed + blk;
        *wrong += out[i] != sum;
      }
    }
  };
  unsigned wrong_a = 0, wrong_b = 0;
  std::thread a(work, 3u, &wrong_a);
  std::thread b(work, 11u, &wrong_b);
  a.join();
  b.join();
  CHECK(wrong_a == 0);
  CHECK(wrong_b == 0);
  CHECK(current_thread == nullptr);
}

TEST_CASE("a 1024-thread block passes 100 barriers", "[emu]") {
  BlockRunner r;
  unsigned passed = 0;
  auto kernel = [&] {
    for (int k = 0; k < 100; ++k) syncthreads();
    passed += here().epoch == 100;
  };
  launch(r, Dim3{1024, 1, 1}, kernel);
  CHECK(passed == 1024);
  CHECK(r.switches() >= 100 * 1024);
}

// Not run by default: the cost of a switch, measured through the public API (a barrier of two threads
// in one warp costs one switch each; a 1024-thread barrier 1024 switches).
TEST_CASE("switch cost", "[.][emu_bench]") {
  BlockRunner r;
  const int rounds = 2000000;
  auto pair = [&] {
    for (int k = 0; k < rounds; ++k) syncwarp(0x3u);
  };
  auto t0 = std::chrono::steady_clock::now();
  launch(r, Dim3{2, 1, 1}, pair);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("syncwarp of 2 lanes: %.1f ns per switch (%llu switches)\n", s * 1e9 / r.switches(),
              static_cast<unsigned long long>(r.switches()));
  auto barrier = [&] {
    for (int k = 0; k < 2000; ++k) syncthreads();
  };
  t0 = std::chrono::steady_clock::now();
  launch(r, Dim3{1024, 1, 1}, barrier);
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("__syncthreads of 1024 threads: %.1f ns per switch, %.1f us per barrier\n", s * 1e9 / r.switches(),
              s * 1e6 / 2000);
  auto shuffles = [&] {
    uint32_t v = here().linear;
    for (int k = 0; k < 200; ++k) v += shfl(0xffffffffu, v, 1, 32, Shfl::bfly);
    if (v == 12345) std::printf("-");
  };
  t0 = std::chrono::steady_clock::now();
  launch(r, Dim3{1024, 1, 1}, shuffles);
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("__shfl_xor_sync over 1024 threads: %.1f ns per switch, %.1f us per block-wide shuffle\n",
              s * 1e9 / r.switches(), s * 1e6 / 200);
  auto small = [] { syncthreads(); };
  t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 20000; ++k) launch(r, Dim3{64, 1, 1}, small);
  s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("64-thread block with one barrier: %.2f us per block\n", s * 1e6 / 20000);
}
