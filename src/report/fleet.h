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

struct FleetNode {
  std::string node, time, verdict, version, file;  // the newest report's hostname, timing.start, exit.verdict...
  double start_unix = 0;
  int64_t exit_code = 0;
  bool fault_injection = false;
  int reports = 0;                     // reports of this node read (the newest counts)
  std::vector<FleetFailure> failures;  // at most FLEET_FAILURES_KEPT
  size_t failures_total = 0;
  std::string status;  // fail, inconclusive or pass (fleet_status)
  bool stale = false;
  double age_s = 0;
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
  int exit_code = 0;
  std::string verdict;
};

// A report's exit reading for the fleet: 1 fail, 0 pass, anything else (error, slow, interrupted) inconclusive.
std::string fleet_status(int64_t exit_code);
// Adds one report: the node's row is replaced when this report is newer (timing.start; on a tie, the greater
// file name). Returns "" or why the report cannot be placed (its start time is not a time).
std::string fleet_add(Fleet& f, const ReportView& r);
// Ages, stale nodes, signature groups, counts and the fleet's exit code: 1 when any node's newest report failed;
// otherwise 2 when any is inconclusive or stale; otherwise 0.
void fleet_finish(Fleet& f, double now, double stale_after_s);

std::string render_fleet_text(const Fleet& f);
std::string render_fleet_json(const Fleet& f);
std::string render_fleet_html(const Fleet& f);  // html_fleet.cpp

}  // namespace sdc
