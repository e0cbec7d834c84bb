#include "src/core/recording.h"

#include <fmt/format.h>

#include <filesystem>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "src/spec/digest.h"
#include "src/util/atomic_file.h"
#include "src/util/host_facts.h"
#include "src/core/pattern_file.h"
#include "src/core/patterns.h"

namespace sdc {
namespace {

using json = nlohmann::json;

constexpr size_t MAX_TEXT = 512;  // a device name, library or algorithm string is far shorter

[[noreturn]] void bad(const std::string& file, const std::string& what) { bad_pattern(file, what); }

json parse_strict(const std::string& file, const std::string& text) { return parse_pattern_json(file, text); }

// `obj` must be an object with exactly these members.
void expect_members(const std::string& file, const json& obj, const std::string& where,
                    std::initializer_list<const char*> names) {
  if (!obj.is_object()) bad(file, fmt::format("{} is not an object", where));
  for (const char* n : names)
    if (!obj.contains(n)) bad(file, fmt::format("{} lacks '{}'", where, n));
  for (const auto& [k, v] : obj.items()) {
    bool known = false;
    for (const char* n : names) known = known || k == n;
    if (!known) bad(file, fmt::format("{} has an unknown member '{}'", where, k));
  }
}

enum class Text { any, required, name, case_id, hex };

bool text_ok(const std::string& s, Text kind) {
  if (s.size() > MAX_TEXT) return false;
  for (char ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return false;
  uint64_t v;
  switch (kind) {
    case Text::any: return true;
    case Text::required: return !s.empty();
    case Text::name:  // a path component: recordings/<architecture>/<family>.json
      return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    case Text::case_id: return valid_case_id(s);
    case Text::hex: return parse_hex64(s, v);
  }
  return false;
}

const char* text_rule(Text kind) {
  switch (kind) {
    case Text::any: return "a string without control characters";
    case Text::required: return "a non-empty string without control characters";
    case Text::name: return "a snake_case name";
    case Text::case_id: return "snake_case words joined by dots";
    case Text::hex: return "16 lowercase hex digits";
  }
  return "";
}

std::string text(const std::string& file, const json& obj, const char* key, const std::string& where, Text kind) {
  const json& v = obj.at(key);  // present: expect_members ran first
  if (!v.is_string() || !text_ok(v.get<std::string>(), kind))
    bad(file, fmt::format("{}: '{}' is not {}{}", where, key, text_rule(kind),
                          kind == Text::hex ? "" : fmt::format(" of at most {} bytes", MAX_TEXT)));
  return v.get<std::string>();
}

void check_header(const std::string& file, const json& j, const char* format, int version) {
  if (!j.is_object()) bad(file, "top level is not an object");
  const auto f = j.find("format");
  if (f == j.end() || !f->is_string()) bad(file, "top level lacks a string 'format'");
  if (f->get<std::string>() != format)
    bad(file, fmt::format("format is '{}', expected '{}'", f->get<std::string>(), format));
  const auto v = j.find("version");
  if (v == j.end() || !v->is_number_integer()) bad(file, "top level lacks an integer 'version'");
  // Compared as JSON numbers: a huge or negative version is never wrapped onto the supported one.
  if (*v != json(version))
    bad(file, fmt::format("version {} is not supported (this build reads version {})", v->dump(), version));
}

// Tile digests and the output digest they must add up to.
void read_digests(const std::string& file, const json& je, const std::string& where, std::vector<uint64_t>& tiles,
                  uint64_t& out) {
  const json& jt = je.at("tile_digests");
  if (!jt.is_array() || jt.empty()) bad(file, fmt::format("{}: 'tile_digests' is not a non-empty array", where));
  tiles.clear();
  for (size_t t = 0; t < jt.size(); ++t) {
    uint64_t v = 0;
    if (!jt[t].is_string() || !parse_hex64(jt[t].get<std::string>(), v))
      bad(file, fmt::format("{}: tile digest {} is not 16 lowercase hex digits", where, t));
    tiles.push_back(v);
  }
  parse_hex64(text(file, je, "output_digest", where, Text::hex), out);  // checked by text()
  if (output_digest(tiles.data(), tiles.size()) != out)
    bad(file, fmt::format("{}: tile digests do not add up to the output digest", where));
}

void read_key_tail(const std::string& file, const json& je, const std::string& where, RecordingKey& k) {
  k.case_id = text(file, je, "case", where, Text::case_id);
  k.fingerprint = text(file, je, "fingerprint", where, Text::hex);
  k.library = text(file, je, "library", where, Text::required);
  k.algorithm = text(file, je, "algorithm", where, Text::required);
}

std::vector<std::string> hex_list(const std::vector<uint64_t>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (uint64_t x : v) out.push_back(hex64(x));
  return out;
}

// Device names and hostnames come from drivers and the system: never let an odd byte make dump() throw.
std::string dump(const json& j) { return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n"; }

json device_refs(const std::vector<DeviceRef>& refs) {
  json a = json::array();
  for (const DeviceRef& d : refs) a.push_back({{"uuid", d.uuid}, {"name", d.name}, {"hostname", d.hostname}});
  return a;
}

std::vector<DeviceRef> read_refs(const std::string& file, const json& je, const char* key, const std::string& where) {
  const json& ja = je.at(key);
  if (!ja.is_array()) bad(file, fmt::format("{}: '{}' is not an array", where, key));
  std::vector<DeviceRef> out;
  for (size_t i = 0; i < ja.size(); ++i) {
    const std::string w = fmt::format("{}: {}[{}]", where, key, i);
    expect_members(file, ja[i], w, {"uuid", "name", "hostname"});
    out.push_back({text(file, ja[i], "uuid", w, Text::required), text(file, ja[i], "name", w, Text::any),
                   text(file, ja[i], "hostname", w, Text::any)});
  }
  return out;
}

}  // namespace

std::string RecordingKey::str() const {
  return fmt::format("{} {} {} [{} | {}] fingerprint {}", architecture, family, case_id, library, algorithm,
                     fingerprint);
}

RecordedDevice recorded_device(const DeviceInfo& d, const std::string& hostname) {
  return {d.name, d.uuid, d.pci_bus_id, hostname, d.driver};
}

Recording new_recording(const RecordedDevice& device) {
  const std::pair<const std::string*, Text> fields[] = {{&device.name, Text::required},
                                                        {&device.uuid, Text::required},
                                                        {&device.pci_bus_id, Text::any},
                                                        {&device.hostname, Text::any},
                                                        {&device.driver, Text::any}};
  for (const auto& [s, kind] : fields)
    if (!text_ok(*s, kind))
      bad("recording of device " + device.uuid, fmt::format("'{}' is not {}", *s, text_rule(kind)));
  Recording r;
  r.tool = fmt::format("sdcscreen {} ({})", tool_version(), tool_git());
  r.device = device;
  return r;
}

void add_recording_entry(Recording& r, const RecordingKey& key, const std::vector<uint64_t>& tile_digests) {
  // The same checks as the parser, so that `record` can never write a file that `consensus` refuses.
  const std::string what = "recording of " + key.str();
  const std::pair<const std::string*, Text> fields[] = {
      {&key.architecture, Text::name}, {&key.family, Text::name},      {&key.case_id, Text::case_id},
      {&key.fingerprint, Text::hex},   {&key.library, Text::required}, {&key.algorithm, Text::required}};
  for (const auto& [s, kind] : fields)
    if (!text_ok(*s, kind)) bad(what, fmt::format("'{}' is not {}", *s, text_rule(kind)));
  if (tile_digests.empty()) bad(what, "no tile digests");
  for (const RecordingEntry& e : r.entries)
    if (e.key == key) bad(what, "recorded twice");
  r.entries.push_back({key, tile_digests, output_digest(tile_digests.data(), tile_digests.size())});
}

std::string render_recording(const Recording& r) {
  json entries = json::array();
  for (const RecordingEntry& e : r.entries)
    entries.push_back({{"architecture", e.key.architecture},
                       {"family", e.key.family},
                       {"case", e.key.case_id},
                       {"fingerprint", e.key.fingerprint},
                       {"library", e.key.library},
                       {"algorithm", e.key.algorithm},
                       {"tile_digests", hex_list(e.tile_digests)},
                       {"output_digest", hex64(e.output_digest)}});
  const json j = {{"format", "sdcscreen-recording"},
                  {"version", RECORDING_VERSION},
                  {"tool", r.tool},
                  {"device",
                   {{"name", r.device.name},
                    {"uuid", r.device.uuid},
                    {"pci_bus_id", r.device.pci_bus_id},
                    {"hostname", r.device.hostname},
                    {"driver", r.device.driver}}},
                  {"entries", entries}};
  return dump(j);
}

void write_recording(const std::string& path, const Recording& r) { write_file_atomic(path, render_recording(r)); }

Recording parse_recording(const std::string& file, const std::string& text_in) {
  const json j = parse_strict(file, text_in);
  check_header(file, j, "sdcscreen-recording", RECORDING_VERSION);
  expect_members(file, j, "top level", {"format", "version", "tool", "device", "entries"});
  Recording r;
  r.file = file;
  r.tool = text(file, j, "tool", "top level", Text::any);
  const json& jd = j.at("device");
  expect_members(file, jd, "device", {"name", "uuid", "pci_bus_id", "hostname", "driver"});
  r.device.name = text(file, jd, "name", "device", Text::required);
  r.device.uuid = text(file, jd, "uuid", "device", Text::required);
  r.device.pci_bus_id = text(file, jd, "pci_bus_id", "device", Text::any);
  r.device.hostname = text(file, jd, "hostname", "device", Text::any);
  r.device.driver = text(file, jd, "driver", "device", Text::any);
  const json& je = j.at("entries");
  if (!je.is_array() || je.empty()) bad(file, "'entries' is not a non-empty array");
  std::set<RecordingKey> keys;
  for (size_t i = 0; i < je.size(); ++i) {
    const std::string where = fmt::format("entries[{}]", i);
    expect_members(
        file, je[i], where,
        {"architecture", "family", "case", "fingerprint", "library", "algorithm", "tile_digests", "output_digest"});
    RecordingEntry e;
    e.key.architecture = text(file, je[i], "architecture", where, Text::name);
    e.key.family = text(file, je[i], "family", where, Text::name);
    read_key_tail(file, je[i], where, e.key);
    const std::string at = fmt::format("{} ({})", where, e.key.case_id);  // people search for the case
    if (!keys.insert(e.key).second) bad(file, fmt::format("{}: duplicate key {}", at, e.key.str()));
    read_digests(file, je[i], at, e.tile_digests, e.output_digest);
    r.entries.push_back(std::move(e));
  }
  return r;
}

Recording load_recording_file(const std::string& path) { return parse_recording(path, read_pattern_file(path)); }

std::string recorded_goldens_path(const std::string& architecture, const std::string& family) {
  return fmt::format("recordings/{}/{}.json", architecture, family);
}

RecordedGoldens parse_recorded_goldens(const std::string& file, const std::string& text_in) {
  const json j = parse_strict(file, text_in);
  check_header(file, j, "sdcscreen-recorded-goldens", RECORDED_GOLDENS_VERSION);
  expect_members(file, j, "top level", {"format", "version", "architecture", "family", "entries"});
  const std::string arch = text(file, j, "architecture", "top level", Text::name);
  const std::string family = text(file, j, "family", "top level", Text::name);
  const json& je = j.at("entries");
  if (!je.is_array()) bad(file, "'entries' is not an array");
  RecordedGoldens out;
  for (size_t i = 0; i < je.size(); ++i) {
    const std::string where = fmt::format("entries[{}]", i);
    expect_members(file, je[i], where,
                   {"case", "fingerprint", "library", "algorithm", "provisional", "voters", "dissenters", "unstable",
                    "tile_digests", "output_digest"});
    AcceptedRecording a;
    a.key.architecture = arch;
    a.key.family = family;
    read_key_tail(file, je[i], where, a.key);
    const std::string at = fmt::format("{} ({})", where, a.key.case_id);
    if (out.count(a.key)) bad(file, fmt::format("{}: duplicate key {}", at, a.key.str()));
    read_digests(file, je[i], at, a.tile_digests, a.output_digest);
    if (!je[i].at("provisional").is_boolean()) bad(file, fmt::format("{}: 'provisional' is not true or false", at));
    a.provisional = je[i].at("provisional").get<bool>();
    a.voters = read_refs(file, je[i], "voters", at);
    a.dissenters = read_refs(file, je[i], "dissenters", at);
    a.unstable = read_refs(file, je[i], "unstable", at);
    // The consensus rules hold in the file too, so that a hand edit cannot turn a minority into a golden.
    std::set<std::string> uuids;
    for (const auto* list : {&a.voters, &a.dissenters, &a.unstable})
      for (const DeviceRef& d : *list)
        if (!uuids.insert(d.uuid).second) bad(file, fmt::format("{}: device {} is listed twice", at, d.uuid));
    if (a.voters.size() <= a.dissenters.size())
      bad(file, fmt::format("{}: {} voters are not a strict majority over {} dissenters", at, a.voters.size(),
                            a.dissenters.size()));
    if (a.provisional != (a.voters.size() < 2))
      bad(file, fmt::format("{}: 'provisional' must be {} with {} voters", at, a.voters.size() < 2, a.voters.size()));
    out.emplace(a.key, std::move(a));
  }
  return out;
}

std::string render_recorded_goldens(const std::string& architecture, const std::string& family,
                                    const std::vector<AcceptedRecording>& entries) {
  std::map<RecordingKey, const AcceptedRecording*> sorted;  // stable order: diffs show what changed
  for (const AcceptedRecording& a : entries) sorted[a.key] = &a;
  json je = json::array();
  for (const auto& [key, a] : sorted)
    je.push_back({{"case", key.case_id},
                  {"fingerprint", key.fingerprint},
                  {"library", key.library},
                  {"algorithm", key.algorithm},
                  {"provisional", a->provisional},
                  {"voters", device_refs(a->voters)},
                  {"dissenters", device_refs(a->dissenters)},
                  {"unstable", device_refs(a->unstable)},
                  {"tile_digests", hex_list(a->tile_digests)},
                  {"output_digest", hex64(a->output_digest)}});
  return dump({{"format", "sdcscreen-recorded-goldens"},
               {"version", RECORDED_GOLDENS_VERSION},
               {"architecture", architecture},
               {"family", family},
               {"entries", je}});
}

namespace {

// The manifest's recordings/ entries, each checked to be recordings/<architecture>/<family>.json.
std::map<std::string, ManifestEntry> recording_entries(const std::string& manifest_path,
                                                       const std::map<std::string, ManifestEntry>& manifest) {
  std::map<std::string, ManifestEntry> out;
  for (const auto& [rel, e] : manifest) {
    if (rel.rfind("recordings/", 0) != 0) continue;
    const size_t slash = rel.find('/', 11);
    const bool ok = slash != std::string::npos && rel.size() > 5 && rel.compare(rel.size() - 5, 5, ".json") == 0 &&
                    text_ok(rel.substr(11, slash - 11), Text::name) &&
                    text_ok(rel.substr(slash + 1, rel.size() - 5 - slash - 1), Text::name);
    if (!ok) bad(manifest_path, fmt::format("'{}' is not recordings/<architecture>/<family>.json", rel));
    out[rel] = e;
  }
  return out;
}

RecordedGoldens parse_at(const std::string& path, const std::string& rel, const std::string& t) {
  RecordedGoldens g = parse_recorded_goldens(path, t);
  for (const auto& [key, a] : g)
    if (recorded_goldens_path(key.architecture, key.family) != rel)
      bad(path, fmt::format("holds {} {}, which belongs in {}", key.architecture, key.family,
                            recorded_goldens_path(key.architecture, key.family)));
  return g;
}

std::map<std::string, ManifestEntry> read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  return parse_manifest(path, read_pattern_file(path, NOT_A_PATTERN_DIRECTORY));
}

}  // namespace

RecordedGoldens load_recorded_goldens(const std::string& dir) {
  RecordedGoldens out;
  for (const auto& [rel, e] : recording_entries(dir + "/manifest.json", read_manifest(dir))) {
    const std::string path = dir + "/" + rel;
    for (auto& [key, a] : parse_at(path, rel, read_listed_file(path, e))) out.emplace(key, std::move(a));
  }
  return out;
}

const AcceptedRecording* find_recorded_golden(const RecordedGoldens& goldens, const RecordingKey& key) {
  const auto it = goldens.find(key);
  return it == goldens.end() ? nullptr : &it->second;
}

std::vector<std::string> write_recorded_goldens(const std::string& dir,
                                                const std::vector<AcceptedRecording>& accepted) {
  std::map<std::string, ManifestEntry> manifest = read_manifest(dir);
  const auto listed = recording_entries(dir + "/manifest.json", manifest);
  std::map<std::string, std::vector<const AcceptedRecording*>> by_file;
  for (const AcceptedRecording& a : accepted)
    by_file[recorded_goldens_path(a.key.architecture, a.key.family)].push_back(&a);
  // Read and check every existing file before writing anything: bad data stops the command with the
  // pattern directory unchanged.
  std::map<std::string, RecordedGoldens> merged;
  std::vector<std::string> lines;
  for (const auto& [rel, list] : by_file) {
    const std::string path = dir + "/" + rel;
    RecordedGoldens& g = merged[rel];
    if (const auto it = listed.find(rel); it != listed.end()) {
      g = parse_at(path, rel, read_listed_file(path, it->second));
    } else if (file_exists(path)) {
      lines.push_back(fmt::format("{}: not listed in manifest.json, replaced", path));
    }
    size_t added = 0, replaced = 0;
    for (const AcceptedRecording* a : list) {
      (g.count(a->key) ? replaced : added) += 1;
      g[a->key] = *a;
    }
    lines.push_back(
        fmt::format("{}: {} new, {} replaced, {} kept", path, added, replaced, g.size() - added - replaced));
  }
  for (const auto& [rel, g] : merged) {
    std::vector<AcceptedRecording> entries;
    for (const auto& [key, a] : g) entries.push_back(a);
    const std::string path = dir + "/" + rel;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) throw FileError(fmt::format("{}: cannot create its directory: {}", path, ec.message()));
    const std::string t =
        render_recorded_goldens(entries.front().key.architecture, entries.front().key.family, entries);
    write_file_atomic(path, t);
    manifest[rel] = {xxh3_128_hex(t), t.size()};
  }
  // Last: until the manifest names the new files, a crash leaves a mismatch that fails closed (78).
  write_manifest(dir, manifest);
  return lines;
}

}  // namespace sdc
