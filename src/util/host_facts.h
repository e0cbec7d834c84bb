// Facts about this host and this build that every report and subcommand states: the host's name, OS,
// kernel and CPU model, and the tool's version and git commit.
#pragma once

#include <string>

namespace sdc {

struct HostInfo {
  std::string hostname, os, kernel, cpu_model;
  int cpus_online = 0;
};
HostInfo host_info();

// The CPU model from /proc/cpuinfo ("unknown" when it says none).
std::string cpu_model_name();

const char* tool_version();
const char* tool_git();

}  // namespace sdc
