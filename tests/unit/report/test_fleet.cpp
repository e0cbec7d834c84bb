// The fleet view's rules: report times read back exactly; a node's newest report wins whatever order the
// reports come in; failures are grouped by signature across nodes; a failure outranks inconclusive and stale.
#include "tests/unit/catch.h"
#include "src/report/fleet.h"
#include "src/util/iso_time.h"

using namespace sdc;

TEST_CASE("report times read back", "[fleet]") {
  double t = 0;
  REQUIRE(parse_iso_time("2026-11-23T19:20:00Z", t));
  REQUIRE(iso_time(t) == "2026-11-23T19:20:00Z");
  REQUIRE(parse_iso_time("1970-01-01T00:00:00Z", t));
  REQUIRE(t == 0);
  REQUIRE(parse_iso_time("2024-02-29T23:59:59Z", t));
  REQUIRE(iso_time(t) == "2024-02-29T23:59:59Z");
  for (const char* bad :
       {"", "2026-11-23 19:20:00Z", "2026-11-23T19:20:00", "2026-11-23T19:20:00+01:00", "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2026-11-23T24:00:00Z", "2026-1a-23T19:20:00Z",
        "+026-11-23T19:20:00Z", "1969-12-31T23:59:59Z"})
    REQUIRE_FALSE(parse_iso_time(bad, t));
}

namespace {

ReportView report(const std::string& host, const std::string& start, int64_t code, const std::string& file,
                  const std::string& sig = "") {
  ReportView r;
  r.hostname = host;
  r.start = start;
  r.exit_code = code;
  r.verdict = code == 0 ? "pass" : code == 1 ? "fail" : "error";
  r.file = file;
  r.tool_version = "0.1.0";
  if (code == 1) {
    TestView t;
    t.id = "gemm_f32.uniform_1024";
    t.device = "cuda:1";
    t.uuid = "GPU-1234";
    t.result = "fail";
    t.gpu = 1;
    t.units_failed = {"sm 7"};
    if (!sig.empty()) t.signatures[sig] = {"sm 7"};
    t.classes["sm 7"] = "persistent";
    r.tests.push_back(t);
  }
  return r;
}

}  // namespace

TEST_CASE("the newest report of a node wins", "[fleet]") {
  for (const bool fail_first : {true, false}) {
    Fleet f;
    const ReportView older = report("n1", "2026-11-20T10:00:00Z", 1, "a.json", "s");
    const ReportView newer = report("n1", "2026-11-21T10:00:00Z", 0, "b.json");
    REQUIRE(fleet_add(f, fail_first ? older : newer).empty());
    REQUIRE(fleet_add(f, fail_first ? newer : older).empty());
    fleet_finish(f, 1e10, 1e12);
    REQUIRE(f.nodes.size() == 1);
    const FleetNode& n = f.nodes.at("n1");
    REQUIRE(n.reports == 2);
    REQUIRE(n.status == "pass");
    REQUIRE(n.failures.empty());
    REQUIRE(n.file == "b.json");
    REQUIRE(f.exit_code == 0);
  }
  Fleet f;
  REQUIRE_FALSE(fleet_add(f, report("n1", "yesterday", 0, "c.json")).empty());
  REQUIRE(f.nodes.empty());
}

TEST_CASE("failures grouped by signature; a failure wins", "[fleet]") {
  Fleet f;
  REQUIRE(fleet_add(f, report("n2", "2026-11-21T10:00:00Z", 1, "n2.json", "gemm_f32:bits=m3")).empty());
  REQUIRE(fleet_add(f, report("n1", "2026-11-21T10:00:00Z", 1, "n1.json", "gemm_f32:bits=m3")).empty());
  REQUIRE(fleet_add(f, report("n3", "2026-11-21T10:00:00Z", 1, "n3.json", "gemm_f32:bits=e30")).empty());
  REQUIRE(fleet_add(f, report("n4", "2026-11-21T10:00:00Z", 1, "n4.json")).empty());  // a crash: no signature
  REQUIRE(fleet_add(f, report("n5", "2026-11-01T10:00:00Z", 2, "n5.json")).empty());
  double now = 0;
  REQUIRE(parse_iso_time("2026-11-21T12:00:00Z", now));
  fleet_finish(f, now, 24 * 3600);
  REQUIRE(f.signatures.size() == 2);
  REQUIRE(f.signatures[0].signature == "gemm_f32:bits=m3");
  REQUIRE(f.signatures[0].nodes.size() == 2);
  REQUIRE(f.signatures[0].nodes[0] == std::pair<std::string, std::string>{"n1", "gpu 1 sm 7 (GPU-1234)"});
  REQUIRE(f.nodes.at("n1").failures[0].classification == "persistent");
  REQUIRE(f.nodes.at("n4").failures.size() == 1);
  REQUIRE(f.nodes.at("n4").failures[0].signature.empty());
  REQUIRE(f.stale == 1);
  REQUIRE(f.nodes.at("n5").stale);
  REQUIRE(f.exit_code == 1);
  Fleet g;
  REQUIRE(fleet_add(g, report("n5", "2026-11-01T10:00:00Z", 0, "n5.json")).empty());
  fleet_finish(g, now, 24 * 3600);
  REQUIRE(g.exit_code == 2);  // stale alone: not a healthy fleet
  fleet_finish(g, now, 30 * 24 * 3600);
  REQUIRE(g.exit_code == 0);
}
