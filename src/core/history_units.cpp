// The history read per unit identity (src/core/history.h): which part each label of each line names, which
// failed GPUs were replaced, the resume policy's decision and the per-unit summary.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "src/core/history.h"

namespace sdc::history {

bool Record::failed(const std::string& unit) const {
  const auto it = units.find(unit);
  if (it != units.end() && (it->second == "fail" || it->second == "crash")) return true;
  return std::any_of(failures.begin(), failures.end(), [&unit](const Failure& f) { return f.unit == unit; });
}

bool Record::failed_for_real(const std::string& unit) const {
  bool any = false;
  for (const Failure& f : failures) {
    if (f.unit != unit) continue;
    if (!f.drill) return true;
    any = true;
  }
  if (any) return false;  // every failure of the unit was a drill's
  // A unit that failed or crashed with no failure entry: no drill explains it.
  const auto it = units.find(unit);
  return it != units.end() && (it->second == "fail" || it->second == "crash");
}

bool unit_less(const std::string& a, const std::string& b) {
  const auto split = [](const std::string& u) {
    const auto sp = u.rfind(' ');
    long n = -1;
    if (sp != std::string::npos) n = std::strtol(u.c_str() + sp + 1, nullptr, 10);
    return std::pair{u.substr(0, sp == std::string::npos ? u.size() : sp), n};
  };
  return split(a) < split(b);
}

std::string display(const std::string& label, const std::string& key) {
  if (key.rfind("uuid ", 0) == 0) return fmt::format("{} ({})", label, key.substr(5));
  return label;
}

std::vector<std::map<std::string, std::string>> identity_keys(const History& h) {
  std::vector<std::map<std::string, std::string>> out(h.records.size());
  // Walked backwards, so a line without GPU identity takes the identity of the next line that has one at
  // the same ordinal.
  std::map<std::string, std::string> next_gpu;
  for (size_t n = h.records.size(); n-- > 0;) {
    const Record& r = h.records[n];
    if (!r.forget.empty()) continue;
    std::set<std::string> labels(r.screened.begin(), r.screened.end());
    for (const auto& kv : r.units) labels.insert(kv.first);
    for (const Failure& f : r.failures) labels.insert(f.unit);
    for (const std::string& label : labels) {
      std::string key = label;
      if (label.rfind("cpu ", 0) == 0 && label != "cpu ?") {
        key = r.host + " " + label;
      } else if (label.rfind("gpu ", 0) == 0) {
        if (const auto g = r.gpus.find(label); g != r.gpus.end()) {
          key = "uuid " + g->second.uuid;
          next_gpu[label] = key;
        } else if (const auto it = next_gpu.find(label); it != next_gpu.end()) {
          key = it->second;
        }
      }
      out[n][label] = key;
    }
  }
  return out;
}

std::map<std::string, std::string> replaced_gpus(const History& h,
                                                 const std::vector<std::map<std::string, std::string>>& keys) {
  // Where each GPU identity appears: first and last line, and its label in the last one.
  struct Seen {
    size_t first = 0, last = 0;
    std::string label;
  };
  std::map<std::string, Seen> seen;
  std::set<std::string> failed;
  for (size_t i = 0; i < h.records.size(); ++i)
    for (const auto& [label, key] : keys[i]) {
      if (key.rfind("uuid ", 0) != 0) continue;
      const auto it = seen.try_emplace(key, Seen{i, i, label}).first;
      it->second.last = i;
      it->second.label = label;
      if (h.records[i].failed_for_real(label)) failed.insert(key);
    }
  std::map<std::string, std::string> out;
  for (const std::string& key : failed) {
    const Seen& s = seen[key];
    // A successor holds its ordinal later, and is new: a GPU seen before at another ordinal was renumbered
    // into the place (the failed one may have fallen off the bus), which is no evidence of a replacement.
    for (size_t j = s.last + 1; j < h.records.size() && !out.count(key); ++j) {
      const auto it = keys[j].find(s.label);
      if (it != keys[j].end() && it->second != key && it->second.rfind("uuid ", 0) == 0 &&
          seen[it->second].first > s.last)
        out[key] = it->second;
    }
  }
  return out;
}

int profile_rank(const std::string& profile) {
  if (profile == "boot") return 0;
  if (profile == "standard") return 1;
  if (profile == "burnin") return 2;
  return -1;
}

ResumeVerdict decide(const History& h, const PolicyConfig& cfg) {
  ResumeVerdict v;
  const auto keys = identity_keys(h);
  const auto replaced = replaced_gpus(h, keys);
  // The screens in which each unit (by identity) failed, drills aside, forgetting what an administrator cleared.
  std::map<std::string, std::vector<size_t>> failed_in;
  std::map<std::string, std::string> label_of, key_at;  // identity -> its latest label; label -> latest identity
  size_t drills = 0;
  const auto key_of = [&keys](size_t i, const std::string& label) {
    const auto it = keys[i].find(label);
    return it == keys[i].end() ? label : it->second;
  };
  for (size_t i = 0; i < h.records.size(); ++i) {
    const Record& r = h.records[i];
    if (!r.forget.empty()) {
      if (r.forget == "all") {
        failed_in.clear();
      } else {  // a label means the part that held it last; a UUID means that GPU wherever it was
        failed_in.erase(r.forget);
        failed_in.erase("uuid " + r.forget);
        if (const auto it = key_at.find(r.forget); it != key_at.end()) failed_in.erase(it->second);
      }
      continue;
    }
    for (const auto& [label, key] : keys[i]) {
      label_of[key] = label;
      key_at[label] = key;
    }
    // Drill status belongs to each failure: a drill's failures do not count, a real one beside them does.
    std::set<std::string> units;
    bool drilled = false;
    for (const Failure& f : r.failures) {
      if (f.drill) drilled = true;
      if (r.failed_for_real(f.unit)) units.insert(key_of(i, f.unit));
    }
    for (const auto& [unit, result] : r.units)
      if (r.failed_for_real(unit)) units.insert(key_of(i, unit));
    if (units.empty() && drilled) ++drills;
    // A failure nobody placed still counts (in a drill screen, when no drill's failure explains the exit).
    if (units.empty() && r.exit == EXIT_FAIL && !drilled) units.insert("unit ?");
    for (const std::string& u : units) failed_in[u].push_back(i);
  }
  const std::string needed =
      fmt::format("{} clean {} screen{}", cfg.clean_screens, cfg.min_profile, cfg.clean_screens == 1 ? "" : "s");
  const auto unrecorded = [&h](ResumeVerdict& out) {  // a screen's failure may be missing: nothing vouches
    if (h.unrecorded.empty() || out.decision == Decision::never) return;
    out.decision = Decision::unrecorded;
    out.remaining = 0;
    out.short_text = "a screen left no history line: not resumed";
    for (const std::string& m : h.unrecorded)
      out.details.push_back(
          fmt::format("{}: a screen started and never wrote its line (a full disk, a crash in its "
                      "reporting, a kill): its failure may be missing",
                      m));
    out.details.push_back(
        "check the node (the screen's report, the journal), then 'sdcscreen history DIR --acknowledge'");
  };
  if (failed_in.empty()) {
    v.decision = Decision::no_record;
    v.short_text = drills ? "only drills failed" : "no failure on record";
    v.details.push_back(h.records.empty()
                            ? fmt::format("{}: no screen on record", h.path)
                            : fmt::format("{}: {} screens on record, no failure outside drills{}", h.path,
                                          h.records.size(), drills ? fmt::format(" ({} drills failed)", drills) : ""));
    unrecorded(v);
    return v;
  }
  // In label order, so the text reads "cpu 3, cpu 12, gpu 0".
  std::vector<std::string> order;
  for (const auto& kv : failed_in) order.push_back(kv.first);
  const auto label = [&label_of](const std::string& key) {
    const auto it = label_of.find(key);
    return it == label_of.end() ? key : it->second;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return unit_less(label(a), label(b)); });
  std::vector<std::string> twice;
  std::set<std::string> holding;  // the identities whose failures still hold the node (not replaced)
  size_t last = 0;
  for (const std::string& key : order) {
    const std::vector<size_t>& idx = failed_in[key];
    const Record& first = h.records[idx.front()];
    const Record& latest = h.records[idx.back()];
    std::string fams;
    for (size_t i : idx)
      for (const Failure& f : h.records[i].failures)
        if (key_of(i, f.unit) == key && fams.find(f.family) == std::string::npos)
          fams += (fams.empty() ? "" : ",") + f.family;
    const auto succ = replaced.find(key);
    v.details.push_back(
        fmt::format("{} failed in {} screen{} ({}first {}, last {}){}", display(label(key), key), idx.size(),
                    idx.size() == 1 ? "" : "s", fams.empty() ? "" : fams + "; ", first.time, latest.time,
                    succ == replaced.end() ? ""
                                           : fmt::format(": replaced by {}, no longer holds the node",
                                                         succ->second.substr(succ->second.find(' ') + 1))));
    last = std::max(last, idx.back());
    if (succ != replaced.end()) continue;
    holding.insert(key);
    if (idx.size() >= 2) twice.push_back(label(key));
  }
  if (!twice.empty()) {
    std::string list;
    for (size_t i = 0; i < twice.size() && i < 3; ++i) list += (i ? "," : "") + twice[i];
    if (twice.size() > 3) list += fmt::format(",+{}", twice.size() - 3);
    v.decision = Decision::never;
    v.short_text = fmt::format("{} failed twice: not resumed", list);
    v.details.push_back(
        "a unit that failed in two screens is not resumed by any number of clean screens: repair or replace it, "
        "then 'sdcscreen history DIR --forget UNIT'");
    return v;
  }
  int clean = 0;
  const int min_rank = profile_rank(cfg.min_profile);
  for (size_t j = last + 1; j < h.records.size(); ++j) {
    const Record& r = h.records[j];
    if (!r.forget.empty() || r.drill || !r.weakened.empty() || r.exit != EXIT_PASS || r.selection != "profile" ||
        profile_rank(r.profile) < min_rank)
      continue;  // not a clean screen of enough depth (a weakened pass vouches for nothing); an inconclusive one
                 // does not break the run of clean ones
    std::set<std::string> screened;
    for (const std::string& u : r.screened) screened.insert(key_of(j, u));
    const bool covers = std::all_of(holding.begin(), holding.end(),
                                    [&screened](const std::string& k) { return screened.count(k) > 0; });
    if (covers) ++clean;
  }
  if (clean >= cfg.clean_screens) {
    v.decision = Decision::resume;
    v.short_text = fmt::format("{} clean {} screens since the failure", clean, cfg.min_profile);
    unrecorded(v);
    return v;
  }
  v.decision = Decision::hold;
  v.remaining = cfg.clean_screens - clean;
  v.short_text =
      fmt::format("{} clean {} screen{} to resume", v.remaining, cfg.min_profile, v.remaining == 1 ? "" : "s");
  v.details.push_back(fmt::format("{} of the {} needed since the last failure", clean, needed));
  unrecorded(v);
  return v;
}

