// One spelling per unit (src/core/unit_name.h) in every output, Prometheus labels that join across series, the
// last success absent before the first pass, not-applicable cases counted apart, and the text report's "next"
// lines and folded element listing (src/report/report.cpp, report_next.cpp).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/core/result.h"
#include "src/core/unit_name.h"
#include "src/report/fleet.h"
#include "src/report/html.h"
#include "src/report/report.h"
#include "src/report/report_reader.h"
#include "src/report/unit_json.h"
#include "tests/unit/catch.h"
#include "tests/unit/report_doc.h"
#include "tests/unit/result_test.h"

using namespace sdc;
using nlohmann::json;
using test::check_contains;
using test::lines_of;
using test::one_gpu_run;

namespace {

size_t line_index(const std::string& s, const std::string& prefix) {
  const auto lines = lines_of(s);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(prefix, 0) == 0) return i;
  return SIZE_MAX;
}

RunResult cpu_run(int cpus) {
  RunResult r;
  r.profile = "boot";
  r.program = "sdcscreen";
  r.argv = {"sdcscreen", "run", "--profile", "boot", "-o", "/var/log/r.json", "--history", "/var/lib/h.jsonl"};
  for (int c = 0; c < cpus; ++c) {
    UnitResult u;
    u.cpu = {c, c, c / 4};
    u.tiles = 10;
    r.units.push_back(u);
  }
  return r;
}

TestResult with_verdict(const std::string& id, Verdict v) {
  TestResult t;
  t.id = id;
  t.family = id.substr(0, id.find('.'));
  t.mode = "exact";
  t.verdict = v;
  t.iterations_done = t.iterations_planned = 1;
  t.tiles = 10;
  return t;
}

TestResult not_applicable(const std::string& id) {
  TestResult t = with_verdict(id, Verdict::skip);
  t.not_applicable = true;
  t.reason = "family " + t.family + " runs on GPUs only";
  t.iterations_done = 0;
  return t;
}

// A test failing on `unit` with `elements` differing elements, `listed` of them listed.
TestResult failing(const std::string& id, int unit, uint64_t elements, size_t listed) {
  TestResult t = with_verdict(id, Verdict::fail);
  t.failed_tiles = 1;
  t.miscompared_elements = elements;
  t.units_failed = {unit};
  for (size_t k = 0; k < listed; ++k) {
    Miscompare m;
    m.tile = 0;
    m.unit = unit;
    m.element = k;
    m.element_name = "C[0][" + std::to_string(k) + "]";
    m.expected = 0x3f800000;
    m.actual = 0x3f800001;
    m.ulps = 1;
    t.miscompares.push_back(m);
  }
  return t;
}

UnitRetest retest(int device, int unit, int runs, int failed) {
  UnitRetest x;
  x.device = device;
  x.unit = unit;
  x.tiles = 1;
  x.same_seed_runs = runs;
  x.same_seed_failed = failed;
  x.same_bits = failed;
  return x;
}

}  // namespace

TEST_CASE("a unit has one human and one machine spelling", "[units]") {
  CHECK(unit_text(UnitName::of_cpu(3)) == "cpu 3");
  CHECK(unit_text(UnitName::of_gpu(0)) == "gpu 0");
  CHECK(unit_text(UnitName::of_sm(0, 5)) == "gpu 0 sm 5");
  CHECK(unit_text(UnitName{-1, -1, 5}) == "sm 5");
  CHECK(unit_text(UnitName::of_sm(1, 7), "GPU-ab") == "gpu 1 sm 7 (GPU-ab)");
  CHECK(unit_labels(UnitName::of_cpu(3)) == "cpu=\"3\"");
  CHECK(unit_labels(UnitName::of_gpu(0), "GPU-ab") == "gpu=\"0\",uuid=\"GPU-ab\"");
  CHECK(unit_labels(UnitName::of_sm(0, 5), "GPU-ab") == "gpu=\"0\",uuid=\"GPU-ab\",sm=\"5\"");
  CHECK(unit_labels(UnitName::of_sm(0, 5)) == "gpu=\"0\",sm=\"5\"");
  CHECK(unit_json(UnitName::of_sm(2, 9)) == json{{"kind", "sm"}, {"gpu", 2}, {"sm", 9}});
  CHECK(unit_json(UnitName::of_cpu(4)) == json{{"kind", "cpu"}, {"cpu", 4}});
  // Back from both forms, the older JSON key "device" included.
  for (const UnitName u : {UnitName::of_cpu(12), UnitName::of_gpu(3), UnitName::of_sm(3, 131), UnitName{-1, -1, 7}}) {
    UnitName back;
    REQUIRE(parse_unit_text(unit_text(u), back));
    CHECK(unit_text(back) == unit_text(u));
    if (u.is_cpu() || u.gpu >= 0) {
      REQUIRE(unit_from_json(unit_json(u), back));
      CHECK(unit_text(back) == unit_text(u));
    }
  }
  UnitName old;
  REQUIRE(unit_from_json(json{{"kind", "sm"}, {"device", 1}, {"sm", 4}}, old));
  CHECK(unit_text(old) == "gpu 1 sm 4");
  for (const char* bad : {"cpu", "cpu3", "cpu 3 ", "gpu 0/sm5", "cuda:0 SM 1", "unit 1", "sm 5 gpu 0", "cpu x"}) {
    INFO(bad);
    CHECK_FALSE(parse_unit_text(bad, old));
  }
  CHECK_FALSE(unit_from_json(json{{"kind", "sm"}, {"sm", 4}}, old));
  CHECK_FALSE(unit_from_json(json{{"kind", "disk"}, {"disk", 4}}, old));
}

