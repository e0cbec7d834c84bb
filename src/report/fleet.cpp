#include "src/report/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "src/core/unit_name.h"
#include "src/util/iso_time.h"

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

}  // namespace

std::string fleet_status(int64_t exit_code) {
  return exit_code == 1 ? "fail" : exit_code == 0 ? "pass" : "inconclusive";
}

std::string fleet_add(Fleet& f, const ReportView& r) {
  double start = 0;
  if (!parse_iso_time(r.start, start)) return fmt::format("timing.start '{}' is not a UTC time", r.start);
  ++f.reports_read;
  FleetNode& n = f.nodes[r.hostname];
  ++n.reports;
  const bool newer = n.reports == 1 || start > n.start_unix || (start == n.start_unix && r.file > n.file);
  if (!newer) return "";
  n.node = r.hostname;
  n.time = r.start;
  n.start_unix = start;
  n.verdict = r.verdict;
  n.exit_code = r.exit_code;
  n.version = r.tool_version;
  n.file = r.file;
  n.fault_injection = r.fault_injection;
  n.status = fleet_status(r.exit_code);
  n.failures.clear();
  n.failures_total = 0;
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
        ++n.failures_total;
        if (n.failures.size() >= FLEET_FAILURES_KEPT) continue;
        const auto c = t.classes.find(unit);
        n.failures.push_back({t.id, identity(t, unit), sig, c == t.classes.end() ? "" : c->second});
      }
  }
  return "";
}

void fleet_finish(Fleet& f, double now, double stale_after_s) {
  f.now = now;
  f.stale_after_s = stale_after_s;
  f.failing = f.inconclusive = f.passing = f.stale = 0;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_sig;  // signature -> node -> units
  for (auto& [name, n] : f.nodes) {
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
  std::string s =
      fmt::format("fleet: {} node{} from {} report{} ({} older superseded), {} file{} not read\n", f.nodes.size(),
                  f.nodes.size() == 1 ? "" : "s", f.reports_read, f.reports_read == 1 ? "" : "s",
                  f.reports_read - f.nodes.size(), f.unreadable.size(), f.unreadable.size() == 1 ? "" : "s");
  size_t w = 4;
  for (const auto& [name, n] : f.nodes) w = std::max(w, name.size());
  w = std::min<size_t>(w, 40);
  s += fmt::format("{:<{}}  {:<20}  {:<12}  {:<7}  {:>7}  {}\n", "node", w, "time", "verdict", "version", "reports",
                   "failing units (identity, test, signature, retest classification)");
  for (const auto& [name, n] : f.nodes) {
    const std::string verdict = n.verdict + (n.stale ? " stale" : "");
    s += fmt::format("{:<{}}  {:<20}  {:<12}  {:<7}  {:>7}  {}{}\n", name, w, n.time, verdict, n.version, n.reports,
                     n.failures_total ? fmt::format("{} failing", n.failures_total) : "-",
                     n.fault_injection ? " (fault injection run)" : "");
    for (const FleetFailure& x : n.failures)
      s += fmt::format("{:<{}}    {}  {}  {}  {}\n", "", w, x.identity, x.test,
                       x.signature.empty() ? "(no signature)" : x.signature,
                       x.classification.empty() ? "(not retested)" : x.classification);
    if (n.failures_total > n.failures.size())
      s += fmt::format("{:<{}}    ... {} more\n", "", w, n.failures_total - n.failures.size());
  }
  s += f.signatures.empty() ? "by signature: none\n" : "by signature:\n";
  for (const FleetSignature& g : f.signatures) {
    std::vector<std::string> nodes;
    for (const auto& [node, ids] : g.nodes) nodes.push_back(fmt::format("{} ({})", node, ids));
    s += fmt::format("  {}: {} node{}: {}\n", g.signature, g.nodes.size(), g.nodes.size() == 1 ? "" : "s", join(nodes));
  }
  const std::string limit = age_text(f.stale_after_s);
  s += f.stale ? fmt::format("stale (newest report older than {}):\n", limit)
               : fmt::format("stale (newest report older than {}): none\n", limit);
  for (const auto& [name, n] : f.nodes)
    if (n.stale) s += fmt::format("  {}  {}  {} ago\n", name, n.time, age_text(n.age_s));
  if (!f.unreadable.empty()) s += "not read:\n";
  for (const auto& [path, why] : f.unreadable) s += fmt::format("  {}: {}\n", path, why);
  s += fmt::format("fleet: {} ({} fail, {} inconclusive, {} pass; {} stale)\n", f.verdict, f.failing, f.inconclusive,
                   f.passing, f.stale);
  return s;
}

std::string render_fleet_json(const Fleet& f) {
  json j = {{"format", "sdcscreen-fleet"},  {"version", 1},
            {"generated", iso_time(f.now)}, {"stale_after_s", f.stale_after_s},
            {"files_read", f.files_read},   {"reports_read", f.reports_read}};
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
                          {"failures", failures}});
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
  j["not_read"] = json::array();
  for (const auto& [path, why] : f.unreadable) j["not_read"].push_back({{"path", path}, {"reason", why}});
  j["counts"] = {{"nodes", f.nodes.size()}, {"fail", f.failing}, {"inconclusive", f.inconclusive},
                 {"pass", f.passing},       {"stale", f.stale},  {"not_read", f.unreadable.size()}};
  j["exit"] = {{"code", f.exit_code}, {"verdict", f.verdict}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace sdc
