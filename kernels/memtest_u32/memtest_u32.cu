// memtest_u32 on the device: the sweeps of memtest_u32.h over a region of device memory, one kernel launch per
// sweep, queued back to back on the stream (no host round trip between them).
// Region: scratch memory after the slices' accumulators; region_mib MiB, or free_permille thousandths of the
// device's free memory when the case is prepared (less what the run's other buffers of the case take, which are
// a few bytes per slice), split into `slices` slices of a multiple of 4 words (at most MAX_SLICE_WORDS). The
// emulated device runs a block's threads as fibers on the CPU: it checks these kernels, not memory, so its
// region is at most the CPU's (cpu_slice_words per slice).
// Work split: `parts` blocks of THREADS threads per slice, the same blocks over the same words in every sweep
// (block b: slice b / parts, the 16-byte vectors r x parts x THREADS + part x THREADS + thread of its slice, rows r
// ascending, or descending in a descending sweep), so that a warp's accesses are 512 contiguous bytes and a device
// that runs a sample of the blocks (the emulated one: every launch has one name and one grid, so the same sample)
// reads only words its sample wrote. A mismatch (the fault path only) updates its slice's accumulator with integer
// atomics: a count per pass, the first pass with a mismatch (atomicMin), and of that pass the lowest word with
// the word read and with the reading SM (two 64-bit atomicMins keyed by the word's index in its slice in the
// high half: within one pass each word is read once, by one thread, so the two minima are of one read). The
// record kernel then writes each slice's record (memtest_u32.h) and, as tile_sm, the SM that read the first
// mismatching word, or when there was none the SM of one of the slice's blocks.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/memtest_u32/memtest_u32.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/core/family.h"
#include "src/core/inject.h"
#include "src/core/shape.h"

