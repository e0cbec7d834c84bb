// The shared-memory race checker (racecheck.h): the __tsan_* entry points g++ 12's instrumentation calls,
// defined here (this file itself is compiled without instrumentation), and the per-byte shadow of each
// stream thread's static TLS block. Linked only into the racecheck_tests executable.
#include "src/backends/emu/racecheck.h"

#include <fmt/format.h>
#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "src/backends/emu/bankcheck.h"
#include "src/backends/emu/block.h"
#include "src/backends/emu/emu_device.h"

namespace sdc::emu::racecheck {
namespace {

// The calling thread's static TLS block of the module that holds this code (the program).
struct TlsRange {
  uintptr_t lo = 0, hi = 0;
  bool known = false;
};
thread_local TlsRange t_tls;

int find_tls(dl_phdr_info* info, size_t, void* out) {
  const uintptr_t self = reinterpret_cast<uintptr_t>(&find_tls) - info->dlpi_addr;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && self - ph.p_vaddr < ph.p_memsz) mine = true;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS) {
      auto* r = static_cast<TlsRange*>(out);
      r->lo = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
      r->hi = r->lo + info->dlpi_phdr[i].p_memsz;
    }
  return 1;
}

const TlsRange& tls() {
  if (!t_tls.known) {
    dl_iterate_phdr(find_tls, &t_tls);
    t_tls.known = true;
  }
  return t_tls;
}

// Per byte: the interval (block number and barrier count) and thread of the last write, and of the reads
// of the current interval (several readers: any other thread's write races).
struct Cell {
  uint64_t w_block = 0, r_block = 0;
  uint32_t w_epoch = 0, r_epoch = 0;
  int32_t w_thread = -1, r_thread = -1;
  bool r_many = false;
};
// Per byte, once a kernel on this thread has issued a cp.async (empty before): the block whose copies are in flight
// to it (0: none), how many, and the thread that issued the last.
struct Pending {
  uint64_t block = 0;
  int32_t thread = -1;
  uint32_t count = 0;
};
thread_local std::vector<Pending> t_pending;
// The shadow of the calling stream thread's shared memory: its static TLS block (every __shared__ array), then its
// dynamic shared memory buffer (dynamic_shared()).
thread_local std::vector<Cell> t_shadow;

// The calling thread's dynamic shared memory (dynamic_shared(), which allocates it on the first call), asked once:
// every instrumented access, to any memory, comes through here.
thread_local uintptr_t t_dynamic = 0;
uintptr_t dynamic_base() {
  if (!t_dynamic) t_dynamic = reinterpret_cast<uintptr_t>(dynamic_shared());
  return t_dynamic;
}

size_t static_bytes() { return tls().hi - tls().lo; }

// The offset of the byte at a in the shadow, or -1 when it is not shared memory (or is the emulation's own state);
// n is cut to the bytes of [a, a + n) that lie in the same region.
int64_t shared_offset(uintptr_t a, size_t& n) {
  const TlsRange& r = tls();
  if (a - r.lo < r.hi - r.lo) {
    // The emulation's own per-thread state, which the built-ins read (threadIdx is here().thread_idx): only
    // the block runner, which is not instrumented, writes it.
    if (a - reinterpret_cast<uintptr_t>(&current_thread) < sizeof current_thread) return -1;
    n = std::min<size_t>(n, r.hi - a);
    return static_cast<int64_t>(a - r.lo);
  }
  const uintptr_t dyn = dynamic_base();
  if (a - dyn >= kDynamicSharedBytes) return -1;
  n = std::min<size_t>(n, dyn + kDynamicSharedBytes - a);
  return static_cast<int64_t>(static_bytes() + (a - dyn));
}

// A shadow offset's offset in its own region (the static __shared__ arrays, or the dynamic shared memory).
int64_t region_offset(int64_t at) {
  const auto s = static_cast<int64_t>(static_bytes());
  return at < s ? at : at - s;
}

