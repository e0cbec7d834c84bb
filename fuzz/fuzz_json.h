// Helpers of the three pattern-file harnesses (battery, golden, manifest): the filter of inputs that hit
// known bugs (see fuzz_common.h) and the check of the header of an accepted file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.h"

namespace sdc_fuzz {

// Deepest nesting of [ and { outside strings (the text need not be valid JSON).
inline size_t json_depth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// True when `text` would only reproduce a known, reported bug of the pattern parsers (and
// SDC_FUZZ_SKIP_KNOWN=1). Each clause names the bug; remove it once the bug is fixed.
inline bool json_known_bug(const std::string& text) {
  if (!skip_known()) return false;
  using json = nlohmann::json;
  // Known bug (deep nesting): member<json> copies sub-trees recursively; a few thousand levels of [ or {
  // overflow the stack (about 7000 under ASan, about 300000 in a release build).
  if (json_depth(text) > 1000) return true;
  json j;
  try {
    j = json::parse(text);
  } catch (const json::out_of_range&) {
    // Known bug (number overflow): json::parse throws out_of_range.406 for a number beyond double's
    // range (1e400); parse_json catches only parse_error, so it escapes as a non-PatternError.
    return true;
  } catch (const json::exception&) {
    return false;  // a parse_error: the parser turns it into a PatternError
  }
  // Walk the tree without recursion.
  std::vector<const json*> todo{&j};
  while (!todo.empty()) {
    const json* v = todo.back();
    todo.pop_back();
    if (v->is_array()) {
      for (const json& e : *v) todo.push_back(&e);
    } else if (v->is_object()) {
      for (auto it = v->begin(); it != v->end(); ++it) {
        const json& e = it.value();
        todo.push_back(&e);
        // Known bug (integer members): member<int> / member<uint64_t> convert any JSON number with a
        // C++ cast: 1e300 is undefined behaviour (UBSan float-cast-overflow), 4294967297 wraps to 1,
        // -1 to 2^64-1, 1.5 truncates to 1. Integer members: version, seed, bytes.
        if ((it.key() == "version" || it.key() == "seed" || it.key() == "bytes") && e.is_number()) {
          if (!e.is_number_integer()) return true;
          if (it.key() == "version" && (e.is_number_unsigned() ? e.get<uint64_t>() > INT32_MAX
                                                               : e.get<int64_t>() < INT32_MIN))
            return true;
          if (it.key() != "version" && !e.is_number_unsigned()) return true;
        }
      }
    }
  }
  return false;
}

// An accepted file's header must be exactly what the parser asked for.
inline void check_accepted_header(const std::string& text, const char* format, int version) {
  const nlohmann::json j = nlohmann::json::parse(text);
  if (!j.is_object() || j.value("format", "") != format) fuzz_fail(std::string("accepted a file whose format is not ") + format);
  const auto& v = j.at("version");
  if (!v.is_number_integer() || v.get<int64_t>() != version)
    fuzz_fail("accepted version " + v.dump() + " as version " + std::to_string(version));
}

}  // namespace sdc_fuzz