namespace sdc::memtest_u32::SDC_TARGET {
namespace {

constexpr unsigned THREADS = 256;
constexpr const char* SWEEP = "memtest_u32 sweep";  // one name for every launch of the case: see above

struct Accum {
  uint32_t count[PASSES];
  uint32_t first_pass;
  uint32_t unused;
  unsigned long long word_read;  // (word in slice << 32) | word read, of the first pass's lowest mismatch
  unsigned long long word_sm;    // (word in slice << 32) | %smid
};
static_assert(sizeof(Accum) == 64, "accumulators keep the region 16-byte aligned");

__device__ __forceinline__ void mismatch(Accum* a, int pass, uint64_t j, uint32_t got) {
  atomicAdd(&a->count[pass], 1u);
  if (atomicMin(&a->first_pass, static_cast<uint32_t>(pass)) < static_cast<uint32_t>(pass)) return;
  atomicMin(&a->word_read, (static_cast<unsigned long long>(j) << 32) | got);
  atomicMin(&a->word_sm, (static_cast<unsigned long long>(j) << 32) | cuda::sm_id());
}

// Every block of a slice resets its accumulator and writes its record (the same values): a device that runs a
// sample of the blocks (the same in every launch) then records each slice it swept, whichever of its blocks ran.
__global__ void __launch_bounds__(THREADS) reset_kernel(Accum* acc, unsigned parts) {
  if (threadIdx.x != 0) return;
  Accum& a = acc[blockIdx.x / parts];
  for (int p = 0; p < PASSES; ++p) a.count[p] = 0;
  a.first_pass = NONE;
  a.unused = 0;
  a.word_read = a.word_sm = ~0ull;
}

// Sweep S (memtest_u32.h): reads and checks value(S - 1, i) (S > 0), then writes value(S, i) (S < SWEEPS - 1).
template <int S>
__global__ void __launch_bounds__(THREADS)
    sweep_kernel(uint4* region, uint64_t slice_vecs, unsigned parts, Accum* acc) {
  const uint64_t slice = blockIdx.x / parts, part = blockIdx.x % parts;
  uint4* const base = region + slice * slice_vecs;
  const uint64_t first = slice * slice_vecs * 4;  // the slice's first word in the region
  const uint64_t stride = static_cast<uint64_t>(parts) * THREADS, rows = (slice_vecs + stride - 1) / stride;
  for (uint64_t m = 0; m < rows; ++m) {
    const uint64_t v = (descending(S) ? rows - 1 - m : m) * stride + part * THREADS + threadIdx.x;
    if (v >= slice_vecs) continue;
    const uint64_t j = 4 * v;
    if constexpr (S > 0) {
      const uint4 r = base[v];
      const uint32_t got[4] = {r.x, r.y, r.z, r.w};
      for (int e = 0; e < 4; ++e)
        if (got[e] != value(S - 1, first + j + e)) mismatch(acc + slice, S - 1, j + e, got[e]);
    }
    if constexpr (S < SWEEPS - 1)
      base[v] =
          make_uint4(value(S, first + j), value(S, first + j + 1), value(S, first + j + 2), value(S, first + j + 3));
  }
}

// The memory drill (--inject target=memory): the fault's words of the region take it, between two sweeps.
__global__ void drill_kernel(uint32_t* region, uint64_t words, uint64_t element, WordFault fault) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (uint64_t i = element; i <= fault.last(element) && i < words; i += fault.stride)
    region[i] = fault.apply(region[i]);
}

__global__ void __launch_bounds__(THREADS)
    record_kernel(const Accum* acc, unsigned parts, uint64_t slice_words, float* out, uint32_t* tile_sm) {
  if (threadIdx.x != 0) return;
  const uint64_t slice = blockIdx.x / parts;
  const Accum& a = acc[slice];
  uint32_t w[RECORD_WORDS];
  for (int p = 0; p < PASSES; ++p) w[p] = a.count[p];
  for (uint32_t o = PASSES; o < RECORD_WORDS; ++o) w[o] = healthy_word(o);
  uint32_t sm = cuda::sm_id();
  if (a.first_pass != NONE) {
    const uint64_t i = slice * slice_words + (a.word_read >> 32);
    w[R_FIRST_PASS] = a.first_pass;
    w[R_OFFSET_LO] = static_cast<uint32_t>(4 * i);
    w[R_OFFSET_HI] = static_cast<uint32_t>((4 * i) >> 32);
    w[R_EXPECTED] = value(static_cast<int>(a.first_pass), i);
    w[R_READ] = static_cast<uint32_t>(a.word_read);
    w[R_SM] = sm = static_cast<uint32_t>(a.word_sm);
  }
  uint32_t* const rec = reinterpret_cast<uint32_t*>(out) + slice * RECORD_WORDS;
  for (uint32_t o = 0; o < RECORD_WORDS; ++o) rec[o] = w[o];
  tile_sm[slice] = sm;
}

template <int S>
void launch_sweep(uint4* region, uint64_t slice_vecs, unsigned parts, unsigned grid, Accum* acc, cudaStream_t s) {
  cuda::launch(SWEEP, sweep_kernel<S>, grid, THREADS, s, region, slice_vecs, parts, acc);
}

class MemtestDevice final : public cuda::DeviceProblem {
 public:
  explicit MemtestDevice(const Case& c) : slices_(static_cast<uint64_t>(dim(c, "slices"))) {
    size_t free_b = 0, total_b = 0;
    SDC_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    const uint64_t region_mib = static_cast<uint64_t>(dim(c, "region_mib"));
    const uint64_t bytes =
        region_mib ? region_mib << 20 : free_b / 1000 * static_cast<uint64_t>(dim(c, "free_permille"));
    // The record, SM and digest buffers of the case, and the accumulators.
    const uint64_t others = slices_ * (RECORD_WORDS * 4 + 4 + 8 + sizeof(Accum));
    uint64_t words = bytes > others ? (bytes - others) / 4 / slices_ / 4 * 4 : 0;
    words = std::min<uint64_t>(words, MAX_SLICE_WORDS);
#if defined(SDC_EMU)
    words = std::min<uint64_t>(words, static_cast<uint64_t>(dim(c, "cpu_slice_words")));
#endif
    if (words == 0)
      throw std::runtime_error("memtest_u32: " + std::to_string(free_b >> 20) +
                               " MiB free on the device leaves no region to test");
    slice_words_ = words;
    permille_ = region_mib ? 0 : static_cast<uint64_t>(dim(c, "free_permille"));
    free_ = free_b;
    sms_ = cuda::sm_count();
    fit_parts();
  }