size_t shadow_bytes() { return static_bytes() + kDynamicSharedBytes; }

Cell* shadow(int64_t offset) {
  if (t_shadow.empty()) t_shadow.assign(shadow_bytes(), Cell{});
  return &t_shadow[static_cast<size_t>(offset)];
}

std::mutex g_m;
std::vector<Race> g_races;
std::atomic<uint64_t> g_count{0}, g_accesses{0};

// The watched global range (watch()): its bounds, and per word its last writer.
std::atomic<uintptr_t> g_watch_lo{0}, g_watch_hi{0};
std::vector<Writer> g_writers;

void record_store(uintptr_t a, size_t n, const ThreadContext& t) {
  const uintptr_t lo = g_watch_lo.load(std::memory_order_relaxed), hi = g_watch_hi.load(std::memory_order_relaxed);
  if (a + n <= lo || a >= hi) return;
  const uintptr_t first = (a < lo ? lo : a) - lo, last = (a + n > hi ? hi : a + n) - lo;  // bytes into the range
  for (uintptr_t w = first / 4; w < (last + 3) / 4; ++w) {
    Writer& x = g_writers[w];
    if (x.written && (x.block != t.block_idx.x || x.thread != t.linear)) x.several = true;
    x.written = true, x.block = t.block_idx.x, x.thread = t.linear;
  }
}

void report(const char* kind, const char* region, int64_t offset, int first, const ThreadContext& t) {
  if (g_count++ >= 1000) return;
  Race r{current_kernel(), t.block_idx.x, static_cast<unsigned>(first), t.linear, kind, region, offset};
  std::lock_guard<std::mutex> l(g_m);
  g_races.push_back(std::move(r));
}

// A report about the shadow's byte `at` (shared_offset), in its region's terms.
void report_at(const char* kind, uint64_t at, int first, const ThreadContext& t) {
  const auto offset = static_cast<int64_t>(at);
  report(kind, at < static_bytes() ? "static" : "dynamic", region_offset(offset), first, t);
}

// plain: neither volatile nor atomic (what the bank-conflict and sector counters count); pc: the access's return
// address.
void access(const volatile void* p, size_t n, bool write, const void* pc = nullptr, bool plain = false) {
  const ThreadContext* t = current_thread;
  if (!t) return;  // not kernel code
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (write) record_store(a, n, *t);
  // Most accesses are to neither region (the fibers' stacks, global memory): two compares. The dynamic buffer's
  // region includes the guard bytes on either side of it (kDynamicSharedGuard).
  const TlsRange& r = tls();
  const uintptr_t dyn = dynamic_base();
  if (a - r.lo >= r.hi - r.lo && a - (dyn - kDynamicSharedGuard) >= kDynamicSharedBytes + 2 * kDynamicSharedGuard) {
    if (plain) bankcheck::record_global(a, static_cast<unsigned>(n), write, pc);  // sectors, where watched
    return;
  }
  // Dynamic shared memory outside what the launch asked for (before it, or beyond its smem_bytes): on a GPU,
  // outside the block's shared memory. Reported at the first such byte.
  if (a - r.lo >= r.hi - r.lo) {
    const uintptr_t end = dyn + dynamic_shared_bytes();
    if (a < dyn || a + n > end) {
      const int64_t first = a < dyn ? -static_cast<int64_t>(dyn - a) : static_cast<int64_t>(std::max(a, end) - dyn);
      return report("out-of-bounds", "dynamic", first, static_cast<int>(t->linear), *t);
    }
  }
  const int64_t at = shared_offset(a, n);
  if (at < 0) return;  // the emulation's own state
  ++g_accesses;
  if (plain && bankcheck::on()) bankcheck::record(region_offset(at), static_cast<unsigned>(n), write, pc);
  Cell* cells = shadow(at);
  const uint64_t block = block_serial();
  const uint32_t epoch = static_cast<uint32_t>(t->epoch) + 1;  // 0: never touched
  const auto me = static_cast<int32_t>(t->linear);
  const Pending* pending = t_pending.empty() ? nullptr : &t_pending[static_cast<size_t>(at)];
  for (size_t i = 0; i < n; ++i) {
    Cell& c = cells[i];
    const uint64_t b = static_cast<uint64_t>(at) + i;
    if (pending && pending[i].block == block) return report_at("pending-copy", b, pending[i].thread, *t);  // anyone
    const bool written_now = c.w_block == block && c.w_epoch == epoch && c.w_thread != me;
    const bool read_now = c.r_block == block && c.r_epoch == epoch;
    if (write) {
      if (written_now) return report_at("write-write", b, c.w_thread, *t);
      if (read_now && (c.r_many || c.r_thread != me)) return report_at("read-write", b, c.r_thread, *t);
      c.w_block = block, c.w_epoch = epoch, c.w_thread = me;
    } else {
      if (written_now) return report_at("write-read", b, c.w_thread, *t);
      if (!read_now) {
        c.r_block = block, c.r_epoch = epoch, c.r_thread = me, c.r_many = false;
      } else if (c.r_thread != me) {
        c.r_many = true;
      }
    }
  }
}

