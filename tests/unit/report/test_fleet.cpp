// The fleet view's rules: report times read back exactly; a node's newest report wins whatever order the
// reports come in, and a report dated in the future never hides another; failures are grouped by signature
// across nodes; a failure outranks inconclusive and stale; what a report holds reaches the text output with its
// control characters visible.
#include "src/report/fleet.h"
#include "src/util/iso_time.h"
#include "src/util/say.h"
#include "tests/unit/catch.h"

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
    REQUIRE(fleet_add(f, fail_first ? older : newer, 1e10).empty());
    REQUIRE(fleet_add(f, fail_first ? newer : older, 1e10).empty());
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
  REQUIRE_FALSE(fleet_add(f, report("n1", "yesterday", 0, "c.json"), 1e10).empty());
  REQUIRE(f.nodes.empty());
}

TEST_CASE("failures grouped by signature; a failure wins", "[fleet]") {
  Fleet f;
  REQUIRE(fleet_add(f, report("n2", "2026-11-21T10:00:00Z", 1, "n2.json", "gemm_f32:bits=m3"), 1e10).empty());
  REQUIRE(fleet_add(f, report("n1", "2026-11-21T10:00:00Z", 1, "n1.json", "gemm_f32:bits=m3"), 1e10).empty());
  REQUIRE(fleet_add(f, report("n3", "2026-11-21T10:00:00Z", 1, "n3.json", "gemm_f32:bits=e30"), 1e10).empty());
  REQUIRE(fleet_add(f, report("n4", "2026-11-21T10:00:00Z", 1, "n4.json"), 1e10).empty());  // a crash: no signature
  REQUIRE(fleet_add(f, report("n5", "2026-11-01T10:00:00Z", 2, "n5.json"), 1e10).empty());
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
  REQUIRE(fleet_add(g, report("n5", "2026-11-01T10:00:00Z", 0, "n5.json"), 1e10).empty());
  fleet_finish(g, now, 24 * 3600);
  REQUIRE(g.exit_code == 2);  // stale alone: not a healthy fleet
  fleet_finish(g, now, 30 * 24 * 3600);
  REQUIRE(g.exit_code == 0);
}

namespace {

double at(const char* t) {
  double x = 0;
  REQUIRE(parse_iso_time(t, x));
  return x;
}

}  // namespace

