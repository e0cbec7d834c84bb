#include "src/core/scheduler.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <thread>

#include "src/core/activity.h"
#include "src/core/probe.h"

namespace sdc {
namespace {

bool matches(const std::string& glob, const Case& c) {
  return fnmatch(glob.c_str(), c.id.c_str(), 0) == 0 || fnmatch(glob.c_str(), c.family.c_str(), 0) == 0;
}

// One executor's part of a run: its tests are tests[case * stride + slot].
struct DeviceLoop {
  const Selection& sel;
  RunContext& ctx;
  Executor& ex;
  size_t slot, stride;
  std::mutex& callback_mutex;  // progress and per-test callbacks come from several threads

  TestResult& test(size_t ci) { return ctx.result.tests[ci * stride + slot]; }
  // The progress callbacks count the cases that apply to this device: a CPU node's GPU-only cases are not
  // steps of its screen (counted[ci]: the case's place among them, NOT_COUNTED for one that does not apply).
  static constexpr size_t NOT_COUNTED = SIZE_MAX;
  std::vector<size_t> counted;
  size_t counted_total = 0;
  // Per case: the iterations after which every unit has computed a tile of it, as its last preparation said
  // (1 for a case never prepared).
  std::vector<int> coverage;
  bool out_of_time() const { return Clock::now() >= ctx.deadline; }
  // No new round, and no case of one, may start.
  bool over() const { return ctx.stopping() || ex.stuck() || !ex.unusable().empty() || out_of_time(); }

