// The CPU backend's threading: pinned workers, jobs, the watchdog's timed wait, and a whole in-process
// screen of small cases (the ThreadSanitizer run of this suite checks these for data races).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/unit/catch.h"
#include "src/backends/cpu/cpu_executor.h"
#include "src/backends/cpu/worker_pool.h"
#include "src/core/patterns.h"

using namespace sdc;

TEST_CASE("every worker runs every job once, pinned to its CPU", "[pool]") {
  const auto cpus = cpu::allowed_cpus();
  cpu::WorkerPool pool(cpus);
  REQUIRE(pool.size() == cpus.size());
  std::vector<int> ran_on(cpus.size(), -1);
  std::atomic<int> calls{0};
  for (int job = 0; job < 50; ++job)
    pool.run([&](size_t w) {
      ran_on[w] = sched_getcpu();
      calls.fetch_add(1);
    });
  REQUIRE(calls.load() == 50 * static_cast<int>(cpus.size()));
  for (size_t w = 0; w < cpus.size(); ++w) REQUIRE(ran_on[w] == cpus[w].cpu);
}

TEST_CASE("run_until reports a job that overruns its deadline and names the busy CPU", "[pool]") {
  const auto cpus = cpu::allowed_cpus();
  cpu::WorkerPool pool(cpus);
  std::atomic<bool> release{false};
  const std::function<void(size_t)> job = [&](size_t w) {
    if (w == 0)
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE_FALSE(pool.run_until(job, t0 + std::chrono::milliseconds(300), [] { return false; }));
  REQUIRE(pool.busy_cpus() == std::vector<int>{cpus[0].cpu});
  release.store(true);
  // The stuck worker finishes; the pool is usable again.
  while (!pool.busy_cpus().empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(
      pool.run_until([](size_t) {}, std::chrono::steady_clock::now() + std::chrono::seconds(10), [] { return false; }));
}

TEST_CASE("an in-process screen of small cases passes and localizes an injected fault", "[pool]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR).append("/patterns"));  // GCC 12: no false bound
  Selection sel;
  REQUIRE(select_cases(ps.battery, "boot", {"softmax_f32.special_128x1000", "gemm_f32.special_512"}, {}, sel).empty());
  RunOptions opt;
  opt.seed = 7;
  opt.time_budget_s = 60;
  for (const auto& c : cpu::allowed_cpus()) opt.cpus.push_back(c.cpu);
  SECTION("clean") {
    RunResult r;
    run_screen(*cpu::make_backend(ps), sel, opt, r);
    REQUIRE(r.exit_code() == EXIT_PASS);
  }
  SECTION("with an output fault on the last CPU") {
    Injection inj;
    REQUIRE(parse_injection("case=gemm_f32.special_512,element=777,bit=30,unit=" + std::to_string(opt.cpus.back()), inj)
                .empty());
    REQUIRE(check_injection(inj, ps.battery, opt.cpus).empty());
    opt.injections.push_back(inj);
    RunResult r;
    run_screen(*cpu::make_backend(ps), sel, opt, r);
    REQUIRE(r.exit_code() == EXIT_FAIL);
    const auto it = std::find_if(r.tests.begin(), r.tests.end(),
                                 [](const TestResult& x) { return x.id == "gemm_f32.special_512"; });
    REQUIRE(it != r.tests.end());
    const TestResult& t = *it;
    REQUIRE(t.miscompares.size() == 1);
    REQUIRE(t.miscompares[0].element == 777);
    REQUIRE(t.miscompares[0].unit == opt.cpus.back());
    REQUIRE((t.miscompares[0].expected ^ t.miscompares[0].actual) == (1u << 30));
  }
}
