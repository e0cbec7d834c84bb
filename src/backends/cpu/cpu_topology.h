// Logical CPUs of this host: which ones this process may use, and where each sits (core, package).
#pragma once

#include <string>
#include <vector>

#include "../../core/device_info.h"  // LogicalCpu

namespace sdc::cpu {

// The CPUs in this process's affinity mask, in increasing order, with their topology.
std::vector<LogicalCpu> allowed_cpus();
LogicalCpu describe_cpu(int cpu);
std::string cpu_model_name();

// Parses "0-3,8,10-11" into a sorted list without duplicates. Returns "" on success, else what is wrong.
std::string parse_cpu_list(const std::string& text, std::vector<int>& cpus);
// The same grammar for any numbered units ("0-3,8"; noun "GPU", ids below limit); --cpuset and --devices.
std::string parse_index_list(const std::string& text, const char* noun, int limit, std::vector<int>& out);
// "0-3,8" from a sorted list.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace sdc::cpu
