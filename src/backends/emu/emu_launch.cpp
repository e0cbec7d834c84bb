// Kernel launches on the emulated device: a launch enqueued on a stream runs there, its blocks one after
// another on the stream's thread (a block runner per thread, block.h), or a seeded sample of them; the
// injected faults of a Spec (a launch that fails, one that never ends, a slow device, a tensor-core lane
// that flips a bit); and the calls kernel code makes (mma.sync, nanosleep, the race checker's queries).
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "src/backends/emu/emu_device_impl.h"

namespace sdc::emu::detail {
namespace {

thread_local const Spec* t_launch_spec = nullptr;  // the device whose kernel this stream thread runs
thread_local const char* t_kernel = "";            // that kernel's name
thread_local uint64_t t_block_serial = 0;          // blocks run on this thread so far
thread_local size_t t_smem = 0;                    // that launch's dynamic shared memory, bytes

struct Launch {
  std::string what;
  unsigned grid, block;
  std::function<void()> body;
  bool compute;
  size_t smem;  // dynamic shared memory, bytes
};

void thread_body(void* arg) { static_cast<const Launch*>(arg)->body(); }

// The blocks a launch runs: all, or for a compute kernel a seeded sample of spec.sample_blocks of them,
// the same for every launch of that kernel with that grid (so every iteration, and every emulated device
// with the same spec, computes the same tiles).
std::vector<unsigned> blocks_to_run(const Launch& l, const Spec& spec) {
  std::vector<unsigned> all(l.grid);
  for (unsigned b = 0; b < l.grid; ++b) all[b] = b;
  if (!l.compute || spec.sample_blocks == 0 || l.grid <= spec.sample_blocks) return all;
  uint64_t seed = 0x5dc5c4ee11ull ^ l.grid;
  for (char c : l.what) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  std::mt19937_64 rng(seed);
  for (unsigned i = 0; i < spec.sample_blocks; ++i) {
    std::uniform_int_distribution<unsigned> pick(i, l.grid - 1);
    std::swap(all[i], all[pick(rng)]);
  }
  all.resize(spec.sample_blocks);
  std::sort(all.begin(), all.end());
  return all;
}

double this_thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void run_launch(Device& dev, const Launch& l) {
  if (dev.lost()) return;  // nothing runs after the context is lost
  const uint64_t n = dev.next_launch();
  if (dev.spec.hang_launch && n == dev.spec.hang_launch)  // a block that never finishes: nothing releases it
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (dev.spec.fail_launch && n == dev.spec.fail_launch) {
    dev.lose(
        fmt::format("{}: cudaErrorIllegalAddress (an illegal memory access was encountered; injected: "
                    "kernel launch {} of emulated device {})",
                    l.what, n, dev.info.index));
    return;
  }
  thread_local BlockRunner runner;
  const double cpu_start = dev.spec.slow > 1 ? this_thread_cpu_seconds() : 0;
  t_launch_spec = &dev.spec;
  t_kernel = l.what.c_str();
  t_smem = l.smem;
  const unsigned sms = static_cast<unsigned>(dev.spec.sms);
  try {
    for (unsigned b : blocks_to_run(l, dev.spec)) {
      ++t_block_serial;
      runner.run(l.what.c_str(), Dim3{l.grid, 1, 1}, Dim3{l.block, 1, 1}, Dim3{b, 1, 1}, b % sms, sms, 0, thread_body,
                 const_cast<Launch*>(&l));
    }
  } catch (const std::exception& e) {  // a KernelFault, or an exception out of the kernel's code
    dev.lose(fmt::format("{}: cudaErrorLaunchFailure (unspecified launch failure): {}", l.what, e.what()));
  }
  t_launch_spec = nullptr;
  t_kernel = "";
  t_smem = 0;
  if (dev.spec.slow > 1) {  // a slower GPU: this thread busy for (slow - 1) times what the launch took
    const double until = cpu_start + dev.spec.slow * (this_thread_cpu_seconds() - cpu_start);
    while (this_thread_cpu_seconds() < until) {
    }
  }
}

}  // namespace
}  // namespace sdc::emu::detail

