#include "src/backends/cpu/cpu_executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "src/core/activity.h"
#include "src/core/family_util.h"
#include "src/core/miscompare.h"
#include "src/core/unit_name.h"
#include "src/spec/digest.h"
#include "src/spec/fault.h"
#include "src/util/int_list.h"
#include "src/backends/cpu/cpu_case.h"
#include "src/backends/cpu/cpu_probe.h"
#include "src/backends/cpu/cpu_retest.h"
#include "src/backends/cpu/worker_pool.h"

namespace sdc::cpu {
namespace {

// Iterations after which every worker has computed a tile of a case: tile t runs on worker
// (t + r + i) mod W in iteration i, so k iterations reach min(W, T + k - 1) workers.
int iterations_to_cover(size_t workers, uint64_t tiles) {
  return tiles >= workers ? 1 : static_cast<int>(workers - tiles + 1);
}

int worker_index(const WorkerPool& pool, int cpu) {
  for (size_t w = 0; w < pool.size(); ++w)
    if (pool.cpu(w).cpu == cpu) return static_cast<int>(w);
  return -1;
}

std::vector<LogicalCpu> describe(const std::vector<int>& cpus) {
  std::vector<LogicalCpu> out;
  for (int c : cpus) out.push_back(describe_cpu(c));
  return out;
}

}  // namespace

namespace {

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(const PatternSet& patterns, const std::vector<int>& cpus)
      : patterns_(patterns),
        pool_(std::make_unique<WorkerPool>(describe(cpus))),
        ws_(std::make_unique<std::vector<Workspace>>(pool_->size())) {}

  std::string device() const override { return "cpu"; }
  int device_index() const override { return -1; }
  std::vector<UnitResult> units() const override {
    std::vector<UnitResult> out(pool_->size());
    for (size_t w = 0; w < out.size(); ++w) out[w].cpu = pool_->cpu(w);
    return out;
  }
  void attach(RunContext& ctx, size_t unit_base) override {
    ctx_ = &ctx;
    unit_base_ = unit_base;
  }
  bool stuck() const override { return stuck_; }
  SkipReasons skip_reasons() const override {
    return {"not run: the watchdog ended the run", "interrupted before every CPU computed a tile",
            "time budget ran out before every CPU computed a tile"};
  }
  bool repeats_failed() const override { return true; }

  // A GPU-only test: not applicable here, not inconclusive.
  bool applicable(const Case& c, TestResult& r) const override {
    const auto& backends = find_family(c.family)->backends;
    const bool on_cpu = std::find(backends.begin(), backends.end(), "cpu") != backends.end();
    if (on_cpu && has_cpu_golden(c.mode)) return true;
    r.verdict = Verdict::skip;
    r.not_applicable = true;
    r.reason = !on_cpu ? fmt::format("family {} runs on GPUs only", c.family)
                       : fmt::format("{} mode runs on GPUs only: a CPU has no golden for it", mode_name(c.mode));
    return false;
  }

  std::optional<PreparedCase> prepare(const Case& c, TestResult& r) override {
    golden_ = &patterns_.golden.at(c.id);
    s_ = std::make_unique<CaseState>();
    faults_ = std::make_unique<std::vector<ActiveFault>>();
    expected_cache_.clear();
    wrong_.clear();
    s_->problem = find_family(c.family)->prepare(c);
    const uint64_t max_memory = ctx_->opt.max_memory_bytes;
    if (max_memory && case_bytes(*s_->problem) > max_memory)
      throw std::runtime_error(fmt::format("needs {} MiB, more than --max-memory ({} MiB)",
                                           case_bytes(*s_->problem) >> 20, max_memory >> 20));
    rotation0_ = mix64(ctx_->opt.seed ^ string_hash(c.id));
    JobEnd end = generate_inputs(*pool_, ctx_->opt.stop, *s_, c.id.c_str());
    if (end == JobEnd::finished && s_->problem->replay()) end = check_reference(c, r);
    if (end == JobEnd::finished) {
      const Problem& p = *s_->problem;
      const uint64_t tiles = p.tile_count();
      return PreparedCase{tiles, p.tile_flops(), p.tile_grid(), iterations_to_cover(pool_->size(), tiles), 1};
    }
    stuck_ = end == JobEnd::stuck;
    if (!ctx_->stopping()) {
      r.verdict = Verdict::error;
      r.reason = s_->problem->replay() ? "watchdog: input generation or the reference did not finish"
                                       : "watchdog: input generation did not finish";
    }
    return std::nullopt;
  }

