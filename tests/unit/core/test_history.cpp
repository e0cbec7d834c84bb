// The node's history and the resume policy (src/core/history.h): what a screen records, what the file
// refuses, and each rule of the policy on synthetic histories: never after two failures, N clean screens of
// enough depth covering the failing units, inconclusive screens neither counting nor resetting, drills
// and forgotten units not counting.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tests/unit/catch.h"
#include "tests/unit/history_test.h"
#include "tests/unit/result_test.h"
#include "src/core/history.h"
#include "src/core/result.h"
#include "src/util/atomic_file.h"
#include "tests/unit/temp_dir.h"

using namespace sdc;
using namespace sdc::history;
using test::history_of;
using test::test_of;

namespace {

Record screen(const std::string& profile, int exit, std::vector<std::string> screened,
              std::vector<std::string> failing = {}, bool drill = false, const std::string& selection = "profile") {
  static double t = 1.8e9;
  Record r;
  r.unix = (t += 60);
  r.time = "2027-01-15T08:00:00Z";
  r.host = "node1";
  r.profile = profile;
  r.selection = selection;
  r.drill = drill;
  r.exit = exit;
  r.verdict = exit == 0 ? "pass" : exit == 1 ? "fail" : "error";
  r.screened = std::move(screened);
  for (const std::string& u : failing) {
    r.units[u] = "fail";
    r.failures.push_back({u, "gemm_f32.uniform_1024", "gemm_f32", "fail", {}, {}, "", -1, -1, false});
    r.failures.back().drill = drill;  // a drill screen's failures: the drill's
  }
  return r;
}

const std::vector<std::string> ALL = {"cpu 0", "cpu 1", "cpu 2", "cpu 3"};

}  // namespace

TEST_CASE("resume policy: no failure, hold, resume, never", "[history]") {
  const PolicyConfig cfg;  // 3 clean standard screens
  CHECK(decide(history_of({}), cfg).decision == Decision::no_record);
  CHECK(decide(history_of({screen("boot", 0, ALL)}), cfg).decision == Decision::no_record);

  std::vector<Record> recs = {screen("boot", 0, ALL), screen("boot", 1, ALL, {"cpu 2"})};
  ResumeVerdict v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::hold);
  CHECK(v.remaining == 3);
  CHECK(v.short_text == "3 clean standard screens to resume");

  recs.push_back(screen("standard", 0, ALL));
  recs.push_back(screen("boot", 0, ALL));  // too shallow: does not count
  v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::hold);
  CHECK(v.remaining == 2);
  recs.push_back(screen("burnin", 0, ALL));
  recs.push_back(screen("standard", 0, ALL));
  v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::resume);

  recs.push_back(screen("boot", 1, ALL, {"cpu 2"}));  // the same unit again, long after: never
  v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::never);
  CHECK(v.short_text == "cpu 2 failed twice: not resumed");
  for (int i = 0; i < 10; ++i) recs.push_back(screen("burnin", 0, ALL));
  CHECK(decide(history_of(recs), cfg).decision == Decision::never);

  recs.push_back(forget_record("cpu 2"));  // repaired: its failures are forgotten
  CHECK(decide(history_of(recs), cfg).decision == Decision::no_record);
  recs.push_back(screen("boot", 1, ALL, {"cpu 2"}));
  CHECK(decide(history_of(recs), cfg).decision == Decision::hold);  // counted afresh: once
}

TEST_CASE("resume policy: what is not a clean screen", "[history]") {
  const PolicyConfig cfg{2, "standard"};
  std::vector<Record> recs = {screen("standard", 1, ALL, {"cpu 1"})};
  recs.push_back(screen("standard", 2, ALL));                          // inconclusive: neither
  recs.push_back(screen("standard", 0, ALL, {}, false, "custom"));     // --enable: not the profile
  recs.push_back(screen("standard", 0, {"cpu 0", "cpu 2", "cpu 3"}));  // the failing unit left out
  recs.push_back(screen("standard", 0, ALL, {}, true));                // a drill
  recs.push_back(screen("standard", 143, ALL));                        // interrupted
  CHECK(decide(history_of(recs), cfg).remaining == 2);
  recs.push_back(screen("standard", 0, ALL));
  CHECK(decide(history_of(recs), cfg).remaining == 1);
  recs.push_back(screen("standard", 2, ALL));  // does not reset the count
  recs.push_back(screen("standard", 0, ALL));
  CHECK(decide(history_of(recs), cfg).decision == Decision::resume);
  // A new failure on another unit starts the count again, for both units.
  recs.push_back(screen("boot", 1, ALL, {"cpu 3"}));
  ResumeVerdict v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::hold);
  CHECK(v.remaining == 2);
  recs.push_back(screen("standard", 0, {"cpu 0", "cpu 2", "cpu 3"}));  // cpu 1 not screened: no count
  CHECK(decide(history_of(recs), cfg).remaining == 2);
}

