// The emulated device's shared-memory bank-conflict counter (tests only): how many shared-memory wavefronts each
// shared load and store of a kernel would take on a GPU, against the fewest its width allows. A GPU's shared memory
// is 32 banks of 4 bytes; the 4-byte words a warp's request touches are served one wavefront per distinct word in
// the busiest bank (lanes reading the same word share it). A request of 8-byte accesses is served a half-warp at a
// time (lanes 0-15, then 16-31), one of 16 bytes a quarter-warp at a time, and conflicts count within each part
// only: the model NVIDIA's profiler counts "shared wavefronts" by, and that the CUDA programming guide describes.
// The ideal is one wavefront per part with an active lane. No CPU can time a kernel's shared-memory traffic; this
// counts it, so that a kernel's shared-memory layout is a tested property, not a hope.
//
// How the requests are formed: it rides on the race checker's instrumentation (racecheck.h: the kernels compiled
// with g++'s ThreadSanitizer hooks), which sees each thread's shared accesses in program order. The lanes of a warp
// run the same code, so an access's site (its return address in the instrumented code) and how many times the lane
// has reached that site in the block name the warp-wide request it belongs to; a lane that did not reach it was
// inactive there, as on the GPU. That pairing holds where lanes that skip a visit skip the last ones (a shorter
// loop, a branch around an access); a lane skipping a visit in the middle of a loop g++ left rolled (a guard inside
// it that holds for some iterations only) would pair later iterations with earlier ones. Not modelled: the widths nvcc
// chooses (g++ may merge two 8-byte accesses into one of 16 bytes where nvcc keeps two, or the reverse: compare with
// the PTX when a count surprises), volatile and atomic accesses (not counted; the emulation's own cp.async bookkeeping
// is volatile), and the order of requests. A cp.async is counted as the store it makes into shared memory, at its
// issue.
//
// The same requests measure global memory too: a plain load or store inside a range the test watches
// (watch_global: the problem's inputs and outputs) is served in 32-byte sectors, and the counter counts the distinct
// sectors a warp-wide request touches against the fewest its lanes' distinct bytes fit in (one per 32 of them):
// how well a kernel's global accesses coalesce, the property its memory bandwidth rests on. A cp.async is one read of
// its whole source at its issue (device_util.cuh). Not seen: atomics and volatile accesses.
//
// Off until start(); recording costs a map insertion per counted access.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sdc::emu::bankcheck {

// One site of a kernel: a load or store instruction in the instrumented code, all its warp-wide requests.
struct Site {
  std::string kernel;
  uintptr_t pc = 0;  // the site's address in the program, relative to its load base (for addr2line)
  bool write = false;
  bool global = false;      // global memory (sectors), not shared memory (wavefronts)
  unsigned bytes = 0;       // per lane
  uint64_t requests = 0;    // warp-wide requests
  uint64_t wavefronts = 0;  // what the requests take (global: sectors)
  uint64_t ideal = 0;       // the fewest they could: one per half-warp (8 bytes) or quarter-warp (16) with a lane;
                            // global: one sector per 32 distinct bytes
  // The first of its requests (in block order, then warp, then time; with several stream threads, in the order
  // their blocks were counted) with the most wavefronts: each active lane's byte offset in the static or dynamic
  // shared memory it accessed, or its global address.
  std::string example;
  std::string describe() const;
};

// Starts counting, every earlier record dropped; stop() ends it (what was counted stays for sites()).
void start();
void stop();
// Plain shared accesses (and watched global ones) since start() of a size no single GPU instruction moves (not 1, 2,
// 4, 8 or 16 bytes: an aggregate copied whole, a float3), which no site counts; a test that claims a kernel
// conflict-free requires 0.
uint64_t uncounted();
// Every site seen since start(), in order of kernel name and then pc. Call when no kernel is running (the stream
// threads' records are read without their knowledge).
std::vector<Site> sites();

// The race checker's hook (racecheck.cpp): a plain (not volatile, not atomic) access of n bytes by the calling
// kernel thread at byte offset `offset` of the shared memory it lies in (the static __shared__ arrays, or the
// dynamic shared memory), from the instruction whose return address is pc.
void record(int64_t offset, unsigned n, bool write, const void* pc);
// Whether start() is in force (one load: the race checker asks on every shared access).
bool on();

// Global memory [p, p + bytes) is counted (at most 16 ranges); unwatch_global() drops every range. Only while not
// counting (std::logic_error otherwise): the stream threads read the ranges without a lock.
void watch_global(const void* p, uint64_t bytes);
void unwatch_global();
// The race checker's hook for a plain access of n bytes at address a outside shared memory: recorded when start() is
// in force and it lies in a watched range.
void record_global(uintptr_t a, unsigned n, bool write, const void* pc);
// The sectors of one warp-wide request of global memory: offsets[l] is lane l's address (sectors are aligned to 32
// bytes of it), or negative where lane l takes no part; every lane accesses n bytes (1, 2, 4, 8 or 16; another n is
// std::invalid_argument). Sets ideal to the fewest sectors the lanes' distinct bytes fit in.
unsigned sectors(const int64_t (&offsets)[32], unsigned n, unsigned& ideal);

// The wavefronts of one warp-wide request: offsets[l] is lane l's byte offset, or negative where lane l takes no
// part; every lane accesses n bytes (1, 2, 4, 8 or 16; another n is std::invalid_argument). Sets ideal to the fewest
// the lanes could take.
unsigned wavefronts(const int64_t (&offsets)[32], unsigned n, unsigned& ideal);

}  // namespace sdc::emu::bankcheck
