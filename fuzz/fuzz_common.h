// Shared helpers of the libFuzzer harnesses. A harness catches only the exception type its parser
// documents; anything else escapes so that libFuzzer reports it (an uncaught exception aborts: "deadly
// signal"). A broken invariant calls fuzz_fail(), which says what was wrong and aborts.
//
// fuzz/regressions/<harness>/ holds every input that once reproduced a bug (see fuzz/README.md); the
// CTest smoke runs them all.
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
// wrong".
inline void check_pattern_message(const char* file, const char* msg) {
  const std::string m(msg);
  const std::string prefix = std::string(file) + ": ";
  if (m.compare(0, prefix.size(), prefix) != 0)
    fuzz_fail("PatternError message does not start with the file name: " + m);
  if (m.size() == prefix.size()) fuzz_fail("PatternError message says nothing after the file name");
  if (m.find_first_of("\n\r") != std::string::npos) fuzz_fail("PatternError message is not one line: " + m);
}

}  // namespace sdc_fuzz
