// The HTML report's chart of a failing level-3 training-step replay (src/report/html_replay.cpp): per failing unit,
// its loss beside the reference's and its parameter distance per step, from the report's replay_metrics, captioned
// with its failure mode; a loss that is not finite or above the axis marked, and nothing drawn without a series. A
// drill's chart as Chromium lays it out is tests/e2e/test_html.py.
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <utility>

#include "src/report/html.h"
#include "tests/unit/catch.h"
#include "tests/unit/report/html_test.h"

using json = nlohmann::json;

namespace {

using sdc::test::count;

// A report of one failing level-3 replay test on CPU 1, as render_json writes its keys (others left out: the
// page renders a report with keys missing).
json replay_report(const json& metrics, const json& modes) {
  json t = {{"id", "train_step_f32.l3_tiny_20"},
            {"family", "train_step_f32"},
            {"device", "cpu"},
            {"result", "fail"},
            {"failed_tiles", 1},
            {"miscompared_elements", 40},
            {"units_failed", {1}},
            {"replay_metrics", metrics}};
  if (!modes.is_null()) t["replay_failure_modes"] = modes;
  return {{"schema_version", 19},
          {"backend", "cpu"},
          {"tests", json::array({t})},
          {"exit", {{"code", 1}, {"verdict", "fail"}}}};
}

}  // namespace

TEST_CASE("html: a failing level-3 replay draws its trajectory: loss beside the reference's, distance per step",
          "[html]") {
  // Six steps: a fault at step 2 whose loss spikes to 1e30 (above the axis, which ends at twice the reference's
  // largest: 10), is not finite at step 3 (null), then comes back; the distance 0 until the fault, then up to 0.1
  // (a power of ten: the log axis's top edge).
  const json loss = {5.0, 4.5, 1e30, nullptr, 3.1, 3.0}, ref = {5.0, 4.5, 4.0, 3.5, 3.2, 3.0};
  const json distance = {0.0, 0.0, 0.001, 0.1, 0.01, 0.01};
  json metrics = json::array();
  for (int s = 0; s < 6; ++s) {
    const json unit = {{"kind", "cpu"}, {"cpu", 1}};
    const std::string site = "step " + std::to_string(s);
    metrics.push_back({{"unit", unit},
                       {"iteration", 0},
                       {"tile", 0},
                       {"level", 3},
                       {"site", site},
                       {"metric", "loss"},
                       {"value", loss[s]},
                       {"reference", ref[s]}});
    metrics.push_back({{"unit", unit},
                       {"iteration", 0},
                       {"tile", 0},
                       {"level", 3},
                       {"site", site},
                       {"metric", "param_distance"},
                       {"value", distance[s]},
                       {"reference", 0}});
  }
  metrics.push_back({{"unit", {{"kind", "cpu"}, {"cpu", 1}}},
                     {"iteration", 0},
                     {"tile", 0},
                     {"level", 3},
                     {"site", "final"},
                     {"metric", "param_distance"},
                     {"value", 0.01},
                     {"reference", 0}});
  const json modes = {
      {{"unit", {{"kind", "cpu"}, {"cpu", 1}}}, {"iteration", 0}, {"tile", 0}, {"failure_mode", "spike_and_recover"}}};
  const std::string page = sdc::render_html(replay_report(metrics, modes));
  for (const auto& [fragment, times] : std::initializer_list<std::pair<std::string, size_t>>{
           {R"(<figure class="trajectory" data-unit="cpu 1" data-failure-mode="spike_and_recover" )"
            R"(data-steps="6">)",
            1},
           {"failure mode <b>spike_and_recover</b>", 1},
           {R"(<path class="loss-reference" data-points="6")", 1},
           {R"(<path class="loss-unit" data-points="5")", 1},  // the step without a finite loss left out
           {R"(<path class="distance" data-points="6")", 1},
           {R"(<text class="not-finite")", 1},
           {"step 3: the loss is not finite", 1},
           {R"(<text class="off-axis")", 1},
           {"step 2: the loss is 1e+30, above the axis", 1},
           {"<tr data-metric=", 13},  // the table still lists every metric
       }) {
    INFO(fragment);
    CHECK(count(page, fragment) == times);
  }
  // The loss path breaks at step 3 (a second move) and draws step 2 on the top edge (x 170, y 24); the distance's
  // zeros lie on the bottom edge (y 134) and its largest, 0.1, on the top edge (y 24), step 0 at x 408, step 5 at 688.
  const std::regex unit_path(R"re(<path class="loss-unit" data-points="5" d="M[^"]*M)re");
  CHECK(std::regex_search(page, unit_path));
  CHECK(page.find(R"(d="M408.0 134.0 L464.0 134.0 )") != std::string::npos);
  CHECK(page.find("L576.0 24.0 ") != std::string::npos);
  CHECK(page.find("L170.0 24.0 ") != std::string::npos);
  const std::string svg = R"(<svg xmlns="http://www.w3.org/2000/svg" width=")";
  const size_t at = page.find(svg, page.find(R"(<figure class="trajectory")"));
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(page.substr(at + svg.size(), 6)) <= 1240);  // inside a 1280-pixel window less its margins
  // A replay without per-step series (level 12's metrics) draws none.
  const json level12 = json::array({metrics.back()});
  CHECK(sdc::render_html(replay_report(level12, nullptr)).find("class=\"trajectory\"") == std::string::npos);
}
