#include "src/core/history.h"

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
#include <tuple>

#include "src/util/atomic_file.h"
#include "src/util/int_list.h"
#include "src/util/iso_time.h"
#include "src/util/strict_json.h"
#include "src/core/unit_name.h"

namespace sdc::history {
namespace {

using ojson = nlohmann::ordered_json;

std::string cpu_label(int cpu) { return unit_text(UnitName::of_cpu(cpu)); }
std::string gpu_label(int index) { return unit_text(UnitName::of_gpu(index)); }

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
    j[kind] = format_cpu_list(ids);
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
  for (const auto& [key, out, len] :
       {std::tuple{"run", &rec.run_id, size_t{32}}, std::tuple{"report_xxh3_128", &rec.report_digest, size_t{32}}}) {
    if (!j.contains(key)) continue;
    if (auto e = str(key, *out, false); !e.empty()) return e;
    if (out->size() != len || out->find_first_not_of("0123456789abcdef") != std::string::npos)
      return fmt::format("'{}' is not {} lowercase hex digits", key, len);
  }
  if (j.contains("weakened")) {
    if (!j["weakened"].is_array()) return "'weakened' is not an array";
    for (const auto& w : j["weakened"]) {
      if (!w.is_string() || w.get<std::string>().empty()) return "'weakened' holds something other than a name";
      rec.weakened.push_back(w.get<std::string>());
    }
    if (rec.weakened.empty()) return "'weakened' is empty";
  }
  if (!j.contains("exit") || !j["exit"].is_number_integer()) return "no integer 'exit'";
  const int64_t exit = j["exit"].get<int64_t>();
  if (exit < 0 || exit > 255) return fmt::format("'exit' {} is not an exit status", exit);
  rec.exit = static_cast<int>(exit);
  if (!j.contains("screened") || !j["screened"].is_object()) return "no object 'screened'";
  for (const auto& [kind, list] : j["screened"].items()) {
    if ((kind != "cpu" && kind != "gpu") || !list.is_string()) return fmt::format("'screened' has a bad '{}'", kind);
    std::vector<int> ids;
    if (const std::string e = parse_cpu_list(list.get<std::string>(), ids); !e.empty())
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
    x.drill = rec.drill;  // lines before per-failure drills: the line's
    if (f.contains("drill")) {
      if (!f["drill"].is_boolean()) return "a failure's 'drill' is not a boolean";
      x.drill = f["drill"].get<bool>();
      if (x.drill && !rec.drill) return "a failure is a drill in a screen that injected nothing";
    }
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
    for (const auto& [key, out] : {std::pair{"package", &x.package}, std::pair{"core", &x.core}}) {
      if (!f.contains(key)) continue;
      if (!f[key].is_number_integer()) return fmt::format("a failure's '{}' is not an integer", key);
      *out = f[key].get<int>();
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
  if (j.contains("microcode") && !j["microcode"].is_null())
    if (auto e = str("microcode", rec.microcode, false); !e.empty()) return e;
  if (auto e = str("report", rec.report, false); !e.empty()) return e;
  if (j.contains("gpus")) {
    if (!j["gpus"].is_object()) return "'gpus' is not an object";
    for (const auto& [label, g] : j["gpus"].items()) {
      if (label.rfind("gpu ", 0) != 0) return fmt::format("'gpus' names '{}', not a GPU", label);
      if (!g.is_object() || !g.contains("uuid") || !g["uuid"].is_string() || g["uuid"].get<std::string>().empty())
        return fmt::format("'gpus.{}' has no string 'uuid'", label);
      GpuId id;
      id.uuid = g["uuid"].get<std::string>();
      for (const auto& [key, out] : {std::pair{"serial", &id.serial}, std::pair{"pci", &id.pci}}) {
        if (!g.contains(key) || g[key].is_null()) continue;
        if (!g[key].is_string()) return fmt::format("'gpus.{}.{}' is not a string", label, key);
        *out = g[key].get<std::string>();
      }
      rec.gpus[label] = id;
    }
  }
  return "";
}

}  // namespace

Record record_of(const RunResult& r, const std::string& host, bool full_profile) {
  Record rec;
  rec.unix = r.end_unix > 0 ? r.end_unix : static_cast<double>(std::time(nullptr));
  rec.time = iso_time(rec.unix);
  rec.host = host;
  rec.profile = r.profile;
  rec.selection = full_profile ? "profile" : "custom";
  rec.drill = !r.injections.empty();
  for (const Weakening& w : r.weakened_by) rec.weakened.push_back(w.name);
  rec.exit = r.exit_code();
  rec.verdict = r.exit_word();
  rec.microcode = r.host.identity.cpu.microcode;
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
    const bool hung = std::any_of(r.units.begin(), r.units.end(), [d](const UnitResult& u) {
      return u.is_sm() && u.hung && u.device == static_cast<int>(d);
    });
    if (!r.devices[d].uuid.empty()) rec.gpus[label] = GpuId{r.devices[d].uuid, "", r.devices[d].pci_bus_id};
    if (crash)
      rec.units[label] = "crash";
    else if (fail)
      rec.units[label] = "fail";
    else if (hung)
      rec.units[label] = "hung";
    else if (error)
      rec.units[label] = "error";
  }
  // Whether an --inject drill made this failure: one aimed at the case on that GPU (device), or on that CPU
  // (the unit it named or fired on; a drill on no unit in particular, such as an input fault every CPU reads,
  // on any CPU; cpu -2: a failure nobody placed, any CPU drill of the case).
  const auto drill_on = [&r](const std::string& case_id, int device, int cpu) {
    return std::any_of(r.injections.begin(), r.injections.end(), [&](const Injection& i) {
      if (i.case_id != case_id) return false;
      if (device >= 0) return i.device == device;
      if (i.device >= 0) return false;
      return cpu == -2 || i.unit == cpu || i.fired_unit == cpu || (i.unit < 0 && i.fired_unit < 0);
    });
  };
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
    Failure f{"", t.id, t.family, verdict_name(t.verdict), {}, {}, "", -1, -1, false};
    if (t.device_index >= 0 && static_cast<size_t>(t.device_index) < r.devices.size()) {
      const DeviceInfo& dev = r.devices[static_cast<size_t>(t.device_index)];
      f.unit = gpu_label(dev.index);
      f.drill = drill_on(t.id, dev.index, -1);
      if (!dev.uuid.empty()) rec.gpus[f.unit] = GpuId{dev.uuid, "", dev.pci_bus_id};
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
      f.drill = drill_on(t.id, -1, -2);
      rec.failures.push_back(f);
      continue;
    }
    for (int c : cpus) {
      f.unit = cpu_label(c);
      f.drill = drill_on(t.id, -1, c);
      f.package = f.core = -1;
      for (const UnitResult& u : r.units)
        if (!u.is_sm() && u.cpu.cpu == c) {
          f.package = u.cpu.package;
          f.core = u.cpu.core;
        }
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
  if (!rec.run_id.empty()) j["run"] = rec.run_id;
  if (!rec.report_digest.empty()) j["report_xxh3_128"] = rec.report_digest;
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
    ojson jf = {{"unit", f.unit}, {"case", f.case_id}, {"family", f.family}, {"result", f.result}, {"drill", f.drill}};
    if (!f.sms.empty()) jf["sms"] = f.sms;
    if (!f.signatures.empty()) jf["signatures"] = f.signatures;
    if (!f.classification.empty()) jf["class"] = f.classification;
    if (f.package >= 0) jf["package"] = f.package;
    if (f.core >= 0) jf["core"] = f.core;
    j["failures"].push_back(jf);
  }
  if (!rec.microcode.empty()) j["microcode"] = rec.microcode;
  if (!rec.report.empty()) j["report"] = rec.report;
  if (!rec.weakened.empty()) j["weakened"] = rec.weakened;
  if (!rec.gpus.empty()) {
    j["gpus"] = ojson::object();
    for (const auto& [label, g] : rec.gpus) {
      ojson jg = {{"uuid", g.uuid}, {"serial", g.serial.empty() ? ojson(nullptr) : ojson(g.serial)}};
      if (!g.pci.empty()) jg["pci"] = g.pci;
      j["gpus"][label] = jg;
    }
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
  // Drill (SDCSCREEN_DRILL_HISTORY_FULL=1): every write of the line fails as on a full disk.
  const char* full = std::getenv("SDCSCREEN_DRILL_HISTORY_FULL");
  const bool disk_full = full && std::strcmp(full, "1") == 0;
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = disk_full ? (errno = ENOSPC, -1) : write(fd, line.data() + done, line.size() - done);
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
  read_pending(dir, h);
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
  std::set<std::string> runs;
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
    if (!rec.run_id.empty() && !runs.insert(rec.run_id).second) {  // the same screen again: counted once
      ++h.duplicates;
      continue;
    }
    h.records.push_back(std::move(rec));
  }
  return "";
}

}  // namespace sdc::history
