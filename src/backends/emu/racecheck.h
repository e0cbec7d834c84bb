// The emulated device's shared-memory race checker (tests only). Within one barrier interval of a block
// (between two __syncthreads), two threads touching the same byte of __shared__ memory, at least one of
// them writing, is a race: the result then depends on an order the hardware does not promise.
//
// How it sees the accesses: the kernel sources are compiled once more with g++'s ThreadSanitizer
// instrumentation (-fsanitize=thread, compile only: libtsan is never linked), which makes every load and
// store call a __tsan_* function; racecheck.cpp defines those functions itself. Under the emulation
// header __shared__ is `static thread_local` and a block runs on one OS thread, so an access is to shared
// memory exactly when its address lies in the calling thread's static TLS block of the program, or in its
// dynamic shared memory buffer (emu_device.h, dynamic_shared). For such
// an access the checker keeps, per byte, the last writer and the readers of the current interval (the
// block's number and the thread's barrier count, block.h's ThreadContext::epoch). The racecheck_tests
// executable links the instrumented copies in place of the plain ones (CMakeLists.txt).
//
// The same hooks also tell which thread stored each word of one watched range of global memory (a case's
// output buffer): watch() registers it, writers() reads back, per 4-byte word, the block and the thread in the
// block that stored it last and whether another thread stored it too. That is how the tests check each
// kernel's documented thread-to-element map (DeviceProblem::thread_of) against the stores it really makes.
//
// Every plain (not volatile, not atomic) shared access and every cp.async also goes to the bank-conflict counter
// (bankcheck.h) while it counts.
//
// An access to the emulation's dynamic shared memory beyond what the running launch asked for (launch_shared's
// smem_bytes), or in the guard bytes before it, is reported too, as kind "out-of-bounds": on a GPU it lies outside
// the block's shared memory.
//
// A cp.async copy (device_util.cuh) is a store by its thread twice: at the issue and at the wait that lands it;
// in between, its bytes are marked in flight, and any access to them (by any thread, the issuer's own read too,
// and a second copy) is reported as kind "pending-copy": on a GPU the bytes may land at any moment until the wait.
// A copy whose destination is not shared memory is reported as kind "not-shared".
//
// Not seen: warp-level synchronization (__syncwarp) is not an interval boundary, so a kernel that orders
// shared accesses within a warp by __syncwarp alone would be reported (none of the project's does); memory
// touched by library calls of variable size (memcpy, memset) in kernel code; global memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sdc::emu::racecheck {

struct Race {
  std::string kernel;
  unsigned block = 0;              // blockIdx.x
  unsigned first = 0, second = 0;  // the threads (linear index in the block): the earlier access, the later
  // "write-write", "write-read", "read-write"; "out-of-bounds" (dynamic shared memory), "pending-copy" (first: the
  // thread of the last copy to it), "not-shared" (cp.async; region "global", offset: its address)
  std::string kind;
  // "static": offset is of the byte in the thread's static TLS block (the __shared__ arrays); "dynamic": in its
  // dynamic shared memory (negative before it: out-of-bounds).
  std::string region;
  int64_t offset = 0;
  std::string describe() const;
};

// The races found so far (at most 1000 kept; all counted), on every thread; and the shared accesses seen.
std::vector<Race> races();
uint64_t race_count();
uint64_t shared_accesses();
void reset();

// The last store to one 4-byte word of the watched range.
struct Writer {
  bool written = false;
  unsigned block = 0;    // blockIdx.x
  unsigned thread = 0;   // linear index in the block
  bool several = false;  // some other thread (of any block) stored it as well
};

// Starts watching [begin, begin + bytes) (bytes a multiple of 4): every store by kernel code into it is recorded,
// all earlier records dropped. One range at a time, written by kernels of one stream at a time (the stream's
// thread records without a lock); read writers() after the stream has finished.
void watch(const void* begin, uint64_t bytes);
void unwatch();
// Per word of the watched range, in address order.
std::vector<Writer> writers();

}  // namespace sdc::emu::racecheck
