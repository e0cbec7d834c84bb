// The emulated device's execution engine: one thread block of a CUDA kernel run on one OS thread, each
// GPU thread a fiber. The kernels' own code (compiled for the host under the emulation header) calls the
// collectives below in place of __syncthreads, __syncwarp, the shuffles, votes and mma.sync.
//
// Scheduling is deterministic: the fibers run in thread order, each until it blocks at a barrier or
// collective or returns, round-robin; a barrier or collective completes when its last participant
// arrives, and that thread goes on running. So a block computes the same bits on every run, and every
// interleaving question has one answer: the one this order gives.
//
// The engine checks what the hardware leaves undefined and a kernel must not rely on: a deadlock, a
// collective whose mask names an exited lane or leaves out the calling lane, lanes of one mask at
// different collectives, a shuffle reading a lane outside its mask. Each ends the block with a
// KernelFault that names the kernel, the block, the threads and what each was waiting at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace sdc::emu {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

constexpr unsigned WARP_SIZE = 32;
constexpr unsigned MAX_BLOCK_THREADS = 1024;

// A cp.async copy issued and not yet waited for (device_util.cuh, cp_async): `bytes` to shared memory at dst, the
// first src_bytes of them the global memory read at the issue (data), the rest zeros; in the thread's group number
// `group`.
struct AsyncCopy {
  unsigned char* dst;
  unsigned bytes, src_bytes;
  uint64_t group;
  alignas(16) unsigned char data[16];  // the src_bytes read from global memory at the issue
};

// The race checker's view of cp.async (racecheck.cpp installs it when it is linked; null otherwise): [p, p + n)
// has a copy in flight (in_flight, called at the issue) or has one that has just landed (at the wait).
extern void (*async_copy_hook)(void* p, size_t n, bool in_flight);

// What a kernel thread sees (the CUDA built-ins) and where it runs.
struct ThreadContext {
  Dim3 thread_idx, block_idx, block_dim, grid_dim;
  unsigned linear;             // x + y * dim.x + z * dim.x * dim.y
  unsigned lane, warp;         // linear % 32, linear / 32
  unsigned sm, nsmid, warpid;  // %smid, %nsmid, %warpid of the emulated placement (given by the caller)
  uint64_t epoch;              // how many block barriers this thread has passed (for a race checker)
  // cp.async: the thread's copies not yet waited for, in issue order, and the groups it has committed. A copy
  // lands at the wait that completes its group, the latest time the hardware may (device_util.cuh); a thread that
  // returns with copies not waited for is a fault (block.cpp).
  std::vector<AsyncCopy> async;
  uint64_t async_groups;
  void* block;                 // the runner's internal state
};

// The thread running now; null outside a kernel. Plain __thread: reading it is one load, no TLS wrapper.
extern __thread ThreadContext* current_thread;
inline ThreadContext& here() { return *current_thread; }

// A misuse of the execution model found while running a block (see the top of this file), or __trap.
class KernelFault : public std::runtime_error {
 public:
  using runtime_error::runtime_error;
};

// Runs blocks. One per OS thread (it is not thread-safe itself); reusable for any number of blocks.
// The fiber stacks are reserved once, made usable as blocks need more threads, and reused.
class BlockRunner {
 public:
  // stack_bytes: each thread's stack, rounded up to whole pages; each has a guard page below it.
  explicit BlockRunner(size_t stack_bytes = 128 * 1024);
  ~BlockRunner();
  BlockRunner(const BlockRunner&) = delete;
  BlockRunner& operator=(const BlockRunner&) = delete;

  // Runs body(arg) once per thread of one block, each thread a fiber on the calling OS thread with
  // current_thread set, and returns when all have returned. %warpid of warp w is warpid_base + w.
  // Throws KernelFault on a fault: the block's remaining fibers are abandoned where they stand (no
  // destructors run on their stacks; the stacks are reused by the next block). An exception escaping
  // body ends the block the same way and is rethrown as is. std::invalid_argument for a block of 0 or
  // more than 1024 threads; std::logic_error when called from inside a kernel.
  void run(const char* kernel, Dim3 grid, Dim3 block_dim, Dim3 block_idx, unsigned sm, unsigned nsmid,
           unsigned warpid_base, void (*body)(void*), void* arg);

  // Fibers switched to (resumed or started) by the last run(); for measurements.
  uint64_t switches() const;

  struct Impl;  // the runner's state (block.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- called from kernel code inside BlockRunner::run ----

// __syncthreads: the block barrier. Threads that have returned count as arrived.
void syncthreads();
// __syncwarp(mask). Every lane of mask must call it with the same mask.
void syncwarp(unsigned mask);
// The lanes of the caller's warp that have not returned (lanes past the end of the block never exist).
// Which lanes have returned by the time of the call follows the deterministic order above; a kernel
// gets a meaningful answer when its early returns are separated from the call by a barrier.
unsigned activemask();

enum class Shfl { idx, up, down, bfly };
// __shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync with CUDA's semantics (the PTX
// shfl.sync definition), width segments included: width a power of two up to 32, else a fault; only the
// low five bits of lane_or_delta count. Reading from a lane outside mask is a fault (undefined on the
// hardware); a lane whose source falls outside its segment gets its own value, as on the hardware.
uint32_t shfl(unsigned mask, uint32_t v, int lane_or_delta, int width, Shfl mode);
uint64_t shfl64(unsigned mask, uint64_t v, int lane_or_delta, int width, Shfl mode);
// __ballot_sync: bit l set when lane l of mask passed pred true.
unsigned ballot(unsigned mask, bool pred);
// The general warp collective (mma.sync is built on it): every lane of mask passes a pointer to its own
// data; once all have arrived, fn(ctx, lanes) runs exactly once, on the last lane to arrive, with
// lanes[l] = lane l's pointer (null outside mask); then every lane goes on. All lanes must pass the same
// fn; ctx is taken from the lowest lane of mask.
void warp_exchange(unsigned mask, void* mine, void (*fn)(void* ctx, void* const* lanes), void* ctx);
// __trap(): the block ends with a KernelFault naming the thread and why.
[[noreturn]] void trap(const char* why);

}  // namespace sdc::emu
