// Device discovery and identity: whether CUDA is usable here and, if not, the precise reason (no driver,
// a driver older than this build's runtime, no device), and each GPU's identity for the reports.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/cuda_check.h"

namespace sdc::cuda {
namespace {

std::string cuda_version(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// "580.159.04" from the kernel module, when this host exposes it; empty otherwise.
std::string kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  const auto k = line.find("Kernel Module");
  if (k == std::string::npos) return "";
  size_t b = line.find_first_not_of(' ', k + 13);
  if (b == std::string::npos) return "";
  const size_t e = line.find(' ', b);
  return line.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

std::string format_uuid(const cudaUUID_t& u) {
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", static_cast<unsigned char>(u.bytes[i]));
  }
  return s;
}

}  // namespace

Availability probe() {
  Availability a;
  int driver = 0, runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
    a.reason = "no NVIDIA driver found (libcuda.so.1 could not be loaded)";
    return a;
  }
  if (driver < runtime) {
    a.reason = fmt::format("the NVIDIA driver supports CUDA {} but this build needs CUDA {}: update the driver",
                           cuda_version(driver), cuda_version(runtime));
    return a;
  }
  const cudaError_t e = cudaGetDeviceCount(&a.device_count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && a.device_count == 0)) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    a.device_count = 0;
    a.reason = visible ? fmt::format("no CUDA device visible (CUDA_VISIBLE_DEVICES='{}')", visible)
                       : std::string("no CUDA device found");
    return a;
  }
  if (e != cudaSuccess) {
    a.device_count = 0;
    a.reason = fmt::format("CUDA cannot start: {} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
    return a;
  }
  a.usable = true;
  return a;
}

std::vector<DeviceInfo> list_devices() {
  int count = 0, driver = 0, runtime = 0;
  SDC_CUDA_CHECK(cudaGetDeviceCount(&count));
  SDC_CUDA_CHECK(cudaDriverGetVersion(&driver));
  SDC_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const std::string module = kernel_module_version();
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    SDC_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    DeviceInfo d;
    d.index = i;
    d.name = p.name;
    d.uuid = format_uuid(p.uuid);
    d.pci_bus_id = fmt::format("{:08x}:{:02x}:{:02x}.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.memory_bytes = p.totalGlobalMem;
    d.driver_cuda = cuda_version(driver);
    d.driver = module.empty() ? "CUDA " + d.driver_cuda : module;
    d.runtime = cuda_version(runtime);
    d.ecc = p.ECCEnabled ? "on" : "off";
    out.push_back(d);
  }
  return out;
}

}  // namespace sdc::cuda
