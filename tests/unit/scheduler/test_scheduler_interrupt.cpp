// Interruption through the run options' stop token (src/core/scheduler.h): a CPU screen stopped from its
// own callbacks, as a signal would stop it, settles what ran, skips what did not start with the
// interruption's reason, and reports the signal; the same selection uninterrupted passes. A stop by the run's
// deadline (run --deadline) is judged the same way, but is never a pass.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>

#include "tests/unit/catch.h"
#include "src/backends/cpu/cpu_executor.h"
#include "src/backends/cpu/cpu_topology.h"
#include "src/core/inject.h"
#include "src/core/patterns.h"

using namespace sdc;

namespace {

const std::vector<std::string> CASES{"softmax_f32.special_128x1000", "rmsnorm_f32.mantissa_walk_64x1023",
                                     "cross_entropy_f32.mantissa_walk_64x1000"};

struct InterruptFixture {
  PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  Selection sel;
  RunOptions opt;
  std::atomic<int> stop{0};
  InterruptFixture() {
    REQUIRE(select_cases(ps.battery, "boot", CASES, {}, sel).empty());
    REQUIRE(sel.cases.size() == CASES.size());
    for (int n : sel.iterations) REQUIRE(n >= 2);  // a stop after the first iteration leaves a partial test
    opt.seed = 11;
    opt.time_budget_s = 600;
    opt.cpus = {cpu::allowed_cpus().front().cpu};  // one worker: one iteration covers every unit
    opt.stop = StopToken(&stop);
  }
  const TestResult& test(const RunResult& r, size_t i) {
    const auto it = std::find_if(r.tests.begin(), r.tests.end(), [&](const TestResult& t) { return t.id == CASES[i]; });
    REQUIRE(it != r.tests.end());
    return *it;
  }
  // The second test stopped after its first iteration (its note: they ran before `what`), the third one
  // never started (`not_started`).
  void check_stopped_in_second(const RunResult& r, const char* what, const char* not_started) {
    const TestResult& partial = test(r, 1);
    REQUIRE(partial.verdict == Verdict::pass);
    REQUIRE(partial.iterations_done == 1);
    REQUIRE(partial.iterations_planned == sel.iterations[1]);
    REQUIRE(partial.notes ==
            std::vector<std::string>{fmt::format("1 of {} iterations ran before the {}", sel.iterations[1], what)});
    const TestResult& last = test(r, 2);
    REQUIRE(last.verdict == Verdict::skip);
    REQUIRE(last.reason == not_started);
  }
};

}  // namespace

TEST_CASE("a CPU screen of the selection passes when nothing stops it", "[interrupt]") {
  InterruptFixture f;
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.interrupted_by == 0);
  REQUIRE(r.exit_code() == EXIT_PASS);
  for (size_t i = 0; i < CASES.size(); ++i) {
    const TestResult& t = f.test(r, i);
    REQUIRE(t.verdict == Verdict::pass);
    REQUIRE(t.iterations_done == t.iterations_planned);
    REQUIRE(t.notes.empty());
  }
}

TEST_CASE("a stop between tests skips the tests not started, with the interruption as reason", "[interrupt]") {
  InterruptFixture f;
  f.opt.on_test_done = [&f](const TestResult&, size_t index, size_t) {
    if (index == 0) f.stop.store(SIGTERM);
  };
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.interrupted_by == SIGTERM);
  REQUIRE(r.exit_code() == 128 + SIGTERM);
  REQUIRE_FALSE(r.watchdog_fired);
  REQUIRE_FALSE(r.workers_abandoned);
  const TestResult& done = f.test(r, 0);
  REQUIRE(done.verdict == Verdict::pass);
  REQUIRE(done.notes.empty());
  for (size_t i = 1; i < CASES.size(); ++i) {
    const TestResult& t = f.test(r, i);
    REQUIRE(t.verdict == Verdict::skip);
    REQUIRE(t.reason == "interrupted before it started");
    REQUIRE(t.iterations_done == 0);
    REQUIRE_FALSE(t.not_applicable);
  }
}

TEST_CASE("a stop inside a test keeps its complete iterations and says the rest did not run", "[interrupt]") {
  InterruptFixture f;
  // The second test's second iteration is about to start: stop now, as a signal would.
  f.opt.on_progress = [&f](const Case&, size_t index, size_t, int iteration, int) {
    if (index == 1 && iteration == 1) f.stop.store(SIGINT);
  };
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.interrupted_by == SIGINT);
  REQUIRE(r.exit_code() == 128 + SIGINT);
  REQUIRE_FALSE(r.watchdog_fired);  // an interruption is not the watchdog
  // The workers returned at their next tile: nothing was left running, nothing is leaked.
  REQUIRE_FALSE(r.workers_abandoned);
  REQUIRE(f.test(r, 0).verdict == Verdict::pass);
  f.check_stopped_in_second(r, "interruption", "interrupted before it started");
}

