// The drain reason of a failed screen, from its JSON report: what the Slurm health check, the NHC check and
// the sweep give scontrol, and the report's "drain_reason". Computed from the JSON (not the RunResult) so that
// 'sdcscreen reason REPORT' reads a report of any schema version this build reads (src/report/report_reader.h,
// which decides what a report is) the same way the report was written.
//
//   SDC: <units> [<retest class> ]<what>[ drill]     a test failed or crashed, e.g. "SDC: cpu 1 softmax_f32"
//   SDC: <units> hung (watchdog)[ drill]              only units the watchdog gave up on
//   SDC: <unit> <hardware event>[ drill]              only an uncorrected hardware error during the screen
// <units> by kind: "cpu 1,3", "gpu 0" (a GPU's SMs are in the report; Slurm drains the node, not the SM);
// <what> each family once, a replay by its level and first failing site ("replay L1 layer1.mlp.down.forward"),
// a crashed unit's family after "crash". At most 100 characters (Slurm keeps a reason short): the lists are
// shortened ("cpu 1,2,+6") before the text is cut.
#include "src/report/drain_reason.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "src/report/report.h"

namespace sdc {
namespace {

using nlohmann::json;

constexpr size_t MAX_REASON = 100;

// A string or an integer as text; "" for anything else (the report may be from another version, or edited).
std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return "";
}
std::string str_of(const json& j, const char* key) { return j.is_object() && j.contains(key) ? text_of(j[key]) : ""; }
bool flag_of(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}
bool numeric(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}
// Numbers in numeric order, before anything else (in text order).
bool unit_id_less(const std::string& a, const std::string& b) {
  if (numeric(a) != numeric(b)) return numeric(a);
  return numeric(a) ? std::stol(a) < std::stol(b) : a < b;
}

// "cuda:3" (a test's device) -> "3"; "" for anything else.
std::string gpu_of_device(const std::string& dev) {
  for (const char* prefix : {"cuda:", "gpu "}) {
    const std::string p = prefix;
    if (dev.rfind(p, 0) == 0 && dev.size() > p.size() &&
        dev.find_first_not_of("0123456789", p.size()) == std::string::npos)
      return dev.substr(p.size());
  }
  return "";
}

// A failed unit of a test as the reason names it: {"cpu", "3"} or {"gpu", "0"} (any SM of GPU 0).
std::pair<std::string, std::string> unit_label(const std::string& device, const json& unit) {
  if (unit.is_object()) {
    if (str_of(unit, "kind") == "cpu" && unit.contains("cpu")) return {"cpu", str_of(unit, "cpu")};
    for (const char* key : {"gpu", "device", "index"})
      if (unit.contains(key)) return {"gpu", str_of(unit, key)};
  }
  if (const std::string g = gpu_of_device(device); !g.empty()) return {"gpu", g};
  const std::string id = text_of(unit);
  if (device.empty() || device == "cpu") return {"cpu", id};
  return {device, id};
}

// Units of one kind in their order of first appearance, sorted numerically at the end.
struct UnitList {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_kind;
  void add(const std::string& kind, const std::string& id) {
    auto it = std::find_if(by_kind.begin(), by_kind.end(), [&](const auto& k) { return k.first == kind; });
    if (it == by_kind.end()) it = by_kind.insert(by_kind.end(), {kind, {}});
    if (std::find(it->second.begin(), it->second.end(), id) == it->second.end()) it->second.push_back(id);
  }
  void sort() {
    for (auto& [kind, ids] : by_kind) std::stable_sort(ids.begin(), ids.end(), unit_id_less);
  }
  // "cpu 1,2,+3 gpu 0" with at most `limit` ids of each kind shown.
  std::string text(size_t limit) const {
    std::string out;
    for (const auto& [kind, ids] : by_kind) {
      std::string list;
      for (size_t i = 0; i < ids.size() && i < limit; ++i) list += (i ? "," : "") + ids[i];
      if (ids.size() > limit) list += fmt::format(",+{}", ids.size() - limit);
      out += fmt::format("{}{} {}", out.empty() ? "" : " ", kind, list);
    }
    return out;
  }
};

std::string joined(const std::vector<std::string>& v, size_t limit) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < limit; ++i) out += (i ? "," : "") + v[i];
  if (v.size() > limit) out += fmt::format(",+{}", v.size() - limit);
  return out;
}

// A unit the report names as a string ("cpu 3", "mc0") in the reason's form.
std::string unit_words(std::string unit) {
  if (unit.rfind("cpu", 0) == 0 && unit.size() > 3 && unit[3] != ' ') return "cpu " + unit.substr(3);
  return unit;
}

// An uncorrected hardware error during the screen, when nothing else failed: the host's (EDAC, machine
// check) first, then a GPU's own (NVML: uncorrected ECC, a hardware Xid).
std::string hardware_failure(const json& r) {
  std::vector<std::string> what;
  if (r.contains("host") && r["host"].is_object() && r["host"].contains("telemetry") &&
      r["host"]["telemetry"].is_object()) {
    const json& t = r["host"]["telemetry"];
    if (t.contains("events") && t["events"].is_array())
      for (const json& e : t["events"])
        if (flag_of(e, "fatal"))
          what.push_back(
              fmt::format("{} {}", unit_words(str_of(e, "unit")),
                          str_of(e, "kind") == "edac_uncorrected" ? "uncorrected memory error" : "machine check"));
  }
  if (r.contains("devices") && r["devices"].is_array())
    for (const json& d : r["devices"]) {
      if (!d.is_object() || !d.contains("telemetry") || !d["telemetry"].is_object()) continue;
      const json& t = d["telemetry"];
      if (!t.contains("events") || !t["events"].is_array()) continue;
      for (const json& e : t["events"])
        if (e.is_object() && str_of(e, "severity") == "failure")
          what.push_back(fmt::format("gpu {} {}", str_of(d, "index"), str_of(e, "text")));
    }
  return joined(what, 2);
}

