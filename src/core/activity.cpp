#include "src/core/activity.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <string>

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
  if (!g_board || t_slot < 0) return;
  g_board->slots[t_slot].tile.store(tile, std::memory_order_relaxed);
  g_board->slots[t_slot].stage.store(STAGE_TILE, std::memory_order_relaxed);
}

void publish_tile_done() {
  if (g_board && t_slot >= 0) g_board->slots[t_slot].stage.store(STAGE_BETWEEN_TILES, std::memory_order_relaxed);
}

void bind_worker(int slot, int cpu) {
  bind_slot(slot);
  if (!g_board || t_slot < 0) return;
  Slot& s = g_board->slots[t_slot];
  s.cpu.store(cpu, std::memory_order_relaxed);
  s.case_id[0] = '\0';
  s.iteration.store(-1, std::memory_order_relaxed);
  s.tile.store(-1, std::memory_order_relaxed);
  s.stage.store(STAGE_IDLE, std::memory_order_relaxed);
}

void publish_stage(int32_t stage, const char* case_id) {
  if (!g_board || t_slot < 0) return;
  Slot& s = g_board->slots[t_slot];
  if (case_id) {
    std::strncpy(s.case_id, case_id, sizeof s.case_id - 1);
    s.iteration.store(-1, std::memory_order_relaxed);
    s.tile.store(-1, std::memory_order_relaxed);
  }
  s.stage.store(stage, std::memory_order_relaxed);
}

void publish_iteration(int cpu, const char* case_id, int iteration) {
  if (!g_board || t_slot < 0) return;
  Slot& s = g_board->slots[t_slot];
  s.cpu.store(cpu, std::memory_order_relaxed);
  std::strncpy(s.case_id, case_id, sizeof s.case_id - 1);
  s.iteration.store(iteration, std::memory_order_relaxed);
  s.tile.store(-1, std::memory_order_relaxed);
  s.stage.store(STAGE_BETWEEN_TILES, std::memory_order_relaxed);
}

namespace {
template <size_t N>
void copy_text(char (&to)[N], const std::string& from) {
  std::strncpy(to, from.c_str(), N - 1);
}
template <size_t N>
std::string text_of(const char (&from)[N]) {
  return std::string(from, strnlen(from, N));
}
}  // namespace

void publish_miscompare(const char* case_id, int unit, const DeviceInfo* gpu, double time_to_fail_s) {
  if (!g_board) return;
  int32_t none = 0;
  if (!g_board->miscompares.compare_exchange_strong(none, 1)) return;  // the first one is kept
  std::strncpy(g_board->miscompare_case, case_id, sizeof g_board->miscompare_case - 1);
  if (gpu) {
    GpuIdentity& g = g_board->miscompare_gpu;
    copy_text(g.name, gpu->name);
    copy_text(g.uuid, gpu->uuid);
    copy_text(g.pci_bus_id, gpu->pci_bus_id);
    copy_text(g.driver, gpu->driver);
    copy_text(g.driver_cuda, gpu->driver_cuda);
    copy_text(g.runtime, gpu->runtime);
    copy_text(g.ecc, gpu->ecc);
    g.cc_major = gpu->cc_major;
    g.cc_minor = gpu->cc_minor;
    g.sm_count = gpu->sm_count;
    g.emulated = gpu->emulated;
    g.memory_bytes = gpu->memory_bytes;
  }
  g_board->miscompare_device.store(gpu ? gpu->index : -1);
  g_board->miscompare_ms.store(time_to_fail_s >= 0 ? static_cast<int64_t>(time_to_fail_s * 1000) : -1);
  g_board->miscompare_unit.store(unit);
}

DeviceInfo miscompare_gpu(const Board& board) {
  const GpuIdentity& g = board.miscompare_gpu;
  DeviceInfo d;
  d.index = board.miscompare_device.load();
  d.name = text_of(g.name);
  d.uuid = text_of(g.uuid);
  d.pci_bus_id = text_of(g.pci_bus_id);
  d.driver = text_of(g.driver);
  d.driver_cuda = text_of(g.driver_cuda);
  d.runtime = text_of(g.runtime);
  d.ecc = text_of(g.ecc);
  d.cc_major = g.cc_major;
  d.cc_minor = g.cc_minor;
  d.sm_count = g.sm_count;
  d.emulated = g.emulated != 0;
  d.memory_bytes = g.memory_bytes;
  return d;
}

void publish_seed(uint64_t seed) {
  if (!g_board) return;
  g_board->seed.store(seed);
  g_board->seed_set.store(1);
}

void publish_output(int32_t output) {
  if (g_board) g_board->outputs.fetch_or(output);
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
  sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

AltStack::AltStack() {
  // Room for the handler under a sanitizer too; the guard page below it stays unmapped (PROT_NONE).
  const long page = sysconf(_SC_PAGESIZE);
  size_ = static_cast<size_t>(std::max<long>(SIGSTKSZ, 64 * 1024)) + static_cast<size_t>(page);
  void* m = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) return;  // no alternate stack: a crash is still named, a stack overflow is not
  mprotect(m, static_cast<size_t>(page), PROT_NONE);
  stack_t st{};
  st.ss_sp = static_cast<char*>(m) + page;
  st.ss_size = size_ - static_cast<size_t>(page);
  if (sigaltstack(&st, &old_) != 0) {
    munmap(m, size_);
    return;
  }
  mem_ = m;
}

AltStack::~AltStack() {
  if (!mem_) return;
  sigaltstack(&old_, nullptr);  // the thread's previous one (a sanitizer's), or none
  munmap(mem_, size_);
}

}  // namespace sdc::activity
