// Where a binary (sdcscreen, gpu_tests, bench_gpu) finds its pattern directory when no --patterns is given.
// Nothing built in names a path of the machine that built it, so a build or a bundle copied to another
// machine still finds its patterns. The order, first match wins:
//   1. the environment variable SDCSCREEN_PATTERNS (when set and not empty: taken as given, so a wrong value
//      fails loudly on load instead of falling back to other data);
//   2. next to the executable: <exe dir>/patterns (a GPU bundle, and a build tree, whose `patterns` is a
//      link to the source tree's), then <exe dir>/../share/sdcscreen/patterns (an install prefix, moved or not);
//   3. the installed location, <datadir>/sdcscreen/patterns of the configured install prefix.
// A candidate of 2 or 3 counts only when it holds a manifest.json.
#pragma once

#include <string>
#include <vector>

namespace sdc {

inline constexpr const char* PATTERNS_ENV = "SDCSCREEN_PATTERNS";

struct PatternsLocation {
  std::string dir;                     // the chosen directory; empty when none was found
  std::string how;                     // "SDCSCREEN_PATTERNS", "next to the executable" or "installed"
  std::vector<std::string> looked_in;  // every candidate, in order (for the error when none was found)
  // "no pattern directory found (looked in A, B, C): give --patterns DIR or set SDCSCREEN_PATTERNS"
  std::string not_found_message() const;
};

// The lookup itself, with its inputs given: env_value is SDCSCREEN_PATTERNS's value (null: unset), exe_dir
// the executable's directory, installed_dir the configured installed location ("" when none).
PatternsLocation locate_patterns(const char* env_value, const std::string& exe_dir, const std::string& installed_dir);
// The lookup for this process: its environment, its executable, the build's configured install location.
PatternsLocation locate_patterns();

// The directory of this process's executable (/proc/self/exe), or "." when it cannot be read.
std::string executable_dir();
// Whether dir is an installed pattern directory (beside the executable's prefix, or the configured installed
// location), which a package owns: `golden` refuses to rewrite it without --force.
bool installed_patterns_dir(const std::string& dir);

}  // namespace sdc
