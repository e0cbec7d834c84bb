// The throughput probe (src/core/probe.h) and its judgement (assess_throughput, src/core/result.h): the
// calibration sizes rounds by time on a fast and on a slow machine alike, a unit is slow only when it is
// below the floor in most rounds, a noisy round or a failed unit is not called slow, and the CPU backend's
// probe measures every selected CPU.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "tests/unit/catch.h"
#include "src/backends/cpu/cpu_executor.h"
#include "src/backends/cpu/cpu_topology.h"
#include "src/core/patterns.h"
#include "src/core/probe.h"

using namespace sdc;

namespace {

// A run whose probe measured `rel[u][round]` relative speeds: unit u's seconds are 1 / rel.
RunResult probed(const std::vector<std::vector<double>>& rel) {
  RunResult r;
  r.probe.reps = 100;
  for (size_t u = 0; u < rel.size(); ++u) {
    r.probe.units.push_back(fmt::format("cpu {}", u));
    UnitResult unit;
    unit.cpu.cpu = static_cast<int>(u);
    r.units.push_back(unit);
  }
  for (size_t round = 0; round < rel[0].size(); ++round) {
    std::vector<double> s;
    for (const auto& v : rel) s.push_back(1.0 / v[round]);
    r.probe.seconds.push_back(s);
  }
  return r;
}

// A run of `cpus` healthy CPUs (cpu 0 ...) whose probe measured p, judged.
RunResult judged(const ProbeRun& p, int cpus) {
  RunResult r;
  r.probe = p;
  for (int u = 0; u < cpus; ++u) {
    UnitResult x;
    x.cpu.cpu = u;
    r.units.push_back(x);
  }
  assess_throughput(r);
  return r;
}

const UnitThroughput& unit(const RunResult& r, const std::string& name) {
  const auto it = std::find_if(r.throughput.begin(), r.throughput.end(),
                               [&](const UnitThroughput& u) { return u.unit == name; });
  REQUIRE(it != r.throughput.end());
  return *it;
}

// An executor of `speed.size()` units whose probe takes reps * cost / speed[u] seconds: a machine as fast
// or as slow as `cost` says, without timing anything.
class FakeProbeDevice final : public Executor {
 public:
  FakeProbeDevice(double cost, std::vector<double> speed) : cost_(cost), speed_(std::move(speed)) {}
  std::string device() const override { return "cpu"; }
  int device_index() const override { return -1; }
  std::vector<UnitResult> units() const override { return {}; }
  void attach(RunContext&, size_t) override {}
  bool stuck() const override { return false; }
  SkipReasons skip_reasons() const override { return {"", "", ""}; }
  bool repeats_failed() const override { return true; }
  bool applicable(const Case&, TestResult&) const override { return true; }
  std::optional<PreparedCase> prepare(const Case&, TestResult&) override {
    return PreparedCase{1, 1, {1, 1, "tiles in index order"}, 1, 1};
  }
  bool run_iteration(const Case&, int, TestResult&) override { return true; }
  void compare(const Case&, int, TestResult&) override {}
  void release_case() override {}
  std::vector<std::string> probe_units() const override {
    std::vector<std::string> out;
    for (size_t u = 0; u < speed_.size(); ++u) out.push_back(fmt::format("cpu {}", u));
    return out;
  }
  std::string probe_work() const override { return "fake"; }
  std::string probe(uint64_t reps, Clock::time_point, std::vector<double>& seconds) override {
    ++calls;
    if (fail_after >= 0 && calls > fail_after) return "watchdog: the fake hung";
    seconds.clear();
    for (size_t u = 0; u < speed_.size(); ++u)
      seconds.push_back(static_cast<double>(reps) * cost_ / (u == 1 && calls <= disturbed_calls ? 0.3 : speed_[u]));
    return "";
  }
  int calls = 0;
  int fail_after = -1;
  int disturbed_calls = 0;  // unit 1 runs at 0.3 of its speed in the first calls (another process's burst)

 private:
  double cost_;
  std::vector<double> speed_;
};

}  // namespace

TEST_CASE("probe: a unit below the floor in every round is slow, its peers are not", "[probe]") {
  RunResult r = probed({{1, 1, 1, 1, 1, 1, 1}, {1.02, 0.98, 1, 1, 1.01, 0.99, 1}, {0.5, 0.5, 0.55, 0.45, 0.5, 0.5, 0.5}});
  assess_throughput(r);
  REQUIRE(r.throughput.size() == 3);
  const UnitThroughput& s = unit(r, "cpu 2");
  CHECK(s.slow);
  CHECK(s.rounds == 7);
  CHECK(s.below_floor == 7);
  CHECK(s.relative == Approx(0.5).epsilon(0.02));
  CHECK(s.low < s.relative);
  CHECK(s.high > s.relative);
  CHECK(s.rate == Approx(50).epsilon(0.02));  // 100 reps in 2 s
  CHECK_FALSE(unit(r, "cpu 0").slow);
  CHECK_FALSE(unit(r, "cpu 1").slow);
  CHECK(r.any_slow());
  r.fail_slow = true;
  r.tests.push_back(TestResult{});
  r.tests.back().verdict = Verdict::pass;
  CHECK(r.exit_code() == EXIT_SLOW);
}

