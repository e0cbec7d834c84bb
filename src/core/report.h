// Reports: one RunResult, several renderings. Text for people, JSON for machines (docs/report.schema.json).
#pragma once

#include <string>

#include "result.h"

namespace sdc {

constexpr int REPORT_SCHEMA_VERSION = 1;

struct HostInfo {
  std::string hostname, os, kernel, cpu_model;
  int cpus_online = 0;
};
HostInfo host_info();

const char* tool_version();
const char* tool_git();

std::string render_text(const RunResult& r, const HostInfo& host);
std::string render_json(const RunResult& r, const HostInfo& host);
// A command line as a shell would read it back.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace sdc
