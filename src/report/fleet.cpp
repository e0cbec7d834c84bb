#include "src/report/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/core/result.h"
#include "src/core/unit_name.h"
#include "src/util/iso_time.h"
#include "src/util/say.h"

namespace sdc {
namespace {

using json = nlohmann::json;

// "cpu 3"; a GPU's unit ("sm 17") with its ordinal and, when the report knows it, its UUID: "gpu 0 sm 17 (GPU-...)".
std::string identity(const TestView& t, const std::string& unit) {
  UnitName u;
  if (t.gpu < 0 || !parse_unit_text(unit, u)) return unit;
  u.gpu = t.gpu;
  return unit_text(u, t.uuid);
}

std::string age_text(double s) {
  if (s < 120) return fmt::format("{:g}s", s);
  if (s < 2 * 3600) return fmt::format("{:.0f}m", s / 60);
  if (s < 2 * 86400) return fmt::format("{:.1f}h", s / 3600);
  return fmt::format("{:.1f}d", s / 86400);
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// A node's reports dated in the future: null when it has none; else how many, the latest one's time, file and
// verdict, and whether the row shows it.
json future_json(const FleetNode& n) {
  const FleetReport* x = future_report(n);
  if (!x) return nullptr;
  return {{"reports", n.future_reports},
          {"time", x->time},
          {"file", x->file},
          {"exit", {{"code", x->exit_code}, {"verdict", x->verdict}}},
          {"shown", n.shows_future}};
}

}  // namespace

std::string fleet_status(int64_t exit_code) {
  return exit_code == 1 ? "fail" : exit_code == 0 ? "pass" : "inconclusive";
}

const FleetReport* future_report(const FleetNode& n) {
  if (n.future_reports == 0) return nullptr;
  return n.shows_future ? &n : &n.future;
}

std::string fleet_add(Fleet& f, const ReportView& r, double now) {
  double start = 0;
  if (!parse_iso_time(r.start, start)) return fmt::format("timing.start '{}' is not a UTC time", r.start);
  // The node is the report's host name: a report without one cannot be placed (nor shown as a node "").
  if (r.hostname.empty()) return "host.hostname is empty: the report names no node";
  ++f.reports_read;
  FleetNode& n = f.nodes[r.hostname];
  n.node = r.hostname;
  ++n.reports;
  const bool future = start > now + FLEET_CLOCK_SKEW_S;
  n.future_reports += future;
  // A report dated in the future competes only with the others dated in the future.
  FleetReport& row = future ? n.future : n;
  const bool first = future ? n.future_reports == 1 : n.reports - n.future_reports == 1;
  const bool newer = first || start > row.start_unix || (start == row.start_unix && r.file > row.file);
  if (!newer) return "";
  row.time = r.start;
  row.start_unix = start;
  row.verdict = r.verdict;
  row.exit_code = r.exit_code;
  row.version = r.tool_version;
  row.file = r.file;
  row.fault_injection = r.fault_injection;
  row.failures.clear();
  row.failures_total = 0;
  for (const TestView& t : r.tests) {
    if (t.result != "fail" && t.result != "crash") continue;
    // Every failing unit once per signature it shows; a unit without one (a crash) once, unsigned.
    std::map<std::string, std::vector<std::string>> sigs_of;
    for (const auto& [sig, units] : t.signatures)
      for (const std::string& u : units) sigs_of[u].push_back(sig);
    for (const std::string& u : t.units_failed)
      if (!sigs_of.count(u)) sigs_of[u].push_back("");
    for (const auto& [unit, sigs] : sigs_of)
      for (const std::string& sig : sigs) {
        ++row.failures_total;
        if (row.failures.size() >= FLEET_FAILURES_KEPT) continue;
        const auto c = t.classes.find(unit);
        row.failures.push_back({t.id, identity(t, unit), sig, c == t.classes.end() ? "" : c->second});
      }
  }
  return "";
}

void fleet_finish(Fleet& f, double now, double stale_after_s) {
  f.now = now;
  f.stale_after_s = stale_after_s;
  f.failing = f.inconclusive = f.passing = f.stale = f.dated_in_future = 0;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_sig;  // signature -> node -> units
  for (auto& [name, n] : f.nodes) {
    // A report dated in the future is shown only when the node has no other, or when it failed and the newest
    // other did not (a failure wins); either way the node is not a pass.
    if (n.future_reports && !n.shows_future &&
        (n.reports == n.future_reports || (n.future.exit_code == EXIT_FAIL && n.exit_code != EXIT_FAIL))) {
      std::swap(static_cast<FleetReport&>(n), n.future);
      n.shows_future = true;
    }
    n.status = fleet_status(n.exit_code);
    if (n.future_reports && n.status != "fail") n.status = "inconclusive";
    f.dated_in_future += n.future_reports > 0;
    n.age_s = now - n.start_unix;
    n.stale = n.age_s > stale_after_s;
    f.stale += n.stale;
    (n.status == "fail" ? f.failing : n.status == "pass" ? f.passing : f.inconclusive) += 1;
    for (const FleetFailure& x : n.failures)
      if (!x.signature.empty()) {
        auto& ids = by_sig[x.signature][name];
        if (std::find(ids.begin(), ids.end(), x.identity) == ids.end()) ids.push_back(x.identity);
      }
  }
  f.signatures.clear();
  for (const auto& [sig, nodes] : by_sig) {
    FleetSignature s{sig, {}};
    for (const auto& [node, ids] : nodes) s.nodes.emplace_back(node, join(ids));
    f.signatures.push_back(std::move(s));
  }
  std::stable_sort(f.signatures.begin(), f.signatures.end(),
                   [](const FleetSignature& a, const FleetSignature& b) { return a.nodes.size() > b.nodes.size(); });
  f.exit_code = f.failing ? 1 : (f.inconclusive || f.stale) ? 2 : 0;
  f.verdict = f.failing ? "fail" : (f.inconclusive || f.stale) ? "inconclusive" : "pass";
}

std::string render_fleet_text(const Fleet& f) {
  // Every string a report holds is shown through visible(): a host name with a newline or an escape sequence
  // neither breaks the table nor reaches the terminal.
  std::string s =
      fmt::format("fleet: {} node{} from {} report{} ({} older superseded), {} file{} not read\n", f.nodes.size(),
                  f.nodes.size() == 1 ? "" : "s", f.reports_read, f.reports_read == 1 ? "" : "s",
                  f.reports_read - f.nodes.size(), f.unreadable.size(), f.unreadable.size() == 1 ? "" : "s");
  size_t w = 4;
  for (const auto& [name, n] : f.nodes) w = std::max(w, visible(name).size());
  w = std::min<size_t>(w, 40);
  s += fmt::format("{:<{}}  {:<20}  {:<12}  {:<7}  {:>7}  {}\n", "node", w, "time", "verdict", "version", "reports",
                   "failing units (identity, test, signature, retest classification)");
  for (const auto& [name, n] : f.nodes) {
    const std::string verdict = n.verdict + (n.future_reports ? " future" : "") + (n.stale ? " stale" : "");
    const std::string future = n.shows_future     ? " (this report is dated in the future)"
                               : n.future_reports ? fmt::format(" ({} report{} dated in the future not counted)",
                                                                n.future_reports, n.future_reports == 1 ? "" : "s")
                                                  : "";
    s += fmt::format("{:<{}}  {:<20}  {:<12}  {:<7}  {:>7}  {}{}{}\n", visible(name), w, visible(n.time),
                     visible(verdict), visible(n.version), n.reports,
                     n.failures_total ? fmt::format("{} failing", n.failures_total) : "-",
                     n.fault_injection ? " (fault injection run)" : "", future);
    for (const FleetFailure& x : n.failures)
      s += fmt::format("{:<{}}    {}  {}  {}  {}\n", "", w, visible(x.identity), visible(x.test),
                       x.signature.empty() ? "(no signature)" : visible(x.signature),
                       x.classification.empty() ? "(not retested)" : visible(x.classification));
    if (n.failures_total > n.failures.size())
      s += fmt::format("{:<{}}    ... {} more\n", "", w, n.failures_total - n.failures.size());
  }
  s += f.signatures.empty() ? "by signature: none\n" : "by signature:\n";
  for (const FleetSignature& g : f.signatures) {
    std::vector<std::string> nodes;
    for (const auto& [node, ids] : g.nodes) nodes.push_back(fmt::format("{} ({})", visible(node), visible(ids)));
    s += fmt::format("  {}: {} node{}: {}\n", visible(g.signature), g.nodes.size(), g.nodes.size() == 1 ? "" : "s",
                     join(nodes));
  }
  const std::string limit = age_text(f.stale_after_s);
  s += f.stale ? fmt::format("stale (newest report older than {}):\n", limit)
               : fmt::format("stale (newest report older than {}): none\n", limit);
  for (const auto& [name, n] : f.nodes)
    if (n.stale) s += fmt::format("  {}  {}  {} ago\n", visible(name), visible(n.time), age_text(n.age_s));
  if (f.dated_in_future)
    s += fmt::format(
        "dated in the future (more than {} after now: the node's clock was wrong; never counted as its newest "
        "report):\n",
        age_text(FLEET_CLOCK_SKEW_S));
  for (const auto& [name, n] : f.nodes)
    if (const FleetReport* x = future_report(n))
      s += fmt::format(
          "  {}  {}  {}  {}{}{}\n", visible(name), visible(x->time), visible(x->file), visible(x->verdict),
          n.future_reports > 1 ? fmt::format(" (latest of {})", n.future_reports) : "",
          n.shows_future ? (n.reports > n.future_reports ? "; shown: it failed" : "; shown: no other report") : "");
  if (!f.unreadable.empty()) s += "not read:\n";
  for (const auto& [path, why] : f.unreadable) s += fmt::format("  {}: {}\n", visible(path), visible(why));
  s += fmt::format("fleet: {} ({} fail, {} inconclusive, {} pass; {} stale{})\n", f.verdict, f.failing, f.inconclusive,
                   f.passing, f.stale,
                   f.dated_in_future ? fmt::format("; {} dated in the future", f.dated_in_future) : "");
  return s;
}

std::string render_fleet_json(const Fleet& f) {
  json j = {{"format", "sdcscreen-fleet"},       {"version", 1},
            {"generated", iso_time(f.now)},      {"stale_after_s", f.stale_after_s},
            {"files_read", f.files_read},        {"reports_read", f.reports_read},
            {"clock_skew_s", FLEET_CLOCK_SKEW_S}};
  j["nodes"] = json::array();
  for (const auto& [name, n] : f.nodes) {
    json failures = json::array();
    for (const FleetFailure& x : n.failures)
      failures.push_back({{"identity", x.identity},
                          {"test", x.test},
                          {"signature", x.signature.empty() ? json(nullptr) : json(x.signature)},
                          {"classification", x.classification.empty() ? json(nullptr) : json(x.classification)}});
    j["nodes"].push_back({{"node", name},
                          {"time", n.time},
                          {"age_s", n.age_s},
                          {"stale", n.stale},
                          {"status", n.status},
                          {"exit", {{"code", n.exit_code}, {"verdict", n.verdict}}},
                          {"fault_injection", n.fault_injection},
                          {"version", n.version},
                          {"reports", n.reports},
                          {"file", n.file},
                          {"failures_total", n.failures_total},
                          {"failures", failures},
                          {"dated_in_future", future_json(n)}});
  }
  j["signatures"] = json::array();
  for (const FleetSignature& g : f.signatures) {
    json nodes = json::array();
    for (const auto& [node, ids] : g.nodes) nodes.push_back({{"node", node}, {"units", ids}});
    j["signatures"].push_back({{"signature", g.signature}, {"node_count", g.nodes.size()}, {"nodes", nodes}});
  }
  j["stale"] = json::array();
  for (const auto& [name, n] : f.nodes)
    if (n.stale) j["stale"].push_back({{"node", name}, {"time", n.time}, {"age_s", n.age_s}});
  j["dated_in_future"] = json::array();
  for (const auto& [name, n] : f.nodes)
    if (n.future_reports) {
      json x = future_json(n);
      x["node"] = name;
      j["dated_in_future"].push_back(std::move(x));
    }
  j["not_read"] = json::array();
  for (const auto& [path, why] : f.unreadable) j["not_read"].push_back({{"path", path}, {"reason", why}});
  j["counts"] = {{"nodes", f.nodes.size()},
                 {"fail", f.failing},
                 {"inconclusive", f.inconclusive},
                 {"pass", f.passing},
                 {"stale", f.stale},
                 {"not_read", f.unreadable.size()},
                 {"dated_in_future", f.dated_in_future}};
  j["exit"] = {{"code", f.exit_code}, {"verdict", f.verdict}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace sdc
