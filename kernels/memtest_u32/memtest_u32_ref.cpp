// memtest_u32 on the CPU: the sweeps of memtest_u32.h over one host buffer of `cpu_slice_words` words per tile
// (the worker's workspace), through volatile accesses so that every read and write reaches memory as written.
// This is the reference `golden` computes the fixed healthy records with, and what the CPU backend screens: the
// host's caches and the memory under a small buffer, not the host's DRAM at large. Registration, geometry,
// record names and the memory drill (--inject target=memory) here too.
#include <fmt/format.h>

#include <cstring>

#include "kernels/memtest_u32/memtest_u32.h"
#include "src/core/family_util.h"
#include "src/core/inject.h"

namespace sdc::memtest_u32 {
namespace {

// The record of one slice as the sweeps build it (memtest_u32.h, "Output").
struct Record {
  uint32_t count[PASSES] = {};
  uint32_t first_pass = NONE;
  uint64_t first_word = ~0ull;  // in the region
  uint32_t expected = 0, read = 0;

  void mismatch(int pass, uint64_t word, uint32_t want, uint32_t got) {
    ++count[pass];
    if (first_pass != NONE && first_pass < static_cast<uint32_t>(pass)) return;
    if (first_pass == static_cast<uint32_t>(pass) && first_word <= word) return;
    first_pass = static_cast<uint32_t>(pass);
    first_word = word;
    expected = want;
    read = got;
  }
  void store(float* out) const {
    uint32_t w[RECORD_WORDS];
    for (int p = 0; p < PASSES; ++p) w[p] = count[p];
    w[R_FIRST_PASS] = first_pass;
    const uint64_t offset = first_pass == NONE ? ~0ull : first_word * 4;
    w[R_OFFSET_LO] = static_cast<uint32_t>(offset);
    w[R_OFFSET_HI] = static_cast<uint32_t>(offset >> 32);
    w[R_EXPECTED] = expected;
    w[R_READ] = read;
    w[R_SM] = NONE;  // no SM read it
    std::memcpy(out, w, sizeof w);
  }
};

// The sweeps over the n words of mem, word 0 being word `first` of the region. `fault` (or null) hits the
// words of the region it names that lie in mem, after the sweep that writes what its pass reads.
// Returns whether it hit any.
bool run_sweeps(volatile uint32_t* mem, uint64_t n, uint64_t first, const Injection* fault, float* out) {
  Record rec;
  bool hit = false;
  for (int s = 0; s < SWEEPS; ++s) {
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t j = descending(s) ? n - 1 - k : k;
      const uint64_t i = first + j;
      if (s > 0) {
        const uint32_t got = mem[j], want = value(s - 1, i);
        if (got != want) rec.mismatch(s - 1, i, want, got);
      }
      if (s < SWEEPS - 1) mem[j] = value(s, i);
    }
    if (fault && fault->memory_pass == s) {
      const WordFault word = fault->word();
      for (uint64_t i = fault->element; i <= word.last(fault->element); i += word.stride)
        if (i >= first && i < first + n) {
          mem[i - first] = word.apply(mem[i - first]);
          hit = true;
        }
    }
  }
  rec.store(out);
  return hit;
}

const char* const FIELD_NAMES[RECORD_WORDS - PASSES] = {"first.pass",     "first.offset_lo", "first.offset_hi",
                                                        "first.expected", "first.read",      "first.sm"};

class MemtestProblem final : public Problem {
 public:
  explicit MemtestProblem(const Case& c)
      : slices_(static_cast<uint64_t>(dim(c, "slices"))), words_(static_cast<uint64_t>(dim(c, "cpu_slice_words"))) {}

