// The subcommands, and the helpers every subcommand uses to fail with the right code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/patterns.h"
#include "src/core/patterns_location.h"

namespace sdc {

struct RunArgs {
  std::string profile = "boot";
  std::vector<std::string> enable, enable_any, disable, inject;
  std::string time_budget;
  std::string deadline;  // --deadline DURATION: the process's hard wall-clock limit
  uint64_t seed = 0;
  bool seed_given = false;
  std::string backend = "auto";
  std::string devices;
  bool devices_given = false;
  std::string expect_devices;  // a count, or "pci"
  std::string cpuset;
  bool cpuset_given = false;
  std::string output_format = "text";
  std::string output;
  bool quiet = false;
  bool verbose = false;
  std::string lock_file;
  bool force = false;
  std::string max_memory;
  std::string prometheus;
  std::string html;  // the self-contained HTML report (src/report/html.h); "" for none
  bool npd = false;
  std::string history;             // directory of the node's history (src/core/history.h); "none"; "" for the default
  double throughput_floor = 0.85;  // a unit below this fraction of its peers' median throughput is slow
  bool fail_slow = false;          // a slow unit makes a passing run exit 3
  bool no_probe = false;           // no throughput probe after the battery
  double max_temperature = 0;      // --max-temperature C (0: none)
  bool digests = false;            // keep per-tile digests in the report
  int retest = -1;                 // --retest-on-failure N; -1: the profile's default (3 when it fills its budget)
  std::string patterns_not_found;  // no pattern directory was found: why (PatternsLocation::not_found_message)
  bool accept_patterns = false;    // screen with pattern data other than the build's, marked as weakened
  std::string program;             // argv[0]: the reproduce line names the program as it was invoked
};
struct ListArgs {
  std::string profile;
  std::string output_format = "text";  // text or json
};
struct GoldenArgs {
  std::string cpuset;
  bool force = false;  // rewrite the installed pattern directory
};
struct RecordArgs {
  std::string output_dir;
  std::vector<std::string> enable, disable;
  std::string devices;
  int repeats = 3;
  std::string time_budget;
  bool force = false;
  bool accept_patterns = false;  // record with pattern data other than the build's (a battery being extended)
};
struct HistoryArgs {
  std::string dir = "/var/lib/sdcscreen";
  bool resume_policy = false;
  int clean_screens = 3;
  std::string min_profile = "standard";
  std::string forget;
  bool acknowledge = false;
  std::string output_format = "text";
};
struct DiffArgs {
  std::string a, b;  // two JSON reports
  std::string output_format = "text";
};
struct BundleArgs {
  std::string dir;     // the history directory
  std::string output;  // the tar.gz; "" for sdcscreen-bundle-HOST-TIME.tar.gz here
  int reports = 3;     // the last this many reports the history names
};
struct FleetArgs {
  std::vector<std::string> paths;  // reports, or directories searched for *.json
  std::string stale = "24h";       // a node whose newest report is older is stale
  std::string output_format = "text";
  std::string output;  // "" for stdout
  std::string html;    // "" for none
};
struct ConsensusArgs {
  bool write = false;
  std::vector<std::string> files;  // recordings, one device each
};

// Print "sdcscreen: error: <msg>" on stderr and return the exit code (64 or 78).
int usage_error(const std::string& msg);
int config_error(const std::string& msg);


int cmd_run(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir);  // run.cpp
int cmd_list(const ListArgs& a, const std::string& patterns_dir);
int cmd_info(const PatternsLocation& patterns, bool json);  // the lookup main made (patterns_location.h)
// What cmd_info prints (src/cli/info.cpp); bundle keeps both forms.
std::string info_output(const PatternsLocation& patterns, bool json);
int cmd_golden(const std::string& patterns_dir, const std::vector<int>& cpus);
// verify-patterns: the data against its manifest, then against the build's digests (78 when they differ,
// unless accept_patterns).
int cmd_verify(const std::string& patterns_dir, bool accept_patterns);
// The digests of the pattern data this binary was built with (src/cli/built_patterns.cpp, generated).
PatternDigests built_pattern_digests();
int cmd_history(const HistoryArgs& a);                                       // src/cli/history.cpp
int cmd_consensus(const ConsensusArgs& a, const std::string& patterns_dir);  // src/cli/consensus.cpp
int cmd_bundle(const BundleArgs& a, const PatternsLocation& patterns);       // src/cli/bundle.cpp
int cmd_reason(const std::string& report);  // src/cli/reason.cpp
int cmd_diff(const DiffArgs& a);                                             // src/cli/diff.cpp
int cmd_fleet(const FleetArgs& a, const std::string& patterns_dir);          // src/cli/fleet.cpp
int cmd_record(const RecordArgs& a, const std::vector<std::string>& argv,
               const std::string& patterns_dir);  // record.cpp

}  // namespace sdc
