// A kernel family: a stable id, a description, and the arithmetic of one prepared case (a Problem).
// The scheduler and the executors own time, repeats, units and reporting; a family owns only its arithmetic
// and geometry.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/spec/generator.h"

namespace sdc {
namespace cuda {
class DeviceProblem;  // src/backends/cuda/device_problem.h
}
struct Injection;  // inject.h

enum class Mode { exact, exact_integer, recorded, consensus };
const char* mode_name(Mode m);
// exact and exact-integer cases have a golden computed on the CPU (`golden`); recorded and consensus
// cases are judged on GPUs only (recorded goldens, repeats, the node's other GPUs).
inline bool has_cpu_golden(Mode m) { return m == Mode::exact || m == Mode::exact_integer; }

struct CaseShape {
  std::map<std::string, int64_t> dims;  // family-specific: m/n/k, heads/seq/dim/causal, rows/cols...
};

// One test case as battery.json defines it.
struct Case {
  std::string id;  // stable: fleets key dashboards and drain rules on it
  std::string family;
  Mode mode = Mode::exact;
  Distribution distribution = Distribution::uniform;
  uint64_t data_seed = 0;  // the inputs and therefore the golden digests depend on it
  CaseShape shape;
  std::map<std::string, int> iterations;  // profile name -> iterations; a case belongs to these profiles
};

struct TensorInfo {
  std::string name;  // as --inject names it: a, b, q, k, v, x, w, logits
  uint64_t elements;
};

// Per-worker scratch memory, reused across tiles.
struct Workspace {
  std::vector<float> f;
  std::vector<float> g;
  std::vector<float> h;
  std::vector<double> d;   // the fp64 families' packing buffers
  std::vector<double> dt;  // and their tile in binary64 before it is stored as words
  std::vector<int32_t> i32;  // the integer families' unpacked inputs and accumulators
};

// Where the tiles lie over the output, for a picture of the failing ones: tile t at row t / cols, column
// t % cols of a rows x cols grid, and what the two directions are.
struct TileGrid {
  uint64_t rows = 0, cols = 0;
  std::string axes;
};

// A slot of a replay's tile that holds one of the paper's metrics (mismatch frequency and severity, the
// gradient-difference ratio, a step's loss, the final parameter distance and loss-spike flag), named for the
// reports, which list a failing unit's by name and value, never capped (the digest slots' listing is).
struct ReplayMetricSlot {
  uint32_t offset = 0;  // in the tile
  int level = 0;        // 1, 2 or 3
  std::string site;     // "layer0.mlp.up.forward" (level 1), "grad layer0.attn.wq", "grad model", "param embed",
                        // "step 5", "final"
  std::string metric;   // "mismatch_frequency", "mismatch_severity", "grad_diff_ratio", "loss", ...
  bool always = false;  // listed for a failing tile even at the reference's value (level 3's final summary)
};

// What a problem that replays whole training steps (Problem::replay, of a family with Family::replay) offers
// beyond its tiles: faults injected inside the computation of a tile, and an in-process reference its tiles
// are measured against.
class ReplayProblem {
 public:
  virtual ~ReplayProblem() = default;
  // A fault injected inside the computation of a tile (--inject submodule=...), where an output flip after
  // the tile would not do. Returns whether the fault was applied.
  virtual bool compute_tile_with_fault(const float* const* in, uint64_t tile, float* out, Workspace& ws,
                                       const Injection&) const = 0;
  // Checks such a fault against the case (and completes it); "" or what is wrong.
  virtual std::string check_fault(Injection&) const = 0;
  // The reference (computation sync and the paper's metrics need the reference tensors, not only digests). A
  // unit that computed the reference wrong would make every healthy unit fail, so the executor has it
  // computed on a unit of its choice (compute_reference, on that unit's thread; `fault`: a replay fault that
  // unit carries, or null; returns whether the fault fired) and checks reference_tile, the tile a healthy
  // unit then computes, against the golden before any tile runs.
  virtual bool compute_reference(const Injection* fault) const = 0;
  virtual void reference_tile(uint64_t tile, float* out) const = 0;
  // The tile's metric slots, in slot order (every slot not listed is a digest). Metrics whose site is
  // "step S" form per-step series (the trajectory of level 3), which the reports summarize and draw.
  virtual const std::vector<ReplayMetricSlot>& metric_slots() const = 0;
  // The failure mode a failing tile's trajectory shows (actual) against a healthy unit's tile (expected), by
  // name ("gradual_drift"), or "" for a tile that holds no trajectory.
  virtual std::string failure_mode(const float* expected, const float* actual) const = 0;
};

// A case prepared for computation: dimensions checked, tile geometry known.
class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::vector<TensorInfo> inputs() const = 0;
  virtual void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const = 0;
  virtual uint64_t tile_count() const = 0;
  virtual uint32_t tile_elements() const = 0;  // every tile has the same number of output elements
  // The fast (vectorized) path, used by the screen and by `golden`.
  virtual void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const = 0;
  // The specification written plainly; bit-identical to compute_tile, used to cross-check it.
  virtual void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const = 0;
  // The output as a logical tensor: element count, the tile and offset of a logical element, the
  // logical element of a tile offset, and a readable name for it ("C[3][17]").
  virtual uint64_t output_elements() const = 0;
  virtual void locate(uint64_t element, uint64_t& tile, uint32_t& offset) const = 0;
  virtual uint64_t logical_element(uint64_t tile, uint32_t offset) const = 0;
  virtual std::string element_name(uint64_t element) const = 0;
  virtual std::string tile_name(uint64_t tile) const = 0;
  // One line that reads a failing tile's output as what it means (the memory test: the pass, word and bits of its
  // first mismatch), added to the test's notes with the tile's listed elements; "" for none (the default).
  virtual std::string describe_tile(uint64_t /*tile*/, const float* /*actual*/) const { return ""; }
  // The tiles over the output (default: one row, in index order).
  virtual TileGrid tile_grid() const { return {1, tile_count(), "tiles in index order"}; }
  // Multiply-adds (or comparable operations) per tile, for throughput figures.
  virtual double tile_flops() const = 0;
  // The training-step replay's side of the problem (ReplayProblem above); null for every other family.
  virtual const ReplayProblem* replay() const { return nullptr; }
  // A fault in the memory the computation tests (--inject target=memory: the memory test, whose words flip or
  // stick between a pass's write and its read). check_memory_fault: "" or what is wrong with the fault (it
  // completes it: Injection::memory_pass), and in `tile` the tile whose computation holds its first word;
  // compute_tile_with_memory_fault: compute_tile with the fault applied to the words of it that lie in the tile's
  // memory, returning whether any did.
  virtual std::string check_memory_fault(Injection&, uint64_t& /*tile*/) const {
    return "target=memory drills the memory test's region (memtest_u32 cases)";
  }
  virtual bool compute_tile_with_memory_fault(const float* const* in, uint64_t tile, float* out, Workspace& ws,
                                              const Injection&) const {
    compute_tile(in, tile, out, ws);
    return false;
  }
};

