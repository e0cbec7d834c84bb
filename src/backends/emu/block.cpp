// The block runner: a block's set-up and end, the block barrier and the warp collectives. The last thread
// to arrive at a barrier or collective completes it (computes every lane's result, marks the waiters
// runnable) and goes on; a thread that must wait switches straight to the next runnable one (fiber.cpp).
// The faults found here end the block with the messages of block_fault.cpp.
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <system_error>
#include <vector>

#include "src/backends/emu/block_impl.h"

namespace sdc::emu {

__thread ThreadContext* current_thread = nullptr;
void (*async_copy_hook)(void* p, size_t n, bool in_flight) = nullptr;

using namespace fiber;  // the runner's internals (block_impl.h)

namespace {

// Blocks the running thread i (already recorded at a barrier or collective) and runs the next runnable
// thread; returns when thread i has been released. Nothing runnable: a deadlock.
void block_current(Impl& b, unsigned i) {
  b.clear_runnable(i);
  const int j = b.next_runnable(i);
  if (j < 0) fail(b, [&] { return deadlock_message(b); });
  switch_fiber(b, b.fibers[i], b.fibers[j]);
  current_thread = &b.ctx[i];
}

}  // namespace

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
    t.async.clear();  // a block that faulted may have left some
    t.async_groups = 0;
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