TEST_CASE("resume policy: drills and crashes", "[history]") {
  const PolicyConfig cfg{1, "boot"};
  std::vector<Record> recs = {screen("boot", 1, ALL, {"cpu 1"}, true), screen("boot", 1, ALL, {"cpu 1"}, true)};
  ResumeVerdict v = decide(history_of(recs), cfg);
  CHECK(v.decision == Decision::no_record);  // two drills are not two failures
  CHECK(v.short_text == "only drills failed");
  Record crash = screen("boot", 1, ALL);
  crash.units["cpu 3"] = "crash";
  crash.failures.push_back({"cpu 3", "softmax_f32.special_128x1000", "softmax_f32", "crash", {}, {}, "", -1, -1, false});
  recs.push_back(crash);
  CHECK(decide(history_of(recs), cfg).decision == Decision::hold);
  Record unplaced = screen("boot", 1, ALL);  // exit 1 with no unit named still counts as a failure
  recs = {unplaced};
  CHECK(decide(history_of(recs), cfg).decision == Decision::hold);
}

TEST_CASE("history: the record of a run", "[history]") {
  RunResult r = test::cpu_units_run("standard", 4, 10);
  r.end_unix = 1.8e9;
  r.units[2].failed_tiles = 1;
  UnitResult idle;
  idle.cpu.cpu = 9;  // computed nothing: not screened
  r.units.push_back(idle);
  r.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::fail, {2}));
  Record rec = record_of(r, "node7", true);
  CHECK(rec.exit == 1);
  CHECK(rec.screened == std::vector<std::string>{"cpu 0", "cpu 1", "cpu 2", "cpu 3"});
  CHECK(rec.units.at("cpu 2") == "fail");
  REQUIRE(rec.failures.size() == 1);
  CHECK(rec.failures[0].unit == "cpu 2");
  CHECK(rec.failures[0].family == "gemm_f32");
  CHECK(to_line(rec).find("\"screened\":{\"cpu\":\"0-3\"}") != std::string::npos);
  CHECK(record_of(r, "node7", false).selection == "custom");

  // GPUs are recorded whole, by CUDA ordinal, with the failing SMs.
  RunResult g;
  g.profile = "boot";
  g.backend = "cuda";
  g.devices.resize(2);
  g.devices[0].index = 0;
  g.devices[1].index = 1;
  g.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::fail, {17, 5}, 1));
  g.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::pass, {}, 0));
  rec = record_of(g, "gpunode", true);
  CHECK(rec.screened == std::vector<std::string>{"gpu 0", "gpu 1"});
  CHECK(rec.units.size() == 1);
  CHECK(rec.units.at("gpu 1") == "fail");
  REQUIRE(rec.failures.size() == 1);
  CHECK(rec.failures[0].sms == std::vector<int>{5, 17});
}