struct Family {
  const char* id;
  const char* description;
  std::vector<Mode> modes;
  std::vector<std::string> backends;  // "cpu", "cuda"
  std::vector<std::string> shape_keys;
  // Checks the case's shape; returns an empty string when valid, else what is wrong.
  std::string (*validate)(const Case& c);
  std::unique_ptr<Problem> (*prepare)(const Case& c);  // only called on a validated case
  // The device side (kernels/<family>/<family>.cu); null in a build without CUDA or for a CPU-only family.
  std::unique_ptr<cuda::DeviceProblem> (*prepare_cuda)(const Case& c) = nullptr;
  // The same device side compiled for the emulated device (the kernels on the CPU; every build); null for a
  // family whose device side is a vendor library (cuBLASLt), which only a real GPU runs.
  std::unique_ptr<cuda::DeviceProblem> (*prepare_emu)(const Case& c) = nullptr;
  // A family computed from another family's inputs to the same exact output (a cuBLASLt twin) names that
  // family: its cases' goldens are the twin's cases' of the same definition (patterns.h), not copies.
  const char* goldens_of = nullptr;
  // What the family's device side is, in every build (the registry sets it from the family table's line):
  // "kernel" (a CUDA kernel of the project's own, which the emulated device runs too), "library" (cuBLASLt:
  // a real GPU only) or "none" (a CPU-only family).
  const char* device_side = "none";
  // The family replays whole training steps: its problems have a ReplayProblem (Problem::replay), its cases
  // take --inject submodule=..., and its element names carry the failing site (report.h, replay_site).
  bool replay = false;
  // 32-bit words per value of its tensors: 1 (fp32, and the narrower formats held in fp32), or 2 for a
  // binary64 family (src/spec/f64.h: its inputs, tiles and output elements count words, low half first).
  unsigned value_words = 1;
  // Its outputs hold NaNs whose bits its specification defines (convert_f32: each conversion's canonical NaN),
  // so a golden may hold them; every other family's outputs are NaN-free by construction (a NaN's bits are
  // otherwise not portable) and a golden holding one is refused.
  bool defined_nans = false;
  // Integer families (gemm_i8): each input word packs 4 int8 values (low byte first), which the coverage table
  // classifies as integers; each output word is an int32, which miscompares and reports read as a signed integer
  // (expected, actual, their difference) rather than as fp32 bits with ulps.
  bool int8_inputs = false;
  bool int32_outputs = false;
  // Its output words are a record (memtest_u32: mismatch counts, offsets, the first faulty word and the word
  // read), not values a unit computed: a difference's flipped bits say nothing about the faulty bits, so the
  // reports give no bit signature for it (report.h, has_bit_signature); the record says what was wrong.
  bool record_outputs = false;
  // A family without a CPU golden (recorded, consensus) whose unspecified arithmetic the emulated device models
  // otherwise than tensor cores (each exact sum rounded once): what it computes instead, for the emulated run's
  // note (sfu_f32: the host C library's functions in place of the SFU's approximations).
  const char* emulated_arithmetic = nullptr;
  // Keys a case may add to its shape (a default applies without them): the training-step replay's heads and tp.
  std::vector<std::string> optional_shape_keys = {};
};

// The registry: every family in one explicit list, stable order.
const std::vector<Family>& families();
const Family* find_family(const std::string& id);
// The ids of the families with Family::replay, in table order, joined by ", " (for messages and --help).
std::string replay_family_ids();

}  // namespace sdc
