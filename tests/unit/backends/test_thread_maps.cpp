// The kernels' thread-to-element maps (DeviceProblem::thread_of) checked against the stores they make: each
// family's kernels run on the emulated device with the output buffer watched by the race checker's store hooks
// (racecheck.h: watch, writers), and every word of every tile the sampled blocks computed must have been stored
// last by the thread the map names, in a block on the SM the kernel recorded for the tile. A family without a
// map must say why (why_no_thread_map). A planted kernel shows the check failing on a wrong map and on a word
// no thread stored. Compiled like test_racecheck.cpp (-DSDC_EMU, the checker's instrumentation).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/cuda/device_util.cuh"
#include "src/backends/cuda/gpu_state.h"
#include "src/backends/emu/emu_device.h"
#include "src/backends/emu/racecheck.h"
#include "src/core/family.h"
#include "src/core/patterns.h"
#include "tests/unit/backends/emu_problem.h"
#include "tests/unit/catch.h"

using namespace sdc;
using test::emulated;
namespace rc = sdc::emu::racecheck;

namespace {

// What the check of one map found.
struct MapCheck {
  uint64_t tiles = 0, words = 0;      // tiles the sampled blocks computed, and their words
  uint64_t wrong = 0, unwritten = 0;  // words stored by another thread than the map's, or by none
  uint64_t wrong_sm = 0;              // words stored by a block on another SM than the tile's recorded one
  uint64_t several = 0;               // words that more than one thread stored
  std::vector<std::string> first;     // the first few of those, described
  void note(const std::string& what) {
    if (first.size() < 5) first.push_back(what);
  }
};

// Runs dev's compute() on rt's device (a sampling emulated one with `sms` SMs) with the output watched, and checks
// the map on every word of every tile whose SM was recorded.
MapCheck run_and_check(cuda::DeviceRuntime& rt, const cuda::DeviceProblem& dev, size_t inputs, uint64_t tiles,
                       uint32_t tile_elements, int sms) {
  const std::vector<uint32_t> sm = test::run_problem(
      rt, dev, inputs, tiles, tile_elements, [](const std::vector<test::Range>& r) { rc::watch(r[0].p, r[0].bytes); });
  const std::vector<rc::Writer> writers = rc::writers();
  rc::unwatch();

  MapCheck r;
  const cuda::OutputLayout layout = dev.output_layout();
  for (uint64_t t = 0; t < tiles; ++t) {
    if (sm[t] == cuda::NO_SM) continue;
    ++r.tiles;
    for (uint32_t o = 0; o < tile_elements; ++o) {
      ++r.words;
      const rc::Writer& w = writers[layout.index(t, o, tile_elements)];
      r.several += w.several;
      int warp = -1, lane = -1;
      const bool mapped = dev.thread_of(t, o, warp, lane);
      if (!w.written) {
        ++r.unwritten;
        r.note(fmt::format("tile {} word {}: no thread stored it", t, o));
        continue;
      }
      if (!mapped || static_cast<unsigned>(warp * 32 + lane) != w.thread) {
        ++r.wrong;
        r.note(
            fmt::format("tile {} word {}: the map names warp {} lane {}, thread {} (warp {} lane {}) of block {} "
                        "stored it",
                        t, o, warp, lane, w.thread, w.thread / 32, w.thread % 32, w.block));
      }
      if (w.block % static_cast<unsigned>(sms) != sm[t]) {
        ++r.wrong_sm;
        r.note(fmt::format("tile {} word {}: stored by block {} (SM {}), the tile's SM is {}", t, o, w.block,
                           w.block % static_cast<unsigned>(sms), sm[t]));
      }
    }
  }
  return r;
}

// What the planted kernel does besides its plain stores.
enum class Plant { none, hole, shared_word };

// The planted kernel: 4 tiles of 128 words, one block of 64 threads each; thread t stores words t and t + 64
// of its block's tile. Plant::hole: thread 63 leaves word 127 out; Plant::shared_word: thread 62 stores word
// 127 too, before thread 63 does (the emulated block runs its threads in order, and there is no barrier).
__global__ void planted_kernel(float* out, uint32_t* tile_sm, Plant plant) {
  const unsigned t = threadIdx.x;
  float* tile = out + blockIdx.x * 128;
  if (plant == Plant::shared_word && t == 62) tile[127] = -1.0f;
  tile[t] = static_cast<float>(t);
  if (plant != Plant::hole || t != 63) tile[t + 64] = static_cast<float>(t);
  if (t == 0) tile_sm[blockIdx.x] = cuda::sm_id();
}

class PlantedDevice final : public cuda::DeviceProblem {
 public:
  PlantedDevice(bool right_map, Plant plant) : right_(right_map), plant_(plant) {}
  uint64_t input_bytes(size_t) const override { return 0; }
  cuda::Engine engine() const override { return {"planted", "planted"}; }
  void generate(size_t, void*, cudaStream_t) const override {}
  // The right map: word o is thread o % 64's. The wrong one takes lane o % 32 of warp 0 for every word.
  bool thread_of(uint64_t, uint32_t offset, int& warp, int& lane) const override {
    const uint32_t t = right_ ? offset % 64 : offset % 32;
    warp = static_cast<int>(t / 32);
    lane = static_cast<int>(t % 32);
    return true;
  }
  void compute(const void* const*, float* out, uint32_t* tile_sm, void*, cudaStream_t s) const override {
    cuda::launch("planted_kernel", planted_kernel, 4, 64, s, out, tile_sm, plant_);
  }

