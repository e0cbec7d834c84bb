// `sdcscreen diff A B`: two JSON reports of `run` compared case by case (two runs of one node, or two nodes):
// which verdicts and failing units differ, which bit signatures both share or only one has, and, when both
// carry tile digests (run --digests) from the same seed, which tiles differ. Exit 0 when they agree, 1 when
// they differ, 78 when a file is not a report this version reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/core/result.h"
#include "src/report/report.h"
#include "src/report/report_reader.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"

namespace sdc {
namespace {

using json = nlohmann::json;

// Differing tiles named per case; the count covers them all.
constexpr size_t TILES_NAMED = 8;

struct SharedSignature {
  std::string signature;
  std::vector<std::string> units_a, units_b;
};

// One case (id and device) of either report and what differs in it.
struct CaseDiff {
  std::string id, device;
  const TestView* a = nullptr;
  const TestView* b = nullptr;
  std::vector<SharedSignature> shared;
  std::map<std::string, std::vector<std::string>> only_a, only_b;
  bool digests_compared = false;
  std::string digest_note;  // why the digests of this case were not compared, when both carry them
  uint64_t digest_tiles = 0, tiles_differing = 0;
  std::vector<uint64_t> tiles_named;  // the first differing tiles
  bool differs = false;
};

// digests_unlike: why the two runs' digests are not comparable ("" when they are).
CaseDiff compare_case(const TestView* a, const TestView* b, const std::string& digests_unlike) {
  CaseDiff d;
  d.a = a;
  d.b = b;
  d.id = a ? a->id : b->id;
  d.device = a ? a->device : b->device;
  // Name the GPU by ordinal and UUID; say when the two runs numbered it differently or ran another GPU there.
  if (a && b && (!a->uuid.empty() || !b->uuid.empty())) {
    if (a->uuid == b->uuid)
      d.device = a->device == b->device ? fmt::format("{} ({})", a->device, a->uuid)
                                        : fmt::format("{} in A, {} in B ({})", a->device, b->device, a->uuid);
    else
      d.device = fmt::format("{} (A {}, B {}: another GPU)", a->device, a->uuid.empty() ? "unknown" : a->uuid,
                             b->uuid.empty() ? "unknown" : b->uuid);
  } else if (const TestView* t = a ? a : b; !t->uuid.empty()) {
    d.device = fmt::format("{} ({})", t->device, t->uuid);
  }
  if (!a || !b) {
    d.differs = true;
    return d;
  }
  for (const auto& [sig, units] : a->signatures) {
    const auto it = b->signatures.find(sig);
    if (it == b->signatures.end())
      d.only_a[sig] = units;
    else
      d.shared.push_back({sig, units, it->second});
  }
  for (const auto& [sig, units] : b->signatures)
    if (!a->signatures.count(sig)) d.only_b[sig] = units;
  if (a->has_digests && b->has_digests) {
    if (!digests_unlike.empty()) {
      d.digest_note = digests_unlike;
    } else if (a->tile_digests.size() != b->tile_digests.size()) {
      // Another tile count is another shape: the case's data differ between the two pattern sets.
      d.digest_note = fmt::format("tile counts differ ({} and {})", a->tile_digests.size(), b->tile_digests.size());
    } else {
      d.digests_compared = true;
      d.digest_tiles = a->tile_digests.size();
      for (uint64_t t = 0; t < d.digest_tiles; ++t) {
        if (a->tile_digests[t] == b->tile_digests[t]) continue;
        ++d.tiles_differing;
        if (d.tiles_named.size() < TILES_NAMED) d.tiles_named.push_back(t);
      }
    }
  }
  d.differs = a->result != b->result || a->units_failed != b->units_failed || !d.only_a.empty() || !d.only_b.empty() ||
              d.tiles_differing > 0 || a->classes != b->classes;
  return d;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string units_or_none(const std::vector<std::string>& v) { return v.empty() ? "none" : join(v); }

std::string tiles_text(const CaseDiff& d) {
  std::vector<std::string> named;
  for (const uint64_t t : d.tiles_named) named.push_back(std::to_string(t));
  return fmt::format("{} of {} tiles differ (tile{} {}{})", d.tiles_differing, d.digest_tiles,
                     d.tiles_differing > 1 ? "s" : "", join(named),
                     d.tiles_differing > d.tiles_named.size() ? ", ..." : "");
}

// The one line of a differing case.
std::string case_line(const CaseDiff& d) {
  const std::string name = fmt::format("{} on {}", d.id, d.device);
  if (!d.b) return fmt::format("{}: only in A ({})", name, d.a->result);
  if (!d.a) return fmt::format("{}: only in B ({})", name, d.b->result);
  std::vector<std::string> parts;
  parts.push_back(d.a->result == d.b->result ? fmt::format("both {}", d.a->result)
                                             : fmt::format("result A {}, B {}", d.a->result, d.b->result));
  if (d.a->units_failed != d.b->units_failed)
    parts.push_back(
        fmt::format("units failed A {}, B {}", units_or_none(d.a->units_failed), units_or_none(d.b->units_failed)));
  if (d.a->classes != d.b->classes) {
    const auto classes = [](const std::map<std::string, std::string>& m) {
      std::vector<std::string> v;
      for (const auto& [unit, cls] : m) v.push_back(unit + " " + cls);
      return units_or_none(v);
    };
    parts.push_back(fmt::format("retest A {}, B {}", classes(d.a->classes), classes(d.b->classes)));
  }
  for (const auto& [sig, units] : d.only_a) parts.push_back(fmt::format("only in A: {} on {}", sig, join(units)));
  for (const auto& [sig, units] : d.only_b) parts.push_back(fmt::format("only in B: {} on {}", sig, join(units)));
  if (d.tiles_differing) {
    std::string s = "tile digests: " + tiles_text(d);
    if (d.a->digest_iteration != d.b->digest_iteration)
      s += fmt::format(" (iterations A {}, B {})", d.a->digest_iteration, d.b->digest_iteration);
    parts.push_back(s);
  }
  return name + ": " + join(parts, "; ");
}

// The report's strings with their control characters visible (say.h), for the text output: what a report holds (a
// host name, a test id) reaches the terminal as text, never as a line break or an escape sequence. visible() maps
// distinct strings to distinct strings, so the comparison reads the same on the shown reports.
void make_visible(ReportView& r) {
  for (std::string* s :
       {&r.file, &r.hostname, &r.start, &r.profile, &r.seed_text, &r.verdict, &r.tool_version, &r.microcode})
    *s = visible(*s);
  std::map<std::string, std::string> uuids;
  for (const auto& [device, uuid] : r.uuid_of) uuids[visible(device)] = visible(uuid);
  r.uuid_of = uuids;
  for (TestView& t : r.tests) {
    for (std::string* s : {&t.id, &t.device, &t.result, &t.uuid}) *s = visible(*s);
    for (std::string& u : t.units_failed) u = visible(u);
    std::map<std::string, std::vector<std::string>> signatures;
    for (auto& [sig, units] : t.signatures) {
      for (std::string& u : units) u = visible(u);
      signatures[visible(sig)] = units;
    }
    t.signatures = signatures;
    std::map<std::string, std::string> classes;
    for (const auto& [unit, c] : t.classes) classes[visible(unit)] = visible(c);
    t.classes = classes;
  }
}

std::string header_line(const char* which, const ReportView& r) {
  return fmt::format("{}: {}  host {}  start {}  profile {}  seed {}  exit {} ({}){}\n", which, r.file, r.hostname,
                     r.start, r.profile, r.seed_text, r.verdict, r.exit_code,
                     r.fault_injection ? "  FAULT INJECTION RUN" : "");
}

json report_json(const ReportView& r) {
  return {{"file", r.file},
          {"hostname", r.hostname},
          {"start", r.start},
          {"profile", r.profile},
          {"seed", r.seed},
          {"seed_text", r.seed_text},
          {"schema_version", r.schema_version},
          {"fault_injection", r.fault_injection},
          {"exit", {{"code", r.exit_code}, {"verdict", r.verdict}}}};
}

json case_json(const CaseDiff& d) {
  json j = {
      {"id", d.id},
      {"device", d.device},
      {"in", !d.b   ? "a"
             : !d.a ? "b"
                    : "both"},
      {"differs", d.differs},
      {"result", {{"a", d.a ? json(d.a->result) : json(nullptr)}, {"b", d.b ? json(d.b->result) : json(nullptr)}}},
      {"units_failed",
       {{"a", d.a ? json(d.a->units_failed) : json(nullptr)}, {"b", d.b ? json(d.b->units_failed) : json(nullptr)}}}};
  json shared = json::array();
  for (const SharedSignature& s : d.shared)
    shared.push_back({{"signature", s.signature}, {"units_a", s.units_a}, {"units_b", s.units_b}});
  auto one_side = [](const std::map<std::string, std::vector<std::string>>& m) {
    json out = json::array();
    for (const auto& [sig, units] : m) out.push_back({{"signature", sig}, {"units", units}});
    return out;
  };
  j["signatures"] = {{"shared", shared}, {"only_a", one_side(d.only_a)}, {"only_b", one_side(d.only_b)}};
  j["retest"] = {{"a", d.a ? json(d.a->classes) : json(nullptr)}, {"b", d.b ? json(d.b->classes) : json(nullptr)}};
  if (d.digests_compared)
    j["tile_digests"] = {{"tiles", d.digest_tiles},
                         {"differing", d.tiles_differing},
                         {"first_differing", d.tiles_named},
                         {"iteration_a", d.a->digest_iteration},
                         {"iteration_b", d.b->digest_iteration}};
  else
    j["tile_digests"] = d.digest_note.empty() ? json(nullptr) : json({{"not_compared", d.digest_note}});
  return j;
}

}  // namespace

int cmd_diff(const DiffArgs& args) {
  ReportView a, b;
  for (auto [file, out] : {std::pair{&args.a, &a}, std::pair{&args.b, &b}}) {
    try {
      *out = read_report(*file);
      if (args.output_format != "json") make_visible(*out);
    } catch (const NotReport& e) {
      return config_error(fmt::format("{}: {}", *file, e.what()));
    } catch (const FileError& e) {
      return config_error(e.what());
    }
  }
  // Digests are compared under one seed and profile only: another seed or another number of iterations is
  // another schedule, so a differing tile would not say which unit of either run computed it.
  std::vector<std::string> notes;
  const std::string digests_unlike = a.seed != b.seed         ? "seeds differ"
                                     : a.profile != b.profile ? "profiles differ"
                                                              : "";
  if (a.seed != b.seed)
    notes.push_back(
        fmt::format("seeds differ ({} and {}): schedules and tile digests are not comparable; verdicts are compared",
                    a.seed_text, b.seed_text));
  if (a.profile != b.profile)
    notes.push_back(fmt::format(
        "profiles differ ({} and {}): iterations, schedules and tile digests are not comparable; verdicts are "
        "compared",
        a.profile, b.profile));
  auto carries_digests = [](const ReportView& r) {
    return std::any_of(r.tests.begin(), r.tests.end(), [](const TestView& t) { return t.has_digests; });
  };
  if (carries_digests(a) != carries_digests(b))
    notes.push_back(fmt::format("only {} carries tile digests (run --digests): tiles are not compared",
                                carries_digests(a) ? "A" : "B"));
  if (a.fault_injection || b.fault_injection)
    notes.push_back(a.fault_injection && b.fault_injection
                        ? "both are fault-injection runs: their failures are injected, not hardware"
                        : fmt::format("{} is a fault-injection run: its failures are injected, not hardware",
                                      a.fault_injection ? "A" : "B"));

  std::vector<CaseDiff> cases;
  // A GPU both reports know (its UUID) is matched with itself wherever CUDA numbered it; otherwise (two
  // nodes, a replaced GPU, a CPU) by ordinal, among the tests whose GPU the other report does not know.
  auto knows = [](const ReportView& r, const std::string& uuid) {
    return std::any_of(r.uuid_of.begin(), r.uuid_of.end(), [&uuid](const auto& kv) { return kv.second == uuid; });
  };
  // A case and device listed more than once (a crashed unit's test beside the case's result, which a report of the
  // supervisor does not have): a crash meets a crash, the result a result, the n-th of mine the n-th of the other's.
  auto find = [&knows](const ReportView& other, const ReportView& mine, const TestView& t) -> const TestView* {
    const bool shared = !t.uuid.empty() && knows(other, t.uuid);
    const bool crash = t.result == "crash";
    size_t nth = 0;
    for (const TestView& x : mine.tests) {
      if (&x == &t) break;
      nth += x.id == t.id && x.device == t.device && (x.result == "crash") == crash;
    }
    for (const TestView& x : other.tests) {
      if (x.id != t.id || (x.result == "crash") != crash) continue;
      const bool same = shared ? x.uuid == t.uuid : x.device == t.device && (x.uuid.empty() || !knows(mine, x.uuid));
      if (same && nth-- == 0) return &x;
    }
    return nullptr;
  };
  for (const TestView& t : a.tests) cases.push_back(compare_case(&t, find(b, a, t), digests_unlike));
  for (const TestView& t : b.tests)
    if (!find(a, b, t)) cases.push_back(compare_case(nullptr, &t, digests_unlike));
  if (!a.microcode.empty() && !b.microcode.empty() && a.microcode != b.microcode)
    notes.push_back(fmt::format("CPU microcode differs (A {}, B {})", a.microcode, b.microcode));
  size_t differing = 0;
  for (const CaseDiff& d : cases) differing += d.differs;
  // Cases that agree with exits that do not: a run-level error or a masked drill on one side.
  const bool exits_differ = a.exit_code != b.exit_code;
  const bool agree = differing == 0 && !exits_differ;
  const std::string verdict = agree ? "agree"
                                    : fmt::format("differ ({} case{}{})", differing, differing == 1 ? "" : "s",
                                                  exits_differ && differing == 0 ? "; exit codes differ" : "");

  if (args.output_format == "json") {
    json j = {{"a", report_json(a)}, {"b", report_json(b)}, {"notes", notes}};
    j["cases"] = json::array();
    json shared = json::array();
    for (const CaseDiff& d : cases) {
      j["cases"].push_back(case_json(d));
      for (const SharedSignature& s : d.shared)
        shared.push_back({{"signature", s.signature},
                          {"id", d.id},
                          {"device", d.device},
                          {"units_a", s.units_a},
                          {"units_b", s.units_b}});
    }
    j["shared_signatures"] = shared;
    j["differing_cases"] = differing;
    j["exit_codes_differ"] = exits_differ;
    j["verdict"] = agree ? "agree" : "differ";
    say("{}\n", j.dump(2, ' ', false, json::error_handler_t::replace));
  } else {
    std::string s = header_line("A", a) + header_line("B", b);
    for (const std::string& n : notes) s += "note: " + n + "\n";
    for (const CaseDiff& d : cases)
      if (!d.digest_note.empty() && d.digest_note != digests_unlike)
        s += fmt::format("note: {} on {}: {}: tile digests not compared\n", d.id, d.device, d.digest_note);
    if (exits_differ && differing == 0)  // what differs is outside the cases
      s += fmt::format("exit codes differ: A {} ({}), B {} ({})\n", a.verdict, a.exit_code, b.verdict, b.exit_code);
    for (const CaseDiff& d : cases)
      if (d.differs) s += case_line(d) + "\n";
    std::string shared;
    for (const CaseDiff& d : cases)
      for (const SharedSignature& sg : d.shared)
        shared += fmt::format("  {} in {} on {}: A {}; B {}\n", sg.signature, d.id, d.device, join(sg.units_a),
                              join(sg.units_b));
    s += shared.empty() ? "shared signatures: none\n" : "shared signatures:\n" + shared;
    s += "diff: " + verdict + "\n";
    say("{}", s);
  }
  return agree ? EXIT_PASS : EXIT_FAIL;
}

}  // namespace sdc
