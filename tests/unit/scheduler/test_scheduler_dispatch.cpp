// The dispatch of a screen (run_screen, src/core/scheduler.h): a backend's factory makes its executors once, the
// scheduler runs a case as prepare() gave it (tiles, tile grid, the iterations that cover every unit and those
// the case needs at least), words a skip with the executor's skip_reasons for its cause, and the backend's
// finishing step runs after the schedule, on settled tests.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "src/core/scheduler.h"

using namespace sdc;

namespace {

// An executor of two units whose prepared case and events are scripted: every iteration completes and
// compares equal; after `stop_after` iterations in all it asks the run to stop, as a signal would; with
// `stuck_after_case` the watchdog gives up on it once its first case is done.
class ScriptedExecutor final : public Executor {
 public:
  std::string device() const override { return "cpu"; }
  int device_index() const override { return -1; }
  std::vector<UnitResult> units() const override { return std::vector<UnitResult>(2); }
  void attach(RunContext&, size_t) override {}
  bool stuck() const override { return stuck_; }
  SkipReasons skip_reasons() const override {
    return {"scripted: the watchdog", "scripted: interrupted", "scripted: the budget"};
  }
  bool repeats_failed() const override { return true; }
  bool applicable(const Case&, TestResult&) const override { return true; }
  std::optional<PreparedCase> prepare(const Case&, TestResult&) override {
    ++prepared;
    return prepared_case;
  }
  bool run_iteration(const Case&, int, TestResult&) override {
    ++iterations;
    if (stop && iterations == stop_after) stop->store(SIGINT);
    return true;
  }
  void compare(const Case&, int, TestResult&) override {}
  void release_case() override { stuck_ = stuck_ || stuck_after_case; }

  PreparedCase prepared_case{6, 1000.0, {2, 3, "rows x cols"}, 2, 1};
  std::atomic<int>* stop = nullptr;
  int stop_after = 0, prepared = 0, iterations = 0;
  bool stuck_after_case = false;

 private:
  bool stuck_ = false;
};

// A backend of one scripted executor that records what the dispatch asked of it.
class ScriptedBackend final : public Backend {
 public:
  explicit ScriptedBackend(ScriptedExecutor& ex, bool fail = false) : ex_(ex), fail_(fail) {}
  std::vector<Executor*> make_executors(const RunOptions& opt, RunResult& result) override {
    ++made;
    seed = opt.seed;
    tests_when_made = result.tests.size();
    if (fail_) throw std::runtime_error("cannot pin cpu 3");
    return {&ex_};
  }
  void finish(RunResult& result, Clock::time_point start) override {
    ++finished;
    for (const TestResult& t : result.tests) verdicts.push_back(t.verdict);
    abandoned = result.workers_abandoned;
    started_in_time = start <= Clock::now();
  }
  int made = 0, finished = 0;
  uint64_t seed = 0;
  size_t tests_when_made = 99;
  std::vector<Verdict> verdicts;
  bool abandoned = false, started_in_time = false;

 private:
  ScriptedExecutor& ex_;
  bool fail_;
};

struct Fixture {
  std::vector<Case> cases;
  Selection sel;
  RunOptions opt;
  std::atomic<int> stop{0};
  explicit Fixture(int iterations) {
    for (const char* id : {"fam.first", "fam.second"}) {
      Case c;
      c.id = id;
      c.family = "fam";
      cases.push_back(c);
    }
    for (const Case& c : cases) {
      sel.cases.push_back(&c);
      sel.iterations.push_back(iterations);
    }
    opt.seed = 17;
    opt.time_budget_s = 3600;
    opt.stop = StopToken(&stop);
  }
};

}  // namespace

TEST_CASE("dispatch: the backend's executors run each case as prepared, then its finishing step", "[dispatch]") {
  Fixture f(1);
  ScriptedExecutor ex;
  ScriptedBackend backend(ex);
  SECTION("the first round covers every unit") {}
  SECTION("a case needs at least its minimum") { ex.prepared_case.minimum_iterations = 3; }
  const int planned = std::max(2, ex.prepared_case.minimum_iterations);
  RunResult r;
  run_screen(backend, f.sel, f.opt, r);
  CHECK(backend.made == 1);
  CHECK(backend.seed == 17);
  CHECK(backend.tests_when_made == 0);  // made before the schedule set up its tests
  CHECK(backend.finished == 1);
  CHECK(backend.started_in_time);
  CHECK(backend.verdicts == std::vector<Verdict>{Verdict::pass, Verdict::pass});
  CHECK_FALSE(backend.abandoned);
  CHECK(ex.prepared == 2);
  REQUIRE(r.tests.size() == 2);
  CHECK(r.units.size() == 2);
  for (const TestResult& t : r.tests) {
    CHECK(t.tiles == 6);
    CHECK(t.tile_grid.rows == 2);
    CHECK(t.tile_grid.cols == 3);
    CHECK(t.tile_grid.axes == "rows x cols");
    CHECK(t.iterations_planned == planned);
    CHECK(t.iterations_done == planned);
  }
}

TEST_CASE("dispatch: a test stopped before it covered every unit is a skip in its executor's words", "[dispatch]") {
  Fixture f(1);
  ScriptedExecutor ex;
  ex.stop = &f.stop;
  ex.stop_after = 1;  // one iteration of the first case: it needs two to reach both units
  ScriptedBackend backend(ex);
  RunResult r;
  run_screen(backend, f.sel, f.opt, r);
  REQUIRE(r.tests.size() == 2);
  CHECK(r.tests[0].iterations_done == 1);
  CHECK(r.tests[0].verdict == Verdict::skip);
  CHECK(r.tests[0].reason == "scripted: interrupted");
  CHECK(r.tests[1].verdict == Verdict::skip);
  CHECK(r.tests[1].reason == "interrupted before it started");
  CHECK(r.interrupted_by == SIGINT);
  CHECK(backend.finished == 1);
}

TEST_CASE("dispatch: after the watchdog, a test not started is a skip in its executor's words", "[dispatch]") {
  Fixture f(2);
  ScriptedExecutor ex;
  ex.stuck_after_case = true;
  ScriptedBackend backend(ex);
  RunResult r;
  run_screen(backend, f.sel, f.opt, r);
  REQUIRE(r.tests.size() == 2);
  CHECK(r.tests[0].verdict == Verdict::pass);
  CHECK(r.tests[1].verdict == Verdict::skip);
  CHECK(r.tests[1].reason == "scripted: the watchdog");
  CHECK(ex.prepared == 1);
  CHECK(backend.abandoned);  // the finishing step sees what the schedule left
  CHECK(r.watchdog_fired);
}

TEST_CASE("dispatch: a backend that cannot make its executors runs nothing", "[dispatch]") {
  Fixture f(1);
  ScriptedExecutor ex;
  ScriptedBackend backend(ex, true);
  RunResult r;
  CHECK_THROWS_WITH(run_screen(backend, f.sel, f.opt, r), "cannot pin cpu 3");
  CHECK(backend.finished == 0);
  CHECK(r.tests.empty());
  CHECK(ex.prepared == 0);
}
