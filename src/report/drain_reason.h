// The reason a node is drained for after a failed screen, from its JSON report (drain_reason.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sdc {

// Whether a JSON report's verdict is fail (exit.code 1, exit.verdict "fail").
bool report_says_fail(const nlohmann::json& report);
// "SDC: cpu 1 softmax_f32" and the like: at most 100 characters, no quotes or control characters; "" when the
// report's verdict is not fail.
std::string drain_reason(const nlohmann::json& report);

}  // namespace sdc
