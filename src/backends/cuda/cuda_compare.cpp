// Comparison of a finished GPU iteration with its reference (gpu_state.h), and the choice of that
// reference: a golden, an accepted recording, or the case's own first run (consensus).
#include <fmt/format.h>

#include <algorithm>

#include "src/core/miscompare.h"
#include "src/core/patterns.h"
#include "src/backends/cuda/gpu_state.h"

namespace sdc::cuda {
namespace {

// Copies tile t of a device output (in the layout the family's compute() writes) to host memory, in
// the tile's offset order, on the GPU's stream (the one its kernels ran on).
void copy_tile(const Gpu& g, const DeviceProblem& d, const float* out, uint64_t t, uint32_t te, float* dst) {
  const OutputLayout l = d.output_layout();
  if (!l.matrix()) {
    g.rt->copy(dst, out + t * te, te * 4ull, g.stream->get());
    return;
  }
  g.rt->copy_2d(dst, l.tile_cols * 4ull, out + l.index(t, 0, te), l.ld * 4, l.tile_cols * 4ull, l.tile_rows,
                g.stream->get());
}

// The miscompares analyse_tile listed from index `from` on get the warp and lane that computed them, where the
// kernel documents its thread-to-element map (DeviceProblem::thread_of).
void name_threads(const DeviceCase& dc, size_t from, TestResult& r) {
  for (size_t i = from; i < r.miscompares.size(); ++i) {
    Miscompare& m = r.miscompares[i];
    uint64_t tile = 0;
    uint32_t offset = 0;
    dc.problem->locate(m.element, tile, offset);
    if (!dc.device->thread_of(tile, offset, m.warp, m.lane)) m.warp = m.lane = -1;
  }
}

}  // namespace

Reference choose_reference(Shared& sh, Gpu& g, const Case& c, const DeviceCase& dc, TestResult& r) {
  const bool first = r.judged_by.empty();
  Reference ref;
  if (has_cpu_golden(c.mode)) {
    r.judged_by = mode_name(c.mode);
    ref.digests = &sh.patterns.golden.at(c.id).tile_digests;
    return ref;
  }
  const RecordingKey key{g.info.architecture(), c.family, c.id, case_fingerprint(c), r.library, r.algorithm};
  // An emulated device's tensor-core rounding is not the hardware's: no recording of a GPU judges it.
  const AcceptedRecording* rec = c.mode == Mode::recorded && !sh.run->opt.recording && !g.info.emulated
                                     ? find_recorded_golden(sh.patterns.recorded, key)
                                     : nullptr;
  if (rec) {
    if (rec->tile_digests.size() != dc.problem->tile_count())
      throw std::runtime_error(fmt::format("the accepted recording of {} has {} tile digests, the case has {} tiles",
                                           c.id, rec->tile_digests.size(), dc.problem->tile_count()));
    r.judged_by = "recorded";
    if (first)
      r.notes.push_back(fmt::format("judged by the recording accepted from {} device(s){}", rec->voters.size(),
                                    rec->provisional ? " (provisional: one device)" : ""));
    ref.kind = Reference::recorded;
    ref.digests = &rec->tile_digests;
    return ref;
  }
  if (first && c.mode == Mode::recorded && !sh.run->opt.recording && !g.info.emulated)
    r.notes.push_back(fmt::format("no accepted recording for {} [{} | {}]: judged by consensus", key.architecture,
                                  key.library, key.algorithm));
  r.judged_by = "consensus";
  ref.kind = Reference::repeats;
  ref.first = &g.first_runs[c.id];
  ref.digests = &ref.first->digests;
  return ref;
}

void compare_iteration(Shared& sh, Gpu& g, DeviceCase& dc, const IterationFaults& f, int it, const Reference& ref,
                       std::map<uint64_t, std::vector<float>>& expected_cache, Workspace& ws, TestResult& r) {
  const uint64_t tiles = dc.problem->tile_count();
  const uint32_t te = dc.problem->tile_elements();
  const bool sm_known = dc.device->records_sm();
  // A device that samples blocks (the emulated one) leaves the SM of the tiles it did not compute
  // poisoned: those are not compared. Everywhere else a poisoned SM is a defect of the kernel.
  const bool sampled = sm_known && g.rt->samples_blocks();
  const auto computed = [&](uint64_t t) { return !sampled || dc.host_sm[t] != NO_SM; };
  dc.tiles_computed = 0;
  for (uint64_t t = 0; t < tiles && sm_known; ++t) {
    if (!computed(t)) continue;
    ++dc.tiles_computed;
    if (dc.host_sm[t] == NO_SM || static_cast<int>(dc.host_sm[t]) >= g.sm_ids)
      throw std::runtime_error(
          fmt::format("the kernel did not record which SM computed tile {} (a defect of sdcscreen, "
                      "not of the GPU); this test proves nothing",
                      t));
  }
  if (sampled && dc.tiles_computed == 0)
    throw std::runtime_error("the emulated device computed no tile of this case; this test proves nothing");
  if (sampled && dc.tiles_computed < tiles) {
    const std::string note = fmt::format(
        "emulated device: {} of {} tiles computed and compared (a seeded sample of "
        "the compute kernel's blocks, the same every iteration)",
        dc.tiles_computed, tiles);
    if (std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end()) r.notes.push_back(note);
  }
  for (Injection* inj : f.input) {
    inj->fired = true;
    inj->fired_unit = -1;
  }
  if (f.output) {
    for (uint64_t t = 0; t < tiles && !f.output->fired; ++t)
      if (computed(t) &&
          (t == f.fault.tile || (f.fault.sm >= 0 && dc.host_sm[t] == static_cast<uint32_t>(f.fault.sm)))) {
        f.output->fired = true;
        f.output->fired_tile = t;
        f.output->fired_unit = sm_known ? static_cast<int>(dc.host_sm[t]) : -1;
      }
  }
  // run --digests: the last complete iteration's digests. A device that samples blocks leaves the tiles it did not
  // compute without one, so it keeps none.
  if (sh.run->opt.keep_digests && !sampled) {
    r.tile_digests = dc.host_digests;
    r.digest_iteration = it;
  }
  if (ref.kind == Reference::repeats && ref.first->digests.empty()) {  // the first run: it is the reference
    ref.first->digests = dc.host_digests;
    ref.first->sms = dc.host_sm;
    if (dc.first_out.get()) g.rt->copy(dc.first_out.get(), dc.out.get(), tiles * te * 4ull, g.stream->get());
    for (uint64_t t = 0; t < tiles && sm_known; ++t)
      if (computed(t)) ++sh.run->result.units[g.unit_base + dc.host_sm[t]].tiles;
    return;
  }
  const std::vector<uint64_t>& expect = *ref.digests;
  std::vector<float> actual(te);
  for (uint64_t t = 0; t < tiles; ++t) {
    if (!computed(t)) continue;
    const int sm = sm_known ? static_cast<int>(dc.host_sm[t]) : -1;
    UnitResult* u = sm_known ? &sh.run->result.units[g.unit_base + static_cast<size_t>(sm)] : nullptr;
    if (u) ++u->tiles;
    if (dc.host_digests[t] == expect[t]) continue;
    ++r.failed_tiles;
    if (u) ++u->failed_tiles;
    if (u && std::find(r.units_failed.begin(), r.units_failed.end(), sm) == r.units_failed.end())
      r.units_failed.push_back(sm);
    if (u && ref.kind == Reference::golden) dc.wrong[sm].emplace(t, dc.host_digests[t]);
    if (r.time_to_fail_s < 0) r.time_to_fail_s = sh.run->elapsed_s();
    if (ref.kind != Reference::golden) {
      std::vector<float>& expected = expected_cache[t];
      if (ref.kind == Reference::repeats && dc.first_out.get() && expected.empty()) {
        expected.resize(te);
        copy_tile(g, *dc.device, dc.first_out.as<float>(), t, te, expected.data());
      }
      if (!expected.empty()) {  // the first run's values: analyse_tile lists what changed since
        copy_tile(g, *dc.device, dc.out.as<float>(), t, te, actual.data());
        const size_t listed = r.miscompares.size();
        analyse_tile(*dc.problem, {}, expect[t], t, actual.data(), it, sm, ws, expected, r);
        name_threads(dc, listed, r);
      } else if (r.notes.size() < 16) {
        r.notes.push_back(fmt::format("iteration {}: tile {} {}differs from the {} (digests only: no element values)",
                                      it, dc.problem->tile_name(t), sm >= 0 ? fmt::format("(SM {}) ", sm) : "",
                                      ref.kind == Reference::recorded ? "recorded golden" : "first run"));
      }
      continue;
    }
    copy_tile(g, *dc.device, dc.out.as<float>(), t, te, actual.data());
    const size_t listed = r.miscompares.size();
    analyse_tile(*dc.problem, dc.generated_host_inputs(), expect[t], t, actual.data(), it, sm, ws, expected_cache[t],
                 r);
    name_threads(dc, listed, r);
  }
}

}  // namespace sdc::cuda
