// The text report at a glance (src/report/report.cpp): cases that cannot run here collapse into one line
// per reason, the table's columns follow the longest case id, a big node's units fold into ranges of
// passing ones with every other unit listed, a run in which nothing could run says so, a failure's count of the
// elements it does not show, and no bit signature where flipped bits say nothing; and the progress line's width
// (src/report/progress.h).
#include <fmt/format.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "src/core/result.h"
#include "src/core/signature.h"
#include "src/report/progress.h"
#include "src/report/report.h"
#include "tests/unit/catch.h"
#include "tests/unit/result_test.h"

using namespace sdc;
using test::lines_of;

namespace {

RunResult cpu_run(int cpus) {
  RunResult r;
  r.profile = "boot";
  r.reproduce = "sdcscreen run --profile boot";
  for (int c = 0; c < cpus; ++c) {
    UnitResult u;
    u.cpu.cpu = c;
    u.cpu.core = c / 2;
    u.cpu.package = c / 32;
    u.tiles = 100;
    r.units.push_back(u);
  }
  return r;
}

TestResult passed(const std::string& id, const std::string& family) {
  TestResult t;
  t.id = id;
  t.family = family;
  t.mode = "exact";
  t.verdict = Verdict::pass;
  t.iterations_done = t.iterations_planned = 2;
  t.tiles = 100;
  return t;
}

TestResult gpu_only(const std::string& family, int n) {
  TestResult t;
  t.id = family + ".case_" + std::to_string(n);
  t.family = family;
  t.mode = "exact";
  t.verdict = Verdict::skip;
  t.not_applicable = true;
  t.reason = "family " + family + " runs on GPUs only";
  return t;
}

bool has_line(const std::string& s, const std::string& line) {
  for (const std::string& l : lines_of(s))
    if (l == line) return true;
  return false;
}

// Checks that each of `lines` is a whole line of the rendering s; a missing one is named in the failure.
void check_has_lines(const std::string& s, std::initializer_list<std::string> lines) {
  for (const std::string& line : lines) {
    INFO("expected line: \"" << line << "\"");
    CHECK(has_line(s, line));
  }
}

// The offset of the n-th (0-based) whitespace-separated field of a line, npos when it has fewer.
size_t field_offset(const std::string& line, int n) {
  size_t i = 0;
  for (int f = 0;; ++f) {
    i = line.find_first_not_of(' ', i);
    if (i == std::string::npos || f == n) return i;
    i = line.find(' ', i);
    if (i == std::string::npos) return i;
  }
}

}  // namespace

TEST_CASE("text report: GPU-only cases collapse into one line; other skips keep their rows", "[report]") {
  RunResult r = cpu_run(4);
  r.tests.push_back(passed("gemm_f32.uniform_64", "gemm_f32"));
  for (const char* f : {"gemm_bf16", "gemm_fp8", "attention_bf16", "gemm_tf32", "gemm_fp16", "gemm_int8"})
    for (int n = 0; n < 3; ++n) r.tests.push_back(gpu_only(f, n));
  TestResult budget = passed("reduce_f32.uniform_1m", "reduce_f32");
  budget.verdict = Verdict::skip;
  budget.reason = "time budget ran out before every CPU computed a tile";
  r.tests.push_back(budget);
  const std::string s = render_text(r, HostInfo{});
  CHECK(has_line(s,
                 "18 GPU-only cases not applicable on the cpu backend (families gemm_bf16, gemm_fp8, attention_bf16, "
                 "3 more)"));
  CHECK(s.find("runs on GPUs only") == std::string::npos);
  CHECK(s.find("gemm_bf16.case_0") == std::string::npos);
  CHECK(s.find("  skip: time budget ran out before every CPU computed a tile\n") != std::string::npos);
  CHECK(s.find("reduce_f32.uniform_1m ") != std::string::npos);
  // The summary still counts every test, the collapsed ones apart: not applicable is not a skip.
  CHECK(s.find("summary: 20 tests: 1 pass, 0 fail, 0 error, 1 skip, 18 not applicable;") != std::string::npos);
  CHECK(lines_of(s).back() == "exit: " + std::string(r.exit_word()));
}

TEST_CASE("text report: other not-applicable reasons group by reason", "[report]") {
  RunResult r = cpu_run(2);
  for (int n = 0; n < 2; ++n) {
    TestResult t = gpu_only("gemm_fp8", n);
    t.device = "cuda:0";
    t.device_index = 0;
    t.reason = "not applicable on cuda:0 (sm_80): needs sm_89 or newer";
    r.tests.push_back(t);
  }
  const std::string s = render_text(r, HostInfo{});
  CHECK(has_line(s, "2 cases not applicable on cuda:0 (sm_80): needs sm_89 or newer (family gemm_fp8)"));
}

