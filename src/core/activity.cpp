#include "activity.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace sdc::activity {

namespace {
Board* g_board = nullptr;
thread_local int t_slot = -1;  // the calling worker's slot (not extern: UBSan misreads the TLS wrapper)

void on_fatal(int sig) {
  // Async-signal-safe: a store to shared memory, then the signal again with its default action (the
  // handler was installed with SA_RESETHAND), which kills the process as it would have.
  if (g_board && t_slot >= 0) {
    int32_t none = -1;
    g_board->crashed_slot.compare_exchange_strong(none, t_slot);
    g_board->crash_signal.store(sig);
  }
  raise(sig);
}

void on_exit_call() {
  if (!g_board || t_slot < 0) return;  // the main thread's own exit: the completion record decides
  g_board->exit_slot.store(t_slot);
  _exit(2);
}
}  // namespace

Board* board() { return g_board; }
void set_board(Board* b) { g_board = b; }

long owner_pid() { return static_cast<long>(g_board ? getppid() : getpid()); }

void bind_slot(int slot) { t_slot = slot >= 0 && slot < MAX_SLOTS ? slot : -1; }

void publish_tile(int64_t tile) {
  if (g_board && t_slot >= 0) g_board->slots[t_slot].tile.store(tile, std::memory_order_relaxed);
}

void publish_iteration(int cpu, const char* case_id, int iteration) {
  if (!g_board || t_slot < 0) return;
  Slot& s = g_board->slots[t_slot];
  s.cpu.store(cpu, std::memory_order_relaxed);
  std::strncpy(s.case_id, case_id, sizeof s.case_id - 1);
  s.iteration.store(iteration, std::memory_order_relaxed);
  s.tile.store(-1, std::memory_order_relaxed);
}

void publish_miscompare(const char* case_id, int unit, int gpu) {
  if (!g_board) return;
  int32_t none = 0;
  if (!g_board->miscompares.compare_exchange_strong(none, 1)) return;  // the first one is kept
  std::strncpy(g_board->miscompare_case, case_id, sizeof g_board->miscompare_case - 1);
  g_board->miscompare_unit.store(unit);
  g_board->miscompare_gpu.store(gpu);
}

void publish_completion(int code) {
  if (!g_board) return;
  g_board->completed_code.store(code);
  g_board->completed.store(1);
}

void install_exit_watch() {
  if (g_board) std::atexit(on_exit_call);
}

void install_crash_handlers() {
  if (!g_board) return;
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace sdc::activity