TEST_CASE("probe: one slow round, or a minority of rounds below the floor, is not slow", "[probe]") {
  // One round at a third of its peers (another process, a clock ramp): below the floor once.
  RunResult r = probed({{1, 1, 1, 1, 1, 1, 1}, {1, 1, 0.33, 1, 1, 1, 1}});
  assess_throughput(r);
  CHECK(unit(r, "cpu 1").below_floor == 1);
  CHECK_FALSE(unit(r, "cpu 1").slow);
  CHECK_FALSE(r.any_slow());
  // Four of seven rounds below the floor: the median is below it, but not two thirds of the rounds.
  r = probed({{1, 1, 1, 1, 1, 1, 1}, {0.8, 0.8, 0.8, 0.8, 1, 1, 1}});
  assess_throughput(r);
  CHECK(unit(r, "cpu 1").relative < r.throughput_floor);
  CHECK(unit(r, "cpu 1").below_floor == 4);
  CHECK_FALSE(unit(r, "cpu 1").slow);
  // Five of seven: slow.
  r = probed({{1, 1, 1, 1, 1, 1, 1}, {0.8, 0.8, 0.8, 0.8, 0.8, 1, 1}});
  assess_throughput(r);
  CHECK(unit(r, "cpu 1").slow);
}

TEST_CASE("probe: too few rounds, one unit or no probe judge nothing slow", "[probe]") {
  RunResult r = probed({{1, 1, 1, 1}, {0.1, 0.1, 0.1, 0.1}});  // PROBE_MIN_ROUNDS is 5
  assess_throughput(r);
  CHECK(unit(r, "cpu 1").rounds == 4);
  CHECK_FALSE(unit(r, "cpu 1").slow);
  r = probed({{1, 1, 1, 1, 1, 1, 1}});
  assess_throughput(r);
  CHECK(r.throughput.empty());
  RunResult none;
  assess_throughput(none);
  CHECK(none.throughput.empty());
}

TEST_CASE("probe: a unit that failed is failed, not also slow", "[probe]") {
  RunResult r = probed({{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1}, {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}});
  r.units[2].failed_tiles = 3;
  assess_throughput(r);
  CHECK(unit(r, "cpu 2").failed);
  CHECK_FALSE(unit(r, "cpu 2").slow);
  r.units[2].failed_tiles = 0;
  r.units[2].hung = true;
  assess_throughput(r);
  CHECK_FALSE(unit(r, "cpu 2").slow);
  // A GPU: any failing SM of it.
  RunResult g = probed({{1, 1, 1, 1, 1, 1, 1}, {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}});
  g.probe.units = {"gpu 0", "gpu 1"};
  g.units.clear();
  g.devices.resize(2);
  g.devices[0].index = 0;
  g.devices[1].index = 1;
  UnitResult sm;
  sm.device = 1;
  sm.sm = 7;
  g.units.push_back(sm);
  assess_throughput(g);
  CHECK(unit(g, "gpu 1").slow);
  g.units[0].failed_tiles = 1;
  assess_throughput(g);
  CHECK(unit(g, "gpu 1").failed);
  CHECK_FALSE(unit(g, "gpu 1").slow);
}

TEST_CASE("probe: calibration sizes a round by time on a fast and on a slow machine alike", "[probe]") {
  for (const double cost : {1e-9, 1e-6, 1e-3, 0.1}) {
    INFO("seconds per work item: " << cost);
    FakeProbeDevice dev(cost, {1.0, 1.0, 0.1, 1.0});  // cpu 2 ten times slower
    ProbeRun p;
    run_probe({&dev}, StopToken(), p);
    REQUIRE(p.not_run.empty());
    REQUIRE(p.seconds.size() == static_cast<size_t>(2 * PROBE_ROUNDS));  // a slow unit: confirmed
    REQUIRE(p.units.size() == 4);
    CHECK(p.work == "fake");
    // The median unit's round takes at least the target, and not much more (a step grows reps at most 100
    // times, aiming a fifth past the target).
    const double median_round = static_cast<double>(p.reps) * cost;
    CHECK(median_round >= PROBE_TARGET_S);
    CHECK(median_round <= std::max(1.3 * PROBE_TARGET_S, cost));
    const RunResult r = judged(p, 4);
    CHECK(unit(r, "cpu 2").slow);
    CHECK(unit(r, "cpu 2").relative == Approx(0.1));
    CHECK_FALSE(unit(r, "cpu 0").slow);
  }
}

