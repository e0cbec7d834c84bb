// A run's outputs and their failures: the report (a file, or stdout), the HTML page, the Prometheus textfile,
// the node's history line and the node-problem-detector line, written in one place; and the exit code a
// write that failed gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/core/result.h"

namespace sdc {

// Where the outputs go (run's -o, --output-format, --html, --prometheus, -q, --npd).
struct OutputPlan {
  std::string report;             // -o FILE, written atomically; "" for none
  bool report_to_stdout = false;  // -o -: the report goes to stdout in the chosen format, -q or not
  bool json = false;              // --output-format json
  std::string html;               // "" for none
  std::string prometheus;         // "" for none
  bool quiet = false;             // -q: nothing on stdout but what -o - asks for
  bool npd = false;               // --npd: stdout is one line for node-problem-detector
};

// Where this screen's history line goes (src/core/history.h): dir "" for none. A default history that cannot
// be written is a warning; one asked for (--history DIR) is a write failure.
struct HistoryTarget {
  std::string dir;
  bool is_default = false;
  std::string run_id;
  bool full_battery = true;  // neither --enable, --enable-any nor --disable narrowed the profile
};

// Before the run: the report file, the HTML page and the Prometheus file say what `pending` says (a screen in
// progress, exit 2, an error naming the process), so that a screen killed outright (SIGKILL, power) leaves that
// and not the previous screen's verdict. Each file is written on its own; those that could not be ("--html: <why>")
// are returned (for a screen, the final write says so again).
std::vector<std::string> write_in_progress(const OutputPlan& out, const RunResult& pending);

// After the run, in this order: the Prometheus file (carrying the previous file's last success), the report
// (and the text report on stdout unless -q or --npd), the HTML page, the history line; each one published on the
// shared progress record once written (src/core/activity.h), and those in `written` (activity::OUT_* bits: the
// screen's supervisor passes what the screen wrote before it died) skipped: the history line then names the
// report on disk and its digest. A file that cannot be written loses nothing: the report falls back to stdout
// (stderr with --npd, whose stdout is one line) and each failure is said on stderr. Returns whether a write
// that was asked for failed. The NPD line is the caller's.
bool write_outputs(const OutputPlan& out, const HistoryTarget& history, const RunResult& result, int32_t written = 0);

// The run's exit code once its outputs are written: the verdict's (node-problem-detector's with --npd), or 78
// (2 with --npd) when a write failed, unless a miscompare makes it 1: a miscompare is never hidden behind a
// file error.
int exit_code_after_outputs(const RunResult& result, bool npd, bool write_failed);

}  // namespace sdc
