// What each unit of a screen is doing, published where a supervising process can read it after the screen
// died (src/cli/supervisor.h): a page of memory shared between the supervisor and the screen it forked.
// Workers write their slot at each iteration and tile; a fatal signal in a worker records which slot took
// it, then lets the signal kill the process. Cheap: relaxed stores to memory the worker owns alone.
#pragma once

#include <atomic>
#include <cstdint>

namespace sdc::activity {

constexpr int MAX_SLOTS = 1024;

struct Slot {
  std::atomic<int32_t> cpu{-1};
  std::atomic<int32_t> iteration{-1};
  std::atomic<int64_t> tile{-1};
  char case_id[120] = {};  // written at each iteration, before the tiles
};

struct Board {
  std::atomic<int32_t> crashed_slot{-1};  // the slot whose thread took the fatal signal
  std::atomic<int32_t> crash_signal{0};
  // The first miscompare of the screen, published the moment it is found: a screen that dies afterwards
  // (SIGKILL from the OOM killer, a crash in the report writer) still fails (the supervisor reads it).
  std::atomic<int32_t> miscompares{0};      // 1 once any test computed wrong bits
  std::atomic<int32_t> miscompare_unit{-1};  // its first failing unit (a CPU, or an SM), -1 when none was named
  std::atomic<int32_t> miscompare_gpu{-1};   // the CUDA ordinal of that SM's GPU; -1: the unit is a CPU
  char miscompare_case[120] = {};
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
// Published by the bound worker: the case and iteration it starts, the tile it starts.
void publish_iteration(int cpu, const char* case_id, int iteration);
void publish_tile(int64_t tile);
// Published by the screen when a test first shows a miscompare (case, first failing unit or -1, and the unit's
// GPU when it is an SM).
void publish_miscompare(const char* case_id, int unit, int gpu = -1);
// Published by the screen as its last act, after every output: the exit code it returns.
void publish_completion(int code);

// The process an operator would signal to stop this screen: the supervisor when there is one (it passes the
// signal on), else this process. What the lock file and the in-progress report name.
long owner_pid();

// Installs the handlers of the fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) that record the
// crashing slot on the board and then die of the signal as before. Only with a board.
void install_crash_handlers();
// Records, at exit(), the worker slot of the thread that called it (then leaves at once: the other workers
// are still running, and the static destructors would run under them). Only with a board.
void install_exit_watch();

}  // namespace sdc::activity
