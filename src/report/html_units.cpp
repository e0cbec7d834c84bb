// The HTML report's unit heat map (html_parts.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/core/device_info.h"
#include "src/report/html_parts.h"
#include "src/report/unit_json.h"

namespace sdc::html {
namespace {

// ---- the unit heat map ------------------------------------------------------------------------------------

// Fixed cells that wrap: a package is rows of at most CORES_PER_ROW cores (a column of its hardware threads
// each), a GPU rows of at most SMS_PER_ROW SMs. Sizes never depend on the node, so a 192-CPU node or eight
// 132-SM GPUs give more rows, never smaller or overlapping cells; the figures flow side by side and wrap. A
// cell is large enough to carry its unit's number (the logical CPU, the SM), up to four digits.
constexpr int CELL = 22, PITCH = 25, ROW_GAP = 6;
constexpr int CORES_PER_ROW = 32, SMS_PER_ROW = 22;

struct Cell {
  std::string name;     // "cpu 3", "cuda:0 sm 17": the data-unit attribute
  std::string title;    // the tooltip
  int64_t number = -1;  // drawn in the cell: the logical CPU, the SM
  std::string cls;
  int64_t tiles = 0, failed = 0;
  bool slow = false;
};

// A cell's drawing: its colour, the marks that make a crashed or hung unit read as such without colour too
// (a cross, a bar), and its number (-1: none) over them in a colour that stands out from the cell's.
std::string cell_marks(const std::string& cls, bool slow, int64_t number, int x, int y) {
  std::string s =
      fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"{}/>)", x, y, CELL, CELL,
                  unit_colour(cls), slow ? fmt::format(R"( stroke="{}" stroke-width="2")", SLOW_COLOUR) : "");
  if (cls == "crash")
    s += fmt::format(R"(<path d="M{} {}l{} {}M{} {}l{} {}" stroke="#777777" stroke-width="1.5"/>)", x + 2, y + 2,
                     CELL - 4, CELL - 4, x + CELL - 2, y + 2, -(CELL - 4), CELL - 4);
  if (cls == "hung")
    s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="3" fill="#1a1a1a"/>)", x + 3, y + CELL - 4, CELL - 6);
  if (number >= 0) {
    const std::string n = std::to_string(number);
    s += fmt::format(R"(<text class="num" x="{}" y="{}" text-anchor="middle" fill="{}"{}>{}</text>)", x + CELL / 2,
                     y + CELL / 2 + 3, cls == "fail" || cls == "crash" ? "#ffffff" : "#1a1a1a",
                     n.size() > 3 ? fmt::format(R"( textLength="{}" lengthAdjust="spacingAndGlyphs")", CELL - 2) : "",
                     n);
  }
  return s;
}

std::string cell_svg(const Cell& c, int x, int y) {
  return fmt::format(R"(<g class="unit {}{}" data-unit="{}" data-failed-tiles="{}" data-tiles="{}"><title>{}</title>)",
                     c.cls, c.slow ? " slow" : "", esc(c.name), c.failed, c.tiles, esc(c.title)) +
         cell_marks(c.cls, c.slow, c.number, x, y) + "</g>";
}

std::string cell_title(const Cell& c, const std::string& where) {
  std::string t = fmt::format("{}{}: {}", c.name, where, c.cls);
  if (c.tiles || c.failed) t += fmt::format(", {} of {} tiles failed", c.failed, c.tiles);
  if (c.slow) t += ", slow";
  return t;
}

struct UnitTally {
  std::map<std::string, int> by_class;
  int whole_gpus_failed = 0;  // GPUs that failed a test whose kernels span them (no SM is named)
  int64_t failed_tiles = 0;
  std::vector<std::string> not_passing;  // "cpu 3 (core 1, package 0): fail, 2 of 100 tiles failed"
  void add(const Cell& c, const std::string& where) {
    ++by_class[c.cls];
    failed_tiles += c.failed;
    if (c.cls != "pass" && c.cls != "untested") not_passing.push_back(cell_title(c, where));
  }
};

}  // namespace

