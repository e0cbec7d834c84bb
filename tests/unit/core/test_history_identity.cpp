// The history keyed by identity (src/core/history.h): a GPU by UUID, a CPU by host and logical CPU. A GPU
// CUDA renumbered keeps its record; a GPU replaced at the same ordinal starts a new one; a CPU under new
// microcode keeps its record (and says which revision failed); lines written before identity was recorded
// are still read, and their GPUs taken to be the ones the next line with identity names.
#include <unistd.h>

#include <filesystem>

#include "tests/unit/catch.h"
#include "tests/unit/history_test.h"
#include "tests/unit/result_test.h"
#include "src/core/history.h"
#include "src/core/result.h"
#include "src/report/report.h"
#include "tests/unit/temp_dir.h"

using namespace sdc;
using namespace sdc::history;
using test::check_contains;
using test::history_of;
using test::test_of;

namespace {

// A screen of two GPUs: uuids[i] at "gpu i" ("" = a line without identity), failing the labels given.
Record gpu_screen(std::vector<std::string> uuids, std::vector<std::string> failing = {}) {
  static double t = 1.9e9;
  Record r;
  r.unix = (t += 60);
  r.time = "2030-03-15T08:00:00Z";
  r.host = "gpunode";
  r.profile = "standard";
  r.selection = "profile";
  r.exit = failing.empty() ? 0 : 1;
  r.verdict = failing.empty() ? "pass" : "fail";
  for (size_t i = 0; i < uuids.size(); ++i) {
    const std::string label = "gpu " + std::to_string(i);
    r.screened.push_back(label);
    if (!uuids[i].empty()) r.gpus[label] = GpuId{uuids[i], "", ""};
  }
  for (const std::string& u : failing) {
    r.units[u] = "fail";
    Failure f{u, "gemm_f32.uniform_1024", "gemm_f32", "fail", {3, 17}, {}, "", -1, -1};
    r.failures.push_back(f);
  }
  return r;
}

// The history's summary of the unit with identity key `id`; the test case fails when there is none.
UnitSummary summary_of(const History& h, const std::string& id) {
  for (const UnitSummary& u : summarize(h))
    if (u.id == id) return u;
  FAIL("no unit summary with id " << id);
  return {};
}

}  // namespace