bool telemetry_drill(const json& r) {
  return r.contains("host") && r["host"].is_object() && r["host"].contains("telemetry") &&
         r["host"]["telemetry"].is_object() && r["host"]["telemetry"].contains("drill") &&
         r["host"]["telemetry"]["drill"].is_string();
}

// The reason as scontrol takes it: no control characters or quotes, at most MAX_REASON characters.
std::string clean(std::string s) {
  std::string out;
  for (char c : s)
    if (c != '"' && c != '\'') out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  return out.size() > MAX_REASON ? out.substr(0, MAX_REASON) : out;
}

}  // namespace

bool report_says_fail(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("exit") || !r["exit"].is_object()) return false;
  const json& e = r["exit"];
  return str_of(e, "verdict") == "fail" && e.contains("code") && e["code"].is_number_integer() &&
         e["code"].get<int64_t>() == EXIT_FAIL;
}

std::string drain_reason(const nlohmann::json& r) {
  if (!report_says_fail(r)) return "";
  const std::string drill = flag_of(r, "fault_injection") ? " drill" : "";
  UnitList units;
  std::vector<std::string> whats;
  std::map<std::string, std::string> classes;  // unit (its JSON) -> its worst retest classification
  const std::map<std::string, int> rank = {{"persistent", 3}, {"intermittent", 2}, {"not reproduced", 1}};
  const json tests = r.contains("tests") && r["tests"].is_array() ? r["tests"] : json::array();
  for (const json& t : tests) {
    const std::string result = str_of(t, "result");
    if (result != "fail" && result != "crash") continue;
    if (t.contains("retest") && t["retest"].is_array())
      for (const json& x : t["retest"]) {
        const std::string c = str_of(x, "classification");
        const std::string key = x.is_object() && x.contains("unit") ? x["unit"].dump() : "null";
        if (rank.count(c) && (!classes.count(key) || rank.at(c) > rank.at(classes[key]))) classes[key] = c;
      }
    std::string what = str_of(t, "family");
    const json mis = t.contains("miscompares") && t["miscompares"].is_array() ? t["miscompares"] : json::array();
    if (is_replay_family(what) && !mis.empty())
      if (const std::string site = replay_site(str_of(mis[0], "element_name")); !site.empty()) what = "replay " + site;
    if (result == "crash" && !what.empty()) what = "crash " + what;
    if (!what.empty() && std::find(whats.begin(), whats.end(), what) == whats.end()) whats.push_back(what);
    const std::string device = str_of(t, "device");
    std::vector<json> failed;
    if (t.contains("units_failed") && t["units_failed"].is_array())
      for (const json& u : t["units_failed"]) failed.push_back(u);
    if (failed.empty())
      for (const json& m : mis)
        if (m.is_object() && m.contains("unit") && !m["unit"].is_null()) failed.push_back(m["unit"]);
    if (failed.empty() && !device.empty() && device != "cpu") failed.push_back(nullptr);  // a GPU lost: the GPU
    for (const json& u : failed) {
      const auto [kind, id] = unit_label(device, u);
      units.add(kind, id);
    }
  }
  // Units the watchdog gave up on while their peers finished (exit 1): "hung".
  // Named by kind, then id ("cpu 2,cpu 10,gpu 0": several SMs of one GPU are the GPU once).
  std::vector<std::pair<std::string, std::string>> hung;
  if (r.contains("units") && r["units"].is_array())
    for (const json& u : r["units"])
      if (str_of(u, "result") == "hung") {
        const bool sm = str_of(u, "kind") == "sm";
        // An SM's GPU is "gpu" (schema_version 15), "device" before.
        const char* key = !sm ? "cpu" : u.contains("gpu") ? "gpu" : "device";
        const std::pair<std::string, std::string> h = {sm ? "gpu" : "cpu", str_of(u, key)};
        if (std::find(hung.begin(), hung.end(), h) == hung.end()) hung.push_back(h);
      }
  if (whats.empty() && !hung.empty()) {
    std::sort(hung.begin(), hung.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : unit_id_less(a.second, b.second);
    });
    std::vector<std::string> names;
    for (const auto& [kind, id] : hung) names.push_back(fmt::format("{} {}", kind, id));
    return clean(fmt::format("SDC: {} hung (watchdog){}", joined(names, 8), drill));
  }
  if (whats.empty()) {
    const std::string hw = hardware_failure(r);
    const std::string hw_drill = drill.empty() && telemetry_drill(r) ? " drill" : drill;
    return clean(hw.empty() ? "SDC: failed (the report names no failed unit)"
                            : fmt::format("SDC: {} during the screen{}", hw, hw_drill));
  }
  units.sort();
  std::set<std::string> distinct;
  for (const auto& [unit, c] : classes) distinct.insert(c);
  const std::string cls = distinct.empty() ? "" : distinct.size() == 1 ? *distinct.begin() + " " : "mixed ";
  std::string reason;
  for (const auto& [unit_limit, what_limit] : {std::pair<size_t, size_t>{8, 4}, {4, 3}, {2, 2}, {1, 1}}) {
    const std::string u = units.text(unit_limit);
    reason = fmt::format("SDC: {} {}{}{}", u.empty() ? "unit ?" : u, cls, joined(whats, what_limit), drill);
    if (reason.size() <= MAX_REASON) break;
  }
  return clean(reason);
}

}  // namespace sdc