namespace sdc::emu {

using namespace detail;

void launch(const char* what, unsigned grid, unsigned block, cudaStream_t s, std::function<void()> body,
            size_t smem_bytes) {
  t_last = cudaSuccess;
  Stream* st = stream_of(s);
  if (!st || grid == 0 || block == 0 || block > 1024 ||
      smem_bytes > max_dynamic_shared(st->dev.spec.cc_major, st->dev.spec.cc_minor)) {
    t_last = !st ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration;
    return;
  }
  if (st->dev.lost()) {
    t_last = cudaErrorLaunchFailure;
    return;
  }
  auto l = std::make_shared<Launch>(Launch{what, grid, block, std::move(body), st->sampling, smem_bytes});
  Device& d = st->dev;
  st->enqueue([&d, l] { run_launch(d, *l); });
}

namespace {

// The planted tensor-core fault (Spec::mma_sm): on that SM, bit mma_bit of lane mma_lane's d[0] flips (for a
// double, a bit of its low word). d: the warp's results, 32 lanes of N elements.
template <class T, size_t N>
void plant_mma_fault(const Spec* spec, unsigned sm, T (&d)[32][N]) {
  if (!spec || spec->mma_sm != static_cast<int>(sm)) return;
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  Bits bits;
  std::memcpy(&bits, &d[spec->mma_lane][0], sizeof bits);
  bits ^= Bits{1} << spec->mma_bit;
  std::memcpy(&d[spec->mma_lane][0], &bits, sizeof bits);
}

// One warp's mma.sync, the shape all four share: every lane passes its A and B registers (na and nb of them, at
// most NA and NB) and its accumulators d (C in, D out); once all 32 lanes have arrived, Compute (a captureless
// callable) runs once on the gathered registers, ra[lane][i] and so on, with `arg`, the planted tensor-core fault
// (if any) is applied to its result, and every lane gets its D back.
template <class A, size_t NA, class B, size_t NB, class D, size_t ND, class Compute>
void warp_mma(const A* a, int na, const B* b, int nb, D (&d)[ND], int arg, Compute) {
  struct Regs {
    const A* a;
    const B* b;
    D* d;
  };
  struct Ctx {
    const Spec* spec;
    unsigned sm;
    int na, nb, arg;
  };
  if (na < 0 || na > static_cast<int>(NA) || nb < 0 || nb > static_cast<int>(NB))
    trap("mma.sync with more A or B registers than its shape has");
  Regs mine{a, b, d};
  Ctx ctx{t_launch_spec, here().sm, na, nb, arg};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        A ra[32][NA];  // only the first na (nb) of a lane's are read
        B rb[32][NB];
        D rc[32][ND], rd[32][ND];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          for (int i = 0; i < x.na; ++i) ra[l][i] = r.a[i];
          for (int i = 0; i < x.nb; ++i) rb[l][i] = r.b[i];
          for (size_t i = 0; i < ND; ++i) rc[l][i] = r.d[i];
        }
        Compute{}(ra, rb, rc, rd, x.arg);
        plant_mma_fault(x.spec, x.sm, rd);
        for (int l = 0; l < 32; ++l)
          for (size_t i = 0; i < ND; ++i) static_cast<const Regs*>(lanes[l])->d[i] = rd[l][i];
      },
      &ctx);
}

}  // namespace

void mma(MmaType t, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  warp_mma<uint32_t, 4, uint32_t, 2>(
      a, 4, b, 2, d, static_cast<int>(t),
      [](auto& ra, auto& rb, auto& rc, auto& rd, int x) { mma_sync(static_cast<MmaType>(x), ra, rb, rc, rd); });
}

void mma_f64(double (&d)[2], double a, double b) {
  warp_mma<double, 1, double, 1>(&a, 1, &b, 1, d, 0, [](auto& ra, auto& rb, auto& rc, auto& rd, int) {
    double a1[32], b1[32];  // one A and one B value per lane
    for (int l = 0; l < 32; ++l) a1[l] = ra[l][0], b1[l] = rb[l][0];
    mma_sync_f64(a1, b1, rc, rd);
  });
}

void mma_f64_m16n8(int k, double (&d)[4], const double* a, const double* b) {
  warp_mma<double, 8, double, 4>(a, k / 2, b, k / 4, d, k, [](auto& ra, auto& rb, auto& rc, auto& rd, int kk) {
    mma_sync_f64_m16n8(kk, ra, rb, rc, rd);
  });
}

void mma_s8(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  warp_mma<uint32_t, 4, uint32_t, 2>(a, 4, b, 2, d, 0,
                                     [](auto& ra, auto& rb, auto& rc, auto& rd, int) { mma_sync_s8(ra, rb, rc, rd); });
}

unsigned char* dynamic_shared() {
  // On the heap, zeroed, from the first call on this thread: in static TLS it would cost every thread of the process
  // (the CPU backend's workers too) its 227 KiB at the thread's start.
  // Guard bytes on either side (kDynamicSharedGuard).
  struct Buffer {
    unsigned char* p = nullptr;
    ~Buffer() { std::free(p); }
  };
  thread_local Buffer buffer;
  constexpr size_t bytes = kDynamicSharedBytes + 2 * kDynamicSharedGuard;
  static_assert(kDynamicSharedGuard % 128 == 0 && bytes % 128 == 0, "aligned_alloc: a multiple of the alignment");
  if (!buffer.p) {
    buffer.p = static_cast<unsigned char*>(std::aligned_alloc(128, bytes));
    if (!buffer.p) throw std::bad_alloc();
    std::memset(buffer.p, 0, bytes);
  }
  return buffer.p + kDynamicSharedGuard;
}

void nanosleep(unsigned ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
const char* current_kernel() { return t_kernel; }
size_t dynamic_shared_bytes() { return t_smem; }
uint64_t block_serial() { return t_block_serial; }

}  // namespace sdc::emu
