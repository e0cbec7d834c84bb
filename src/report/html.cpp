#include "html.h"

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

namespace sdc {
namespace {

using json = nlohmann::json;

// ---- reading the report: a missing key or one of another type reads as the default, never throws ----------

const json& field(const json& j, const char* key) {
  static const json null;
  if (!j.is_object()) return null;
  const auto it = j.find(key);
  return it != j.end() ? *it : null;
}

bool flag(const json& j, const char* key) {
  const json& v = field(j, key);
  return v.is_boolean() && v.get<bool>();
}

std::string str(const json& j, const char* key, const std::string& dflt = "") {
  const json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : dflt;
}

int64_t num(const json& j, const char* key, int64_t dflt = 0) {
  const json& v = field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (!v.is_number_float()) return dflt;
  const double d = v.get<double>();  // a float out of int64_t's range would be undefined to convert
  return std::isfinite(d) && std::fabs(d) < 9e18 ? static_cast<int64_t>(d) : dflt;
}

double real(const json& j, const char* key, double dflt = 0) {
  const json& v = field(j, key);
  return v.is_number() ? v.get<double>() : dflt;
}

const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  const json& v = field(j, key);
  return v.is_array() ? v : empty;
}

const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  const json& v = field(j, key);
  return v.is_object() ? v : empty;
}

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Any JSON value as text for a table cell: strings as they are, the rest as compact JSON.
std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- colours: one per unit class, and the others kept apart from the failing unit's red ----------------------

const char* unit_colour(const std::string& cls) {
  if (cls == "fail") return "#d62728";
  if (cls == "crash") return "#1a1a1a";
  if (cls == "hung") return "#ff9f1c";
  if (cls == "pass") return "#98df8a";
  return "#e0e0e0";  // untested
}
constexpr const char* UNIT_CLASSES[] = {"fail", "crash", "hung", "pass", "untested"};
const char* unit_meaning(const std::string& cls) {
  if (cls == "fail") return "a tile it computed miscompared";
  if (cls == "crash") return "its work killed the screen";
  if (cls == "hung") return "the watchdog gave up on it";
  if (cls == "pass") return "computed tiles, none failed";
  return "computed no tile";
}
constexpr const char* SLOW_COLOUR = "#1f3f9f";  // outline of a slow unit
constexpr const char* TILE_COLOUR = "#8c1010";  // a failing tile of the output (not the unit red)
constexpr const char* BAR_COLOUR = "#555555";   // failures over iterations
constexpr const char* SIGN_COLOUR = "#9467bd";  // bit histogram: sign, exponent, mantissa
constexpr const char* EXP_COLOUR = "#e6850e";
constexpr const char* MANT_COLOUR = "#1f77b4";
constexpr const char* THROUGHPUT_COLOUR = "#6b8fb8";

const char* field_colour(int bit) { return bit == 31 ? SIGN_COLOUR : bit >= 23 ? EXP_COLOUR : MANT_COLOUR; }

std::string unit_class(const std::string& result) {
  return result == "fail" || result == "crash" || result == "hung" || result == "pass" ? result : "untested";
}

// ---- the unit heat map ------------------------------------------------------------------------------------

// Fixed cells that wrap: a package is rows of at most CORES_PER_ROW cores (a column of its hardware threads
// each), a GPU rows of at most SMS_PER_ROW SMs. Sizes never depend on the node, so a 192-CPU node or eight
// 132-SM GPUs give more rows, never smaller or overlapping cells; the figures flow side by side and wrap.
constexpr int CELL = 14, PITCH = 17, ROW_GAP = 6;
constexpr int CORES_PER_ROW = 32, SMS_PER_ROW = 22;

struct Cell {
  std::string name;   // "cpu 3", "cuda:0 sm 17": the data-unit attribute
  std::string title;  // the tooltip
  std::string cls;
  int64_t tiles = 0, failed = 0;
  bool slow = false;
};

