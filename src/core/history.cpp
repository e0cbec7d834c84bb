#include "history.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "../backends/cpu/cpu_topology.h"
#include "../util/atomic_file.h"
#include "../util/iso_time.h"
#include "../util/strict_json.h"

namespace sdc::history {
namespace {

using ojson = nlohmann::ordered_json;

std::string cpu_label(int cpu) { return fmt::format("cpu {}", cpu); }
std::string gpu_label(int index) { return fmt::format("gpu {}", index); }

// "cpu 3" < "cpu 12" < "gpu 0": by kind, then by number.
bool unit_less(const std::string& a, const std::string& b) {
  const auto split = [](const std::string& u) {
    const auto sp = u.rfind(' ');
    long n = -1;
    if (sp != std::string::npos) n = std::strtol(u.c_str() + sp + 1, nullptr, 10);
    return std::pair{u.substr(0, sp == std::string::npos ? u.size() : sp), n};
  };
  return split(a) < split(b);
}

// Screened units as compact lists per kind ({"cpu": "0-3,8", "gpu": "0-7"}) and back.
ojson screened_json(const std::vector<std::string>& units) {
  std::map<std::string, std::vector<int>> by_kind;
  for (const std::string& u : units) {
    const auto sp = u.rfind(' ');
    by_kind[u.substr(0, sp)].push_back(std::stoi(u.substr(sp + 1)));
  }
  ojson j = ojson::object();
  for (auto& [kind, ids] : by_kind) {
    std::sort(ids.begin(), ids.end());
    j[kind] = cpu::format_cpu_list(ids);
  }
  return j;
}

std::string bad(const std::string& where, const std::string& what) { return fmt::format("{}: {}", where, what); }

// One line of the file into a record; "" or what is wrong with it.
std::string parse_record(const nlohmann::json& j, Record& rec) {
  if (!j.is_object()) return "not a JSON object";
  if (!j.contains("v") || !j["v"].is_number_integer()) return "no format version 'v'";
  if (j["v"].get<int64_t>() != FORMAT_VERSION)
    return fmt::format("format version {} (this sdcscreen reads {})", j["v"].dump(), FORMAT_VERSION);
  const auto str = [&j](const char* key, std::string& out, bool required) -> std::string {
    if (!j.contains(key)) return required ? fmt::format("no '{}'", key) : "";
    if (!j[key].is_string()) return fmt::format("'{}' is not a string", key);
    out = j[key].get<std::string>();
    return "";
  };
  if (auto e = str("time", rec.time, true); !e.empty()) return e;
  if (!j.contains("unix") || !j["unix"].is_number()) return "no number 'unix'";
  rec.unix = j["unix"].get<double>();
  if (j.contains("forget")) {
    if (auto e = str("forget", rec.forget, true); !e.empty()) return e;
    if (rec.forget.empty()) return "'forget' names no unit";
    return "";
  }
  for (const auto& [key, out] : {std::pair{"host", &rec.host}, std::pair{"profile", &rec.profile},
                                 std::pair{"selection", &rec.selection}, std::pair{"verdict", &rec.verdict}})
    if (auto e = str(key, *out, true); !e.empty()) return e;
  if (rec.selection != "profile" && rec.selection != "custom")
    return fmt::format("'selection' is '{}', not profile or custom", rec.selection);
  if (!j.contains("drill") || !j["drill"].is_boolean()) return "no boolean 'drill'";
  rec.drill = j["drill"].get<bool>();
  if (!j.contains("exit") || !j["exit"].is_number_integer()) return "no integer 'exit'";
  const int64_t exit = j["exit"].get<int64_t>();
  if (exit < 0 || exit > 255) return fmt::format("'exit' {} is not an exit status", exit);
  rec.exit = static_cast<int>(exit);
  if (!j.contains("screened") || !j["screened"].is_object()) return "no object 'screened'";
  for (const auto& [kind, list] : j["screened"].items()) {
    if ((kind != "cpu" && kind != "gpu") || !list.is_string()) return fmt::format("'screened' has a bad '{}'", kind);
    std::vector<int> ids;
    if (const std::string e = cpu::parse_cpu_list(list.get<std::string>(), ids); !e.empty())
      return fmt::format("'screened.{}': {}", kind, e);
    for (int id : ids) rec.screened.push_back(fmt::format("{} {}", kind, id));
  }
  if (!j.contains("units") || !j["units"].is_object()) return "no object 'units'";
  for (const auto& [unit, result] : j["units"].items()) {
    if (!result.is_string()) return fmt::format("'units.{}' is not a string", unit);
    const std::string r = result.get<std::string>();
    if (r != "fail" && r != "crash" && r != "hung" && r != "error")
      return fmt::format("'units.{}' is '{}', not fail, crash, hung or error", unit, r);
    rec.units[unit] = r;
  }
  if (!j.contains("failures") || !j["failures"].is_array()) return "no array 'failures'";
  for (const auto& f : j["failures"]) {
    if (!f.is_object()) return "a failure is not an object";
    Failure x;
    for (const auto& [key, out] : {std::pair{"unit", &x.unit}, std::pair{"case", &x.case_id},
                                   std::pair{"family", &x.family}, std::pair{"result", &x.result}}) {
      if (!f.contains(key) || !f[key].is_string()) return fmt::format("a failure has no string '{}'", key);
      *out = f[key].get<std::string>();
    }
    if (x.result != "fail" && x.result != "crash")
      return fmt::format("a failure's result is '{}', not fail or crash", x.result);
    if (f.contains("signatures")) {
      if (!f["signatures"].is_array()) return "a failure's 'signatures' is not an array";
      for (const auto& g : f["signatures"]) {
        if (!g.is_string()) return "a failure's 'signatures' holds a non-string";
        x.signatures.push_back(g.get<std::string>());
      }
    }
    if (f.contains("class")) {
      if (!f["class"].is_string()) return "a failure's 'class' is not a string";
      x.classification = f["class"].get<std::string>();
    }
    if (f.contains("sms")) {
      if (!f["sms"].is_array()) return "a failure's 'sms' is not an array";
      for (const auto& s : f["sms"]) {
        if (!s.is_number_integer()) return "a failure's 'sms' holds a non-integer";
        x.sms.push_back(s.get<int>());
      }
    }
    rec.failures.push_back(x);
  }
  return "";
}

}  // namespace

bool Record::failed(const std::string& unit) const {
  const auto it = units.find(unit);
  if (it != units.end() && (it->second == "fail" || it->second == "crash")) return true;
  return std::any_of(failures.begin(), failures.end(), [&unit](const Failure& f) { return f.unit == unit; });
}

Record record_of(const RunResult& r, const std::string& host, bool full_profile) {
  Record rec;
  rec.unix = r.end_unix > 0 ? r.end_unix : static_cast<double>(std::time(nullptr));
  rec.time = iso_time(rec.unix);
  rec.host = host;
  rec.profile = r.profile;
  rec.selection = full_profile ? "profile" : "custom";
  rec.drill = !r.injections.empty();
  rec.exit = r.exit_code();
  rec.verdict = r.exit_word();
  std::set<std::string> screened;
  for (const UnitResult& u : r.units) {
    if (u.is_sm()) continue;  // GPUs are counted whole, below
    const bool worked = u.tiles > 0 || u.failed_tiles > 0 || u.crash_signal != 0 || u.hung;
    if (!worked) continue;
    const std::string label = cpu_label(u.cpu.cpu);
    screened.insert(label);
    if (u.crash_signal)
      rec.units[label] = "crash";
    else if (u.failed_tiles)
      rec.units[label] = "fail";
    else if (u.hung)
      rec.units[label] = "hung";
  }
  for (size_t d = 0; d < r.devices.size(); ++d) {
    const std::string label = gpu_label(r.devices[d].index);
    bool ran = false, fail = false, crash = false, error = false;
    for (const TestResult& t : r.tests) {
      if (t.device_index != static_cast<int>(d) || t.verdict == Verdict::skip) continue;
      ran = true;
      fail = fail || t.verdict == Verdict::fail;
      crash = crash || t.verdict == Verdict::crash;
      error = error || t.verdict == Verdict::error;
    }
    if (!ran) continue;
    screened.insert(label);
    if (crash)
      rec.units[label] = "crash";
    else if (fail)
      rec.units[label] = "fail";
    else if (error)
      rec.units[label] = "error";
  }
  // The distinct signature strings of a test's units (all of them: one GPU's SMs, or one CPU).
  const auto signatures = [](const TestResult& t, int only_unit, bool all) {
    std::vector<std::string> out;
    for (const UnitSignature& u : t.signatures) {
      if (!all && u.unit != only_unit) continue;
      std::string text = u.signature.text(t.family);
      if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(std::move(text));
    }
    return out;
  };
  for (const TestResult& t : r.tests) {
    if (t.verdict != Verdict::fail && t.verdict != Verdict::crash) continue;
    Failure f{"", t.id, t.family, verdict_name(t.verdict), {}, {}, ""};
    if (t.device_index >= 0 && static_cast<size_t>(t.device_index) < r.devices.size()) {
      f.unit = gpu_label(r.devices[static_cast<size_t>(t.device_index)].index);
      f.sms = t.units_failed;
      std::sort(f.sms.begin(), f.sms.end());
      f.signatures = signatures(t, -1, true);
      // The GPU's classification: the worst of its SMs' retests.
      auto rank = [](const std::string& c) {
        return c == "persistent" ? 3 : c == "intermittent" ? 2 : c.empty() ? 0 : 1;
      };
      for (const UnitRetest& u : t.retests)
        if (u.same_seed_runs > 0 && rank(u.classification()) > rank(f.classification))
          f.classification = u.classification();
      rec.failures.push_back(f);
      screened.insert(f.unit);
      if (!rec.units.count(f.unit)) rec.units[f.unit] = f.result;
      continue;
    }
    std::vector<int> cpus = t.units_failed;
    for (const Miscompare& m : t.miscompares)
      if (cpus.empty() && m.unit >= 0) cpus.push_back(m.unit);
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    if (cpus.empty()) {  // never expected: a failure must still be on record, if unplaced
      f.unit = "cpu ?";
      rec.failures.push_back(f);
      continue;
    }
    for (int c : cpus) {
      f.unit = cpu_label(c);
      f.signatures = signatures(t, c, false);
      f.classification.clear();
      for (const UnitRetest& u : t.retests)
        if (u.unit == c && u.same_seed_runs > 0) f.classification = u.classification();
      rec.failures.push_back(f);
      screened.insert(f.unit);
      if (!rec.units.count(f.unit)) rec.units[f.unit] = f.result;
    }
  }
  screened.erase("cpu ?");
  rec.screened.assign(screened.begin(), screened.end());
  std::sort(rec.screened.begin(), rec.screened.end(), unit_less);
  return rec;
}

std::string default_dir() {
  if (const char* env = std::getenv("SDCSCREEN_HISTORY"); env && *env)
    return std::string(env) == "none" ? "" : std::string(env);
  return geteuid() == 0 ? DEFAULT_DIR : "";
}

std::string to_line(const Record& rec) {
  ojson j;
  j["v"] = FORMAT_VERSION;
  j["time"] = rec.time;
  j["unix"] = static_cast<int64_t>(rec.unix);
  if (!rec.forget.empty()) {
    j["forget"] = rec.forget;
    return j.dump();
  }
  j["host"] = rec.host;
  j["profile"] = rec.profile;
  j["selection"] = rec.selection;
  j["drill"] = rec.drill;
  j["exit"] = rec.exit;
  j["verdict"] = rec.verdict;
  std::vector<std::string> screened;
  for (const std::string& u : rec.screened)
    if (u != "cpu ?") screened.push_back(u);
  j["screened"] = screened_json(screened);
  j["units"] = ojson::object();
  for (const auto& [unit, result] : rec.units)
    if (unit != "cpu ?") j["units"][unit] = result;
  j["failures"] = ojson::array();
  for (const Failure& f : rec.failures) {
    ojson jf = {{"unit", f.unit}, {"case", f.case_id}, {"family", f.family}, {"result", f.result}};
    if (!f.sms.empty()) jf["sms"] = f.sms;
    if (!f.signatures.empty()) jf["signatures"] = f.signatures;
    if (!f.classification.empty()) jf["class"] = f.classification;
    j["failures"].push_back(jf);
  }
  // Invalid UTF-8 (a host name, a case id) is replaced, never a reason to lose the line.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Record forget_record(const std::string& unit) {
  Record rec;
  rec.unix = static_cast<double>(std::time(nullptr));
  rec.time = iso_time(rec.unix);
  rec.forget = unit;
  return rec;
}

std::string prepare_dir(const std::string& dir) {
  if (dir.empty()) return "--history: empty directory name";
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fmt::format("--history: cannot create {}: {}", dir, std::strerror(errno));
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fmt::format("--history: {} is not a directory", dir);
  if (access(dir.c_str(), W_OK) != 0)
    return fmt::format("--history: {} is not writable: {}", dir, std::strerror(errno));
  const std::string file = dir + "/" + FILE_NAME;
  struct stat f {};
  if (lstat(file.c_str(), &f) == 0 && !S_ISREG(f.st_mode))
    return fmt::format("--history: {} is not a regular file (a symbolic link?): refusing it", file);
  return "";
}

void append(const std::string& dir, const Record& rec) {
  const std::string file = dir + "/" + FILE_NAME;
  const std::string lock_path = dir + "/.history.lock";
  const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (lock < 0) throw FileError(fmt::format("{}: {}", lock_path, std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }  // drops the flock
  } closer{lock};
  while (flock(lock, LOCK_EX) != 0)
    if (errno != EINTR) throw FileError(fmt::format("{}: cannot lock: {}", lock_path, std::strerror(errno)));
  const int fd = open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw FileError(fmt::format("{}: {}", file, std::strerror(errno)));
  const std::string line = to_line(rec) + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      // A partial line would be read as a torn tail and ignored; cut it off so the next line starts clean.
      struct stat st {};
      if (done > 0 && fstat(fd, &st) == 0 && ftruncate(fd, st.st_size - static_cast<off_t>(done)) != 0) {
      }
      close(fd);
      throw FileError(fmt::format("{}: cannot append: {}", file, std::strerror(n < 0 ? err : ENOSPC)));
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  struct stat st {};
  const bool big = fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(MAX_LINES * 64);
  close(fd);
  if (!synced) throw FileError(fmt::format("{}: cannot write to disk: {}", file, std::strerror(errno)));
  if (!big) return;
  // Bound the file: the newest lines, and every older line the policy or the summary of failures needs.
  const std::string text = read_file(file);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (lines.size() <= MAX_LINES) return;
  std::string kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    bool keep = i + KEEP_LINES >= lines.size();
    if (!keep) {
      nlohmann::json j;
      Record r;
      keep = !parse_strict_json(lines[i], j).empty() || !parse_record(j, r).empty() || !r.forget.empty() ||
             !r.failures.empty() || r.exit == EXIT_FAIL;
    }
    if (keep) kept += lines[i] + "\n";
  }
  write_file_atomic(file, kept);
}

