// A GPU's and a logical CPU's identity, as the backends discover them and every report names them. Plain
// data: the core and the reports use them without any backend header.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace sdc {

// A GPU as every report names it (docs/design.md, "The report": name, UUID, PCI bus id, compute capability, memory,
// driver and runtime versions, ECC mode).
struct DeviceInfo {
  int index = -1;  // CUDA device ordinal in this process (after CUDA_VISIBLE_DEVICES)
  std::string name, uuid, pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  uint64_t memory_bytes = 0;
  std::string driver;                // kernel module version where readable, else the CUDA driver API version
  std::string driver_cuda, runtime;  // CUDA versions the driver supports and this build's runtime, "13.0"
  std::string ecc;                   // "on", "off"
  bool emulated = false;             // an emulated device (the CUDA kernels on the CPU; tests only)
  std::string label() const { return "cuda:" + std::to_string(index); }
  // The ordinal a label names ("cuda:3" -> 3), or -1 for anything that is not one (the CPU backend's "cpu").
  static int index_of_label(const std::string& label) {
    if (label.rfind("cuda:", 0) != 0) return -1;
    const char *digits = label.c_str() + 5, *last = label.c_str() + label.size();
    int n = -1;
    const auto [end, ec] = std::from_chars(digits, last, n);
    return ec == std::errc() && end == last && end != digits && n >= 0 ? n : -1;
  }
  std::string architecture() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

}  // namespace sdc

namespace sdc::cpu {

// A logical CPU and where it sits (src/backends/cpu/cpu_topology.h discovers them).
struct LogicalCpu {
  int cpu = -1;
  int core = -1;     // topology/core_id, -1 when the kernel does not say
  int package = -1;  // topology/physical_package_id
};

}  // namespace sdc::cpu
