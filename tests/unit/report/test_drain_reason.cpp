// The drain reason (src/report/drain_reason.cpp) for each kind of failure a report can hold, and the reproduce
// line (src/report/reproduce.cpp): what it keeps, what it leaves out and says so.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "src/report/drain_reason.h"
#include "src/report/report.h"

using namespace sdc;
using nlohmann::json;

namespace {

json failed_report() {
  return {{"tool", {{"name", "sdcscreen"}}},
          {"fault_injection", false},
          {"units", json::array()},
          {"tests", json::array()},
          {"exit", {{"code", 1}, {"verdict", "fail"}}}};
}

json cpu_test(const std::string& family, const std::string& result, std::vector<int> units) {
  return {{"id", family + ".case"}, {"family", family},      {"device", "cpu"},
          {"result", result},       {"units_failed", units}, {"miscompares", json::array()}};
}

}  // namespace

TEST_CASE("no drain reason unless the verdict is fail", "[drain_reason]") {
  json r = failed_report();
  r["tests"].push_back(cpu_test("softmax_f32", "fail", {1}));
  CHECK(report_says_fail(r));
  r["exit"] = {{"code", 0}, {"verdict", "pass"}};
  CHECK_FALSE(report_says_fail(r));
  CHECK(drain_reason(r).empty());
  r["exit"] = {{"code", 2}, {"verdict", "error"}};
  CHECK(drain_reason(r).empty());
  CHECK(drain_reason(json::array()).empty());
  CHECK(drain_reason(json{{"exit", "fail"}}).empty());
}

TEST_CASE("a miscompare on CPUs names the CPUs and the families", "[drain_reason]") {
  json r = failed_report();
  r["tests"].push_back(cpu_test("softmax_f32", "fail", {3, 1}));
  r["tests"].push_back(cpu_test("softmax_f32", "pass", {}));
  r["tests"].push_back(cpu_test("gemm_f32", "fail", {1, 10, 2}));
  CHECK(drain_reason(r) == "SDC: cpu 1,2,3,10 softmax_f32,gemm_f32");
}

TEST_CASE("a miscompare on a GPU's SM names the GPU", "[drain_reason]") {
  json r = failed_report();
  r["tests"].push_back({{"family", "gemm_f32"},
                        {"device", "cuda:2"},
                        {"result", "fail"},
                        {"units_failed", {17, 40}},
                        {"miscompares", json::array()}});
  CHECK(drain_reason(r) == "SDC: gpu 2 gemm_f32");
  // No units_failed (an older report): the miscompares' units.
  r["tests"][0]["units_failed"] = json::array();
  r["tests"][0]["device"] = "";
  r["tests"][0]["miscompares"] = {{{"unit", {{"kind", "sm"}, {"device", 3}, {"sm", 5}}}}};
  CHECK(drain_reason(r) == "SDC: gpu 3 gemm_f32");
}

TEST_CASE("a replay names its level and first failing site", "[drain_reason]") {
  json r = failed_report();
  json t = cpu_test("train_step_f32", "fail", {4});
  t["miscompares"] = {{{"element_name", "replica 2: L1 layer1.mlp.down.forward mb 0 out 3 digest.lo"}}};
  r["tests"].push_back(t);
  CHECK(drain_reason(r) == "SDC: cpu 4 replay L1 layer1.mlp.down.forward");
}

TEST_CASE("a crash names its unit", "[drain_reason]") {
  json r = failed_report();
  r["tests"].push_back(cpu_test("gemm_f32", "crash", {3}));
  CHECK(drain_reason(r) == "SDC: cpu 3 crash gemm_f32");
  // A GPU that lost its context: no SM, the GPU.
  r["tests"] = {{{"family", "gemm_bf16"}, {"device", "cuda:1"}, {"result", "crash"}, {"units_failed", json::array()}}};
  CHECK(drain_reason(r) == "SDC: gpu 1 crash gemm_bf16");
  // With a miscompare elsewhere: both units, both things.
  r["tests"].push_back(cpu_test("softmax_f32", "fail", {0}));
  CHECK(drain_reason(r) == "SDC: gpu 1 cpu 0 crash gemm_bf16,softmax_f32");
}