// cp.async (block.h, async_copy_hook): marks [p, p + n) as having a copy in flight from the calling thread, or
// clears the mark when the copy lands. A destination that is not shared memory is reported.
void async_copy(void* p, size_t n, bool in_flight) {
  const ThreadContext* t = current_thread;
  if (!t) return;
  const int64_t at = shared_offset(reinterpret_cast<uintptr_t>(p), n);  // a copy never straddles two regions
  if (at < 0) {
    if (in_flight)
      report("not-shared", "global", static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)), static_cast<int>(t->linear),
             *t);
    return;
  }
  if (in_flight && bankcheck::on())
    bankcheck::record(region_offset(at), static_cast<unsigned>(n), true, __builtin_return_address(0));
  if (t_pending.empty()) t_pending.assign(shadow_bytes(), Pending{});
  const uint64_t block = block_serial();
  for (size_t i = 0; i < n; ++i) {
    Pending& x = t_pending[static_cast<size_t>(at) + i];
    if (x.block != block) x = {block, -1, 0};  // marks of an earlier block are void
    if (in_flight) {
      ++x.count, x.thread = static_cast<int32_t>(t->linear);
    } else if (x.count > 0 && --x.count == 0) {
      x.block = 0;  // every copy to it has landed
    }
  }
}

// Installs async_copy as the block runner's cp.async hook when the checker is linked.
const bool g_hooked = (async_copy_hook = &async_copy, true);

}  // namespace

std::string Race::describe() const {
  if (kind == "out-of-bounds")
    return fmt::format(
        "out-of-bounds access in kernel {} block {}: thread {} at dynamic shared byte {:#x}, outside the "
        "launch's dynamic shared memory",
        kernel, block, second, offset);
  if (kind == "pending-copy")
    return fmt::format(
        "access to a cp.async copy in flight in kernel {} block {}: thread {} at {} shared byte {:#x}, "
        "copied there by thread {} and not yet waited for (a wait and a barrier must come between)",
        kernel, block, second, region, offset, first);
  if (kind == "not-shared")
    return fmt::format("cp.async into memory that is not shared memory in kernel {} block {}: thread {} at {:#x}",
                       kernel, block, second, offset);
  return fmt::format("{} race in kernel {} block {}: threads {} and {} at {} shared byte {:#x}", kind, kernel, block,
                     first, second, region, offset);
}

std::vector<Race> races() {
  std::lock_guard<std::mutex> l(g_m);
  return g_races;
}
uint64_t race_count() { return g_count; }
uint64_t shared_accesses() { return g_accesses; }
void reset() {
  std::lock_guard<std::mutex> l(g_m);
  g_races.clear();
  g_count = 0;
  g_accesses = 0;
}

