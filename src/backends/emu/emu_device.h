// The emulated device: GPUs that exist only in this process, for tests. Each has a compute capability, a
// number of SMs and a memory size, and runs the project's kernel sources compiled for the host (the `emu`
// target; cuda_emu.h): every stream is a host thread that executes its queue in order (kernels, copies,
// memsets, event records), a kernel's blocks one after another, each block's threads as fibers (block.h).
// Block b of a launch runs on SM b % sms (the documented placement that SM localization then reports).
//
// What a fault can look like is emulated too, for the GPU executor's tests: a kernel launch that fails and loses
// the context (a sticky error), a kernel launch that never ends, memory that runs out, and one lane of the
// tensor cores of one SM flipping a bit of its mma.sync result. As on a GPU, freeing memory waits for the
// device's streams (cudaFree synchronizes), and so does the end of the process through exit() (the CUDA
// runtime's teardown): a process that left a kernel running must end with _Exit, as `run` does. Never shown in --help: `sdcscreen run --backend emulated:SPEC` (see parse_spec).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "src/backends/emu/mma.h"
#include "src/core/device_info.h"

typedef struct CUstream_st* cudaStream_t;

namespace sdc::emu {

// What one emulated GPU is.
struct Spec {
  int cc_major = 9, cc_minor = 0;
  int sms = 8;
  uint64_t memory_bytes = uint64_t{1} << 30;
  // At most this many blocks of each compute kernel run (a seeded sample, the same for every launch of
  // the same kernel and grid); 0: every block. The GPU executor compares only the tiles the sample computed.
  unsigned sample_blocks = 64;
  uint64_t fail_launch = 0;  // the n-th kernel launch on this device faults and loses the context (0: none)
  // The n-th kernel launch on this device never ends (0: none): a hung kernel that, unlike the hang drill's
  // (--inject action=hang), nothing can release.
  uint64_t hang_launch = 0;
  int mma_sm = -1;           // every mma.sync on this SM has bit mma_bit of lane mma_lane's d[0] flipped (f64: bit 0..31 of its low word)
  int mma_lane = 0, mma_bit = 0;
  unsigned slow = 1;  // every launch takes this many times its CPU time: a GPU that slow (the probe's drill)
};

// Parses a device list: "N" (N devices of the default Spec) or specs separated by ',', each
// "sm_<cc>x<sms>" followed by ":key=value" options: mem=<MiB>, sample=<blocks>, fail-launch=<n>, hang-launch=<n>,
// mma-fault=<sm>/<lane>/<bit>, slow=<k> (2..100). Returns "" or what is wrong.
std::string parse_specs(const std::string& text, std::vector<Spec>& out);

// Creates the devices (they live until the process ends) and returns their identities, ordinals from 0.
std::vector<DeviceInfo> create_devices(const std::vector<Spec>& specs);

// ---- called by kernel-side code (cuda_emu.h, device_util.cuh) ----
// Enqueues a kernel launch on stream s: `grid` blocks of `block` threads, each thread running body().
// A bad configuration is the launch's error (cudaGetLastError).
// smem_bytes: the launch's dynamic shared memory (dynamic_shared()); more than the device grants a block
// (max_dynamic_shared of its compute capability) is the launch's error, as on a GPU.
void launch(const char* what, unsigned grid, unsigned block, cudaStream_t s, std::function<void()> body,
            size_t smem_bytes = 0);
// A block's dynamic shared memory (device_util.cuh, dynamic_shared): one buffer per OS thread, 128-byte aligned and
// zeroed when the thread first asks; a block's threads all run on one OS thread, one block at a time. The race
// checker (racecheck.h) treats it as shared memory, and reports accesses beyond the running launch's smem_bytes
// (dynamic_shared_bytes). 227 KiB: the most any GPU grants a block (sm_90 to sm_110).
constexpr size_t kDynamicSharedBytes = 227 * 1024;
// Bytes kept on either side of the buffer, so that a kernel's small overrun lands in them (and the race checker,
// which watches them, reports it) instead of in the allocator's bookkeeping.
constexpr size_t kDynamicSharedGuard = 128;
// The most dynamic shared memory a GPU of compute capability major.minor grants one block once a kernel asks for
// it (cudaDevAttrMaxSharedMemoryPerBlockOptin; the CUDA programming guide's table of compute capabilities):
// 227 KiB on sm_90, sm_100 and sm_110, 163 KiB on sm_80 and sm_87, 99 KiB on sm_86, sm_89 and sm_120, 96 KiB on
// sm_70 and sm_72, 64 KiB on sm_75, 48 KiB before.
constexpr size_t max_dynamic_shared(int major, int minor) {
  if (major >= 9 && major <= 11) return 227 * 1024;
  if (major == 8) return minor == 0 || minor == 7 ? 163 * 1024 : 99 * 1024;
  if (major >= 12) return 99 * 1024;
  if (major == 7) return minor == 5 ? 64 * 1024 : 96 * 1024;
  return 48 * 1024;
}
// The emulated buffer holds what any compute capability grants, and exactly the most.
constexpr bool dynamic_shared_fits() {
  size_t most = 0;
  for (int major = 5; major <= 12; ++major)
    for (int minor = 0; minor <= 9; ++minor) most = std::max(most, max_dynamic_shared(major, minor));
  return most == kDynamicSharedBytes;
}
static_assert(dynamic_shared_fits(), "kDynamicSharedBytes is the most any compute capability grants");
unsigned char* dynamic_shared();
size_t dynamic_shared_bytes();
// The MmaType of a PTX type name ("bf16", "f16", "tf32", "e4m3").
constexpr MmaType mma_type(std::string_view ptx) {
  return ptx == "bf16" ? MmaType::bf16 : ptx == "f16" ? MmaType::f16 : ptx == "tf32" ? MmaType::tf32 : MmaType::e4m3;
}
// One warp's mma.sync, called by every lane of the warp with its own registers.
void mma(MmaType t, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
// One warp's mma.sync m8n8k4 f64 (mma.h: mma_sync_f64), called by every lane with its own registers: d = A B + d.
void mma_f64(double (&d)[2], double a, double b);
// One warp's mma.sync m16n8k{8,16} f64 (mma.h: mma_sync_f64_m16n8), every lane with its own registers (a: k / 2
// values, b: k / 4): d = A B + d, d[0..1] the lane's elements of rows g and d[2..3] those of rows g + 8.
void mma_f64_m16n8(int k, double (&d)[4], const double* a, const double* b);
// One warp's mma.sync m16n8k32 s8.s8.s32 (mma.h: mma_sync_s8), called by every lane with its own registers.
void mma_s8(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);
void nanosleep(unsigned ns);
// The kernel whose block this stream thread runs ("" outside one), and a number that differs for every block
// run on this thread: what the race checker (racecheck.h) tells barrier intervals of different blocks apart by.
const char* current_kernel();
uint64_t block_serial();

}  // namespace sdc::emu
