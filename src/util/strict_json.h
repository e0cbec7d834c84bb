// The one JSON reader of every file sdcscreen reads (battery, goldens, manifest, recordings). It refuses
// what nlohmann::json::parse alone would silently accept: nesting deeper than a limit (the DOM and its
// destructor would recurse) and a member name twice in one object (parse keeps the last one, so a
// hand-edited file could hide a second "tile_digests" or "bytes").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sdc {

constexpr int MAX_JSON_DEPTH = 32;  // our files nest at most 5 deep; a deeper file is hostile or broken

// Parses `text` into `out`. Returns "" or one line saying what is wrong: "not valid JSON (byte N)",
// "not valid JSON (a number is out of range)", "JSON nested deeper than 32 levels", or "member 'K' appears
// twice in one object". The caller prefixes the file name.
std::string parse_strict_json(const std::string& text, nlohmann::json& out);

}  // namespace sdc