TEST_CASE("a report dated in the future never hides another", "[fleet]") {
  const double now = at("2026-11-22T12:00:00Z");
  const ReportView future_pass = report("n1", "2099-01-01T00:00:00Z", 0, "a-future.json");
  const ReportView future_fail = report("n1", "2099-01-01T00:00:00Z", 1, "a-future.json", "s");
  const ReportView real_fail = report("n1", "2026-11-22T10:00:00Z", 1, "b-real.json", "s");
  const ReportView real_pass = report("n1", "2026-11-22T10:00:00Z", 0, "b-real.json");
  for (const bool future_first : {true, false}) {
    INFO("the report dated in the future read " << (future_first ? "first" : "last"));
    const auto fleet_of = [&](const ReportView& future, const ReportView& real) {
      Fleet f;
      REQUIRE(fleet_add(f, future_first ? future : real, now).empty());
      REQUIRE(fleet_add(f, future_first ? real : future, now).empty());
      fleet_finish(f, now, 24 * 3600);
      return f;
    };
    // The newer real failure is the node's row: the pass dated 2099 does not hide it.
    Fleet f = fleet_of(future_pass, real_fail);
    const FleetNode& n = f.nodes.at("n1");
    CHECK(n.file == "b-real.json");
    CHECK(n.status == "fail");
    CHECK(n.age_s > 0);
    CHECK(n.future_reports == 1);
    CHECK_FALSE(n.shows_future);
    CHECK(future_report(n)->file == "a-future.json");
    CHECK(f.exit_code == 1);
    CHECK(f.dated_in_future == 1);
    // Beside a real pass, the node is inconclusive: a pass dated in the future is never its current pass.
    f = fleet_of(future_pass, real_pass);
    CHECK(f.nodes.at("n1").file == "b-real.json");
    CHECK(f.nodes.at("n1").status == "inconclusive");
    CHECK(f.exit_code == 2);
    CHECK(f.verdict == "inconclusive");
    CHECK(f.passing == 0);
    const std::string text = render_fleet_text(f);
    CHECK(text.find("dated in the future") != std::string::npos);
    CHECK(text.find("a-future.json") != std::string::npos);
    CHECK(text.find("; 1 dated in the future)\n") != std::string::npos);
    const std::string js = render_fleet_json(f);
    CHECK(js.find("\"dated_in_future\"") != std::string::npos);
    CHECK(render_fleet_html(f).find("Dated in the future") != std::string::npos);
    // A failure dated in the future is not hidden by a real pass either: it is shown, and the node fails.
    f = fleet_of(future_fail, real_pass);
    CHECK(f.nodes.at("n1").file == "a-future.json");
    CHECK(f.nodes.at("n1").shows_future);
    CHECK(f.nodes.at("n1").status == "fail");
    CHECK(future_report(f.nodes.at("n1"))->file == "a-future.json");
    CHECK(f.exit_code == 1);
  }
  // Alone, a pass dated in the future is shown, inconclusive.
  Fleet f;
  REQUIRE(fleet_add(f, future_pass, now).empty());
  fleet_finish(f, now, 24 * 3600);
  CHECK(f.nodes.at("n1").shows_future);
  CHECK(f.nodes.at("n1").status == "inconclusive");
  CHECK(f.exit_code == 2);
  fleet_finish(f, now, 24 * 3600);  // finishing again changes nothing
  CHECK(f.nodes.at("n1").file == "a-future.json");
  // Within the clock skew a report is the newest as any other.
  Fleet g;
  REQUIRE(fleet_add(g, report("n1", "2026-11-22T12:04:00Z", 0, "c.json"), now).empty());
  REQUIRE(fleet_add(g, real_fail, now).empty());
  fleet_finish(g, now, 24 * 3600);
  CHECK(g.nodes.at("n1").file == "c.json");
  CHECK(g.nodes.at("n1").future_reports == 0);
  CHECK(g.exit_code == 0);
}

TEST_CASE("a report without a host name is not placed; control characters are shown visibly", "[fleet]") {
  Fleet f;
  CHECK(fleet_add(f, report("", "2026-11-21T10:00:00Z", 0, "x.json"), 1e10) ==
        "host.hostname is empty: the report names no node");
  CHECK(f.nodes.empty());
  CHECK(f.reports_read == 0);
  CHECK(visible("plain-name.example") == "plain-name.example");
  CHECK(visible("a\nb\x1b[31mred\tc\\d\r\x7f") == "a\\nb\\x1b[31mred\\tc\\\\d\\r\\x7f");
  CHECK(visible("\xc2\x9b"
                "2J \xc3\xa9") == "\\u009b2J \xc3\xa9");  // a C1 CSI escaped, UTF-8 text kept
  const std::string evil = "node\n\x1b[2Jfake  2026-01-01  pass";
  REQUIRE(fleet_add(f, report(evil, "2026-11-21T10:00:00Z", 1, "y.json", "sig\x1b"), 1e10).empty());
  f.unreadable.emplace_back("bad\nname.json", "not\x1b valid");
  fleet_finish(f, 1e10, 1e12);
  const std::string text = render_fleet_text(f);
  for (const char c : text) CHECK((c == '\n' || static_cast<unsigned char>(c) >= 0x20));
  CHECK(text.find("node\\n\\x1b[2Jfake") != std::string::npos);
  CHECK(text.find("sig\\x1b") != std::string::npos);
  CHECK(text.find("bad\\nname.json: not\\x1b valid") != std::string::npos);
}
