// What each GPU is and what state it was in around a screen, read through NVML (nvml.h): identity
// (serial, board part number, VBIOS, InfoROM, driver) and telemetry (ECC counts, retired pages, row
// remapping, GPU and memory temperatures, clocks, power, clock-throttle reasons, PCIe link) before and after the run and
// sampled every second during it, with the Xid events the driver raised meanwhile.
//
// Fail closed: a reading that could not be taken is absent (an empty optional, "") and named in
// not_available with why; it is never 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/host/host_state.h"

namespace sdc::host {

struct GpuIdentity {
  std::string serial, board_part_number, vbios, inforom, driver;  // "" = not available
  std::optional<bool> ecc_enabled;                                // current ECC mode
};

struct GpuSnapshot {
  bool taken = false;
  double unix_time = 0;
  std::optional<uint64_t> ecc_volatile_corrected, ecc_volatile_uncorrected;
  std::optional<uint64_t> ecc_aggregate_corrected, ecc_aggregate_uncorrected;
  std::optional<uint64_t> retired_pages_sbe, retired_pages_dbe;  // pages retired for single-bit / double-bit errors
  std::optional<bool> retired_pages_pending;
  std::optional<uint64_t> remapped_rows_correctable, remapped_rows_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<double> temperature_c;            // the GPU die
  std::optional<double> memory_temperature_c;     // the GPU's memory (HBM), where it has a sensor
  std::optional<uint32_t> sm_clock_mhz, memory_clock_mhz;
  std::optional<double> power_w;
  std::optional<uint64_t> throttle_reasons;  // NVML's clock event reason bits (throttle_reason_names)
  std::optional<uint32_t> pcie_generation, pcie_width;
  std::vector<Unavailable> not_available;
};

// One sample of the sampler thread (every second during the run): what a case beside it is judged by.
struct GpuSample {
  double unix_time = 0;
  std::optional<double> temperature_c;
  std::optional<uint64_t> throttle_reasons;
  std::optional<double> memory_temperature_c;
};

// What changed between the before and after readings, or happened during the run. severity:
//   failure: the GPU lost data or its hardware failed (an uncorrected ECC error, a retired page or remapped
//            row for an uncorrectable error, a failed remap, a hardware Xid: 48, 63, 64, 74, 79, 94, 95):
//            the run fails (exit 1) like a miscompare;
//   error:   an application-fault Xid (13, 31, 43): the driver killed work of this run on that GPU, so its
//            results cannot be trusted (exit 2 unless something failed);
//   info:    said, not judged (corrected ECC errors, other Xids, throttling).
struct GpuEvent {
  std::string kind;  // xid, ecc_uncorrected, ecc_corrected, retired_pages, row_remap_pending, row_remap_failed,
                     // row_remap, throttle
  std::string severity = "info";
  uint64_t xid = 0;  // kind xid
  double unix_time = 0;
  double before = 0, after = 0;
  std::string detail;  // "sw_thermal_slowdown, hw_slowdown"
  std::string describe() const;
};

struct GpuTelemetry {
  int device = -1;  // index into RunResult::devices
  std::string uuid, pci_bus_id;
  std::string not_matched;  // why NVML has no handle for this device ("" when matched)
  GpuIdentity identity;
  GpuSnapshot before, after;
  // Over before, the samples and after: the highest temperatures, power and clocks, and every throttle reason
  // seen (or-ed).
  GpuSnapshot peak;
  std::vector<GpuSample> samples;
  std::vector<GpuEvent> events;
  bool xid_events_watched = false;  // an event set took this GPU's Xid events
  bool any(const char* severity) const;
  // The causes of the worst severity, for the outputs' one-line verdicts: "Xid 79, ecc_uncorrected +1".
  std::string causes(const char* severity) const;
};

// What NVML said about the run's GPUs. available false: the library could not be loaded or initialized
// (why), and no GPU reading is taken; a screen goes on without them.
struct NvmlTelemetry {
  bool attempted = false;  // a GPU run looked for NVML
  bool available = false;
  std::string why, library;
  std::vector<GpuTelemetry> gpus;
  bool any(const char* severity) const;
  std::string causes(const char* severity) const;  // "cuda:0: Xid 79; cuda:1: ecc_uncorrected +1"
};

// The names of NVML's clock event reason bits ("gpu_idle", "sw_power_cap", "hw_slowdown", ...), comma
// separated; unknown bits as hex. "" for no bits.
std::string throttle_reason_names(uint64_t bits);
// A GPU this hot while it works is said beside its cases' throughput even without --max-temperature.
constexpr double GPU_HOT_C = 85;
// Reasons that slow a busy GPU down (not idle, not an application clock setting, not sync boost).
constexpr uint64_t THROTTLE_SLOWDOWN_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;
// The severity of an Xid: "failure" (hardware), "error" (an application fault), "info" (anything else).
const char* xid_severity(uint64_t xid);
// Events from the before and after snapshots (counter increases, remap state, throttling seen), appended
// to t.events; the Xid events the sampler recorded stay.
void compare_gpu(GpuTelemetry& t);
// Folds a snapshot's readings into peak.
void fold_peak(GpuSnapshot& peak, const GpuSnapshot& s);

}  // namespace sdc::host