TEST_CASE("text report: columns follow the longest case id", "[report]") {
  RunResult r = cpu_run(2);
  r.tests.push_back(passed("a.b", "gemm_f32"));
  r.tests.push_back(passed("gemm_bf16_exactint_cublaslt.mantissa_walk_128x64x96_and_then_some_more", "gemm_f32"));
  TestResult judged = passed("recorded.case", "gemm_f32");
  judged.mode = "recorded";
  judged.judged_by = "consensus";
  r.tests.push_back(judged);
  const std::string s = render_text(r, HostInfo{});
  std::vector<size_t> offsets;
  for (const std::string& l : lines_of(s))
    if (l.rfind("test ", 0) == 0 || l.rfind("a.b ", 0) == 0 || l.rfind("gemm_bf16_", 0) == 0 ||
        l.rfind("recorded.case ", 0) == 0)
      offsets.push_back(field_offset(l, 3));  // the result column
  REQUIRE(offsets.size() == 4);
  for (size_t o : offsets) CHECK(o == offsets.front());
}

TEST_CASE("text report: a small node keeps one line per CPU", "[report]") {
  RunResult r = cpu_run(4);
  r.units[2].failed_tiles = 3;
  const std::string s = render_text(r, HostInfo{});
  check_has_lines(s, {
                         "  cpu  core package      tiles   failed  result",
                         "    0     0       0        100        0  pass",
                         "    1     0       0        100        0  pass",
                         "    2     1       0        100        3  FAIL",
                         "    3     1       0        100        0  pass",
                     });
  CHECK(s.find("cpus computed") == std::string::npos);
}

TEST_CASE("text report: a big node folds passing CPUs into ranges and lists the others", "[report]") {
  RunResult r = cpu_run(64);
  r.units[5].failed_tiles = 3;
  r.units[40].tiles = 0;  // idle
  r.units[41].hung = true;
  const std::string s = render_text(r, HostInfo{});
  check_has_lines(s, {
                         "64 cpus computed 6300 tiles, 3 failed: 61 pass (cpu 0-4,6-39,42-63), 3 not passing:",
                         "  cpu  core package      tiles   failed  result",
                         "    5     2       0        100        3  FAIL",
                         "   40    20       1          0        0  idle",
                         "   41    20       1        100        0  hung",
                     });
  CHECK(!has_line(s, "    6     3       0        100        0  pass"));
  size_t rows = 0;
  for (const std::string& l : lines_of(s)) rows += l.size() > 40 && l.substr(0, 5).find_first_not_of(' ') != 0;
  CHECK(rows <= 8);
}

TEST_CASE("text report: a big node that passes is one line", "[report]") {
  const std::string s = render_text(cpu_run(64), HostInfo{});
  CHECK(has_line(s, "64 cpus computed 6400 tiles, 0 failed: 64 pass (cpu 0-63)"));
  CHECK(s.find("  cpu  core package") == std::string::npos);
}

TEST_CASE("text report: a big GPU lists its passing and idle SMs as ranges", "[report]") {
  RunResult r;
  r.backend = "cuda";
  DeviceInfo d;
  d.index = 0;
  d.sm_count = 132;
  r.devices.push_back(d);
  for (int sm = 0; sm < 132; ++sm) {
    UnitResult u;
    u.device = 0;
    u.sm = sm;
    u.tiles = sm < 128 ? 10 : 0;
    u.failed_tiles = sm == 7 ? 2 : 0;
    r.units.push_back(u);
  }
  const std::string s = render_text(r, HostInfo{});
  check_has_lines(s, {
                         "gpu 0: 128 SMs computed 1280 tiles, 2 failed -- failing SMs:",
                         "  gpu 0 sm 7: 2 of 10 tiles failed",
                         "  127 pass: sm 0-6,8-127",
                         "  4 idle: sm 128-131",
                     });
}

TEST_CASE("text report: a run in which every selected test is not applicable says that nothing ran", "[report]") {
  RunResult r = cpu_run(2);
  for (int k = 0; k < 3; ++k) r.tests.push_back(gpu_only("gemm_bf16", k));
  r.flag_nothing_applicable();
  const std::string s = render_text(r, HostInfo{});
  check_has_lines(s, {"error: nothing ran: all 3 selected cases are not applicable on the cpu backend (each test "
                      "says why); select cases that run there",
                      "exit: error"});
  // One test that ran: nothing to say.
  RunResult ran = cpu_run(2);
  ran.tests = {gpu_only("gemm_bf16", 0), passed("softmax_f32.special_128x1000", "softmax_f32")};
  ran.flag_nothing_applicable();
  CHECK(ran.errors.empty());
}