 private:
  bool right_;
  Plant plant_;
};

}  // namespace

TEST_CASE("the thread-map check fails on a wrong map and on a word no thread stored; it counts shared words",
          "[thread_map]") {
  cuda::DeviceRuntime& rt = emulated(2, 2);  // blocks 0..3 on SMs 0, 1, 0, 1; 2 of the 4 sampled
  const MapCheck right = run_and_check(rt, PlantedDevice(true, Plant::none), 0, 4, 128, 2);
  CHECK(right.tiles == 2);
  CHECK(right.words == 256);
  CHECK(right.wrong + right.unwritten + right.wrong_sm + right.several == 0);

  // A word two threads store: the last store counts, and the word is counted as shared.
  const MapCheck shared = run_and_check(rt, PlantedDevice(true, Plant::shared_word), 0, 4, 128, 2);
  CHECK(shared.wrong + shared.unwritten + shared.wrong_sm == 0);
  CHECK(shared.several == 2);

  const MapCheck wrong = run_and_check(rt, PlantedDevice(false, Plant::none), 0, 4, 128, 2);
  CHECK(wrong.wrong == 2 * 64);  // words 32..63 and 96..127 of each tile belong to warp 1
  REQUIRE(!wrong.first.empty());
  CHECK(wrong.first[0].find("word 32: the map names warp 0 lane 0, thread 32 (warp 1 lane 0)") != std::string::npos);

  const MapCheck hole = run_and_check(rt, PlantedDevice(true, Plant::hole), 0, 4, 128, 2);
  CHECK(hole.unwritten == 2);
  CHECK(hole.wrong == 0);
  REQUIRE(!hole.first.empty());
  CHECK(hole.first[0].find("word 127: no thread stored it") != std::string::npos);
}

TEST_CASE("every kernel's thread map names the thread that stored each output word", "[thread_map]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  // Per family with a map and per engine, the case of the battery with the fewest input and output elements.
  emulated(4, 2);  // current while the cases are prepared (some read the GPU's SM count)
  std::vector<std::string> without_map;
  std::vector<std::pair<const Family*, const Case*>> chosen;
  for (const auto& [f, c] : test::least_costly_per_engine(ps)) {
    const auto dev = f->prepare_emu(*c);
    int warp = 0, lane = 0;
    if (dev->thread_of(0, 0, warp, lane)) {
      chosen.emplace_back(f, c);
      continue;
    }
    INFO(f->id << " has no thread map and gives no reason");
    CHECK(!dev->why_no_thread_map().empty());
    const std::string why = std::string(f->id) + ": " + dev->why_no_thread_map();
    if (without_map.empty() || without_map.back() != why) without_map.push_back(why);
  }
  for (const std::string& s : without_map) WARN("no thread map: " << s);
  CHECK(chosen.size() >= 20);  // every family with an emulated kernel but the two below
  // The families whose outputs no one thread of a block stores: the training-step replays, fp32 and bf16
  // (thousands of launches per output), and the memory test (its records are written by whichever thread found a
  // mismatch).
  std::vector<std::string> unmapped;
  for (const std::string& s : without_map) unmapped.push_back(s.substr(0, s.find(':')));
  CHECK(unmapped == std::vector<std::string>{"train_step_f32", "memtest_u32", "train_step_bf16"});

  // On GPUs of 4, 16 and 32 SMs: gemm_f32's 512 x 512 case takes its 128 x 128, 128 x 64 and 64 x 64 block
  // tiles (chosen from the SM count), whose tiles sit at every position of their block. 2 blocks of each
  // compute kernel: the instrumented kernels are slow.
  for (const int sms : {4, 16, 32}) {
    cuda::DeviceRuntime& rt = emulated(sms, 2);
    for (const auto& [f, c] : chosen) {
      const auto p = f->prepare(*c);
      const auto dev = f->prepare_emu(*c);
      INFO(c->id << " [" << dev->engine().algorithm << "] on " << sms << " SMs");
      const MapCheck r = run_and_check(rt, *dev, p->inputs().size(), p->tile_count(), p->tile_elements(), sms);
      for (const std::string& s : r.first) UNSCOPED_INFO(s);
      CHECK(r.tiles > 0);
      CHECK(r.wrong == 0);
      CHECK(r.unwritten == 0);
      CHECK(r.wrong_sm == 0);
      CHECK(r.several == 0);  // each word has one storing thread: what the map names is the whole story
    }
  }
}
