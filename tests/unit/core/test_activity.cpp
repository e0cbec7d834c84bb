// The shared progress record (src/core/activity.h): a worker is named on it from the moment it is pinned, its
// stage follows its work and returns to idle between jobs, the first miscompare is kept, the final outputs
// accumulate, and a thread's alternate signal stack is installed and then given back. The crashes themselves
// (a worker between tiles, a stack overflow) are the drills of tests/e2e/test_supervisor_outputs.py.
#include <signal.h>

#include <cstring>
#include <thread>

#include "tests/unit/catch.h"
#include "src/backends/cpu/cpu_topology.h"
#include "src/backends/cpu/worker_pool.h"
#include "src/core/activity.h"

using namespace sdc;

namespace {
// The board for the duration of a test, as a supervised screen has it.
struct BoardScope {
  activity::Board board;
  BoardScope() { activity::set_board(&board); }
  ~BoardScope() { activity::set_board(nullptr); }
};
}  // namespace

TEST_CASE("activity: a worker is named once pinned, and its stage follows its work", "[activity]") {
  auto* scope = new BoardScope;  // large (1024 slots): on the heap
  activity::Board& b = scope->board;
  const auto cpus = cpu::allowed_cpus();
  REQUIRE(!cpus.empty());
  {
    cpu::WorkerPool pool({cpus.front()});
    CHECK(b.slots[0].cpu.load() == cpus.front().cpu);  // before any job: a crash now names the CPU
    CHECK(b.slots[0].stage.load() == activity::STAGE_IDLE);
    CHECK(b.slots[0].case_id[0] == '\0');
    // Read on the worker, checked here (Catch2's assertions belong to the test's thread).
    int seen_inputs = -1, seen_tile = -1, seen_between = -1;
    pool.run([&](size_t) {
      activity::publish_stage(activity::STAGE_INPUTS, "gemm_f32.special_512");
      seen_inputs = b.slots[0].stage.load();
      activity::publish_iteration(cpus.front().cpu, "gemm_f32.special_512", 2);
      activity::publish_tile(7);
      seen_tile = b.slots[0].stage.load();
      activity::publish_tile_done();
      seen_between = b.slots[0].stage.load();
    });
    CHECK(seen_inputs == activity::STAGE_INPUTS);
    CHECK(seen_tile == activity::STAGE_TILE);
    CHECK(seen_between == activity::STAGE_BETWEEN_TILES);
    CHECK(b.slots[0].stage.load() == activity::STAGE_IDLE);  // back between jobs
    CHECK(std::strcmp(b.slots[0].case_id, "gemm_f32.special_512") == 0);
    CHECK(b.slots[0].iteration.load() == 2);
    CHECK(b.slots[0].tile.load() == 7);
  }
  // The first miscompare is kept; outputs accumulate.
  DeviceInfo gpu;
  gpu.index = 1;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.uuid = "GPU-8c2f1a2b-0000-1111-2222-333344445555";
  gpu.pci_bus_id = "00000000:19:00.0";
  gpu.cc_major = 9;
  gpu.sm_count = 132;
  gpu.memory_bytes = 85ull << 30;
  gpu.ecc = "on";
  activity::publish_miscompare("softmax_f32.special_128x1000", 3, &gpu, 0.25);
  activity::publish_miscompare("gemm_f32.special_512", 5);
  CHECK(std::strcmp(b.miscompare_case, "softmax_f32.special_128x1000") == 0);
  CHECK(b.miscompare_unit.load() == 3);
  CHECK(b.miscompare_device.load() == 1);
  CHECK(b.miscompare_ms.load() == 250);
  const DeviceInfo back = activity::miscompare_gpu(b);
  CHECK(back.index == 1);
  CHECK(back.name == gpu.name);
  CHECK(back.uuid == gpu.uuid);
  CHECK(back.pci_bus_id == gpu.pci_bus_id);
  CHECK(back.cc_major == 9);
  CHECK(back.sm_count == 132);
  CHECK(back.memory_bytes == gpu.memory_bytes);
  CHECK(back.ecc == "on");
  activity::publish_output(activity::OUT_PROMETHEUS);
  activity::publish_output(activity::OUT_REPORT);
  CHECK(b.outputs.load() == (activity::OUT_PROMETHEUS | activity::OUT_REPORT));
  activity::publish_seed(42);
  CHECK(b.seed_set.load() == 1);
  CHECK(b.seed.load() == 42);
  delete scope;
}

TEST_CASE("activity: a thread's alternate signal stack is installed, then the previous one restored", "[activity]") {
  stack_t before{}, during{}, after{};
  std::thread t([&] {  // checked after the join (Catch2's assertions belong to the test's thread)
    sigaltstack(nullptr, &before);
    {
      activity::AltStack alt;
      sigaltstack(nullptr, &during);
    }
    sigaltstack(nullptr, &after);
  });
  t.join();
  CHECK((during.ss_flags & SS_DISABLE) == 0);
  CHECK(during.ss_size >= 64 * 1024);
  CHECK(during.ss_sp != before.ss_sp);
  CHECK(after.ss_sp == before.ss_sp);
  CHECK((after.ss_flags & SS_DISABLE) == (before.ss_flags & SS_DISABLE));
}
