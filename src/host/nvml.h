// NVML, loaded at run time (dlopen): the binary runs where the library is absent (a CPU node, a container
// without the driver's libraries), and then says "NVML not available" with why. An entry point a library
// lacks (an older driver) makes only the readings that need it "not available".
//
// Test path: SDCSCREEN_NVML_LIBRARY=FILE loads FILE instead of libnvidia-ml.so.1 (the test suite's fake
// library, tests/fake_nvml, which returns scripted values); the code path is otherwise the same.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/host/gpu_telemetry.h"
#include "src/host/nvml_api.h"
#include "src/host/periodic.h"

namespace sdc::host {

struct NvmlApi {
  nvmlInit_v2_t init = nullptr;
  nvmlShutdown_t shutdown = nullptr;
  nvmlErrorString_t error_string = nullptr;
  nvmlSystemGetDriverVersion_t driver_version = nullptr;
  nvmlDeviceGetHandleByUUID_t by_uuid = nullptr;
  nvmlDeviceGetHandleByPciBusId_v2_t by_pci = nullptr;
  nvmlDeviceGetString_t serial = nullptr, board_part_number = nullptr, vbios = nullptr, inforom = nullptr;
  nvmlDeviceGetEccMode_t ecc_mode = nullptr;
  nvmlDeviceGetTotalEccErrors_t total_ecc = nullptr;
  nvmlDeviceGetRetiredPages_t retired_pages = nullptr;
  nvmlDeviceGetRetiredPagesPendingStatus_t retired_pending = nullptr;
  nvmlDeviceGetRemappedRows_t remapped_rows = nullptr;
  nvmlDeviceGetTemperature_t temperature = nullptr;
  nvmlDeviceGetClockInfo_t clock = nullptr;
  nvmlDeviceGetUInt_t power = nullptr, pcie_gen = nullptr, pcie_width = nullptr;
  nvmlDeviceGetClockReasons_t clock_reasons = nullptr;  // ...EventReasons, or the older ...ThrottleReasons
  nvmlDeviceGetFieldValues_t field_values = nullptr;    // memory temperature
  nvmlEventSetCreate_t event_set_create = nullptr;
  nvmlDeviceRegisterEvents_t register_events = nullptr;
  nvmlEventSetWait_v2_t event_wait = nullptr;
  nvmlEventSetFree_t event_set_free = nullptr;
};

// A field value's number whatever its valueType; nullopt for a type NVML does not define.
std::optional<double> field_value_number(const nvmlFieldValue_t& v);

class Nvml {
 public:
  // The library (SDCSCREEN_NVML_LIBRARY, else libnvidia-ml.so.1), loaded and initialized; nullptr and why
  // when it cannot be loaded, lacks nvmlInit_v2 or fails to initialize.
  static std::unique_ptr<Nvml> open(std::string& why);
  ~Nvml();  // nvmlShutdown
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& library() const { return library_; }
  const NvmlApi& api() const { return api_; }
  // "NVML_ERROR_NOT_SUPPORTED"-like text for a return code, from the library where it has nvmlErrorString.
  std::string error(nvmlReturn_t r) const;
  // The handle of a run's GPU, by UUID, else by PCI bus id; nullptr and why.
  nvmlDevice_t find(const std::string& uuid, const std::string& pci_bus_id, std::string& why) const;
  GpuIdentity identity(nvmlDevice_t d, std::vector<Unavailable>& not_available) const;
  GpuSnapshot snapshot(nvmlDevice_t d, double unix_time) const;

 private:
  Nvml() = default;
  void* dl_ = nullptr;
  std::string library_;
  NvmlApi api_;
};

// Reads every matched GPU of t once a second on its own thread, from construction until stop() (or the
// destructor: every way out of a screen, an exception or a signal's orderly stop included, ends it), and
// collects their Xid events. t.gpus[i].samples, .events and .peak are written by that thread alone while it
// runs; read them after stop().
class GpuSampler {
 public:
  GpuSampler(const Nvml& nvml, NvmlTelemetry& t, std::vector<nvmlDevice_t> handles, double interval_s = 1.0);
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  void stop();
  bool running() const { return clock_.running(); }
  // Sampler threads alive in this process (tests: 0 after every exit path).
  static int live();

 private:
  void sample_once();
  void drain_events();
  const Nvml& nvml_;
  NvmlTelemetry& t_;
  std::vector<nvmlDevice_t> handles_;
  nvmlEventSet_t events_ = nullptr;
  PeriodicThread clock_;
  static std::atomic<int> live_;
};

// The identity and the before reading of each of a run's GPUs (by UUID or PCI bus id); handles[i] is the
// NVML handle of t.gpus[i] (nullptr when not matched).
void read_gpus_before(const Nvml& nvml, NvmlTelemetry& t, std::vector<nvmlDevice_t>& handles);
// The after reading and the events (compare_gpu), once the sampler has stopped.
void read_gpus_after(const Nvml& nvml, NvmlTelemetry& t, const std::vector<nvmlDevice_t>& handles);

}  // namespace sdc::host
