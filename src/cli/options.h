// The options step: one function per subcommand that screens (`run`, `record`) turns what CLI11 parsed into
// a complete, checked request, or into the one-line error and exit code the command line earns (64 a bad
// value, 78 a missing pattern directory or an output that cannot be written). The parsers of option values
// that CLI11 cannot check alone return "" or what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/scheduler.h"
#include "src/report/outputs.h"
#include "src/cli/commands.h"
#include "src/cli/screen.h"

namespace sdc::cli {

// "45s", "5m", "1h30m", "500ms", "2.5s": a positive duration with a unit on every number.
std::string parse_duration(const std::string& text, double& seconds);
// "512M", "8G", "1T", "1048576" (bytes): a positive size.
std::string parse_size(const std::string& text, uint64_t& bytes);

}  // namespace sdc::cli

namespace sdc {

// The CPUs to screen: --cpuset (given), checked against what this process may use, or all of those.
// Returns "" or what is wrong with --cpuset.
std::string choose_cpus(bool given, const std::string& cpuset, std::vector<int>& cpus);

// A run as its command line asks for it, every value parsed and checked.
struct RunRequest {
  ScreenRequest screen;  // what set_up_screen needs, with the RunOptions the screen starts from
  CaseChoice cases;      // --profile, --enable, --enable-any, --disable
  double deadline_s = 0;  // --deadline; 0 for none
  OutputPlan outputs;
  std::string history;  // --history as given: DIR, "none", or "" for the default
  bool full_battery = true;  // no --enable, --enable-any or --disable
  double max_temperature = 0;
  bool fail_slow = false;
  bool verbose = false;
};

// Parses and checks run's arguments in the order the errors are reported: --time-budget, --deadline, --inject,
// --max-memory, --cpuset (64), -o - with --npd (64), the pattern directory (78), each output path (inside
// the pattern directory: 64; not writable: 78). Code 0 when the request is complete.
SetupFailure run_request(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir,
                         RunRequest& r);

// What the chosen screen must agree with (set_up_screen's check): each of s.opt's injections against the
// battery, s.opt's CPUs or the GPUs chosen, and the selection; on GPUs, one output fault per case, device and
// iteration.
SetupFailure check_injections(Screen& s);

// "" or why an output of another subcommand (bundle -o, fleet -o and --html) may not be written at path: inside
// the pattern directory, as run refuses its outputs there (64); "" too when no pattern directory was found.
std::string outside_patterns(const std::string& flag, const std::string& path, const std::string& patterns_dir);

// `record`'s arguments: --repeats (64), --time-budget (64), the output directory (78).
SetupFailure record_request(const RecordArgs& a, const std::vector<std::string>& argv,
                            const std::string& patterns_dir, ScreenRequest& r);

}  // namespace sdc