  // A problem's in-process reference (Problem::replay: the training-step replay) is computed on one unit
  // and checked against the golden before any tile runs. A unit that computed it wrong fails (the
  // reference is its output like any other) and the next one computes it, in the order of the case's
  // schedule; a replay fault that repeats (persist=) on that unit corrupts its reference as it would any
  // other replay of it.
  JobEnd check_reference(const Case& c, TestResult& r) {
    const size_t workers = pool_->size();
    const uint32_t te = s_->problem->tile_elements();
    std::vector<float> tile(te);
    const Watch watch{pass_deadline(s_->problem->tile_flops() * 1e-9), ctx_->opt.stop};
    for (size_t i = 0; i < workers; ++i) {
      const auto w = static_cast<uint32_t>((rotation0_ + i) % workers);
      const int cpu_id = pool_->cpu(w).cpu;
      Injection* fault = nullptr;
      for (Injection& inj : ctx_->result.injections)
        if (inj.case_id == c.id && !inj.submodule.empty() && inj.unit == cpu_id && inj.persist_every > 0) fault = &inj;
      auto outcome = std::make_shared<std::pair<bool, std::string>>(false, "");  // fired, error
      const JobEnd end = run_watched(*pool_, watch, [this, w, fault, outcome, id = c.id.c_str()](size_t v) {
        if (v != w) return;
        activity::publish_stage(activity::STAGE_REFERENCE, id);
        try {
          outcome->first = s_->problem->replay()->compute_reference(fault);
        } catch (const std::exception& e) {
          outcome->second = e.what();
        }
      });
      if (end != JobEnd::finished) return end;
      if (!outcome->second.empty()) throw std::runtime_error(fmt::format("cpu {}: {}", cpu_id, outcome->second));
      if (outcome->first && !fault->fired) {
        fault->fired = true;
        fault->fired_unit = cpu_id;
      }
      s_->problem->replay()->reference_tile(0, tile.data());
      if (tile_digest(0, tile.data(), te) == golden_->tile_digests[0]) return JobEnd::finished;
      ++r.failed_tiles;
      ++ctx_->result.units[unit_base_ + w].failed_tiles;
      if (std::find(r.units_failed.begin(), r.units_failed.end(), cpu_id) == r.units_failed.end())
        r.units_failed.push_back(cpu_id);
      if (r.time_to_fail_s < 0) r.time_to_fail_s = ctx_->elapsed_s();
      r.notes.push_back(
          fmt::format("cpu {} computed the replay's reference wrong (its tile digest is not the "
                      "golden's); {}",
                      cpu_id, i + 1 < workers ? "the next CPU computed it again" : "no CPU computed it right"));
    }
    return JobEnd::finished;
  }

