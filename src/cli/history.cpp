// `sdcscreen history [DIR]`: what the node's screens said per unit (src/core/history.h), the resume policy's
// decision for a node drained for SDC (--resume-policy, read by the Slurm health check and sweep), and an
// administrator's --forget after a repair.
#include "src/core/history.h"
#include "src/core/unit_name.h"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/cli/commands.h"

namespace sdc {
namespace {

const char* decision_word(history::Decision d) {
  switch (d) {
    case history::Decision::resume: return "resume";
    case history::Decision::hold: return "hold";
    case history::Decision::never: return "never";
    case history::Decision::no_record: return "no-record";
    case history::Decision::unrecorded: return "unrecorded";
  }
  return "?";
}

// resume 0; hold or never 1 (keep the node drained); no failure on record 2 (the policy cannot vouch).
int decision_exit(history::Decision d) {
  return d == history::Decision::resume ? EXIT_PASS : d == history::Decision::no_record ? EXIT_INCONCLUSIVE : EXIT_FAIL;
}

bool valid_unit(const std::string& u) {
  if (u == "all") return true;
  // A GPU by UUID ("GPU-8c2f..."): letters, digits and dashes, as CUDA and NVML print them.
  if (u.size() > 4 && u.size() <= 64 && u.rfind("GPU-", 0) == 0 &&
      u.find_first_not_of("0123456789abcdefABCDEF-", 4) == std::string::npos)
    return true;
  for (const char* kind : {"cpu ", "gpu "}) {
    const std::string k = kind;
    if (u.rfind(k, 0) == 0 && u.size() > k.size() && u.size() <= k.size() + 6 &&
        u.find_first_not_of("0123456789", k.size()) == std::string::npos)
      return true;
  }
  return false;
}

}  // namespace

int cmd_history(const HistoryArgs& a) {
  if (a.clean_screens < 1 || a.clean_screens > 1000)
    return usage_error(fmt::format("--clean-screens {}: give 1 to 1000", a.clean_screens));
  if (history::profile_rank(a.min_profile) < 0)
    return usage_error(fmt::format("--min-profile '{}' is not boot, standard or burnin", a.min_profile));
  if (a.acknowledge && !a.forget.empty()) return usage_error("--acknowledge and --forget: give one at a time");
  // The policy's answer is its exit code (0 resume): after a forget or an acknowledge, 0 would read as one.
  if (a.resume_policy && (a.acknowledge || !a.forget.empty()))
    return usage_error(fmt::format("{} and --resume-policy: give one at a time (the policy decides on the next call)",
                                   a.acknowledge ? "--acknowledge" : "--forget"));
  // The policy's output is one line a script reads, then its reasons; the JSON summary carries the same decision
  // (resume_policy) without it.
  if (a.resume_policy && a.output_format == "json")
    return usage_error(
        "--output-format json and --resume-policy: the policy prints text for scripts; for JSON, leave out "
        "--resume-policy (the summary's resume_policy holds the decision)");
  if (!a.forget.empty()) {
    if (!valid_unit(a.forget))
      return usage_error(
          fmt::format("--forget '{}': name a unit like 'cpu 3', 'gpu 0' or a GPU's UUID, or 'all'", a.forget));
    if (const std::string err = history::prepare_dir(a.dir); !err.empty()) return config_error(err);
    const history::Record rec = history::forget_record(a.forget);
    try {
      history::append(a.dir, rec);
    } catch (const FileError& e) {
      return config_error(e.what());
    }
    say("forgot the failures of {} before {} in {}/{} (the lines stay, for the record)\n", a.forget, rec.time, a.dir,
        history::FILE_NAME);
    return EXIT_PASS;
  }
  if (a.acknowledge) {
    if (const std::string err = history::prepare_dir(a.dir); !err.empty()) return config_error(err);
    const std::vector<std::string> removed = history::acknowledge(a.dir);
    for (const std::string& m : removed) say("removed {}: its screen's line is acknowledged as missing\n", m);
    if (removed.empty()) say("{}: no screen without its line to acknowledge\n", a.dir);
    return EXIT_PASS;
  }
  history::History h;
  bool exists = false;
  if (const std::string err = history::load(a.dir, h, exists); !err.empty()) return config_error(err);
  const history::PolicyConfig cfg{a.clean_screens, a.min_profile};
  const history::ResumeVerdict v = history::decide(h, cfg);
  if (a.resume_policy) {  // one line a script can read first, then the reasons
    say("{}: {}\n", decision_word(v.decision), v.short_text);
    for (const std::string& d : v.details) say("  {}\n", d);
    if (h.torn_tail) say("  the last line of {} was cut short and is ignored\n", h.path);
    if (h.duplicates)
      say("  {} line{} repeat an earlier screen's run id: counted once\n", h.duplicates, h.duplicates == 1 ? "" : "s");
    if (h.in_progress) say("  {} screen{} running now\n", h.in_progress, h.in_progress == 1 ? " is" : "s are");
    return decision_exit(v.decision);
  }
  if (!exists)
    return config_error(fmt::format("{}: no history here (screens write it with 'run --history {}')", h.path, a.dir));
  const std::vector<history::UnitSummary> units = history::summarize(h);
  size_t screens = 0, drills = 0, forgets = 0, weakened = 0;
  std::string first, last;
  for (const history::Record& r : h.records) {
    if (!r.forget.empty()) {
      ++forgets;
      continue;
    }
    ++screens;
    drills += r.drill;
    weakened += !r.weakened.empty();
    if (first.empty()) first = r.time;
    last = r.time;
  }
  if (a.output_format == "json") {
    nlohmann::ordered_json j;
    j["path"] = h.path;
    j["screens"] = screens;
    j["drills"] = drills;
    j["weakened"] = weakened;
    j["forgets"] = forgets;
    j["first"] = first;
    j["last"] = last;
    j["torn_tail"] = h.torn_tail;
    j["duplicates"] = h.duplicates;
    j["unrecorded"] = h.unrecorded;
    j["units"] = nlohmann::ordered_json::array();
    for (const auto& u : units) {
      nlohmann::ordered_json fl = nlohmann::ordered_json::array();
      for (const auto& f : u.failure_list) {
        nlohmann::ordered_json jf = {{"time", f.time}, {"case", f.case_id}, {"family", f.family}};
        if (!f.sms.empty()) jf["sms"] = f.sms;
        if (!f.microcode.empty()) jf["microcode"] = f.microcode;
        fl.push_back(jf);
      }
      const auto opt = [](const std::string& s) {
        return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
      };
      j["units"].push_back({{"unit", u.unit},
                            {"id", u.id},
                            {"uuid", opt(u.uuid)},
                            {"serial", opt(u.serial)},
                            {"microcode", opt(u.microcode)},
                            {"replaced_by", opt(u.replaced_by)},
                            {"screens", u.screens},
                            {"failures", u.failures},
                            {"fail_rate", u.screens ? static_cast<double>(u.failures) / u.screens : 0.0},
                            {"first_failure", u.first_failure},
                            {"last_failure", u.last_failure},
                            {"flaps", u.flaps},
                            {"flapping", u.flaps > 0},
                            {"families", u.families},
                            {"signatures", u.signatures},
                            {"classifications", u.classifications},
                            {"failure_list", fl}});
    }
    j["resume_policy"] = {{"clean_screens", cfg.clean_screens},
                          {"min_profile", cfg.min_profile},
                          {"decision", decision_word(v.decision)},
                          {"text", v.short_text},
                          {"remaining", v.remaining},
                          {"details", v.details}};
    say("{}\n", j.dump(2));
    return EXIT_PASS;
  }
  say("history {}: {} screen{}{}{}{}{}\n", h.path, screens, screens == 1 ? "" : "s",
      screens ? fmt::format(", {} to {}", first, last) : "",
      drills ? fmt::format(" ({} drill{}: their drills' failures not counted below)", drills, drills == 1 ? "" : "s")
             : "",
      weakened ? fmt::format(" ({} weakened, never counted as clean)", weakened) : "",
      forgets ? fmt::format("; {} forget line{}", forgets, forgets == 1 ? "" : "s") : "");
  if (h.torn_tail) say("the last line was cut short (a write interrupted) and is ignored\n");
  if (h.duplicates)
    say("{} line{} repeat an earlier screen's run id and {} counted once\n", h.duplicates, h.duplicates == 1 ? "" : "s",
        h.duplicates == 1 ? "is" : "are");
  for (const std::string& m : h.unrecorded) say("a screen left no line: {}\n", m);
  size_t never_failed = 0;
  bool header = false;
  for (const auto& u : units) {
    if (u.failures == 0) {
      ++never_failed;
      continue;
    }
    if (!header) {
      say("{:<8} {:>7} {:>8} {:>9}  {:<20}  {:<20}  {:<8}  {}\n", "unit", "screens", "failures", "fail rate",
          "first failure", "last failure", "flapping", "families");
      header = true;
    }
    std::string fams;
    for (const auto& f : u.families) fams += (fams.empty() ? "" : ",") + f;
    say("{:<8} {:>7} {:>8} {:>8.1f}%  {:<20}  {:<20}  {:<8}  {}\n", u.unit, u.screens, u.failures,
        100.0 * u.failures / u.screens, u.first_failure, u.last_failure,
        u.flaps ? fmt::format("yes ({})", u.flaps) : "no", fams);
    if (!u.uuid.empty())
      say("         uuid {}{}\n", u.uuid, u.serial.empty() ? "" : fmt::format(", serial {}", u.serial));
    if (!u.replaced_by.empty()) say("         replaced by {}: its failures no longer hold the node\n", u.replaced_by);
    for (const auto& f : u.failure_list) {
      std::string sms;  // "sm 3, sm 17": the SMs of the GPU this entry names
      for (int sm : f.sms) {
        if (!sms.empty()) sms += ", ";
        sms += unit_text(UnitName{-1, -1, sm});
      }
      say("         failed {} {}{}{}\n", f.time, f.case_id, sms.empty() ? std::string() : " on " + sms,
          f.microcode.empty() ? std::string() : fmt::format(" (microcode {})", f.microcode));
    }
    if (!u.failure_list.empty() && !u.microcode.empty() && !u.failure_list.back().microcode.empty() &&
        u.failure_list.back().microcode != u.microcode)
      say("         microcode now {} (was {} at its last failure)\n", u.microcode, u.failure_list.back().microcode);
    for (const std::string& g : u.signatures) say("         signature {}\n", g);
    if (!u.classifications.empty()) {
      std::string cls;
      for (const auto& c : u.classifications) cls += (cls.empty() ? "" : ", ") + c;
      say("         retest {}\n", cls);
    }
  }
  if (never_failed)
    say("{}{} unit{} screened, never failed\n", header ? "" : "no failure on record; ", never_failed,
        never_failed == 1 ? "" : "s");
  say("resume policy ({} clean {} screens after the last failure; never after two): {}: {}\n", cfg.clean_screens,
      cfg.min_profile, decision_word(v.decision), v.short_text);
  return EXIT_PASS;
}

}  // namespace sdc
