#include "src/backends/cuda/pci_gpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace sdc::cuda {
namespace {

std::string read_word(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string w;
  in >> w;
  return w;
}

}  // namespace

std::vector<std::string> pci_gpus(std::string& error) {
  error.clear();
  const char* root = std::getenv("SDCSCREEN_SYSFS_ROOT");
  const std::filesystem::path dir = std::filesystem::path(root && *root ? root : "/sys") / "bus/pci/devices";
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) {
    error = fmt::format("cannot read the PCI bus ({}: {}), so whether this node has NVIDIA GPUs is unknown",
                        dir.string(), ec.message());
    return out;
  }
  for (const auto& entry : it) {
    const std::string vendor = read_word(entry.path() / "vendor");
    const std::string cls = read_word(entry.path() / "class");
    if (vendor == "0x10de" && cls.rfind("0x03", 0) == 0) out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sdc::cuda