std::string cell_svg(const Cell& c, int x, int y) {
  std::string s = fmt::format(R"(<g class="unit {}{}" data-unit="{}" data-failed-tiles="{}" data-tiles="{}">)", c.cls,
                              c.slow ? " slow" : "", esc(c.name), c.failed, c.tiles);
  s += fmt::format("<title>{}</title>", esc(c.title));
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" rx="2" fill="{}"{}/>)", x, y, CELL, CELL,
                   unit_colour(c.cls), c.slow ? fmt::format(R"( stroke="{}" stroke-width="2")", SLOW_COLOUR) : "");
  if (c.cls == "crash")  // a cross, so that a crashed unit reads as one without colour too
    s += fmt::format(R"(<path d="M{} {}l{} {}M{} {}l{} {}" stroke="#ffffff" stroke-width="1.5"/>)", x + 3, y + 3,
                     CELL - 6, CELL - 6, x + CELL - 3, y + 3, -(CELL - 6), CELL - 6);
  if (c.cls == "hung")
    s +=
        fmt::format(R"(<rect x="{}" y="{}" width="2" height="{}" fill="#1a1a1a"/>)", x + CELL / 2 - 1, y + 3, CELL - 6);
  return s + "</g>";
}

std::string cell_title(const Cell& c, const std::string& where) {
  std::string t = fmt::format("{}{}: {}", c.name, where, c.cls);
  if (c.tiles || c.failed) t += fmt::format(", {} of {} tiles failed", c.failed, c.tiles);
  if (c.slow) t += ", slow";
  return t;
}

struct UnitTally {
  std::map<std::string, int> by_class;
  int64_t failed_tiles = 0;
  std::vector<std::string> not_passing;  // "cpu 3 (core 1, package 0): fail, 2 of 100 tiles failed"
  void add(const Cell& c, const std::string& where) {
    ++by_class[c.cls];
    failed_tiles += c.failed;
    if (c.cls != "pass" && c.cls != "untested") not_passing.push_back(cell_title(c, where));
  }
};

std::set<std::string> slow_units(const json& r) {
  std::set<std::string> slow;
  for (const json& u : arr(obj(r, "throughput"), "units"))
    if (flag(u, "slow")) slow.insert(str(u, "unit"));
  return slow;
}

