#include "src/report/html.h"

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

#include "src/report/html_parts.h"
#include "src/report/unit_json.h"

namespace sdc {
namespace {

using namespace html;

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
  UnitName n;
  return unit_from_json(u, n) ? unit_text(n) : fmt::format("cpu {}", text_of(field(u, "cpu")));
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
        siblings +=
            fmt::format("{}{} ({}): {} of {} failed", siblings.empty() ? "" : "; ", retest_unit(field(sb, "unit")),
                        str(sb, "relation"), num(sb, "failed"), num(sb, "runs"));
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

// Ticks for an axis from 0 to at least `top`: a step of 1, 2 or 5 times a power of ten, at most 6 steps.
std::vector<double> ticks_to(double top) {
  double step = 0.1;
  for (int i = 0; top / step > 6 && i < 40; ++i) step *= i % 3 == 1 ? 2.5 : 2;  // 0.1 0.2 0.5 1 2 5 10 ...
  std::vector<double> t;
  for (int k = 0; t.empty() || t.back() < top - 1e-9; ++k) t.push_back(k * step);
  return t;
}

// A bar per unit of its throughput relative to its peers' median, the floor as a line, the axis as high as the
// fastest unit (never cut off); and any other telemetry the report carries, as a table of its keys.
std::string telemetry_section(const json& r) {
  const json& tp = obj(r, "throughput");
  const json& units = arr(tp, "units");
  const json& other = obj(r, "telemetry");
  // A probe that did not run (run --no-probe, one unit, a stop) judged no unit slow: the page says so and why
  // (docs/design.md, "Not done"), except after an interruption, which the page says at its top.
  const std::string not_run = str(obj(tp, "probe"), "not_run");
  const bool say_not_run = !not_run.empty() && not_run != "interrupted";
  if (units.empty() && other.empty() && !say_not_run) return "";
  std::string s = R"(<section id="telemetry"><h2>Telemetry</h2>)";
  if (say_not_run)
    s += R"(<p class="probe-not-run">throughput probe not run: )" + esc(not_run) + " (no unit was judged slow)</p>";
  if (!units.empty()) {
    const double floor = real(tp, "floor", 0.85);
    const int n = static_cast<int>(units.size());
    auto rel_of = [&](int i) {  // a relative rate the page can draw: not negative, and a bound on a corrupt one
      const double v = real(units[static_cast<size_t>(i)], "relative");
      return std::isfinite(v) ? std::clamp(v, 0.0, 1e6) : 0.0;
    };
    double fastest = 1.5;  // the axis shows at least up to 1.5x, where a healthy node's units all are
    for (int i = 0; i < n; ++i) fastest = std::max(fastest, rel_of(i));
    const std::vector<double> ticks = ticks_to(fastest);
    const double top = ticks.back();
    // Left: the axis title and the tick labels; bottom: the units' names (upright, every k-th where bars are
    // narrow) and the axis title; right: the floor's label.
    constexpr int LEFT = 64, TOP = 10, PLOT_H = 120, BOTTOM = 62, RIGHT = 76, LABEL_PITCH = 12;
    const int bw = std::clamp(1000 / n, 3, 24), w = LEFT + n * bw + RIGHT, h = TOP + PLOT_H + BOTTOM;
    const int label_every = (LABEL_PITCH + bw - 1) / bw;
    auto y_of = [&](double v) { return TOP + PLOT_H - static_cast<int>(std::lround(v / top * PLOT_H)); };
    s += fmt::format(R"(<figure class="throughput"><figcaption>throughput of each unit relative to the median of )"
                     R"(its peers (1.0x: as fast as they are), floor {:.2f}x{}</figcaption>)",
                     floor, flag(tp, "fail_slow") ? ", --fail-slow" : "");
    s += fmt::format(
        R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" data-axis-top="{:.4f}" )"
        R"(data-plot-top="{}" data-plot-bottom="{}">)",
        w, h, w, h, top, TOP, TOP + PLOT_H);
    for (const double v : ticks) {
      s += fmt::format(R"(<text x="{}" y="{}" class="axis tick" text-anchor="end">{}x</text>)", LEFT - 4, y_of(v) + 3,
                       top >= 10 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v));
      s += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#e4e4e4"/>)", LEFT, y_of(v), LEFT + n * bw);
    }
    s += fmt::format(R"r(<text class="axis-title" text-anchor="middle" transform="translate(14 {}) rotate(-90)">)r"
                     R"(x peers' median</text>)",
                     TOP + PLOT_H / 2);
    std::string slow;
    for (int i = 0; i < n; ++i) {
      const json& u = units[static_cast<size_t>(i)];
      const double rel = rel_of(i);
      const bool is_slow = flag(u, "slow");
      if (is_slow) slow += (slow.empty() ? "" : ", ") + fmt::format("{} at {:.2f}x", str(u, "unit"), rel);
      s += fmt::format(R"(<rect class="throughput{}" data-unit="{}" data-relative="{:.4f}" x="{}" y="{}" width="{}" )"
                       R"(height="{}" fill="{}"><title>{}: {:.2f}x, median of {} probe rounds{}</title></rect>)",
                       is_slow ? " slow" : "", esc(str(u, "unit")), rel, LEFT + i * bw, y_of(rel), std::max(1, bw - 1),
                       TOP + PLOT_H - y_of(rel), is_slow ? SLOW_COLOUR : THROUGHPUT_COLOUR, esc(str(u, "unit")), rel,
                       num(u, "rounds"),
                       is_slow             ? ", slow"
                       : flag(u, "failed") ? ", failed: not judged"
                                           : "");
      if (i % label_every == 0)  // the unit's name under its bar, read bottom to top
        s +=
            fmt::format(R"r(<text class="axis unit-label" text-anchor="end" transform="translate({} {}) rotate(-90)">)r"
                        R"({}</text>)",
                        LEFT + i * bw + bw / 2 + 3, TOP + PLOT_H + 4, esc(str(u, "unit")));
    }
    s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888888"/>)", LEFT, TOP + PLOT_H, LEFT + n * bw,
                     TOP + PLOT_H);
    s += fmt::format(R"(<line class="floor" x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="#333333" )"
                     R"(stroke-dasharray="4 3"/><text x="{3}" y="{4}" class="axis">floor {5:.2f}x</text>)",
                     LEFT, y_of(floor), LEFT + n * bw, LEFT + n * bw + 4, y_of(floor) + 3, floor);
    s += fmt::format(R"(<text x="{}" y="{}" class="axis-title" text-anchor="middle">unit{}</text>)", LEFT + n * bw / 2,
                     h - 4, label_every > 1 ? fmt::format(" (one named every {})", label_every) : std::string());
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
    std::string notes;  // the test's notes, each on a line of their own cell
    for (const json& n : arr(t, "notes"))
      if (n.is_string()) notes += (notes.empty() ? "" : "<br>") + esc(n.get<std::string>());
    const std::string row = fmt::format(
        R"(<tr class="r-{}"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td>)"
        R"(<td class="notes">{}</td></tr>)",
        esc(result), esc(str(t, "id")), esc(str(t, "device")), esc(str(t, "mode")), esc(result), num(t, "iterations"),
        num(t, "tiles"), real(t, "duration_s"), esc(str(t, "reason")), notes);
    all += row;
    // A case that cannot run on this backend is not a problem: the JSON and the text say so once per reason.
    if (result != "pass" && result != "not_applicable" &&
        !(result == "skip" && str(t, "reason").find("not applicable") != std::string::npos) &&
        str(t, "reason").find("runs on GPUs only") == std::string::npos) {
      problems += row;
      ++problem_count;
    }
  }
  const std::string head =
      "<tr><th>test</th><th>device</th><th>mode</th><th>result</th><th>iterations</th><th>tiles</th><th>time "
      "(s)</th><th>reason</th><th>notes</th></tr>";
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
    // The unit as every output names it (src/core/unit_name.h): "cpu 5", or an SM of the drill's GPU "gpu 0 sm 5".
    const int fired_unit = static_cast<int>(num(i, "fired_unit", -1));
    const int gpu = field(i, "device").is_number() ? static_cast<int>(num(i, "device", -1)) : -1;
    s += fmt::format(
        "<li><code>{}</code>: {}</li>", esc(str(i, "spec")),
        !fired ? std::string("<b>did not fire</b> (the drill proves nothing)")
        : field(i, "fired_unit").is_number() && fired_unit >= 0
            ? "fired on " + esc(unit_text(gpu >= 0 ? UnitName::of_sm(gpu, fired_unit) : UnitName::of_cpu(fired_unit)))
            : std::string("fired"));
  }
  return s + "</ul></section>";
}

