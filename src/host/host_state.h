// What the host is and what state it was in around a screen: identity (CPU, firmware, board) and telemetry
// (error counters, throttling, temperatures, clocks) read from /proc and /sys before and after the run.
// Plain data, filled by the readers of host_readers.h and compared by compare_telemetry().
//
// Fail closed: a value that could not be read is absent (an empty string, an empty optional, a missing
// entry) and named in not_available with why; it is never 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sdc::host {

// A source the reader could not use: the path as the host names it ("/sys/class/dmi/id/board_serial"),
// and why ("missing", "not readable (needs root)", "not a number: 'x'").
struct Unavailable {
  std::string what, why;
};

struct PackagePpin {
  int package = -1;
  std::string ppin;  // "0x0123456789abcdef"
};

struct CpuIdentity {
  std::string vendor, model_name, microcode;  // "" = not available
  int family = -1, model = -1, stepping = -1;  // -1 = not available
  int sockets = 0, cores = 0, threads = 0;     // 0 = not available
  std::vector<PackagePpin> ppin;               // per package where readable (root, and a CPU that has one)
};

// /sys/class/dmi/id: firmware and board. The serials are readable by root only.
struct DmiIdentity {
  std::string bios_vendor, bios_version, bios_date;
  std::string board_vendor, board_name, board_serial;
  std::string system_vendor, system_product, system_serial;
};

struct HostIdentity {
  CpuIdentity cpu;
  DmiIdentity dmi;
  std::string kernel;  // /proc/sys/kernel/osrelease
  std::vector<Unavailable> not_available;
};

// One EDAC memory controller's counts (/sys/devices/system/edac/mc/mcN).
struct EdacCounts {
  std::string controller;  // "mc0"
  std::optional<uint64_t> corrected, uncorrected;
};

struct CpuCount {
  int cpu = -1;
  uint64_t count = 0;
};

struct ThrottleCounts {
  int cpu = -1;
  std::optional<uint64_t> core, package;
};

struct Temperature {
  std::string sensor;  // the hwmon driver: coretemp, k10temp
  std::string label;   // "Package id 0", "Core 3", "Tctl"; "temp1" when the sensor has no label
  double celsius = 0;
  std::optional<double> max_c, crit_c;  // the sensor's own limits, where it has them
};

struct CpuFrequency {
  int cpu = -1;
  double mhz = 0;
};

struct TelemetrySnapshot {
  bool taken = false;
  double unix_time = 0;
  std::vector<EdacCounts> edac;
  // Machine-check exceptions per CPU (/proc/interrupts MCE): raised for uncorrected errors; the corrected
  // ones are found by polling and thresholds, which this count does not include.
  std::vector<CpuCount> machine_checks;
  std::vector<ThrottleCounts> throttle;
  std::vector<Temperature> temperatures;
  std::vector<CpuFrequency> frequency;
  std::vector<Unavailable> not_available;
};

// What changed between the two snapshots, or crossed a limit. A fatal event is an uncorrected hardware
// error during the run: it fails the run (exit 1) like a miscompare.
struct HostEvent {
  std::string kind;  // edac_uncorrected, edac_corrected, machine_check, core_throttle, package_throttle,
                     // counter_reset, temperature_limit
  std::string unit;  // "mc0", "cpu 3", "k10temp Tctl"
  double before = 0, after = 0;
  bool fatal = false;
  std::string describe() const;
};

// One reading of the CPU temperature sampler (every second during a CPU screen): the hottest CPU sensor then,
// which is what a case beside it is judged by (--max-temperature).
struct CpuTemperatureSample {
  double unix_time = 0;
  Temperature hottest;
};

struct HostTelemetry {
  HostIdentity identity;
  bool identity_read = false;
  TelemetrySnapshot before, after;
  // During a CPU screen: the hwmon CPU temperatures sampled every second (a sample whenever a CPU sensor
  // could be read), and the hottest of them.
  std::vector<CpuTemperatureSample> samples;
  std::optional<CpuTemperatureSample> peak;
  std::vector<HostEvent> events;
  // A drill replaced the source of the after reading (SDCSCREEN_DRILL_TELEMETRY_AFTER): what it did, said in
  // every output. Empty when none.
  std::string drill;
  bool any_fatal() const;
};

std::vector<HostEvent> compare_telemetry(const TelemetrySnapshot& before, const TelemetrySnapshot& after);

}  // namespace sdc::host
