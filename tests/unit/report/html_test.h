// What the HTML report's unit tests share: counting fragments of a page, and reports built by hand.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace sdc::test {

using json = nlohmann::json;

// How many times `what` occurs in `text`, occurrences not overlapping.
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// The report's skeleton, as render_json writes it (docs/report.schema.json), with no units and no tests.
inline json skeleton(const std::string& backend) {
  return {{"schema_version", 7},
          {"tool", {{"name", "sdcscreen"}, {"version", "1.0.0"}, {"git", "abc"}}},
          {"command_line", json::array({"sdcscreen", "run"})},
          {"reproduce", "sdcscreen run --seed 1"},
          {"host", {{"hostname", "node-a"}, {"os", "Linux"}, {"kernel", "6"}, {"cpu", "cpu"}, {"cpus_online", 192}}},
          {"backend", backend},
          {"devices", json::array()},
          {"profile", "boot"},
          {"seed", 1},
          {"seed_text", "1"},
          {"time_budget_s", 45},
          {"patterns", "patterns"},
          {"fault_injection", false},
          {"timing", {{"start", "2026-01-01T00:00:00Z"}, {"end", "2026-01-01T00:00:01Z"}, {"duration_s", 1.0}}},
          {"units", json::array()},
          {"tests", json::array()},
          {"injections", json::array()},
          {"throughput", {{"floor", 0.85}, {"fail_slow", false}, {"units", json::array()}}},
          {"errors", json::array()},
          {"summary", {{"tests", 0}, {"pass", 0}, {"fail", 0}, {"error", 0}, {"skip", 0}, {"crash", 0}}},
          {"interrupted_by_signal", nullptr},
          {"exit", {{"code", 0}, {"verdict", "pass"}}}};
}

inline json failing_test(const std::string& device, int unit, int tile, json miscompare_unit) {
  json zeros = json::array();
  for (int b = 0; b < 32; ++b) zeros.push_back(0);
  json rises = zeros;
  rises[20] = 1;
  return {{"id", "gemm_f32.uniform_1024"},
          {"family", "gemm_f32"},
          {"mode", "exact"},
          {"distribution", "uniform"},
          {"device", device},
          {"result", "fail"},
          {"iterations", 2},
          {"iterations_planned", 2},
          {"tiles", 256},
          {"duration_s", 0.5},
          {"gflops", 10.0},
          {"failed_tiles", 1},
          {"miscompared_elements", 1},
          {"units_failed", {unit}},
          {"notes", json::array()},
          {"time_to_fail_s", 0.1},
          {"judged_by", "exact"},
          {"library", nullptr},
          {"algorithm", nullptr},
          {"miscompares",
           {{{"iteration", 1},
             {"tile", tile},
             {"unit", miscompare_unit},
             {"element", 5000},
             {"element_name", "C[4][904]"},
             {"expected", "0x418e1535"},
             {"actual", "0x419e1535"},
             {"xor_mask", "0x00100000"},
             {"ulps", 1048576}}}},
          {"signatures",
           {{{"unit", miscompare_unit},
             {"signature", "gemm_f32:bits=m20:dir=0to1:ulp=2^20:cluster=single"},
             {"elements", 1},
             {"bit_flips",
              {{"sign", 0}, {"exponent", 0}, {"mantissa", 1}, {"zero_to_one", rises}, {"one_to_zero", zeros}}}}}}};
}

}  // namespace sdc::test
