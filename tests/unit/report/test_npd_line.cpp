// The node-problem-detector line (render_npd_line, src/report/report_machine.cpp) where it must agree with the other
// outputs: a crashed unit's family after "crash" (as the drain reason, docs/fleet.md), a case that cannot run here
// named not_applicable (never a skip: docs/design.md, "Verdicts") and after a test that could have run, and a
// drill's [drill] kept by the 80-character cut; and the Prometheus series that says whether the probe ran.
#include <string>

#include "src/core/result.h"
#include "src/report/report.h"
#include "tests/unit/catch.h"
#include "tests/unit/result_test.h"

using namespace sdc;

namespace {

RunResult npd_cpu_run() { return test::cpu_units_run("boot", 2, 10); }

TestResult npd_not_applicable(const std::string& id) {
  TestResult t = test::test_of(id, Verdict::skip);
  t.not_applicable = true;
  t.reason = "GPUs only";
  return t;
}

Injection npd_drill(const std::string& spec) {
  Injection i;
  i.spec = spec;
  i.case_id = "gemm_f32.special_512";
  i.fired = true;
  return i;
}

}  // namespace

TEST_CASE("npd: a crashed unit's line says crash, as the drain reason does", "[npd]") {
  RunResult r = npd_cpu_run();
  TestResult t = test::test_of("gemm_f32.special_512", Verdict::crash, {1});
  t.reason = "cpu 1 took signal 11";
  r.tests.push_back(t);
  CHECK(render_npd_line(r) == "SDC: cpu 1 crash gemm_f32");
  r.injections.push_back(npd_drill("case=gemm_f32.special_512,unit=1,action=crash"));
  CHECK(render_npd_line(r) == "SDC: cpu 1 crash gemm_f32 [drill]");
  r.tests.front().verdict = Verdict::fail;  // a miscompare stays the family alone
  CHECK(render_npd_line(r) == "SDC: cpu 1 gemm_f32 [drill]");
}

TEST_CASE("npd: a case that cannot run here is not_applicable, after a test that could have run", "[npd]") {
  RunResult r = npd_cpu_run();
  r.tests.push_back(npd_not_applicable("gemm_bf16.uniform_1024"));
  REQUIRE(npd_exit_code(r) == 2);
  CHECK(render_npd_line(r) == "Unknown: gemm_bf16.uniform_1024 not_applicable: GPUs only");
  TestResult err = test::test_of("softmax_f32.special_128x1000", Verdict::error);
  err.reason = "out of memory";
  r.tests.push_back(err);
  CHECK(render_npd_line(r) == "Unknown: softmax_f32.special_128x1000 error: out of memory");
  // Every test not applicable: the run's error says that nothing ran, first.
  r.tests.pop_back();
  r.flag_nothing_applicable();
  CHECK(render_npd_line(r).rfind("Unknown: nothing ran: the one selected case is not applicable", 0) == 0);
}

TEST_CASE("npd: the 80-character cut keeps a drill's marker, and the weakened mark after it", "[npd]") {
  RunResult r = npd_cpu_run();
  TestResult t = test::test_of("gemm_f32.special_512", Verdict::pass);
  t.iterations_done = 1;
  r.tests.push_back(t);
  const std::string spec = "case=gemm_f32.special_512,element=77,bit=3,stuck=1";
  r.injections.push_back(npd_drill(spec));
  r.flag_masked_injections();
  REQUIRE(npd_exit_code(r) == 2);
  const std::string line = render_npd_line(r);
  CHECK(line.size() == NPD_LINE_MAX);
  CHECK(line.rfind("Unknown: injection case=gemm_f32.special_512,element=77,", 0) == 0);
  CHECK(line.substr(line.size() - 11) == "... [drill]");
  r.weakened_by.push_back({"SDCSCREEN_SUPERVISE", "0", "no crash supervision"});
  const std::string weakened = render_npd_line(r);
  CHECK(weakened.size() == NPD_LINE_MAX);
  const std::string marks = "... [drill] [weakened: SDCSCREEN_SUPERVISE]";
  CHECK(weakened.substr(weakened.size() - marks.size()) == marks);
  // A short line keeps its marks where they stand.
  r.errors = {"x"};
  CHECK(render_npd_line(r) == "Unknown: x [drill] [weakened: SDCSCREEN_SUPERVISE]");
}

TEST_CASE("prometheus: sdcscreen_probe_ran says whether the probe measured the units", "[npd][prometheus]") {
  RunResult r = npd_cpu_run();
  r.tests.push_back(npd_not_applicable("gemm_bf16.uniform_1024"));
  r.probe.not_run = "--no-probe: no unit was measured for slowness";
  const std::string skipped = render_prometheus(r, "");
  CHECK(skipped.find("# TYPE sdcscreen_probe_ran gauge\nsdcscreen_probe_ran 0\n") != std::string::npos);
  r.probe.not_run.clear();
  r.probe.seconds = {{0.1, 0.1}};
  CHECK(render_prometheus(r, "").find("\nsdcscreen_probe_ran 1\n") != std::string::npos);
}
