#include "src/host/gpu_telemetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "src/core/unit_name.h"

namespace sdc::host {

std::string throttle_reason_names(uint64_t bits) {
  // NVML's nvmlClocksEventReason* bits, as nvidia-smi -q names them (lower case).
  static constexpr std::pair<uint64_t, const char*> NAMES[] = {
      {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},  {0x100, "display_clock_setting"}};
  std::string s;
  uint64_t known = 0;
  for (const auto& [bit, name] : NAMES) {
    known |= bit;
    if (bits & bit) s += (s.empty() ? "" : ", ") + std::string(name);
  }
  if (bits & ~known) s += fmt::format("{}0x{:x}", s.empty() ? "" : ", ", bits & ~known);
  return s;
}

const char* xid_severity(uint64_t xid) {
  switch (xid) {
    case 48: case 63: case 64: case 74: case 79: case 94: case 95:  // ECC DBE, row remap, NVLink, fell off the bus,
      return "failure";                                             // contained/uncontained ECC
    case 13: case 31: case 43:  // graphics engine exception, MMU fault, channel stopped: work of this run killed
      return "error";
    default:
      return "info";
  }
}

std::string GpuEvent::describe() const {
  if (kind == "xid") return fmt::format("Xid {}", xid);
  if (kind == "throttle") return fmt::format("throttled ({})", detail);
  if (kind == "row_remap_pending" || kind == "row_remap_failed") return kind;
  return fmt::format("{} +{:.0f} ({:.0f} -> {:.0f})", kind, after - before, before, after);
}

bool GpuTelemetry::any(const char* severity) const {
  return std::any_of(events.begin(), events.end(), [&](const GpuEvent& e) { return e.severity == severity; });
}

std::string GpuTelemetry::causes(const char* severity) const {
  std::string s;
  for (const GpuEvent& e : events)
    if (e.severity == severity) s += (s.empty() ? "" : ", ") + e.describe();
  return s;
}

bool NvmlTelemetry::any(const char* severity) const {
  return std::any_of(gpus.begin(), gpus.end(), [&](const GpuTelemetry& g) { return g.any(severity); });
}

std::string NvmlTelemetry::causes(const char* severity) const {
  std::string s;
  for (const GpuTelemetry& g : gpus)
    if (g.any(severity)) s += fmt::format("{}{}: {}", s.empty() ? "" : "; ", unit_text(UnitName::of_gpu(g.device), g.uuid),
                                        g.causes(severity));
  return s;
}

namespace {

template <typename T>
void raise_to(std::optional<T>& peak, const std::optional<T>& v) {
  if (v && (!peak || *v > *peak)) peak = v;
}

// A counter that rose: an event of that severity. A counter that fell (a driver reload resets the volatile
// ones) is said as such: nothing is concluded from it.
void counter(GpuTelemetry& t, const std::optional<uint64_t>& b, const std::optional<uint64_t>& a, const char* kind,
             const char* severity) {
  if (!b || !a || *a == *b) return;
  GpuEvent e;
  e.kind = *a > *b ? kind : "counter_reset";
  e.severity = *a > *b ? severity : "info";
  e.before = static_cast<double>(*b);
  e.after = static_cast<double>(*a);
  e.unix_time = t.after.unix_time;
  if (*a < *b) e.detail = kind;
  t.events.push_back(e);
}

}  // namespace

void fold_peak(GpuSnapshot& peak, const GpuSnapshot& s) {
  if (!s.taken) return;
  peak.taken = true;
  peak.unix_time = std::max(peak.unix_time, s.unix_time);
  raise_to(peak.temperature_c, s.temperature_c);
  raise_to(peak.memory_temperature_c, s.memory_temperature_c);
  raise_to(peak.power_w, s.power_w);
  raise_to(peak.sm_clock_mhz, s.sm_clock_mhz);
  raise_to(peak.memory_clock_mhz, s.memory_clock_mhz);
  if (s.throttle_reasons) peak.throttle_reasons = peak.throttle_reasons.value_or(0) | *s.throttle_reasons;
}

void compare_gpu(GpuTelemetry& t) {
  const GpuSnapshot &b = t.before, &a = t.after;
  if (!b.taken || !a.taken) return;
  // The volatile counts are the run's (since the driver loaded); the aggregate ones persist in the InfoROM and
  // are updated by the driver later, so an increase there is said but only the volatile one is judged when both
  // were read. A GPU that reports only aggregate counts is judged on those.
  counter(t, b.ecc_volatile_uncorrected, a.ecc_volatile_uncorrected, "ecc_uncorrected", "failure");
  counter(t, b.ecc_volatile_corrected, a.ecc_volatile_corrected, "ecc_corrected", "info");
  const bool volatile_read = b.ecc_volatile_uncorrected && a.ecc_volatile_uncorrected;
  counter(t, b.ecc_aggregate_uncorrected, a.ecc_aggregate_uncorrected, "ecc_aggregate_uncorrected",
          volatile_read ? "info" : "failure");
  counter(t, b.ecc_aggregate_corrected, a.ecc_aggregate_corrected, "ecc_aggregate_corrected", "info");
  counter(t, b.retired_pages_dbe, a.retired_pages_dbe, "retired_pages_dbe", "failure");
  counter(t, b.retired_pages_sbe, a.retired_pages_sbe, "retired_pages_sbe", "info");
  counter(t, b.remapped_rows_uncorrectable, a.remapped_rows_uncorrectable, "remapped_rows_uncorrectable", "failure");
  counter(t, b.remapped_rows_correctable, a.remapped_rows_correctable, "remapped_rows_correctable", "info");
  if (a.remap_failed.value_or(false) && !b.remap_failed.value_or(false))
    t.events.push_back({"row_remap_failed", "failure", 0, a.unix_time, 0, 1, ""});
  if (a.remap_pending.value_or(false) && !b.remap_pending.value_or(false))
    t.events.push_back({"row_remap_pending", "info", 0, a.unix_time, 0, 1, "a GPU reset applies it"});
  // Throttling seen at any reading: slowdown reasons only (an idle GPU's clocks are not news).
  if (const uint64_t slow = t.peak.throttle_reasons.value_or(0) & THROTTLE_SLOWDOWN_MASK)
    t.events.push_back({"throttle", "info", 0, a.unix_time, 0, 0, throttle_reason_names(slow)});
}

}  // namespace sdc::host