  // The faults of case c that fire in this computation, resolved against state s: in iteration it of the
  // run, or in a retest by the unit on logical CPU `retest_cpu` (with fresh inputs or the case's own).
  void activate_faults(const Case& c, CaseState& s, std::vector<ActiveFault>& out, int it, int retest_cpu = -1,
                       bool fresh = false) {
    out.clear();
    for (Injection& inj : ctx_->result.injections) {
      if (inj.case_id != c.id) continue;
      if (retest_cpu >= 0 && inj.unit != retest_cpu) continue;  // a retest is one unit's: only its faults
      if (!fires_now(inj, it, retest_cpu >= 0, fresh)) continue;
      if (inj.crash && inj.fired) continue;  // a crash drill an earlier screen of this run already took
      ActiveFault f{&inj, inj.unit < 0 ? -1 : worker_index(*pool_, inj.unit), 0, 0, {}};
      if (inj.input) {
        f.corrupted = s.inputs[inj.tensor_index];
        const WordFault word = inj.word();
        for (uint64_t e = inj.element; e <= word.last(inj.element); e += word.stride)
          f.corrupted[e] = bits_float(word.apply(float_bits(f.corrupted[e])));
      } else if (inj.memory) {  // the tile of its first word (checked when parsed)
        if (const std::string e = s.problem->check_memory_fault(inj, f.tile); !e.empty())
          throw std::runtime_error(fmt::format("--inject '{}': {}", inj.spec, e));
      } else if (!inj.hang && !inj.crash && inj.submodule.empty()) {
        s.problem->locate(inj.element, f.tile, f.offset);
      }
      out.push_back(std::move(f));
    }
  }

  bool run_iteration(const Case& c, int it, TestResult& r) override {
    WorkerPool& pool = *pool_;
    activate_faults(c, *s_, *faults_, it);
    const auto it_start = Clock::now();
    const JobEnd end = compute_iteration(*s_, pool, ctx_->opt.stop, *ws_, rotation0_ + static_cast<uint64_t>(it),
                                         *faults_, c.id.c_str(), it);
    if (end == JobEnd::finished) return true;
    const std::vector<int> busy = pool.busy_cpus();
    if (!ctx_->stopping())  // the hung units are named in the units too (and so in every output)
      for (size_t w = 0; w < pool.size(); ++w)
        if (std::find(busy.begin(), busy.end(), pool.cpu(w).cpu) != busy.end())
          ctx_->result.units[unit_base_ + w].hung = true;
    if (!ctx_->stopping()) {
      r.verdict = Verdict::error;
      r.reason = fmt::format("watchdog: iteration {} did not finish in {:.1f} s; stuck on cpu {}", it,
                             seconds_since(it_start), format_cpu_list(busy));
    }
    for (ActiveFault& f : *faults_)  // a hang drill fired if its unit is the one stuck
      if (f.inj->hang && busy.size() == 1) {
        f.inj->fired = true;
        f.inj->fired_unit = busy[0];
      }
    stuck_ = end == JobEnd::stuck;
    return false;
  }

  void compare(const Case&, int it, TestResult& r) override {
    const uint64_t tiles = s_->problem->tile_count();
    if (ctx_->opt.keep_digests) {  // compare() follows every complete iteration: the last one stays
      r.tile_digests = s_->digest;
      r.digest_iteration = it;
    }
    for (size_t w = 0; w < s_->done.size(); ++w) {  // what each unit did, for its throughput
      if (!s_->done[w]) continue;
      const int cpu_id = pool_->cpu(w).cpu;
      auto u = std::find_if(r.unit_speed.begin(), r.unit_speed.end(),
                            [cpu_id](const UnitSpeed& x) { return x.unit == cpu_id; });
      if (u == r.unit_speed.end()) u = r.unit_speed.insert(r.unit_speed.end(), UnitSpeed{cpu_id, 0, 0});
      u->tiles += s_->done[w];
      u->busy_s += s_->busy_s[w];
    }
    for (uint64_t t = 0; t < tiles; ++t) {
      const uint32_t w = s_->worker_of[t];
      UnitResult& unit = ctx_->result.units[unit_base_ + w];
      ++unit.tiles;
      if (s_->digest[t] == golden_->tile_digests[t]) continue;
      ++r.failed_tiles;
      ++unit.failed_tiles;
      const int cpu_id = pool_->cpu(w).cpu;
      if (std::find(r.units_failed.begin(), r.units_failed.end(), cpu_id) == r.units_failed.end())
        r.units_failed.push_back(cpu_id);
      if (r.time_to_fail_s < 0) r.time_to_fail_s = ctx_->elapsed_s();
      wrong_[w].emplace(t, s_->digest[t]);  // the first wrong result of each tile, for a retest
      analyse_tile(*s_->problem, s_->inputs, golden_->tile_digests[t], t,
                   s_->out.data() + t * s_->problem->tile_elements(), it, cpu_id, analysis_ws_, expected_cache_[t], r);
    }
  }