TEST_CASE("identity: a renumbered GPU keeps its record", "[history][identity]") {
  // GPU-A fails as gpu 0, then CUDA numbers it 1 (GPU-B took 0), and it fails again: the same part, twice.
  const History h = history_of({gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"}), gpu_screen({"GPU-B", "GPU-A"}, {"gpu 1"})});
  const ResumeVerdict v = decide(h, {});
  CHECK(v.decision == Decision::never);
  CHECK(v.short_text == "gpu 1 failed twice: not resumed");
  const UnitSummary a = summary_of(h, "uuid GPU-A");
  CHECK(a.failures == 2);
  CHECK(a.screens == 2);
  CHECK(a.unit == "gpu 1");
  CHECK(a.uuid == "GPU-A");
  CHECK(a.serial.empty());  // not known until a reader supplies it
  REQUIRE(a.failure_list.size() == 2);
  CHECK(a.failure_list[0].sms == std::vector<int>{3, 17});
  CHECK(summary_of(h, "uuid GPU-B").failures == 0);
}

TEST_CASE("identity: a replaced GPU starts a new record", "[history][identity]") {
  // GPU-A fails as gpu 0, is replaced by GPU-C at the same ordinal, which fails once: two parts, once each
  // (keyed by ordinal this was "gpu 0 failed twice: not resumed").
  History h = history_of({gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"}), gpu_screen({"GPU-C", "GPU-B"}, {"gpu 0"})});
  ResumeVerdict v = decide(h, {});
  CHECK(v.decision == Decision::hold);
  CHECK(v.remaining == 3);
  bool said = false;
  for (const std::string& d : v.details)
    said = said || (d.find("gpu 0 (GPU-A)") != std::string::npos && d.find("replaced by GPU-C") != std::string::npos);
  CHECK(said);
  const UnitSummary a = summary_of(h, "uuid GPU-A"), c = summary_of(h, "uuid GPU-C");
  CHECK(a.failures == 1);
  CHECK(a.replaced_by == "GPU-C");
  CHECK(c.failures == 1);
  CHECK(c.replaced_by.empty());

  // Three clean screens of the new part resume the node; the replaced one need not (cannot) be screened.
  for (int i = 0; i < 3; ++i) h.records.push_back(gpu_screen({"GPU-C", "GPU-B"}));
  CHECK(decide(h, {}).decision == Decision::resume);
}

TEST_CASE("identity: a failed GPU that vanished is not taken as replaced", "[history][identity]") {
  // GPU-A (gpu 0) fails, then drops off the bus: GPU-B is renumbered to 0. GPU-B is no new part, so GPU-A
  // still holds the node: it is never screened clean again (fail closed).
  History h = history_of({gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"})});
  for (int i = 0; i < 4; ++i) h.records.push_back(gpu_screen({"GPU-B"}));
  const ResumeVerdict v = decide(h, {});
  CHECK(v.decision == Decision::hold);
  CHECK(summarize(h).front().replaced_by.empty());
}

TEST_CASE("identity: old lines without identity", "[history][identity]") {
  // Lines before identity was recorded name gpu 0 by ordinal: taken to be the part the next line with
  // identity names there, so an old failure and a new one of that GPU still make two.
  History h = history_of({gpu_screen({"", ""}, {"gpu 0"}), gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"})});
  CHECK(decide(h, {}).decision == Decision::never);
  const auto keys = identity_keys(h);
  CHECK(keys[0].at("gpu 0") == "uuid GPU-A");
  // No line with identity after it: the ordinal stays the key.
  h = history_of({gpu_screen({"", ""}, {"gpu 1"})});
  CHECK(identity_keys(h)[0].at("gpu 1") == "gpu 1");
  CHECK(decide(h, {}).decision == Decision::hold);
  // A forget of the label clears the part that held it last.
  h = history_of(
      {gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"}), gpu_screen({"GPU-A", "GPU-B"}, {"gpu 0"}), forget_record("gpu 0")});
  CHECK(decide(h, {}).decision == Decision::no_record);
  h.records.back() = forget_record("GPU-A");
  CHECK(decide(h, {}).decision == Decision::no_record);
  h.records.back() = forget_record("GPU-B");
  CHECK(decide(h, {}).decision == Decision::never);
}

TEST_CASE("identity: a CPU under new microcode keeps its record", "[history][identity]") {
  const auto cpu_screen = [](const std::string& host, const std::string& microcode, bool fail) {
    static double t = 2.0e9;
    Record r;
    r.unix = (t += 60);
    r.time = "2030-04-01T08:00:00Z";
    r.host = host;
    r.profile = "standard";
    r.selection = "profile";
    r.exit = fail ? 1 : 0;
    r.verdict = fail ? "fail" : "pass";
    r.screened = {"cpu 0", "cpu 3"};
    r.microcode = microcode;
    if (fail) {
      r.units["cpu 3"] = "fail";
      Failure f{"cpu 3", "fma_f64.chain", "fma_f64", "fail", {}, {}, "", -1, -1};
      f.package = 0;
      f.core = 3;
      r.failures.push_back(f);
    }
    return r;
  };
  // Failed under 0x10, passed, failed under 0x11: the same core, twice; the summary names both revisions.
  History h = history_of(
      {cpu_screen("node1", "0x10", true), cpu_screen("node1", "0x11", false), cpu_screen("node1", "0x11", true)});
  CHECK(decide(h, {}).decision == Decision::never);
  const UnitSummary c = summary_of(h, "node1 cpu 3");
  CHECK(c.failures == 2);
  CHECK(c.flaps == 1);
  CHECK(c.microcode == "0x11");
  REQUIRE(c.failure_list.size() == 2);
  CHECK(c.failure_list[0].microcode == "0x10");
  CHECK(c.failure_list[1].microcode == "0x11");
  // The same logical CPU number on another host (a history directory copied between nodes) is another part.
  h = history_of({cpu_screen("node1", "0x10", true), cpu_screen("node2", "0x10", true)});
  CHECK(decide(h, {}).decision == Decision::hold);
}

TEST_CASE("identity: recorded from a run, written and read back", "[history][identity]") {
  RunResult g;
  g.profile = "boot";
  g.backend = "cuda";
  g.host.identity.cpu.microcode = "0xa20102b";
  g.devices.resize(2);
  for (int d = 0; d < 2; ++d) {
    g.devices[static_cast<size_t>(d)].index = d;
    g.devices[static_cast<size_t>(d)].uuid = d ? "GPU-8c2f0001" : "GPU-8c2f0000";
    g.devices[static_cast<size_t>(d)].pci_bus_id = d ? "0000:42:00.0" : "0000:41:00.0";
  }
  g.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::fail, {5}, 1));
  g.tests.push_back(test_of("gemm_f32.uniform_1024", Verdict::pass, {}, 0));
  UnitResult cpu;
  cpu.cpu = {3, 1, 0};
  cpu.tiles = 5;
  cpu.failed_tiles = 1;
  g.units.push_back(cpu);
  g.tests.push_back(test_of("fma_f64.chain", Verdict::fail, {3}));
  const Record rec = record_of(g, "gpunode", true);
  CHECK(rec.microcode == "0xa20102b");
  REQUIRE(rec.gpus.size() == 2);
  CHECK(rec.gpus.at("gpu 1").uuid == "GPU-8c2f0001");
  const std::string line = to_line(rec);
  CHECK(line.find("\"gpus\":{\"gpu 0\":{\"uuid\":\"GPU-8c2f0000\",\"serial\":null,\"pci\":\"0000:41:00.0\"}") !=
        std::string::npos);
  CHECK(line.find("\"package\":0,\"core\":1") != std::string::npos);

  const test::TempDir tmp("identity");
  const std::string& dir = tmp.path;
  append(dir, rec);
  History h;
  bool exists = false;
  REQUIRE(load(dir, h, exists).empty());
  REQUIRE(h.records.size() == 1);
  CHECK(h.records[0].gpus.at("gpu 1").pci == "0000:42:00.0");
  CHECK(h.records[0].gpus.at("gpu 1").serial.empty());
  CHECK(h.records[0].microcode == "0xa20102b");
  bool placed = false;
  for (const Failure& f : h.records[0].failures)
    placed = placed || (f.unit == "cpu 3" && f.package == 0 && f.core == 1);
  CHECK(placed);
}

TEST_CASE("identity: every GPU series of the Prometheus file carries the GPU's uuid", "[history][identity]") {
  RunResult r;
  r.backend = "cuda";
  r.devices.resize(2);
  for (int d = 0; d < 2; ++d) {
    r.devices[static_cast<size_t>(d)].index = d;
    r.devices[static_cast<size_t>(d)].uuid = d ? "GPU-0001" : "GPU-0000";
  }
  UnitThroughput fast{"gpu 0", 10, 1.0, 1.0, 1.0, 5, 0, false, false};
  UnitThroughput slow{"gpu 1", 5, 0.5, 0.5, 0.5, 5, 5, false, true};
  UnitThroughput cpu{"cpu 3", 5, 1.0, 1.0, 1.0, 5, 0, false, false};
  r.throughput = {fast, slow, cpu};
  TestResult t = test_of("gemm_f32.uniform_1024", Verdict::fail, {}, 1);
  UnitRetest rt;
  rt.device = 1;
  rt.unit = 7;
  rt.same_seed_runs = 3;
  rt.same_seed_failed = 3;
  t.retests.push_back(rt);
  r.tests.push_back(t);
  const std::string prom = render_prometheus(r, "");
  // Labels that join across series: gpu= with the GPU's uuid beside it, an SM as sm= (never packed into one
  // label), a CPU as cpu=.
  check_contains(prom, {"sdcscreen_device_healthy{gpu=\"1\",uuid=\"GPU-0001\"}",
                        "sdcscreen_device_relative_throughput{gpu=\"0\",uuid=\"GPU-0000\"} 1.0000",
                        "sdcscreen_device_slow{gpu=\"1\",uuid=\"GPU-0001\"} 1",
                        "sdcscreen_device_fault_class{gpu=\"1\",uuid=\"GPU-0001\",sm=\"7\",class=",
                        "sdcscreen_device_fault_rate{gpu=\"1\",uuid=\"GPU-0001\",sm=\"7\"}",
                        "sdcscreen_device_relative_throughput{cpu=\"3\"} 1.0000"});
  CHECK(prom.find("device=\"") == std::string::npos);
  // No GPU line without its uuid.
  size_t pos = 0, gpu_lines = 0;
  while ((pos = prom.find("gpu=\"", pos)) != std::string::npos) {
    const size_t end = prom.find('}', pos);
    CHECK(prom.substr(pos, end - pos).find("uuid=\"GPU-") != std::string::npos);
    ++gpu_lines;
    pos = end;
  }
  CHECK(gpu_lines >= 6);
}
