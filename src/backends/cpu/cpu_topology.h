// Logical CPUs of this host: which ones this process may use, and where each sits (core, package).
#pragma once

#include <vector>

#include "src/core/device_info.h"  // LogicalCpu

namespace sdc::cpu {

// The CPUs in this process's affinity mask, in increasing order, with their topology.
std::vector<LogicalCpu> allowed_cpus();
LogicalCpu describe_cpu(int cpu);

}  // namespace sdc::cpu