  void run();
  void run_case(const Case& c, int iterations, size_t index, bool first_round, TestResult& r);
  void settle(size_t ci, TestResult& r) const;
};

// Runs `iterations` more iterations of one case, numbered from r.iterations_done, accumulating into r.
// Iterations stop at the time budget (never before the first of a round), a stop, or the watchdog. The
// first round runs at least enough iterations for every unit to compute a tile of the case.
void DeviceLoop::run_case(const Case& c, int iterations, size_t index, bool first_round, TestResult& r) {
  const auto t0 = Clock::now();
  std::optional<PreparedCase> prepared;
  try {
    prepared = ex.prepare(c, r);
    if (prepared) {
      r.tiles = prepared->tiles;
      r.tile_grid = prepared->grid;
      coverage[index] = prepared->coverage_iterations;
      if (first_round) iterations = std::max(iterations, prepared->coverage_iterations);
      iterations = std::max(iterations, prepared->minimum_iterations);
      const int first = r.iterations_done;
      r.iterations_planned = first + iterations;
      for (int it = first; it < first + iterations; ++it) {
        if (ctx.stopping() || (it > first && out_of_time())) break;
        if (ctx.opt.on_progress && slot == 0) {
          std::lock_guard<std::mutex> lock(callback_mutex);
          ctx.opt.on_progress(c, counted[index], counted_total, it - first, iterations);
        }
        if (!ex.run_iteration(c, it, r)) break;
        ++r.iterations_done;
        ex.compare(c, it, r);
        // On the supervisor's board at once: a screen killed from here on still fails (activity.h).
        if (r.failed_tiles > 0) {
          const DeviceInfo* dev = r.device_index >= 0 && static_cast<size_t>(r.device_index) < ctx.result.devices.size()
                                      ? &ctx.result.devices[static_cast<size_t>(r.device_index)]
                                      : nullptr;
          activity::publish_miscompare(c.id.c_str(), r.units_failed.empty() ? -1 : r.units_failed.front(), dev,
                                       r.time_to_fail_s);
        }
      }
      const bool unretested = std::any_of(r.units_failed.begin(), r.units_failed.end(), [&r](int u) {
        return std::none_of(r.retests.begin(), r.retests.end(), [u](const UnitRetest& x) { return x.unit == u; });
      });
      if (ctx.opt.retest > 0 && r.failed_tiles > 0 && unretested && !ctx.stopping() && !ex.stuck()) ex.retest(c, r);
      std::sort(r.units_failed.begin(), r.units_failed.end());
    } else if (r.not_applicable) {
      ex.release_case();
      return;
    }
  } catch (const std::exception& e) {
    r.reason = ex.error_reason(e);
    r.verdict = ex.error_verdict(e);
  }
  const auto t1 = Clock::now();
  r.duration_s += std::chrono::duration<double>(t1 - t0).count();
  // When it ran, in wall-clock time: the GPU telemetry sampled beside it judges it (too hot, throttled).
  const auto wall = [](Clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
           std::chrono::duration<double>(Clock::now() - t).count();
  };
  r.ran_unix.push_back({wall(t0), wall(t1)});
  if (prepared && r.duration_s > 0)
    r.gflops = prepared->tile_flops * static_cast<double>(r.tiles) * r.iterations_done / r.duration_s * 1e-9;
  ex.release_case();
}

// The verdict of a test from what ran: a miscompare stands whatever happened after it; an error stays
// an error; a pass needs every unit to have computed tiles of the case.
void DeviceLoop::settle(size_t ci, TestResult& r) const {
  if (r.not_applicable) return;
  if (r.failed_tiles > 0) {
    r.verdict = Verdict::fail;
    return;
  }
  if (r.verdict == Verdict::error || r.verdict == Verdict::crash || ex.settle(r)) return;
  if (r.iterations_done >= (r.tiles ? coverage[ci] : 1)) {
    r.verdict = Verdict::pass;
    r.reason.clear();
    if (r.iterations_done < r.iterations_planned)
      r.notes.push_back(fmt::format("{} of {} iterations ran before the {}", r.iterations_done, r.iterations_planned,
                                    !ctx.stopping() ? "time budget ran out" : ctx.opt.stop.deadline_reached() ? "deadline" : "interruption"));
  } else {
    r.verdict = Verdict::skip;
    const SkipReasons why = ex.skip_reasons();
    if (r.reason.empty())
      r.reason = !ctx.stopping()                   ? why.budget
                 : ctx.opt.stop.deadline_reached() ? fmt::format("{} (the deadline)", why.interrupted)
                                                   : why.interrupted;
  }
}

// Round 0 runs every case its iteration count (at least enough for every unit to compute a tile); a
// profile that fills its budget then repeats rounds until the budget ends.
void DeviceLoop::run() {
  ex.open();
  counted.assign(sel.cases.size(), NOT_COUNTED);
  coverage.assign(sel.cases.size(), 1);
  for (size_t ci = 0; ci < sel.cases.size(); ++ci) {
    TestResult scratch;
    if (ex.applicable(*sel.cases[ci], scratch) || !scratch.not_applicable) counted[ci] = counted_total++;
  }
  for (int round = 0;; ++round) {
    for (size_t ci = 0; ci < sel.cases.size(); ++ci) {
      const Case& c = *sel.cases[ci];
      TestResult& r = test(ci);
      if (round > 0) {
        if (over()) break;
        if ((r.verdict == Verdict::pass || (r.verdict == Verdict::fail && ex.repeats_failed())) && ex.repeats(c)) {
          run_case(c, sel.iterations[ci], ci, false, r);
          settle(ci, r);
        }
        continue;
      }
      const std::string unusable = ex.unusable();
      const char* not_started = ctx.opt.stop.deadline_reached() ? "the deadline ended the run before it started"
                                : ctx.stopping()  ? "interrupted before it started"
                                : ex.stuck()    ? ex.skip_reasons().watchdog
                                : out_of_time() ? "time budget exhausted before it started"
                                                : nullptr;
      // A case this device cannot run says so whatever the time or a stop: on a CPU node, a budget that ran
      // out must not turn the GPU-only cases into rows of tests that did not start.
      if (!unusable.empty()) {
        r.verdict = Verdict::error;
        r.reason = unusable;
      } else if (!ex.applicable(c, r)) {
        // not applicable: applicable() gave the verdict and the reason
      } else if (not_started) {
        r.verdict = Verdict::skip;
        r.reason = not_started;
      } else {
        run_case(c, sel.iterations[ci], ci, true, r);
        if (r.iterations_done > 0 && r.judged_by.empty()) r.judged_by = mode_name(c.mode);
        settle(ci, r);
      }
      if (ctx.opt.on_test_done && !r.not_applicable && counted[ci] != NOT_COUNTED) {
        std::lock_guard<std::mutex> lock(callback_mutex);
        ctx.opt.on_test_done(r, counted[ci], counted_total);
      }
    }
    if (!ctx.opt.fill_budget || over()) break;
  }
  ex.close();
}

}  // namespace

std::string Executor::error_reason(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of host memory";
  return e.what();
}

TestResult new_test(const Case& c, const std::string& device, int device_index) {
  TestResult t;
  t.id = c.id;
  t.family = c.family;
  t.mode = mode_name(c.mode);
  t.distribution = distribution_name(c.distribution);
  t.device = device;
  t.device_index = device_index;
  return t;
}

std::string select_cases(const Battery& battery, const std::string& profile, const std::vector<std::string>& enable,
                         const std::vector<std::string>& disable, Selection& out) {
  return select_cases(battery, CaseChoice{profile, enable, {}, disable}, out);
}

std::string select_cases(const Battery& battery, const CaseChoice& choice, Selection& out) {
  const std::string& profile = choice.profile;
  const auto& enable = choice.enable;
  const auto& enable_any = choice.enable_any;
  const auto& disable = choice.disable;
  if (!profile.empty() && !battery.find_profile(profile)) {
    std::string names;
    for (const Profile& p : battery.profiles) names += (names.empty() ? "" : ", ") + p.name;
    return fmt::format("unknown profile '{}' (profiles: {})", profile, names);
  }
  for (const auto* globs : {&enable, &enable_any, &disable})
    for (const std::string& g : *globs)
      if (std::none_of(battery.cases.begin(), battery.cases.end(), [&](const Case& c) { return matches(g, c); }))
        return fmt::format("'{}' matches no test id or family (see 'sdcscreen list')", g);
  const auto in_profile = [&](const Case& c) { return c.iterations.count(profile) > 0; };
  // --enable selects within the profile: a glob that matches only cases of other profiles is a mistake that
  // names them, and the way to run them.
  for (const std::string& g : enable) {
    std::vector<const Case*> elsewhere;
    for (const Case& c : battery.cases)
      if (matches(g, c)) elsewhere.push_back(&c);
    if (std::any_of(elsewhere.begin(), elsewhere.end(), [&](const Case* c) { return in_profile(*c); })) continue;
    std::vector<const Profile*> holding;  // the profiles that hold what it matches, the shortest budget first
    for (const Profile& p : battery.profiles)
      if (std::any_of(elsewhere.begin(), elsewhere.end(), [&](const Case* c) { return c->iterations.count(p.name); }))
        holding.push_back(&p);
    std::stable_sort(holding.begin(), holding.end(),
                     [](const Profile* x, const Profile* y) { return x->time_budget_s < y->time_budget_s; });
    std::string profiles;
    for (const Profile* p : holding) profiles += (profiles.empty() ? "" : ", ") + p->name;
    return fmt::format("--enable '{}' matches no case of profile {}, only {}{} ({}): --enable selects within "
                       "--profile; --enable-any '{}' selects from every profile",
                       g, profile,
                       elsewhere.size() == 1 ? std::string("a case") : fmt::format("{} cases", elsewhere.size()),
                       profiles.empty() ? " of no profile" : " of profile " + profiles,
                       elsewhere.size() == 1 ? elsewhere.front()->id
                                             : fmt::format("{}, ...", elsewhere.front()->id),
                       g);
  }
  out = Selection{};
  for (const Case& c : battery.cases) {
    const auto it = c.iterations.find(profile);
    const auto any = [&c](const std::vector<std::string>& globs) {
      return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return matches(g, c); });
    };
    bool chosen = enable.empty() && enable_any.empty() ? it != c.iterations.end()
                                                        : (it != c.iterations.end() && any(enable)) || any(enable_any);
    if (std::any_of(disable.begin(), disable.end(), [&](const std::string& g) { return matches(g, c); }))
      chosen = false;
    if (!chosen) continue;
    int iters = it != c.iterations.end() ? it->second : 0;
    if (!iters) {  // enabled explicitly from another profile: its smallest count
      iters = INT32_MAX;
      for (const auto& [p, n] : c.iterations) iters = std::min(iters, n);
    }
    out.cases.push_back(&c);
    out.iterations.push_back(iters);
  }
  if (out.cases.empty()) return "no test selected (the --disable patterns removed everything)";
  return "";
}