// A GPU-only case on a CPU is not applicable whether or not there was time or a stop: it must never become
// a row of a test that did not start (on a CPU node they would bury the ones that did not run).
TEST_CASE("a stop or a spent budget leaves GPU-only cases not applicable, not unstarted", "[interrupt]") {
  InterruptFixture f;
  const std::string gpu_only = "gemm_bf16.uniform_1024x1024x1024";
  REQUIRE(select_cases(f.ps.battery, "boot", {CASES[0], CASES[1], gpu_only}, {}, f.sel).empty());
  REQUIRE(f.sel.cases.size() == 3);
  const bool budget_spent = GENERATE(false, true);
  if (budget_spent)
    f.opt.time_budget_s = 1e-9;  // over before the first test starts
  else
    f.opt.on_test_done = [&f](const TestResult& t, size_t, size_t) {
      if (t.id == CASES[0]) f.stop.store(SIGTERM);
    };
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.tests.size() == 3);
  const auto find = [&r](const std::string& id) -> const TestResult& {
    const auto it = std::find_if(r.tests.begin(), r.tests.end(), [&](const TestResult& t) { return t.id == id; });
    REQUIRE(it != r.tests.end());
    return *it;
  };
  const std::string not_started =
      budget_spent ? "time budget exhausted before it started" : "interrupted before it started";
  const TestResult& first = find(CASES[0]);
  if (budget_spent) {
    REQUIRE(first.verdict == Verdict::skip);
    REQUIRE(first.reason == not_started);
    REQUIRE(r.exit_code() == EXIT_INCONCLUSIVE);
  } else {
    REQUIRE(first.verdict == Verdict::pass);
    REQUIRE(r.exit_code() == 128 + SIGTERM);
  }
  const TestResult& unstarted = find(CASES[1]);
  REQUIRE(unstarted.verdict == Verdict::skip);
  REQUIRE(unstarted.reason == not_started);
  REQUIRE_FALSE(unstarted.not_applicable);
  const TestResult& g = find(gpu_only);
  REQUIRE(g.verdict == Verdict::skip);
  REQUIRE(g.not_applicable);
  REQUIRE(g.reason == "family gemm_bf16 runs on GPUs only");
  REQUIRE(g.iterations_done == 0);
}

// run --deadline stops a run through the same token: what ran is settled, what did not start says the deadline
// stopped it, and the run is never a pass (2), nor an interruption by a signal; a miscompare found before it
// stands (1).
TEST_CASE("a deadline stop is inconclusive, or a failure after a miscompare, never a pass", "[interrupt]") {
  InterruptFixture f;
  const bool injected = GENERATE(false, true);
  if (injected) {
    Injection inj;
    REQUIRE(parse_injection(fmt::format("case={},element=5,bit=3", CASES[0]), inj).empty());
    REQUIRE(check_injection(inj, f.ps.battery, f.opt.cpus, nullptr).empty());
    f.opt.injections = {inj};
  }
  // The second test's second iteration is about to start: the deadline comes now.
  f.opt.on_progress = [&f](const Case&, size_t index, size_t, int iteration, int) {
    if (index == 1 && iteration == 1) f.stop.store(StopToken::DEADLINE);
  };
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.interrupted_by == 0);
  REQUIRE(r.deadline_reached);
  REQUIRE(r.exit_code() == (injected ? EXIT_FAIL : EXIT_INCONCLUSIVE));
  REQUIRE(f.test(r, 0).verdict == (injected ? Verdict::fail : Verdict::pass));
  f.check_stopped_in_second(r, "deadline", "the deadline ended the run before it started");
  REQUIRE(r.probe.not_run.empty());  // the probe is not asked for here (opt.probe is false)
}

// The progress counter counts the steps of this device's screen: a GPU-only case on a CPU is not one (a CPU
// node's counter used to stop at [90/92]), and no per-test line is said for it.
TEST_CASE("progress counts only the cases that apply to the device", "[interrupt]") {
  InterruptFixture f;
  const std::string gpu_only = "gemm_bf16.uniform_1024x1024x1024";
  REQUIRE(select_cases(f.ps.battery, "boot", {CASES[0], gpu_only, CASES[1]}, {}, f.sel).empty());
  REQUIRE(f.sel.cases.size() == 3);
  std::vector<std::pair<size_t, size_t>> done, progress;
  std::vector<std::string> done_ids;
  f.opt.on_test_done = [&](const TestResult& t, size_t index, size_t count) {
    done.emplace_back(index, count);
    done_ids.push_back(t.id);
  };
  f.opt.on_progress = [&](const Case&, size_t index, size_t count, int, int) { progress.emplace_back(index, count); };
  RunResult r;
  run_screen(*cpu::make_backend(f.ps), f.sel, f.opt, r);
  REQUIRE(r.exit_code() == EXIT_PASS);
  REQUIRE(done == std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 2}});
  REQUIRE(std::find(done_ids.begin(), done_ids.end(), gpu_only) == done_ids.end());
  REQUIRE_FALSE(progress.empty());
  for (const auto& [index, count] : progress) {
    CHECK(count == 2);
    CHECK(index < 2);
  }
  CHECK(progress.back().first == 1);  // the last step shown is [2/2]
}
