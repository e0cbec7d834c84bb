#include "src/backends/cpu/cpu_topology.h"

#include <fmt/format.h>
#include <sched.h>

#include <fstream>

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

}  // namespace sdc::cpu
