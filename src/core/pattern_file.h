// What the readers of pattern files share (patterns.cpp: battery, goldens, manifest; recording.cpp:
// recordings and recorded goldens): one way to fail, one strict JSON parse, one check of a listed file
// against its manifest entry. Internal to src/core.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "src/core/patterns.h"

namespace sdc {

// Throws PatternError "<file>: <what>" on one line: names taken from JSON may hold control characters.
[[noreturn]] void bad_pattern(const std::string& file, const std::string& what);

// A pattern file's text; PatternError "<path>: <reason>" and then hint when it cannot be read.
std::string read_pattern_file(const std::string& path, const std::string& hint = "");
// The hint for a manifest.json that cannot be read.
inline constexpr const char* NOT_A_PATTERN_DIRECTORY =
    " (not a pattern directory? 'sdcscreen info' says which one is used and how it was found)";

// The file's text parsed by the strict reader (src/util/strict_json.h); PatternError when it is refused.
nlohmann::json parse_pattern_json(const std::string& file, const std::string& text);

// The text of a file the manifest lists, read and checked against its entry (size, then content hash).
std::string read_listed_file(const std::string& path, const ManifestEntry& entry);

}  // namespace sdc
