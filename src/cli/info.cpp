// sdcscreen info: host, CPUs, GPUs and versions.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../../kernels/gemm_f32/gemm_f32_cpu.h"
#include "../backends/cpu/cpu_topology.h"
#include "../backends/cuda/cuda_backend.h"
#include "../report/report.h"
#include "../util/say.h"
#include "commands.h"

namespace sdc {

int cmd_info(const PatternsLocation& patterns) {
  const HostInfo h = host_info();
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
  if (!avail.usable) {
    say("gpus:     none usable: {}\n", avail.reason);
  } else {
    for (const DeviceInfo& d : cuda::list_devices())
      say("gpu:      {} {}  {}  {}  cc {}.{}  {} SMs  {} MiB  ECC {}  driver {} (CUDA {})  runtime {}\n", d.label(),
          d.name, d.uuid, d.pci_bus_id, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes >> 20, d.ecc, d.driver,
          d.driver_cuda, d.runtime);
  }
  say("cublaslt: {}\n", cuda::cublaslt_summary());
  if (patterns.dir.empty())
    say("patterns: none found (looked in {})\n", fmt::join(patterns.looked_in, ", "));
  else
    say("patterns: {} ({})\n", patterns.dir, patterns.how);
  say("compiler: {}\n", __VERSION__);
  return 0;
}

}  // namespace sdc