TEST_CASE("prometheus: the last success is absent until a screen passes", "[units][prometheus]") {
  RunResult r = cpu_run(2);
  r.end_unix = 1000;
  r.tests.push_back(failing("gemm_f32.a", 1, 1, 1));
  std::string prom = render_prometheus(r, "");
  CHECK(prom.find("\nsdcscreen_last_success_timestamp_seconds ") == std::string::npos);
  CHECK(prom.find("\nsdcscreen_last_run_timestamp_seconds 1000.000\n") != std::string::npos);
  // A pass writes it; a later failure carries it over from the old file; a corrupt old value is not carried.
  RunResult ok = cpu_run(2);
  ok.end_unix = 900;
  ok.tests.push_back(with_verdict("gemm_f32.a", Verdict::pass));
  const std::string passed = render_prometheus(ok, "");
  CHECK(passed.find("\nsdcscreen_last_success_timestamp_seconds 900.000\n") != std::string::npos);
  prom = render_prometheus(r, passed);
  CHECK(prom.find("\nsdcscreen_last_success_timestamp_seconds 900.000\n") != std::string::npos);
  prom = render_prometheus(r, "sdcscreen_last_success_timestamp_seconds 0x\n");
  CHECK(prom.find("\nsdcscreen_last_success_timestamp_seconds ") == std::string::npos);
}

TEST_CASE("not applicable is its own result in JSON, Prometheus, the text and the NPD line", "[units]") {
  RunResult r = cpu_run(2);
  r.tests.push_back(with_verdict("softmax_f32.a", Verdict::pass));
  for (int k = 0; k < 3; ++k) r.tests.push_back(not_applicable("gemm_bf16.case_" + std::to_string(k)));
  REQUIRE(r.exit_code() == EXIT_PASS);
  const json j = json::parse(render_json(r, HostInfo{}));
  CHECK(j["summary"]["not_applicable"] == 3);
  CHECK(j["summary"]["skip"] == 0);
  CHECK(j["summary"]["pass"] == 1);
  CHECK(j["tests"][1]["result"] == "not_applicable");
  const std::string prom = render_prometheus(r, "");
  CHECK(prom.find("sdcscreen_tests{result=\"skip\"} 0\n") != std::string::npos);
  CHECK(prom.find("sdcscreen_tests{result=\"not_applicable\"} 3\n") != std::string::npos);
  const std::string text = render_text(r, HostInfo{});
  CHECK(text.find("summary: 4 tests: 1 pass, 0 fail, 0 error, 0 skip, 3 not applicable;") != std::string::npos);
  CHECK(render_npd_line(r) == "OK: 1 tests passed, 3 not applicable on 2 cpus (boot)");
}

