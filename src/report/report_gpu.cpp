#include "src/report/report_gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "src/core/unit_name.h"

namespace sdc {
namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json snapshot_json(const host::GpuSnapshot& s) {
  if (!s.taken) return nullptr;
  json na = json::array();
  for (const host::Unavailable& u : s.not_available) na.push_back({{"what", u.what}, {"why", u.why}});
  return {{"time", s.unix_time},
          {"ecc_volatile_corrected", opt(s.ecc_volatile_corrected)},
          {"ecc_volatile_uncorrected", opt(s.ecc_volatile_uncorrected)},
          {"ecc_aggregate_corrected", opt(s.ecc_aggregate_corrected)},
          {"ecc_aggregate_uncorrected", opt(s.ecc_aggregate_uncorrected)},
          {"retired_pages_sbe", opt(s.retired_pages_sbe)},
          {"retired_pages_dbe", opt(s.retired_pages_dbe)},
          {"retired_pages_pending", opt(s.retired_pages_pending)},
          {"remapped_rows_correctable", opt(s.remapped_rows_correctable)},
          {"remapped_rows_uncorrectable", opt(s.remapped_rows_uncorrectable)},
          {"remap_pending", opt(s.remap_pending)},
          {"remap_failed", opt(s.remap_failed)},
          {"temperature_c", opt(s.temperature_c)},
          {"memory_temperature_c", opt(s.memory_temperature_c)},
          {"sm_clock_mhz", opt(s.sm_clock_mhz)},
          {"memory_clock_mhz", opt(s.memory_clock_mhz)},
          {"power_w", opt(s.power_w)},
          {"throttle_reasons", s.throttle_reasons ? json(host::throttle_reason_names(*s.throttle_reasons)) : json(nullptr)},
          {"pcie_generation", opt(s.pcie_generation)},
          {"pcie_width", opt(s.pcie_width)},
          {"not_available", na}};
}

std::string label(const std::string& v) {
  std::string out;
  for (char c : v) out += c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : std::string(1, c);
  return out;
}

}  // namespace

json nvml_json(const host::NvmlTelemetry& t) {
  if (!t.attempted) return nullptr;
  return {{"available", t.available}, {"why", t.why}, {"library", t.library}};
}

json gpu_telemetry_json(const host::NvmlTelemetry& t, int device) {
  if (!t.attempted) return nullptr;
  for (const host::GpuTelemetry& g : t.gpus) {
    if (g.device != device) continue;
    json events = json::array();
    for (const host::GpuEvent& e : g.events) {
      json je = {{"kind", e.kind}, {"severity", e.severity}, {"time", e.unix_time}, {"text", e.describe()}};
      if (e.kind == "xid") je["xid"] = e.xid;
      events.push_back(je);
    }
    const host::GpuIdentity& id = g.identity;
    return {{"matched", g.not_matched.empty()},
            {"not_matched", g.not_matched},
            {"identity",
             {{"serial", id.serial},
              {"board_part_number", id.board_part_number},
              {"vbios", id.vbios},
              {"inforom", id.inforom},
              {"driver", id.driver},
              {"ecc_enabled", opt(id.ecc_enabled)}}},
            {"before", snapshot_json(g.before)},
            {"after", snapshot_json(g.after)},
            {"peak", g.peak.taken ? json({{"temperature_c", opt(g.peak.temperature_c)},
                                          {"memory_temperature_c", opt(g.peak.memory_temperature_c)},
                                          {"power_w", opt(g.peak.power_w)},
                                          {"sm_clock_mhz", opt(g.peak.sm_clock_mhz)},
                                          {"memory_clock_mhz", opt(g.peak.memory_clock_mhz)},
                                          {"throttle_reasons", g.peak.throttle_reasons
                                                                   ? json(host::throttle_reason_names(*g.peak.throttle_reasons))
                                                                   : json(nullptr)}})
                                  : json(nullptr)},
            {"samples", g.samples.size()},
            {"xid_events_watched", g.xid_events_watched},
            {"events", events}};
  }
  return {{"matched", false}, {"not_matched", t.available ? "not looked up" : "NVML not available: " + t.why}};
}

