// The HTML report (run --html): one self-contained page for the person who triages a node. No network, no
// script, no font file: the styles are inline and every chart is inline SVG, so the page opens the same from
// a ticket attachment, a mail or a disk with no network.
//
// It renders the JSON report (render_json's output, parsed), never the result objects themselves: every
// figure on the page is one the JSON has, so the two cannot disagree, and a report kept from an earlier run
// can be rendered again. Sections, top to bottom: the verdict and the reproduce command (labelled, its lines
// broken between words); a heat map of the node's units (the CPUs by package and core, or each GPU as a grid
// of its SMs), each cell with its unit's number, and a legend; under a GPU's grid, each SM whose miscompares name
// a warp and a lane drilled into its warps (a <details class="sm-warps" data-device data-sm> of rows
// <tr data-warp data-elements data-lanes>, the listed miscompares counted per warp and lane); per failing case the
// failing tiles, the flipped bit positions and every differing element over the iterations (failures_by_iteration); the
// retest classification when the report has one; each unit's relative throughput on an axis in x that reaches the
// fastest one, and other telemetry when present; the other tests and the injections.
//
// Every unit is one SVG group with stable attributes a reader (or a test) can query:
//   <g class="unit fail" data-unit="cpu 3" data-failed-tiles="2" data-tiles="100">
//   <g class="unit pass" data-unit="gpu 0 sm 17" data-failed-tiles="0" data-tiles="48">
// Its second class is one of pass, fail, hung, crash, untested (a JSON result of idle, or an SM with no unit
// entry), each with one colour (unit_colour in html.cpp): fail is #d62728 and nothing else on the page
// uses that colour, so a screenshot shows a failing unit by its pixels alone.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace sdc {

// The page for a JSON report (docs/report.schema.json). Every string of the report is HTML-escaped. Keys only
// some reports have (a test's retest classification, telemetry beside the throughput) are rendered when
// present and leave no empty section when absent; a key that is missing or of another type reads as empty,
// never as an exception.
std::string render_html(const nlohmann::json& report);

// The style every page of the project begins with (the report's, the fleet's): body, header, verdict colours.
inline constexpr const char* PAGE_STYLE = R"(
body{font-family:sans-serif;margin:0;color:#1a1a1a;background:#ffffff;font-size:14px}
main{padding:0 16px 24px}
header{padding:10px 16px;color:#ffffff}
header h1{margin:0;font-size:24px;display:inline-block;margin-right:16px}
header .meta{display:inline-block;font-size:13px}
.v-pass{background:#1b7837}.v-fail{background:#7f1d1d}
)";

}  // namespace sdc