// The CPUs of the node: one figure per package, its cores in order, a core's hardware threads stacked.
std::string cpu_map(const json& r, UnitTally& tally) {
  const std::set<std::string> slow = slow_units(r);
  std::map<int64_t, std::map<int64_t, std::vector<Cell>>> packages;  // package -> core -> threads
  for (const json& u : arr(r, "units")) {
    if (!u.is_object() || str(u, "kind") != "cpu") continue;
    Cell c;
    c.name = fmt::format("cpu {}", num(u, "cpu", -1));
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

// The GPUs of the node: one figure per GPU, its SMs 0..n-1 in rows. An SM without a unit entry computed
// nothing and is drawn untested; a GPU whose context a test's work destroyed is marked crashed as a whole.
std::string gpu_map(const json& r, UnitTally& tally) {
  const std::set<std::string> slow = slow_units(r);
  struct Gpu {
    std::string name, id;
    int64_t sm_count = 0;
    std::map<int64_t, const json*> sms;
    std::vector<std::string> crashes;
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
    if (u.is_object() && str(u, "kind") == "sm") gpus[num(u, "device")].sms[num(u, "sm")] = &u;
  for (const json& t : arr(r, "tests"))
    if (str(t, "result") == "crash" && arr(t, "units_failed").empty() && str(t, "device").rfind("cuda:", 0) == 0) {
      const int64_t d = std::strtoll(str(t, "device").c_str() + 5, nullptr, 10);
      if (gpus.count(d)) gpus[d].crashes.push_back(str(t, "id"));
    }
  std::string s;
  for (auto& [index, g] : gpus) {
    // No GPU has near MAX_SMS SMs: a bound that keeps a corrupt report from making a page of millions of cells.
    constexpr int64_t MAX_SMS = 1024;
    const int64_t n = std::min(MAX_SMS, std::max(g.sm_count, g.sms.empty() ? 0 : g.sms.rbegin()->first + 1));
    const std::string label = fmt::format("cuda:{}", index);
    const bool gpu_slow = slow.count(fmt::format("gpu {}", index)) > 0;
    const int columns = static_cast<int>(std::min<int64_t>(std::max<int64_t>(n, 1), SMS_PER_ROW));
    const int rows = static_cast<int>((n + SMS_PER_ROW - 1) / SMS_PER_ROW);
    const int w = columns * PITCH, h = std::max(rows, 1) * PITCH;
    s += fmt::format(
        R"(<figure class="gpu{}{}" data-device="{}"><figcaption><b>{}</b> {} &middot; {} SMs{}{}</figcaption>)",
        g.crashes.empty() ? "" : " crash", gpu_slow ? " slow" : "", label, label, esc(g.name), n,
        gpu_slow ? " &middot; <b>slow</b>" : "",
        g.crashes.empty() ? ""
                          : " &middot; <b>context lost</b> in " + esc(g.crashes.front()) +
                                (g.crashes.size() > 1 ? fmt::format(" and {} more", g.crashes.size() - 1) : ""));
    if (!g.id.empty()) s += fmt::format(R"(<div class="gpu-id">{}</div>)", esc(g.id));
    s += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w,
                     h);
    for (int64_t sm = 0; sm < n; ++sm) {
      Cell c;
      c.name = fmt::format("{} sm {}", label, sm);
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
    s += "</svg></figure>";
  }
  return s;
}

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
      tally.by_class["fail"], tally.failed_tiles);
  if (units == 0) return s + "<p>No unit computed anything.</p></section>";
  // The legend names only the classes present: a passing node's page shows no failure colour at all.
  s += R"(<div class="legend">)";
  for (const char* cls : UNIT_CLASSES)
    if (tally.by_class[cls])
      s += fmt::format(R"(<span><svg width="12" height="12"><rect width="12" height="12" rx="2" fill="{}"/></svg> {} )"
                       R"({} ({})</span>)",
                       unit_colour(cls), cls, tally.by_class[cls], unit_meaning(cls));
  if (!slow_units(r).empty())
    s += fmt::format(R"(<span><svg width="12" height="12"><rect x="1" y="1" width="10" height="10" fill="none" )"
                     R"(stroke="{}" stroke-width="2"/></svg> slow (throughput below the floor)</span>)",
                     SLOW_COLOUR);
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

// ---- a failing case --------------------------------------------------------------------------------------

std::string miscompare_unit(const json& m) {
  const json& u = obj(m, "unit");
  return str(u, "kind") == "sm" ? fmt::format("cuda:{} sm {}", num(u, "device"), num(u, "sm"))
                                : fmt::format("cpu {}", num(u, "cpu"));
}

// The failing tiles over the output: tiles in index order, row by row (the family's own tile order; docs/
// families.md says how a tile maps to rows and columns). A case with very many tiles folds them into at
// most MAX_CELLS cells, each covering a run of consecutive tiles.
std::string tile_map(const json& t) {
  constexpr int64_t MAX_CELLS = 4096, MAX_COLUMNS = 64, WIDTH = 512;
  std::map<int64_t, int64_t> failing;  // listed tile -> differing elements listed
  for (const json& m : arr(t, "miscompares"))
    if (num(m, "tile", -1) >= 0) ++failing[num(m, "tile")];
  int64_t tiles = num(t, "tiles");
  if (!failing.empty()) tiles = std::max(tiles, failing.rbegin()->first + 1);
  if (tiles <= 0) return "";
  const int64_t per_cell = (tiles + MAX_CELLS - 1) / MAX_CELLS;
  const int64_t cells = (tiles + per_cell - 1) / per_cell;
  const int64_t columns = std::min<int64_t>(
      MAX_COLUMNS, std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(cells))))));
  const int64_t rows = (cells + columns - 1) / columns;
  const int64_t size = std::clamp<int64_t>(WIDTH / columns, 4, 24);
  const int64_t w = columns * size, h = rows * size;
  std::string s = fmt::format(R"(<figure class="tiles"><figcaption>failing tiles of {} per iteration{}, in index )"
                              R"(order, {} per row</figcaption>)",
                              tiles, per_cell > 1 ? fmt::format(" (a cell is {} consecutive tiles)", per_cell) : "",
                              columns * per_cell);
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  // The tiles that passed: full rows, then the last partial row.
  const int64_t full = cells / columns, rest = cells % columns;
  if (full) s += fmt::format(R"(<rect width="{}" height="{}" fill="#eeeeee"/>)", w, full * size);
  if (rest) s += fmt::format(R"(<rect y="{}" width="{}" height="{}" fill="#eeeeee"/>)", full * size, rest * size, size);
  if (size >= 6) {  // grid lines where they stay readable
    for (int64_t c = 1; c < columns; ++c)
      s += fmt::format(R"(<line x1="{0}" y1="0" x2="{0}" y2="{1}" stroke="#ffffff"/>)", c * size, h);
    for (int64_t r = 1; r < rows; ++r)
      s += fmt::format(R"(<line x1="0" y1="{0}" x2="{1}" y2="{0}" stroke="#ffffff"/>)", r * size, w);
  }
  std::map<int64_t, std::pair<std::vector<int64_t>, int64_t>> marked;  // cell -> tiles, elements
  for (const auto& [tile, n] : failing) {
    auto& [list, elements] = marked[tile / per_cell];
    list.push_back(tile);
    elements += n;
  }
  for (const auto& [cell, te] : marked) {
    const auto& [list, elements] = te;
    std::string ids;
    for (int64_t x : list) {
      if (!ids.empty()) ids += ' ';
      ids += std::to_string(x);
    }
    s += fmt::format(R"(<rect class="tile failed" data-tile="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">)"
                     R"(<title>tile {}: {} differing element(s) listed</title></rect>)",
                     ids, (cell % columns) * size, (cell / columns) * size, size, size, TILE_COLOUR, ids, elements);
  }
  return s + "</svg></figure>";
}

// Flipped bits by position, sign on the left: from the signatures (every differing element) when the test
// has them, else from the listed miscompares' xor masks.
std::string bit_histogram(const json& t) {
  int64_t flips[32] = {}, rises[32] = {}, falls[32] = {};
  const char* source = "every differing element (signatures)";
  if (!arr(t, "signatures").empty()) {
    for (const json& g : arr(t, "signatures")) {
      const json& bf = obj(g, "bit_flips");
      const json &up = arr(bf, "zero_to_one"), &down = arr(bf, "one_to_zero");
      for (size_t b = 0; b < 32; ++b) {
        rises[b] += b < up.size() && up[b].is_number() ? up[b].get<int64_t>() : 0;
        falls[b] += b < down.size() && down[b].is_number() ? down[b].get<int64_t>() : 0;
      }
    }
    for (int b = 0; b < 32; ++b) flips[b] = rises[b] + falls[b];
  } else {
    source = "the listed elements";
    for (const json& m : arr(t, "miscompares")) {
      const uint32_t x = static_cast<uint32_t>(std::strtoul(str(m, "xor_mask", "0").c_str(), nullptr, 16));
      for (int b = 0; b < 32; ++b) flips[b] += (x >> b) & 1;
    }
  }
  const int64_t most = *std::max_element(flips, flips + 32);
  if (most == 0) return "";
  constexpr int BAR = 14, LEFT = 36, TOP = 8, PLOT_H = 90, W = LEFT + 32 * BAR + 8, H = TOP + PLOT_H + 34;
  std::string s =
      fmt::format(R"(<figure class="bits"><figcaption>flipped bit positions, over {}</figcaption>)", source);
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", W, H, W, H);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT - 4, TOP + 8, most);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">0</text>)", LEFT - 4, TOP + PLOT_H);
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888888"/>)", LEFT, TOP + PLOT_H, W - 8,
                   TOP + PLOT_H);
  for (int b = 31; b >= 0; --b) {
    const int x = LEFT + (31 - b) * BAR;
    const int64_t bh = flips[b] ? std::max<int64_t>(2, flips[b] * PLOT_H / most) : 0;
    s +=
        fmt::format(R"(<rect class="bit" data-bit="{}" data-flips="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">)"
                    R"(<title>bit {}: {} flip(s){}</title></rect>)",
                    b, flips[b], x + 1, TOP + PLOT_H - bh, BAR - 2, bh, field_colour(b), b, flips[b],
                    rises[b] + falls[b] ? fmt::format(" ({} 0->1, {} 1->0)", rises[b], falls[b]) : "");
  }
  for (const int bit : {31, 30, 23, 22, 16, 8, 0})  // bit numbers at the fields' edges
    s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)",
                     LEFT + (31 - bit) * BAR + BAR / 2, TOP + PLOT_H + 12, bit);
  // The fields as bands under the axis.
  for (const auto& [from, to, colour, name] : std::vector<std::tuple<int, int, const char*, const char*>>{
           {31, 31, SIGN_COLOUR, "sign"}, {30, 23, EXP_COLOUR, "exponent"}, {22, 0, MANT_COLOUR, "mantissa"}}) {
    const int x = LEFT + (31 - from) * BAR, w = (from - to + 1) * BAR;
    s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="4" fill="{}"/>)", x + 1, TOP + PLOT_H + 16, w - 2,
                     colour);
    if (*name)
      s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)", x + w / 2,
                       TOP + PLOT_H + 30, name);
  }
  return s + "</svg></figure>";
}

