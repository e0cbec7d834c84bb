// Pattern data: the battery (cases per profile), the golden digests and the manifest that holds a hash
// of every file. Everything is checked when loaded; any problem is a PatternError whose message is one
// line naming the file and what is wrong (exit 78).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/core/family.h"
#include "src/core/recording.h"

namespace sdc {

constexpr int BATTERY_VERSION = 1;
constexpr int GOLDEN_VERSION = 1;
constexpr int MANIFEST_VERSION = 1;

struct PatternError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Profile {
  std::string name;
  std::string description;
  double time_budget_s = 0;
  bool fill = false;  // repeat the cases until the budget ends (standard, burnin); else run them once
};

struct Battery {
  std::vector<Profile> profiles;
  std::vector<Case> cases;
  const Profile* find_profile(const std::string& name) const;
  const Case* find_case(const std::string& id) const;
};

struct GoldenCase {
  std::string fingerprint;  // of the case definition the digests were computed for
  std::vector<uint64_t> tile_digests;
  uint64_t output_digest = 0;
};

struct PatternSet {
  std::string dir;
  Battery battery;
  std::map<std::string, GoldenCase> golden;  // by case id (exact and exact-integer cases)
  RecordedGoldens recorded;                  // accepted recordings (recorded cases), by full key
  // XXH3-128 (xxh3_128_hex) of the battery.json and manifest.json bytes that were loaded: the manifest lists
  // every other file's hash, so these two name the whole pattern data.
  std::string battery_xxh3_128, manifest_xxh3_128;
};

// The pattern data a binary was built with (its battery's and manifest's digests, compiled in), against which
// a screen's pattern data is checked: anything else (an edited battery with its manifest rewritten to match,
// another version) is refused unless the user accepts it explicitly.
struct PatternDigests {
  std::string battery_xxh3_128, manifest_xxh3_128;
};
// "" when ps's data is the built one; else one line naming the first file that differs and both digests.
std::string pattern_digest_mismatch(const PatternSet& ps, const PatternDigests& built);

// A hash of everything that determines a case's output (family, mode, distribution, seed, shape).
std::string case_fingerprint(const Case& c);
const char* distribution_name(Distribution d);
bool parse_distribution(const std::string& s, Distribution& d);

struct ManifestEntry {
  std::string xxh3_128;
  uint64_t bytes = 0;
};

// Parsers of one file's text; `file` names it in errors. They check structure and versions.
Battery parse_battery(const std::string& file, const std::string& text);
std::map<std::string, GoldenCase> parse_golden(const std::string& file, const std::string& text);
std::map<std::string, ManifestEntry> parse_manifest(const std::string& file, const std::string& text);

// A case of a family that shares its twin's goldens (Family::goldens_of): the twin family's case of the same
// definition (mode, distribution, seed, shape), whose golden is this case's; null for any other case, or
// when the battery has no such twin case (then the case has no golden). golden/<twin>.json holds it once.
const Case* golden_twin_case(const Battery& battery, const Case& c);

// Reads and checks manifest, battery and goldens. require_golden=false is for `golden`, which only
// needs the battery (it is about to write the goldens).
PatternSet load_patterns(const std::string& dir, bool require_golden = true);
Battery load_battery_file(const std::string& path);

// Writes golden/<family>.json for every family in `golden` and a new manifest covering battery.json and
// those files, each atomically. The old manifest's recordings/ entries are carried over unchanged (they
// are not rehashed: a modified recording must still fail its check).
void write_goldens(const std::string& dir, const Battery& battery, const std::map<std::string, GoldenCase>& golden);

std::string hex64(uint64_t v);
bool parse_hex64(const std::string& s, uint64_t& v);

// snake_case words joined by dots: [a-z0-9_]+(\.[a-z0-9_]+)*
bool valid_case_id(const std::string& id);
// The manifest's content hash of a file (XXH3-128, high then low 64 bits in hex).
std::string xxh3_128_hex(const std::string& bytes);
// Writes manifest.json atomically with exactly these entries (recordings/ reuses it).
void write_manifest(const std::string& dir, const std::map<std::string, ManifestEntry>& files);

}  // namespace sdc
