// The HTML report's view of a failing case: tiles, bits, iterations (html_parts.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/device_info.h"
#include "src/report/html_parts.h"
#include "src/report/report.h"
#include "src/report/unit_json.h"

namespace sdc::html {
namespace {

// ---- a failing case --------------------------------------------------------------------------------------

std::string miscompare_unit(const json& m) {
  UnitName n;
  return unit_from_json(obj(m, "unit"), n) ? unit_text(n) : fmt::format("cpu {}", num(obj(m, "unit"), "cpu"));
}

// The failing tiles over the output, where the report's tile_grid puts them (tile t at row t / cols, column
// t % cols: the output's own rows and columns, or heads and query blocks), else in index order row by row. A
// large grid folds blocks of fr x fc tiles into one cell, at most MAX_SIDE cells each way. Every failing tile
// with element values is drawn from the report's failed_tile_ids (schema 21); an older report, or tiles judged by
// digests alone, has only the listed miscompares' tiles (at most a few elements per tile and per test), and the
// caption says so with the count of failing tiles in all.
std::string tile_map(const json& t) {
  constexpr int64_t MAX_SIDE = 64, WIDTH = 512;
  std::map<int64_t, int64_t> failing;  // failing tile -> differing elements listed
  for (const json& m : arr(t, "miscompares"))
    if (num(m, "tile", -1) >= 0) ++failing[num(m, "tile")];
  const size_t listed_tiles = failing.size();
  const json& ids = arr(t, "failed_tile_ids");
  for (const json& id : ids)
    if (id.is_number_integer() && id.get<int64_t>() >= 0) failing.emplace(id.get<int64_t>(), 0);
  const bool complete = !ids.empty();
  int64_t tiles = num(t, "tiles");
  if (!failing.empty()) tiles = std::max(tiles, failing.rbegin()->first + 1);
  if (tiles <= 0) return "";
  const json& g = field(t, "tile_grid");
  int64_t grid_rows = num(g, "rows", 0), grid_cols = num(g, "cols", 0);
  std::string axes = str(g, "axes");
  if (grid_rows <= 0 || grid_cols <= 0 || grid_rows * grid_cols < tiles) {  // no grid: index order, near square
    grid_cols = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(tiles)))));
    grid_rows = (tiles + grid_cols - 1) / grid_cols;
    axes = "tiles in index order, row by row";
  }
  const int64_t fr = (grid_rows + MAX_SIDE - 1) / MAX_SIDE, fc = (grid_cols + MAX_SIDE - 1) / MAX_SIDE;
  const int64_t rows = (grid_rows + fr - 1) / fr, columns = (grid_cols + fc - 1) / fc;
  const int64_t size = std::clamp<int64_t>(WIDTH / std::max(rows, columns), 4, 24);
  const int64_t w = columns * size, h = rows * size;
  const std::string which =
      complete ? "every one, in any iteration"
               : fmt::format(
                     "only the {} tile(s) of the listed elements are drawn; {} tile failure(s) in all, over the "
                     "iterations",
                     listed_tiles, num(t, "failed_tiles"));
  std::string s = fmt::format(
      R"(<figure class="tiles" data-complete="{}"><figcaption>failing tiles of {} per iteration ({}): {} ({} x {}){})"
      R"(</figcaption>)",
      complete ? "all" : "listed", tiles, which, esc(axes), grid_rows, grid_cols,
      fr * fc > 1 ? fmt::format(", a cell is {} x {} tiles", fr, fc) : "");
  s += fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" data-rows="{}" data-cols="{}">)",
      w, h, w, h, rows, columns);
  s += fmt::format(R"(<rect width="{}" height="{}" fill="#eeeeee"/>)", w, h);  // the tiles that passed
  if (size >= 6) {                                                             // grid lines where they stay readable
    for (int64_t c = 1; c < columns; ++c)
      s += fmt::format(R"(<line x1="{0}" y1="0" x2="{0}" y2="{1}" stroke="#ffffff"/>)", c * size, h);
    for (int64_t r = 1; r < rows; ++r)
      s += fmt::format(R"(<line x1="0" y1="{0}" x2="{1}" y2="{0}" stroke="#ffffff"/>)", r * size, w);
  }
  std::map<std::pair<int64_t, int64_t>, std::pair<std::vector<int64_t>, int64_t>> marked;  // cell -> tiles, elements
  for (const auto& [tile, n] : failing) {
    auto& [list, elements] = marked[{tile / grid_cols / fr, tile % grid_cols / fc}];
    list.push_back(tile);
    elements += n;
  }
  for (const auto& [cell, te] : marked) {
    const auto& [list, elements] = te;
    std::string tile_ids;
    for (int64_t x : list) {
      if (!tile_ids.empty()) tile_ids += ' ';
      tile_ids += std::to_string(x);
    }
    s += fmt::format(
        R"(<rect class="tile failed" data-tile="{}" data-row="{}" data-col="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">)"
        R"(<title>tile {}: {} differing element(s) listed</title></rect>)",
        tile_ids, cell.first, cell.second, cell.second * size, cell.first * size, size, size, TILE_COLOUR, tile_ids,
        elements);
  }
  return s + "</svg></figure>";
}

// Flipped bits by position, the highest on the left, in the format of the family's values (the signatures'
// bit_flips.format: fp32, binary64 over its 64 bits, int32 without fields): from the signatures (every
// differing element) when the test has them, else from the listed miscompares' xor masks (32-bit words).
std::string bit_histogram(const json& t) {
  int64_t flips[64] = {}, rises[64] = {}, falls[64] = {};
  std::string format = "fp32";
  const char* source = "every differing element (signatures)";
  if (!arr(t, "signatures").empty()) {
    format = str(obj(arr(t, "signatures")[0], "bit_flips"), "format", "fp32");
    for (const json& g : arr(t, "signatures")) {
      const json& bf = obj(g, "bit_flips");
      const json &up = arr(bf, "zero_to_one"), &down = arr(bf, "one_to_zero");
      for (size_t b = 0; b < 64; ++b) {
        rises[b] += b < up.size() && up[b].is_number() ? up[b].get<int64_t>() : 0;
        falls[b] += b < down.size() && down[b].is_number() ? down[b].get<int64_t>() : 0;
      }
    }
    for (int b = 0; b < 64; ++b) flips[b] = rises[b] + falls[b];
  } else {
    source = "the listed elements";
    for (const json& m : arr(t, "miscompares")) {
      const uint32_t x = static_cast<uint32_t>(std::strtoul(str(m, "xor_mask", "0").c_str(), nullptr, 16));
      for (int b = 0; b < 32; ++b) flips[b] += (x >> b) & 1;
    }
  }
  const int width = format == "binary64" ? 64 : 32, top = width - 1;
  const int64_t most = *std::max_element(flips, flips + width);
  if (most == 0) return "";
  // The fields as bands under the axis (from bit, to bit), and the bit numbers at their edges.
  using Band = std::tuple<int, int, const char*, const char*>;
  std::vector<Band> bands = {
      {31, 31, SIGN_COLOUR, "sign"}, {30, 23, EXP_COLOUR, "exponent"}, {22, 0, MANT_COLOUR, "mantissa"}};
  std::vector<int> edges = {31, 30, 23, 22, 16, 8, 0};
  if (format == "binary64") {
    bands = {{63, 63, SIGN_COLOUR, "sign"}, {62, 52, EXP_COLOUR, "exponent"}, {51, 0, MANT_COLOUR, "mantissa"}};
    edges = {63, 62, 52, 51, 32, 16, 0};
  } else if (format == "int32") {
    bands = {{31, 0, MANT_COLOUR, "int32 (two's complement)"}};
    edges = {31, 24, 16, 8, 0};
  }
  auto colour = [&](int b) {
    for (const auto& [from, to, c, name] : bands)
      if (b <= from && b >= to) return c;
    return MANT_COLOUR;
  };
  const int BAR = width == 64 ? 8 : 14;
  constexpr int LEFT = 36, TOP = 8, PLOT_H = 90;
  const int W = LEFT + width * BAR + 8, H = TOP + PLOT_H + 34;
  std::string s = fmt::format(
      R"(<figure class="bits" data-format="{}"><figcaption>flipped bit positions ({}), over {}</figcaption>)",
      esc(format), esc(format), source);
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", W, H, W, H);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT - 4, TOP + 8, most);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">0</text>)", LEFT - 4, TOP + PLOT_H);
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888888"/>)", LEFT, TOP + PLOT_H, W - 8,
                   TOP + PLOT_H);
  for (int b = top; b >= 0; --b) {
    const int x = LEFT + (top - b) * BAR;
    const int64_t bh = flips[b] ? std::max<int64_t>(2, flips[b] * PLOT_H / most) : 0;
    s +=
        fmt::format(R"(<rect class="bit" data-bit="{}" data-flips="{}" x="{}" y="{}" width="{}" height="{}" fill="{}">)"
                    R"(<title>bit {}: {} flip(s){}</title></rect>)",
                    b, flips[b], x + 1, TOP + PLOT_H - bh, BAR - 2, bh, colour(b), b, flips[b],
                    rises[b] + falls[b] ? fmt::format(" ({} 0->1, {} 1->0)", rises[b], falls[b]) : "");
  }
  for (const int bit : edges)
    s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)",
                     LEFT + (top - bit) * BAR + BAR / 2, TOP + PLOT_H + 12, bit);
  for (const auto& [from, to, c, name] : bands) {
    const int x = LEFT + (top - from) * BAR, w = (from - to + 1) * BAR;
    s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="4" fill="{}"/>)", x + 1, TOP + PLOT_H + 16, w - 2, c);
    if (*name)
      s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)", x + w / 2,
                       TOP + PLOT_H + 30, name);
  }
  return s + "</svg></figure>";
}