std::set<std::string> slow_units(const json& r) {
  std::set<std::string> slow;
  for (const json& u : arr(obj(r, "throughput"), "units"))
    if (flag(u, "slow")) slow.insert(str(u, "unit"));
  return slow;
}

namespace {

// The CPUs of the node: one figure per package, its cores in order, a core's hardware threads stacked.
std::string cpu_map(const json& r, UnitTally& tally) {
  const std::set<std::string> slow = slow_units(r);
  std::map<int64_t, std::map<int64_t, std::vector<Cell>>> packages;  // package -> core -> threads
  for (const json& u : arr(r, "units")) {
    if (!u.is_object() || str(u, "kind") != "cpu") continue;
    Cell c;
    c.name = unit_text(UnitName::of_cpu(static_cast<int>(num(u, "cpu", -1))));
    c.number = num(u, "cpu", -1);
    c.cls = unit_class(str(u, "result"));
    c.tiles = num(u, "tiles");
    c.failed = num(u, "failed_tiles");
    c.slow = slow.count(c.name) > 0;
    const int64_t core = num(u, "core", -1), package = num(u, "package", -1);
    const std::string where = fmt::format(" (core {}, package {})", core, package);
    c.title = cell_title(c, where);
    tally.add(c, where);
    packages[package][core].push_back(std::move(c));
  }
  std::string s;
  for (const auto& [package, cores] : packages) {
    size_t threads = 1, cpus = 0;
    for (const auto& [core, cells] : cores) {
      threads = std::max(threads, cells.size());
      cpus += cells.size();
    }
    const int columns = static_cast<int>(std::min<size_t>(cores.size(), CORES_PER_ROW));
    const int rows = static_cast<int>((cores.size() + CORES_PER_ROW - 1) / CORES_PER_ROW);
    const int row_h = static_cast<int>(threads) * PITCH + ROW_GAP;
    const int w = columns * PITCH, h = rows * row_h;
    s += fmt::format(
        R"(<figure class="package" data-package="{}"><figcaption>package {}: {} cpus, {} cores</figcaption>)", package,
        package < 0 ? std::string("?") : std::to_string(package), cpus, cores.size());
    s += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w,
                     h);
    int i = 0;
    for (const auto& [core, cells] : cores) {
      const int x = (i % CORES_PER_ROW) * PITCH, y0 = (i / CORES_PER_ROW) * row_h;
      for (size_t t = 0; t < cells.size(); ++t) s += cell_svg(cells[t], x, y0 + static_cast<int>(t) * PITCH);
      ++i;
    }
    s += "</svg></figure>";
  }
  return s;
}

// ---- the drill-down of a failing SM into its warps and lanes ----------------------------------------------

// Per GPU and SM: the listed miscompares that name a warp and a lane (a kernel that documents its
// thread-to-element map puts them on each miscompare), counted per warp and, in it, per lane.
constexpr int64_t LANES = 32, MAX_WARPS = 32;  // a block has at most 1024 threads
constexpr int LANE_W = 6, LANE_H = 12;
struct WarpCounts {
  int64_t elements = 0;
  std::map<int64_t, int64_t> lanes;
};
using SmWarps = std::map<int64_t, std::map<int64_t, std::map<int64_t, WarpCounts>>>;  // gpu -> sm -> warp

SmWarps warps_by_sm(const json& r) {
  SmWarps out;
  for (const json& t : arr(r, "tests"))
    for (const json& m : arr(t, "miscompares")) {
      UnitName u;
      if (!m.is_object() || !unit_from_json(field(m, "unit"), u) || !u.is_sm() || u.gpu < 0) continue;
      const int64_t warp = num(m, "warp", -1), lane = num(m, "lane", -1);
      if (warp < 0 || warp >= MAX_WARPS || lane < 0 || lane >= LANES) continue;
      WarpCounts& w = out[u.gpu][u.sm][warp];
      ++w.elements;
      ++w.lanes[lane];
    }
  return out;
}

