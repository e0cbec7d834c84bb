// What each unit of a screen is doing, published where a supervising process can read it after the screen
// died (src/cli/supervisor.h): a page of memory shared between the supervisor and the screen it forked.
// Workers write their slot at each iteration and tile; a fatal signal in a worker records which slot took
// it, then lets the signal kill the process. Cheap: relaxed stores to memory the worker owns alone.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>

#include "src/core/device_info.h"

namespace sdc::activity {

constexpr int MAX_SLOTS = 1024;

// Where a worker is in its work: what a crash there interrupted. A worker is bound to its slot from the moment
// it is pinned to its CPU, so that a crash anywhere on its thread (between tiles, while it generates a case's
// inputs or waits for work) names that CPU.
enum Stage : int32_t {
  STAGE_IDLE = 0,           // pinned, between jobs (case_id: the last case it worked on, "" before any)
  STAGE_INPUTS = 1,         // generating a slice of case_id's inputs
  STAGE_REFERENCE = 2,      // computing case_id's in-process reference (the replay's)
  STAGE_TILE = 3,           // computing tile `tile` of case_id
  STAGE_BETWEEN_TILES = 4,  // in an iteration of case_id, outside any tile (after `tile`; -1: before its first)
  STAGE_PROBE = 5,          // the throughput probe
};

struct Slot {
  std::atomic<int32_t> cpu{-1};
  std::atomic<int32_t> iteration{-1};
  std::atomic<int64_t> tile{-1};
  std::atomic<int32_t> stage{STAGE_IDLE};
  char case_id[120] = {};  // written at each iteration and stage that names a case
};

// The final outputs a screen has written (Board::outputs): its supervisor writes, after the screen died, only
// those it did not, and never replaces one the screen wrote with its own, less complete one. OUT_IN_PROGRESS: the
// in-progress files (outputs.h) are in place; a screen that died before them (in its set-up) left the previous
// screen's, which its supervisor then replaces.
enum Output : int32_t { OUT_PROMETHEUS = 1, OUT_REPORT = 2, OUT_HTML = 4, OUT_HISTORY = 8, OUT_IN_PROGRESS = 16 };

// The GPU of the first miscompare, as the screen knew it (written once, before Board::miscompare_unit; read by
// the supervisor after the screen ended): enough for the supervisor's report to name the GPU as the screen's did.
struct GpuIdentity {
  char name[128] = {}, uuid[96] = {}, pci_bus_id[32] = {}, driver[48] = {}, driver_cuda[16] = {}, runtime[16] = {},
       ecc[8] = {};
  int32_t cc_major = 0, cc_minor = 0, sm_count = 0, emulated = 0;
  uint64_t memory_bytes = 0;
};

struct Board {
  std::atomic<int32_t> crashed_slot{-1};  // the slot whose thread took the fatal signal
  std::atomic<int32_t> crash_signal{0};
  // The first miscompare of the screen, published the moment it is found: a screen that dies afterwards
  // (SIGKILL from the OOM killer, a crash in the report writer) still fails (the supervisor reads it).
  std::atomic<int32_t> miscompares{0};      // 1 once any test computed wrong bits
  std::atomic<int32_t> miscompare_unit{-1};  // its first failing unit (a CPU, or an SM), -1 when none was named
  char miscompare_case[120] = {};
  std::atomic<int32_t> miscompare_device{-1};  // the GPU (CUDA ordinal) of that test; -1: a CPU test
  GpuIdentity miscompare_gpu;                   // that GPU (with miscompare_device >= 0)
  std::atomic<int64_t> miscompare_ms{-1};       // its test's time to fail, in ms since the run started
  // The screen's seed, once set up (seed_set 1): the supervisor's own report gives it.
  std::atomic<uint64_t> seed{0};
  std::atomic<int32_t> seed_set{0};
  std::atomic<int32_t> outputs{0};  // Output bits: the final outputs written so far
  std::atomic<int32_t> exit_slot{-1};  // the worker slot that called exit() in the middle of its work
  // The completion record: set by the screen once its report and outputs are final, with the exit code it
  // returns. A child that exits without it did not finish (a worker or library that called exit(0)).
  std::atomic<int32_t> completed{0};
  std::atomic<int32_t> completed_code{-1};
  Slot slots[MAX_SLOTS];
};

// The board of this process, or null when no supervisor watches it.
Board* board();
void set_board(Board* b);

// The calling worker thread's slot (its worker index), until it changes.
void bind_slot(int slot);
// A worker pinned to `cpu`: binds its slot and publishes the CPU at once (stage idle, no case yet).
void bind_worker(int slot, int cpu);
// Published by the bound worker: the case and iteration it starts, the tile it starts, the tile it finished.
void publish_iteration(int cpu, const char* case_id, int iteration);
void publish_tile(int64_t tile);
void publish_tile_done();
// Published by the bound worker: the stage it enters (Stage), and the case it is for (null: unchanged).
void publish_stage(int32_t stage, const char* case_id = nullptr);
// Published by the screen when a test first shows a miscompare (case, first failing unit or -1, the test's GPU
// or null for a CPU test, its time to fail).
void publish_miscompare(const char* case_id, int unit, const DeviceInfo* gpu = nullptr, double time_to_fail_s = -1);
// The GPU of the first miscompare (board.miscompare_device >= 0), as published.
DeviceInfo miscompare_gpu(const Board& board);
// Published by the screen once set up: its seed.
void publish_seed(uint64_t seed);
// Published by the screen after each final output it wrote (Output).
void publish_output(int32_t output);
// Published by the screen as its last act, after every output: the exit code it returns.
void publish_completion(int code);

// The process an operator would signal to stop this screen: the supervisor when there is one (it passes the
// signal on), else this process. What the lock file and the in-progress report name.
long owner_pid();

// Installs the handlers of the fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) that record the
// crashing slot on the board and then die of the signal as before. Only with a board. They run on the
// thread's alternate signal stack when it has one (AltStack): a stack overflow leaves no room on its own.
void install_crash_handlers();

// An alternate signal stack for the calling thread while it lives (each worker thread has one): a worker whose
// stack overflowed is still named by the crash handler. Constructed and destroyed on the same thread.
class AltStack {
 public:
  AltStack();
  ~AltStack();
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;

 private:
  void* mem_ = nullptr;
  size_t size_ = 0;
  stack_t old_{};
};
// Records, at exit(), the worker slot of the thread that called it (then leaves at once: the other workers
// are still running, and the static destructors would run under them). Only with a board.
void install_exit_watch();

}  // namespace sdc::activity