TEST_CASE("a hang names its unit", "[drain_reason]") {
  json r = failed_report();
  r["units"] = {{{"kind", "cpu"}, {"cpu", 12}, {"result", "hung"}},
                {{"kind", "cpu"}, {"cpu", 2}, {"result", "hung"}},
                {{"kind", "cpu"}, {"cpu", 3}, {"result", "pass"}},
                {{"kind", "sm"}, {"gpu", 0}, {"sm", 7}, {"result", "hung"}},
                {{"kind", "sm"}, {"gpu", 0}, {"sm", 9}, {"result", "hung"}},
                {{"kind", "sm"}, {"device", 1}, {"sm", 4}, {"result", "hung"}}};  // schema_version 14's key
  CHECK(drain_reason(r) == "SDC: cpu 2,cpu 12,gpu 0,gpu 1 hung (watchdog)");
}

TEST_CASE("an uncorrected hardware error names its unit", "[drain_reason]") {
  json r = failed_report();
  r["host"] = {{"telemetry",
                {{"events",
                  {{{"kind", "edac_corrected"}, {"unit", "mc0"}, {"fatal", false}},
                   {{"kind", "machine_check"}, {"unit", "cpu 5"}, {"fatal", true}}}},
                 {"drill", nullptr}}}};
  CHECK(drain_reason(r) == "SDC: cpu 5 machine check during the screen");
  r["host"]["telemetry"]["events"][1] = {{"kind", "edac_uncorrected"}, {"unit", "mc1"}, {"fatal", true}};
  r["host"]["telemetry"]["drill"] = "the after-run telemetry was read from DIR";
  CHECK(drain_reason(r) == "SDC: mc1 uncorrected memory error during the screen drill");
  r["host"]["telemetry"]["events"] = json::array();
  r["host"]["telemetry"]["drill"] = nullptr;
  r["devices"] = {{{"index", 1}, {"telemetry", {{"events", {{{"severity", "failure"}, {"text", "Xid 79"}}}}}}}};
  CHECK(drain_reason(r) == "SDC: gpu 1 Xid 79 during the screen");
  r["devices"] = json::array();
  CHECK(drain_reason(r) == "SDC: failed (the report names no failed unit)");
}

TEST_CASE("a drill says so, and a retest its class", "[drain_reason]") {
  json r = failed_report();
  r["fault_injection"] = true;
  json t = cpu_test("softmax_f32", "fail", {1});
  r["tests"].push_back(t);
  CHECK(drain_reason(r) == "SDC: cpu 1 softmax_f32 drill");
  r["tests"][0]["retest"] = {{{"unit", {{"kind", "cpu"}, {"cpu", 1}}}, {"classification", "intermittent"}}};
  CHECK(drain_reason(r) == "SDC: cpu 1 intermittent softmax_f32 drill");
  r["tests"].push_back(cpu_test("gemm_f32", "fail", {2}));
  r["tests"][1]["retest"] = {{{"unit", {{"kind", "cpu"}, {"cpu", 2}}}, {"classification", "persistent"}}};
  CHECK(drain_reason(r) == "SDC: cpu 1,2 mixed softmax_f32,gemm_f32 drill");
  // The worst class of one unit wins.
  r["tests"][1]["retest"][0]["unit"]["cpu"] = 1;
  r["tests"][0]["retest"][0]["classification"] = "not reproduced";
  CHECK(drain_reason(r) == "SDC: cpu 1,2 persistent softmax_f32,gemm_f32 drill");
}

