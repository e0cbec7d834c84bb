// The fleet view as one self-contained HTML page: no script, no font, no network. A grid of every node, coloured
// by its status (stale nodes outlined); each node that did not pass links to its details section below, which
// lists its failing units; then the signatures shared across nodes, the nodes not screened recently and the
// reports dated in the future. Ids are positional (n-0, n-1...), so a host name never has to be a valid fragment.
#include <fmt/format.h>

#include <map>

#include "src/util/iso_time.h"
#include "src/report/fleet.h"
#include "src/report/html.h"
#include "src/report/html_parts.h"

namespace sdc {
namespace {

using html::esc;

constexpr const char* STYLE = R"(.v-inconclusive{background:#9a5b00}
h2{font-size:17px;margin:16px 0 6px}
.grid{display:flex;flex-wrap:wrap;gap:2px}
.cell{display:block;width:14px;height:14px;border:2px solid transparent}
.cell.pass{background:#98df8a}.cell.fail{background:#d62728}.cell.inconclusive{background:#ff9f1c}
.cell.stale{border-color:#1a1a1a}
.legend span{margin-right:14px;white-space:nowrap}
.legend i{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
table{border-collapse:collapse;font-size:12px;margin:4px 0}
td,th{border:1px solid #cccccc;padding:2px 6px;text-align:left;vertical-align:top}
section.node{border-top:1px solid #dddddd;margin-top:10px}
.drill{background:#ffe08a;padding:0 4px}
)";

std::string cell(const FleetNode& n, size_t i) {
  const std::string cls = n.status + (n.stale ? " stale" : "");
  const std::string title = esc(fmt::format("{}: {} at {}{}{}", n.node, n.verdict, n.time, n.stale ? " (stale)" : "",
                                            n.future_reports ? " (a report dated in the future)" : ""));
  if (n.status == "pass") return fmt::format(R"(<span class="cell {}" title="{}"></span>)", cls, title);
  return fmt::format(R"(<a class="cell {}" href="#n-{}" title="{}" data-node="{}"></a>)", cls, i, title, esc(n.node));
}

std::string details(const FleetNode& n, size_t i) {
  std::string s = fmt::format(
      R"(<section class="node" id="n-{}" data-node="{}"><h3>{}: {}{}</h3><p>newest report {} ({}), exit {} {}, )"
      "sdcscreen {}, {} report{} read{}</p>",
      i, esc(n.node), esc(n.node), esc(n.verdict), n.stale ? " (stale)" : "", esc(n.time), esc(n.file), n.exit_code,
      esc(n.verdict), esc(n.version), n.reports, n.reports == 1 ? "" : "s",
      n.fault_injection ? R"(; <span class="drill">fault injection run: its failures are injected</span>)" : "");
  if (const FleetReport* x = future_report(n))
    s += fmt::format(
        R"(<p class="future">{} report{} dated in the future (the node's clock was wrong): {} at {}, {}; {}</p>)",
        n.future_reports, n.future_reports == 1 ? "" : "s", esc(x->file), esc(x->time), esc(x->verdict),
        !n.shows_future                ? "not counted as the node's newest report"
        : n.reports > n.future_reports ? "shown: it failed, and the newest other report did not"
                                       : "shown: the node has no other report");
  if (!n.failures.empty()) {
    s += "<table><tr><th>unit</th><th>test</th><th>signature</th><th>retest classification</th></tr>";
    for (const FleetFailure& x : n.failures)
      s += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>", esc(x.identity),
                       esc(x.test), esc(x.signature.empty() ? "-" : x.signature),
                       esc(x.classification.empty() ? "not retested" : x.classification));
    s += "</table>";
    if (n.failures_total > n.failures.size())
      s += fmt::format("<p>... and {} more failing units</p>", n.failures_total - n.failures.size());
  }
  return s + "</section>";
}

}  // namespace

std::string render_fleet_html(const Fleet& f) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sdcscreen fleet: " + esc(f.verdict) +
      "</title><style>" + PAGE_STYLE + STYLE + "</style></head><body>";
  s += fmt::format(
      R"(<header class="v-{}"><h1>sdcscreen fleet: {}</h1><span class="meta">{} nodes: {} fail, {} inconclusive, )"
      "{} pass; {} stale (no report in {:g} h); {} reports read, {} file{} not read; generated {}</span></header>",
      esc(f.verdict), esc(f.verdict), f.nodes.size(), f.failing, f.inconclusive, f.passing, f.stale,
      f.stale_after_s / 3600, f.reports_read, f.unreadable.size(), f.unreadable.size() == 1 ? "" : "s",
      iso_time(f.now));
  s += "<main><h2>Nodes</h2><p class=\"legend\"><span><i class=\"cell pass\"></i>pass</span><span><i class=\"cell "
       "fail\"></i>fail</span><span><i class=\"cell inconclusive\"></i>inconclusive</span><span><i class=\"cell "
       "stale\"></i>stale (outlined)</span></p><div class=\"grid\" id=\"grid\">";
  size_t i = 0;
  std::map<std::string, size_t> index;  // node -> its position, the id of its details section
  for (const auto& [name, n] : f.nodes) {
    index[name] = i;
    s += cell(n, i++);
  }
  s += "</div>";
  if (!f.signatures.empty()) {
    s += "<section id=\"signatures\"><h2>By signature</h2><table><tr><th>signature</th><th>nodes</th><th>on</th></tr>";
    for (const FleetSignature& g : f.signatures) {
      std::string on;
      for (const auto& [node, ids] : g.nodes)
        on += fmt::format(R"({}<a href="#n-{}">{}</a> ({}))", on.empty() ? "" : ", ", index[node], esc(node), esc(ids));
      s += fmt::format(R"(<tr data-signature="{}"><td><code>{}</code></td><td>{}</td><td>{}</td></tr>)",
                       esc(g.signature), esc(g.signature), g.nodes.size(), on);
    }
    s += "</table></section>";
  }
  if (f.stale) {
    s += "<section id=\"stale\"><h2>Stale</h2><table><tr><th>node</th><th>newest report</th><th>age (h)</th></tr>";
    for (const auto& [name, n] : f.nodes)
      if (n.stale)
        s += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}</td></tr>", esc(name), esc(n.time), n.age_s / 3600);
    s += "</table></section>";
  }
  if (f.dated_in_future) {
    s += fmt::format(
        "<section id=\"future\"><h2>Dated in the future</h2><p>More than {:g} s after this page was generated: never "
        "counted as a node's newest report.</p><table><tr><th>node</th><th>report</th><th>time</th><th>verdict</th>"
        "</tr>",
        FLEET_CLOCK_SKEW_S);
    for (const auto& [name, n] : f.nodes)
      if (const FleetReport* x = future_report(n))
        s += fmt::format(R"(<tr data-node="{}"><td><a href="#n-{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>)",
                         esc(name), index[name], esc(name), esc(x->file), esc(x->time), esc(x->verdict));
    s += "</table></section>";
  }
  if (!f.unreadable.empty()) {
    s += "<section id=\"not-read\"><h2>Files not read</h2><table><tr><th>file</th><th>why</th></tr>";
    for (const auto& [path, why] : f.unreadable)
      s += fmt::format("<tr><td>{}</td><td>{}</td></tr>", esc(path), esc(why));
    s += "</table></section>";
  }
  s += "<section id=\"details\"><h2>Nodes that did not pass</h2>";
  i = 0;
  for (const auto& [name, n] : f.nodes) {
    if (n.status != "pass") s += details(n, i);
    ++i;
  }
  return s + "</section></main></body></html>\n";
}

}  // namespace sdc