TEST_CASE("history: the file, round trip, refusals, torn tail, bound", "[history]") {
  const test::TempDir d("history");
  REQUIRE(prepare_dir(d.path).empty());
  append(d.path, screen("standard", 1, ALL, {"cpu 1"}));
  append(d.path, screen("standard", 0, ALL));
  append(d.path, forget_record("cpu 1"));
  History h;
  bool exists = false;
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(exists);
  REQUIRE(h.records.size() == 3);
  CHECK(h.records[0].failures.at(0).unit == "cpu 1");
  CHECK(h.records[0].screened == ALL);
  CHECK(h.records[2].forget == "cpu 1");
  const std::string file = d.path + "/" + FILE_NAME;

  // A line cut short at the end (power loss) is ignored; any other damage is refused, naming the line.
  { std::ofstream(file, std::ios::app) << "{\"v\":1,\"time\":\"x"; }
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.torn_tail);
  CHECK(h.records.size() == 3);
  const std::string good = read_file(file).substr(0, read_file(file).rfind('\n') + 1);
  for (const std::string& line : {std::string("garbage"), std::string("{\"v\":2,\"time\":\"t\",\"unix\":1}"),
                                  std::string("{\"v\":1,\"time\":\"t\",\"unix\":1,\"host\":\"h\"}")}) {
    write_file_atomic(file, good + line + "\n");
    const std::string err = load(d.path, h, exists);
    CHECK(err.find("line 4") != std::string::npos);
  }
  Record bad_unit = screen("boot", 0, ALL);
  std::string line = to_line(bad_unit);
  line.replace(line.find("\"units\":{}"), 10, "\"units\":{\"cpu 1\":\"pass\"}");
  write_file_atomic(file, good + line + "\n");
  CHECK(!load(d.path, h, exists).empty());

  // A symbolic link in the file's place is refused.
  std::filesystem::remove(file);
  std::filesystem::create_symlink("/dev/null", file);
  CHECK(!prepare_dir(d.path).empty());
  CHECK(!load(d.path, h, exists).empty());
  std::filesystem::remove(file);

  // Past MAX_LINES the file is cut back to the newest lines, keeping every older failure.
  append(d.path, screen("boot", 1, ALL, {"cpu 3"}));
  std::string many;
  for (size_t i = 0; i < MAX_LINES; ++i) many += to_line(screen("boot", 0, ALL)) + "\n";
  { std::ofstream(file, std::ios::app) << many; }
  append(d.path, screen("boot", 0, ALL));
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.records.size() == KEEP_LINES + 1);
  CHECK(h.records[0].failures.at(0).unit == "cpu 3");
}

TEST_CASE("history: per-unit summary and flapping", "[history]") {
  std::vector<Record> recs = {screen("boot", 0, ALL),
                              screen("boot", 1, ALL, {"cpu 1"}),
                              screen("boot", 0, ALL),
                              screen("boot", 1, ALL, {"cpu 1"}),
                              screen("boot", 1, ALL, {"cpu 1"}),
                              screen("boot", 1, ALL, {"cpu 2"}, true)};
  const auto s = summarize(history_of(recs));
  REQUIRE(s.size() == 4);
  CHECK(s[1].unit == "cpu 1");
  CHECK(s[1].screens == 5);
  CHECK(s[1].failures == 3);
  CHECK(s[1].flaps == 1);  // failed, passed, failed (twice in a row is not a flap)
  CHECK(s[1].families == std::vector<std::string>{"gemm_f32"});
  CHECK(s[2].failures == 0);  // the drill does not count
}

TEST_CASE("resume policy: drill status belongs to each failure", "[history]") {
  const PolicyConfig cfg{1, "boot"};
  // A drill on cpu 0 and, in the same screen, a real crash on cpu 1: the crash holds the node.
  Record both = screen("boot", 1, ALL, {"cpu 0"}, true);
  both.units["cpu 1"] = "crash";
  both.failures.push_back({"cpu 1", "softmax_f32.special_128x1000", "softmax_f32", "crash", {}, {}, "", -1, -1, false});
  ResumeVerdict v = decide(history_of({both}), cfg);
  CHECK(v.decision == Decision::hold);
  REQUIRE(!v.details.empty());
  CHECK(v.details[0].find("cpu 1 failed in 1 screen") == 0);
  CHECK(decide(history_of({both, screen("boot", 0, ALL)}), cfg).decision == Decision::resume);
  // A drill screen is never a clean one, and two screens with cpu 1's real crash are "never".
  CHECK(decide(history_of({both, screen("boot", 0, ALL, {}, true)}), cfg).decision == Decision::hold);
  CHECK(decide(history_of({both, both}), cfg).decision == Decision::never);
  // The summary counts cpu 1's failure, not cpu 0's drill.
  for (const UnitSummary& u : summarize(history_of({both}))) CHECK(u.failures == (u.unit == "cpu 1" ? 1 : 0));

  // record_of: a failure is a drill only where an --inject drill aimed at its case and unit.
  RunResult r = test::cpu_units_run("boot", 2, 4);
  r.units[0].failed_tiles = 1;
  r.units[1].crash_signal = 11;
  Injection inj;
  inj.case_id = "gemm_f32.uniform_1024";
  inj.unit = 0;
  inj.fired = true;
  inj.fired_unit = 0;
  r.injections.push_back(inj);
  r.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::fail, {0}));
  r.tests.push_back(test_of("softmax_f32.special_128x1000", Verdict::crash, {1}));
  Record rec = record_of(r, "n1", true);
  REQUIRE(rec.failures.size() == 2);
  CHECK(rec.drill);
  CHECK(rec.failures[0].drill);
  CHECK(!rec.failures[1].drill);
  CHECK(to_line(rec).find("\"result\":\"crash\",\"drill\":false") != std::string::npos);
  CHECK(decide(history_of({rec}), cfg).decision == Decision::hold);
  // The same case failing on a CPU the drill did not touch is no drill; a drill on no unit covers every CPU.
  r.tests[0].units_failed = {1};
  CHECK(!record_of(r, "n1", true).failures[0].drill);
  r.injections[0].unit = r.injections[0].fired_unit = -1;
  CHECK(record_of(r, "n1", true).failures[0].drill);
}

