#include "cpu_topology.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>

namespace sdc::cpu {
namespace {

int read_int(const std::string& path) {
  std::ifstream in(path);
  int v = -1;
  if (!(in >> v)) return -1;
  return v;
}

}  // namespace

LogicalCpu describe_cpu(int cpu) {
  const std::string base = fmt::format("/sys/devices/system/cpu/cpu{}/topology/", cpu);
  return {cpu, read_int(base + "core_id"), read_int(base + "physical_package_id")};
}

std::vector<LogicalCpu> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<LogicalCpu> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(describe_cpu(c));
  return out;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown";
}

std::string parse_index_list(const std::string& text, const char* noun, int limit, std::vector<int>& out_list) {
  std::set<int> out;
  if (text.empty()) return fmt::format("empty {} list", noun);
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty()) return fmt::format("empty item in {} list '{}'", noun, text);
    const size_t dash = item.find('-');
    auto number = [&](const std::string& s, int& v) {
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
      v = std::stoi(s);
      return v < limit;
    };
    int lo, hi;
    if (dash == std::string::npos) {
      if (!number(item, lo)) return fmt::format("'{}' is not a {} number (0..{})", item, noun, limit - 1);
      hi = lo;
    } else {
      if (!number(item.substr(0, dash), lo) || !number(item.substr(dash + 1), hi))
        return fmt::format("'{}' is not a {} range like 0-3", item, noun);
      if (hi < lo) return fmt::format("{} range '{}' runs backwards", noun, item);
    }
    for (int c = lo; c <= hi; ++c) out.insert(c);
    pos = comma + 1;
  }
  out_list.assign(out.begin(), out.end());
  return "";
}

std::string parse_cpu_list(const std::string& text, std::vector<int>& cpus) {
  return parse_index_list(text, "CPU", CPU_SETSIZE, cpus);
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return s;
}

}  // namespace sdc::cpu
