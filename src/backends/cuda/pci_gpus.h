// NVIDIA GPUs as the PCI bus sees them, whatever the driver says: a GPU node whose driver failed must not
// pass on its CPUs alone (--backend auto). Read from sysfs (bus/pci/devices/*/vendor and class): vendor
// 0x10de, class display controller (0x03xxxx). SDCSCREEN_SYSFS_ROOT replaces /sys (tests fake the tree).
#pragma once

#include <string>
#include <vector>

namespace sdc::cuda {

// The PCI addresses ("0000:1b:00.0") of the NVIDIA display/3D controllers present, sorted.
std::vector<std::string> pci_gpus();

}  // namespace sdc::cuda
