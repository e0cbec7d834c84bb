// Parsers for option values that CLI11 cannot check alone. Each returns "" or what is wrong.
#pragma once

#include <string>

namespace sdc::cli {

// "45s", "5m", "1h30m", "500ms", "2.5s": a positive duration with a unit on every number.
std::string parse_duration(const std::string& text, double& seconds);

}  // namespace sdc::cli