  std::vector<TensorInfo> inputs() const override { return {}; }
  void generate_input(size_t, uint64_t, uint64_t, float*) const override {}
  uint64_t tile_count() const override { return slices_; }
  uint32_t tile_elements() const override { return RECORD_WORDS; }
  TileGrid tile_grid() const override { return {1, slices_, "the region's slices in address order"}; }
  void compute_tile(const float* const*, uint64_t tile, float* out, Workspace& ws) const override {
    run_sweeps(buffer(ws), words_, tile * words_, nullptr, out);
  }
  void compute_tile_scalar(const float* const*, uint64_t tile, float* out) const override {
    Workspace ws;
    run_sweeps(buffer(ws), words_, tile * words_, nullptr, out);
  }
  uint64_t output_elements() const override { return slices_ * RECORD_WORDS; }
  void locate(uint64_t e, uint64_t& tile, uint32_t& offset) const override {
    tile = e / RECORD_WORDS;
    offset = static_cast<uint32_t>(e % RECORD_WORDS);
  }
  uint64_t logical_element(uint64_t tile, uint32_t offset) const override { return tile * RECORD_WORDS + offset; }
  std::string element_name(uint64_t e) const override {
    const uint64_t slice = e / RECORD_WORDS;
    const auto o = static_cast<uint32_t>(e % RECORD_WORDS);
    if (o < PASSES) return fmt::format("mismatches.{}[{}]", pass_name(static_cast<int>(o)), slice);
    return fmt::format("{}[{}]", FIELD_NAMES[o - PASSES], slice);
  }
  std::string tile_name(uint64_t tile) const override { return fmt::format("slice {}", tile); }
  std::string describe_tile(uint64_t tile, const float* actual) const override {
    uint32_t w[RECORD_WORDS];
    std::memcpy(w, actual, sizeof w);
    std::string counts;
    for (int p = 0; p < PASSES; ++p)
      if (w[p]) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", pass_name(p), w[p]);
    if (w[R_FIRST_PASS] >= PASSES)
      return fmt::format("memory test slice {}: no first mismatch recorded (mismatches: {})", tile,
                         counts.empty() ? "none" : counts);
    const uint64_t offset = uint64_t{w[R_OFFSET_HI]} << 32 | w[R_OFFSET_LO];
    return fmt::format(
        "memory test slice {}: pass {} read 0x{:08x} for 0x{:08x} (bits 0x{:08x}) at region offset 0x{:x} (the "
        "region's device address is in the notes), read {}; mismatches: {}",
        tile, pass_name(static_cast<int>(w[R_FIRST_PASS])), w[R_READ], w[R_EXPECTED], w[R_READ] ^ w[R_EXPECTED], offset,
        w[R_SM] == NONE ? std::string("by a CPU") : fmt::format("by SM {}", w[R_SM]), counts);
  }
  // Reads and writes of the CPU slice (the watchdog's and the throughput's measure of the work).
  double tile_flops() const override { return 2.0 * PASSES * static_cast<double>(words_); }

  std::string check_memory_fault(Injection& inj, uint64_t& tile) const override {
    inj.memory_pass = -1;
    for (int p = 0; p < PASSES; ++p)
      if (inj.pass.empty() ? p == 0 : inj.pass == pass_name(p)) inj.memory_pass = p;
    if (inj.memory_pass < 0) {
      std::string names;
      for (int p = 0; p < PASSES; ++p) names += fmt::format("{}{}", p ? ", " : "", pass_name(p));
      return fmt::format("pass={} is no pass of the memory test (passes: {})", inj.pass, names);
    }
    inj.pass = pass_name(inj.memory_pass);  // completed: the report names the pass
    // On the CPU the region is slices x cpu_slice_words words; a device's is larger (and checked when it runs).
    if (inj.word().last(inj.element) >= slices_ * words_)
      return fmt::format("element={} (count={} stride={}) runs past the region on the CPU ({} words: {} slices of {})",
                         inj.element, inj.count, inj.stride, slices_ * words_, slices_, words_);
    tile = inj.element / words_;
    return "";
  }
  bool compute_tile_with_memory_fault(const float* const*, uint64_t tile, float* out, Workspace& ws,
                                      const Injection& inj) const override {
    return run_sweeps(buffer(ws), words_, tile * words_, &inj, out);
  }

 private:
  volatile uint32_t* buffer(Workspace& ws) const {
    if (ws.i32.size() < words_) ws.i32.resize(words_);
    return reinterpret_cast<volatile uint32_t*>(ws.i32.data());
  }

  uint64_t slices_, words_;
};

std::string validate(const Case& c) {
  if (std::string e = check_shape(c, {{"slices", 1, 4096, 1},
                                      {"cpu_slice_words", 4, 1 << 24, 4},
                                      {"region_mib", 0, 1 << 24, 1},
                                      {"free_permille", 0, 950, 1}});
      !e.empty())
    return e;
  if ((dim(c, "region_mib") == 0) == (dim(c, "free_permille") == 0))
    return fmt::format(
        "case {}: give exactly one of region_mib (a fixed region) and free_permille (a share of the "
        "device's free memory)",
        c.id);
  return "";
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<MemtestProblem>(c); }

}  // namespace

Family family() {
  Family f{"memtest_u32",
           "device memory: walking ones and zeros, moving inversions and each word's own address over a region",
           {Mode::exact},
           {"cpu", "cuda"},
           {"slices", "cpu_slice_words", "region_mib", "free_permille"},
           validate,
           prepare};
  f.int32_outputs = true;   // counts, offsets and words: integers, never fp32 values
  f.record_outputs = true;  // a record, whose flipped bits are no signature (the notes read it as a memory fault)
  return f;
}

}  // namespace sdc::memtest_u32