// The listed differing elements per iteration: when in the run the fault showed.
std::string timeline(const json& t) {
  std::map<int64_t, int64_t> per_iteration;
  for (const json& m : arr(t, "miscompares"))
    if (num(m, "iteration", -1) >= 0) ++per_iteration[num(m, "iteration")];
  if (per_iteration.empty()) return "";
  const int64_t iterations = std::max(num(t, "iterations"), per_iteration.rbegin()->first + 1);
  constexpr int64_t MAX_BARS = 200, LEFT = 36, TOP = 8, PLOT_W = 600, PLOT_H = 60;
  const int64_t per_bar = (iterations + MAX_BARS - 1) / MAX_BARS;
  const int64_t bars = (iterations + per_bar - 1) / per_bar;
  std::map<int64_t, int64_t> per_b;
  for (const auto& [it, n] : per_iteration) per_b[it / per_bar] += n;
  int64_t most = 0;
  for (const auto& [b, n] : per_b) most = std::max(most, n);
  const int64_t bw = std::clamp<int64_t>(PLOT_W / bars, 1, 24), w = LEFT + bars * bw + 8, h = TOP + PLOT_H + 22;
  std::string s = fmt::format(R"(<figure class="timeline"><figcaption>listed differing elements over the {} )"
                              R"(iteration(s){}{}</figcaption>)",
                              iterations, per_bar > 1 ? fmt::format(", {} per bar", per_bar) : "",
                              num(t, "miscompared_elements") > static_cast<int64_t>(arr(t, "miscompares").size())
                                  ? " (only the first elements are listed)"
                                  : "");
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT - 4, TOP + 8, most);
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888888"/>)", LEFT, TOP + PLOT_H, LEFT + bars * bw,
                   TOP + PLOT_H);
  for (const auto& [b, n] : per_b) {
    const int64_t bh = std::max<int64_t>(2, n * PLOT_H / most);
    s += fmt::format(R"(<rect class="iteration" data-iteration="{}" data-elements="{}" x="{}" y="{}" width="{}" )"
                     R"(height="{}" fill="{}"><title>iteration {}{}: {} element(s)</title></rect>)",
                     b * per_bar, n, LEFT + b * bw, TOP + PLOT_H - bh, std::max<int64_t>(1, bw - 1), bh, BAR_COLOUR,
                     b * per_bar, per_bar > 1 ? fmt::format("-{}", b * per_bar + per_bar - 1) : "", n);
  }
  s += fmt::format(R"(<text x="{}" y="{}" class="axis">0</text>)", LEFT, TOP + PLOT_H + 14);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT + bars * bw,
                   TOP + PLOT_H + 14, iterations - 1);
  return s + "</svg></figure>";
}

