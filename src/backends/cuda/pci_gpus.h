// NVIDIA GPUs as the PCI bus sees them, whatever the driver says: a GPU node whose driver failed must not
// pass on its CPUs alone (--backend auto). Read from sysfs (bus/pci/devices/*/vendor and class): vendor
// 0x10de, class display controller (0x03xxxx). SDCSCREEN_SYSFS_ROOT replaces /sys (tests fake the tree; it
// weakens the verdict: src/core/weakened.h).
#pragma once

#include <string>
#include <vector>

namespace sdc::cuda {

// The PCI addresses ("0000:1b:00.0") of the NVIDIA display/3D controllers present, sorted. A bus that cannot
// be read (no bus/pci/devices, a permission error) is not a bus without GPUs: `error` then says why (and the
// list is empty), else it is left "".
std::vector<std::string> pci_gpus(std::string& error);

}  // namespace sdc::cuda
