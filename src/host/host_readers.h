// Readers of the host's identity and telemetry from /proc, /sys and /dev. Each takes the roots of those
// trees, so that tests read a fake tree; every reader tolerates a missing or unreadable file (a VM exposes
// few) and records what it could not read. Only PPIN and the DMI serials need root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/host/host_state.h"

namespace sdc::host {

struct HostRoot {
  std::string proc = "/proc", sys = "/sys", dev = "/dev";
  // SDCSCREEN_HOST_ROOT=DIR: DIR/proc, DIR/sys and DIR/dev; SDCSCREEN_SYSFS_ROOT replaces /sys alone (it
  // also replaces it for the PCI GPU check). For tests, which build fake trees.
  static HostRoot from_env();
  // Every tree under one directory (DIR/proc, DIR/sys, DIR/dev).
  static HostRoot under(const std::string& dir);
};

// One file's first line, trimmed, or why it could not be read ("missing", "not readable (needs root)").
struct FileValue {
  std::optional<std::string> text;
  std::string why;
};
FileValue read_first_line(const std::string& path);
// A whole file (/proc/cpuinfo, /proc/interrupts); "" and why when it could not be read.
std::string read_whole_file(const std::string& path, std::string& why);
// Why a read failed with this errno, as the reports say it.
std::string unreadable_reason(int err);
// A non-negative decimal integer, the whole text (surrounding blanks allowed); nullopt otherwise.
std::optional<uint64_t> parse_count(const std::string& text);

// /proc/cpuinfo's fields of the first processor, and the topology counted over all of them.
CpuIdentity parse_cpuinfo(const std::string& cpuinfo, std::vector<Unavailable>& not_available);
HostIdentity read_identity(const HostRoot& root);

// /proc/interrupts' MCE line: machine-check exceptions per CPU, in the order of the header's CPU columns.
// nullopt when there is no such line (not x86, or a kernel that does not count them).
std::optional<std::vector<CpuCount>> parse_machine_checks(const std::string& interrupts);
// Every logical CPU's "cpu MHz" in /proc/cpuinfo, by processor number.
std::vector<CpuFrequency> parse_cpuinfo_mhz(const std::string& cpuinfo);
TelemetrySnapshot read_telemetry(const HostRoot& root);
// The CPU sensors' temperatures (hwmon coretemp, k10temp, zenpower); empty when none can be read.
std::vector<Temperature> read_cpu_temperatures(const HostRoot& root);
// The hottest of them, if any.
std::optional<Temperature> hottest(const std::vector<Temperature>& temperatures);

}  // namespace sdc::host
