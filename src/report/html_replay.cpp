// The HTML report's chart of a failing training-step replay's level-3 trajectory: per failing unit, its loss
// per step beside the reference's, and its parameter distance from the reference's per step, as inline SVG
// (no script, no style sheet beyond the page's), from the report's replay_metrics (the per-step series: site
// "step S", metrics loss and param_distance) and replay_failure_modes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "src/report/html_parts.h"
#include "src/report/unit_json.h"

namespace sdc::html {
namespace {

// One unit's trajectory: per step its loss, the reference's and its distance (nullopt: not finite or absent).
struct Trajectory {
  std::string unit, mode;
  int64_t iteration = 0, tile = 0;
  std::map<int64_t, std::optional<double>> loss, ref_loss, distance;
};

std::optional<double> value(const json& m, const char* key) {
  const json& v = field(m, key);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

std::string unit_of(const json& m) {
  UnitName n;
  return unit_from_json(obj(m, "unit"), n) ? unit_text(n) : text_of(field(m, "unit"));
}

constexpr int64_t PLOT_W = 280, PLOT_H = 110, LEFT = 58, TOP = 24, GAP = 70, BOTTOM = 30;
constexpr const char* UNIT_COLOUR = "#c0392b";
constexpr const char* REF_COLOUR = "#7f8c8d";
constexpr const char* DISTANCE_COLOUR = "#2471a3";

// A path through the points (x0 + step's x, y), broken where a value is missing; y maps a value to pixels.
template <class Y>
std::string path(const std::map<int64_t, std::optional<double>>& series, int64_t x0, int64_t steps, Y y,
                 const char* cls, const char* colour, const char* dash) {
  std::string d;
  bool pen = false;
  int64_t points = 0;
  for (const auto& [step, v] : series) {
    if (!v) {
      pen = false;
      continue;
    }
    const double x = static_cast<double>(x0) +
                     (steps > 1 ? static_cast<double>(step * PLOT_W) / static_cast<double>(steps - 1) : 0.0);
    d += fmt::format("{}{:.1f} {:.1f} ", pen ? "L" : "M", x, y(*v));
    pen = true;
    ++points;
  }
  if (d.empty()) return "";
  return fmt::format(R"(<path class="{}" data-points="{}" d="{}" fill="none" stroke="{}" stroke-width="1.5"{}/>)", cls,
                     points, d, colour, *dash ? fmt::format(R"( stroke-dasharray="{}")", dash) : "");
}

std::string axis_text(int64_t x, int64_t y, const std::string& text, const char* anchor = "end") {
  return fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="{}">{}</text>)", x, y, anchor, esc(text));
}

std::string frame(int64_t x0, int64_t steps, const std::string& title) {
  std::string s = fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#cccccc"/>)", x0, TOP,
                              PLOT_W, PLOT_H);
  s += fmt::format(R"(<text x="{}" y="{}" class="axis-title" text-anchor="middle">{}</text>)", x0 + PLOT_W / 2, TOP - 13,
                   esc(title));
  s += axis_text(x0, TOP + PLOT_H + 12, "0", "start") +
       axis_text(x0 + PLOT_W, TOP + PLOT_H + 12, fmt::format("{}", steps - 1));
  s += fmt::format(R"(<text x="{}" y="{}" class="axis-title" text-anchor="middle">step</text>)", x0 + PLOT_W / 2,
                   TOP + PLOT_H + 24);
  return s;
}

std::string chart(const Trajectory& t) {
  int64_t steps = 0;
  for (const auto* series : {&t.loss, &t.ref_loss, &t.distance})
    if (!series->empty()) steps = std::max(steps, series->rbegin()->first + 1);
  // Loss: a linear axis over the finite losses of both runs, at most LOSS_TOP times the reference's largest (a
  // spike of 1e36 would flatten the rest); a loss above the axis is drawn on its top edge and marked there, as
  // is a step whose loss is not finite (it breaks the line).
  constexpr double LOSS_TOP = 2.0;
  double lo = INFINITY, hi = -INFINITY, ref_hi = -INFINITY;
  for (const auto* series : {&t.loss, &t.ref_loss})
    for (const auto& [step, v] : *series)
      if (v) lo = std::min(lo, *v), hi = std::max(hi, *v);
  for (const auto& [step, v] : t.ref_loss)
    if (v) ref_hi = std::max(ref_hi, *v);
  if (ref_hi > 0) hi = std::min(hi, LOSS_TOP * ref_hi);
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) lo -= 0.5, hi += 0.5;
  const auto loss_y = [&](double v) {
    return static_cast<double>(TOP) + (hi - std::min(v, hi)) / (hi - lo) * static_cast<double>(PLOT_H);
  };
  // Distance: log10 between the decades around the non-zero values; 0 lies on the bottom edge.
  double dmin = INFINITY, dmax = 0;
  for (const auto& [step, v] : t.distance)
    if (v && *v > 0) dmin = std::min(dmin, *v), dmax = std::max(dmax, *v);
  const bool any = dmax > 0;
  const double d_lo = any ? std::floor(std::log10(dmin)) : -1,
               d_hi = any ? std::max(d_lo + 1, std::ceil(std::log10(dmax))) : 0;
  const auto distance_y = [&](double v) {
    if (!(v > 0)) return static_cast<double>(TOP + PLOT_H);
    return static_cast<double>(TOP) + (d_hi - std::log10(v)) / (d_hi - d_lo) * static_cast<double>(PLOT_H - 8);
  };
  const int64_t x1 = LEFT, x2 = LEFT + PLOT_W + GAP, w = x2 + PLOT_W + 12, h = TOP + PLOT_H + BOTTOM + 14;
  std::string s = fmt::format(
      R"(<figure class="trajectory" data-unit="{}" data-failure-mode="{}" data-steps="{}"><figcaption>level 3 )"
      R"(trajectory on {} (iteration {}, replica {}): failure mode <b>{}</b>; the loss per step beside the )"
      R"(reference's, and the distance of the parameters from the reference's per step (log scale, 0 on the )"
      R"(bottom edge)</figcaption>)",
      esc(t.unit), esc(t.mode), steps, esc(t.unit), t.iteration, t.tile,
      esc(t.mode.empty() ? "not classified" : t.mode));
  s +=
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}">)", w, h, w, h);
  s += frame(x1, steps, "loss") + frame(x2, steps, "parameter distance");
  s += axis_text(x1 - 4, TOP + 8, fmt::format("{:.4g}", hi)) +
       axis_text(x1 - 4, TOP + PLOT_H, fmt::format("{:.4g}", lo));
  s += axis_text(x2 - 4, TOP + 8, any ? fmt::format("1e{}", d_hi) : "") +
       axis_text(x2 - 4, TOP + PLOT_H - 8, any ? fmt::format("1e{}", d_lo) : "") +
       axis_text(x2 - 4, TOP + PLOT_H + 4, "0");
  s += path(t.ref_loss, x1, steps, loss_y, "loss-reference", REF_COLOUR, "4 3");
  s += path(t.loss, x1, steps, loss_y, "loss-unit", UNIT_COLOUR, "");
  for (const auto& [step, v] : t.loss)
    if (!v || *v > hi) {
      const double x = static_cast<double>(x1) +
                       (steps > 1 ? static_cast<double>(step * PLOT_W) / static_cast<double>(steps - 1) : 0.0);
      s += fmt::format(R"(<text class="{}" x="{:.1f}" y="{}" text-anchor="middle" fill="{}">&#x25B2;)"
                       R"(<title>step {}: the loss is {}</title></text>)",
                       v ? "off-axis" : "not-finite", x, TOP - 1, UNIT_COLOUR, step,
                       v ? fmt::format("{:.4g}, above the axis", *v) : std::string("not finite"));
    }
  s += path(t.distance, x2, steps, distance_y, "distance", DISTANCE_COLOUR, "");
  const int64_t ly = TOP + PLOT_H + BOTTOM + 8;
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.5"/>)", x1, ly - 3, x1 + 16,
                   ly - 3, UNIT_COLOUR) +
       axis_text(x1 + 20, ly, t.unit, "start");
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.5" stroke-dasharray="4 3"/>)",
                   x1 + 110, ly - 3, x1 + 126, ly - 3, REF_COLOUR) +
       axis_text(x1 + 130, ly, "reference", "start");
  return s + "</svg></figure>";
}

}  // namespace

