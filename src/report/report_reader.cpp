#include "src/report/report_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "src/core/device_info.h"
#include "src/core/result.h"
#include "src/core/unit_name.h"
#include "src/report/report.h"
#include "src/util/atomic_file.h"
#include "src/util/strict_json.h"

namespace sdc {
namespace {

using json = nlohmann::json;

const json& member(const json& o, const char* key, const std::string& where) {
  const auto it = o.find(key);
  if (it == o.end()) throw NotReport(fmt::format("{}'{}' is missing", where, key));
  return *it;
}

std::string string_member(const json& o, const char* key, const std::string& where) {
  const json& v = member(o, key, where);
  if (!v.is_string()) throw NotReport(fmt::format("{}'{}' is not a string", where, key));
  return v.get<std::string>();
}

const json& object_member(const json& o, const char* key, const std::string& where) {
  const json& v = member(o, key, where);
  if (!v.is_object()) throw NotReport(fmt::format("{}'{}' is not an object", where, key));
  return v;
}

const json& array_member(const json& o, const char* key, const std::string& where) {
  const json& v = member(o, key, where);
  if (!v.is_array()) throw NotReport(fmt::format("{}'{}' is not an array", where, key));
  return v;
}

// An integer that fits int64 (unsigned values above it are not one of ours).
int64_t integer_member(const json& o, const char* key, const std::string& where) {
  const json& v = member(o, key, where);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}))
    throw NotReport(fmt::format("{}'{}' is not an integer", where, key));
  return v.get<int64_t>();
}

// "an array", "null": what a document is instead of a report's object.
std::string kind_of(const json& j) {
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_number()) return "a number";
  if (j.is_boolean()) return "true or false";
  return j.type_name();
}

// A signature's unit object: a logical CPU, or an SM of a GPU; its GPU is "gpu" (schema 15), "device" before.
std::string unit_name(const json& u, const std::string& where) {
  if (!u.is_object()) throw NotReport(where + "'unit' is not an object");
  const std::string kind = string_member(u, "kind", where + "unit: ");
  if (kind == "cpu") return unit_text(UnitName::of_cpu(static_cast<int>(integer_member(u, "cpu", where + "unit: "))));
  if (kind == "sm") {  // the case names its GPU; "sm k" compares across a renumbering
    integer_member(u, u.contains("gpu") ? "gpu" : "device", where + "unit: ");
    return unit_text(UnitName{-1, -1, static_cast<int>(integer_member(u, "sm", where + "unit: "))});
  }
  if (kind == "gpu") return unit_text(UnitName::of_gpu(static_cast<int>(integer_member(u, "gpu", where + "unit: "))));
  throw NotReport(fmt::format("{}unit kind '{}' is neither cpu, sm nor gpu", where, kind));
}

TestView read_test(const json& t, size_t index, int64_t schema_version) {
  std::string where = fmt::format("tests[{}]: ", index);
  if (!t.is_object()) throw NotReport(where + "not an object");
  TestView v;
  v.id = string_member(t, "id", where);
  where = fmt::format("tests[{}] ({}): ", index, v.id);
  v.device = string_member(t, "device", where);
  v.gpu = DeviceInfo::index_of_label(v.device);
  if (v.gpu < 0 && v.device.rfind("cuda:", 0) == 0)
    throw NotReport(where + fmt::format("device '{}' is not cpu or cuda:N", v.device));
  v.result = string_member(t, "result", where);
  // Before schema_version 15 a case this backend or device cannot run was a skip that said so in its reason:
  // read as not_applicable, so that a report of either version compares with one of the other.
  if (schema_version < 15 && v.result == "skip" && t.contains("reason") && t["reason"].is_string()) {
    const std::string why = t["reason"].get<std::string>();
    if (why.rfind("not applicable", 0) == 0 || why.find("runs on GPUs only") != std::string::npos)
      v.result = "not_applicable";
  }
  for (const json& u : array_member(t, "units_failed", where)) {
    if (!u.is_number_integer() || u.get<int64_t>() < 0 || u.get<int64_t>() > INT32_MAX)
      throw NotReport(where + "'units_failed' holds something else than a unit number");
    const int n = static_cast<int>(u.get<int64_t>());
    v.units_failed.push_back(unit_text(v.gpu < 0 ? UnitName::of_cpu(n) : UnitName{-1, -1, n}));
  }
  std::sort(v.units_failed.begin(), v.units_failed.end());
  for (const json& g : array_member(t, "signatures", where)) {
    if (!g.is_object()) throw NotReport(where + "'signatures' holds a non-object");
    v.signatures[string_member(g, "signature", where + "signature: ")].push_back(
        unit_name(member(g, "unit", where + "signature: "), where + "signature: "));
  }
  if (t.contains("retest"))
    for (const json& x : array_member(t, "retest", where)) {
      if (!x.is_object()) throw NotReport(where + "'retest' holds a non-object");
      v.classes[unit_name(member(x, "unit", where + "retest: "), where + "retest: ")] =
          string_member(x, "classification", where + "retest: ");
    }
  if (t.contains("tile_digests")) {
    v.has_digests = true;
    for (const json& d : array_member(t, "tile_digests", where)) {
      const std::string s = d.is_string() ? d.get<std::string>() : "";
      uint64_t x = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x, 16);
      if (s.size() != 16 || ec != std::errc() || end != s.data() + s.size())
        throw NotReport(where + "'tile_digests' holds something else than a 16-hex-digit digest");
      v.tile_digests.push_back(x);
    }
    v.digest_iteration = integer_member(t, "digest_iteration", where);
  }
  return v;
}

}  // namespace