TEST_CASE("probe: a device that does not finish, a stop or a lone unit leaves it not run, with the reason",
          "[probe]") {
  FakeProbeDevice hangs(1e-3, {1.0, 1.0});
  hangs.fail_after = 3;
  ProbeRun p;
  run_probe({&hangs}, StopToken(), p);
  CHECK(p.not_run == "watchdog: the fake hung");
  CHECK(p.seconds.empty());
  CHECK(p.reps == 0);
  FakeProbeDevice fine(1e-3, {1.0, 1.0});
  std::atomic<int> flag{15};
  run_probe({&fine}, StopToken(&flag), p);
  CHECK(p.not_run == "interrupted");
  CHECK(fine.calls == 0);
  FakeProbeDevice alone(1e-3, {1.0});
  run_probe({&alone}, StopToken(), p);
  CHECK(p.not_run == "one unit: no peer to compare with");
  // Two devices of two units each are measured together, in device order.
  FakeProbeDevice a(1e-3, {1.0, 1.0}), b(1e-3, {1.0, 0.5});
  run_probe({&a, &b}, StopToken(), p);
  REQUIRE(p.not_run.empty());
  REQUIRE(p.seconds.size() == static_cast<size_t>(2 * PROBE_ROUNDS));
  CHECK(p.seconds[0].size() == 4);
  CHECK(p.seconds[0][3] == Approx(2 * p.seconds[0][0]));
}

TEST_CASE("probe: the CPU backend measures every selected CPU after the battery", "[probe]") {
  const auto cpus = cpu::allowed_cpus();
  if (cpus.size() < 2) {
    WARN("one CPU: the probe has no peer to measure against");
    return;
  }
  PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  Selection sel;
  REQUIRE(select_cases(ps.battery, "boot", {"softmax_f32.special_128x1000"}, {}, sel).empty());
  RunOptions opt;
  opt.seed = 5;
  opt.time_budget_s = 600;
  opt.cpus = {cpus[0].cpu, cpus[1].cpu};
  opt.probe = true;
  RunResult r;
  run_screen(*cpu::make_backend(ps), sel, opt, r);
  REQUIRE(r.exit_code() == EXIT_PASS);
  INFO(r.probe.not_run);
  REQUIRE(r.probe.not_run.empty());
  CHECK(r.probe.units == std::vector<std::string>{fmt::format("cpu {}", cpus[0].cpu), fmt::format("cpu {}", cpus[1].cpu)});
  CHECK(r.probe.reps >= 1);
  // 7 rounds, or 14 when a CPU looked slow in the first 7 (a loaded machine can do that): how fast this
  // machine's CPUs are is not what this test checks.
  REQUIRE((r.probe.seconds.size() == static_cast<size_t>(PROBE_ROUNDS) ||
           r.probe.seconds.size() == static_cast<size_t>(2 * PROBE_ROUNDS)));
  for (const auto& round : r.probe.seconds)
    for (double s : round) CHECK(s > 0);
  // Without opt.probe (record, golden) there is none.
  RunResult plain;
  opt.probe = false;
  run_screen(*cpu::make_backend(ps), sel, opt, plain);
  CHECK(plain.probe.seconds.empty());
  CHECK(plain.probe.units.empty());
}

TEST_CASE("probe: a unit that looks slow is measured again, and a disturbance that passes is not slow", "[probe]") {
  // No unit below the floor: the first rounds are all.
  FakeProbeDevice even(1e-3, {1.0, 1.0, 1.0});
  ProbeRun p;
  run_probe({&even}, StopToken(), p);
  CHECK(p.seconds.size() == static_cast<size_t>(PROBE_ROUNDS));
  // Unit 1 disturbed through calibration and the first rounds only: it looks slow, is measured again after
  // the pause, and over all the rounds it is not slow.
  FakeProbeDevice burst(1e-3, {1.0, 1.0, 1.0});
  burst.disturbed_calls = 2 + PROBE_ROUNDS;  // calibration (2 calls at this cost) and the first rounds
  run_probe({&burst}, StopToken(), p);
  REQUIRE(p.not_run.empty());
  REQUIRE(p.seconds.size() == static_cast<size_t>(2 * PROBE_ROUNDS));
  const RunResult r = judged(p, 3);
  CHECK(unit(r, "cpu 1").below_floor == PROBE_ROUNDS);
  CHECK_FALSE(unit(r, "cpu 1").slow);
  // A floor the unit stays above: no second look.
  FakeProbeDevice mild(1e-3, {1.0, 0.9, 1.0});
  run_probe({&mild}, StopToken(), p, 0.5);
  CHECK(p.seconds.size() == static_cast<size_t>(PROBE_ROUNDS));
}
