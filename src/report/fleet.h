// The fleet view (`sdcscreen fleet`): many nodes' JSON reports reduced to one compact row per node (its newest
// report), the failures grouped by bit signature across nodes, the nodes not screened recently, and the files
// that were not reports. Rendered as text, JSON and one self-contained HTML page (html_fleet.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/report/report_reader.h"

namespace sdc {

// A failing unit of a node's newest report. identity names the hardware: "cpu 3", or "gpu 0 sm 17 (GPU-<uuid>)"
// (unit_text).
struct FleetFailure {
  std::string test, identity, signature, classification;  // signature, classification: "" when the report has none
};

// One report as a node's row shows it.
struct FleetReport {
  std::string time, verdict, version, file;  // timing.start, exit.verdict, tool.version, the file read
  double start_unix = 0;
  int64_t exit_code = 0;
  bool fault_injection = false;
  std::vector<FleetFailure> failures;  // at most FLEET_FAILURES_KEPT
  size_t failures_total = 0;
};

// A report dated more than this after the fleet view's time is dated in the future: its node's clock was wrong
// when it ran (a boot before NTP set the clock). Such a report is never a node's newest, so it cannot hide the
// reports written after the clock was set; a node with one is inconclusive (fail when one of its reports failed
// and its newest did not: a failure is never hidden by its date).
constexpr double FLEET_CLOCK_SKEW_S = 300;

// A node's row: the report it shows (the base: its newest report dated at most FLEET_CLOCK_SKEW_S ahead, or the
// one dated in the future that fleet_finish puts in its place) and what else was read of it.
struct FleetNode : FleetReport {
  std::string node;        // host.hostname
  int reports = 0;         // reports of this node read (the newest counts)
  int future_reports = 0;  // of them, dated in the future
  // Before fleet_finish, the latest-dated report dated in the future; after it, when shows_future, the row's
  // report dated within the clock skew (empty when the node has none).
  FleetReport future;
  bool shows_future = false;  // the row is a report dated in the future (fleet_finish)
  std::string status;         // fail, inconclusive or pass (fleet_status; inconclusive with a report in the future)
  bool stale = false;
  double age_s = 0;  // negative for a row dated in the future
};

constexpr size_t FLEET_FAILURES_KEPT = 32;  // per node: a node failing on every core is one line, not thousands

struct FleetSignature {
  std::string signature;
  std::vector<std::pair<std::string, std::string>> nodes;  // (node, identities), by node name
};

struct Fleet {
  std::map<std::string, FleetNode> nodes;                       // by node name
  std::vector<std::pair<std::string, std::string>> unreadable;  // (path, one-line reason)
  size_t files_read = 0, reports_read = 0;
  // Set by fleet_finish:
  double now = 0, stale_after_s = 0;
  std::vector<FleetSignature> signatures;  // most nodes first
  size_t failing = 0, inconclusive = 0, passing = 0, stale = 0;
  size_t dated_in_future = 0;  // nodes with a report dated in the future
  int exit_code = 0;
  std::string verdict;
};

// A report's exit reading for the fleet: 1 fail, 0 pass, anything else (error, slow, interrupted) inconclusive.
std::string fleet_status(int64_t exit_code);
// Adds one report read at time now: the node's row is replaced when this report is newer (timing.start; on a
// tie, the greater file name), and a report dated in the future (more than FLEET_CLOCK_SKEW_S after now) is
// kept apart, never the newest. Returns "" or why the report cannot be placed (its start time is not a time,
// its host.hostname is empty).
std::string fleet_add(Fleet& f, const ReportView& r, double now);
// Each node's row and status, ages, stale nodes, signature groups, counts and the fleet's exit code: 1 when any
// node failed; otherwise 2 when any is inconclusive (a report dated in the future included) or stale; otherwise
// 0.
void fleet_finish(Fleet& f, double now, double stale_after_s);

std::string render_fleet_text(const Fleet& f);
std::string render_fleet_json(const Fleet& f);
std::string render_fleet_html(const Fleet& f);  // html_fleet.cpp

// The report of a node dated in the future (the row's or the one kept apart); nullptr when it has none.
const FleetReport* future_report(const FleetNode& n);

}  // namespace sdc