  uint64_t input_bytes(size_t) const override { return 0; }
  std::string why_no_thread_map() const override {
    return "a slice's record is counts and its first mismatch, stored by whichever thread found it (the record "
           "names the SM that read the word)";
  }
  cuda::Engine engine() const override {
    return {cuda::OWN_KERNELS, "11 sweeps of 16-byte vectors, " + std::to_string(parts_) + " blocks of " +
                                   std::to_string(THREADS) + " threads per slice"};
  }
  uint64_t scratch_bytes() const override { return slices_ * sizeof(Accum) + region_bytes(); }
  // A share of the free memory shrinks under --max-memory (a fixed region is the case's: it does not).
  void cap_scratch(uint64_t bytes) override {
    if (!permille_ || bytes >= scratch_bytes()) return;
    const uint64_t room = bytes > slices_ * sizeof(Accum) ? bytes - slices_ * sizeof(Accum) : 0;
    slice_words_ = room / 4 / slices_ / 4 * 4;
    capped_ = true;
    if (slice_words_ == 0)
      throw std::runtime_error("memtest_u32: --max-memory (" + std::to_string(bytes) +
                               " bytes left for the region) leaves no region to test");
    fit_parts();
  }
  double work_ops() const override { return 2.0 * PASSES * static_cast<double>(region_bytes()); }
  std::string note(const void* scratch) const override {
    const auto base = reinterpret_cast<uintptr_t>(scratch) + slices_ * sizeof(Accum);
    std::string size = permille_ ? std::to_string(permille_ / 10) + "." + std::to_string(permille_ % 10) + "% of the " +
                                       std::to_string(free_ >> 20) + " MiB free"
                                 : "a fixed size (" + std::to_string(free_ >> 20) + " MiB free)";
    if (capped_) size += ", capped by --max-memory";
#if defined(SDC_EMU)
    size += ", at most the CPU's slices on the emulated device";
#endif
    char line[320];
    std::snprintf(line, sizeof line,
                  "memory test region: %llu bytes (%llu MiB) at device address 0x%llx, %llu slices of %llu words: %s",
                  static_cast<unsigned long long>(region_bytes()),
                  static_cast<unsigned long long>(region_bytes() >> 20), static_cast<unsigned long long>(base),
                  static_cast<unsigned long long>(slices_), static_cast<unsigned long long>(slice_words_),
                  size.c_str());
    return line;
  }
  bool set_replay_fault(const Injection* inj) override {
    has_fault_ = inj != nullptr;
    if (inj) {
      fault_ = inj->word();
      fault_element_ = inj->element;
      fault_pass_ = inj->memory_pass;
    }
    return true;
  }
  bool replay_fault_fired() const override { return fired_; }
  uint64_t replay_fault_tile() const override { return fault_element_ / slice_words_; }
  void generate(size_t, void*, cudaStream_t) const override {}
  void compute(const void* const*, float* out, uint32_t* tile_sm, void* scratch, cudaStream_t s) const override {
    Accum* const acc = static_cast<Accum*>(scratch);
    uint4* const region = reinterpret_cast<uint4*>(static_cast<char*>(scratch) + slices_ * sizeof(Accum));
    const uint64_t vecs = slice_words_ / 4;
    const auto grid = static_cast<unsigned>(slices_ * parts_);
    const uint64_t words = slices_ * slice_words_;
    fired_ = has_fault_ && fault_element_ < words;
    const auto drill = [&](int sweep) {
      if (fired_ && fault_pass_ == sweep)
        cuda::launch("memtest_u32 drill", drill_kernel, 1, 32, s, reinterpret_cast<uint32_t*>(region), words,
                     fault_element_, fault_);
    };
    cuda::launch(SWEEP, reset_kernel, grid, THREADS, s, acc, parts_);
    // Sweep 0 .. SWEEPS - 1 in order, each followed by the drill of the pass that reads what it wrote (a pass is
    // 0 .. PASSES - 1, so nothing follows the last sweep).
    [&]<int... S>(std::integer_sequence<int, S...>) {
      ((launch_sweep<S>(region, vecs, parts_, grid, acc, s), drill(S)), ...);
    }(std::make_integer_sequence<int, SWEEPS>{});
    cuda::launch(SWEEP, record_kernel, grid, THREADS, s, acc, parts_, slice_words_, out, tile_sm);
  }

 private:
  uint64_t region_bytes() const { return slices_ * slice_words_ * 4; }
  // About 8 blocks of THREADS per SM in all (2048 threads), never more than a slice has vectors for (the emulated
  // device too: its small region then has several blocks per slice, as a GPU's).
  void fit_parts() {
    const uint64_t want = (static_cast<uint64_t>(sms_) * 8 + slices_ - 1) / slices_;
    parts_ = static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(want, slice_words_ / 4 / THREADS)));
  }

  uint64_t slices_, slice_words_ = 0, permille_ = 0, free_ = 0;
  int sms_ = 1;
  unsigned parts_ = 1;
  bool capped_ = false;
  bool has_fault_ = false;
  mutable bool fired_ = false;
  WordFault fault_{};
  uint64_t fault_element_ = 0;
  int fault_pass_ = 0;
};

}  // namespace

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return std::make_unique<MemtestDevice>(c); }

}  // namespace sdc::memtest_u32::SDC_TARGET