// The differing elements per iteration: when in the run the fault showed, and whether it stayed. The report's
// failures_by_iteration counts every element (schema 15); an older report has only the listed ones (the
// first few per tile and per test), and the caption says so: a persistent fault would look as if it faded.
std::string timeline(const json& t) {
  std::map<int64_t, int64_t> per_iteration;
  const json& counted = arr(t, "failures_by_iteration");
  const bool all = !counted.empty();
  for (const json& n : counted)
    if (num(n, "iteration", -1) >= 0 && num(n, "elements") > 0)
      per_iteration[num(n, "iteration")] += num(n, "elements");
  if (!all)
    for (const json& m : arr(t, "miscompares"))
      if (num(m, "iteration", -1) >= 0) ++per_iteration[num(m, "iteration")];
  if (per_iteration.empty()) return "";
  // A corrupt report's iteration count must not make a page of millions of bars: bars fold iterations.
  const int64_t iterations = std::max(num(t, "iterations"), per_iteration.rbegin()->first + 1);
  constexpr int64_t MAX_BARS = 200, LEFT = 58, TOP = 8, PLOT_W = 600, PLOT_H = 60, BOTTOM = 30;
  const int64_t per_bar = (iterations + MAX_BARS - 1) / MAX_BARS;
  const int64_t bars = (iterations + per_bar - 1) / per_bar;
  std::map<int64_t, int64_t> per_b;
  for (const auto& [it, n] : per_iteration) per_b[it / per_bar] += n;
  int64_t most = 0;
  for (const auto& [b, n] : per_b) most = std::max(most, n);
  const int64_t bw = std::clamp<int64_t>(PLOT_W / bars, 1, 24), w = LEFT + bars * bw + 8, h = TOP + PLOT_H + BOTTOM;
  std::string s = fmt::format(
      R"(<figure class="timeline" data-counted="{}"><figcaption>{} per iteration, over the {} iteration(s){}{})"
      R"(</figcaption>)",
      all ? "all" : "listed", all ? "differing elements (every one counted)" : "listed differing elements", iterations,
      per_bar > 1 ? fmt::format(", {} per bar", per_bar) : "",
      all ? "" : " (this report counts only the listed ones: the first few per tile and per test)");
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT - 4, TOP + 8, most);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">0</text>)", LEFT - 4, TOP + PLOT_H);
  s += fmt::format(R"r(<text class="axis-title" text-anchor="middle" transform="translate(12 {}) rotate(-90)">)r"
                   R"(elements</text>)",
                   TOP + PLOT_H / 2);
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888888"/>)", LEFT, TOP + PLOT_H, LEFT + bars * bw,
                   TOP + PLOT_H);
  for (const auto& [b, n] : per_b) {
    const int64_t bh = std::max<int64_t>(2, n * PLOT_H / most);
    s += fmt::format(R"(<rect class="iteration" data-iteration="{}" data-elements="{}" x="{}" y="{}" width="{}" )"
                     R"(height="{}" fill="{}"><title>iteration {}{}: {} element(s)</title></rect>)",
                     b * per_bar, n, LEFT + b * bw, TOP + PLOT_H - bh, std::max<int64_t>(1, bw - 1), bh, BAR_COLOUR,
                     b * per_bar, per_bar > 1 ? fmt::format("-{}", b * per_bar + per_bar - 1) : "", n);
  }
  s += fmt::format(R"(<text x="{}" y="{}" class="axis">0</text>)", LEFT, TOP + PLOT_H + 12);
  if (iterations > 1)  // the last iteration at the right end; one iteration is the 0 alone
    s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", LEFT + bars * bw,
                     TOP + PLOT_H + 12, iterations - 1);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis-title" text-anchor="middle">iteration</text>)",
                   LEFT + bars * bw / 2, TOP + PLOT_H + 26);
  return s + "</svg></figure>";
}