std::string failing_case(const json& t) {
  const std::string id = str(t, "id"), device = str(t, "device");
  std::string s =
      fmt::format(R"(<section class="case" data-test="{}" data-device="{}" data-result="{}" data-failed-tiles="{}" )"
                  R"(data-elements="{}"><h3>{} on {}: {}</h3>)",
                  esc(id), esc(device), esc(str(t, "result")), num(t, "failed_tiles"), num(t, "miscompared_elements"),
                  esc(id), esc(device), esc(str(t, "result")));
  std::string units;
  for (const json& u : arr(t, "units_failed"))
    units += (units.empty() ? "" : ", ") +
             (device.rfind("cuda", 0) == 0 ? fmt::format("sm {}", text_of(u)) : fmt::format("cpu {}", text_of(u)));
  s += fmt::format(
      "<p>{} failed tile(s), {} differing element(s){}{}; mode {}, {} of {} iterations.</p>", num(t, "failed_tiles"),
      num(t, "miscompared_elements"), units.empty() ? "" : " on " + esc(units),
      field(t, "time_to_fail_s").is_number() ? fmt::format(", first after {:.3f} s", real(t, "time_to_fail_s")) : "",
      esc(str(t, "mode")), num(t, "iterations"), num(t, "iterations_planned"));
  if (!str(t, "reason").empty()) s += "<p>" + esc(str(t, "reason")) + "</p>";
  s += R"(<div class="charts">)" + tile_map(t) + bit_histogram(t) + timeline(t) + "</div>";
  for (const json& g : arr(t, "signatures"))
    s += fmt::format(R"(<p class="signature">signature on {}: <code>{}</code> ({} element(s))</p>)",
                     esc(miscompare_unit(g)), esc(str(g, "signature")), num(g, "elements"));
  const json& mis = arr(t, "miscompares");
  if (!mis.empty()) {
    constexpr size_t ROWS = 20;
    s += "<table><tr><th>iteration</th><th>tile</th><th>unit</th><th>element</th><th>expected</th><th>actual</th>"
         "<th>xor</th><th>ulps</th></tr>";
    for (size_t i = 0; i < mis.size() && i < ROWS; ++i) {
      const json& m = mis[i];
      s += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
          "<td><code>{}</code></td><td>{}</td></tr>",
          num(m, "iteration"), num(m, "tile"), esc(miscompare_unit(m)), esc(str(m, "element_name")),
          esc(str(m, "expected")), esc(str(m, "actual")), esc(str(m, "xor_mask")), num(m, "ulps"));
    }
    s += "</table>";
    if (mis.size() > ROWS) s += fmt::format("<p>{} more listed in the JSON report.</p>", mis.size() - ROWS);
  }
  return s + "</section>";
}

