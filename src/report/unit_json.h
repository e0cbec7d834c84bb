// A unit in the JSON report's machine form (src/core/unit_name.h): {"kind": "cpu", "cpu": 3}, {"kind": "gpu",
// "gpu": 0}, {"kind": "sm", "gpu": 0, "sm": 5}. The writer for the report and the reader for everything that
// renders a report (the HTML page), which also reads a GPU's older key "device" (schema_version 14 and before).
#pragma once

#include <nlohmann/json.hpp>

#include "src/core/unit_name.h"

namespace sdc {

inline nlohmann::json unit_json(const UnitName& u) {
  nlohmann::json j = {{"kind", u.kind()}};
  for (const auto& [key, value] : unit_keys(u)) j[key] = value;
  return j;
}

// The unit an object names; false when it names none (not an object, an unknown kind, a number missing).
inline bool unit_from_json(const nlohmann::json& j, UnitName& out) {
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) return false;
  const auto number = [&j](const char* key, int& v) {
    if (!j.contains(key) || !j[key].is_number_integer()) return false;
    const int64_t n = j[key].get<int64_t>();
    if (n < -1 || n > INT32_MAX) return false;
    v = static_cast<int>(n);
    return true;
  };
  const std::string kind = j["kind"].get<std::string>();
  UnitName u;
  const char* gpu_key = j.contains("gpu") ? "gpu" : "device";
  if (kind == "cpu" ? number("cpu", u.cpu)
      : kind == "gpu" ? number(gpu_key, u.gpu)
      : kind == "sm"  ? number(gpu_key, u.gpu) && number("sm", u.sm)
                      : false) {
    out = u;
    return true;
  }
  return false;
}

}  // namespace sdc
