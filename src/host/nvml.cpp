#include "src/host/nvml.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <tuple>

namespace sdc::host {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

template <typename F>
void bind(void* dl, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(dl, name));
}

}  // namespace

std::atomic<int> GpuSampler::live_{0};

std::optional<double> field_value_number(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return v.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return static_cast<double>(v.value.uiVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return static_cast<double>(v.value.siVal);
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return static_cast<double>(v.value.usVal);
    default: return std::nullopt;
  }
}

std::unique_ptr<Nvml> Nvml::open(std::string& why) {
  const char* env = std::getenv("SDCSCREEN_NVML_LIBRARY");
  const std::string name = env && *env ? env : "libnvidia-ml.so.1";
  // RTLD_NODELETE: the driver's library may keep threads of its own; its code must stay mapped after dlclose.
  void* dl = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!dl) {
    const char* e = dlerror();
    why = fmt::format("{} could not be loaded ({})", name, e ? e : "unknown error");
    return nullptr;
  }
  std::unique_ptr<Nvml> n(new Nvml());
  n->dl_ = dl;
  n->library_ = name;
  NvmlApi& a = n->api_;
  bind(dl, a.init, "nvmlInit_v2");
  bind(dl, a.shutdown, "nvmlShutdown");
  bind(dl, a.error_string, "nvmlErrorString");
  bind(dl, a.driver_version, "nvmlSystemGetDriverVersion");
  bind(dl, a.by_uuid, "nvmlDeviceGetHandleByUUID");
  bind(dl, a.by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(dl, a.serial, "nvmlDeviceGetSerial");
  bind(dl, a.board_part_number, "nvmlDeviceGetBoardPartNumber");
  bind(dl, a.vbios, "nvmlDeviceGetVbiosVersion");
  bind(dl, a.inforom, "nvmlDeviceGetInforomImageVersion");
  bind(dl, a.ecc_mode, "nvmlDeviceGetEccMode");
  bind(dl, a.total_ecc, "nvmlDeviceGetTotalEccErrors");
  bind(dl, a.retired_pages, "nvmlDeviceGetRetiredPages");
  bind(dl, a.retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
  bind(dl, a.remapped_rows, "nvmlDeviceGetRemappedRows");
  bind(dl, a.temperature, "nvmlDeviceGetTemperature");
  bind(dl, a.clock, "nvmlDeviceGetClockInfo");
  bind(dl, a.power, "nvmlDeviceGetPowerUsage");
  bind(dl, a.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
  bind(dl, a.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  // Renamed in driver 535; older drivers have only the throttle name, newer ones keep it as an alias.
  bind(dl, a.clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!a.clock_reasons) bind(dl, a.clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(dl, a.field_values, "nvmlDeviceGetFieldValues");  // driver 361 on
  bind(dl, a.event_set_create, "nvmlEventSetCreate");
  bind(dl, a.register_events, "nvmlDeviceRegisterEvents");
  bind(dl, a.event_wait, "nvmlEventSetWait_v2");
  bind(dl, a.event_set_free, "nvmlEventSetFree");
  if (!a.init || !a.shutdown) {
    why = fmt::format("{} has no nvmlInit_v2/nvmlShutdown", name);
    a.shutdown = nullptr;  // nothing to shut down
    return nullptr;
  }
  if (const nvmlReturn_t r = a.init(); r != NVML_SUCCESS) {
    why = fmt::format("nvmlInit_v2: {}", n->error(r));
    a.shutdown = nullptr;
    return nullptr;
  }
  return n;
}

Nvml::~Nvml() {
  if (api_.shutdown) api_.shutdown();
  if (dl_) dlclose(dl_);
}

std::string Nvml::error(nvmlReturn_t r) const {
  const char* s = api_.error_string ? api_.error_string(r) : nullptr;
  return s ? fmt::format("{} ({})", s, r) : fmt::format("NVML error {}", r);
}

nvmlDevice_t Nvml::find(const std::string& uuid, const std::string& pci_bus_id, std::string& why) const {
  nvmlDevice_t d = nullptr;
  std::string tried;
  if (api_.by_uuid && !uuid.empty()) {
    if (const nvmlReturn_t r = api_.by_uuid(uuid.c_str(), &d); r == NVML_SUCCESS && d) return d;
    else tried = fmt::format("UUID {}: {}", uuid, error(r));
  }
  if (api_.by_pci && !pci_bus_id.empty()) {
    if (const nvmlReturn_t r = api_.by_pci(pci_bus_id.c_str(), &d); r == NVML_SUCCESS && d) return d;
    else tried += fmt::format("{}PCI bus id {}: {}", tried.empty() ? "" : "; ", pci_bus_id, error(r));
  }
  why = tried.empty() ? "the library can look a GPU up neither by UUID nor by PCI bus id" : tried;
  return nullptr;
}

namespace {

// Runs one reading: its value, or an entry in not_available naming the call and why.
struct Reader {
  const Nvml& nvml;
  std::vector<Unavailable>& na;
  bool ok(const void* fn, const char* what, const char* call, const std::function<nvmlReturn_t()>& run) {
    if (!fn) {
      na.push_back({what, fmt::format("{} not in the library (an older driver)", call)});
      return false;
    }
    if (const nvmlReturn_t r = run(); r != NVML_SUCCESS) {
      na.push_back({what, fmt::format("{}: {}", call, nvml.error(r))});
      return false;
    }
    return true;
  }
  std::string text(nvmlDeviceGetString_t fn, nvmlDevice_t d, const char* what, const char* call) {
    char buf[96] = {};
    return ok(reinterpret_cast<const void*>(fn), what, call, [&] { return fn(d, buf, sizeof buf); }) ? buf : "";
  }
};

}  // namespace

GpuIdentity Nvml::identity(nvmlDevice_t d, std::vector<Unavailable>& not_available) const {
  Reader rd{*this, not_available};
  GpuIdentity id;
  id.serial = rd.text(api_.serial, d, "serial", "nvmlDeviceGetSerial");
  id.board_part_number = rd.text(api_.board_part_number, d, "board_part_number", "nvmlDeviceGetBoardPartNumber");
  id.vbios = rd.text(api_.vbios, d, "vbios", "nvmlDeviceGetVbiosVersion");
  id.inforom = rd.text(api_.inforom, d, "inforom", "nvmlDeviceGetInforomImageVersion");
  char buf[96] = {};
  if (rd.ok(reinterpret_cast<const void*>(api_.driver_version), "driver", "nvmlSystemGetDriverVersion",
            [&] { return api_.driver_version(buf, sizeof buf); }))
    id.driver = buf;
  int current = 0, pending = 0;
  if (rd.ok(reinterpret_cast<const void*>(api_.ecc_mode), "ecc_mode", "nvmlDeviceGetEccMode",
            [&] { return api_.ecc_mode(d, &current, &pending); }))
    id.ecc_enabled = current != 0;
  return id;
}

GpuSnapshot Nvml::snapshot(nvmlDevice_t d, double unix_time) const {
  GpuSnapshot s;
  s.taken = true;
  s.unix_time = unix_time;
  Reader rd{*this, s.not_available};
  // The temperature first: the tests' fake library counts a reading from this call.
  unsigned int temp = 0;
  if (rd.ok(reinterpret_cast<const void*>(api_.temperature), "temperature", "nvmlDeviceGetTemperature",
            [&] { return api_.temperature(d, NVML_TEMPERATURE_GPU, &temp); }))
    s.temperature_c = temp;
  const auto* ecc = reinterpret_cast<const void*>(api_.total_ecc);
  unsigned long long v = 0;
  const auto ecc_count = [&](std::optional<uint64_t>& out, unsigned type, unsigned counter, const char* what) {
    if (rd.ok(ecc, what, "nvmlDeviceGetTotalEccErrors", [&] { return api_.total_ecc(d, type, counter, &v); })) out = v;
  };
  ecc_count(s.ecc_volatile_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, "ecc_volatile_corrected");
  ecc_count(s.ecc_volatile_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
            "ecc_volatile_uncorrected");
  ecc_count(s.ecc_aggregate_corrected, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, "ecc_aggregate_corrected");
  ecc_count(s.ecc_aggregate_uncorrected, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC,
            "ecc_aggregate_uncorrected");
  // Retired pages: a count query (no address buffer); INSUFFICIENT_SIZE also carries the count.
  for (const auto& [cause, out, what] :
       {std::tuple{NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &s.retired_pages_sbe, "retired_pages_sbe"},
        std::tuple{NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &s.retired_pages_dbe, "retired_pages_dbe"}}) {
    unsigned int count = 0;
    if (!api_.retired_pages) {
      s.not_available.push_back({what, "nvmlDeviceGetRetiredPages not in the library (an older driver)"});
    } else if (const nvmlReturn_t r = api_.retired_pages(d, cause, &count, nullptr);
               r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
      *out = count;
    } else {
      s.not_available.push_back({what, fmt::format("nvmlDeviceGetRetiredPages: {}", error(r))});
    }
  }
  int pending = 0;
  if (rd.ok(reinterpret_cast<const void*>(api_.retired_pending), "retired_pages_pending",
            "nvmlDeviceGetRetiredPagesPendingStatus", [&] { return api_.retired_pending(d, &pending); }))
    s.retired_pages_pending = pending != 0;
  unsigned int corr = 0, unc = 0, rpending = 0, failed = 0;
  if (rd.ok(reinterpret_cast<const void*>(api_.remapped_rows), "remapped_rows", "nvmlDeviceGetRemappedRows",
            [&] { return api_.remapped_rows(d, &corr, &unc, &rpending, &failed); })) {
    s.remapped_rows_correctable = corr;
    s.remapped_rows_uncorrectable = unc;
    s.remap_pending = rpending != 0;
    s.remap_failed = failed != 0;
  }
  unsigned int u = 0;
  if (rd.ok(reinterpret_cast<const void*>(api_.clock), "sm_clock", "nvmlDeviceGetClockInfo",
            [&] { return api_.clock(d, NVML_CLOCK_SM, &u); }))
    s.sm_clock_mhz = u;
  if (rd.ok(reinterpret_cast<const void*>(api_.clock), "memory_clock", "nvmlDeviceGetClockInfo",
            [&] { return api_.clock(d, NVML_CLOCK_MEM, &u); }))
    s.memory_clock_mhz = u;
  if (rd.ok(reinterpret_cast<const void*>(api_.power), "power", "nvmlDeviceGetPowerUsage",
            [&] { return api_.power(d, &u); }))
    s.power_w = u / 1000.0;  // milliwatts
  if (rd.ok(reinterpret_cast<const void*>(api_.clock_reasons), "throttle_reasons",
            "nvmlDeviceGetCurrentClocksEventReasons", [&] { return api_.clock_reasons(d, &v); }))
    s.throttle_reasons = v;
  if (rd.ok(reinterpret_cast<const void*>(api_.pcie_gen), "pcie_generation", "nvmlDeviceGetCurrPcieLinkGeneration",
            [&] { return api_.pcie_gen(d, &u); }))
    s.pcie_generation = u;
  if (rd.ok(reinterpret_cast<const void*>(api_.pcie_width), "pcie_width", "nvmlDeviceGetCurrPcieLinkWidth",
            [&] { return api_.pcie_width(d, &u); }))
    s.pcie_width = u;
  // The memory (HBM) temperature: NVML's field-value API. A GPU without a memory sensor (GDDR boards) answers
  // NOT_SUPPORTED in the field's own result: not available, never 0.
  nvmlFieldValue_t fv{};
  fv.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  if (rd.ok(reinterpret_cast<const void*>(api_.field_values), "memory_temperature",
            "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)", [&] { return api_.field_values(d, 1, &fv); })) {
    if (fv.nvmlReturn != NVML_SUCCESS)
      s.not_available.push_back(
          {"memory_temperature", fmt::format("nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP): {}", error(fv.nvmlReturn))});
    else if (const std::optional<double> c = field_value_number(fv))
      s.memory_temperature_c = *c;
    else
      s.not_available.push_back(
          {"memory_temperature", fmt::format("nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP): unknown value type {}",
                                             fv.valueType)});
  }
  return s;
}

void read_gpus_before(const Nvml& nvml, NvmlTelemetry& t, std::vector<nvmlDevice_t>& handles) {
  handles.assign(t.gpus.size(), nullptr);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    GpuTelemetry& g = t.gpus[i];
    handles[i] = nvml.find(g.uuid, g.pci_bus_id, g.not_matched);
    if (!handles[i]) continue;
    g.identity = nvml.identity(handles[i], g.before.not_available);
    std::vector<Unavailable> id_na = std::move(g.before.not_available);
    g.before = nvml.snapshot(handles[i], now_unix());
    g.before.not_available.insert(g.before.not_available.begin(), id_na.begin(), id_na.end());
    fold_peak(g.peak, g.before);
  }
}

void read_gpus_after(const Nvml& nvml, NvmlTelemetry& t, const std::vector<nvmlDevice_t>& handles) {
  for (size_t i = 0; i < t.gpus.size() && i < handles.size(); ++i) {
    if (!handles[i]) continue;
    GpuTelemetry& g = t.gpus[i];
    g.after = nvml.snapshot(handles[i], now_unix());
    fold_peak(g.peak, g.after);
    compare_gpu(g);
  }
}

GpuSampler::GpuSampler(const Nvml& nvml, NvmlTelemetry& t, std::vector<nvmlDevice_t> handles, double interval_s)
    : nvml_(nvml), t_(t), handles_(std::move(handles)) {
  const NvmlApi& a = nvml_.api();
  if (a.event_set_create && a.register_events && a.event_wait && a.event_set_free &&
      a.event_set_create(&events_) == NVML_SUCCESS) {
    for (size_t i = 0; i < handles_.size() && i < t_.gpus.size(); ++i)
      if (handles_[i])
        t_.gpus[i].xid_events_watched =
            a.register_events(handles_[i], nvmlEventTypeXidCriticalError, events_) == NVML_SUCCESS;
  } else {
    events_ = nullptr;
  }
  ++live_;
  clock_.start(interval_s, [this] {
    drain_events();
    sample_once();
  });
}

GpuSampler::~GpuSampler() { stop(); }

int GpuSampler::live() { return live_.load(); }

void GpuSampler::stop() {
  if (!clock_.stop()) return;
  drain_events();  // what the driver raised since the last tick
  if (events_) nvml_.api().event_set_free(events_);
  events_ = nullptr;
  --live_;
}

void GpuSampler::sample_once() {
  const double t = now_unix();
  for (size_t i = 0; i < handles_.size() && i < t_.gpus.size(); ++i) {
    if (!handles_[i]) continue;
    GpuSnapshot s = nvml_.snapshot(handles_[i], t);
    fold_peak(t_.gpus[i].peak, s);
    t_.gpus[i].samples.push_back({t, s.temperature_c, s.throttle_reasons, s.memory_temperature_c});
  }
}

void GpuSampler::drain_events() {
  if (!events_) return;
  nvmlEventData_t e{};
  // Timeout 0: take what is queued, never block the stop.
  while (nvml_.api().event_wait(events_, &e, 0) == NVML_SUCCESS) {
    if (!(e.eventType & nvmlEventTypeXidCriticalError)) continue;
    for (size_t i = 0; i < handles_.size() && i < t_.gpus.size(); ++i)
      if (handles_[i] && handles_[i] == e.device) {
        GpuEvent ev;
        ev.kind = "xid";
        ev.xid = e.eventData;
        ev.severity = xid_severity(e.eventData);
        ev.unix_time = now_unix();
        t_.gpus[i].events.push_back(ev);
      }
  }
}

}  // namespace sdc::host
