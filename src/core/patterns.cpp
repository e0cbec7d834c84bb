#include "src/core/patterns.h"

// Inlined: the binary needs no libxxhash at run time (GPU machines and minimal images lack it).
#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>
#include <utility>

#include "src/spec/digest.h"
#include "src/util/atomic_file.h"
#include "src/util/strict_json.h"
#include "src/core/pattern_file.h"

namespace sdc {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& file, const std::string& what) { bad_pattern(file, what); }

json parse_json(const std::string& file, const std::string& text) { return parse_pattern_json(file, text); }

const json& child(const std::string& file, const json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object()) bad(file, fmt::format("{} is not an object", where));
  const auto it = obj.find(key);
  if (it == obj.end()) bad(file, fmt::format("{} lacks '{}'", where, key));
  return *it;
}

// An integer member within the range of T (never a float, never wrapped around).
template <typename T>
T integer(const std::string& file, const json& v, const std::string& what) {
  bool ok = v.is_number_integer();
  if (ok) ok = v.is_number_unsigned() ? std::in_range<T>(v.get<uint64_t>()) : std::in_range<T>(v.get<int64_t>());
  if (!ok) bad(file, fmt::format("{} is not an integer in range", what));
  return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
}

// Reads a member with the expected JSON type; any mismatch names the file and the member.
template <typename T>
T member(const std::string& file, const json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object()) bad(file, fmt::format("{} is not an object", where));
  const auto it = obj.find(key);
  if (it == obj.end()) bad(file, fmt::format("{} lacks '{}'", where, key));
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return integer<T>(file, *it, fmt::format("{}: '{}'", where, key));
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    bad(file, fmt::format("{}: '{}' has the wrong type", where, key));
  }
}

void check_header(const std::string& file, const json& j, const char* format, int version) {
  if (!j.is_object()) bad(file, "top level is not an object");
  const auto fmt_name = member<std::string>(file, j, "format", "top level");
  if (fmt_name != format) bad(file, fmt::format("format is '{}', expected '{}'", fmt_name, format));
  const auto v = member<int>(file, j, "version", "top level");
  if (v != version) bad(file, fmt::format("version {} is not supported (this build reads version {})", v, version));
}

// The member `key` of a pattern file's top level after its header (format and version): an object.
const json& top_object(const std::string& file, const json& doc, const char* format, int version, const char* key) {
  check_header(file, doc, format, version);
  const json& o = child(file, doc, key, "top level");
  if (!o.is_object()) bad(file, fmt::format("'{}' is not an object", key));
  return o;
}

Case parse_case(const std::string& file, const json& jc, size_t index) {
  const std::string where = fmt::format("cases[{}]", index);
  Case c;
  c.id = member<std::string>(file, jc, "id", where);
  if (!valid_case_id(c.id)) bad(file, fmt::format("{}: id '{}' is not snake_case words joined by dots", where, c.id));
  c.family = member<std::string>(file, jc, "family", c.id);
  const Family* fam = find_family(c.family);
  if (!fam) bad(file, fmt::format("case {}: unknown family '{}'", c.id, c.family));
  const auto mode = member<std::string>(file, jc, "mode", c.id);
  bool mode_ok = false;
  for (Mode m : fam->modes)
    if (mode == mode_name(m)) c.mode = m, mode_ok = true;
  if (!mode_ok) bad(file, fmt::format("case {}: family {} has no mode '{}'", c.id, c.family, mode));
  const auto dist = member<std::string>(file, jc, "distribution", c.id);
  if (!parse_distribution(dist, c.distribution))
    bad(file, fmt::format("case {}: unknown distribution '{}'", c.id, dist));
  c.data_seed = member<uint64_t>(file, jc, "seed", c.id);
  const auto& shape = child(file, jc, "shape", c.id);
  if (!shape.is_object()) bad(file, fmt::format("case {}: shape is not an object", c.id));
  for (const auto& [k, v] : shape.items()) {
    c.shape.dims[k] = integer<int64_t>(file, v, fmt::format("case {}: shape '{}'", c.id, k));
  }
  if (const std::string err = fam->validate(c); !err.empty()) bad(file, err);
  const auto& iters = child(file, jc, "iterations", c.id);
  if (!iters.is_object() || iters.empty())
    bad(file, fmt::format("case {}: iterations must map profiles to counts", c.id));
  for (const auto& [profile, n] : iters.items()) {
    const auto count = integer<int64_t>(file, n, fmt::format("case {}: iterations for '{}'", c.id, profile));
    if (count < 1 || count > 1000000)
      bad(file, fmt::format("case {}: iterations for '{}' must be in [1, 1000000]", c.id, profile));
    c.iterations[profile] = static_cast<int>(count);
  }
  return c;
}

}  // namespace

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