constexpr const char* STYLE = R"(.v-error{background:#9a5b00}
.v-slow{background:#3f2f7f}.v-interrupted{background:#555555}
.drill{background:#ffe08a;color:#1a1a1a;padding:4px 16px;font-weight:bold}
#reproduce p{margin:4px 0}p.label{font-size:12px;color:#444444}
pre.reproduce{background:#f2f2f2;padding:6px 8px;margin:4px 0 8px;white-space:pre-wrap}
pre.reproduce{overflow-x:auto}pre.reproduce .w{display:inline-block;max-width:100%}pre.reproduce .w span{white-space:nowrap}
h2{font-size:17px;margin:16px 0 6px}h3{font-size:15px;margin:12px 0 4px}
.legend span{margin-right:14px;white-space:nowrap;display:inline-block;margin-bottom:3px}
.legend svg{vertical-align:middle}.legend span.numbers{white-space:normal}
.num{font-size:9px}
.maps,.charts{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:flex-start}
figure{margin:4px 0}figcaption{font-size:12px;color:#444444;margin-bottom:3px}
.gpu-id{font-size:11px;color:#666666;margin-bottom:3px}
.axis{font-size:9px;fill:#444444}.axis-title{font-size:10px;fill:#1a1a1a}
table{border-collapse:collapse;font-size:12px;margin:4px 0}
td,th{border:1px solid #cccccc;padding:2px 6px;text-align:left;vertical-align:top}
ul.not-passing{margin:6px 0;padding-left:20px;font-size:13px}
details.sm-warps{font-size:12px;margin-top:4px}svg.lanes{vertical-align:middle;display:block}
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
  page += std::string("<style>") + PAGE_STYLE + STYLE + "</style></head><body>";
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
  for (const json& w : arr(r, "weakened_by"))
    page += fmt::format(R"(<div class="drill weakened">WEAKENED VERDICT: {}{}: {}</div>)", esc(str(w, "name")),
                        str(w, "value").empty() ? std::string() : fmt::format("={}", esc(str(w, "value"))),
                        esc(str(w, "effect")));
  page += "<main>";
  // The command that runs this screen again, labelled. Each word is a box of its own, so the lines break at the
  // spaces between words; a word wider than a line (a drill's spec) breaks after a comma (<wbr>), between
  // pieces that do not break, so a case id stays whole. The text is the command as it is, to copy.
  std::string words;
  const std::string reproduce = str(r, "reproduce");
  for (size_t i = 0; i <= reproduce.size();) {
    const size_t j = std::min(reproduce.find(' ', i), reproduce.size());
    if (j > i) {
      words += R"(<span class="w">)";
      for (size_t k = i; k < j;) {
        const size_t comma = std::min(reproduce.find(',', k), j - 1) + 1;
        words += (k > i ? "<wbr><span>" : "<span>") + esc(reproduce.substr(k, comma - k)) + "</span>";
        k = comma;
      }
      words += "</span>";
    }
    if (j < reproduce.size()) words += ' ';
    i = j + 1;
  }
  page += R"(<section id="reproduce"><h2>Reproduce</h2><p class="label">the command that runs this screen )"
          R"(again on this node:</p><pre class="reproduce">)" +
          words + "</pre>";
  std::string left_out;
  for (const json& o : arr(r, "reproduce_left_out"))
    if (o.is_string()) {
      if (!left_out.empty()) left_out += ' ';
      left_out += o.get<std::string>();
    }
  if (!left_out.empty()) page += "<p>outputs and state left out of it: " + esc(left_out) + "</p>";
  page += "</section>";
  if (!str(r, "drain_reason").empty()) page += "<p>drain reason: " + esc(str(r, "drain_reason")) + "</p>";
  const json& sum = obj(r, "summary");
  page += fmt::format(
      "<p>{} tests: {} pass, {} fail, {} error, {} skip, {} crash, {} not applicable &middot; {} ({} cpus online) "
      "&middot; {}</p>",
      num(sum, "tests"), num(sum, "pass"), num(sum, "fail"), num(sum, "error"), num(sum, "skip"), num(sum, "crash"),
      num(sum, "not_applicable"), esc(str(host, "cpu")), num(host, "cpus_online"), esc(str(host, "os")));
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