std::string replay_trajectories(const json& t) {
  std::map<std::string, Trajectory> by_unit;
  std::vector<std::string> order;
  for (const json& m : arr(t, "replay_metrics")) {
    const std::string site = str(m, "site"), metric = str(m, "metric");
    if (site.rfind("step ", 0) != 0 || (metric != "loss" && metric != "param_distance")) continue;
    int64_t step = -1;
    try {
      step = std::stoll(site.substr(5));
    } catch (...) {
      continue;  // a malformed report: the table still lists the row
    }
    if (step < 0 || step > 1000000) continue;
    const std::string unit = unit_of(m);
    if (!by_unit.count(unit)) order.push_back(unit);
    Trajectory& tr = by_unit[unit];
    tr.unit = unit;
    tr.iteration = num(m, "iteration");
    tr.tile = num(m, "tile");
    if (metric == "loss") {
      tr.loss[step] = value(m, "value");
      tr.ref_loss[step] = value(m, "reference");
    } else {
      tr.distance[step] = value(m, "value");
    }
  }
  for (const json& f : arr(t, "replay_failure_modes"))
    if (const auto it = by_unit.find(unit_of(f)); it != by_unit.end()) it->second.mode = str(f, "failure_mode");
  std::string s;
  for (const std::string& u : order) s += chart(by_unit[u]);
  return s;
}

}  // namespace sdc::html
