#include "src/report/outputs.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "src/core/activity.h"
#include "src/core/history.h"
#include "src/core/patterns.h"  // xxh3_128_hex
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/report/html.h"
#include "src/report/report.h"

namespace sdc {
namespace {

// The HTML page of a result: rendered from its JSON report, so that the page and the JSON never disagree.
std::string html_of(const RunResult& r, const HostInfo& host) {
  return render_html(nlohmann::json::parse(render_json(r, host)));
}

std::string report_of(const OutputPlan& out, const RunResult& r, const HostInfo& host) {
  return out.json ? render_json(r, host) : render_text(r, host);
}

// The Prometheus file carries the last success over from the file it replaces (none on the first run).
std::string prometheus_of(const OutputPlan& out, const RunResult& r) {
  std::string previous;
  try {
    previous = read_file(out.prometheus);
  } catch (const FileError&) {  // first run: no previous success to carry over
  }
  return render_prometheus(r, previous);
}

}  // namespace

std::vector<std::string> write_in_progress(const OutputPlan& out, const RunResult& pending) {
  std::vector<std::string> failed;
  if (out.report.empty() && out.prometheus.empty() && out.html.empty()) return failed;
  const HostInfo host = host_info();
  // Each file on its own: one that cannot be written leaves the others to be replaced.
  const auto write = [&failed](const char* flag, const std::string& path, const auto& text) {
    if (path.empty()) return;
    try {
      write_file_atomic(path, text());
    } catch (const FileError& e) {
      failed.push_back(fmt::format("{}: {}", flag, e.what()));
    }
  };
  write("-o", out.report, [&] { return report_of(out, pending, host); });
  write("--html", out.html, [&] { return html_of(pending, host); });
  write("--prometheus", out.prometheus, [&] { return prometheus_of(out, pending); });
  return failed;
}

bool write_outputs(const OutputPlan& out, const HistoryTarget& history, const RunResult& result, int32_t written) {
  const auto done = [written](int32_t output) { return (written & output) != 0; };
  bool write_failed = false;
  if (!out.prometheus.empty() && !done(activity::OUT_PROMETHEUS)) {
    const std::string text = prometheus_of(out, result);
    try {
      write_file_atomic(out.prometheus, text);
      activity::publish_output(activity::OUT_PROMETHEUS);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: --prometheus: {}\n", e.what());
      write_failed = true;
    }
  }
  const HostInfo host = host_info();
  std::string report = report_of(out, result, host);
  std::string report_written;  // absolute, for the history (bundle collects it)
  if (!out.report.empty() && done(activity::OUT_REPORT)) {
    // Written before (by the screen, which then died): the history line names that file and its digest.
    if (char* abs = realpath(out.report.c_str(), nullptr)) {
      report_written = abs;
      std::free(abs);
    }
    try {
      report = read_file(out.report);
    } catch (const FileError&) {
    }
  } else if (!out.report.empty()) {
    try {
      write_file_atomic(out.report, report);
      activity::publish_output(activity::OUT_REPORT);
      if (char* abs = realpath(out.report.c_str(), nullptr)) {
        report_written = abs;
        std::free(abs);
      }
      if (!out.quiet && !out.npd) say("{}", out.json ? render_text(result, host) : report);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: -o: {}; the report follows on {}\n", e.what(), out.npd ? "stderr" : "stdout");
      write_text(out.npd ? stderr : stdout, report);
      write_failed = true;
    }
  } else if (!done(activity::OUT_REPORT) && (out.report_to_stdout || (!out.quiet && !out.npd))) {
    say("{}", report);
    activity::publish_output(activity::OUT_REPORT);
  }
  // Drill (SDCSCREEN_DRILL_REPORT_CRASH=html): the screen dies here, after the Prometheus file and the report,
  // before the HTML page and the history line, which its supervisor then writes (src/cli/supervisor.h).
  if (const char* d = std::getenv("SDCSCREEN_DRILL_REPORT_CRASH"); d && std::strcmp(d, "html") == 0)
    std::raise(SIGSEGV);
  if (!out.html.empty() && !done(activity::OUT_HTML)) {  // after the report: a failure here leaves it (78)
    try {
      write_file_atomic(out.html, html_of(result, host));
      activity::publish_output(activity::OUT_HTML);
    } catch (const FileError& e) {
      say_err("sdcscreen: error: --html: {}\n", e.what());
      write_failed = true;
    }
  }
  if (!history.dir.empty() && !done(activity::OUT_HISTORY)) {  // the node's record of this screen, after the report
    try {
      history::Record rec = history::record_of(result, host.hostname, history.full_battery);
      rec.report = report_written;
      rec.run_id = history.run_id;
      rec.report_digest = xxh3_128_hex(report);
      history::append(history.dir, rec);
      activity::publish_output(activity::OUT_HISTORY);
      history::end_pending(history.dir, history.run_id);  // the line is on disk
    } catch (const FileError& e) {
      if (history.is_default) {  // not asked for: said, and the exit code stays the screen's
        say_err("sdcscreen: warning: this screen is not recorded in the default history: {}\n", e.what());
      } else {
        say_err("sdcscreen: error: --history: {}\n", e.what());
        write_failed = true;
      }
    }
  }
  std::fflush(stdout);
  return write_failed;
}

int exit_code_after_outputs(const RunResult& result, bool npd, bool write_failed) {
  int code = npd ? npd_exit_code(result) : result.exit_code();
  if (write_failed && result.exit_code() != EXIT_FAIL) code = npd ? 2 : EXIT_CONFIG;
  return code;
}

}  // namespace sdc
