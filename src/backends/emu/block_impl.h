// The block runner's internals, shared by its three parts: the fiber switch and thread start and end
// (fiber.cpp), the fault and deadlock messages (block_fault.cpp), and the runner with the barrier and the
// warp collectives (block.cpp). Only those include it; the interface is block.h.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "src/backends/emu/block.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SDC_EMU_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define SDC_EMU_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(SDC_EMU_ASAN)
#define SDC_EMU_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(SDC_EMU_TSAN)
#define SDC_EMU_TSAN 1
#endif
#if defined(SDC_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(SDC_EMU_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

// The hand-written switch on x86-64 System V; ucontext elsewhere (and when SDC_EMU_UCONTEXT is defined,
// to test it). swapcontext makes a system call per switch (the signal mask): correct, but slow.
#if defined(__x86_64__) && !defined(SDC_EMU_UCONTEXT)
#define SDC_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

// The functions that hand control to another fiber for good. The sanitizers' switch calls must come
// right before the switch itself: no instrumented code may run in between (ThreadSanitizer would
// attribute a function exit to the fiber switched to), so these are not instrumented at all. GCC's
// no_sanitize drops ThreadSanitizer's function entry and exit hooks too; Clang's keeps them, and only
// disable_sanitizer_instrumentation drops them.
#if defined(__clang__)
#define SDC_EMU_SWITCH_FN __attribute__((noinline, disable_sanitizer_instrumentation))
#else
#define SDC_EMU_SWITCH_FN __attribute__((noinline, no_sanitize("address", "thread")))
#endif

namespace sdc::emu::fiber {

// ---- contexts: a saved stack pointer (x86-64) or a ucontext ----

struct Context {
#if defined(SDC_EMU_ASM_SWITCH)
  void* sp = nullptr;  // first member: the trampoline loads it from a Context*
#else
  ucontext_t uc;
#endif
};

}  // namespace sdc::emu::fiber

#if defined(SDC_EMU_ASM_SWITCH)
extern "C" {
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores the
// stack pointer in *save_sp, and resumes the context whose stack pointer is next_sp (fiber.cpp).
__attribute__((visibility("hidden"))) void sdc_emu_switch(void** save_sp, void* next_sp);
}
// Macros, not functions: they must expand inside the uninstrumented switch functions, where a helper
// would be an instrumented call of its own (and at -O0 not inlined).
#define SDC_EMU_CONTEXT_SWITCH(from, to) sdc_emu_switch(&(from).sp, (to).sp)
#define SDC_EMU_CONTEXT_JUMP(to)        \
  do {                                  \
    void* discard_;                     \
    sdc_emu_switch(&discard_, (to).sp); \
  } while (0)
#else
#define SDC_EMU_CONTEXT_SWITCH(from, to) swapcontext(&(from).uc, &(to).uc)
#define SDC_EMU_CONTEXT_JUMP(to) setcontext(&(to).uc)
#endif

namespace sdc::emu::fiber {

// ---- what a thread can wait at ----

enum class Kind : uint8_t { syncwarp, shfl32, shfl64, ballot, exchange };
using ExchangeFn = void (*)(void*, void* const*);

// One warp collective: what was called, with which mask, and the lanes that have arrived.
struct Pending {
  uint32_t mask = 0;
  uint32_t arrived = 0;
  Kind kind = Kind::syncwarp;
  Shfl mode = Shfl::idx;
  uint32_t width = 0;
  ExchangeFn fn = nullptr;
};

struct Warp {
  uint32_t gone = 0;  // lanes that returned, or lie past the end of the block
  uint32_t npending = 0;
  Pending pending[WARP_SIZE];  // one per distinct mask being waited at; a lane waits at one at a time
  // Each lane's operands and result of the collective it is at.
  uint64_t in[WARP_SIZE];
  uint64_t out[WARP_SIZE];
  int32_t arg[WARP_SIZE];
  void* ptr[WARP_SIZE];
  void* ctx[WARP_SIZE];
};

// A fiber: a kernel thread's stack and saved context, or the run() caller's (the scheduler).
struct Fiber {
  Context ctx;
  char* stack_lo = nullptr;  // lowest usable address; the guard page is just below
  size_t stack_size = 0;
  void* fake = nullptr;  // AddressSanitizer's fake stack while switched out
  void* tsan = nullptr;  // ThreadSanitizer's fiber
  BlockRunner::Impl* owner = nullptr;
  unsigned index = 0;
};

}  // namespace sdc::emu::fiber

namespace sdc::emu {

struct BlockRunner::Impl {
  size_t stack_bytes = 0, slot_bytes = 0, page = 0;
  char* region = nullptr;  // MAX_BLOCK_THREADS slots of a guard page and a stack, reserved at construction
  unsigned ready = 0;      // slots made readable and writable
  std::vector<fiber::Fiber> fibers;
  std::vector<ThreadContext> ctx;
  std::vector<fiber::Warp> warps;
  fiber::Fiber sched;  // run()'s own context

