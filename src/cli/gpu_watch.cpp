#include "src/cli/gpu_watch.h"

#include <fmt/format.h>

#include <algorithm>

namespace sdc {

GpuWatch::GpuWatch(RunResult& r, const std::vector<DeviceInfo>& gpus) : r_(r) {
  if (gpus.empty()) return;
  r.nvml.attempted = true;
  nvml_ = host::Nvml::open(r.nvml.why);
  if (!nvml_) return;
  r.nvml.available = true;
  r.nvml.library = nvml_->library();
  for (size_t i = 0; i < gpus.size(); ++i) {
    host::GpuTelemetry g;
    g.device = static_cast<int>(i);
    g.uuid = gpus[i].uuid;
    g.pci_bus_id = gpus[i].pci_bus_id;
    r.nvml.gpus.push_back(g);
  }
  host::read_gpus_before(*nvml_, r.nvml, handles_);
  sampler_ = std::make_unique<host::GpuSampler>(*nvml_, r.nvml, handles_);
}

GpuWatch::~GpuWatch() {
  if (sampler_) sampler_->stop();
}

void GpuWatch::finish() {
  if (!nvml_) return;
  if (sampler_) sampler_->stop();
  host::read_gpus_after(*nvml_, r_.nvml, handles_);
  judge_gpu_tests(r_);
}

host::NvmlTelemetry read_nvml_now(const std::vector<DeviceInfo>& gpus) {
  host::NvmlTelemetry t;
  t.attempted = true;
  const std::unique_ptr<host::Nvml> nvml = host::Nvml::open(t.why);
  if (!nvml) return t;
  t.available = true;
  t.library = nvml->library();
  for (size_t i = 0; i < gpus.size(); ++i) {
    host::GpuTelemetry g;
    g.device = gpus[i].index;
    g.uuid = gpus[i].uuid;
    g.pci_bus_id = gpus[i].pci_bus_id;
    t.gpus.push_back(g);
  }
  std::vector<nvmlDevice_t> handles;
  host::read_gpus_before(*nvml, t, handles);
  return t;
}

std::string nvml_info_text(const host::NvmlTelemetry& t, const std::vector<DeviceInfo>& gpus) {
  if (!t.available) return fmt::format("nvml:     not available: {}\n", t.why);
  std::string s = fmt::format("nvml:     {}\n", t.library);
  const auto v = [](const std::string& x) { return x.empty() ? std::string("n/a") : x; };
  for (size_t i = 0; i < t.gpus.size() && i < gpus.size(); ++i) {
    const host::GpuTelemetry& g = t.gpus[i];
    if (!g.not_matched.empty()) {
      s += fmt::format("nvml gpu: {} {}  not found: {}\n", gpus[i].label(), g.uuid, g.not_matched);
      continue;
    }
    const host::GpuSnapshot& b = g.before;
    s += fmt::format(
        "nvml gpu: {} {}  serial {}  part {}  vbios {}  inforom {}  driver {}  ecc {}  pcie gen {} x{}  temp {}  "
        "memory temp {}\n",
        gpus[i].label(), g.uuid, v(g.identity.serial), v(g.identity.board_part_number), v(g.identity.vbios),
        v(g.identity.inforom), v(g.identity.driver),
        g.identity.ecc_enabled ? (*g.identity.ecc_enabled ? "on" : "off") : "n/a",
        b.pcie_generation ? std::to_string(*b.pcie_generation) : "n/a",
        b.pcie_width ? std::to_string(*b.pcie_width) : "n/a",
        b.temperature_c ? fmt::format("{:.0f} C", *b.temperature_c) : "n/a",
        b.memory_temperature_c ? fmt::format("{:.0f} C", *b.memory_temperature_c) : "n/a");
  }
  return s;
}

void judge_gpu_tests(RunResult& r) {
  for (TestResult& t : r.tests) {
    if (t.device_index < 0 || t.ran_unix.empty()) continue;
    const auto g = std::find_if(r.nvml.gpus.begin(), r.nvml.gpus.end(),
                                [&](const host::GpuTelemetry& x) { return x.device == t.device_index; });
    if (g == r.nvml.gpus.end()) continue;
    // The readings within a sampling interval (1 s, and slack for the reading itself) of a round it ran: a
    // case shorter than the interval is judged by its neighbours; the before and after readings count too.
    std::vector<host::GpuSample> readings = g->samples;
    for (const host::GpuSnapshot* x : {&g->before, &g->after})
      if (x->taken) readings.push_back({x->unix_time, x->temperature_c, x->throttle_reasons, x->memory_temperature_c});
    std::optional<double> hottest, hottest_memory;
    uint64_t reasons = 0;
    const auto raise = [](std::optional<double>& h, const std::optional<double>& v) {
      if (v && (!h || *v > *h)) h = v;
    };
    for (const host::GpuSample& s : readings)
      for (const auto& [from, to] : t.ran_unix)
        if (s.unix_time >= from - 1.5 && s.unix_time <= to + 1.5) {
          raise(hottest, s.temperature_c);
          raise(hottest_memory, s.memory_temperature_c);
          reasons |= s.throttle_reasons.value_or(0);
          break;
        }
    if (const uint64_t slow = reasons & host::THROTTLE_SLOWDOWN_MASK)
      t.notes.push_back(fmt::format("GPU throttled while it ran ({}): its throughput is not the GPU's",
                                    host::throttle_reason_names(slow)));
    // --max-temperature applies to the GPU die and to its memory: either above it makes a pass an error.
    for (const auto& [what, c] : {std::pair{"GPU", hottest}, std::pair{"GPU memory", hottest_memory}}) {
      if (!c) continue;
      if (r.max_temperature_c > 0 && *c > r.max_temperature_c) {
        const std::string why = fmt::format("{} at {:.0f} C while it ran, above --max-temperature {:.0f} C: its "
                                            "result cannot be trusted",
                                            what, *c, r.max_temperature_c);
        if (t.verdict == Verdict::pass) {
          t.verdict = Verdict::error;
          t.reason = why;
        } else {
          t.notes.push_back(why);
        }
      } else if (*c >= host::GPU_HOT_C) {
        t.notes.push_back(fmt::format("{} hot while it ran ({:.0f} C)", what, *c));
      }
    }
  }
}

}  // namespace sdc
