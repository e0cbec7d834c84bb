// The block runner: fibers, the round-robin scheduler, the block barrier and the warp collectives.
//
// Every thread of a block is a fiber with its own stack. A thread that must wait (a barrier or a
// collective not yet complete) switches straight to the next runnable thread in thread order; there
// is no scheduler loop between them, so a wait costs one switch. The last thread to arrive at a barrier
// or collective completes it (computes every lane's result, marks the waiters runnable) and goes on. When
// the last thread returns, or none can run, control goes back to run() on the caller's stack.
//
// A fault found inside a fiber is recorded and the fiber jumps back to run(), which throws: an exception
// must not unwind across a switch (the fiber's frames end in the trampoline, not in run()).
#include "block.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

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

namespace sdc::emu {

__thread ThreadContext* current_thread = nullptr;

namespace {

// ---- contexts: a saved stack pointer (x86-64) or a ucontext ----

struct Context {
#if defined(SDC_EMU_ASM_SWITCH)
  void* sp = nullptr;  // first member: the trampoline loads it from a Context*
#else
  ucontext_t uc;
#endif
};

}  // namespace
}  // namespace sdc::emu

#if defined(SDC_EMU_ASM_SWITCH)
extern "C" {
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores the
// stack pointer in *save_sp, and resumes the context whose stack pointer is next_sp.
__attribute__((visibility("hidden"))) void sdc_emu_switch(void** save_sp, void* next_sp);
// Where a new fiber starts: calls r13(r12) with a 16-byte-aligned stack; the call returns the Context
// to resume, whose stack it switches to without saving anything (the fiber is done).
__attribute__((visibility("hidden"))) void sdc_emu_trampoline();
}

// The saved frame, from the saved stack pointer up: MXCSR (4 bytes) and the x87 control word (2 bytes)
// in one 8-byte slot, r15, r14, r13, r12, rbx, rbp, the return address. 64 bytes.
asm(R"(
  .pushsection .text
  .p2align 4
  .globl sdc_emu_switch
  .hidden sdc_emu_switch
  .type sdc_emu_switch, @function
sdc_emu_switch:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  pushq %rbx
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbx, 0
  pushq %r12
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r12, 0
  pushq %r13
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r13, 0
  pushq %r14
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r14, 0
  pushq %r15
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %r15, 0
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
.Lsdc_emu_resume:
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %r15
  .cfi_adjust_cfa_offset -8
  .cfi_restore %r15
  popq %r14
  .cfi_adjust_cfa_offset -8
  .cfi_restore %r14
  popq %r13
  .cfi_adjust_cfa_offset -8
  .cfi_restore %r13
  popq %r12
  .cfi_adjust_cfa_offset -8
  .cfi_restore %r12
  popq %rbx
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbx
  popq %rbp
  .cfi_adjust_cfa_offset -8
  .cfi_restore %rbp
  ret
  .cfi_endproc
  .size sdc_emu_switch, .-sdc_emu_switch

  .p2align 4
  .globl sdc_emu_trampoline
  .hidden sdc_emu_trampoline
  .type sdc_emu_trampoline, @function
sdc_emu_trampoline:
  .cfi_startproc
  .cfi_undefined %rip
  endbr64
  movq %r12, %rdi
  callq *%r13
  movq (%rax), %rsp
  jmp .Lsdc_emu_resume
  .cfi_endproc
  .size sdc_emu_trampoline, .-sdc_emu_trampoline
  .popsection
)");
#endif