TEST_CASE("prometheus and NPD name units with the shared spellings", "[units][prometheus]") {
  RunResult r = cpu_run(4);
  r.units[1].failed_tiles = 1;
  r.units[3].hung = true;
  TestResult t = failing("gemm_f32.a", 1, 2, 2);
  t.retests.push_back(retest(-1, 1, 3, 3));
  r.tests.push_back(t);
  const std::string prom = render_prometheus(r, "");
  check_contains(prom, {"sdcscreen_device_healthy{cpu=\"1\"} 0\n", "sdcscreen_device_healthy{cpu=\"0\"} 1\n",
                        "sdcscreen_device_fault_class{cpu=\"1\",class=\"persistent\"} 1\n",
                        "sdcscreen_device_hung{cpu=\"3\"} 1\n"});
  CHECK(prom.find("device=\"") == std::string::npos);
  CHECK(render_npd_line(r) == "SDC: cpu 1 persistent gemm_f32; cpu 3 hung (watchdog)");
}

TEST_CASE("text: a failing CPU gets one next line: drain, a retest safe to paste, replace when persistent",
          "[units][report]") {
  RunResult r = cpu_run(8);
  TestResult t = failing("gemm_f32.uniform_256", 5, 2, 2);
  t.retests.push_back(retest(-1, 5, 3, 3));
  r.tests.push_back(t);
  r.tests.push_back(failing("softmax_f32.a", 2, 1, 1));  // not retested
  r.units[5].failed_tiles = r.units[2].failed_tiles = 1;
  const std::string s = render_text(r, HostInfo{});
  CHECK(s.find("\nnext: cpu 2: drain the node; retest it alone: sdcscreen run --profile burnin --backend cpu "
               "--cpuset 2 --history none; not retested: replace or RMA its package (package 0) if the retest "
               "fails again\n") != std::string::npos);
  CHECK(s.find("\nnext: cpu 5: drain the node; retest it alone: sdcscreen run --profile burnin --backend cpu "
               "--cpuset 5 --history none; persistent: replace or RMA its package (package 1)\n") != std::string::npos);
  size_t next_lines = 0;
  for (const std::string& l : lines_of(s)) next_lines += l.rfind("next: ", 0) == 0;
  CHECK(next_lines == 2);
  CHECK(s.find("/var/log/r.json") == std::string::npos);  // the run's outputs and history are not in it
  CHECK(s.find("/var/lib/h.jsonl") == std::string::npos);
  // A passing run has no next line.
  RunResult ok = cpu_run(2);
  ok.tests.push_back(with_verdict("gemm_f32.a", Verdict::pass));
  CHECK(render_text(ok, HostInfo{}).find("next:") == std::string::npos);
}

TEST_CASE("text: a GPU failure shows its signature and retest before a folded element listing", "[units][report]") {
  RunResult r;
  r.backend = "cuda";
  r.program = "/usr/bin/sdcscreen";
  r.argv = {"sdcscreen", "run", "--backend", "cuda", "--patterns", "/opt/p", "--html", "/tmp/x.html"};
  DeviceInfo d;
  d.index = 2;
  d.uuid = "GPU-8c2f1a2b-0000";
  d.pci_bus_id = "0000:41:00.0";
  d.sm_count = 4;
  r.devices = {d};
  for (int sm = 0; sm < 4; ++sm) {
    UnitResult u;
    u.device = 0;
    u.sm = sm;
    u.tiles = 4;
    u.failed_tiles = sm == 3;
    r.units.push_back(u);
  }
  TestResult t = failing("gemm_f32.uniform_1024", 3, 40, 32);
  t.device = "cuda:2";
  t.device_index = 0;
  UnitSignature g;
  g.unit = 3;
  for (const Miscompare& m : t.miscompares)
    g.signature.add(m.iteration, m.tile, position_from_name(m.element_name), m.expected, m.actual);
  t.signatures.push_back(g);
  t.retests.push_back(retest(2, 3, 3, 3));
  r.tests.push_back(t);
  const std::string s = render_text(r, HostInfo{});
  const size_t sig = line_index(s, "  signature on gpu 2 sm 3: ");
  const size_t again = line_index(s, "  retest on gpu 2 sm 3 ");
  const size_t first = line_index(s, "  iteration 0 tile 0 on gpu 2 sm 3: C[0][0]");
  REQUIRE(sig != SIZE_MAX);
  REQUIRE(again != SIZE_MAX);
  REQUIRE(first != SIZE_MAX);
  CHECK(sig < first);
  CHECK(again < first);
  size_t elements = 0;
  for (const std::string& l : lines_of(s)) elements += l.rfind("  iteration ", 0) == 0;
  CHECK(elements == 4);
  CHECK(s.find("\n  (36 more differing element(s) not shown; the JSON report lists 28 of them)\n") != std::string::npos);
  CHECK(s.find("gemm_f32.uniform_1024 on gpu 2: ") != std::string::npos);
  CHECK(s.find("\nnext: gpu 2 (sm 3): drain the node; retest it alone: /usr/bin/sdcscreen run --profile burnin "
               "--patterns /opt/p --backend cuda --devices 2 --history none; persistent: replace or RMA the GPU "
               "(GPU-8c2f1a2b-0000, pci 0000:41:00.0)\n") != std::string::npos);
  CHECK(s.find("/tmp/x.html") == std::string::npos);
  CHECK(s.find("cuda:2 SM") == std::string::npos);
  CHECK(s.find(" SM ") == std::string::npos);
}