// One failing SM's warps: a row per warp that holds failing elements, with their count and a strip of the warp's
// 32 lanes in which each lane that held one is filled (so a lane whose datapath is bad reads as one column).
std::string sm_warps(const std::string& device, int64_t gpu, int64_t sm, const std::map<int64_t, WarpCounts>& warps) {
  int64_t elements = 0;
  for (const auto& [warp, w] : warps) elements += w.elements;
  std::string s = fmt::format(
      R"(<details class="sm-warps" data-device="{}" data-sm="{}" data-elements="{}" open><summary>{}: {} listed )"
      R"(failing element{} by warp and lane</summary><table class="warps"><tr><th>warp</th><th>elements</th>)"
      R"(<th>lanes 0..31</th><th>lane (elements)</th></tr>)",
      device, sm, elements, esc(unit_text(UnitName::of_sm(static_cast<int>(gpu), static_cast<int>(sm)))), elements,
      elements == 1 ? "" : "s");
  for (const auto& [warp, w] : warps) {
    std::string lanes, strip, listed;
    for (const auto& [lane, n] : w.lanes) {
      lanes.append(lanes.empty() ? "" : " ").append(std::to_string(lane));  // appended: GCC 12 warns of a false bound
      listed += fmt::format("{}{} ({})", listed.empty() ? "" : ", ", lane, n);
    }
    for (int64_t l = 0; l < LANES; ++l)
      strip += fmt::format(R"(<rect x="{}" y="0" width="{}" height="{}" fill="{}"><title>lane {}: {}</title></rect>)",
                           l * LANE_W, LANE_W - 1, LANE_H, w.lanes.count(l) ? LANE_COLOUR : "#e6e6e6", l,
                           w.lanes.count(l) ? w.lanes.at(l) : 0);
    s += fmt::format(
        R"(<tr data-warp="{}" data-elements="{}" data-lanes="{}"><td>{}</td><td>{}</td><td><svg class="lanes" )"
        R"(width="{}" height="{}">{}</svg></td><td>{}</td></tr>)",
        warp, w.elements, lanes, warp, w.elements, LANES * LANE_W, LANE_H, strip, listed);
  }
  return s + "</table></details>";
}