// ---- retests, telemetry, the other tests --------------------------------------------------------------

std::string runs_failed(const json& j) {
  if (!j.is_object()) return "-";
  std::string s = fmt::format("{} of {} failed", num(j, "failed"), num(j, "runs"));
  if (field(j, "same_bits").is_number()) s += fmt::format(", {} with the same bits", num(j, "same_bits"));
  return s;
}

// A retest's unit as the report gives it ({"kind": "cpu", "cpu": 3}, or an SM of a GPU), in words.
std::string retest_unit(const json& u) {
  if (!u.is_object()) return u.is_null() ? "-" : text_of(u);
  if (str(u, "kind") == "sm") return fmt::format("cuda:{} sm {}", text_of(field(u, "device")), text_of(field(u, "sm")));
  return "cpu " + text_of(field(u, "cpu"));
}

// A retest (when the report has one): whether the failure came back on the same unit with the same inputs
// and with fresh ones, and on the unit's siblings.
std::string retest_section(const json& r) {
  std::string rows;
  for (const json& t : arr(r, "tests"))
    for (const json& x : arr(t, "retest")) {
      if (!x.is_object()) continue;
      const std::string unit = retest_unit(field(x, "unit"));
      std::string siblings;
      for (const json& sb : arr(x, "siblings"))
        siblings += fmt::format("{}{} ({}): {} of {} failed", siblings.empty() ? "" : "; ",
                                retest_unit(field(sb, "unit")), str(sb, "relation"), num(sb, "failed"),
                                num(sb, "runs"));
      const std::string cls = str(x, "classification");
      rows += fmt::format(
          R"(<tr data-test="{}" data-unit="{}" data-classification="{}"><td>{}</td><td>{}</td><td><b>{}</b></td>)"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
          esc(str(t, "id")), esc(unit), esc(cls), esc(str(t, "id")), esc(unit), esc(cls),
          field(x, "rate").is_number() ? fmt::format("{:.2f}", real(x, "rate")) : "-",
          esc(runs_failed(field(x, "same_seed"))), esc(runs_failed(field(x, "fresh_seeds"))),
          esc(text_of(field(x, "input_dependent"))), esc(siblings.empty() ? "-" : siblings));
    }
  if (rows.empty()) return "";
  return R"(<section id="retest"><h2>Retest classification</h2><table><tr><th>test</th><th>unit</th>)"
         "<th>classification</th><th>rate</th><th>same seed</th><th>fresh seeds</th><th>input dependent</th>"
         "<th>siblings</th></tr>" +
         rows + "</table></section>";
}

