// The host's telemetry around a screen: EDAC memory-controller counts, machine-check exceptions, thermal
// throttling, CPU temperatures and clocks; and what changed between the reading before and the one after.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>

#include "src/core/unit_name.h"
#include "src/host/host_readers.h"

namespace sdc::host {
namespace {

// The entries of dir whose names are prefix followed by a number, sorted by that number ("mc10" after
// "mc2"); empty when dir cannot be listed.
std::vector<std::pair<int, std::string>> numbered(const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 6) continue;
    if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) continue;
    out.emplace_back(std::stoi(name.substr(prefix.size())), name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool is_dir(const std::string& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

// A counter file: its value, or nullopt with the reason recorded under the host's name for the path.
std::optional<uint64_t> read_counter(const std::string& path, const std::string& shown, TelemetrySnapshot& s) {
  const FileValue f = read_first_line(path);
  if (!f.text) {
    s.not_available.push_back({shown, f.why});
    return std::nullopt;
  }
  const auto v = parse_count(*f.text);
  if (!v) s.not_available.push_back({shown, fmt::format("not a count: '{}'", f.text->substr(0, 40))});
  return v;
}

void read_edac(const HostRoot& root, TelemetrySnapshot& s) {
  const std::string dir = root.sys + "/devices/system/edac/mc";
  if (!is_dir(dir)) {
    s.not_available.push_back({"/sys/devices/system/edac/mc", "missing (no EDAC driver: memory errors are not counted here)"});
    return;
  }
  for (const auto& [n, name] : numbered(dir, "mc")) {
    EdacCounts c;
    c.controller = name;
    const std::string shown = "/sys/devices/system/edac/mc/" + name;
    c.corrected = read_counter(dir + "/" + name + "/ce_count", shown + "/ce_count", s);
    c.uncorrected = read_counter(dir + "/" + name + "/ue_count", shown + "/ue_count", s);
    s.edac.push_back(c);
  }
  if (s.edac.empty()) s.not_available.push_back({"/sys/devices/system/edac/mc", "no memory controller listed"});
}

void read_cpus(const HostRoot& root, TelemetrySnapshot& s) {
  const std::string dir = root.sys + "/devices/system/cpu";
  for (const auto& [cpu, name] : numbered(dir, "cpu")) {
    const std::string tt = dir + "/" + name + "/thermal_throttle";
    if (is_dir(tt)) {
      ThrottleCounts t;
      t.cpu = cpu;
      const std::string shown = "/sys/devices/system/cpu/" + name + "/thermal_throttle/";
      t.core = read_counter(tt + "/core_throttle_count", shown + "core_throttle_count", s);
      // Not every CPU has a package counter (some expose it on the package's first CPU only): absent is normal.
      if (std::filesystem::exists(tt + "/package_throttle_count"))
        t.package = read_counter(tt + "/package_throttle_count", shown + "package_throttle_count", s);
      s.throttle.push_back(t);
    }
    const FileValue f = read_first_line(dir + "/" + name + "/cpufreq/scaling_cur_freq");
    if (f.text)
      if (const auto khz = parse_count(*f.text)) s.frequency.push_back({cpu, static_cast<double>(*khz) / 1000.0});
  }
  if (s.throttle.empty())
    s.not_available.push_back({"/sys/devices/system/cpu/cpu*/thermal_throttle", "missing"});
}

// N of every tempN_input in a hwmon directory, in order.
std::vector<int> temperature_inputs(const std::string& dir) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t us = name.find('_');
    if (name.rfind("temp", 0) != 0 || us == std::string::npos || us == 4 || us > 10 || name.substr(us) != "_input")
      continue;
    if (name.find_first_not_of("0123456789", 4) != us) continue;
    out.push_back(std::stoi(name.substr(4, us - 4)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<Temperature> read_cpu_temperatures(const HostRoot& root) {
  std::vector<Temperature> out;
  const std::string dir = root.sys + "/class/hwmon";
  for (const auto& [n, name] : numbered(dir, "hwmon")) {
    const std::string h = dir + "/" + name;
    const FileValue sensor = read_first_line(h + "/name");
    // CPU sensors only: Intel coretemp, AMD k10temp (and the out-of-tree zenpower).
    if (!sensor.text || (*sensor.text != "coretemp" && *sensor.text != "k10temp" && *sensor.text != "zenpower"))
      continue;
    for (const int t : temperature_inputs(h)) {
      const std::string base = fmt::format("{}/temp{}_", h, t);
      const FileValue v = read_first_line(base + "input");
      if (!v.text) continue;
      const auto milli = parse_count(*v.text);
      if (!milli) continue;
      Temperature x;
      x.sensor = *sensor.text;
      const FileValue label = read_first_line(base + "label");
      x.label = label.text && !label.text->empty() ? *label.text : fmt::format("temp{}", t);
      x.celsius = static_cast<double>(*milli) / 1000.0;
      if (const FileValue m = read_first_line(base + "max"); m.text)
        if (const auto c = parse_count(*m.text); c && *c > 0) x.max_c = static_cast<double>(*c) / 1000.0;
      if (const FileValue m = read_first_line(base + "crit"); m.text)
        if (const auto c = parse_count(*m.text); c && *c > 0) x.crit_c = static_cast<double>(*c) / 1000.0;
      out.push_back(x);
    }
  }
  return out;
}

std::optional<Temperature> hottest(const std::vector<Temperature>& temperatures) {
  const auto h = std::max_element(temperatures.begin(), temperatures.end(),
                                  [](const Temperature& a, const Temperature& b) { return a.celsius < b.celsius; });
  return h == temperatures.end() ? std::nullopt : std::optional<Temperature>(*h);
}

namespace {

void read_hwmon(const HostRoot& root, TelemetrySnapshot& s) {
  s.temperatures = read_cpu_temperatures(root);
  if (s.temperatures.empty())
    s.not_available.push_back({"/sys/class/hwmon (coretemp, k10temp)", "no CPU temperature sensor"});
}

}  // namespace

std::optional<std::vector<CpuCount>> parse_machine_checks(const std::string& interrupts) {
  std::istringstream in(interrupts);
  std::string header, line;
  if (!std::getline(in, header)) return std::nullopt;
  std::vector<int> cpus;  // the header's columns: "CPU0 CPU1 ..." (an offline CPU has no column)
  std::istringstream h(header);
  for (std::string w; h >> w;)
    if (w.rfind("CPU", 0) == 0 && w.size() > 3 && w.find_first_not_of("0123456789", 3) == std::string::npos)
      cpus.push_back(std::stoi(w.substr(3)));
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string key;
    l >> key;
    if (key != "MCE:") continue;
    std::vector<CpuCount> out;
    for (int cpu : cpus) {
      std::string w;
      if (!(l >> w)) return std::nullopt;
      const auto v = parse_count(w);
      if (!v) return std::nullopt;
      out.push_back({cpu, *v});
    }
    return out;
  }
  return std::nullopt;
}

std::vector<CpuFrequency> parse_cpuinfo_mhz(const std::string& cpuinfo) {
  std::vector<CpuFrequency> out;
  std::istringstream in(cpuinfo);
  std::string line;
  int cpu = -1;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const std::string value = line.substr(colon + 1);
    if (key == "processor") {
      const auto v = parse_count(value);
      cpu = v ? static_cast<int>(*v) : -1;
    } else if (key == "cpu MHz" && cpu >= 0) {
      try {
        out.push_back({cpu, std::stod(value)});
      } catch (const std::exception&) {
      }
    }
  }
  return out;
}

TelemetrySnapshot read_telemetry(const HostRoot& root) {
  TelemetrySnapshot s;
  s.taken = true;
  s.unix_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  read_edac(root, s);
  std::string why;
  const std::string interrupts = read_whole_file(root.proc + "/interrupts", why);
  if (!why.empty()) {
    s.not_available.push_back({"/proc/interrupts", why});
  } else if (auto mce = parse_machine_checks(interrupts)) {
    s.machine_checks = std::move(*mce);
  } else {
    s.not_available.push_back({"/proc/interrupts MCE", "missing"});
  }
  read_cpus(root, s);
  if (s.frequency.empty()) {  // no cpufreq driver (a VM): the kernel's estimate per CPU
    std::string w;
    s.frequency = parse_cpuinfo_mhz(read_whole_file(root.proc + "/cpuinfo", w));
    if (s.frequency.empty())
      s.not_available.push_back({"CPU frequency (cpufreq scaling_cur_freq, /proc/cpuinfo cpu MHz)", "missing"});
  }
  read_hwmon(root, s);
  return s;
}

bool HostTelemetry::any_fatal() const {
  return std::any_of(events.begin(), events.end(), [](const HostEvent& e) { return e.fatal; });
}

std::string HostEvent::describe() const {
  const auto n = [](double v) { return fmt::format("{:.0f}", v); };
  if (kind == "edac_uncorrected")
    return fmt::format("uncorrected memory error during the run: EDAC memory controller {} ue_count {} -> {}", unit,
                       n(before), n(after));
  if (kind == "edac_corrected")
    return fmt::format("corrected memory errors during the run: EDAC memory controller {} ce_count {} -> {}", unit,
                       n(before), n(after));
  if (kind == "machine_check")
    return fmt::format("machine-check exception (an uncorrected hardware error) during the run on {}: {} -> {}", unit,
                       n(before), n(after));
  if (kind == "core_throttle" || kind == "package_throttle")
    return fmt::format("thermal throttling during the run on {}: {}_count {} -> {}", unit,
                       kind == "core_throttle" ? "core_throttle" : "package_throttle", n(before), n(after));
  if (kind == "counter_reset")
    return fmt::format("{} went down during the run ({} -> {}): reset, so errors in between are not known", unit,
                       n(before), n(after));
  if (kind == "temperature_limit")
    return fmt::format("{} at {:.1f} C after the run, at or above its limit {:.1f} C", unit, after, before);
  return fmt::format("{} {}: {} -> {}", kind, unit, before, after);
}

std::vector<HostEvent> compare_telemetry(const TelemetrySnapshot& before, const TelemetrySnapshot& after) {
  std::vector<HostEvent> out;
  if (!before.taken || !after.taken) return out;
  // A counter that went up is an event; one that went down was reset (a driver reload, a write to
  // reset_counters), which hides what happened in between: said, never read as "no errors".
  const auto counter = [&out](const char* kind, const std::string& unit, const std::string& name,
                              const std::optional<uint64_t>& b, const std::optional<uint64_t>& a, bool fatal) {
    if (!b || !a || *a == *b) return;
    if (*a < *b)
      out.push_back({"counter_reset", unit + " " + name, static_cast<double>(*b), static_cast<double>(*a), false});
    else
      out.push_back({kind, unit, static_cast<double>(*b), static_cast<double>(*a), fatal});
  };
  for (const EdacCounts& a : after.edac)
    for (const EdacCounts& b : before.edac)
      if (a.controller == b.controller) {
        counter("edac_uncorrected", a.controller, "ue_count", b.uncorrected, a.uncorrected, true);
        counter("edac_corrected", a.controller, "ce_count", b.corrected, a.corrected, false);
      }
  for (const CpuCount& a : after.machine_checks)
    for (const CpuCount& b : before.machine_checks)
      if (a.cpu == b.cpu) counter("machine_check", unit_text(UnitName::of_cpu(a.cpu)), "MCE", b.count, a.count, true);
  for (const ThrottleCounts& a : after.throttle)
    for (const ThrottleCounts& b : before.throttle)
      if (a.cpu == b.cpu) {
        const std::string unit = unit_text(UnitName::of_cpu(a.cpu));
        counter("core_throttle", unit, "core_throttle_count", b.core, a.core, false);
        counter("package_throttle", unit, "package_throttle_count", b.package, a.package, false);
      }
  for (const Temperature& t : after.temperatures) {
    const std::optional<double> limit = t.max_c ? t.max_c : t.crit_c;
    if (limit && t.celsius >= *limit) out.push_back({"temperature_limit", t.sensor + " " + t.label, *limit, t.celsius});
  }
  return out;
}

}  // namespace sdc::host