std::string load(const std::string& dir, History& h, bool& exists) {
  h = History{};
  h.path = dir + "/" + FILE_NAME;
  exists = false;
  struct stat st {};
  if (lstat(h.path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    return fmt::format("{}: {}", h.path, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return fmt::format("{}: not a regular file (a symbolic link?)", h.path);
  exists = true;
  std::string text;
  try {
    text = read_file(h.path);
  } catch (const FileError& e) {
    return e.what();
  }
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {  // the last line of a write cut short (power loss): never half-counted
      h.torn_tail = true;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const std::string where = fmt::format("{} line {}", h.path, line_no);
    nlohmann::json j;
    if (const std::string e = parse_strict_json(line, j); !e.empty()) return bad(where, e);
    Record rec;
    if (const std::string e = parse_record(j, rec); !e.empty()) return bad(where, e);
    h.records.push_back(std::move(rec));
  }
  return "";
}

int profile_rank(const std::string& profile) {
  if (profile == "boot") return 0;
  if (profile == "standard") return 1;
  if (profile == "burnin") return 2;
  return -1;
}

ResumeVerdict decide(const History& h, const PolicyConfig& cfg) {
  ResumeVerdict v;
  // The screens in which each unit failed (drills aside), forgetting what an administrator cleared.
  std::map<std::string, std::vector<size_t>, decltype(&unit_less)> failed_in(&unit_less);
  size_t drills = 0;
  for (size_t i = 0; i < h.records.size(); ++i) {
    const Record& r = h.records[i];
    if (!r.forget.empty()) {
      if (r.forget == "all")
        failed_in.clear();
      else
        failed_in.erase(r.forget);
      continue;
    }
    if (r.drill) {
      drills += r.exit == EXIT_FAIL;
      continue;
    }
    std::set<std::string> units;
    for (const Failure& f : r.failures) units.insert(f.unit);
    for (const auto& [unit, result] : r.units)
      if (result == "fail" || result == "crash") units.insert(unit);
    if (units.empty() && r.exit == EXIT_FAIL) units.insert("unit ?");  // a failure nobody placed still counts
    for (const std::string& u : units) failed_in[u].push_back(i);
  }
  const std::string needed =
      fmt::format("{} clean {} screen{}", cfg.clean_screens, cfg.min_profile, cfg.clean_screens == 1 ? "" : "s");
  if (failed_in.empty()) {
    v.decision = Decision::no_record;
    v.short_text = drills ? "only drills failed" : "no failure on record";
    v.details.push_back(h.records.empty()
                            ? fmt::format("{}: no screen on record", h.path)
                            : fmt::format("{}: {} screens on record, no failure outside drills{}", h.path,
                                          h.records.size(), drills ? fmt::format(" ({} drills failed)", drills) : ""));
    return v;
  }
  std::vector<std::string> twice;
  size_t last = 0;
  for (const auto& [unit, idx] : failed_in) {
    const Record& first = h.records[idx.front()];
    const Record& latest = h.records[idx.back()];
    std::string fams;
    for (size_t i : idx)
      for (const Failure& f : h.records[i].failures)
        if (f.unit == unit && fams.find(f.family) == std::string::npos) fams += (fams.empty() ? "" : ",") + f.family;
    v.details.push_back(fmt::format("{} failed in {} screen{} ({}first {}, last {})", unit, idx.size(),
                                    idx.size() == 1 ? "" : "s", fams.empty() ? "" : fams + "; ", first.time,
                                    latest.time));
    if (idx.size() >= 2) twice.push_back(unit);
    last = std::max(last, idx.back());
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
    if (!r.forget.empty() || r.drill || r.exit != EXIT_PASS || r.selection != "profile" ||
        profile_rank(r.profile) < min_rank)
      continue;  // not a clean screen of enough depth; an inconclusive one does not break the run of clean ones
    const bool covers = std::all_of(failed_in.begin(), failed_in.end(), [&r](const auto& kv) {
      return std::find(r.screened.begin(), r.screened.end(), kv.first) != r.screened.end();
    });
    if (covers) ++clean;
  }
  if (clean >= cfg.clean_screens) {
    v.decision = Decision::resume;
    v.short_text = fmt::format("{} clean {} screens since the failure", clean, cfg.min_profile);
    return v;
  }
  v.decision = Decision::hold;
  v.remaining = cfg.clean_screens - clean;
  v.short_text =
      fmt::format("{} clean {} screen{} to resume", v.remaining, cfg.min_profile, v.remaining == 1 ? "" : "s");
  v.details.push_back(fmt::format("{} of the {} needed since the last failure", clean, needed));
  return v;
}

std::vector<UnitSummary> summarize(const History& h) {
  struct State {
    UnitSummary s;
    bool failed_before = false, passed_since = false;
  };
  std::map<std::string, State, decltype(&unit_less)> units(&unit_less);
  for (const Record& r : h.records) {
    if (!r.forget.empty() || r.drill) continue;
    std::set<std::string> seen(r.screened.begin(), r.screened.end());
    for (const Failure& f : r.failures) seen.insert(f.unit);
    for (const std::string& u : seen) {
      State& st = units[u];
      st.s.unit = u;
      ++st.s.screens;
      if (r.failed(u)) {
        ++st.s.failures;
        if (st.s.first_failure.empty()) st.s.first_failure = r.time;
        st.s.last_failure = r.time;
        if (st.failed_before && st.passed_since) ++st.s.flaps;
        st.failed_before = true;
        st.passed_since = false;
        for (const Failure& f : r.failures) {
          if (f.unit != u) continue;
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
  for (auto& [u, st] : units) out.push_back(st.s);
  return out;
}

}  // namespace sdc::history