// A strip of every unit's throughput relative to its peers' median, the floor as a line; and any other
// telemetry the report carries, as a table of its keys.
std::string telemetry_section(const json& r) {
  const json& tp = obj(r, "throughput");
  const json& units = arr(tp, "units");
  const json& other = obj(r, "telemetry");
  if (units.empty() && other.empty()) return "";
  std::string s = R"(<section id="telemetry"><h2>Telemetry</h2>)";
  if (!units.empty()) {
    const double floor = real(tp, "floor", 0.85), top = 1.5;
    constexpr int LEFT = 36, TOP = 8, PLOT_H = 80;
    const int n = static_cast<int>(units.size());
    const int bw = std::clamp(1000 / n, 3, 24), w = LEFT + n * bw + 8, h = TOP + PLOT_H + 8;
    auto y_of = [&](double v) { return TOP + PLOT_H - static_cast<int>(std::min(v, top) / top * PLOT_H); };
    s += fmt::format(R"(<figure class="throughput"><figcaption>throughput relative to the median of the unit's )"
                     R"(peers (floor {:.2f}{})</figcaption>)",
                     floor, flag(tp, "fail_slow") ? ", --fail-slow" : "");
    s += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w,
                     h);
    for (const double v : {0.0, 1.0, top})
      s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{:.1f}</text>)", LEFT - 4, y_of(v) + 4, v);
    std::string slow;
    for (int i = 0; i < n; ++i) {
      const json& u = units[static_cast<size_t>(i)];
      const double rel = real(u, "relative");
      const bool is_slow = flag(u, "slow");
      if (is_slow) slow += (slow.empty() ? "" : ", ") + fmt::format("{} at {:.2f}x", str(u, "unit"), rel);
      s += fmt::format(R"(<rect class="throughput{}" data-unit="{}" data-relative="{:.4f}" x="{}" y="{}" width="{}" )"
                       R"(height="{}" fill="{}"><title>{}: {:.2f}x over {} case(s){}</title></rect>)",
                       is_slow ? " slow" : "", esc(str(u, "unit")), rel, LEFT + i * bw, y_of(rel), std::max(1, bw - 1),
                       TOP + PLOT_H - y_of(rel), is_slow ? SLOW_COLOUR : THROUGHPUT_COLOUR, esc(str(u, "unit")), rel,
                       num(u, "cases"), is_slow ? ", slow" : "");
    }
    s += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#333333" stroke-dasharray="4 3"/>)", LEFT,
                     y_of(floor), LEFT + n * bw);
    s += "</svg></figure>";
    s += slow.empty() ? "<p>No slow unit.</p>" : "<p>Slow (not a miscompare): " + esc(slow) + ".</p>";
  }
  if (!other.empty()) {
    s += "<table>";
    for (const auto& [k, v] : other.items()) s += "<tr><th>" + esc(k) + "</th><td>" + esc(text_of(v)) + "</td></tr>";
    s += "</table>";
  }
  return s + "</section>";
}

// Every test in a table that stays folded until opened; the ones that did not pass are listed first.
std::string tests_section(const json& r) {
  const json& tests = arr(r, "tests");
  if (tests.empty()) return "";
  std::string problems, all;
  size_t problem_count = 0;
  for (const json& t : tests) {
    const std::string result = str(t, "result");
    const std::string row = fmt::format(
        R"(<tr class="r-{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td></tr>)",
        esc(result), esc(str(t, "id")), esc(str(t, "device")), esc(str(t, "mode")), esc(result), num(t, "iterations"),
        num(t, "tiles"), real(t, "duration_s"), esc(str(t, "reason")));
    all += row;
    // A case that cannot run on this backend is not a problem: the JSON and the text say so once per reason.
    if (result != "pass" && !(result == "skip" && str(t, "reason").find("not applicable") != std::string::npos) &&
        str(t, "reason").find("runs on GPUs only") == std::string::npos) {
      problems += row;
      ++problem_count;
    }
  }
  const std::string head =
      "<tr><th>test</th><th>device</th><th>mode</th><th>result</th><th>iterations</th><th>tiles</th><th>time "
      "(s)</th><th>reason</th></tr>";
  std::string s = R"(<section id="tests"><h2>Tests</h2>)";
  if (problem_count)
    s += fmt::format("<p>{} test(s) did not pass:</p><table>{}{}</table>", problem_count, head, problems);
  return s + fmt::format("<details><summary>all {} tests</summary><table>{}{}</table></details></section>",
                         tests.size(), head, all);
}

std::string injections_section(const json& r) {
  const json& inj = arr(r, "injections");
  if (inj.empty()) return "";
  std::string s = R"(<section id="injections"><h2>Fault injections</h2><ul>)";
  for (const json& i : inj) {
    const bool fired = flag(i, "fired");
    s += fmt::format("<li><code>{}</code>: {}</li>", esc(str(i, "spec")),
                     !fired                               ? "<b>did not fire</b> (the drill proves nothing)"
                     : field(i, "fired_unit").is_number() ? "fired on unit " + text_of(field(i, "fired_unit"))
                                                          : std::string("fired"));
  }
  return s + "</ul></section>";
}

