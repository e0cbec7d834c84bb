#include "result.h"

namespace sdc {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::error: return "error";
    case Verdict::skip: return "skip";
    case Verdict::crash: return "crash";
  }
  return "?";
}

// Fail closed: a miscompare anywhere is 1; otherwise anything that did not run (an error, a skip, an
// injection that never fired, nothing selected) is 2; 0 only when every selected test ran and passed.
// A miscompare wins over an interruption too: a signal after a unit computed wrong bits must not turn a
// failing node into an interrupted one (the report still says it was interrupted).
int RunResult::exit_code() const {
  for (const TestResult& t : tests)
    if (t.verdict == Verdict::fail || t.verdict == Verdict::crash) return EXIT_FAIL;
  if (interrupted_by > 0) return 128 + interrupted_by;
  if (tests.empty() || !errors.empty() || watchdog_fired) return EXIT_INCONCLUSIVE;
  bool any_pass = false;
  for (const TestResult& t : tests) {
    if (t.verdict == Verdict::skip && t.not_applicable) continue;
    if (t.verdict != Verdict::pass) return EXIT_INCONCLUSIVE;
    any_pass = true;
  }
  if (!any_pass) return EXIT_INCONCLUSIVE;  // nothing ran at all
  for (const Injection& i : injections)
    if (!i.fired) return EXIT_INCONCLUSIVE;
  return EXIT_PASS;
}

bool RunResult::masked(const Injection& i) const {
  if (!i.fired || i.hang || i.crash) return false;
  for (const TestResult& t : tests)
    if (t.id == i.case_id && t.verdict == Verdict::fail) return false;
  return true;
}

void RunResult::flag_masked_injections() {
  for (const Injection& i : injections)
    if (masked(i))
      errors.push_back("injection " + i.spec +
                       " fired, masked: it changed no output of the case, so the drill proves nothing");
}

const char* RunResult::exit_word() const {
  switch (exit_code()) {
    case EXIT_PASS: return "pass";
    case EXIT_FAIL: return "fail";
    case EXIT_INCONCLUSIVE: return "error";
    default: return "interrupted";
  }
}

}  // namespace sdc
