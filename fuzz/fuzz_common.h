// Shared helpers of the libFuzzer harnesses. A harness catches only the exception type its parser
// documents; anything else escapes so that libFuzzer reports it (an uncaught exception aborts: "deadly
// signal"). A broken invariant calls fuzz_fail(), which says what was wrong and aborts.
//
// Known bugs: fuzz/regressions/<harness>/ holds inputs that reproduced bugs found in the project (see
// fuzz/README.md). A plain run of a harness (and the CTest smoke) fails on any that still does. With
// SDC_FUZZ_SKIP_KNOWN=1 in the environment (scripts/fuzz.sh sets it unless told otherwise), a harness
// returns early on inputs that would only hit one of those bugs, so that long runs look past them for
// new ones. Each filter names its bug; delete it when the bug is fixed.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace sdc_fuzz {

[[noreturn]] inline void fuzz_fail(const std::string& what) {
  std::fprintf(stderr, "\n==FUZZ INVARIANT== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline bool skip_known() {
  static const bool on = [] {
    const char* v = std::getenv("SDC_FUZZ_SKIP_KNOWN");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// patterns.h: "any problem is a PatternError whose message is one line naming the file and what is
// wrong". Known bug (multi-line message): names taken from JSON keys (profiles, cases, files) are put
// into messages as they are, so a key with "\n" makes a multi-line message; not checked with
// SDC_FUZZ_SKIP_KNOWN=1.
inline void check_pattern_message(const char* file, const char* msg) {
  const std::string m(msg);
  const std::string prefix = std::string(file) + ": ";
  if (m.compare(0, prefix.size(), prefix) != 0) fuzz_fail("PatternError message does not start with the file name: " + m);
  if (m.size() == prefix.size()) fuzz_fail("PatternError message says nothing after the file name");
  if (!skip_known() && m.find_first_of("\n\r") != std::string::npos)
    fuzz_fail("PatternError message is not one line: " + m);
}

}  // namespace sdc_fuzz
