// What the pattern-file harnesses share (battery, golden, manifest, recording): the parse of an input, which
// either throws a PatternError naming the file or accepts a file whose header must be the one asked for.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "fuzz/fuzz_common.h"
#include "src/core/patterns.h"

namespace sdc_fuzz {

// An accepted file's header must be exactly what the parser asked for.
inline void check_accepted_header(const std::string& text, const char* format, int version) {
  const nlohmann::json j = nlohmann::json::parse(text);
  if (!j.is_object() || j.value("format", "") != format)
    fuzz_fail(std::string("accepted a file whose format is not ") + format);
  const auto& v = j.at("version");
  if (!v.is_number_integer() || v.get<int64_t>() != version)
    fuzz_fail("accepted version " + v.dump() + " as version " + std::to_string(version));
}

// parse(file, text) on an input: what it accepted (whose header, format and version, is then checked), or
// nothing when it threw a PatternError (whose message is then checked).
template <class Parse>
auto parse_input(const char* file, const std::string& text, Parse parse, const char* format, int version)
    -> std::optional<decltype(parse(file, text))> {
  std::optional<decltype(parse(file, text))> out;
  try {
    out = parse(file, text);
  } catch (const sdc::PatternError& e) {
    check_pattern_message(file, e.what());
    return std::nullopt;
  }
  check_accepted_header(text, format, version);
  return out;
}

}  // namespace sdc_fuzz