  // The block being run.
  const char* kernel = "";
  Dim3 block_idx;
  void (*body)(void*) = nullptr;
  void* arg = nullptr;
  unsigned n = 0, nwords = 0;
  unsigned live = 0;      // threads not yet returned
  unsigned arrived = 0;   // threads at the block barrier
  unsigned finished = 0;  // threads returned
  uint64_t runnable[MAX_BLOCK_THREADS / 64];
  uint64_t at_barrier[MAX_BLOCK_THREADS / 64];
  uint64_t switches = 0;
  bool failed = false;
  bool sched_bounds_pending = false;
  std::string fault;
  std::exception_ptr error;

  int next_runnable(unsigned i) const {
    unsigned s = i + 1 < n ? i + 1 : 0;
    const unsigned w = s / 64;
    if (uint64_t m = runnable[w] & (~0ull << (s % 64))) return static_cast<int>(w * 64 + __builtin_ctzll(m));
    for (unsigned k = w + 1; k < nwords; ++k)
      if (runnable[k]) return static_cast<int>(k * 64 + __builtin_ctzll(runnable[k]));
    for (unsigned k = 0; k <= w; ++k)
      if (runnable[k]) return static_cast<int>(k * 64 + __builtin_ctzll(runnable[k]));
    return -1;
  }
  void clear_runnable(unsigned i) { runnable[i / 64] &= ~(1ull << (i % 64)); }
  bool has_returned(unsigned i) const { return (warps[i / WARP_SIZE].gone >> (i % WARP_SIZE)) & 1u; }
  void release_barrier() {
    for (unsigned k = 0; k < nwords; ++k) {
      runnable[k] |= at_barrier[k];
      at_barrier[k] = 0;
    }
    arrived = 0;
  }
};

}  // namespace sdc::emu

namespace sdc::emu::fiber {

using Impl = BlockRunner::Impl;

// ---- switching (fiber.cpp) ----

// Sets up f's context to start in sdc_emu_fiber_main with the given floating-point control state.
void make_context(Fiber& f, uint32_t csr, uint16_t fpucw);

// Suspends fiber `from` and resumes `to`; returns when something switches back to `from`.
inline void switch_fiber(Impl& b, Fiber& from, Fiber& to) {
  ++b.switches;
#if defined(SDC_EMU_ASAN)
  __sanitizer_start_switch_fiber(&from.fake, to.stack_lo, to.stack_size);
#endif
#if defined(SDC_EMU_TSAN)
  __tsan_switch_to_fiber(to.tsan, 0);
#endif
  SDC_EMU_CONTEXT_SWITCH(from.ctx, to.ctx);
#if defined(SDC_EMU_ASAN)
  const void* bottom;
  size_t size;
  __sanitizer_finish_switch_fiber(from.fake, &bottom, &size);
#endif
}

// Leaves the current fiber for good (after a fault) and resumes run(). The fiber's frames stay where
// they are, unwound by nobody; its stack is reused by the next block.
[[noreturn]] SDC_EMU_SWITCH_FN void abandon(Impl& b);

// ---- fault messages (block_fault.cpp) ----

// "lane 3" or "lanes 0-3,8".
std::string lane_list(uint32_t lanes);
// "kernel K block (x,y,z)".
std::string prefix(const Impl& b);
// "thread 33 [threadIdx (1,1,0), warp 1 lane 1]" or "threads 33-63 [threadIdx (1,1,0)..(31,1,0), warp 1 lanes 1-31]".
std::string threads(const Impl& b, unsigned first, unsigned last);
// The collective as the kernel called it: "__shfl_sync(mask 0xffffffff, width 32)".
std::string call_name(Kind kind, Shfl mode, uint32_t mask, uint32_t width);
inline std::string call_name(const Pending& p) { return call_name(p.kind, p.mode, p.mask, p.width); }
// The deadlock: which threads have not returned and what each group of them waits at.
std::string deadlock_message(const Impl& b);

// Records the fault and leaves the block. make() builds the message, so that every string built for it
// is destroyed before the switch: the abandoned frames must own no memory.
template <typename Make>
[[noreturn]] void fail(Impl& b, const Make& make) {
  b.failed = true;
  b.fault = make();
  abandon(b);
}

template <typename What>
[[noreturn]] void fail_thread(Impl& b, const ThreadContext& t, const What& what) {
  fail(b, [&] { return fmt::format("{}: {}: {}", prefix(b), threads(b, t.linear, t.linear), what()); });
}

}  // namespace sdc::emu::fiber