// A training-step replay's metrics (the report's replay_metrics), every one, by name and value: the values were
// fp32 slots, so they are written as the shortest decimal that reads back as that float.
std::string replay_metrics_table(const json& t) {
  const json& metrics = arr(t, "replay_metrics");
  if (metrics.empty()) return "";
  const auto value = [](const json& v) {
    if (!v.is_number()) return std::string("not finite");
    const double d = v.get<double>();
    return std::fabs(d) <= std::numeric_limits<float>::max() ? fmt::format("{}", static_cast<float>(d))
                                                             : fmt::format("{}", d);
  };
  std::string s =
      R"(<table class="replay-metrics"><caption>the replay's metrics</caption><tr><th>unit</th><th>iteration</th>)"
      "<th>tile</th><th>level</th><th>site</th><th>metric</th><th>value</th><th>reference</th></tr>";
  for (const json& m : metrics)
    s += fmt::format(
        R"(<tr data-metric="{}"><td>{}</td><td>{}</td><td>{}</td><td>L{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>)",
        esc(str(m, "metric")), esc(miscompare_unit(m)), num(m, "iteration"), num(m, "tile"), num(m, "level"),
        esc(str(m, "site")), esc(str(m, "metric")), value(field(m, "value")), value(field(m, "reference")));
  return s + "</table>";
}

}  // namespace

