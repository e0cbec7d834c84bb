// What weakens a verdict (src/core/weakened.h) and the checks around it: the environment switches named
// when they take effect and only then; a weakened screen in every machine output and never a clean screen
// for the resume policy; pattern data other than the build's named with both digests; a lock file with a
// second hard link refused like a symbolic link; a PCI tree that cannot be read is an error, not "no GPUs".
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/unit/catch.h"
#include "src/backends/cuda/pci_gpus.h"
#include "src/core/history.h"
#include "src/core/patterns.h"
#include "src/core/result.h"
#include "src/core/weakened.h"
#include "src/report/report.h"
#include "src/util/atomic_file.h"
#include "src/util/run_lock.h"
#include "tests/unit/result_test.h"
#include "tests/unit/temp_dir.h"

using namespace sdc;
using test::test_of;

namespace {

std::map<std::string, std::string> fake_env;
const char* fake_getenv(const char* name) {
  const auto it = fake_env.find(name);
  return it == fake_env.end() ? nullptr : it->second.c_str();
}

// A passing one-test CPU screen.
RunResult passing_run() {
  RunResult r;
  r.profile = "boot";
  UnitResult u;
  u.cpu.cpu = 0;
  u.tiles = 10;
  r.units.push_back(u);
  TestResult t = test_of("softmax_f32.special_128x1000", Verdict::pass);
  t.mode = "exact";
  t.iterations_done = t.iterations_planned = 1;
  t.tiles = 10;
  r.tests.push_back(t);
  r.start_unix = 1.8e9;
  r.end_unix = 1.8e9 + 1;
  return r;
}

}  // namespace

TEST_CASE("weakened: the environment switches, named when they take effect", "[weakened]") {
  fake_env.clear();
  CHECK(weakenings_in(fake_getenv).empty());
  fake_env["SDCSCREEN_SUPERVISE"] = "1";  // supervision on: nothing weakened
  fake_env["SDCSCREEN_HOST_ROOT"] = "";   // empty: the default, nothing weakened
  fake_env["SDCSCREEN_PATTERNS"] = "/p";  // checked against the build's data instead (--accept-patterns)
  fake_env["SDCSCREEN_HISTORY"] = "none";
  CHECK(weakenings_in(fake_getenv).empty());
  fake_env["SDCSCREEN_SUPERVISE"] = "0";
  fake_env["SDCSCREEN_SYSFS_ROOT"] = "/nowhere";
  std::vector<Weakening> w = weakenings_in(fake_getenv);
  REQUIRE(w.size() == 2);
  CHECK(w[0].name == "SDCSCREEN_SUPERVISE");
  CHECK(w[0].value == "0");
  CHECK(w[1].name == "SDCSCREEN_SYSFS_ROOT");
  CHECK(w[1].value == "/nowhere");
  CHECK(!w[1].effect.empty());
  CHECK(weakenings_short(w) == "SDCSCREEN_SUPERVISE=0, SDCSCREEN_SYSFS_ROOT=/nowhere");
  CHECK(weakenings_short(w, false) == "SDCSCREEN_SUPERVISE,SDCSCREEN_SYSFS_ROOT");
  // Every listed switch is seen; every drill is among them.
  fake_env.clear();
  for (const std::string& n : weakening_switch_names()) fake_env.emplace(n, "0");
  CHECK(weakenings_in(fake_getenv).size() == weakening_switch_names().size());
  for (const char* drill : {"SDCSCREEN_DRILL_REPORT_CRASH", "SDCSCREEN_DRILL_TELEMETRY_AFTER",
                            "SDCSCREEN_DRILL_WORKER_EXIT", "SDCSCREEN_DRILL_WORKER_CRASH", "SDCSCREEN_DRILL_SLOW_CPU", "SDCSCREEN_DRILL_SLOW_NODE", "SDCSCREEN_DRILL_HISTORY_FULL",
                            "SDCSCREEN_DRILL_TELEMETRY_DURING", "SDCSCREEN_DRILL_FORK_DELAY",
                            "SDCSCREEN_NVML_LIBRARY", "SDCSCREEN_HOST_ROOT"})
    CHECK(std::find(weakening_switch_names().begin(), weakening_switch_names().end(), drill) !=
          weakening_switch_names().end());
  fake_env.clear();
}