  void retest(const Case& c, TestResult& r) override {
    const int n = ctx_->opt.retest;
    for (const auto& [w, wrong] : wrong_) {
      const int cpu_id = pool_->cpu(w).cpu;
      if (std::any_of(r.retests.begin(), r.retests.end(), [cpu_id](const UnitRetest& x) { return x.unit == cpu_id; }))
        continue;
      UnitRetest u;
      u.unit = cpu_id;
      std::vector<uint64_t> tiles;
      for (const auto& [t, digest] : wrong)
        if (tiles.size() < RETEST_TILES) tiles.push_back(t);
      u.tiles = tiles.size();
      RetestEnv env{*pool_,
                    *ws_,
                    ctx_->opt.stop,
                    ctx_->deadline,
                    ctx_->opt.max_memory_bytes,
                    *s_,
                    golden_->tile_digests,
                    stuck_,
                    [this](const Case& cs, CaseState& st, std::vector<ActiveFault>& out, int cpu, bool fresh) {
                      activate_faults(cs, st, out, -1, cpu, fresh);
                    }};
      if (!retest_unit(env, c, r.units_failed, w, tiles, wrong, n, u)) u.complete = false;
      r.retests.push_back(u);
      if (stuck_ || ctx_->stopping()) break;
    }
    std::sort(r.retests.begin(), r.retests.end(),
              [](const UnitRetest& a, const UnitRetest& b) { return a.unit < b.unit; });
  }

  void release_case() override {
    if (stuck_) {  // a worker may still be inside this case's job: keep everything it can touch alive
      (void)s_.release();
      (void)faults_.release();
    }
    s_.reset();
    faults_.reset();
    expected_cache_.clear();
  }

  std::vector<std::string> probe_units() const override {
    std::vector<std::string> out;
    if (stuck_) return out;
    for (size_t w = 0; w < pool_->size(); ++w) out.push_back(unit_text(UnitName::of_cpu(pool_->cpu(w).cpu)));
    return out;
  }
  std::string probe_work() const override { return ProbeWork::description(); }
  std::string probe(uint64_t reps, Clock::time_point deadline, std::vector<double>& seconds) override {
    if (stuck_) return "the watchdog ended the run";
    if (!probe_) probe_ = std::make_unique<ProbeWork>(pool_->size());
    static const int slow_cpu = slow_drill_cpu();
    static const uint64_t slow_node = slow_drill_node();
    auto secs = std::make_shared<std::vector<double>>(pool_->size(), 0.0);
    const JobEnd end = run_watched(*pool_, Watch{deadline, ctx_->opt.stop},
                                   [work = probe_.get(), secs, reps, pool = pool_.get()](size_t w) {
                                     activity::publish_stage(activity::STAGE_PROBE, "probe.gemm_f32_64x64x256");  // cpu_probe.cpp's case
                                     const uint64_t n = reps * slow_node * (pool->cpu(w).cpu == slow_cpu ? 10 : 1);
                                     (*secs)[w] = work->run(w, n);
                                   });
    if (end == JobEnd::finished) {
      seconds = *secs;
      return "";
    }
    if (end == JobEnd::stopped) return "interrupted";
    const std::vector<int> busy = pool_->busy_cpus();
    stuck_ = true;  // a worker may still be inside the probe: keep what it uses
    (void)probe_.release();
    for (size_t w = 0; w < pool_->size(); ++w)
      if (std::find(busy.begin(), busy.end(), pool_->cpu(w).cpu) != busy.end())
        ctx_->result.units[unit_base_ + w].hung = true;
    return fmt::format("watchdog: the probe did not finish on cpu {}", format_cpu_list(busy));
  }

  void abandon() override {
    pool_->abandon();
    (void)pool_.release();
    (void)ws_.release();
  }

