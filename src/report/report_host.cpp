#include "src/report/report_host.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "src/util/iso_time.h"

namespace sdc {
namespace {

using json = nlohmann::json;

json str_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
json int_or_null(int v, int absent) { return v == absent ? json(nullptr) : json(v); }
template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json unavailable_json(const std::vector<host::Unavailable>& list) {
  json a = json::array();
  for (const host::Unavailable& u : list) a.push_back({{"what", u.what}, {"why", u.why}});
  return a;
}

}  // namespace

json host_snapshot_json(const host::TelemetrySnapshot& s) {
  if (!s.taken) return nullptr;
  json j;
  j["time"] = iso_time(s.unix_time);
  j["edac"] = json::array();
  for (const host::EdacCounts& c : s.edac)
    j["edac"].push_back({{"controller", c.controller}, {"corrected", opt(c.corrected)}, {"uncorrected", opt(c.uncorrected)}});
  j["machine_checks"] = json::array();
  for (const host::CpuCount& c : s.machine_checks) j["machine_checks"].push_back({{"cpu", c.cpu}, {"count", c.count}});
  j["throttle"] = json::array();
  for (const host::ThrottleCounts& t : s.throttle)
    j["throttle"].push_back({{"cpu", t.cpu}, {"core", opt(t.core)}, {"package", opt(t.package)}});
  j["temperatures"] = json::array();
  for (const host::Temperature& t : s.temperatures)
    j["temperatures"].push_back({{"sensor", t.sensor},
                                 {"label", t.label},
                                 {"celsius", t.celsius},
                                 {"max_c", opt(t.max_c)},
                                 {"crit_c", opt(t.crit_c)}});
  j["frequency_mhz"] = json::array();
  for (const host::CpuFrequency& f : s.frequency) j["frequency_mhz"].push_back({{"cpu", f.cpu}, {"mhz", f.mhz}});
  j["not_available"] = unavailable_json(s.not_available);
  return j;
}

namespace {

std::string or_not_available(const std::string& s) { return s.empty() ? "not available" : s; }

// Prometheus label values: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) out += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  return out;
}

void gauge(std::string& out, const char* name, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
}

}  // namespace

json host_identity_json(const host::HostIdentity& id) {
  json ppin = json::array();
  for (const host::PackagePpin& p : id.cpu.ppin) ppin.push_back({{"package", p.package}, {"ppin", p.ppin}});
  const host::DmiIdentity& d = id.dmi;
  return {{"cpu",
           {{"vendor", str_or_null(id.cpu.vendor)},
            {"model_name", str_or_null(id.cpu.model_name)},
            {"family", int_or_null(id.cpu.family, -1)},
            {"model", int_or_null(id.cpu.model, -1)},
            {"stepping", int_or_null(id.cpu.stepping, -1)},
            {"microcode", str_or_null(id.cpu.microcode)},
            {"sockets", int_or_null(id.cpu.sockets, 0)},
            {"cores", int_or_null(id.cpu.cores, 0)},
            {"threads", int_or_null(id.cpu.threads, 0)},
            {"ppin", ppin}}},
          {"bios", {{"vendor", str_or_null(d.bios_vendor)}, {"version", str_or_null(d.bios_version)}, {"date", str_or_null(d.bios_date)}}},
          {"board", {{"vendor", str_or_null(d.board_vendor)}, {"name", str_or_null(d.board_name)}, {"serial", str_or_null(d.board_serial)}}},
          {"system",
           {{"vendor", str_or_null(d.system_vendor)}, {"product", str_or_null(d.system_product)}, {"serial", str_or_null(d.system_serial)}}},
          {"kernel", str_or_null(id.kernel)},
          {"not_available", unavailable_json(id.not_available)}};
}

json host_telemetry_json(const host::HostTelemetry& t) {
  json events = json::array();
  for (const host::HostEvent& e : t.events)
    events.push_back({{"kind", e.kind},
                      {"unit", e.unit},
                      {"before", e.before},
                      {"after", e.after},
                      {"fatal", e.fatal},
                      {"description", e.describe()}});
  json peak = nullptr;
  if (t.peak)
    peak = {{"sensor", t.peak->hottest.sensor},
            {"label", t.peak->hottest.label},
            {"celsius", t.peak->hottest.celsius},
            {"time", t.peak->unix_time}};
  return {{"before", host_snapshot_json(t.before)},
          {"after", host_snapshot_json(t.after)},
          {"samples", t.samples.size()},
          {"peak_temperature", peak},
          {"events", events},
          {"uncorrected_errors", t.any_fatal()},
          {"drill", str_or_null(t.drill)}};
}

