// sdcscreen info: host identity, CPUs, GPUs and versions; --output-format json for machines (with the host's
// telemetry as it is now).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/gemm_cpu/gemm_cpu.h"
#include "src/backends/cpu/cpu_topology.h"
#include "src/util/int_list.h"
#include "src/backends/cuda/cuda_backend.h"
#include "src/host/host_readers.h"
#include "src/report/report.h"
#include "src/report/report_host.h"
#include "src/util/say.h"
#include "src/report/report_gpu.h"
#include "src/cli/commands.h"
#include "src/cli/gpu_watch.h"

namespace sdc {

namespace {

std::string info_json(const PatternsLocation& patterns, const HostInfo& h, const host::HostRoot& root) {
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
  j["gemm_isa"] = gemm_cpu::fast_path_isa();
  j["gpus"] = json::array();
  const cuda::Availability avail = cuda::probe();
  j["gpus_unusable"] = avail.usable ? json(nullptr) : json(avail.reason);
  const std::vector<DeviceInfo> gpus = avail.usable ? cuda::list_devices() : std::vector<DeviceInfo>{};
  const host::NvmlTelemetry nvml = read_nvml_now(gpus);
  j["nvml"] = nvml_json(nvml);
  for (const DeviceInfo& d : gpus)
    j["gpus"].push_back({{"index", d.index},
                         {"name", d.name},
                         {"uuid", d.uuid},
                         {"serial", nullptr},  // the CUDA runtime's view; NVML's serial is under "nvml" when read
                         {"pci_bus_id", d.pci_bus_id},
                         {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                         {"sm_count", d.sm_count},
                         {"memory_bytes", d.memory_bytes},
                         {"ecc", d.ecc},
                         {"driver", d.driver},
                         {"driver_cuda", d.driver_cuda},
                         {"runtime", d.runtime},
                         {"nvml", gpu_telemetry_json(nvml, d.index)}});
  j["patterns"] = patterns.dir.empty() ? json(nullptr) : json(patterns.dir);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string info_output(const PatternsLocation& patterns, bool json) {
  const HostInfo h = host_info();
  const host::HostRoot root = host::HostRoot::from_env();
  if (json) return info_json(patterns, h, root);
  std::string out;
  out += fmt::format("sdcscreen {} ({})\n", tool_version(), tool_git());
  out += fmt::format("host:     {}\nos:       {}\nkernel:   {}\n", h.hostname, h.os, h.kernel);
  out += fmt::format("cpu:      {}\n", h.cpu_model);
  std::vector<int> allowed;
  const auto cpus = cpu::allowed_cpus();
  for (const auto& c : cpus) allowed.push_back(c.cpu);
  out += fmt::format("cpus:     {} online, {} available to this process: {}\n", h.cpus_online, allowed.size(),
                     format_cpu_list(allowed));
  out += fmt::format("gemm isa: {}\n", gemm_cpu::fast_path_isa());
  const cuda::Availability avail = cuda::probe();
  const std::vector<DeviceInfo> gpus = avail.usable ? cuda::list_devices() : std::vector<DeviceInfo>{};
  if (!avail.usable) {
    out += fmt::format("gpus:     none usable: {}\n", avail.reason);
  } else {
    for (const DeviceInfo& d : gpus)
      out += fmt::format("gpu:      {} {}  {}  {}  cc {}.{}  {} SMs  {} MiB  ECC {}  driver {} (CUDA {})  runtime {}\n",
                         d.label(), d.name, d.uuid, d.pci_bus_id, d.cc_major, d.cc_minor, d.sm_count,
                         d.memory_bytes >> 20, d.ecc, d.driver, d.driver_cuda, d.runtime);
  }
  out += nvml_info_text(read_nvml_now(gpus), gpus);
  out += fmt::format("cublaslt: {}\n", cuda::cublaslt_summary());
  if (patterns.dir.empty())
    out += fmt::format("patterns: none found (looked in {})\n", fmt::join(patterns.looked_in, ", "));
  else
    out += fmt::format("patterns: {} ({})\n", patterns.dir, patterns.how);
  out += fmt::format("compiler: {}\n", __VERSION__);
  out += host_identity_text(host::read_identity(root));
  return out;
}

int cmd_info(const PatternsLocation& patterns, bool json) {
  say("{}", info_output(patterns, json));
  return 0;
}

}  // namespace sdc