void watch(const void* begin, uint64_t bytes) {
  unwatch();
  g_writers.assign(bytes / 4, Writer{});
  const auto lo = reinterpret_cast<uintptr_t>(begin);
  g_watch_lo = lo;
  g_watch_hi = lo + bytes / 4 * 4;
}
void unwatch() { g_watch_lo = g_watch_hi = 0; }
std::vector<Writer> writers() { return g_writers; }

}  // namespace sdc::emu::racecheck

// ---- the entry points of g++ 12's -fsanitize=thread instrumentation ----
using sdc::emu::racecheck::access;

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void** p, void*) { access(p, sizeof(void*), true); }
#define SDC_RC_RW(N)                                                                                 \
  void __tsan_read##N(void* p) { access(p, N, false, __builtin_return_address(0), true); }           \
  void __tsan_write##N(void* p) { access(p, N, true, __builtin_return_address(0), true); }           \
  void __tsan_volatile_read##N(void* p) { access(p, N, false); }                                     \
  void __tsan_volatile_write##N(void* p) { access(p, N, true); }                                     \
  void __tsan_unaligned_read##N(void* p) { access(p, N, false, __builtin_return_address(0), true); } \
  void __tsan_unaligned_write##N(void* p) { access(p, N, true, __builtin_return_address(0), true); }
SDC_RC_RW(1)
SDC_RC_RW(2)
SDC_RC_RW(4)
SDC_RC_RW(8)
SDC_RC_RW(16)
#undef SDC_RC_RW
void __tsan_read_range(void* p, unsigned long n) { access(p, n, false, __builtin_return_address(0), true); }
void __tsan_write_range(void* p, unsigned long n) { access(p, n, true, __builtin_return_address(0), true); }

// The instrumentation replaces an atomic operation by the call: the hook performs it (sequentially
// consistent, always at least as strong as asked). An atomic access counts as a write or a read like any.
#define SDC_SC __ATOMIC_SEQ_CST
#define SDC_RC_ATOMIC(N, T)                                                            \
  T __tsan_atomic##N##_load(const volatile T* a, int) {                                \
    access(a, sizeof(T), false);                                                       \
    return __atomic_load_n(a, SDC_SC);                                                 \
  }                                                                                    \
  void __tsan_atomic##N##_store(volatile T* a, T v, int) {                             \
    access(a, sizeof(T), true);                                                        \
    __atomic_store_n(a, v, SDC_SC);                                                    \
  }                                                                                    \
  T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                             \
    access(a, sizeof(T), true);                                                        \
    return __atomic_exchange_n(a, v, SDC_SC);                                          \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                            \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_add(a, v, SDC_SC);                                           \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                            \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_sub(a, v, SDC_SC);                                           \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                            \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_and(a, v, SDC_SC);                                           \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                             \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_or(a, v, SDC_SC);                                            \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                            \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_xor(a, v, SDC_SC);                                           \
  }                                                                                    \
  T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                           \
    access(a, sizeof(T), true);                                                        \
    return __atomic_fetch_nand(a, v, SDC_SC);                                          \
  }                                                                                    \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) { \
    access(a, sizeof(T), true);                                                        \
    return __atomic_compare_exchange_n(a, c, v, false, SDC_SC, SDC_SC);                \
  }                                                                                    \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {   \
    access(a, sizeof(T), true);                                                        \
    return __atomic_compare_exchange_n(a, c, v, true, SDC_SC, SDC_SC);                 \
  }
SDC_RC_ATOMIC(8, uint8_t)
SDC_RC_ATOMIC(16, uint16_t)
SDC_RC_ATOMIC(32, uint32_t)
SDC_RC_ATOMIC(64, uint64_t)
#undef SDC_RC_ATOMIC
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(SDC_SC); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(SDC_SC); }
#undef SDC_SC
}
