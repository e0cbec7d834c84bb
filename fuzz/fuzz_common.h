// Shared helpers of the libFuzzer harnesses. A harness catches only the exception type its parser
// documents; anything else escapes so that libFuzzer reports it ("deadly signal" after an uncaught
// exception). A broken invariant calls fuzz_fail(), which prints what was wrong and aborts.
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

// patterns.h: "any problem is a PatternError whose message is one line naming the file and what is
// wrong". The file-name prefix is always checked. The one-line part is checked unless the environment
// sets SDC_FUZZ_LAX_MESSAGES=1 (scripts/fuzz.sh does, so that long runs look past a known, cheap-to-find
// multi-line message for deeper bugs; the CTest smoke and a plain run of a harness check it).
inline void check_pattern_message(const char* file, const char* msg) {
  static const bool lax = [] {
    const char* v = std::getenv("SDC_FUZZ_LAX_MESSAGES");
    return v && std::strcmp(v, "1") == 0;
  }();
  const std::string m(msg);
  const std::string prefix = std::string(file) + ": ";
  if (m.compare(0, prefix.size(), prefix) != 0) fuzz_fail("PatternError message does not start with the file name: " + m);
  if (m.size() == prefix.size()) fuzz_fail("PatternError message says nothing after the file name");
  if (!lax && m.find_first_of("\n\r") != std::string::npos)
    fuzz_fail("PatternError message is not one line: " + m);
}

}  // namespace sdc_fuzz
