// The one reader of reports (diff, fleet, reason): what is not a report is refused with one line saying what is
// wrong, the same way for every subcommand; a report whose exit code and verdict disagree is not one.
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/report/report.h"
#include "src/report/report_reader.h"
#include "tests/unit/catch.h"
#include "tests/unit/report_doc.h"
#include "tests/unit/temp_dir.h"

using namespace sdc;
using json = nlohmann::json;

namespace {

json minimal_report() { return test::report_document(); }

// What read_report says of the document: "" when it reads it as a report.
std::string refusal(const test::TempDir& dir, const json& doc) {
  const std::string file = dir.path + "/r.json";
  {
    std::ofstream out(file);
    out << doc.dump();
  }
  try {
    read_report(file);
  } catch (const NotReport& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the report reader: exit code and verdict agree", "[fleet]") {
  test::TempDir dir("report-reader");
  REQUIRE(refusal(dir, minimal_report()).empty());
  for (const auto& [code, verdict] : std::vector<std::pair<int, std::string>>{
           {0, "pass"}, {1, "fail"}, {2, "error"}, {3, "slow"}, {130, "interrupted"}, {143, "interrupted"}}) {
    json r = minimal_report();
    r["exit"] = {{"code", code}, {"verdict", verdict}};
    CHECK(refusal(dir, r).empty());
    CHECK(verdict_of_exit_code(code) == verdict);
  }
  json r = minimal_report();
  r["exit"] = {{"code", 0}, {"verdict", "fail"}};
  CHECK(refusal(dir, r) == "not a report: exit.code 0 and exit.verdict 'fail' disagree (code 0 is 'pass')");
  r["exit"] = {{"code", 1}, {"verdict", "pass"}};
  CHECK(refusal(dir, r).find("disagree") != std::string::npos);
  for (const int code : {-1, 4, 64, 78, 128, 256}) {
    r["exit"] = {{"code", code}, {"verdict", "error"}};
    CHECK(refusal(dir, r).find("is not a code a screen ends with") != std::string::npos);
  }
}

TEST_CASE("the report reader: schema_version, tests and the document's kind", "[fleet]") {
  test::TempDir dir("report-reader");
  json r = minimal_report();
  r["schema_version"] = 999;
  CHECK(refusal(dir, r).find("schema_version 999 is not one this sdcscreen reads") != std::string::npos);
  r["schema_version"] = "1";
  CHECK(refusal(dir, r).find("schema_version \"1\" is not one this sdcscreen reads") != std::string::npos);
  r = minimal_report();
  r["tests"] = nullptr;
  CHECK(refusal(dir, r) == "not a report: 'tests' is not an array");
  CHECK(refusal(dir, json::array({1, 2})) == "not a report: expected a JSON object, found an array");
  CHECK(refusal(dir, json(nullptr)) == "not a report: expected a JSON object, found null");
  CHECK(refusal(dir, json("text")) == "not a report: expected a JSON object, found a string");
}

TEST_CASE("the report reader leaves the parsed document to its caller", "[fleet]") {
  test::TempDir dir("report-reader");
  const std::string file = dir.path + "/r.json";
  {
    std::ofstream out(file);
    out << minimal_report().dump();
  }
  json doc;
  const ReportView v = read_report(file, &doc);
  CHECK(v.verdict == "pass");
  CHECK(doc == minimal_report());
}

TEST_CASE("the report reader: a crashed unit's test beside its case's result is a report; other repeats are not",
          "[fleet]") {
  test::TempDir dir("report-reader-crash");
  const json pass = {
      {"id", "gemm_f32.special_512"},  {"family", "gemm_f32"},        {"device", "cpu"},        {"result", "pass"},
      {"units_failed", json::array()}, {"signatures", json::array()}, {"retest", json::array()}};
  json crash = pass;
  crash["result"] = "crash";
  json r = minimal_report();
  r["exit"] = {{"code", 1}, {"verdict", "fail"}};
  // cpu 1 crashed in the case; the screen that followed ran it on the other CPUs, where it passed.
  r["tests"] = json::array({crash, pass});
  CHECK(refusal(dir, r).empty());
  r["tests"] = json::array({pass, crash, crash});  // two units crashed in it
  CHECK(refusal(dir, r).empty());
  r["tests"] = json::array({pass, crash, pass});
  CHECK(refusal(dir, r) == "test gemm_f32.special_512 on cpu is listed twice");
}