std::vector<UnitSummary> summarize(const History& h) {
  struct State {
    UnitSummary s;
    bool failed_before = false, passed_since = false;
  };
  const auto keys = identity_keys(h);
  const auto replaced = replaced_gpus(h, keys);
  std::map<std::string, State> units;
  for (size_t i = 0; i < h.records.size(); ++i) {
    const Record& r = h.records[i];
    if (!r.forget.empty()) continue;
    for (const auto& [u, key] : keys[i]) {
      if (r.drill && !r.failed_for_real(u)) continue;  // a drill screen: its real failures alone
      State& st = units[key];
      st.s.unit = u;
      st.s.id = key;
      if (const auto g = r.gpus.find(u); g != r.gpus.end()) {
        st.s.uuid = g->second.uuid;
        if (!g->second.serial.empty()) st.s.serial = g->second.serial;
      }
      if (u.rfind("cpu ", 0) == 0) st.s.microcode = r.microcode;
      ++st.s.screens;
      if (r.failed_for_real(u)) {
        ++st.s.failures;
        if (st.s.first_failure.empty()) st.s.first_failure = r.time;
        st.s.last_failure = r.time;
        if (st.failed_before && st.passed_since) ++st.s.flaps;
        st.failed_before = true;
        st.passed_since = false;
        for (const Failure& f : r.failures) {
          if (f.unit != u || f.drill) continue;
          st.s.failure_list.push_back(
              FailureAt{r.time, f.case_id, f.family, u.rfind("cpu ", 0) == 0 ? r.microcode : "", f.sms});
          if (std::find(st.s.families.begin(), st.s.families.end(), f.family) == st.s.families.end())
            st.s.families.push_back(f.family);
          for (const std::string& g : f.signatures)
            if (std::find(st.s.signatures.begin(), st.s.signatures.end(), g) == st.s.signatures.end())
              st.s.signatures.push_back(g);
          auto& cls = st.s.classifications;
          if (!f.classification.empty() && std::find(cls.begin(), cls.end(), f.classification) == cls.end())
            cls.push_back(f.classification);
        }
      } else if (st.failed_before && !r.units.count(u)) {
        st.passed_since = true;
      }
    }
  }
  std::vector<UnitSummary> out;
  for (auto& [key, st] : units) {
    if (const auto it = replaced.find(key); it != replaced.end()) st.s.replaced_by = it->second.substr(5);
    out.push_back(st.s);
  }
  std::stable_sort(out.begin(), out.end(), [](const UnitSummary& a, const UnitSummary& b) {
    return unit_less(a.unit, b.unit) || (!unit_less(b.unit, a.unit) && a.id < b.id);
  });
  return out;
}

}  // namespace sdc::history