// snake_case words joined by dots: [a-z0-9_]+(\.[a-z0-9_]+)*
bool valid_case_id(const std::string& id) {
  bool word = false;
  for (char ch : id) {
    if (ch == '.') {
      if (!word) return false;
      word = false;
    } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') {
      word = true;
    } else {
      return false;
    }
  }
  return word;
}

std::string xxh3_128_hex(const std::string& bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return hex64(h.high64) + hex64(h.low64);
}

bool parse_hex64(const std::string& s, uint64_t& v) {
  if (s.size() != 16) return false;
  v = 0;
  for (char ch : s) {
    int d;
    if (ch >= '0' && ch <= '9')
      d = ch - '0';
    else if (ch >= 'a' && ch <= 'f')
      d = ch - 'a' + 10;
    else
      return false;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return true;
}

namespace {

// Every distribution by the name the pattern files and reports give it.
constexpr std::pair<Distribution, const char*> DISTRIBUTIONS[] = {
    {Distribution::uniform, "uniform"},
    {Distribution::heavy_tail, "heavy_tail"},
    {Distribution::special, "special"},
    {Distribution::mantissa_walk, "mantissa_walk"},
};

}  // namespace

const char* distribution_name(Distribution d) {
  for (const auto& [x, name] : DISTRIBUTIONS)
    if (x == d) return name;
  return "?";
}

bool parse_distribution(const std::string& s, Distribution& d) {
  for (const auto& [x, name] : DISTRIBUTIONS)
    if (s == name) return d = x, true;
  return false;
}

std::string case_fingerprint(const Case& c) {
  std::string canon =
      fmt::format("{}|{}|{}|{}", c.family, mode_name(c.mode), distribution_name(c.distribution), c.data_seed);
  for (const auto& [k, v] : c.shape.dims) canon += fmt::format("|{}={}", k, v);  // std::map: sorted keys
  return hex64(XXH3_64bits(canon.data(), canon.size()));
}

const Profile* Battery::find_profile(const std::string& name) const {
  for (const Profile& p : profiles)
    if (p.name == name) return &p;
  return nullptr;
}

const Case* Battery::find_case(const std::string& id) const {
  for (const Case& c : cases)
    if (c.id == id) return &c;
  return nullptr;
}

Battery parse_battery(const std::string& file, const std::string& text) {
  const json j = parse_json(file, text);
  check_header(file, j, "sdcscreen-battery", BATTERY_VERSION);
  Battery b;
  const auto& profiles = child(file, j, "profiles", "top level");
  if (!profiles.is_object() || profiles.empty()) bad(file, "profiles must be a non-empty object");
  for (const auto& [name, p] : profiles.items()) {
    Profile prof;
    prof.name = name;
    prof.description = member<std::string>(file, p, "description", "profile " + name);
    prof.time_budget_s = member<double>(file, p, "time_budget_s", "profile " + name);
    if (!(prof.time_budget_s > 0)) bad(file, fmt::format("profile {}: time_budget_s must be positive", name));
    if (p.is_object() && p.contains("fill")) prof.fill = member<bool>(file, p, "fill", "profile " + name);
    b.profiles.push_back(prof);
  }
  const auto& cases = child(file, j, "cases", "top level");
  if (!cases.is_array() || cases.empty()) bad(file, "cases must be a non-empty array");
  std::set<std::string> ids;
  for (size_t i = 0; i < cases.size(); ++i) {
    Case c = parse_case(file, cases[i], i);
    if (!ids.insert(c.id).second) bad(file, fmt::format("case id '{}' appears twice", c.id));
    for (const auto& [profile, n] : c.iterations)
      if (!b.find_profile(profile)) bad(file, fmt::format("case {}: unknown profile '{}'", c.id, profile));
    b.cases.push_back(std::move(c));
  }
  return b;
}

Battery load_battery_file(const std::string& path) { return parse_battery(path, read_pattern_file(path)); }

std::map<std::string, ManifestEntry> parse_manifest(const std::string& manifest_path,
                                                    const std::string& manifest_text) {
  const json manifest = parse_json(manifest_path, manifest_text);
  const json& files = top_object(manifest_path, manifest, "sdcscreen-manifest", MANIFEST_VERSION, "files");
  std::map<std::string, ManifestEntry> out;
  for (const auto& [rel, entry] : files.items()) {
    if (rel.empty() || rel.find("..") != std::string::npos || rel[0] == '/')
      bad(manifest_path, fmt::format("file name '{}' leaves the pattern directory", rel));
    ManifestEntry e;
    e.xxh3_128 = member<std::string>(manifest_path, entry, "xxh3_128", rel);
    e.bytes = member<uint64_t>(manifest_path, entry, "bytes", rel);
    out[rel] = e;
  }
  return out;
}

std::map<std::string, GoldenCase> parse_golden(const std::string& path, const std::string& text) {
  const json g = parse_json(path, text);
  const json& cases = top_object(path, g, "sdcscreen-golden", GOLDEN_VERSION, "cases");
  std::map<std::string, GoldenCase> out;
  for (const auto& [id, jc] : cases.items()) {
    GoldenCase gc;
    gc.fingerprint = member<std::string>(path, jc, "fingerprint", id);
    const auto digests = member<std::vector<std::string>>(path, jc, "tile_digests", id);
    for (size_t t = 0; t < digests.size(); ++t) {
      uint64_t v;
      if (!parse_hex64(digests[t], v)) bad(path, fmt::format("case {}: tile digest {} is not 16 hex digits", id, t));
      gc.tile_digests.push_back(v);
    }
    if (!parse_hex64(member<std::string>(path, jc, "output_digest", id), gc.output_digest))
      bad(path, fmt::format("case {}: output digest is not 16 hex digits", id));
    if (output_digest(gc.tile_digests.data(), gc.tile_digests.size()) != gc.output_digest)
      bad(path, fmt::format("case {}: tile digests do not add up to the output digest", id));
    out.emplace(id, std::move(gc));
  }
  return out;
}

const Case* golden_twin_case(const Battery& battery, const Case& c) {
  const Family* f = find_family(c.family);
  if (!f || !f->goldens_of) return nullptr;
  Case twin = c;
  twin.family = f->goldens_of;
  const std::string fingerprint = case_fingerprint(twin);
  for (const Case& t : battery.cases)
    if (t.family == twin.family && case_fingerprint(t) == fingerprint) return &t;
  return nullptr;
}

PatternSet load_patterns(const std::string& dir, bool require_golden) {
  PatternSet ps;
  ps.dir = dir;
  const std::string manifest_path = dir + "/manifest.json";
  const std::string manifest_text = read_pattern_file(manifest_path, NOT_A_PATTERN_DIRECTORY);
  std::map<std::string, std::string> content;  // verified bytes by relative path
  for (const auto& [rel, entry] : parse_manifest(manifest_path, manifest_text)) {
    content[rel] = read_listed_file(dir + "/" + rel, entry);
  }
  const auto battery_it = content.find("battery.json");
  if (battery_it == content.end()) bad(manifest_path, "does not list battery.json");
  ps.battery = parse_battery(dir + "/battery.json", battery_it->second);
  ps.battery_xxh3_128 = xxh3_128_hex(battery_it->second);
  ps.manifest_xxh3_128 = xxh3_128_hex(manifest_text);
  if (!require_golden) return ps;

  for (const auto& [rel, text] : content) {
    // Accepted recordings (recording.h) are verified above and parsed by load_recorded_goldens.
    if (rel == "battery.json" || rel.rfind("recordings/", 0) == 0) continue;
    for (auto& [id, gc] : parse_golden(dir + "/" + rel, text))
      if (!ps.golden.emplace(id, std::move(gc)).second)
        bad(dir + "/" + rel, fmt::format("case {} has two goldens", id));
  }
  ps.recorded = load_recorded_goldens(dir);
  for (const Case& c : ps.battery.cases) {
    if (!has_cpu_golden(c.mode)) continue;
    if (const Case* twin = golden_twin_case(ps.battery, c)) {
      // The twin case's golden (checked below in its own turn) is this case's, under this case's definition.
      if (ps.golden.count(c.id)) bad(dir + "/golden", fmt::format("case {} has two goldens", c.id));
      const auto t = ps.golden.find(twin->id);
      if (t != ps.golden.end() && t->second.fingerprint == case_fingerprint(*twin)) {
        GoldenCase gc = t->second;
        gc.fingerprint = case_fingerprint(c);
        ps.golden.emplace(c.id, std::move(gc));
      }
    }
    const auto it = ps.golden.find(c.id);
    if (it == ps.golden.end())
      bad(dir + "/golden", fmt::format("no golden for case {} (run 'sdcscreen golden')", c.id));
    if (it->second.fingerprint != case_fingerprint(c))
      bad(dir + "/golden",
          fmt::format("golden for case {} was computed for another definition of it (run 'sdcscreen golden')", c.id));
    const auto tiles = find_family(c.family)->prepare(c)->tile_count();
    if (it->second.tile_digests.size() != tiles)
      bad(dir + "/golden",
          fmt::format("case {}: {} tile digests, the case has {} tiles", c.id, it->second.tile_digests.size(), tiles));
  }
  return ps;
}

std::string pattern_digest_mismatch(const PatternSet& ps, const PatternDigests& built) {
  const auto differs = [&ps](const char* file, const std::string& found, const std::string& expected) {
    return fmt::format(
        "{}/{}: XXH3-128 {}, this sdcscreen was built with {}: the pattern data is not the build's (edited, or "
        "another version); --accept-patterns screens with it all the same, marked as weakened",
        ps.dir, file, found, expected);
  };
  if (ps.battery_xxh3_128 != built.battery_xxh3_128)
    return differs("battery.json", ps.battery_xxh3_128, built.battery_xxh3_128);
  if (ps.manifest_xxh3_128 != built.manifest_xxh3_128)
    return differs("manifest.json", ps.manifest_xxh3_128, built.manifest_xxh3_128);
  return "";
}

void write_goldens(const std::string& dir, const Battery& battery, const std::map<std::string, GoldenCase>& golden) {
  std::map<std::string, json> per_family;
  for (const Case& c : battery.cases) {
    const auto it = golden.find(c.id);
    if (it == golden.end() || golden_twin_case(battery, c)) continue;  // the twin's file holds it
    json jc;
    jc["fingerprint"] = it->second.fingerprint;
    jc["output_digest"] = hex64(it->second.output_digest);
    std::vector<std::string> d;
    for (uint64_t v : it->second.tile_digests) d.push_back(hex64(v));
    jc["tile_digests"] = d;
    json& f = per_family[c.family];
    if (f.is_null())
      f = {
          {"format", "sdcscreen-golden"}, {"version", GOLDEN_VERSION}, {"family", c.family}, {"cases", json::object()}};
    f["cases"][c.id] = jc;
  }
  std::map<std::string, ManifestEntry> files;
  try {
    for (const auto& [rel, e] : parse_manifest(dir + "/manifest.json", read_file(dir + "/manifest.json")))
      if (rel.rfind("recordings/", 0) == 0) files[rel] = e;
  } catch (const std::runtime_error&) {  // no usable old manifest: nothing to carry over
  }
  const std::string battery_text = read_file(dir + "/battery.json");
  files["battery.json"] = {xxh3_128_hex(battery_text), battery_text.size()};
  for (const auto& [family, j] : per_family) {
    const std::string rel = "golden/" + family + ".json";
    const std::string text = j.dump(1) + "\n";
    write_file_atomic(dir + "/" + rel, text);
    files[rel] = {xxh3_128_hex(text), text.size()};
  }
  write_manifest(dir, files);
}

void write_manifest(const std::string& dir, const std::map<std::string, ManifestEntry>& files) {
  json jf = json::object();
  for (const auto& [rel, e] : files) jf[rel] = {{"bytes", e.bytes}, {"xxh3_128", e.xxh3_128}};
  const json manifest = {{"format", "sdcscreen-manifest"}, {"version", MANIFEST_VERSION}, {"files", jf}};
  write_file_atomic(dir + "/manifest.json", manifest.dump(2) + "\n");
}

void bad_pattern(const std::string& file, const std::string& what) {
  std::string msg = fmt::format("{}: {}", file, what);
  for (char& ch : msg)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  throw PatternError(msg);
}

json parse_pattern_json(const std::string& file, const std::string& text) {
  json j;
  if (const std::string err = parse_strict_json(text, j); !err.empty()) bad_pattern(file, err);
  return j;
}

std::string read_pattern_file(const std::string& path, const std::string& hint) {
  try {
    return read_file(path);
  } catch (const FileError& e) {
    throw PatternError(e.what() + hint);
  }
}

std::string read_listed_file(const std::string& path, const ManifestEntry& entry) {
  const std::string text = read_pattern_file(path, " (listed in manifest.json)");
  if (text.size() != entry.bytes)
    bad_pattern(path, fmt::format("{} bytes, manifest.json says {} (truncated or modified)", text.size(), entry.bytes));
  if (const std::string h = xxh3_128_hex(text); h != entry.xxh3_128)
    bad_pattern(path, fmt::format("content hash {} does not match manifest.json ({})", h, entry.xxh3_128));
  return text;
}

}  // namespace sdc
