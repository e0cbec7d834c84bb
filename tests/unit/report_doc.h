// A JSON report document for the tests that read reports back (the report reader, fleet, unit names): the keys
// the reader requires and nothing else, a test adding what it looks at.
#pragma once

#include <nlohmann/json.hpp>

#include "src/report/report.h"

namespace sdc::test {

// Schema `version`, host n1, profile boot, seed 7, exit 0 pass, no test.
inline nlohmann::json report_document(int version = REPORT_SCHEMA_VERSION) {
  return {{"schema_version", version},
          {"tool", {{"name", "sdcscreen"}, {"version", "1"}}},
          {"host", {{"hostname", "n1"}}},
          {"timing", {{"start", "2026-11-21T10:00:00Z"}}},
          {"profile", "boot"},
          {"seed", 7u},
          {"fault_injection", false},
          {"exit", {{"code", 0}, {"verdict", "pass"}}},
          {"tests", nlohmann::json::array()}};
}

}  // namespace sdc::test