// The GPUs of the node: one figure per GPU, its SMs 0..n-1 in rows. An SM without a unit entry computed
// nothing and is drawn untested; a GPU whose context a test's work destroyed is marked crashed as a whole.
// Under the grid, each SM whose miscompares name warps and lanes drills into them (sm_warps).
std::string gpu_map(const json& r, UnitTally& tally) {
  const std::set<std::string> slow = slow_units(r);
  const SmWarps warps = warps_by_sm(r);
  struct Gpu {
    std::string name, id;
    int64_t sm_count = 0;
    std::map<int64_t, const json*> sms;
    std::vector<std::string> crashes;
    // Failing tests whose kernels span the GPU (a replay's, a library's): no SM is named, the GPU failed.
    std::vector<std::string> spanning;
    int64_t spanning_failed_tiles = 0;
  };
  std::map<int64_t, Gpu> gpus;
  for (const json& d : arr(r, "devices"))
    if (d.is_object() && str(d, "kind") != "cpu") {
      Gpu& g = gpus[num(d, "index")];
      g.name = str(d, "name");
      g.id = str(d, "uuid") + (str(d, "pci_bus_id").empty() ? "" : "  pci " + str(d, "pci_bus_id"));
      g.sm_count = num(d, "sm_count");
    }
  for (const json& u : arr(r, "units"))
    if (u.is_object() && str(u, "kind") == "sm")
      gpus[num(u, u.contains("gpu") ? "gpu" : "device")].sms[num(u, "sm")] = &u;
  for (const json& t : arr(r, "tests")) {
    const std::string result = str(t, "result");
    const int64_t d = DeviceInfo::index_of_label(str(t, "device"));
    if ((result != "crash" && result != "fail") || !arr(t, "units_failed").empty() || !gpus.count(d)) continue;
    if (result == "crash") {
      gpus[d].crashes.push_back(str(t, "id"));
    } else {
      gpus[d].spanning.push_back(str(t, "id"));
      gpus[d].spanning_failed_tiles += num(t, "failed_tiles");
    }
  }
  std::string s;
  for (auto& [index, g] : gpus) {
    // No GPU has near MAX_SMS SMs: a bound that keeps a corrupt report from making a page of millions of cells.
    constexpr int64_t MAX_SMS = 1024;
    const int64_t n = std::min(MAX_SMS, std::max(g.sm_count, g.sms.empty() ? 0 : g.sms.rbegin()->first + 1));
    const std::string device = fmt::format("cuda:{}", index);  // the tests' device (data-device)
    const std::string label = unit_text(UnitName::of_gpu(static_cast<int>(index)));
    const bool gpu_slow = slow.count(label) > 0;
    const int columns = static_cast<int>(std::min<int64_t>(std::max<int64_t>(n, 1), SMS_PER_ROW));
    const int rows = static_cast<int>((n + SMS_PER_ROW - 1) / SMS_PER_ROW);
    const int w = columns * PITCH, h = std::max(rows, 1) * PITCH;
    const auto first_and_more = [](const std::vector<std::string>& ids) {
      return esc(ids.front()) + (ids.size() > 1 ? fmt::format(" and {} more", ids.size() - 1) : "");
    };
    s += fmt::format(
        R"(<figure class="gpu{}{}{}" data-device="{}"><figcaption><b>{}</b> {} &middot; {} SMs{}{}{}</figcaption>)",
        g.crashes.empty() ? "" : " crash", g.spanning.empty() ? "" : " fail", gpu_slow ? " slow" : "", device, label,
        esc(g.name), n, gpu_slow ? " &middot; <b>slow</b>" : "",
        g.crashes.empty() ? "" : " &middot; <b>context lost</b> in " + first_and_more(g.crashes),
        g.spanning.empty() ? ""
                           : " &middot; <b>failed</b> in " + first_and_more(g.spanning) +
                                 " (its kernels span the GPU: no SM is named)");
    if (!g.id.empty()) s += fmt::format(R"(<div class="gpu-id">{}</div>)", esc(g.id));
    s += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w,
                     h);
    for (int64_t sm = 0; sm < n; ++sm) {
      Cell c;
      c.name = unit_text(UnitName::of_sm(static_cast<int>(index), static_cast<int>(sm)));
      c.number = sm;
      const auto it = g.sms.find(sm);
      if (it != g.sms.end()) {
        c.cls = unit_class(str(*it->second, "result"));
        c.tiles = num(*it->second, "tiles");
        c.failed = num(*it->second, "failed_tiles");
      } else {
        c.cls = "untested";
      }
      c.title = cell_title(c, "");
      tally.add(c, "");
      s += cell_svg(c, static_cast<int>(sm % SMS_PER_ROW) * PITCH, static_cast<int>(sm / SMS_PER_ROW) * PITCH);
    }
    if (!g.spanning.empty()) {  // the GPU as a whole failed: a frame in the failing colour around its SMs
      s += fmt::format(R"(<rect class="gpu-failed" x="1" y="1" width="{}" height="{}" fill="none" stroke="{}" )"
                       R"(stroke-width="2"/>)",
                       w - 2, h - 2, unit_colour("fail"));
      ++tally.whole_gpus_failed;
      tally.failed_tiles += g.spanning_failed_tiles;
      tally.not_passing.push_back(fmt::format(
          "{}: fail, {} tile(s) of kernels that span the GPU failed in {}{}", label, g.spanning_failed_tiles,
          g.spanning.front(), g.spanning.size() > 1 ? fmt::format(" and {} more", g.spanning.size() - 1) : ""));
    }
    s += "</svg>";
    if (const auto it = warps.find(index); it != warps.end())
      for (const auto& [sm, by_warp] : it->second)
        if (sm < n) s += sm_warps(device, index, sm, by_warp);
    s += "</figure>";
  }
  return s;
}

}  // namespace