namespace {

// A failing test of `id` on cpu 1 with `elements` differing elements, of which `names` are listed.
TestResult failed_on_cpu1(const std::string& id, uint64_t elements, const std::vector<std::string>& names) {
  TestResult t = passed(id, id.substr(0, id.find('.')));
  t.verdict = Verdict::fail;
  t.failed_tiles = 1;
  t.miscompared_elements = elements;
  t.units_failed = {1};
  t.time_to_fail_s = 0.1;
  for (size_t k = 0; k < names.size(); ++k) {
    Miscompare m;
    m.unit = 1;
    m.element = k;
    m.element_name = names[k];
    m.expected = 1;
    m.actual = 3;
    t.miscompares.push_back(m);
  }
  UnitSignature g;
  g.unit = 1;
  g.signature.add(0, 0, ElementPosition{}, 1, 3);
  t.signatures.push_back(g);
  return t;
}

size_t lines_starting(const std::string& s, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& l : lines_of(s)) n += l.rfind(prefix, 0) == 0;
  return n;
}

}  // namespace

TEST_CASE("text report: a replay's metric slots given by value are not counted as shown elements", "[report]") {
  RunResult r = cpu_run(2);
  std::vector<std::string> names;
  for (int k = 0; k < 5; ++k)
    names.push_back(k == 1 ? "replica 0: L2 grad embed mismatch_severity"
                           : fmt::format("replica 0: L1 layer0.attn.wo.forward mb 0 out {} digest.lo", k));
  TestResult t = failed_on_cpu1("train_step_f32.l12_tiny", 10, names);
  ReplayMetric metric;
  metric.unit = 1;
  metric.level = 2;
  metric.site = "grad embed";
  metric.metric = "mismatch_severity";
  metric.value = 2;
  t.replay_metrics.push_back(metric);
  r.tests.push_back(t);
  const std::string s = render_text(r, HostInfo{});
  CHECK(lines_starting(s, "  iteration 0 tile 0 on cpu 1 ") == 3);  // the first four listed but the metric
  check_has_lines(s, {"    L2 grad embed mismatch_severity = 2 (reference 0)",
                      "  (7 more differing element(s) not shown; the JSON report lists 2 of them)"});
  CHECK(lines_starting(s, "  signature on ") == 0);
}

TEST_CASE("text report: the memory test's record has no bit signature; a GEMM's elements have one", "[report]") {
  RunResult r = cpu_run(2);
  r.tests.push_back(failed_on_cpu1("gemm_f32.special_512", 1, {"C[0][0]"}));
  CHECK(lines_starting(render_text(r, HostInfo{}), "  signature on cpu 1 ") == 1);
  r.tests = {failed_on_cpu1("memtest_u32.boot_256m", 1, {"first.read[0]"})};
  r.tests.front().notes = {"memory test slice 0: pass walking_ones read 0x00000003 for 0x00000001 (bits 0x00000002)"};
  const std::string s = render_text(r, HostInfo{});
  CHECK(lines_starting(s, "  signature on ") == 0);
  CHECK(lines_starting(s, "  note: memory test slice 0: pass walking_ones") == 1);
}

TEST_CASE("progress line: the terminal's width, else $COLUMNS, else 80", "[report]") {
  CHECK(progress_columns(120, "60") == 120);
  CHECK(progress_columns(0, "60") == 60);
  CHECK(progress_columns(0, nullptr) == 80);
  CHECK(progress_columns(0, "") == 80);
  CHECK(progress_columns(0, "wide") == 80);
  CHECK(progress_columns(0, "-5") == 80);
}

TEST_CASE("progress line: cut to one column less than the width", "[report]") {
  CHECK(fit_progress_line("abcdef", 80) == "abcdef");
  CHECK(fit_progress_line("abcdef", 7) == "abcdef");
  CHECK(fit_progress_line("abcdef", 6) == "abcde");
  CHECK(fit_progress_line("abcdef", 2) == "a");
  CHECK(fit_progress_line("abcdef", 1).empty());
  CHECK(fit_progress_line("abcdef", 0).empty());
  CHECK(fit_progress_line("", 10).empty());
  // A code point is never cut in two: "é" is two bytes and one column.
  CHECK(fit_progress_line("\xc3\xa9\xc3\xa9\xc3\xa9", 3) == "\xc3\xa9\xc3\xa9");
}
