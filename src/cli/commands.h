// The subcommands other than run, and the helpers every subcommand uses to fail with the right code.
#pragma once

#include <string>
#include <vector>

namespace sdc {

struct ListArgs {
  std::string profile;
  std::string output_format = "text";  // text or json
};
struct GoldenArgs {
  std::string cpuset;
};
struct RecordArgs {
  std::string output_dir;
  std::vector<std::string> enable, disable;
  std::string devices;
  int repeats = 3;
  std::string time_budget;
  bool force = false;
};
struct ConsensusArgs {
  bool write = false;
  std::vector<std::string> files;  // recordings, one device each
};

// Print "sdcscreen: error: <msg>" on stderr and return the exit code (64 or 78).
int usage_error(const std::string& msg);
int config_error(const std::string& msg);

// The installed patterns (<prefix>/share/sdcscreen/patterns beside <prefix>/bin), or the source tree's
// when the binary runs from its build tree.
std::string default_patterns_dir();

int cmd_list(const ListArgs& a, const std::string& patterns_dir);
int cmd_info();
int cmd_golden(const std::string& patterns_dir, const std::vector<int>& cpus);
int cmd_verify(const std::string& patterns_dir);
int cmd_consensus(const ConsensusArgs& a, const std::string& patterns_dir);  // src/cli/consensus.cpp
int cmd_record(const RecordArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir);  // record.cpp

}  // namespace sdc
