// Running a family's device side on the emulated device, for the tests compiled with the race checker's
// instrumentation (test_thread_maps.cpp, test_bankcheck.cpp): an emulated GPU of a given SM count that samples
// blocks, the battery's least costly case of each family and engine, and one compute() of a device problem as
// the engine makes it (its inputs generated on the device first).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/cuda/gpu_state.h"
#include "src/backends/emu/emu_device.h"
#include "src/core/family.h"
#include "src/core/patterns.h"

namespace sdc::test {

// An emulated GPU of `sms` SMs that runs `sample` blocks of each compute kernel, made once per shape and made
// current.
inline cuda::DeviceRuntime& emulated(int sms, unsigned sample) {
  static std::map<std::pair<int, unsigned>, std::unique_ptr<cuda::DeviceRuntime>> made;
  auto& rt = made[{sms, sample}];
  if (!rt) {
    emu::Spec spec;
    spec.sms = sms;
    spec.sample_blocks = sample;
    rt = cuda::open_emulated_runtime(emu::create_devices({spec})[0]);
  }
  rt->make_current();
  return *rt;
}

// Per family with an emulated device side and per engine it takes (gemm_i8's dp4a and mma kernels, convert_f32's
// with and without fp8 instructions), the case of the battery with the fewest input and output elements among those
// a GPU of compute capability 9.0 runs (DeviceProblem::unsupported). In the registry's family order.
inline std::vector<std::pair<const Family*, const Case*>> least_costly_per_engine(const PatternSet& ps) {
  std::vector<std::pair<const Family*, const Case*>> chosen;
  for (const Family& f : families()) {
    if (!f.prepare_emu) continue;
    std::map<std::string, std::pair<uint64_t, const Case*>> least;
    for (const Case& c : ps.battery.cases) {
      if (c.family != f.id) continue;
      const auto dev = f.prepare_emu(c);
      if (!dev->unsupported(9, 0).empty()) continue;
      const auto p = f.prepare(c);
      uint64_t cost = p->tile_count() * p->tile_elements();
      for (const TensorInfo& t : p->inputs()) cost += t.elements;
      auto& best = least[dev->engine().algorithm];
      if (!best.second || cost < best.first) best = {cost, &c};
    }
    for (const auto& [algorithm, best] : least) chosen.emplace_back(&f, best.second);
  }
  return chosen;
}

// A device buffer of a run: where it starts and its bytes.
struct Range {
  void* p;
  uint64_t bytes;
};

// Generates dev's `inputs` input tensors on rt's device, then runs its compute() once into an output of `tiles`
// tiles of `tile_elements` words, whose tile SM records start as NO_SM (the tiles no sampled block computes keep
// it). `armed(ranges)` runs between the two, generation finished, with the output's range first, then the inputs':
// a check that must see the kernel's own accesses only starts there. Returns the tile SM records.
inline std::vector<uint32_t> run_problem(cuda::DeviceRuntime& rt, const cuda::DeviceProblem& dev, size_t inputs,
                                         uint64_t tiles, uint32_t tile_elements,
                                         const std::function<void(const std::vector<Range>& ranges)>& armed) {
  cuda::Stream s(rt);
  std::vector<cuda::DeviceBuffer> in;
  std::vector<const void*> in_ptr;
  for (size_t t = 0; t < inputs; ++t) {
    in.emplace_back(rt, dev.input_bytes(t));
    dev.generate(t, in.back().get(), s.get());
    in_ptr.push_back(in.back().get());
  }
  const uint64_t out_bytes = tiles * tile_elements * 4;
  cuda::DeviceBuffer out(rt, out_bytes), tile_sm(rt, tiles * 4), scratch(rt, dev.scratch_bytes());
  rt.memset_async(tile_sm.get(), 0xff, tiles * 4, s.get());  // NO_SM
  std::vector<uint32_t> sm(tiles);
  rt.copy(sm.data(), tile_sm.get(), tiles * 4, s.get());  // waits: generation is done before the check is armed
  std::vector<Range> ranges{{out.get(), out_bytes}};
  for (size_t t = 0; t < inputs; ++t) ranges.push_back({in[t].get(), dev.input_bytes(t)});
  armed(ranges);
  rt.compute_begin(s.get());
  dev.compute(in_ptr.data(), out.as<float>(), tile_sm.as<uint32_t>(), scratch.get(), s.get());
  rt.compute_end(s.get());
  rt.copy(sm.data(), tile_sm.get(), tiles * 4, s.get());
  return sm;
}

}  // namespace sdc::test
