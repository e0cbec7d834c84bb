// Helper of the three pattern-file harnesses (battery, golden, manifest): the check of the header of an
// accepted file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz/fuzz_common.h"

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

}  // namespace sdc_fuzz