std::string units_section(const json& r) {
  UnitTally tally;
  const bool gpus = std::any_of(arr(r, "units").begin(), arr(r, "units").end(),
                                [](const json& u) { return u.is_object() && str(u, "kind") == "sm"; }) ||
                    str(r, "backend") != "cpu";
  const std::string maps = gpus ? gpu_map(r, tally) : cpu_map(r, tally);
  int units = 0;
  for (const auto& [cls, n] : tally.by_class) units += n;
  std::string s = fmt::format(
      R"(<section id="units" data-units="{}" data-failing-units="{}" data-failed-tiles="{}"><h2>Units</h2>)", units,
      tally.by_class["fail"] + tally.whole_gpus_failed, tally.failed_tiles);
  if (units == 0) return s + "<p>No unit computed anything.</p></section>";
  // The legend: what a cell's number is and how the cells are laid out, then each class present with its
  // count (only those present: a passing node's page shows no failure colour at all), as the cells draw it.
  s += R"(<div class="legend">)";
  s += fmt::format(R"(<span class="numbers"><svg width="{0}" height="{0}">{1}</svg> the number in a cell: {2}</span>)",
                   CELL, cell_marks("untested", false, 0, 0, 0),
                   gpus ? fmt::format("the SM of the GPU, in rows of {}", SMS_PER_ROW)
                        : fmt::format("the logical CPU; a package's cores left to right ({} to a row), a core's "
                                      "hardware threads one above the other",
                                      CORES_PER_ROW));
  for (const char* cls : UNIT_CLASSES)
    if (tally.by_class[cls])
      s += fmt::format(R"(<span class="class" data-class="{0}"><svg width="{2}" height="{2}">{1}</svg> {0} {3} ({4}))"
                       R"(</span>)",
                       cls, cell_marks(cls, false, -1, 0, 0), CELL, tally.by_class[cls], unit_meaning(cls));
  if (tally.whole_gpus_failed)
    s += fmt::format(
        R"(<span class="class" data-class="gpu-fail"><svg width="{0}" height="{0}"><rect x="1" y="1" )"
        R"(width="{1}" height="{1}" fill="none" stroke="{2}" stroke-width="2"/></svg> failed GPU {3} (a test )"
        R"(whose kernels span the GPU failed: no SM is named)</span>)",
        CELL, CELL - 2, unit_colour("fail"), tally.whole_gpus_failed);
  if (!slow_units(r).empty())
    s += fmt::format(R"(<span><svg width="{0}" height="{0}"><rect x="1" y="1" width="{1}" height="{1}" fill="none" )"
                     R"(stroke="{2}" stroke-width="2"/></svg> slow (throughput below the floor)</span>)",
                     CELL, CELL - 2, SLOW_COLOUR);
  s += "</div>";
  s += R"(<div class="maps">)" + maps + "</div>";
  if (!tally.not_passing.empty()) {
    constexpr size_t LISTED = 64;
    s += R"(<ul class="not-passing">)";
    for (size_t i = 0; i < tally.not_passing.size() && i < LISTED; ++i)
      s += "<li>" + esc(tally.not_passing[i]) + "</li>";
    if (tally.not_passing.size() > LISTED) s += fmt::format("<li>and {} more</li>", tally.not_passing.size() - LISTED);
    s += "</ul>";
  }
  return s + "</section>";
}

}  // namespace sdc::html