TEST_CASE("a long reason is shortened to 100 characters, lists first", "[drain_reason]") {
  json r = failed_report();
  std::vector<int> cpus;
  for (int c = 0; c < 40; ++c) cpus.push_back(c);
  for (const char* f : {"softmax_f32", "gemm_f32", "layernorm_f32", "gemm_bf16_exactint", "attention_f32"})
    r["tests"].push_back(cpu_test(f, "fail", cpus));
  const std::string why = drain_reason(r);
  CHECK(why.size() <= 100);
  CHECK(why == "SDC: cpu 0,1,2,3,4,5,6,7,+32 softmax_f32,gemm_f32,layernorm_f32,gemm_bf16_exactint,+1");
  r["tests"][0]["family"] = "soft\"max'\n";
  CHECK(drain_reason(r).find_first_of("\"'\n") == std::string::npos);
}

TEST_CASE("render_json carries the drain reason, null when the run passed", "[drain_reason]") {
  RunResult r;
  r.profile = "boot";
  TestResult t;
  t.id = "gemm_f32.uniform_1024";
  t.family = "gemm_f32";
  t.device = "cpu";
  t.verdict = Verdict::crash;
  t.units_failed = {6};
  r.tests.push_back(t);
  json j = json::parse(render_json(r, HostInfo{}));
  CHECK(j["drain_reason"] == "SDC: cpu 6 crash gemm_f32");
  r.tests[0].verdict = Verdict::pass;
  r.tests[0].units_failed.clear();
  j = json::parse(render_json(r, HostInfo{}));
  CHECK(j["exit"]["verdict"] != "fail");
  CHECK(j["drain_reason"].is_null());
}

TEST_CASE("the reproduce line keeps what runs and leaves out outputs and state", "[reproduce]") {
  const std::vector<std::string> argv = {"sdcscreen",
                                         "run",
                                         "-q",
                                         "--output-format",
                                         "json",
                                         "-o",
                                         "/var/lib/r.json",
                                         "--html=/tmp/r.html",
                                         "--prometheus",
                                         "/tmp/p.prom",
                                         "--history",
                                         "/var/lib/sdcscreen",
                                         "--lock-file",
                                         "/run/l",
                                         "--npd",
                                         "--force",
                                         "--digests",
                                         "--profile",
                                         "standard",
                                         "--enable",
                                         "-o",
                                         "--inject",
                                         "case=softmax_f32.special_128x1000,element=5,bit=3,unit=1",
                                         "--cpuset",
                                         "1-3",
                                         "--time-budget",
                                         "10s",
                                         "-qv",
                                         "-o/tmp/x"};
  const ReproduceLine line = reproduce_line(argv, "/usr/local/bin/sdcscreen", "42");
  CHECK(line.command ==
        "/usr/local/bin/sdcscreen run --profile standard --enable -o --inject "
        "case=softmax_f32.special_128x1000,element=5,bit=3,unit=1 --cpuset 1-3 --time-budget 10s -v --seed 42 "
        "--history none");
  CHECK(line.left_out == std::vector<std::string>{"-q", "--output-format", "-o", "--html", "--prometheus", "--history",
                                                  "--lock-file", "--npd", "--force", "--digests"});
  // Nothing to leave out, the seed given: the command line as it was, and --history none.
  const ReproduceLine plain = reproduce_line({"sdcscreen", "run", "--seed", "7", "--backend", "cpu"}, "", "");
  CHECK(plain.command == "sdcscreen run --seed 7 --backend cpu --history none");
  CHECK(plain.left_out.empty());
}

TEST_CASE("the reproduce line keeps --enable-any and its value", "[reproduce]") {
  // Its value is kept as it stands, even one that looks like a short option (-q would otherwise be left out).
  const ReproduceLine line = reproduce_line(
      {"sdcscreen", "run", "--profile", "boot", "--enable-any", "-q*", "--enable-any=gemm_f32.uniform_2048", "-o", "r"},
      "", "9");
  CHECK(line.command ==
        "sdcscreen run --profile boot --enable-any '-q*' --enable-any=gemm_f32.uniform_2048 --seed 9 --history none");
  CHECK(line.left_out == std::vector<std::string>{"-o"});
}