Clock::time_point run_schedule(const Selection& sel, const RunOptions& opt, const std::vector<Executor*>& devices,
                               RunResult& result) {
  RunContext ctx{opt, result, Clock::now(), {}};
  ctx.deadline =
      ctx.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.time_budget_s));
  result.injections = opt.injections;
  for (Executor* ex : devices) {
    const size_t base = result.units.size();
    for (const UnitResult& u : ex->units()) result.units.push_back(u);
    ex->attach(ctx, base);
  }
  for (const Case* c : sel.cases)
    for (Executor* ex : devices) result.tests.push_back(new_test(*c, ex->device(), ex->device_index()));
  std::mutex callback_mutex;
  std::vector<DeviceLoop> loops;
  for (size_t i = 0; i < devices.size(); ++i)
    loops.push_back({sel, ctx, *devices[i], i, devices.size(), callback_mutex, {}, 0, {}});
  if (loops.size() == 1) {
    loops[0].run();
  } else {
    std::vector<std::thread> threads;
    for (DeviceLoop& l : loops) threads.emplace_back([&l] { l.run(); });
    for (std::thread& t : threads) t.join();
  }
  if (opt.probe) {
    if (opt.stop.stop_requested())
      result.probe.not_run = opt.stop.why_stopped();
    else if (std::any_of(devices.begin(), devices.end(), [](Executor* ex) { return ex->stuck(); }))
      result.probe.not_run = "the watchdog ended the run";
    else
      run_probe(devices, opt.stop, result.probe, opt.throughput_floor);
  } else {
    result.probe.not_run = opt.probe_skipped;
  }
  for (Executor* ex : devices)
    if (ex->stuck()) {
      result.watchdog_fired = result.watchdog_fired || !opt.stop.stop_requested();
      result.workers_abandoned = true;  // a job may still run: end the process without unwinding
      ex->abandon();
    }
  result.interrupted_by = opt.stop.signal();
  result.deadline_reached = opt.stop.deadline_reached();
  return ctx.start;
}

void run_screen(Backend& backend, const Selection& sel, const RunOptions& opt, RunResult& result) {
  const std::vector<Executor*> executors = backend.make_executors(opt, result);
  const Clock::time_point start = run_schedule(sel, opt, executors, result);
  backend.finish(result, start);
}

}  // namespace sdc
