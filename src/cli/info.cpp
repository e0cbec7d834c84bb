// sdcscreen info: host identity, CPUs, GPUs and versions; --output-format json for machines (with the host's
// telemetry as it is now).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../../kernels/gemm_f32/gemm_f32_cpu.h"
#include "../backends/cpu/cpu_topology.h"
#include "../backends/cuda/cuda_backend.h"
#include "../host/host_readers.h"
#include "../report/report.h"
#include "../report/report_host.h"
#include "../util/say.h"
#include "../report/report_gpu.h"
#include "commands.h"
#include "gpu_watch.h"

namespace sdc {

namespace {

int info_json(const PatternsLocation& patterns, const HostInfo& h, const host::HostRoot& root) {
  using json = nlohmann::json;
  json j;
  j["tool"] = {{"name", "sdcscreen"}, {"version", tool_version()}, {"git", tool_git()}};
  j["host"] = {{"hostname", h.hostname},
               {"os", h.os},
               {"kernel", h.kernel},
               {"cpu", h.cpu_model},
               {"cpus_online", h.cpus_online},
               {"identity", host_identity_json(host::read_identity(root))}};
  j["telemetry"] = host_snapshot_json(host::read_telemetry(root));
  j["gemm_isa"] = gemm_f32::fast_path_isa();
  j["gpus"] = json::array();
  const cuda::Availability avail = cuda::probe();
  j["gpus_unusable"] = avail.usable ? json(nullptr) : json(avail.reason);
  const std::vector<DeviceInfo> gpus = avail.usable ? cuda::list_devices() : std::vector<DeviceInfo>{};
  const host::NvmlTelemetry nvml = read_nvml_now(gpus);
  j["nvml"] = nvml_json(nvml);
  for (size_t i = 0; i < gpus.size(); ++i) {
    const DeviceInfo& d = gpus[i];
    j["gpus"].push_back({{"index", d.index},
                         {"name", d.name},
                         {"uuid", d.uuid},
                         {"pci_bus_id", d.pci_bus_id},
                         {"nvml", gpu_telemetry_json(nvml, d.index)}});
  }
  j["patterns"] = patterns.dir.empty() ? json(nullptr) : json(patterns.dir);
  say("{}\n", j.dump(2, ' ', false, json::error_handler_t::replace));
  return 0;
}

}  // namespace

int cmd_info(const PatternsLocation& patterns, bool json) {
  const HostInfo h = host_info();
  const host::HostRoot root = host::HostRoot::from_env();
  if (json) return info_json(patterns, h, root);
  say("sdcscreen {} ({})\n", tool_version(), tool_git());
  say("host:     {}\nos:       {}\nkernel:   {}\n", h.hostname, h.os, h.kernel);
  say("cpu:      {}\n", h.cpu_model);
  std::vector<int> allowed;
  const auto cpus = cpu::allowed_cpus();
  for (const auto& c : cpus) allowed.push_back(c.cpu);
  say("cpus:     {} online, {} available to this process: {}\n", h.cpus_online, allowed.size(),
      cpu::format_cpu_list(allowed));
  say("gemm isa: {}\n", gemm_f32::fast_path_isa());
  const cuda::Availability avail = cuda::probe();
  const std::vector<DeviceInfo> gpus = avail.usable ? cuda::list_devices() : std::vector<DeviceInfo>{};
  if (!avail.usable) {
    say("gpus:     none usable: {}\n", avail.reason);
  } else {
    for (const DeviceInfo& d : gpus)
      say("gpu:      {} {}  {}  {}  cc {}.{}  {} SMs  {} MiB  ECC {}  driver {} (CUDA {})  runtime {}\n", d.label(),
          d.name, d.uuid, d.pci_bus_id, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes >> 20, d.ecc, d.driver,
          d.driver_cuda, d.runtime);
  }
  say("{}", nvml_info_text(read_nvml_now(gpus), gpus));
  say("cublaslt: {}\n", cuda::cublaslt_summary());
  if (patterns.dir.empty())
    say("patterns: none found (looked in {})\n", fmt::join(patterns.looked_in, ", "));
  else
    say("patterns: {} ({})\n", patterns.dir, patterns.how);
  say("compiler: {}\n", __VERSION__);
  say("{}", host_identity_text(host::read_identity(root)));
  return 0;
}

}  // namespace sdc
