// The block runner's fibers: the context switch (a hand-written one on x86-64 System V, ucontext
// elsewhere), where a fiber starts, and a thread's start and end.
//
// Every thread of a block is a fiber with its own stack. A thread that must wait (a barrier or a
// collective not yet complete) switches straight to the next runnable thread in thread order; there
// is no scheduler loop between them, so a wait costs one switch. When the last thread returns, or none
// can run, control goes back to run() on the caller's stack.
//
// A fault found inside a fiber is recorded and the fiber jumps back to run(), which throws: an exception
// must not unwind across a switch (the fiber's frames end in the trampoline, not in run()).
#include <cerrno>
#include <exception>
#include <system_error>

#include "src/backends/emu/block_impl.h"

#if defined(SDC_EMU_ASM_SWITCH)
extern "C" {
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

namespace sdc::emu::fiber {

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
#endif

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

namespace {

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
  // A copy never waited for may land after the kernel's last read of it, or never be read: the project's kernels
  // wait for every copy they issue.
  if (const ThreadContext& t = b.ctx[i]; !t.async.empty())
    fail_thread(b, t, [&] { return fmt::format("returned with {} cp.async copies not waited for", t.async.size()); });
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

}  // namespace sdc::emu::fiber