TEST_CASE("weakened: said in the text, JSON, Prometheus and NPD outputs", "[weakened]") {
  RunResult r = passing_run();
  const HostInfo host{};
  CHECK(render_npd_line(r).rfind("OK: 1 tests passed", 0) == 0);
  CHECK(render_prometheus(r, "").find("sdcscreen_weakened 0\n") != std::string::npos);
  CHECK(render_text(r, host).find("WEAKENED") == std::string::npos);
  r.weakened_by.push_back({"SDCSCREEN_SUPERVISE", "0", "crash supervision is off"});
  CHECK(render_npd_line(r) == "OK: 1 tests passed on 1 cpus (boot) [weakened: SDCSCREEN_SUPERVISE]");
  r.weakened_by.push_back({"--accept-patterns", "", "not the build's"});
  CHECK(render_npd_line(r) == "OK: 1 tests passed on 1 cpus (boot) [weakened: SDCSCREEN_SUPERVISE+1]");
  // A long line is cut before the mark, never through it.
  RunResult failed = r;
  failed.tests[0].verdict = Verdict::fail;
  failed.tests[0].family = std::string(90, 'f');
  failed.tests[0].units_failed = {0};
  const std::string line = render_npd_line(failed);
  CHECK(line.size() == NPD_LINE_MAX);
  CHECK(line.rfind("SDC: cpu 0 ", 0) == 0);
  const std::string tail = "... [weakened: SDCSCREEN_SUPERVISE+1]";
  CHECK(line.substr(line.size() - tail.size()) == tail);
  const std::string prom = render_prometheus(r, "");
  CHECK(prom.find("sdcscreen_weakened 1\n") != std::string::npos);
  CHECK(prom.find("sdcscreen_weakened_by{switch=\"SDCSCREEN_SUPERVISE\"} 1\n") != std::string::npos);
  CHECK(prom.find("sdcscreen_weakened_by{switch=\"--accept-patterns\"} 1\n") != std::string::npos);
  const std::string text = render_text(r, host);
  CHECK(text.find("WEAKENED VERDICT: SDCSCREEN_SUPERVISE=0: crash supervision is off") != std::string::npos);
  CHECK(text.find("WEAKENED VERDICT: --accept-patterns: not the build's") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(render_json(r, host));
  REQUIRE(j["weakened_by"].size() == 2);
  CHECK(j["weakened_by"][0] == nlohmann::json({{"name", "SDCSCREEN_SUPERVISE"}, {"value", "0"},
                                                {"effect", "crash supervision is off"}}));
  CHECK(j["weakened_by"][1]["name"] == "--accept-patterns");
  CHECK(nlohmann::json::parse(render_json(passing_run(), host))["weakened_by"] == nlohmann::json::array());
}

TEST_CASE("weakened: recorded in the history, never a clean screen", "[weakened][history]") {
  using namespace sdc::history;
  RunResult run = passing_run();
  run.weakened_by.push_back({"--accept-patterns", "", "not the build's"});
  Record weak = record_of(run, "node1", true);
  REQUIRE(weak.weakened == std::vector<std::string>{"--accept-patterns"});
  CHECK(weak.exit == 0);
  CHECK(weak.selection == "profile");
  Record failed = record_of(passing_run(), "node1", true);
  failed.exit = 1;
  failed.verdict = "fail";
  failed.units["cpu 0"] = "fail";
  failed.failures.push_back({"cpu 0", "softmax_f32.special_128x1000", "softmax_f32", "fail", {}, {}, "", -1, -1, false});
  failed.unix -= 100;

  const test::TempDir d("weakened");
  append(d.path, failed);
  for (int i = 0; i < 3; ++i) append(d.path, weak);
  History h;
  bool exists = false;
  REQUIRE(load(d.path, h, exists).empty());
  REQUIRE(h.records.size() == 4);
  CHECK(h.records[1].weakened == std::vector<std::string>{"--accept-patterns"});
  const PolicyConfig cfg{1, "boot"};
  ResumeVerdict v = decide(h, cfg);
  CHECK(v.decision == Decision::hold);  // three weakened passes: not one clean screen
  // The same screen, not weakened, resumes the node: the weakening alone held it.
  Record clean = weak;
  clean.weakened.clear();
  append(d.path, clean);
  REQUIRE(load(d.path, h, exists).empty());
  CHECK(decide(h, cfg).decision == Decision::resume);

  // A history line whose "weakened" is not a list of names is refused.
  std::string line = to_line(weak);
  const size_t at = line.find("\"weakened\":[\"--accept-patterns\"]");
  REQUIRE(at != std::string::npos);
  for (const char* bad : {"\"weakened\":[]", "\"weakened\":\"x\"", "\"weakened\":[1]"}) {
    std::string l = line;
    l.replace(at, std::string("\"weakened\":[\"--accept-patterns\"]").size(), bad);
    write_file_atomic(d.path + "/" + FILE_NAME, l + "\n" + to_line(clean) + "\n");
    CHECK(!load(d.path, h, exists).empty());
  }
}

TEST_CASE("weakened: pattern data other than the build's", "[weakened][patterns]") {
  const PatternSet ps = load_patterns(SDC_SOURCE_DIR "/patterns", false);
  CHECK(ps.battery_xxh3_128 == xxh3_128_hex(read_file(SDC_SOURCE_DIR "/patterns/battery.json")));
  CHECK(ps.manifest_xxh3_128 == xxh3_128_hex(read_file(SDC_SOURCE_DIR "/patterns/manifest.json")));
  const PatternDigests same{ps.battery_xxh3_128, ps.manifest_xxh3_128};
  CHECK(pattern_digest_mismatch(ps, same).empty());
  const std::string other(32, '0');
  std::string m = pattern_digest_mismatch(ps, {other, ps.manifest_xxh3_128});
  CHECK(m.find("/battery.json: XXH3-128 " + ps.battery_xxh3_128 + ", this sdcscreen was built with " + other) !=
        std::string::npos);
  CHECK(m.find("--accept-patterns") != std::string::npos);
  CHECK(m.find('\n') == std::string::npos);
  m = pattern_digest_mismatch(ps, {ps.battery_xxh3_128, other});
  CHECK(m.find("/manifest.json: XXH3-128 " + ps.manifest_xxh3_128) != std::string::npos);
}

TEST_CASE("weakened: a lock file with another hard link is refused", "[weakened]") {
  const test::TempDir d("weakened");
  const std::string lock = d.path + "/x.lock", victim = d.path + "/victim";
  {
    RunLock plain;
    bool busy = false;
    CHECK(plain.acquire(lock, &busy).empty());  // a lock file of its own: taken
  }
  std::filesystem::remove(lock);
  { std::ofstream(victim) << "precious\n"; }
  REQUIRE(link(victim.c_str(), lock.c_str()) == 0);
  RunLock l;
  bool busy = false;
  const std::string err = l.acquire(lock, &busy);
  CHECK(err.find("hard links") != std::string::npos);
  CHECK(!busy);
  CHECK(read_file(victim) == "precious\n");
}

TEST_CASE("weakened: a PCI tree that cannot be read is not a bus without GPUs", "[weakened]") {
  const test::TempDir d("weakened");
  const char* old = std::getenv("SDCSCREEN_SYSFS_ROOT");
  const std::string saved = old ? old : "";
  setenv("SDCSCREEN_SYSFS_ROOT", (d.path + "/nowhere").c_str(), 1);
  std::string error;
  CHECK(cuda::pci_gpus(error).empty());
  CHECK(error.find("cannot read the PCI bus") != std::string::npos);
  std::filesystem::create_directories(d.path + "/bus/pci/devices");  // a bus with no device: no GPUs, no error
  setenv("SDCSCREEN_SYSFS_ROOT", d.path.c_str(), 1);
  CHECK(cuda::pci_gpus(error).empty());
  CHECK(error.empty());
  std::filesystem::create_directories(d.path + "/bus/pci/devices/0000:1b:00.0");
  { std::ofstream(d.path + "/bus/pci/devices/0000:1b:00.0/vendor") << "0x10de\n"; }
  { std::ofstream(d.path + "/bus/pci/devices/0000:1b:00.0/class") << "0x030200\n"; }
  CHECK(cuda::pci_gpus(error) == std::vector<std::string>{"0000:1b:00.0"});
  if (old)
    setenv("SDCSCREEN_SYSFS_ROOT", saved.c_str(), 1);
  else
    unsetenv("SDCSCREEN_SYSFS_ROOT");
}