TEST_CASE("the report reader reads units and not-applicable cases of this schema and the one before", "[units][fleet]") {
  const std::string file = (std::filesystem::temp_directory_path() / "sdc_unit_names_report.json").string();
  for (const int version : {14, 15}) {
    INFO("schema_version " << version);
    const char* gpu_key = version == 14 ? "device" : "gpu";
    json sm = {{"kind", "sm"}, {gpu_key, 1}, {"sm", 5}};
    json failing = {{"id", "gemm_f32.a"},
                    {"device", "cuda:1"},
                    {"result", "fail"},
                    {"units_failed", {5}},
                    {"signatures", {{{"unit", sm}, {"signature", "gemm_f32:bits=m3"}}}},
                    {"retest", {{{"unit", sm}, {"classification", "persistent"}}}}};
    json gpu_only = {{"id", "gemm_bf16.b"},
                     {"device", "cpu"},
                     {"result", version == 14 ? "skip" : "not_applicable"},
                     {"reason", "family gemm_bf16 runs on GPUs only"},
                     {"units_failed", json::array()},
                     {"signatures", json::array()}};
    json unstarted = gpu_only;
    unstarted["id"] = "softmax_f32.c";
    unstarted["result"] = "skip";
    unstarted["reason"] = "time budget exhausted before it started";
    json r = test::report_document(version);
    r["exit"] = {{"code", 1}, {"verdict", "fail"}};
    r["devices"] = {{{"index", 1}, {"kind", "cuda"}, {"uuid", "GPU-ab"}}};
    r["tests"] = {failing, gpu_only, unstarted};
    {
      std::ofstream out(file);
      out << r.dump();
    }
    const ReportView v = read_report(file);
    REQUIRE(v.tests.size() == 3);
    CHECK(v.tests[0].gpu == 1);
    CHECK(v.tests[0].units_failed == std::vector<std::string>{"sm 5"});
    CHECK(v.tests[0].signatures.at("gemm_f32:bits=m3") == std::vector<std::string>{"sm 5"});
    CHECK(v.tests[0].classes.at("sm 5") == "persistent");
    CHECK(v.tests[1].result == "not_applicable");
    CHECK(v.tests[2].result == "skip");
    Fleet f;
    REQUIRE(fleet_add(f, v, 1e10).empty());
    REQUIRE(f.nodes.at("n1").failures.size() == 1);
    CHECK(f.nodes.at("n1").failures[0].identity == "gpu 1 sm 5 (GPU-ab)");
  }
  std::filesystem::remove(file);
}

TEST_CASE("html: a not-applicable case is counted apart and is no problem", "[units][html]") {
  RunResult r = one_gpu_run(0, "GPU-ab");
  r.devices[0].sm_count = 1;
  UnitResult u;
  u.device = 0;
  u.sm = 0;
  u.tiles = 10;
  r.units = {u};
  TestResult ok = with_verdict("gemm_f32.a", Verdict::pass);
  ok.device = "cuda:0";
  ok.device_index = 0;
  TestResult fp8 = not_applicable("gemm_fp8_exactint.b");
  fp8.device = "cuda:0";
  fp8.device_index = 0;
  fp8.reason = "not applicable on gpu 0 (sm_80): fp8 tensor cores need compute capability 8.9 or newer";
  r.tests = {ok, fp8};
  REQUIRE(r.exit_code() == EXIT_PASS);
  const std::string page = render_html(json::parse(render_json(r, HostInfo{})));
  CHECK(page.find("did not pass") == std::string::npos);
  CHECK(page.find("2 tests: 1 pass, 0 fail, 0 error, 0 skip, 0 crash, 1 not applicable") != std::string::npos);
}
