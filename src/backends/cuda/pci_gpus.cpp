#include "pci_gpus.h"

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

std::vector<std::string> pci_gpus() {
  const char* root = std::getenv("SDCSCREEN_SYSFS_ROOT");
  const std::filesystem::path dir = std::filesystem::path(root && *root ? root : "/sys") / "bus/pci/devices";
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string vendor = read_word(entry.path() / "vendor");
    const std::string cls = read_word(entry.path() / "class");
    if (vendor == "0x10de" && cls.rfind("0x03", 0) == 0) out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace sdc::cuda
