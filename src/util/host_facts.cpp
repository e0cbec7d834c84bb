#include "src/util/host_facts.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#ifndef SDCSCREEN_VERSION
#define SDCSCREEN_VERSION "0.0.0"
#endif
#include "sdc_git.h"  // SDCSCREEN_GIT: the commit, written at build time (cmake/git_version.cmake)

namespace sdc {
namespace {

std::string os_pretty_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  return "unknown";
}

}  // namespace

const char* tool_version() { return SDCSCREEN_VERSION; }
const char* tool_git() { return SDCSCREEN_GIT; }

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

HostInfo host_info() {
  HostInfo h;
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  h.hostname = name;
  h.os = os_pretty_name();
  struct utsname u {};
  if (uname(&u) == 0) h.kernel = fmt::format("{} {}", u.sysname, u.release);
  h.cpu_model = cpu_model_name();
  h.cpus_online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return h;
}

}  // namespace sdc
