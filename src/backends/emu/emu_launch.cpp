// Kernel launches on the emulated device: a launch enqueued on a stream runs there, its blocks one after
// another on the stream's thread (a block runner per thread, block.h), or a seeded sample of them; the
// injected faults of a Spec (a launch that fails, one that never ends, a slow device, a tensor-core lane
// that flips a bit); and the calls kernel code makes (mma.sync, nanosleep, the race checker's queries).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <time.h>

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

}  // namespace

void mma(MmaType t, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  struct Regs {
    const uint32_t* a;
    const uint32_t* b;
    float* d;
  };
  struct Ctx {
    MmaType t;
    const Spec* spec;
    unsigned sm;
  };
  Regs mine{a, b, d};
  Ctx ctx{t, t_launch_spec, here().sm};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        uint32_t ra[32][4], rb[32][2];
        float rc[32][4], rd[32][4];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          for (int i = 0; i < 4; ++i) ra[l][i] = r.a[i], rc[l][i] = r.d[i];
          for (int i = 0; i < 2; ++i) rb[l][i] = r.b[i];
        }
        mma_sync(x.t, ra, rb, rc, rd);
        plant_mma_fault(x.spec, x.sm, rd);
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) static_cast<const Regs*>(lanes[l])->d[i] = rd[l][i];
      },
      &ctx);
}

// Where a warp's mma runs: the launch's device spec and the SM, for the planted tensor-core fault.
namespace {
struct MmaSite {
  const Spec* spec;
  unsigned sm;
};
}  // namespace

void mma_f64(double (&d)[2], double a, double b) {
  struct Regs {
    double a, b;
    double* d;
  };
  Regs mine{a, b, d};
  MmaSite ctx{t_launch_spec, here().sm};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const MmaSite& x = *static_cast<const MmaSite*>(c);
        double ra[32], rb[32], rc[32][2], rd[32][2];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          ra[l] = r.a, rb[l] = r.b, rc[l][0] = r.d[0], rc[l][1] = r.d[1];
        }
        mma_sync_f64(ra, rb, rc, rd);
        plant_mma_fault(x.spec, x.sm, rd);
        for (int l = 0; l < 32; ++l) {
          double* out = static_cast<const Regs*>(lanes[l])->d;
          out[0] = rd[l][0], out[1] = rd[l][1];
        }
      },
      &ctx);
}

void mma_f64_m16n8(int k, double (&d)[4], const double* a, const double* b) {
  struct Regs {
    const double* a;
    const double* b;
    double* d;
  };
  struct Ctx {
    MmaSite site;
    int k;
  };
  Regs mine{a, b, d};
  Ctx ctx{{t_launch_spec, here().sm}, k};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        double ra[32][8], rb[32][4], rc[32][4], rd[32][4];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          for (int i = 0; i < x.k / 2; ++i) ra[l][i] = r.a[i];
          for (int i = 0; i < x.k / 4; ++i) rb[l][i] = r.b[i];
          for (int i = 0; i < 4; ++i) rc[l][i] = r.d[i];
        }
        mma_sync_f64_m16n8(x.k, ra, rb, rc, rd);
        plant_mma_fault(x.site.spec, x.site.sm, rd);
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) static_cast<const Regs*>(lanes[l])->d[i] = rd[l][i];
      },
      &ctx);
}

void mma_s8(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  struct Regs {
    const uint32_t* a;
    const uint32_t* b;
    int32_t* d;
  };
  Regs mine{a, b, d};
  MmaSite ctx{t_launch_spec, here().sm};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const MmaSite& x = *static_cast<const MmaSite*>(c);
        uint32_t ra[32][4], rb[32][2];
        int32_t rc[32][4], rd[32][4];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          for (int i = 0; i < 4; ++i) ra[l][i] = r.a[i], rc[l][i] = r.d[i];
          for (int i = 0; i < 2; ++i) rb[l][i] = r.b[i];
        }
        mma_sync_s8(ra, rb, rc, rd);
        plant_mma_fault(x.spec, x.sm, rd);
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) static_cast<const Regs*>(lanes[l])->d[i] = rd[l][i];
      },
      &ctx);
}

unsigned char* dynamic_shared() {
  alignas(16) static thread_local unsigned char buffer[kDynamicSharedBytes];
  return buffer;
}

void nanosleep(unsigned ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
const char* current_kernel() { return t_kernel; }
size_t dynamic_shared_bytes() { return t_smem; }
uint64_t block_serial() { return t_block_serial; }

}  // namespace sdc::emu
