// Lists of numbered units as people write them: "0-3,8,10-11" (--cpuset, --devices, the history's unit
// lists, the reports' CPU and SM ranges).
#pragma once

#include <string>
#include <vector>

namespace sdc {

// Parses "0-3,8,10-11" into a sorted list without duplicates. Returns "" on success, else what is wrong.
std::string parse_cpu_list(const std::string& text, std::vector<int>& cpus);
// The same grammar for any numbered units ("0-3,8"; noun "GPU", ids below limit); --cpuset and --devices.
std::string parse_index_list(const std::string& text, const char* noun, int limit, std::vector<int>& out);
// "0-3,8" from a sorted list.
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace sdc