std::string failing_case(const json& t) {
  const std::string id = str(t, "id"), device = str(t, "device");
  std::string s =
      fmt::format(R"(<section class="case" data-test="{}" data-device="{}" data-result="{}" data-failed-tiles="{}" )"
                  R"(data-elements="{}"><h3>{} on {}: {}</h3>)",
                  esc(id), esc(device), esc(str(t, "result")), num(t, "failed_tiles"), num(t, "miscompared_elements"),
                  esc(id), esc(device), esc(str(t, "result")));
  // The failing units as every output names them (src/core/unit_name.h): "cpu 3", "gpu 0 sm 17"; a failing test
  // on a GPU without one (its kernels span the GPU) failed on the GPU.
  const int gpu = DeviceInfo::index_of_label(device);
  std::string units;
  for (const json& u : arr(t, "units_failed"))
    if (u.is_number_integer() && u.get<int64_t>() >= 0 && u.get<int64_t>() <= INT32_MAX) {
      const int n = static_cast<int>(u.get<int64_t>());
      units += (units.empty() ? "" : ", ") + unit_text(gpu >= 0 ? UnitName::of_sm(gpu, n) : UnitName::of_cpu(n));
    }
  if (units.empty() && gpu >= 0 && str(t, "result") == "fail")
    units = unit_text(UnitName::of_gpu(gpu)) + " (its kernels span the GPU)";
  s += fmt::format(
      "<p>{} failed tile(s), {} differing element(s){}{}; mode {}, {} of {} iterations.</p>", num(t, "failed_tiles"),
      num(t, "miscompared_elements"), units.empty() ? "" : " on " + esc(units),
      field(t, "time_to_fail_s").is_number() ? fmt::format(", first after {:.3f} s", real(t, "time_to_fail_s")) : "",
      esc(str(t, "mode")), num(t, "iterations"), num(t, "iterations_planned"));
  if (!str(t, "reason").empty()) s += "<p>" + esc(str(t, "reason")) + "</p>";
  // The test's notes (the memory test's fault record, an unreliable analysis, fewer iterations than planned).
  std::string notes;
  for (const json& n : arr(t, "notes"))
    if (n.is_string()) notes += "<li>" + esc(n.get<std::string>()) + "</li>";
  if (!notes.empty()) s += R"(<ul class="notes">)" + notes + "</ul>";
  // A replay's slots (digests, metrics) and the memory test's record have no bit signature: their flipped bits say
  // nothing about the hardware (report.h, has_bit_signature), so neither the histogram nor a signature is drawn.
  const bool bits = has_bit_signature(str(t, "family"));
  s += R"(<div class="charts">)" + tile_map(t) + (bits ? bit_histogram(t) : "") + timeline(t) + "</div>";
  if (!bits)
    s += fmt::format(
        R"(<p class="no-signature">no bit signature: {}</p>)",
        is_replay_family(str(t, "family"))
            ? "the replay's slots are digests and metrics, whose flipped bits say nothing about the hardware"
            : "its outputs are a record (the notes above read it), whose flipped bits say nothing about "
              "the hardware");
  for (const json& g : arr(t, "signatures"))
    if (bits)
      s += fmt::format(R"(<p class="signature">signature on {}: <code>{}</code> ({} element(s))</p>)",
                       esc(miscompare_unit(g)), esc(str(g, "signature")), num(g, "elements"));
  s += replay_trajectories(t) + replay_metrics_table(t);
  const json& mis = arr(t, "miscompares");
  if (!mis.empty()) {
    constexpr size_t ROWS = 20;
    // An integer family's rows (int32) show the difference where the others show ulps: the header says which.
    const bool any_i32 = std::any_of(mis.begin(), mis.end(),
                                     [](const json& m) { return m.contains("int32") && m["int32"].is_object(); });
    s += fmt::format(
        "<table><tr><th>iteration</th><th>tile</th><th>unit</th><th>element</th><th>expected</th><th>actual</th>"
        "<th>xor</th><th>{}</th></tr>",
        any_i32 ? "difference" : "ulps");
    bool wide = false;
    for (size_t i = 0; i < mis.size() && i < ROWS; ++i) {
      const json& m = mis[i];
      // A binary64 family's word: under each word's cell, the whole value's (value64).
      const bool v64 = m.contains("value64") && m["value64"].is_object();
      wide = wide || v64;
      // An integer family's word (int32): under expected and actual their values, in the ulps column the difference.
      const bool i32 = m.contains("int32") && m["int32"].is_object();
      const auto cell = [&](const char* key) {
        std::string c = fmt::format("<code>{}</code>", esc(str(m, key)));
        if (v64) c += fmt::format(R"(<br><code class="value64">{}</code>)", esc(str(m["value64"], key)));
        if (i32 && m["int32"].contains(key))
          c += fmt::format(R"(<br><code class="int32">{}</code>)", esc(m["int32"][key].dump()));
        return c;
      };
      s += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
          num(m, "iteration"), num(m, "tile"),
          esc(miscompare_unit(m) +
              (m.contains("lane") ? fmt::format(" warp {} lane {}", num(m, "warp"), num(m, "lane")) : "")),
          esc(str(m, "element_name")), cell("expected"), cell("actual"), cell("xor_mask"),
          i32 ? fmt::format("difference {}", esc(m["int32"].value("difference", json(0)).dump()))
              : fmt::format("{}", num(m, "ulps")),
          v64 ? fmt::format(R"(<br><span class="value64">{}</span>)", esc(m["value64"].value("ulps", json(0)).dump()))
              : "");
    }
    s += "</table>";
    if (wide)
      s += "<p>binary64 values: under each word's bits and ulps, the whole value's (sign bit 63, exponent 62..52).</p>";
    if (mis.size() > ROWS) s += fmt::format("<p>{} more listed in the JSON report.</p>", mis.size() - ROWS);
  }
  return s + "</section>";
}

}  // namespace sdc::html