std::string gpu_telemetry_text(const host::NvmlTelemetry& t, double max_temperature_c) {
  if (!t.attempted) return "";
  if (!t.available) return fmt::format("gpu telemetry: NVML not available: {}\n", t.why);
  std::string s;
  for (const host::GpuTelemetry& g : t.gpus) {
    if (!g.not_matched.empty()) {
      s += fmt::format("{}: not found by NVML ({})\n", unit_text(UnitName::of_gpu(g.device), g.uuid), g.not_matched);
      continue;
    }
    const host::GpuIdentity& id = g.identity;
    const auto v = [](const std::string& x) { return x.empty() ? std::string("n/a") : x; };
    s += fmt::format("{}: serial {}  part {}  vbios {}  inforom {}  driver {}", unit_text(UnitName::of_gpu(g.device), g.uuid),
                     v(id.serial), v(id.board_part_number), v(id.vbios), v(id.inforom), v(id.driver));
    if (g.before.pcie_generation && g.before.pcie_width)
      s += fmt::format("  pcie gen{} x{}", *g.before.pcie_generation, *g.before.pcie_width);
    s += "\n";
    // Only what crossed a limit: a peak at or above the hot mark (85 C) or --max-temperature, for the GPU die
    // and for its memory.
    const double limit = max_temperature_c > 0 ? std::min(max_temperature_c, host::GPU_HOT_C) : host::GPU_HOT_C;
    const auto above = [&](double c) {
      return max_temperature_c > 0 && c > max_temperature_c
                 ? fmt::format(" (above --max-temperature {:.0f} C)", max_temperature_c)
                 : std::string();
    };
    if (g.peak.temperature_c && *g.peak.temperature_c >= limit)
      s += fmt::format("  hot: peak {:.0f} C{}{}\n", *g.peak.temperature_c,
                       g.peak.power_w ? fmt::format(", {:.0f} W", *g.peak.power_w) : "", above(*g.peak.temperature_c));
    if (g.peak.memory_temperature_c && *g.peak.memory_temperature_c >= limit)
      s += fmt::format("  hot memory: peak {:.0f} C{}\n", *g.peak.memory_temperature_c,
                       above(*g.peak.memory_temperature_c));
    for (const host::GpuEvent& e : g.events)
      s += fmt::format("  {}: {}\n", e.severity == "info" ? "note" : e.severity == "failure" ? "FAIL" : "ERROR",
                       e.describe());
    if (!g.xid_events_watched) s += "  Xid events: not available (no NVML event set)\n";
    if (!g.before.not_available.empty()) {
      std::string names;
      for (const host::Unavailable& u : g.before.not_available) names += (names.empty() ? "" : ", ") + u.what;
      s += fmt::format("  not available: {}\n", names);
    }
  }
  return s;
}

std::string gpu_prometheus(const host::NvmlTelemetry& t) {
  std::string out;
  if (!t.available) return out;
  const auto gauge = [&out](const char* name, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
  };
  gauge("sdcscreen_gpu_temperature_celsius", "GPU temperature through NVML (peak during the last screen).");
  for (const host::GpuTelemetry& g : t.gpus)
    if (g.peak.temperature_c)
      out += fmt::format("sdcscreen_gpu_temperature_celsius{{uuid=\"{}\"}} {:.0f}\n", label(g.uuid), *g.peak.temperature_c);
  gauge("sdcscreen_gpu_memory_temperature_celsius",
        "GPU memory (HBM) temperature through NVML (peak during the last screen); absent where the GPU has no memory sensor.");
  for (const host::GpuTelemetry& g : t.gpus)
    if (g.peak.memory_temperature_c)
      out += fmt::format("sdcscreen_gpu_memory_temperature_celsius{{uuid=\"{}\"}} {:.0f}\n", label(g.uuid),
                         *g.peak.memory_temperature_c);
  gauge("sdcscreen_gpu_throttled", "1 when the GPU's clocks were slowed down (power, thermal, hardware) during the last screen.");
  for (const host::GpuTelemetry& g : t.gpus)
    if (g.peak.throttle_reasons)
      out += fmt::format("sdcscreen_gpu_throttled{{uuid=\"{}\"}} {}\n", label(g.uuid),
                         (*g.peak.throttle_reasons & host::THROTTLE_SLOWDOWN_MASK) ? 1 : 0);
  gauge("sdcscreen_gpu_ecc_errors", "GPU ECC error count through NVML (counter volatile or aggregate, type corrected or uncorrected), after the last screen.");
  for (const host::GpuTelemetry& g : t.gpus) {
    const host::GpuSnapshot& s = g.after;
    for (const auto& [c, ty, v] : {std::tuple{"volatile", "corrected", s.ecc_volatile_corrected},
                                   std::tuple{"volatile", "uncorrected", s.ecc_volatile_uncorrected},
                                   std::tuple{"aggregate", "corrected", s.ecc_aggregate_corrected},
                                   std::tuple{"aggregate", "uncorrected", s.ecc_aggregate_uncorrected}})
      if (v) out += fmt::format("sdcscreen_gpu_ecc_errors{{uuid=\"{}\",counter=\"{}\",type=\"{}\"}} {}\n", label(g.uuid), c, ty, *v);
  }
  gauge("sdcscreen_gpu_xid_events", "Xid events the driver raised for the GPU during the last screen.");
  for (const host::GpuTelemetry& g : t.gpus)
    if (g.xid_events_watched) {
      size_t n = 0;
      for (const host::GpuEvent& e : g.events) n += e.kind == "xid";
      out += fmt::format("sdcscreen_gpu_xid_events{{uuid=\"{}\"}} {}\n", label(g.uuid), n);
    }
  return out;
}

}  // namespace sdc