namespace sdc::emu {
namespace {

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

}  // namespace

struct BlockRunner::Impl {
  size_t stack_bytes = 0, slot_bytes = 0, page = 0;
  char* region = nullptr;  // MAX_BLOCK_THREADS slots of a guard page and a stack, reserved at construction
  unsigned ready = 0;      // slots made readable and writable
  std::vector<Fiber> fibers;
  std::vector<ThreadContext> ctx;
  std::vector<Warp> warps;
  Fiber sched;  // run()'s own context

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

namespace {

using Impl = BlockRunner::Impl;

// ---- switching ----

#if defined(SDC_EMU_ASM_SWITCH)
extern "C" __attribute__((visibility("hidden"))) Context* sdc_emu_fiber_main(void* fiber);

void make_context(Fiber& f, uint32_t csr, uint16_t fpucw) {
  // The frame sdc_emu_switch would have saved, returning into the trampoline with the stack pointer at
  // the (page-aligned) top of the stack, so the trampoline's call sees the alignment the ABI wants.
  auto* top = reinterpret_cast<uint64_t*>(f.stack_lo + f.stack_size);
  uint64_t* sp = top - 8;
  sp[0] = csr | (static_cast<uint64_t>(fpucw) << 32);
  sp[1] = 0;                                                 // r15
  sp[2] = 0;                                                 // r14
  sp[3] = reinterpret_cast<uintptr_t>(&sdc_emu_fiber_main);  // r13
  sp[4] = reinterpret_cast<uintptr_t>(&f);                   // r12
  sp[5] = 0;                                                 // rbx
  sp[6] = 0;                                                 // rbp
  sp[7] = reinterpret_cast<uintptr_t>(&sdc_emu_trampoline);  // return address
  f.ctx.sp = sp;
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
extern "C" __attribute__((visibility("hidden"))) void sdc_emu_fiber_entry(unsigned hi, unsigned lo);

void make_context(Fiber& f, uint32_t, uint16_t) {
  if (getcontext(&f.ctx.uc) != 0) throw std::system_error(errno, std::generic_category(), "getcontext");
  f.ctx.uc.uc_stack.ss_sp = f.stack_lo;
  f.ctx.uc.uc_stack.ss_size = f.stack_size;
  f.ctx.uc.uc_link = nullptr;
  const auto p = reinterpret_cast<uintptr_t>(&f);
  makecontext(&f.ctx.uc, reinterpret_cast<void (*)()>(&sdc_emu_fiber_entry), 2, static_cast<unsigned>(p >> 32),
              static_cast<unsigned>(p));
}
#define SDC_EMU_CONTEXT_SWITCH(from, to) swapcontext(&(from).uc, &(to).uc)
#define SDC_EMU_CONTEXT_JUMP(to) setcontext(&(to).uc)
#endif

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
[[noreturn]] SDC_EMU_SWITCH_FN void abandon(Impl& b) {
#if defined(SDC_EMU_ASAN)
  __sanitizer_start_switch_fiber(nullptr, b.sched.stack_lo, b.sched.stack_size);
#endif
#if defined(SDC_EMU_TSAN)
  __tsan_switch_to_fiber(b.sched.tsan, 0);
#endif
  SDC_EMU_CONTEXT_JUMP(b.sched.ctx);
  __builtin_unreachable();
}

// ---- fault messages ----

std::string lane_list(uint32_t lanes) {
  std::string s;
  for (unsigned l = 0; l < WARP_SIZE;) {
    if (!((lanes >> l) & 1u)) {
      ++l;
      continue;
    }
    unsigned e = l;
    while (e + 1 < WARP_SIZE && ((lanes >> (e + 1)) & 1u)) ++e;
    if (!s.empty()) s += ',';
    s += e == l ? fmt::format("{}", l) : fmt::format("{}-{}", l, e);
    l = e + 1;
  }
  return fmt::format("{} {}", __builtin_popcount(lanes) == 1 ? "lane" : "lanes", s);
}

std::string prefix(const Impl& b) {
  return fmt::format("kernel {} block ({},{},{})", b.kernel, b.block_idx.x, b.block_idx.y, b.block_idx.z);
}

std::string thread_idx(const ThreadContext& t) {
  return fmt::format("({},{},{})", t.thread_idx.x, t.thread_idx.y, t.thread_idx.z);
}

// "thread 33 [threadIdx (1,1,0), warp 1 lane 1]" or "threads 33-63 [threadIdx (1,1,0)..(31,1,0), warp 1 lanes 1-31]".
std::string threads(const Impl& b, unsigned first, unsigned last) {
  const ThreadContext& f = b.ctx[first];
  const ThreadContext& l = b.ctx[last];
  if (first == last)
    return fmt::format("thread {} [threadIdx {}, warp {} lane {}]", first, thread_idx(f), f.warp, f.lane);
  const std::string where = f.warp == l.warp ? fmt::format("warp {} lanes {}-{}", f.warp, f.lane, l.lane)
                                             : fmt::format("warps {}-{}", f.warp, l.warp);
  return fmt::format("threads {}-{} [threadIdx {}..{}, {}]", first, last, thread_idx(f), thread_idx(l), where);
}

std::string call_name(Kind kind, Shfl mode, uint32_t mask, uint32_t width) {
  switch (kind) {
    case Kind::syncwarp: return fmt::format("__syncwarp(mask {:#010x})", mask);
    case Kind::ballot: return fmt::format("__ballot_sync(mask {:#010x})", mask);
    case Kind::exchange: return fmt::format("a warp exchange (mma.sync) with mask {:#010x}", mask);
    case Kind::shfl32:
    case Kind::shfl64: {
      const char* name = mode == Shfl::idx    ? "__shfl_sync"
                         : mode == Shfl::up   ? "__shfl_up_sync"
                         : mode == Shfl::down ? "__shfl_down_sync"
                                              : "__shfl_xor_sync";
      return fmt::format("{}(mask {:#010x}, width {}{})", name, mask, width, kind == Kind::shfl64 ? ", 64-bit" : "");
    }
  }
  return "?";
}
std::string call_name(const Pending& p) { return call_name(p.kind, p.mode, p.mask, p.width); }

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

// What blocked thread i waits at.
std::string waiting_at(const Impl& b, unsigned i) {
  if ((b.at_barrier[i / 64] >> (i % 64)) & 1u)
    return fmt::format("__syncthreads ({} of the {} threads still running have arrived)", b.arrived, b.live);
  const Warp& w = b.warps[i / WARP_SIZE];
  const uint32_t bit = 1u << (i % WARP_SIZE);
  for (unsigned k = 0; k < w.npending; ++k) {
    const Pending& p = w.pending[k];
    if (p.arrived & bit)
      return fmt::format("{}, which waits for {} of warp {}", call_name(p), lane_list(p.mask & ~p.arrived),
                         i / WARP_SIZE);
  }
  return "nothing known";
}

std::string deadlock_message(const Impl& b) {
  std::string s = fmt::format("{}: deadlock: {} of {} threads have not returned and none can go on:", prefix(b),
                              b.n - b.finished, b.n);
  constexpr unsigned MAX_GROUPS = 24;
  unsigned groups = 0, more = 0;
  for (unsigned i = 0; i < b.n;) {
    if (b.has_returned(i)) {
      ++i;
      continue;
    }
    const std::string what = waiting_at(b, i);
    unsigned e = i;
    while (e + 1 < b.n && !b.has_returned(e + 1) && waiting_at(b, e + 1) == what) ++e;
    if (groups++ < MAX_GROUPS)
      s += fmt::format(" {} wait at {};", threads(b, i, e), what);
    else
      ++more;
    i = e + 1;
  }
  if (more) s += fmt::format(" and {} more groups of threads;", more);
  s.pop_back();
  return s;
}

// Blocks the running thread i (already recorded at a barrier or collective) and runs the next runnable
// thread; returns when thread i has been released. Nothing runnable: a deadlock.
void block_current(Impl& b, unsigned i) {
  b.clear_runnable(i);
  const int j = b.next_runnable(i);
  if (j < 0) fail(b, [&] { return deadlock_message(b); });
  switch_fiber(b, b.fibers[i], b.fibers[j]);
  current_thread = &b.ctx[i];
}

// ---- thread start and end ----

// A thread has returned: the barrier and the collectives no longer wait for it. The next fiber to run.
Fiber* thread_returned(Impl& b, unsigned i) {
  const ThreadContext& t = b.ctx[i];
  Warp& w = b.warps[t.warp];
  const uint32_t bit = 1u << t.lane;
  for (unsigned k = 0; k < w.npending; ++k)
    if (w.pending[k].mask & bit)
      fail_thread(b, t, [&] {
        return fmt::format("returned while {} of its warp wait at {}, whose mask names it",
                           lane_list(w.pending[k].arrived), call_name(w.pending[k]));
      });
  w.gone |= bit;
  ++b.finished;
  b.clear_runnable(i);
  if (--b.live == b.arrived && b.arrived > 0) b.release_barrier();
  const int j = b.next_runnable(i);
  if (j >= 0) return &b.fibers[j];
  if (b.finished == b.n) return &b.sched;
  fail(b, [&] { return deadlock_message(b); });
}

// Not inlined into the uninstrumented sdc_emu_fiber_main: the kernel's thread and the bookkeeping stay
// under the sanitizers.
__attribute__((noinline)) Fiber* run_thread(Impl& b, unsigned i) {
  current_thread = &b.ctx[i];
  bool threw = false;
  try {
    b.body(b.arg);
  } catch (...) {
    b.error = std::current_exception();
    threw = true;
  }
  // Outside the handler: leaving for good from inside it would leave the exception marked as being handled.
  if (threw) {
    b.failed = true;
    abandon(b);
  }
  return thread_returned(b, i);
}

}  // namespace

// Where every fiber starts (called by the trampoline, or by the ucontext entry). Runs the thread, then
// returns the context to switch to: the next runnable thread, or run()'s.
extern "C" SDC_EMU_SWITCH_FN Context* sdc_emu_fiber_main(void* fiber) {
  Fiber& f = *static_cast<Fiber*>(fiber);
  Impl& b = *f.owner;
#if defined(SDC_EMU_ASAN)
  const void* bottom;
  size_t size;
  __sanitizer_finish_switch_fiber(nullptr, &bottom, &size);
  if (b.sched_bounds_pending) {  // the first fiber of a block starts from run(): learn its stack
    b.sched.stack_lo = static_cast<char*>(const_cast<void*>(bottom));
    b.sched.stack_size = size;
    b.sched_bounds_pending = false;
  }
#endif
  Fiber* to = run_thread(b, f.index);
  ++b.switches;
#if defined(SDC_EMU_ASAN)
  __sanitizer_start_switch_fiber(nullptr, to->stack_lo, to->stack_size);
#endif
#if defined(SDC_EMU_TSAN)
  __tsan_switch_to_fiber(to->tsan, 0);
#endif
  return &to->ctx;
}

#if !defined(SDC_EMU_ASM_SWITCH)
extern "C" SDC_EMU_SWITCH_FN void sdc_emu_fiber_entry(unsigned hi, unsigned lo) {
  const uintptr_t p = (static_cast<uintptr_t>(hi) << 32) | lo;
  SDC_EMU_CONTEXT_JUMP(*sdc_emu_fiber_main(reinterpret_cast<void*>(p)));
}
#endif

// ---- the runner ----

BlockRunner::BlockRunner(size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  Impl& b = *impl_;
  b.page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  b.stack_bytes = (std::max<size_t>(stack_bytes, 16 * 1024) + b.page - 1) / b.page * b.page;
  b.slot_bytes = b.stack_bytes + b.page;
  // Address space only: the stacks become usable (and cost memory as they are touched) when a block
  // first needs them; the guard pages never do.
  void* p =
      mmap(nullptr, b.slot_bytes * MAX_BLOCK_THREADS, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the fiber stacks");
  b.region = static_cast<char*>(p);
  b.fibers.resize(MAX_BLOCK_THREADS);
  b.ctx.resize(MAX_BLOCK_THREADS);
  b.warps.resize(MAX_BLOCK_THREADS / WARP_SIZE);
  for (unsigned i = 0; i < MAX_BLOCK_THREADS; ++i) {
    Fiber& f = b.fibers[i];
    f.owner = &b;
    f.index = i;
    f.stack_lo = b.region + i * b.slot_bytes + b.page;
    f.stack_size = b.stack_bytes;
  }
}

BlockRunner::~BlockRunner() {
  Impl& b = *impl_;
#if defined(SDC_EMU_TSAN)
  for (Fiber& f : b.fibers)
    if (f.tsan) __tsan_destroy_fiber(f.tsan);
#endif
  munmap(b.region, b.slot_bytes * MAX_BLOCK_THREADS);
}

uint64_t BlockRunner::switches() const { return impl_->switches; }

void BlockRunner::run(const char* kernel, Dim3 grid, Dim3 block_dim, Dim3 block_idx, unsigned sm, unsigned nsmid,
                      unsigned warpid_base, void (*body)(void*), void* arg) {
  if (current_thread) throw std::logic_error("sdc::emu::BlockRunner::run called from inside a kernel");
  const uint64_t n64 = uint64_t{block_dim.x} * block_dim.y * block_dim.z;
  if (n64 == 0 || n64 > MAX_BLOCK_THREADS)
    throw std::invalid_argument(fmt::format("kernel {}: a block of {}x{}x{} threads (1 to {} allowed)", kernel,
                                            block_dim.x, block_dim.y, block_dim.z, MAX_BLOCK_THREADS));
  Impl& b = *impl_;
  const auto n = static_cast<unsigned>(n64);
  for (; b.ready < n; ++b.ready) {
    Fiber& f = b.fibers[b.ready];
    if (mprotect(f.stack_lo, f.stack_size, PROT_READ | PROT_WRITE) != 0)
      throw std::system_error(errno, std::generic_category(), "mprotect of a fiber stack");
  }

  b.kernel = kernel;
  b.block_idx = block_idx;
  b.body = body;
  b.arg = arg;
  b.n = n;
  b.nwords = (n + 63) / 64;
  b.live = n;
  b.arrived = 0;
  b.finished = 0;
  b.switches = 0;
  b.failed = false;
  b.fault.clear();
  for (unsigned k = 0; k < MAX_BLOCK_THREADS / 64; ++k) {
    const unsigned lo = k * 64;
    b.runnable[k] = lo >= n ? 0 : n - lo >= 64 ? ~0ull : (1ull << (n - lo)) - 1;
    b.at_barrier[k] = 0;
  }
  const unsigned nwarps = (n + WARP_SIZE - 1) / WARP_SIZE;
  for (unsigned w = 0; w < nwarps; ++w) {
    const unsigned lanes = std::min(WARP_SIZE, n - w * WARP_SIZE);
    b.warps[w].gone = lanes == WARP_SIZE ? 0 : ~((1u << lanes) - 1);
    b.warps[w].npending = 0;
  }

  // New fibers start with the caller's floating-point control state (rounding, denormal handling).
  uint32_t csr = 0;
  uint16_t fpucw = 0;
#if defined(SDC_EMU_ASM_SWITCH)
  asm volatile("stmxcsr %0" : "=m"(csr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
#endif
  for (unsigned i = 0; i < n; ++i) {
    ThreadContext& t = b.ctx[i];
    t.thread_idx = Dim3{i % block_dim.x, (i / block_dim.x) % block_dim.y, i / (block_dim.x * block_dim.y)};
    t.block_idx = block_idx;
    t.block_dim = block_dim;
    t.grid_dim = grid;
    t.linear = i;
    t.lane = i % WARP_SIZE;
    t.warp = i / WARP_SIZE;
    t.sm = sm;
    t.nsmid = nsmid;
    t.warpid = warpid_base + t.warp;
    t.epoch = 0;
    t.block = &b;
    Fiber& f = b.fibers[i];
#if defined(SDC_EMU_TSAN)
    if (!f.tsan) f.tsan = __tsan_create_fiber(0);
#endif
    make_context(f, csr, fpucw);
  }

#if defined(SDC_EMU_ASAN)
  b.sched_bounds_pending = true;
#endif
#if defined(SDC_EMU_TSAN)
  b.sched.tsan = __tsan_get_current_fiber();
#endif
  switch_fiber(b, b.sched, b.fibers[0]);
  current_thread = nullptr;

  if (!b.failed) return;
  // The threads that had not returned were abandoned mid-stack: clear what the sanitizers remember of
  // their frames before the stacks are reused.
  for (unsigned i = 0; i < n; ++i) {
    if (b.has_returned(i)) continue;
    Fiber& f = b.fibers[i];
    f.fake = nullptr;
#if defined(SDC_EMU_ASAN)
    __asan_unpoison_memory_region(f.stack_lo, f.stack_size);
#endif
#if defined(SDC_EMU_TSAN)
    __tsan_destroy_fiber(f.tsan);
    f.tsan = nullptr;
#endif
  }
  if (b.error) {
    std::exception_ptr e = std::move(b.error);
    b.error = nullptr;
    std::rethrow_exception(e);
  }
  throw KernelFault(std::move(b.fault));
}

// ---- the collectives ----

namespace {

[[noreturn]] __attribute__((noinline, cold)) void outside_kernel(const char* what) {
  throw std::logic_error(fmt::format("sdc::emu::{} called outside a kernel", what));
}

inline Impl& block_of(ThreadContext* t, const char* what) {
  if (!t) [[unlikely]]
    outside_kernel(what);
  return *static_cast<Impl*>(t->block);
}

// PTX's shfl.sync: the lane that `lane` reads from. c's segment mask is 32 - width, its clamp 31 (0 for up).
inline unsigned shfl_source(unsigned lane, int32_t b_arg, uint32_t width, Shfl mode) {
  const int seg = static_cast<int>(WARP_SIZE - width);
  const int bval = b_arg & 31;
  const int l = static_cast<int>(lane);
  const int max_lane = (l & seg) | ((mode == Shfl::up ? 0 : 31) & ~seg);
  int j;
  bool in_range;
  switch (mode) {
    case Shfl::up:
      j = l - bval;
      in_range = j >= max_lane;
      break;
    case Shfl::down:
      j = l + bval;
      in_range = j <= max_lane;
      break;
    case Shfl::bfly:
      j = l ^ bval;
      in_range = j <= max_lane;
      break;
    default:
      j = (l & seg) | (bval & ~seg);
      in_range = j <= max_lane;
      break;
  }
  return static_cast<unsigned>(in_range ? j : l);
}

// Computes every lane's result of a complete collective p of warp w (run on the lane that completed it).
void complete(Impl& b, unsigned warp, Warp& w, const Pending& p) {
  switch (p.kind) {
    case Kind::syncwarp: break;
    case Kind::shfl32:
    case Kind::shfl64:
      for (uint32_t m = p.mask; m; m &= m - 1) {
        const unsigned l = __builtin_ctz(m);
        const unsigned src = shfl_source(l, w.arg[l], p.width, p.mode);
        if (!((p.mask >> src) & 1u))
          fail_thread(b, b.ctx[warp * WARP_SIZE + l],
                      [&] { return fmt::format("{} reads lane {}, outside the mask", call_name(p), src); });
        w.out[l] = w.in[src];
      }
      break;
    case Kind::ballot: {
      uint32_t r = 0;
      for (uint32_t m = p.mask; m; m &= m - 1) {
        const unsigned l = __builtin_ctz(m);
        r |= static_cast<uint32_t>(w.in[l] != 0) << l;
      }
      for (uint32_t m = p.mask; m; m &= m - 1) w.out[__builtin_ctz(m)] = r;
      break;
    }
    case Kind::exchange: {
      void* lanes[WARP_SIZE];
      for (unsigned l = 0; l < WARP_SIZE; ++l) lanes[l] = ((p.mask >> l) & 1u) ? w.ptr[l] : nullptr;
      p.fn(w.ctx[__builtin_ctz(p.mask)], lanes);
      break;
    }
  }
}

// The calling lane arrives at collective c (its operands already in its warp's in/arg/ptr/ctx slots);
// returns once the collective has completed, with the lane's result in out.
void arrive(Impl& b, ThreadContext& t, const Pending& c) {
  Warp& w = b.warps[t.warp];
  const uint32_t bit = 1u << t.lane;
  if (!(c.mask & bit)) fail_thread(b, t, [&] { return fmt::format("{} leaves out the calling lane", call_name(c)); });
  if (c.mask & w.gone)
    fail_thread(b, t, [&] {
      const bool one = __builtin_popcount(c.mask & w.gone) == 1;
      return fmt::format("{} names {}, which {} returned or {} past the end of the block", call_name(c),
                         lane_list(c.mask & w.gone), one ? "has" : "have", one ? "lies" : "lie");
    });
  if ((c.kind == Kind::shfl32 || c.kind == Kind::shfl64) &&
      (c.width == 0 || c.width > WARP_SIZE || (c.width & (c.width - 1)) != 0))
    fail_thread(b, t, [&] { return fmt::format("{}: the width must be a power of two up to 32", call_name(c)); });
  Pending* p = nullptr;
  for (unsigned k = 0; k < w.npending; ++k)
    if (w.pending[k].mask == c.mask) {
      p = &w.pending[k];
      break;
    }
  if (!p) {
    if (c.mask == bit) {  // a warp of one
      complete(b, t.warp, w, c);
      return;
    }
    p = &w.pending[w.npending++];
    *p = c;
    p->arrived = 0;
  } else if (p->kind != c.kind || p->mode != c.mode || p->width != c.width || p->fn != c.fn) {
    fail_thread(b, t, [&] {
      return fmt::format("called {} while {} of the same mask wait at {}", call_name(c), lane_list(p->arrived),
                         call_name(*p));
    });
  }
  p->arrived |= bit;
  if (p->arrived != p->mask) {
    block_current(b, t.linear);
    return;
  }
  const Pending done = *p;
  *p = w.pending[--w.npending];
  complete(b, t.warp, w, done);
  const uint32_t others = done.mask & ~bit;
  b.runnable[t.warp / 2] |= static_cast<uint64_t>(others) << (32 * (t.warp % 2));
}

inline Pending call(Kind kind, unsigned mask, Shfl mode = Shfl::idx, uint32_t width = 0, ExchangeFn fn = nullptr) {
  Pending c;
  c.kind = kind;
  c.mask = mask;
  c.mode = mode;
  c.width = width;
  c.fn = fn;
  return c;
}

}  // namespace

void syncthreads() {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, "syncthreads");
  if (++b.arrived == b.live) {
    b.release_barrier();
  } else {
    b.at_barrier[t->linear / 64] |= 1ull << (t->linear % 64);
    block_current(b, t->linear);
  }
  ++t->epoch;
}

void syncwarp(unsigned mask) {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, "syncwarp");
  arrive(b, *t, call(Kind::syncwarp, mask));
}

unsigned activemask() {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, "activemask");
  return ~b.warps[t->warp].gone;
}

// One shuffle of either width: the lane's value in, its source lane's value out (Kind says which width).
static uint64_t shuffle(Kind kind, const char* what, unsigned mask, uint64_t v, int lane_or_delta, int width,
                        Shfl mode) {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, what);
  Warp& w = b.warps[t->warp];
  w.in[t->lane] = v;
  w.arg[t->lane] = lane_or_delta;
  arrive(b, *t, call(kind, mask, mode, static_cast<uint32_t>(width)));
  return w.out[t->lane];
}

uint32_t shfl(unsigned mask, uint32_t v, int lane_or_delta, int width, Shfl mode) {
  return static_cast<uint32_t>(shuffle(Kind::shfl32, "shfl", mask, v, lane_or_delta, width, mode));
}

uint64_t shfl64(unsigned mask, uint64_t v, int lane_or_delta, int width, Shfl mode) {
  return shuffle(Kind::shfl64, "shfl64", mask, v, lane_or_delta, width, mode);
}

unsigned ballot(unsigned mask, bool pred) {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, "ballot");
  Warp& w = b.warps[t->warp];
  w.in[t->lane] = pred;
  arrive(b, *t, call(Kind::ballot, mask));
  return static_cast<unsigned>(w.out[t->lane]);
}

void warp_exchange(unsigned mask, void* mine, void (*fn)(void* ctx, void* const* lanes), void* ctx) {
  ThreadContext* t = current_thread;
  Impl& b = block_of(t, "warp_exchange");
  Warp& w = b.warps[t->warp];
  w.ptr[t->lane] = mine;
  w.ctx[t->lane] = ctx;
  arrive(b, *t, call(Kind::exchange, mask, Shfl::idx, 0, fn));
}

void trap(const char* why) {
  ThreadContext* t = current_thread;
  if (!t) throw KernelFault(fmt::format("__trap outside a kernel: {}", why));
  Impl& b = *static_cast<Impl*>(t->block);
  fail_thread(b, *t, [&] { return fmt::format("__trap: {}", why); });
}

}  // namespace sdc::emu