constexpr const char* STYLE = R"(
body{font-family:sans-serif;margin:0;color:#1a1a1a;background:#ffffff;font-size:14px}
main{padding:0 16px 24px}
header{padding:10px 16px;color:#ffffff}
header h1{margin:0;font-size:24px;display:inline-block;margin-right:16px}
header .meta{display:inline-block;font-size:13px}
.v-pass{background:#1b7837}.v-fail{background:#7f1d1d}.v-error{background:#9a5b00}
.v-slow{background:#3f2f7f}.v-interrupted{background:#555555}
.drill{background:#ffe08a;color:#1a1a1a;padding:4px 16px;font-weight:bold}
pre.reproduce{background:#f2f2f2;padding:6px 8px;margin:8px 0;white-space:pre-wrap;word-break:break-all}
h2{font-size:17px;margin:16px 0 6px}h3{font-size:15px;margin:12px 0 4px}
.legend span{margin-right:14px;white-space:nowrap}.legend svg{vertical-align:middle}
.maps,.charts{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:flex-start}
figure{margin:4px 0}figcaption{font-size:12px;color:#444444;margin-bottom:3px}
.gpu-id{font-size:11px;color:#666666;margin-bottom:3px}
.axis{font-size:9px;fill:#444444}
table{border-collapse:collapse;font-size:12px;margin:4px 0}
td,th{border:1px solid #cccccc;padding:2px 6px;text-align:left;vertical-align:top}
ul.not-passing{margin:6px 0;padding-left:20px;font-size:13px}
section.case{border-top:1px solid #dddddd;margin-top:10px}
.errors{color:#7f1d1d}
.footer{font-size:11px;color:#666666;margin-top:20px}
)";

}  // namespace

std::string render_html(const json& r) {
  const json& exit = obj(r, "exit");
  const std::string verdict = str(exit, "verdict", "error");
  const json& host = obj(r, "host");
  const json& timing = obj(r, "timing");
  const json& tool = obj(r, "tool");
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  page += fmt::format("<title>sdcscreen {}: {}</title>", esc(verdict), esc(str(host, "hostname")));
  page += std::string("<style>") + STYLE + "</style></head><body>";
  page += fmt::format(
      R"(<header class="v-{}" id="verdict" data-verdict="{}" data-exit-code="{}"><h1>{} (exit {})</h1>)"
      R"(<span class="meta">{} &middot; backend {} &middot; profile {} &middot; seed {} &middot; {} &middot; )"
      R"({:.2f} s</span></header>)",
      esc(verdict), esc(verdict), num(exit, "code", -1), esc(upper(verdict)), num(exit, "code", -1),
      esc(str(host, "hostname")), esc(str(r, "backend")), esc(str(r, "profile")), esc(str(r, "seed_text")),
      esc(str(timing, "start")), real(timing, "duration_s"));
  if (flag(r, "fault_injection"))
    page += R"(<div class="drill">FAULT INJECTION RUN: the failures below were injected on purpose, not )"
            R"(found in hardware</div>)";
  page += "<main>";
  page += fmt::format(R"(<pre class="reproduce">{}</pre>)", esc(str(r, "reproduce")));
  const json& sum = obj(r, "summary");
  page += fmt::format(
      "<p>{} tests: {} pass, {} fail, {} error, {} skip, {} crash &middot; {} ({} cpus online) &middot; {}</p>",
      num(sum, "tests"), num(sum, "pass"), num(sum, "fail"), num(sum, "error"), num(sum, "skip"), num(sum, "crash"),
      esc(str(host, "cpu")), num(host, "cpus_online"), esc(str(host, "os")));
  if (!str(r, "backend_reason").empty()) page += "<p>backend: " + esc(str(r, "backend_reason")) + "</p>";
  if (field(r, "interrupted_by_signal").is_number())
    page += fmt::format(R"(<p class="errors">interrupted by signal {}: results are partial</p>)",
                        num(r, "interrupted_by_signal"));
  if (!arr(r, "errors").empty()) {
    page += R"(<ul class="errors">)";
    for (const json& e : arr(r, "errors")) page += "<li>" + esc(text_of(e)) + "</li>";
    page += "</ul>";
  }
  page += units_section(r);
  std::string cases;
  for (const json& t : arr(r, "tests"))
    if (str(t, "result") == "fail" || str(t, "result") == "crash") cases += failing_case(t);
  if (!cases.empty()) page += R"(<section id="failures"><h2>Failures</h2>)" + cases + "</section>";
  page += retest_section(r) + telemetry_section(r) + tests_section(r) + injections_section(r);
  page += fmt::format(
      R"(<p class="footer">sdcscreen {} ({}), report schema {}; rendered from the JSON report.</p></main></body></html>)",
      esc(str(tool, "version")), esc(str(tool, "git")), num(r, "schema_version"));
  return page + "\n";
}

}  // namespace sdc
