// --retest-on-failure on a GPU (GpuExecutor::retest, gpu_executor.h): the failing SMs' case run again
// with its own inputs and with fresh seeds, each run's failing tiles checked against the golden or the
// host CPU's computation of them.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "src/core/inject.h"
#include "src/spec/digest.h"
#include "src/backends/cuda/gpu_executor.h"

namespace sdc::cuda {

bool GpuExecutor::retest_run(const Case& c, DeviceCase& dc, bool fresh) {
  const IterationFaults f = faults_for(sh_, g_, c, dc, -1, true, fresh);
  if (run_device_iteration(g_, dc, f, deadline_after(work_, g_.rt->slowness()))) return true;
  g_.stuck = true;
  return false;
}

// --retest-on-failure N on a GPU: the whole case N more times with its own inputs (every SM computes again,
// so one batch of runs retests every failing SM and counts the rest of the GPU as its sibling), then N times
// with fresh seeds, each failing SM's tiles of that run checked against the host CPU's computation of them.
// A tile may land on another SM in another run: an SM's tiles are those it computed in that run, and its
// same bits are judged on the failing tiles it computed again.
void GpuExecutor::retest(const Case& c, TestResult& r) {
  const int n = sh_.run->opt.retest;
  if (ref_.kind != Reference::golden) {
    r.notes.push_back(fmt::format("not retested: judged by {}, not by a golden", r.judged_by));
    return;
  }
  std::map<int, UnitRetest> us;
  for (const auto& [sm, tiles] : dc_->wrong) {
    if (std::any_of(r.retests.begin(), r.retests.end(), [sm](const UnitRetest& x) { return x.unit == sm; })) continue;
    UnitRetest& u = us[sm];
    u.device = g_.info.index;
    u.unit = sm;
    u.tiles = std::min<uint64_t>(tiles.size(), RETEST_TILES);
    u.siblings.push_back({-1, "other SMs of the GPU", 0, 0});
  }
  if (us.empty()) return;
  const std::vector<uint64_t>& golden = *ref_.digests;
  const uint64_t tiles = dc_->problem->tile_count();
  const auto time_left = [&] { return !sh_.run->stopping() && !g_.stuck && Clock::now() < sh_.run->deadline; };
  bool complete = true;
  for (int k = 0; k < n && complete; ++k) {  // the case's own inputs
    if (!time_left()) {
      complete = false;
      break;
    }
    if (!retest_run(c, *dc_, false)) {
      r.notes.push_back(fmt::format("watchdog: retest run {} with the case's own inputs did not finish", k + 1));
      complete = false;
      break;
    }
    std::set<int> failed;
    for (uint64_t t = 0; t < tiles; ++t)  // a tile a sampling (emulated) device did not compute has no SM
      if (dc_->host_sm[t] != NO_SM && dc_->host_digests[t] != golden[t])
        failed.insert(static_cast<int>(dc_->host_sm[t]));
    for (auto& [sm, u] : us) {
      const bool fails = failed.count(sm) > 0;
      bool same = fails;
      int checked = 0;
      for (const auto& [t, digest] : dc_->wrong.at(sm))
        if (checked++ < static_cast<int>(RETEST_TILES) && dc_->host_sm[t] == static_cast<uint32_t>(sm))
          same = same && dc_->host_digests[t] == digest;
      ++u.same_seed_runs;
      u.same_seed_failed += fails;
      u.same_bits += same;
      ++u.siblings[0].runs;
      u.siblings[0].failed += failed.size() > (fails ? 1u : 0u);
    }
  }
  // Fresh seeds need a second copy of the case beside the first (which stays allocated).
  const uint64_t max_memory = sh_.run->opt.max_memory_bytes;
  const bool fresh_fits = !max_memory || 2 * dc_->bytes <= max_memory;
  if (!fresh_fits) r.notes.push_back("retest: fresh seeds not run: a second copy of the case would pass --max-memory");
  const int n_fresh = fresh_fits ? n : 0;
  for (int k = 0; k < n_fresh && complete; ++k) {  // fresh seeds, against the host
    if (!time_left()) {
      complete = false;
      break;
    }
    Case fresh = c;
    fresh.data_seed = fresh_retest_seed(c.data_seed, k);
    auto fc = std::make_unique<DeviceCase>();
    TestResult scratch;
    try {
      if (!prepare_case(sh_, g_, fresh, *fc, max_memory ? max_memory - dc_->bytes : 0, scratch, true)) {
        g_.stuck = true;
        (void)fc.release();  // the watchdog gave up on it: a kernel may still write its buffers
        r.notes.push_back("watchdog: a retest's fresh-seed inputs were not generated in time");
        complete = false;
        break;
      }
    } catch (const CudaError& e) {
      if (e.sticky()) throw;  // the context is lost: the test's error, as in any iteration
      r.notes.push_back(fmt::format("retest: fresh seeds not run: {}", e.what()));
      break;
    } catch (const std::runtime_error& e) {  // no room for a second copy
      r.notes.push_back(fmt::format("retest: fresh seeds not run: {}", e.what()));
      break;
    }
    if (!retest_run(fresh, *fc, true)) {
      if (g_.stuck) fc->leak(), (void)fc.release();
      r.notes.push_back(fmt::format("watchdog: retest run {} with a fresh seed did not finish", k + 1));
      complete = false;
      break;
    }
    std::vector<const float*> in;
    for (const auto& v : fc->generated_host_inputs()) in.push_back(v.data());
    const uint32_t te = fc->problem->tile_elements();
    std::vector<float> expect(te);
    for (auto& [sm, u] : us) {
      bool fails = false;
      uint64_t checked = 0;
      for (uint64_t t = 0; t < tiles && checked < RETEST_TILES; ++t) {
        if (fc->host_sm[t] != static_cast<uint32_t>(sm)) continue;
        ++checked;
        fc->problem->compute_tile(in.data(), t, expect.data(), ws_);
        fails = fails || tile_digest(t, expect.data(), te) != fc->host_digests[t];
      }
      ++u.fresh_seed_runs;
      u.fresh_seed_failed += fails;
      u.fresh_on_host = true;
    }
  }
  for (auto& [sm, u] : us) {
    u.complete = complete;
    r.retests.push_back(u);
  }
  std::sort(r.retests.begin(), r.retests.end(),
            [](const UnitRetest& a, const UnitRetest& b) { return a.unit < b.unit; });
}

}  // namespace sdc::cuda