 private:
  const PatternSet& patterns_;
  RunContext* ctx_ = nullptr;
  size_t unit_base_ = 0;
  // Heap-held so that they can be leaked when the watchdog leaves a worker stuck inside a job.
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<std::vector<Workspace>> ws_;
  Workspace analysis_ws_;
  bool stuck_ = false;  // a job did not finish: no further work can be given to the pool
  // The prepared case.
  const GoldenCase* golden_ = nullptr;
  std::unique_ptr<CaseState> s_;
  std::unique_ptr<std::vector<ActiveFault>> faults_;
  std::map<uint64_t, std::vector<float>> expected_cache_;
  uint64_t rotation0_ = 0;
  std::map<uint32_t, std::map<uint64_t, uint64_t>> wrong_;  // per worker that failed: tile -> first wrong digest
  std::unique_ptr<ProbeWork> probe_;                        // the throughput probe's buffers, made when it runs
};

// The CPU backend: one executor for the CPUs of opt.cpus, nothing to judge across executors.
class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const PatternSet& patterns) : patterns_(patterns) {}
  std::vector<Executor*> make_executors(const RunOptions& opt, RunResult&) override {
    ex_ = std::make_unique<CpuExecutor>(patterns_, opt.cpus);  // pins its workers: throws when it cannot
    return {ex_.get()};
  }

 private:
  const PatternSet& patterns_;
  // On a stuck run it has let go of (leaked) what the workers may still use; the rest is freed with it.
  std::unique_ptr<CpuExecutor> ex_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const PatternSet& patterns) { return std::make_unique<CpuBackend>(patterns); }

std::map<std::string, GoldenCase> compute_goldens(const std::vector<const Case*>& cases, const std::vector<int>& cpus,
                                                  const StopToken& stop,
                                                  const std::function<void(const Case&)>& on_case) {
  auto pool_owner = std::make_unique<WorkerPool>(describe(cpus));
  auto ws_owner = std::make_unique<std::vector<Workspace>>(pool_owner->size());
  WorkerPool& pool = *pool_owner;
  std::vector<Workspace>& ws = *ws_owner;
  std::vector<ActiveFault> none;
  std::map<std::string, GoldenCase> out;
  for (const Case* c : cases) {
    auto state = std::make_unique<CaseState>();
    CaseState& s = *state;
    // On a stuck worker, the workers may still use the case: leak it and them. Then throw.
    auto give_up = [&](JobEnd end) {
      if (end == JobEnd::stuck) {
        pool.abandon();
        (void)state.release();
        (void)pool_owner.release();
        (void)ws_owner.release();
      }
      return std::runtime_error(stop.stop_requested() ? "interrupted"
                                                      : fmt::format("case {}: a worker is stuck", c->id));
    };
    s.problem = find_family(c->family)->prepare(*c);
    if (const JobEnd e = generate_inputs(pool, stop, s, c->id.c_str()); e != JobEnd::finished) throw give_up(e);
    if (const JobEnd e = compute_iteration(s, pool, stop, ws, 0, none); e != JobEnd::finished) throw give_up(e);
    const std::vector<uint64_t> first = s.digest;
    const std::vector<float> first_out = s.out;
    // Every tile again, on the next worker.
    if (const JobEnd e = compute_iteration(s, pool, stop, ws, 1, none); e != JobEnd::finished) throw give_up(e);
    for (uint64_t t = 0; t < first.size(); ++t)
      if (first[t] != s.digest[t])
        throw std::runtime_error(
            fmt::format("case {} tile {}: two CPUs computed different results; this machine "
                        "cannot generate goldens",
                        c->id, t));
    if (output_has_nan(*find_family(c->family), first_out.data(), first_out.size()))
      throw std::runtime_error(
          fmt::format("case {}: its output contains a NaN, whose bits are not portable; "
                      "change its distribution or shape",
                      c->id));
    GoldenCase g;
    g.fingerprint = case_fingerprint(*c);
    g.tile_digests = first;
    g.output_digest = output_digest(first.data(), first.size());
    out[c->id] = std::move(g);
    if (on_case) on_case(*c);
  }
  return out;
}

}  // namespace sdc::cpu
