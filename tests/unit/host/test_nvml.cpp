// NVML through the tests' fake libnvidia-ml.so.1 (tests/fake_nvml), loaded by the same code path as the
// driver's library (SDCSCREEN_NVML_LIBRARY): a missing library, an older driver's missing entry points, each
// counter's arithmetic, Xid events during sampling, throttle reasons by name, and the sampler stopped on every
// way out of its scope.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>

#include "tests/unit/catch.h"
#include "src/host/nvml.h"

using namespace sdc::host;
namespace fs = std::filesystem;

namespace {

struct FakeNvml {
  fs::path script;
  explicit FakeNvml(const std::string& text, const char* variant = "fake_nvml") {
    std::random_device rd;
    script = fs::temp_directory_path() / ("sdc_nvml_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::ofstream(script) << text;
    ::setenv("SDC_FAKE_NVML_SCRIPT", script.c_str(), 1);
    ::setenv("SDCSCREEN_NVML_LIBRARY", (std::string(SDC_FAKE_NVML_DIR) + "/" + variant + "/libnvidia-ml.so.1").c_str(),
             1);
  }
  ~FakeNvml() {
    std::error_code ec;
    fs::remove(script, ec);
    ::unsetenv("SDC_FAKE_NVML_SCRIPT");
    ::unsetenv("SDCSCREEN_NVML_LIBRARY");
  }
};

const char* BASE =
    "gpu GPU-A 00000000:17:00.0\n"
    "driver 580.65.06\n"
    "GPU-A serial 1650923456789\nGPU-A part 900-21010-0000-000\nGPU-A vbios 96.00.5E.00.01\n"
    "GPU-A inforom G520.0200.00.05\nGPU-A ecc_mode 1\n"
    "GPU-A ecc_vol_corr 2\nGPU-A ecc_vol_unc 0\nGPU-A ecc_agg_corr 10\nGPU-A ecc_agg_unc 1\n"
    "GPU-A retired_sbe 0\nGPU-A retired_dbe 0\nGPU-A retired_pending 0\n"
    "GPU-A remap_corr 0\nGPU-A remap_unc 0\nGPU-A remap_pending 0\nGPU-A remap_failed 0\n"
    "GPU-A temp 41\nGPU-A sm_clock 1980\nGPU-A mem_clock 2619\nGPU-A power_mw 71250\nGPU-A reasons 1\n"
    "GPU-A pcie_gen 5\nGPU-A pcie_width 16\n";

NvmlTelemetry one_gpu(const std::string& uuid = "GPU-A", const std::string& pci = "") {
  NvmlTelemetry t;
  t.attempted = true;
  t.gpus.push_back({});
  t.gpus[0].device = 0;
  t.gpus[0].uuid = uuid;
  t.gpus[0].pci_bus_id = pci;
  return t;
}

// NVML opened through the fake (set up before) and the before reading of t's GPUs, h their handles.
std::unique_ptr<Nvml> open_and_read_before(NvmlTelemetry& t, std::vector<nvmlDevice_t>& h) {
  std::string why;
  auto nvml = Nvml::open(why);
  INFO(why);
  REQUIRE(nvml);
  read_gpus_before(*nvml, t, h);
  return nvml;
}

// one_gpu() read as above: `auto [t, h, nvml] = OneGpuRead{};`.
struct OneGpuRead {
  NvmlTelemetry t = one_gpu();
  std::vector<nvmlDevice_t> h;
  std::unique_ptr<Nvml> nvml = open_and_read_before(t, h);
};

bool lacks(const GpuSnapshot& s, const std::string& what, const std::string& why_part) {
  for (const Unavailable& u : s.not_available)
    if (u.what == what && u.why.find(why_part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("nvml: a missing library is said, not fatal", "[nvml]") {
  ::setenv("SDCSCREEN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  CHECK(Nvml::open(why) == nullptr);
  CHECK(why.find("/nonexistent/libnvidia-ml.so.1 could not be loaded") != std::string::npos);
  ::unsetenv("SDCSCREEN_NVML_LIBRARY");
}

TEST_CASE("nvml: an initialization failure is said", "[nvml]") {
  FakeNvml f("init_fail 999\n");
  std::string why;
  CHECK(Nvml::open(why) == nullptr);
  CHECK(why == "nvmlInit_v2: Unknown Error (999)");
}

TEST_CASE("nvml: identity and a reading of every counter", "[nvml]") {
  FakeNvml f(BASE);
  auto [t, h, nvml] = OneGpuRead{};
  const GpuTelemetry& g = t.gpus[0];
  REQUIRE(g.not_matched.empty());
  CHECK(g.identity.serial == "1650923456789");
  CHECK(g.identity.board_part_number == "900-21010-0000-000");
  CHECK(g.identity.vbios == "96.00.5E.00.01");
  CHECK(g.identity.inforom == "G520.0200.00.05");
  CHECK(g.identity.driver == "580.65.06");
  CHECK(g.identity.ecc_enabled == true);
  const GpuSnapshot& s = g.before;
  CHECK(s.ecc_volatile_corrected == 2u);
  CHECK(s.ecc_aggregate_uncorrected == 1u);
  CHECK(s.temperature_c == 41.0);
  CHECK(s.sm_clock_mhz == 1980u);
  CHECK(s.memory_clock_mhz == 2619u);
  CHECK(s.power_w == 71.25);
  CHECK(s.throttle_reasons == 1u);
  CHECK(s.pcie_generation == 5u);
  CHECK(s.pcie_width == 16u);
  CHECK(s.remap_failed == false);
  // No mem_temp in the script: the field's own result is NOT_SUPPORTED (a GPU without a memory sensor).
  CHECK_FALSE(s.memory_temperature_c);
  CHECK(lacks(s, "memory_temperature", "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP): Not Supported (3)"));
}

TEST_CASE("nvml: the memory temperature through the field-value API, whatever its value type", "[nvml]") {
  for (const char* type : {"", "GPU-A mem_temp_type 0\n", "GPU-A mem_temp_type 4\n"}) {
    FakeNvml f(std::string(BASE) + "GPU-A mem_temp 78\nGPU-A mem_temp 96 from 2\n" + type);
    auto [t, h, nvml] = OneGpuRead{};
    const GpuTelemetry& g = t.gpus[0];
    CHECK(g.before.memory_temperature_c == 78.0);
    for (const Unavailable& u : g.before.not_available) CHECK(u.what != "memory_temperature");
    { GpuSampler sampler(*nvml, t, h, 10.0); }  // one sample: the second reading
    REQUIRE(g.samples.size() == 1);
    CHECK(g.samples[0].memory_temperature_c == 96.0);
    CHECK(g.peak.memory_temperature_c == 96.0);
    CHECK(g.peak.temperature_c == 41.0);  // the die's peak is its own
  }
  // A value type NVML does not define is no reading; each defined one is read from its own member.
  nvmlFieldValue_t v{};
  v.valueType = 99;
  v.value.ullVal = 70;
  CHECK_FALSE(field_value_number(v));
  v.valueType = NVML_VALUE_TYPE_UNSIGNED_SHORT;
  v.value.ullVal = 0xffff0000000000aaull;  // only the low 16 bits are the value (little-endian)
  CHECK(field_value_number(v) == 170.0);
  v.valueType = NVML_VALUE_TYPE_DOUBLE;
  v.value.dVal = 81.5;
  CHECK(field_value_number(v) == 81.5);
}

TEST_CASE("nvml: a GPU NVML does not know is not matched, by UUID nor PCI bus id", "[nvml]") {
  FakeNvml f(BASE);
  std::string why;
  auto nvml = Nvml::open(why);
  REQUIRE(nvml);
  NvmlTelemetry t = one_gpu("GPU-B", "0000:99:00.0");
  std::vector<nvmlDevice_t> h;
  read_gpus_before(*nvml, t, h);
  CHECK(h[0] == nullptr);
  CHECK(t.gpus[0].not_matched == "UUID GPU-B: Not Found (6); PCI bus id 0000:99:00.0: Not Found (6)");
  CHECK_FALSE(t.gpus[0].before.taken);
  // Matched by PCI bus id when the UUID is unknown to NVML.
  NvmlTelemetry byp = one_gpu("GPU-B", "00000000:17:00.0");
  read_gpus_before(*nvml, byp, h);
  CHECK(h[0] != nullptr);
  CHECK(byp.gpus[0].identity.serial == "1650923456789");
}

TEST_CASE("nvml: an older driver's missing entry points make only those readings not available", "[nvml]") {
  FakeNvml f(std::string(BASE) + "GPU-A mem_temp 78\n", "fake_nvml_old");
  auto [t, h, nvml] = OneGpuRead{};
  const GpuSnapshot& s = t.gpus[0].before;
  CHECK_FALSE(s.remap_failed);
  CHECK(lacks(s, "remapped_rows", "nvmlDeviceGetRemappedRows not in the library (an older driver)"));
  CHECK(s.throttle_reasons == 1u);  // through the older name
  CHECK(s.temperature_c == 41.0);
  // No nvmlDeviceGetFieldValues: no memory temperature, said as such (never 0).
  CHECK_FALSE(s.memory_temperature_c);
  CHECK(lacks(s, "memory_temperature", "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP) not in the library (an older driver)"));
  // No nvmlEventSetWait_v2: Xid events are not watched.
  { GpuSampler sampler(*nvml, t, h, 0.01); }
  CHECK_FALSE(t.gpus[0].xid_events_watched);
}

TEST_CASE("nvml: a reading the GPU does not support is not available, never 0", "[nvml]") {
  FakeNvml f("gpu GPU-A 0\nGPU-A temp 40\n");
  auto [t, h, nvml] = OneGpuRead{};
  const GpuSnapshot& s = t.gpus[0].before;
  CHECK_FALSE(s.ecc_volatile_uncorrected);
  CHECK(lacks(s, "ecc_volatile_uncorrected", "nvmlDeviceGetTotalEccErrors: Not Supported (3)"));
  CHECK(lacks(s, "serial", "Not Supported"));
  CHECK(t.gpus[0].identity.serial.empty());
}

TEST_CASE("nvml: counter arithmetic between the before and after readings", "[nvml]") {
  // Reading 1 is before; the after reading is the 2nd (no sampler here).
  FakeNvml f(std::string(BASE) +
             "GPU-A ecc_vol_unc 1 from 2\nGPU-A ecc_vol_corr 5 from 2\nGPU-A ecc_agg_unc 2 from 2\n"
             "GPU-A retired_dbe 1 from 2\nGPU-A remap_unc 1 from 2\nGPU-A remap_failed 1 from 2\n"
             "GPU-A ecc_agg_corr 3 from 2\nGPU-A reasons 0x28 from 2\n");
  auto [t, h, nvml] = OneGpuRead{};
  read_gpus_after(*nvml, t, h);
  const GpuTelemetry& g = t.gpus[0];
  std::map<std::string, const GpuEvent*> by;
  for (const GpuEvent& e : g.events) by[e.kind] = &e;
  REQUIRE(by.count("ecc_uncorrected"));
  CHECK(by["ecc_uncorrected"]->severity == "failure");
  CHECK(by["ecc_uncorrected"]->describe() == "ecc_uncorrected +1 (0 -> 1)");
  CHECK(by["ecc_corrected"]->severity == "info");
  CHECK(by["ecc_corrected"]->after - by["ecc_corrected"]->before == 3);
  // The volatile count was read: the aggregate one is said, not judged twice.
  CHECK(by["ecc_aggregate_uncorrected"]->severity == "info");
  CHECK(by["retired_pages_dbe"]->severity == "failure");
  CHECK(by["remapped_rows_uncorrectable"]->severity == "failure");
  CHECK(by["row_remap_failed"]->severity == "failure");
  // A count that fell (a reset) is said as such.
  CHECK(by["counter_reset"]->detail == "ecc_aggregate_corrected");
  CHECK(by["counter_reset"]->severity == "info");
  REQUIRE(by.count("throttle"));
  CHECK(by["throttle"]->detail == "hw_slowdown, sw_thermal_slowdown");
  CHECK(g.any("failure"));
  CHECK(t.causes("failure").find("gpu 0 (GPU-A): ecc_uncorrected +1") == 0);
}

TEST_CASE("nvml: an unchanged GPU has no events", "[nvml]") {
  FakeNvml f(BASE);
  auto [t, h, nvml] = OneGpuRead{};
  { GpuSampler sampler(*nvml, t, h, 0.01); }
  read_gpus_after(*nvml, t, h);
  CHECK(t.gpus[0].events.empty());
  CHECK_FALSE(t.any("failure"));
  CHECK_FALSE(t.any("error"));
}

TEST_CASE("nvml: Xid events during sampling, their severity, and the peak", "[nvml]") {
  FakeNvml f(std::string(BASE) + "xid GPU-A 79\nxid GPU-A 13\nxid GPU-A 45\nGPU-A temp 87 from 2\n"
                                 "GPU-A temp 50 from 3\n");
  auto [t, h, nvml] = OneGpuRead{};
  {
    GpuSampler sampler(*nvml, t, h, 0.01);
    CHECK(GpuSampler::live() == 1);
    sampler.stop();
    CHECK_FALSE(sampler.running());
  }
  read_gpus_after(*nvml, t, h);
  const GpuTelemetry& g = t.gpus[0];
  CHECK(g.xid_events_watched);
  REQUIRE(g.samples.size() >= 1);
  CHECK(g.samples[0].temperature_c == 87.0);
  CHECK(g.peak.temperature_c == 87.0);
  CHECK(g.after.temperature_c == 50.0);
  std::vector<std::string> xids;
  for (const GpuEvent& e : g.events)
    if (e.kind == "xid") xids.push_back(e.describe() + " " + e.severity);
  CHECK(xids == std::vector<std::string>{"Xid 79 failure", "Xid 13 error", "Xid 45 info"});
  CHECK(g.causes("failure") == "Xid 79");
  CHECK(g.causes("error") == "Xid 13");
}

TEST_CASE("nvml: the sampler stops on every way out of its scope", "[nvml]") {
  FakeNvml f(BASE);
  auto [t, h, nvml] = OneGpuRead{};
  const int before = GpuSampler::live();
  try {
    GpuSampler sampler(*nvml, t, h, 10.0);  // a long interval: the stop must not wait it out
    CHECK(GpuSampler::live() == before + 1);
    throw std::runtime_error("a screen's exception");
  } catch (const std::runtime_error&) {
  }
  CHECK(GpuSampler::live() == before);
}

TEST_CASE("nvml: throttle reasons and Xids by name", "[nvml]") {
  CHECK(throttle_reason_names(0).empty());
  CHECK(throttle_reason_names(0x1) == "gpu_idle");
  CHECK(throttle_reason_names(0x4 | 0x40) == "sw_power_cap, hw_thermal_slowdown");
  CHECK(throttle_reason_names(0x80 | 0x1000) == "hw_power_brake_slowdown, 0x1000");
  for (int x : {48, 63, 64, 74, 79, 94, 95}) CHECK(std::string(xid_severity(x)) == "failure");
  for (int x : {13, 31, 43}) CHECK(std::string(xid_severity(x)) == "error");
  CHECK(std::string(xid_severity(45)) == "info");
}

TEST_CASE("nvml: a GPU with aggregate ECC counts only is judged on them", "[nvml]") {
  // No volatile counts (the calls fail): an aggregate uncorrected increase is then the failure.
  FakeNvml f("gpu GPU-A 0\nGPU-A temp 40\nGPU-A ecc_agg_unc 3\nGPU-A ecc_agg_unc 4 from 2\n");
  auto [t, h, nvml] = OneGpuRead{};
  read_gpus_after(*nvml, t, h);
  REQUIRE(t.gpus[0].events.size() == 1);
  CHECK(t.gpus[0].events[0].kind == "ecc_aggregate_uncorrected");
  CHECK(t.gpus[0].events[0].severity == "failure");
  CHECK(t.gpus[0].events[0].describe() == "ecc_aggregate_uncorrected +1 (3 -> 4)");
}