std::string host_identity_text(const host::HostIdentity& id) {
  const host::CpuIdentity& c = id.cpu;
  const host::DmiIdentity& d = id.dmi;
  std::string s = "host identity:\n";
  const auto num = [](int v, int absent) { return v == absent ? std::string("?") : std::to_string(v); };
  s += fmt::format("  cpu       {} ({}, family {} model {} stepping {}, microcode {})\n", or_not_available(c.model_name),
                   or_not_available(c.vendor), num(c.family, -1), num(c.model, -1), num(c.stepping, -1),
                   or_not_available(c.microcode));
  s += fmt::format("  topology  {} socket(s), {} core(s), {} thread(s)\n", num(c.sockets, 0), num(c.cores, 0),
                   num(c.threads, 0));
  std::string ppin;
  for (const host::PackagePpin& p : c.ppin) ppin += fmt::format("{}package {} {}", ppin.empty() ? "" : ", ", p.package, p.ppin);
  s += fmt::format("  ppin      {}\n", or_not_available(ppin));
  const auto join = [](std::initializer_list<std::string> parts) {
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : "  ") + or_not_available(p);
    return out;
  };
  s += fmt::format("  bios      {}\n", join({d.bios_vendor, d.bios_version, d.bios_date}));
  s += fmt::format("  board     {}  serial {}\n", join({d.board_vendor, d.board_name}), or_not_available(d.board_serial));
  s += fmt::format("  system    {}  serial {}\n", join({d.system_vendor, d.system_product}),
                   or_not_available(d.system_serial));
  s += fmt::format("  kernel    {}\n", or_not_available(id.kernel));
  for (const host::Unavailable& u : id.not_available) s += fmt::format("  not available: {}: {}\n", u.what, u.why);
  return s;
}

std::string host_telemetry_text(const host::HostTelemetry& t) {
  std::string s;
  if (!t.drill.empty()) s += fmt::format("TELEMETRY DRILL: {}; host errors below are a drill, not hardware\n", t.drill);
  for (const host::HostEvent& e : t.events)
    s += fmt::format("{}: {}\n", e.fatal ? "HOST ERROR" : "host", e.describe());
  if (!t.before.taken) return s;
  if (!t.after.taken) {
    s += "host telemetry: not read after the run\n";
  } else if (t.events.empty()) {
    s += "host telemetry: no counter that could be read changed during the run\n";
  }
  // What was not read is said, so that "nothing changed" is never read as "no errors" where nothing counts them.
  std::set<std::string> missing;
  for (const auto* snap : {&t.before, &t.after})
    for (const host::Unavailable& u : snap->not_available) missing.insert(u.what + ": " + u.why);
  for (const std::string& m : missing) s += fmt::format("  not available: {}\n", m);
  return s;
}

std::string host_prometheus(const host::HostTelemetry& t) {
  const host::TelemetrySnapshot& s = t.after.taken ? t.after : t.before;
  std::string out;
  if (!s.taken) return out;
  gauge(out, "sdcscreen_cpu_temperature_celsius", "CPU temperature by hwmon sensor and label, after the last screen.");
  for (const host::Temperature& x : s.temperatures)
    out += fmt::format("sdcscreen_cpu_temperature_celsius{{sensor=\"{}\",label=\"{}\"}} {:.1f}\n", label(x.sensor),
                       label(x.label), x.celsius);
  gauge(out, "sdcscreen_cpu_thermal_throttle_count",
        "The kernel's thermal-throttle count of a logical CPU (scope core or package), after the last screen.");
  for (const host::ThrottleCounts& c : s.throttle) {
    if (c.core) out += fmt::format("sdcscreen_cpu_thermal_throttle_count{{cpu=\"{}\",scope=\"core\"}} {}\n", c.cpu, *c.core);
    if (c.package)
      out += fmt::format("sdcscreen_cpu_thermal_throttle_count{{cpu=\"{}\",scope=\"package\"}} {}\n", c.cpu, *c.package);
  }
  gauge(out, "sdcscreen_edac_errors", "EDAC memory-controller error count (type corrected or uncorrected), after the last screen.");
  for (const host::EdacCounts& c : s.edac) {
    if (c.corrected) out += fmt::format("sdcscreen_edac_errors{{controller=\"{}\",type=\"corrected\"}} {}\n", label(c.controller), *c.corrected);
    if (c.uncorrected)
      out += fmt::format("sdcscreen_edac_errors{{controller=\"{}\",type=\"uncorrected\"}} {}\n", label(c.controller), *c.uncorrected);
  }
  gauge(out, "sdcscreen_edac_errors_during_run", "How much an EDAC error count grew during the last screen.");
  if (t.before.taken && t.after.taken)
    for (const host::EdacCounts& a : t.after.edac)
      for (const host::EdacCounts& b : t.before.edac) {
        if (a.controller != b.controller) continue;
        const auto grew = [](const std::optional<uint64_t>& x, const std::optional<uint64_t>& y) {
          return *y >= *x ? *y - *x : 0;
        };
        if (a.corrected && b.corrected)
          out += fmt::format("sdcscreen_edac_errors_during_run{{controller=\"{}\",type=\"corrected\"}} {}\n",
                             label(a.controller), grew(b.corrected, a.corrected));
        if (a.uncorrected && b.uncorrected)
          out += fmt::format("sdcscreen_edac_errors_during_run{{controller=\"{}\",type=\"uncorrected\"}} {}\n",
                             label(a.controller), grew(b.uncorrected, a.uncorrected));
      }
  gauge(out, "sdcscreen_host_uncorrected_errors",
        "1 when an uncorrected hardware error (EDAC, machine check) was counted during the last screen: it failed.");
  out += fmt::format("sdcscreen_host_uncorrected_errors {}\n", t.any_fatal() ? 1 : 0);
  return out;
}

std::string host_fatal_units(const host::HostTelemetry& t) {
  std::string out;
  for (const host::HostEvent& e : t.events) {
    if (!e.fatal) continue;
    std::string u = e.unit;
    u.erase(std::remove(u.begin(), u.end(), ' '), u.end());
    out += (out.empty() ? "" : ",") + u + (e.kind == "edac_uncorrected" ? " uncorrected memory error" : " machine check");
  }
  return out;
}

}  // namespace sdc