ReportView read_report(const std::string& file, json* document) {
  json j;
  if (const std::string err = parse_strict_json(read_file(file), j); !err.empty()) throw NotReport(err);
  if (!j.is_object()) throw NotReport(fmt::format("not a report: expected a JSON object, found {}", kind_of(j)));
  ReportView r;
  r.file = file;
  const json& version = member(j, "schema_version", "not a report: ");
  if (!version.is_number_integer() || version.get<int64_t>() < OLDEST_READABLE_SCHEMA ||
      version.get<int64_t>() > REPORT_SCHEMA_VERSION)
    throw NotReport(fmt::format("schema_version {} is not one this sdcscreen reads ({} to {})", version.dump(),
                                OLDEST_READABLE_SCHEMA, REPORT_SCHEMA_VERSION));
  r.schema_version = version.get<int64_t>();
  const std::string where = "not a report: ";
  const json& tool = object_member(j, "tool", where);
  if (string_member(tool, "name", where + "tool: ") != "sdcscreen")
    throw NotReport(where + "tool.name is not sdcscreen");
  r.tool_version = string_member(tool, "version", where + "tool: ");
  r.hostname = string_member(object_member(j, "host", where), "hostname", where + "host: ");
  r.start = string_member(object_member(j, "timing", where), "start", where + "timing: ");
  r.profile = string_member(j, "profile", where);
  const json& seed = member(j, "seed", where);
  if (!seed.is_number_unsigned()) throw NotReport(where + "'seed' is not an unsigned integer");
  r.seed = seed.get<uint64_t>();
  r.seed_text = std::to_string(r.seed);
  const json& fi = member(j, "fault_injection", where);
  if (!fi.is_boolean()) throw NotReport(where + "'fault_injection' is not true or false");
  r.fault_injection = fi.get<bool>();
  const json& exit = object_member(j, "exit", where);
  r.exit_code = integer_member(exit, "code", where + "exit: ");
  r.verdict = string_member(exit, "verdict", where + "exit: ");
  // One reading of a report: a verdict that its code contradicts would count one way in a table and another
  // in a summary (a screen writes both from one exit code).
  if (const std::string want = verdict_of_exit_code(r.exit_code); want != r.verdict)
    throw NotReport(want.empty() ? fmt::format("{}exit.code {} is not a code a screen ends with", where, r.exit_code)
                                 : fmt::format("{}exit.code {} and exit.verdict '{}' disagree (code {} is '{}')", where,
                                               r.exit_code, r.verdict, r.exit_code, want));
  // Who each GPU is: tests are matched by UUID, so a GPU CUDA renumbered between the runs is compared with
  // itself. Optional keys (older reports, a CPU run): absent means unknown, never an error.
  if (const auto d = j.find("devices"); d != j.end() && d->is_array())
    for (const json& dev : *d)
      if (dev.is_object() && dev.contains("index") && dev["index"].is_number_integer() && dev.contains("uuid") &&
          dev["uuid"].is_string() && !dev["uuid"].get<std::string>().empty() && dev.value("kind", "") != "cpu")
        r.uuid_of[fmt::format("cuda:{}", dev["index"].get<int64_t>())] = dev["uuid"].get<std::string>();
  if (const json& h = j["host"]; h.contains("identity") && h["identity"].is_object() && h["identity"].contains("cpu") &&
                                 h["identity"]["cpu"].is_object() && h["identity"]["cpu"].contains("microcode") &&
                                 h["identity"]["cpu"]["microcode"].is_string())
    r.microcode = h["identity"]["cpu"]["microcode"].get<std::string>();
  const json& tests = array_member(j, "tests", where);
  for (size_t i = 0; i < tests.size(); ++i) {
    r.tests.push_back(read_test(tests[i], i, r.schema_version));
    if (const auto u = r.uuid_of.find(r.tests.back().device); u != r.uuid_of.end()) r.tests.back().uuid = u->second;
    // A unit's crash is a test of its own (one per crashed unit) beside the case's result on the units screened
    // again without it: the same case and device twice, legitimately; any other pair is a forged or broken report.
    const TestView& t = r.tests.back();
    for (size_t k = 0; k + 1 < r.tests.size(); ++k)
      if (r.tests[k].id == t.id && r.tests[k].device == t.device && r.tests[k].result != "crash" && t.result != "crash")
        throw NotReport(fmt::format("test {} on {} is listed twice", t.id, t.device));
  }
  if (document) *document = std::move(j);
  return r;
}

}  // namespace sdc
