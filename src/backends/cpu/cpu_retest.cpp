#include "src/backends/cpu/cpu_retest.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "src/spec/digest.h"

namespace sdc::cpu {
namespace {

class Retester {
 public:
  explicit Retester(RetestEnv& env) : env_(env) {}

  bool time_left() const { return !env_.stop.stop_requested() && !env_.stuck && Clock::now() < env_.deadline; }

  // Computes `tiles` of state s on worker w with the faults that fire for it; false when the job did not
  // finish (a stop, or the watchdog: then the device is stuck).
  bool retest_pass(const Case& c, CaseState& s, uint32_t w, const std::vector<uint64_t>& tiles, bool fresh) {
    auto faults = std::make_unique<std::vector<ActiveFault>>();
    env_.activate(c, s, *faults, env_.pool.cpu(w).cpu, fresh);
    const JobEnd end = compute_iteration(s, env_.pool, env_.stop, env_.ws, 0, *faults, c.id.c_str(), -1, &tiles, w);
    if (end == JobEnd::stuck) {
      env_.stuck = true;
      (void)faults.release();  // a worker may still read it
    }
    return end == JobEnd::finished;
  }

  // The workers next to w: the other logical CPUs of its core, and one core of its package (the nearest).
  std::vector<SiblingRetest> siblings_of(uint32_t w, std::vector<uint32_t>& workers) const {
    const cpu::LogicalCpu me = env_.pool.cpu(w);
    std::vector<SiblingRetest> out;
    int other_core = -1;
    for (uint32_t v = 0; v < env_.pool.size(); ++v) {
      const cpu::LogicalCpu o = env_.pool.cpu(v);
      if (v == w || o.package != me.package || me.package < 0) continue;
      if (o.core == me.core && me.core >= 0) {
        out.push_back({o.cpu, "same core", 0, 0});
        workers.push_back(v);
      } else if (other_core < 0 || std::abs(o.cpu - me.cpu) < std::abs(env_.pool.cpu(other_core).cpu - me.cpu)) {
        other_core = static_cast<int>(v);
      }
    }
    if (other_core >= 0) {
      out.push_back({env_.pool.cpu(other_core).cpu, "same package", 0, 0});
      workers.push_back(static_cast<uint32_t>(other_core));
    }
    return out;
  }

  // One failing unit's retest (UnitRetest); false when it was cut short.
  bool retest_unit(const Case& c, const std::vector<int>& units_failed, uint32_t w, const std::vector<uint64_t>& tiles,
                   const std::map<uint64_t, uint64_t>& wrong, int n, UnitRetest& u) {
    CaseState& s = env_.state;
    const std::vector<uint64_t>& golden = env_.golden;
    // The case's own inputs, on the unit: does it fail again, with the same bits?
    for (int k = 0; k < n; ++k) {
      if (!time_left() || !retest_pass(c, s, w, tiles, false)) return false;
      bool failed = false, same = true;
      for (uint64_t t : tiles) {
        failed = failed || s.digest[t] != golden[t];
        same = same && s.digest[t] == wrong.at(t);
      }
      ++u.same_seed_runs;
      u.same_seed_failed += failed;
      u.same_bits += same;
    }
    // The same on its neighbours: is it the unit, or the core or package around it?
    std::vector<uint32_t> sibling_workers;
    u.siblings = siblings_of(w, sibling_workers);
    for (size_t i = 0; i < u.siblings.size(); ++i)
      for (int k = 0; k < n; ++k) {
        if (!time_left() || !retest_pass(c, s, sibling_workers[i], tiles, false)) return false;
        ++u.siblings[i].runs;
        u.siblings[i].failed +=
            std::any_of(tiles.begin(), tiles.end(), [&](uint64_t t) { return s.digest[t] != golden[t]; });
      }
    // Fresh seeds: other inputs, no golden; the unit against one that did not fail (not of its core).
    int ref = -1;
    for (uint32_t v = 0; v < env_.pool.size() && ref < 0; ++v) {
      const int id = env_.pool.cpu(v).cpu;
      const bool failed = std::find(units_failed.begin(), units_failed.end(), id) != units_failed.end();
      const bool same_core = std::any_of(u.siblings.begin(), u.siblings.end(), [id](const SiblingRetest& x) {
        return x.unit == id && x.relation == std::string("same core");
      });
      if (v != w && !failed && !same_core) ref = static_cast<int>(v);
    }
    if (ref < 0) return true;  // one CPU, or every other one failed: nothing to compare fresh seeds with
    u.fresh_reference = env_.pool.cpu(static_cast<uint32_t>(ref)).cpu;
    const uint64_t max_memory = env_.max_memory;
    if (max_memory && 2 * case_bytes(*s.problem) > max_memory) {
      u.fresh_reference = -1;  // a second copy of the case would pass --max-memory
      return true;
    }
    for (int k = 0; k < n; ++k) {
      if (!time_left()) return false;
      Case fresh = c;
      fresh.data_seed = fresh_retest_seed(c.data_seed, k);
      auto st = std::make_unique<CaseState>();
      st->problem = find_family(c.family)->prepare(fresh);
      const JobEnd gen = generate_inputs(env_.pool, env_.stop, *st, c.id.c_str());
      if (gen != JobEnd::finished) {
        env_.stuck = env_.stuck || gen == JobEnd::stuck;
        if (env_.stuck) (void)st.release();
        return false;
      }
      if (!retest_pass(c, *st, static_cast<uint32_t>(ref), tiles, true)) {
        if (env_.stuck) (void)st.release();
        return false;
      }
      std::vector<uint64_t> expected;
      for (uint64_t t : tiles) expected.push_back(st->digest[t]);
      if (!retest_pass(c, *st, w, tiles, true)) {
        if (env_.stuck) (void)st.release();
        return false;
      }
      ++u.fresh_seed_runs;
      for (size_t i = 0; i < tiles.size(); ++i)
        if (st->digest[tiles[i]] != expected[i]) {
          ++u.fresh_seed_failed;
          break;
        }
    }
    return true;
  }

 private:
  RetestEnv& env_;
};

}  // namespace

bool retest_unit(RetestEnv& env, const Case& c, const std::vector<int>& units_failed, uint32_t w,
                 const std::vector<uint64_t>& tiles, const std::map<uint64_t, uint64_t>& wrong, int n, UnitRetest& u) {
  return Retester(env).retest_unit(c, units_failed, w, tiles, wrong, n, u);
}

}  // namespace sdc::cpu