TEST_CASE("history: run ids, duplicated lines, unrecorded screens", "[history]") {
  const test::TempDir d("history");
  const PolicyConfig cfg{3, "boot"};
  Record fail = screen("boot", 1, ALL, {"cpu 2"});
  fail.run_id = new_run_id();
  CHECK(fail.run_id.size() == 32);
  CHECK(fail.run_id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(new_run_id() != fail.run_id);
  fail.report_digest = std::string(32, 'a');
  Record clean = screen("boot", 0, ALL);
  clean.run_id = new_run_id();
  append(d.path, fail);
  for (int i = 0; i < 3; ++i) append(d.path, clean);  // the same line three times: one screen
  History h;
  bool exists = false;
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.records.size() == 2);
  CHECK(h.duplicates == 2);
  CHECK(h.records[0].report_digest == fail.report_digest);
  ResumeVerdict v = decide(h, cfg);
  CHECK(v.decision == Decision::hold);
  CHECK(v.remaining == 2);
  for (int i = 0; i < 2; ++i) {
    clean.run_id = new_run_id();
    append(d.path, clean);
  }
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(decide(h, cfg).decision == Decision::resume);

  // A screen in progress holds its marker: not unrecorded. Once it is gone without its line, nothing resumes.
  std::string err;
  const std::string id = new_run_id();
  const int fd = begin_pending(d.path, id, err);
  REQUIRE(fd >= 0);
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.in_progress == 1);
  CHECK(h.unrecorded.empty());
  CHECK(acknowledge(d.path).empty());  // a running screen's marker stays
  close(fd);
  REQUIRE(load(d.path, h, exists).empty());
  REQUIRE(h.unrecorded.size() == 1);
  CHECK(h.unrecorded[0].find(std::string(PENDING_PREFIX) + id) != std::string::npos);
  v = decide(h, cfg);
  CHECK(v.decision == Decision::unrecorded);
  CHECK(v.short_text == "a screen left no history line: not resumed");
  // Not even a history with no failure vouches for the node then.
  History empty;
  empty.unrecorded = h.unrecorded;
  CHECK(decide(empty, cfg).decision == Decision::unrecorded);
  CHECK(acknowledge(d.path).size() == 1);
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.unrecorded.empty());
  CHECK(decide(h, cfg).decision == Decision::resume);
  // A screen that ends before its first test removes its marker: nothing is left.
  const int fd2 = begin_pending(d.path, id, err);
  REQUIRE(fd2 >= 0);
  end_pending(d.path, id);
  close(fd2);
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(h.unrecorded.empty());

  // Refusals: a bad run id, a drill failure in a screen that injected nothing.
  for (
      const char* line :
      {R"({"v":1,"time":"t","unix":1,"run":"xyz","host":"n","profile":"boot","selection":"profile","drill":false,"exit":0,"verdict":"pass","screened":{},"units":{},"failures":[]})",
       R"({"v":1,"time":"t","unix":1,"host":"n","profile":"boot","selection":"profile","drill":false,"exit":1,"verdict":"fail","screened":{},"units":{},"failures":[{"unit":"cpu 1","case":"c","family":"f","result":"fail","drill":true}]})"}) {
    write_file_atomic(d.path + "/" + FILE_NAME, std::string(line) + "\n");
    CHECK(!load(d.path, h, exists).empty());
  }
}
