// The host readers (src/host) on fake /proc and /sys trees: parsing, what is not available, and the
// arithmetic of counters that change during a run.
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "tests/unit/catch.h"
#include "src/core/result.h"
#include "src/host/cpu_sampler.h"
#include "src/host/host_readers.h"
#include "src/report/report.h"
#include "src/report/report_host.h"
#include "tests/unit/result_test.h"
#include "tests/unit/temp_dir.h"

using namespace sdc;
using test::check_contains;
using test::one_gpu_run;
using test::test_of;
using namespace sdc::host;
namespace fs = std::filesystem;

namespace {

// A fake host root (sysfs, procfs) in a fresh temporary directory, removed at the end of the test.
struct FakeTree {
  test::TempDir tmp{"host"};
  fs::path dir = tmp.path;
  void write(const std::string& rel, const std::string& text) const {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  HostRoot root() const { return HostRoot::under(dir.string()); }
};

const char* CPUINFO =
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000181\n"
    "cpu MHz\t\t: 2000.000\nphysical id\t: 0\ncore id\t\t: 0\n\n"
    "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nstepping\t: 8\n"
    "cpu MHz\t\t: 3800.500\nphysical id\t: 0\ncore id\t\t: 0\n\n"
    "processor\t: 2\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nstepping\t: 8\n"
    "cpu MHz\t\t: 2100.000\nphysical id\t: 1\ncore id\t\t: 0\n\n";

bool lists(const std::vector<Unavailable>& v, const std::string& what) {
  for (const Unavailable& u : v)
    if (u.what.find(what) != std::string::npos) return true;
  return false;
}

// A bare-metal-like tree: two memory controllers, throttle counters, coretemp, DMI.
void populate(const FakeTree& t, int ue0, int ce1, int throttle1) {
  t.write("proc/cpuinfo", CPUINFO);
  t.write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  t.write("proc/interrupts",
          "           CPU0       CPU1       CPU2\n  0:         40          0          0   IO-APIC    2-edge      timer\n"
          "MCE:          0          0          0   Machine check exceptions\n"
          "MCP:         12         12         12   Machine check polls\n");
  t.write("sys/devices/system/edac/mc/mc0/ce_count", "0\n");
  t.write("sys/devices/system/edac/mc/mc0/ue_count", std::to_string(ue0) + "\n");
  t.write("sys/devices/system/edac/mc/mc1/ce_count", std::to_string(ce1) + "\n");
  t.write("sys/devices/system/edac/mc/mc1/ue_count", "0\n");
  for (int c = 0; c < 3; ++c) {
    const std::string cpu = "sys/devices/system/cpu/cpu" + std::to_string(c);
    t.write(cpu + "/thermal_throttle/core_throttle_count", c == 1 ? std::to_string(throttle1) + "\n" : "0\n");
    t.write(cpu + "/thermal_throttle/package_throttle_count", "0\n");
    t.write(cpu + "/cpufreq/scaling_cur_freq", std::to_string(2000000 + c * 100000) + "\n");
  }
  t.write("sys/class/hwmon/hwmon0/name", "nvme\n");
  t.write("sys/class/hwmon/hwmon0/temp1_input", "40000\n");
  t.write("sys/class/hwmon/hwmon1/name", "coretemp\n");
  t.write("sys/class/hwmon/hwmon1/temp1_input", "61000\n");
  t.write("sys/class/hwmon/hwmon1/temp1_label", "Package id 0\n");
  t.write("sys/class/hwmon/hwmon1/temp1_max", "90000\n");
  t.write("sys/class/hwmon/hwmon1/temp1_crit", "100000\n");
  t.write("sys/class/hwmon/hwmon1/temp2_input", "58000\n");
  t.write("sys/class/hwmon/hwmon1/temp2_label", "Core 0\n");
  for (const char* f : {"bios_vendor", "bios_version", "bios_date", "board_vendor", "board_name", "sys_vendor",
                        "product_name", "board_serial", "product_serial"})
    t.write(std::string("sys/class/dmi/id/") + f, std::string("v-") + f + "\n");
}

// The readings of two trees populated with the counters given (populate's ue0, ce1, throttle1), and the events
// between them.
HostTelemetry telemetry_between(const std::array<int, 3>& before, const std::array<int, 3>& after) {
  FakeTree b, a;
  populate(b, before[0], before[1], before[2]);
  populate(a, after[0], after[1], after[2]);
  HostTelemetry h;
  h.before = read_telemetry(b.root());
  h.after = read_telemetry(a.root());
  h.events = compare_telemetry(h.before, h.after);
  return h;
}

}  // namespace

TEST_CASE("host: cpuinfo gives vendor, family/model/stepping, microcode and topology", "[host]") {
  std::vector<Unavailable> na;
  const CpuIdentity c = parse_cpuinfo(CPUINFO, na);
  CHECK(c.vendor == "GenuineIntel");
  CHECK(c.model_name == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(c.family == 6);
  CHECK(c.model == 143);
  CHECK(c.stepping == 8);
  CHECK(c.microcode == "0x2b000181");
  CHECK(c.sockets == 2);
  CHECK(c.cores == 2);
  CHECK(c.threads == 3);
  CHECK(na.empty());
}

TEST_CASE("host: cpuinfo without topology or microcode says so, never 0", "[host]") {
  std::vector<Unavailable> na;
  const CpuIdentity c = parse_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n", na);
  CHECK(c.threads == 1);
  CHECK(c.sockets == 0);  // 0 is "not available" in CpuIdentity, rendered as null
  CHECK(c.family == -1);
  CHECK(lists(na, "physical id"));
  CHECK(lists(na, "microcode"));
  CHECK(lists(na, "cpu family"));
}

TEST_CASE("host: machine-check exceptions per CPU from /proc/interrupts", "[host]") {
  const auto m = parse_machine_checks(
      "           CPU0       CPU2\n  0:  1 2 IO-APIC timer\nMCE:          3          0   Machine check exceptions\n");
  REQUIRE(m);
  REQUIRE(m->size() == 2);
  CHECK((*m)[0].cpu == 0);
  CHECK((*m)[0].count == 3);
  CHECK((*m)[1].cpu == 2);  // an offline CPU has no column: the header names them
  CHECK_FALSE(parse_machine_checks("           CPU0\n  0:  1 IO-APIC timer\n"));
  CHECK_FALSE(parse_machine_checks("           CPU0       CPU1\nMCE:   x   y\n"));
  CHECK_FALSE(parse_machine_checks(""));
}

TEST_CASE("host: counts and reasons", "[host]") {
  CHECK(parse_count(" 17\n") == std::optional<uint64_t>(17));
  CHECK_FALSE(parse_count("-1"));
  CHECK_FALSE(parse_count(""));
  CHECK_FALSE(parse_count("12 apples"));
  CHECK(unreadable_reason(ENOENT) == "missing");
  CHECK(unreadable_reason(EACCES) == "not readable (needs root)");
  CHECK(unreadable_reason(EIO).rfind("not readable:", 0) == 0);
  CHECK(parse_cpuinfo_mhz(CPUINFO).size() == 3);
  CHECK(parse_cpuinfo_mhz(CPUINFO)[1].mhz == 3800.5);
}

TEST_CASE("host: a full fake tree is read", "[host]") {
  FakeTree t;
  populate(t, 0, 5, 0);
  const HostIdentity id = read_identity(t.root());
  CHECK(id.cpu.family == 6);
  CHECK(id.kernel == "6.8.0-45-generic");
  CHECK(id.dmi.bios_version == "v-bios_version");
  CHECK(id.dmi.board_serial == "v-board_serial");
  CHECK(id.dmi.system_serial == "v-product_serial");
  CHECK(lists(id.not_available, "PPIN"));  // neither topology/ppin nor an msr device in the tree
  const TelemetrySnapshot s = read_telemetry(t.root());
  REQUIRE(s.edac.size() == 2);
  CHECK(s.edac[1].controller == "mc1");
  CHECK(s.edac[1].corrected == std::optional<uint64_t>(5));
  CHECK(s.machine_checks.size() == 3);
  CHECK(s.throttle.size() == 3);
  REQUIRE(s.temperatures.size() == 2);  // the nvme sensor is not a CPU's
  CHECK(s.temperatures[0].label == "Package id 0");
  CHECK(s.temperatures[0].celsius == 61.0);
  CHECK(s.temperatures[0].max_c == std::optional<double>(90.0));
  REQUIRE(s.frequency.size() == 3);
  CHECK(s.frequency[2].mhz == 2200.0);
  CHECK(s.not_available.empty());
}

TEST_CASE("host: a PPIN is read from topology/ppin", "[host]") {
  FakeTree t;
  populate(t, 0, 0, 0);
  t.write("sys/devices/system/cpu/cpu0/topology/ppin", "0x1234abcd5678ef90\n");
  t.write("sys/devices/system/cpu/cpu2/topology/ppin", "0x0000000000000002\n");
  const HostIdentity id = read_identity(t.root());
  REQUIRE(id.cpu.ppin.size() == 2);
  CHECK(id.cpu.ppin[0].package == 0);
  CHECK(id.cpu.ppin[0].ppin == "0x1234abcd5678ef90");
  CHECK(id.cpu.ppin[1].package == 1);
  CHECK_FALSE(lists(id.not_available, "PPIN"));
}

TEST_CASE("host: a VM with nothing: every reader says what was not available", "[host]") {
  FakeTree t;
  const HostIdentity id = read_identity(t.root());
  CHECK(id.cpu.vendor.empty());
  CHECK(id.cpu.threads == 0);
  CHECK(lists(id.not_available, "/proc/cpuinfo"));
  CHECK(lists(id.not_available, "/sys/class/dmi/id"));
  CHECK(lists(id.not_available, "osrelease"));
  const TelemetrySnapshot s = read_telemetry(t.root());
  CHECK(s.taken);
  CHECK(s.edac.empty());
  CHECK(s.machine_checks.empty());
  CHECK(lists(s.not_available, "/sys/devices/system/edac/mc"));
  CHECK(lists(s.not_available, "/proc/interrupts"));
  CHECK(lists(s.not_available, "thermal_throttle"));
  CHECK(lists(s.not_available, "hwmon"));
  CHECK(lists(s.not_available, "frequency"));
  CHECK(compare_telemetry(s, s).empty());
}

TEST_CASE("host: a counter that cannot be parsed is not available, not 0", "[host]") {
  FakeTree t;
  t.write("sys/devices/system/edac/mc/mc0/ce_count", "garbage\n");
  const TelemetrySnapshot s = read_telemetry(t.root());
  REQUIRE(s.edac.size() == 1);
  CHECK_FALSE(s.edac[0].corrected);
  CHECK_FALSE(s.edac[0].uncorrected);  // missing file
  CHECK(lists(s.not_available, "mc0/ce_count"));
  CHECK(lists(s.not_available, "mc0/ue_count"));
}

TEST_CASE("host: counters that increase during the run", "[host]") {
  const HostTelemetry h = telemetry_between({0, 5, 2}, {1, 9, 7});
  REQUIRE(h.events.size() == 3);
  CHECK(h.events[0].kind == "edac_uncorrected");
  CHECK(h.events[0].unit == "mc0");
  CHECK(h.events[0].fatal);
  CHECK(h.events[0].describe().find("mc0 ue_count 0 -> 1") != std::string::npos);
  CHECK(h.events[1].kind == "edac_corrected");
  CHECK(h.events[1].unit == "mc1");
  CHECK(h.events[1].after - h.events[1].before == 4);
  CHECK_FALSE(h.events[1].fatal);
  CHECK(h.events[2].kind == "core_throttle");
  CHECK(h.events[2].unit == "cpu 1");
  CHECK_FALSE(h.events[2].fatal);
  CHECK(h.any_fatal());
  CHECK(host_fatal_units(h) == "mc0 uncorrected memory error");

  // The run fails on it, though every test passed, and every output says why.
  RunResult r;
  TestResult pass;
  pass.verdict = Verdict::pass;
  r.tests.push_back(pass);
  CHECK(r.exit_code() == EXIT_PASS);
  r.host = h;
  r.host.identity_read = true;
  CHECK(r.exit_code() == EXIT_FAIL);
  const std::string text = render_text(r, HostInfo{});
  check_contains(text, {"HOST ERROR: uncorrected memory error during the run: EDAC memory controller mc0",
                        "host: corrected memory errors during the run", "exit: fail"});
  const std::string prom = render_prometheus(r, "");
  check_contains(prom, {"sdcscreen_edac_errors_during_run{controller=\"mc0\",type=\"uncorrected\"} 1",
                        "sdcscreen_edac_errors_during_run{controller=\"mc1\",type=\"corrected\"} 4",
                        "sdcscreen_cpu_thermal_throttle_count{cpu=\"1\",scope=\"core\"} 7",
                        "sdcscreen_cpu_temperature_celsius{sensor=\"coretemp\",label=\"Package id 0\"} 61.0",
                        "sdcscreen_host_uncorrected_errors 1"});
  CHECK(render_npd_line(r).rfind("HW: mc0 uncorrected memory error", 0) == 0);
}

TEST_CASE("host: corrected errors and throttling alone do not fail the run", "[host]") {
  const HostTelemetry h = telemetry_between({3, 5, 2}, {3, 6, 3});
  CHECK(h.events.size() == 2);
  CHECK_FALSE(h.any_fatal());
  RunResult r;
  TestResult pass;
  pass.verdict = Verdict::pass;
  r.tests.push_back(pass);
  r.host = h;
  CHECK(r.exit_code() == EXIT_PASS);
}

TEST_CASE("host: a counter that went down was reset, and a temperature at its limit is said", "[host]") {
  TelemetrySnapshot b, a;
  b.taken = a.taken = true;
  b.edac.push_back({"mc0", 4, 2});
  a.edac.push_back({"mc0", 4, 0});
  a.temperatures.push_back({"k10temp", "Tctl", 95.5, 95.0, std::nullopt});
  a.temperatures.push_back({"k10temp", "Tccd1", 60.0, std::nullopt, std::nullopt});
  const auto ev = compare_telemetry(b, a);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == "counter_reset");
  CHECK(ev[0].unit == "mc0 ue_count");
  CHECK_FALSE(ev[0].fatal);
  CHECK(ev[1].kind == "temperature_limit");
  CHECK(ev[1].describe().find("k10temp Tctl at 95.5 C") != std::string::npos);
  // A controller that could not be read after the run makes no event, and no reading is taken as 0.
  TelemetrySnapshot gone = a;
  gone.edac[0].uncorrected.reset();
  CHECK(compare_telemetry(b, gone).size() == 1);
}

TEST_CASE("host: text report prints the identity block and what was not available", "[host]") {
  FakeTree t;
  t.write("proc/cpuinfo", CPUINFO);
  RunResult r;
  r.host.identity = read_identity(t.root());
  r.host.identity_read = true;
  r.host.before = r.host.after = read_telemetry(t.root());
  const std::string s = render_text(r, HostInfo{});
  CHECK(s.find("host identity:\n  cpu       Intel(R) Xeon(R) Platinum 8480+ (GenuineIntel, family 6 model 143 stepping 8, "
               "microcode 0x2b000181)") != std::string::npos);
  CHECK(s.find("board     not available  not available  serial not available") != std::string::npos);
  CHECK(s.find("not available: /sys/class/dmi/id: missing") != std::string::npos);
  CHECK(s.find("host telemetry: no counter that could be read changed") != std::string::npos);
  CHECK(s.find("not available: /sys/devices/system/edac/mc") != std::string::npos);
}

TEST_CASE("host: the CPU temperature sampler reads the hottest CPU sensor and stops on every way out", "[host]") {
  FakeTree tree;
  populate(tree, 0, 0, 0);  // coretemp Package id 0 at 61 C, Core 0 at 58 C; an nvme sensor at 40 C
  HostTelemetry t;
  const int before = CpuTemperatureSampler::live();
  try {
    CpuTemperatureSampler sampler(tree.root(), t, 10.0);  // a long interval: the stop must not wait it out
    CHECK(CpuTemperatureSampler::live() == before + 1);
    throw std::runtime_error("a screen's exception");
  } catch (const std::runtime_error&) {
  }
  CHECK(CpuTemperatureSampler::live() == before);
  REQUIRE(t.samples.size() == 1);  // the reading at the start
  CHECK(t.samples[0].hottest.sensor == "coretemp");
  CHECK(t.samples[0].hottest.label == "Package id 0");
  CHECK(t.samples[0].hottest.celsius == 61.0);
  REQUIRE(t.peak);
  CHECK(t.peak->hottest.celsius == 61.0);
  // A core hotter than the package at the next sampling: the peak is the hottest sensor seen.
  tree.write("sys/class/hwmon/hwmon1/temp2_input", "97000\n");
  { CpuTemperatureSampler sampler(tree.root(), t, 10.0); }
  CHECK(t.samples.size() == 2);
  CHECK(t.peak->hottest.label == "Core 0");
  CHECK(t.peak->hottest.celsius == 97.0);
  // A host without a CPU sensor: no sample, nothing concluded.
  FakeTree bare;
  HostTelemetry none;
  { CpuTemperatureSampler sampler(bare.root(), none, 10.0); }
  CHECK(none.samples.empty());
  CHECK_FALSE(none.peak);
}

TEST_CASE("host: a CPU test that ran while a CPU sensor was above --max-temperature is an error", "[host]") {
  RunResult r;
  const auto test = [](const char* id, Verdict v, double from, double to) {
    TestResult t;
    t.id = id;
    t.verdict = v;
    t.ran_unix = {{from, to}};
    return t;
  };
  r.tests = {test("cool_case", Verdict::pass, 100, 101), test("hot_case", Verdict::pass, 110, 111),
             test("failed_hot", Verdict::fail, 110.5, 111)};
  Temperature cool{"k10temp", "Tctl", 60, {}, {}}, hot{"k10temp", "Tctl", 95, {}, {}};
  for (double s = 100; s <= 112; s += 1) r.host.samples.push_back({s, s >= 109.5 ? hot : cool});
  for (const double limit : {0.0, 100.0}) {  // no limit, or one above every reading: nothing changes
    RunResult quiet = r;
    judge_cpu_tests(quiet, limit);
    for (const TestResult& t : quiet.tests) CHECK(t.notes.empty());
    CHECK(quiet.tests[1].verdict == Verdict::pass);
  }
  judge_cpu_tests(r, 90);
  CHECK(r.tests[0].verdict == Verdict::pass);  // its readings (99.5 to 102.5 s) were all 60 C
  CHECK(r.tests[1].verdict == Verdict::error);
  CHECK(r.tests[1].reason ==
        "CPU sensor k10temp Tctl at 95 C while it ran, above --max-temperature 90 C: its result cannot be trusted");
  CHECK(r.tests[2].verdict == Verdict::fail);  // a miscompare stands; the temperature is a note beside it
  REQUIRE(r.tests[2].notes.size() == 1);
  CHECK(r.tests[2].notes[0].find("95 C while it ran") != std::string::npos);
  // The before and after readings count too (a screen shorter than the interval).
  RunResult brief;
  brief.tests = {test("brief", Verdict::pass, 200, 200.1)};
  brief.host.after.taken = true;
  brief.host.after.unix_time = 200.5;
  brief.host.after.temperatures = {hot};
  judge_cpu_tests(brief, 90);
  CHECK(brief.tests[0].verdict == Verdict::error);
}

TEST_CASE("npd: a failing GPU is named by its ordinal and its UUID's first group, by its ordinal alone without one", "[host]") {
  const std::string uuid = "GPU-1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d";
  RunResult r = one_gpu_run(3, uuid);
  TestResult t = test_of("gemm_f32.uniform_64", Verdict::fail, {17}, 0);
  t.device = "cuda:3";
  t.failed_tiles = 1;
  r.tests = {t};
  CHECK(render_npd_line(r) == "SDC: gpu 3 sm 17 (GPU-1a2b3c4d) gemm_f32");
  r.devices[0].uuid.clear();
  CHECK(render_npd_line(r) == "SDC: gpu 3 sm 17 gemm_f32");
  // A GPU's own hardware failure through NVML, no test failed: the GPU by its UUID too.
  r.devices[0].uuid = uuid;
  r.tests[0].verdict = Verdict::pass;
  r.tests[0].failed_tiles = 0;
  r.tests[0].units_failed.clear();
  r.nvml.attempted = r.nvml.available = true;
  GpuTelemetry g;
  g.device = 0;
  g.uuid = uuid;
  g.events.push_back({"xid", "failure", 79, 0, 0, 0, ""});
  r.nvml.gpus = {g};
  CHECK(render_npd_line(r) == "HW: gpu 3 (GPU-1a2b3c4d): Xid 79 during the screen");
  CHECK(render_npd_line(r).size() <= 80);
}
