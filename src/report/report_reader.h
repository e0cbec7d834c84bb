// Reading a JSON report of `run` back (diff, fleet, reason): the one decision of what a report is. The keys a
// comparison relies on, their types, an exit code and verdict that agree (docs/design.md, "The run's exit
// code"), and a schema_version this build knows. What is optional in older reports (UUIDs, retests, microcode,
// digests) reads as absent, never as an error.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace sdc {

// Reports before 5 have no signatures; 6 added the optional tile digests.
constexpr int OLDEST_READABLE_SCHEMA = 5;

// What is wrong with a file that is not a report; the message names the key.
struct NotReport : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One test of a report, as much of it as a comparison reads. Units are named as people read them (unit_text):
// "cpu 3", or an SM of the test's GPU as "sm 17" (without its ordinal: a comparison follows a GPU by UUID when
// CUDA renumbers it).
struct TestView {
  std::string id, device, result;
  int gpu = -1;      // the GPU's CUDA ordinal (device "cuda:N"), -1 for the CPU
  std::string uuid;  // the GPU's, from the report's devices; "" for the CPU or a report without it
  std::vector<std::string> units_failed;
  std::map<std::string, std::vector<std::string>> signatures;  // signature -> the units that have it
  std::map<std::string, std::string> classes;                  // retested unit -> its classification (schema 8)
  bool has_digests = false;
  std::vector<uint64_t> tile_digests;
  int64_t digest_iteration = -1;
};

struct ReportView {
  std::string file, hostname, start, profile, seed_text, verdict;
  std::string tool_version;  // tool.version
  uint64_t seed = 0;
  int64_t exit_code = 0, schema_version = 0;
  bool fault_injection = false;
  std::string microcode;                       // host.identity.cpu.microcode (schema 11), "" when absent
  std::map<std::string, std::string> uuid_of;  // "cuda:0" -> its UUID
  std::vector<TestView> tests;
};

// Reads and checks a report. Throws NotReport, or FileError (src/util/atomic_file.h) when the file cannot be
// read. With document, the parsed report is left there too (reason reads its drain reason from it).
ReportView read_report(const std::string& file, nlohmann::json* document = nullptr);

}  // namespace sdc
