// The HTML report at the scale of a big node (src/report/html.h): 192 CPUs in two packages, and eight GPUs of
// 132 SMs, each unit drawn once with its class and no figure wider than the page; retests rendered when the
// report has them and no empty section when it has none; every string of the report escaped; a report with
// keys missing or of the wrong type rendered without an exception. The browser's view of real runs is
// tests/e2e/test_html.py.
#include <fmt/format.h>

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
using sdc::test::failing_test;
using sdc::test::skeleton;

// Checks how many times each fragment stands in the page: {fragment, times}; a wrong count names its fragment.
void check_counts(const std::string& page, std::initializer_list<std::pair<std::string, size_t>> expected) {
  for (const auto& [fragment, times] : expected) {
    INFO(fragment);
    CHECK(count(page, fragment) == times);
  }
}

// Every <svg width="W" height="H"> of the page: none wider than a 1280-pixel window less its margins.
void check_svg_sizes(const std::string& page, int max_height) {
  const std::regex svg(R"re(<svg xmlns="http://www.w3.org/2000/svg" width="(\d+)" height="(\d+)")re");
  size_t figures = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), svg); it != std::sregex_iterator(); ++it) {
    ++figures;
    INFO((*it)[0].str());
    CHECK(std::stoi((*it)[1].str()) <= 1240);
    CHECK(std::stoi((*it)[2].str()) <= max_height);
  }
  CHECK(figures > 0);
}

}  // namespace

TEST_CASE("html: 192 CPUs in two packages, each drawn once, grouped by package and core", "[html]") {
  json r = skeleton("cpu");
  r["devices"].push_back({{"index", 0}, {"kind", "cpu"}, {"name", "cpu"}});
  for (int c = 0; c < 192; ++c) {  // Linux numbering: cpu c and c + 96 are the two threads of one core
    const int core = c % 96, package = core / 48;
    const std::string result = c == 150 ? "fail" : c == 7 ? "hung" : c == 8 ? "crash" : c == 9 ? "idle" : "pass";
    r["units"].push_back({{"kind", "cpu"},
                          {"cpu", c},
                          {"core", core},
                          {"package", package},
                          {"tiles", result == "idle" ? 0 : 40},
                          {"failed_tiles", result == "fail" ? 1 : 0},
                          {"result", result}});
  }
  r["tests"].push_back(failing_test("cpu", 150, 17, {{"kind", "cpu"}, {"cpu", 150}}));
  r["exit"] = {{"code", 1}, {"verdict", "fail"}};
  const std::string page = sdc::render_html(r);
  for (int c = 0; c < 192; ++c) {
    INFO("cpu " << c);
    CHECK(count(page, fmt::format("data-unit=\"cpu {}\"", c)) == 1);
  }
  check_counts(page, {
                         {"<g class=\"unit ", 192},
                         {"<g class=\"unit fail\" data-unit=\"cpu 150\" data-failed-tiles=\"1\"", 1},
                         {"class=\"unit fail", 1},
                         {"<g class=\"unit hung\" data-unit=\"cpu 7\"", 1},
                         {"<g class=\"unit crash\" data-unit=\"cpu 8\"", 1},
                         {"<g class=\"unit untested\" data-unit=\"cpu 9\"", 1},
                         {"<figure class=\"package\"", 2},
                         {"package 1: 96 cpus, 48 cores", 1},
                         {"id=\"units\" data-units=\"192\" data-failing-units=\"1\" data-failed-tiles=\"1\"", 1},
                         // The failing case: its tile, bit 20, the iteration it failed in.
                         {"class=\"tile failed\" data-tile=\"17\"", 1},
                         {"data-bit=\"20\" data-flips=\"1\"", 1},
                         {"data-flips=\"0\"", 31},
                         {"class=\"iteration\" data-iteration=\"1\" data-elements=\"1\"", 1},
                     });
  // Over the output: tile 17 of a 4 x 8 grid is at row 2, column 1; without a grid, in index order.
  CHECK(count(page, "data-tile=\"17\" data-row=\"") == 1);
  r["tests"].back()["tiles"] = 32;
  r["tests"].back()["tile_grid"] = {{"rows", 4}, {"cols", 8}, {"axes", "C in 64 x 64 blocks"}};
  const std::string gridded = sdc::render_html(r);
  CHECK(count(gridded, "data-tile=\"17\" data-row=\"2\" data-col=\"1\"") == 1);
  CHECK(count(gridded, "C in 64 x 64 blocks (4 x 8)") == 1);
  check_svg_sizes(page, 400);
}

TEST_CASE("html: eight GPUs of 132 SMs, every SM once in its GPU's grid", "[html]") {
  json r = skeleton("cuda");
  for (int d = 0; d < 8; ++d) {
    r["devices"].push_back({{"index", d},
                            {"kind", "cuda"},
                            {"name", "NVIDIA H100 80GB HBM3"},
                            {"uuid", fmt::format("GPU-0000000{}-0000-0000-0000-000000000000", d)},
                            {"pci_bus_id", "00000000:1b:00.0"},
                            {"compute_capability", "9.0"},
                            {"architecture", "sm_90"},
                            {"sm_count", 132},
                            {"memory_bytes", 85899345920},
                            {"driver", "580"},
                            {"driver_cuda", "13.0"},
                            {"runtime", "13.0"},
                            {"ecc", "on"}});
    for (int sm = 0; sm < 132; ++sm) {
      if (d == 5 && sm == 131) continue;  // an SM with no unit entry: drawn untested, not left out
      const bool fail = d == 3 && sm == 17;
      r["units"].push_back({{"kind", "sm"},
                            {"gpu", d},
                            {"sm", sm},
                            {"tiles", 12},
                            {"failed_tiles", fail ? 2 : 0},
                            {"result", fail ? "fail" : "pass"}});
    }
  }
  r["tests"].push_back(failing_test("cuda:3", 17, 40, {{"kind", "sm"}, {"gpu", 3}, {"sm", 17}}));
  // GPU 6 lost its context: the GPU as a whole is marked.
  json crashed = failing_test("cuda:6", 0, 0, {{"kind", "sm"}, {"gpu", 6}, {"sm", 0}});
  crashed["result"] = "crash";
  crashed["units_failed"] = json::array();
  crashed["id"] = "attention_f32.causal_uniform_8x512x64";
  r["tests"].push_back(crashed);
  r["throughput"]["units"] = json::array();
  for (int d = 0; d < 8; ++d)
    r["throughput"]["units"].push_back(
        {{"unit", fmt::format("gpu {}", d)}, {"relative", d == 2 ? 0.5 : 1.0}, {"rounds", 7}, {"slow", d == 2}});
  const std::string page = sdc::render_html(r);
  for (int d = 0; d < 8; ++d)
    for (int sm = 0; sm < 132; ++sm) {
      INFO("gpu " << d << " sm " << sm);
      CHECK(count(page, fmt::format("data-unit=\"gpu {} sm {}\"", d, sm)) == 1);
    }
  check_counts(page, {
                         {"<g class=\"unit ", 8 * 132},
                         {"class=\"unit fail", 1},
                         {"<g class=\"unit fail\" data-unit=\"gpu 3 sm 17\" data-failed-tiles=\"2\"", 1},
                         {"<g class=\"unit untested\" data-unit=\"gpu 5 sm 131\"", 1},
                         {"<figure class=\"gpu", 8},
                         {"<figure class=\"gpu crash\" data-device=\"cuda:6\"", 1},
                         {"<figure class=\"gpu slow\" data-device=\"cuda:2\"", 1},
                         {"class=\"throughput slow\" data-unit=\"gpu 2\"", 1},
                         {"<section class=\"case\"", 2},
                     });
  check_svg_sizes(page, 400);
}

TEST_CASE("html: retests when the report has them, no section when it has none", "[html]") {
  json r = skeleton("cpu");
  r["tests"].push_back(failing_test("cpu", 3, 0, {{"kind", "cpu"}, {"cpu", 3}}));
  CHECK(count(sdc::render_html(r), "id=\"retest\"") == 0);
  r["tests"][0]["retest"] = {
      {{"unit", {{"kind", "cpu"}, {"cpu", 3}}},
       {"classification", "intermittent"},
       {"rate", 0.67},
       {"tiles", 1},
       {"same_seed", {{"runs", 3}, {"failed", 2}, {"same_bits", 2}}},
       {"fresh_seeds", {{"runs", 3}, {"failed", 0}, {"compared_with", {{"kind", "cpu"}, {"cpu", 0}}}}},
       {"input_dependent", true},
       {"siblings", {{{"unit", {{"kind", "cpu"}, {"cpu", 5}}}, {"relation", "same core"}, {"runs", 3}, {"failed", 0}}}},
       {"complete", true}}};
  const std::string page = sdc::render_html(r);
  check_counts(page, {
                         {"id=\"retest\"", 1},
                         {"data-unit=\"cpu 3\" data-classification=\"intermittent\"", 1},
                         {"2 of 3 failed, 2 with the same bits", 1},
                         {"cpu 5 (same core): 0 of 3 failed", 1},
                         {"<td>0.67</td>", 1},
                     });
}

TEST_CASE("html: every string of the report is escaped; a malformed report renders", "[html]") {
  json r = skeleton("cpu");
  r["reproduce"] = "sdcscreen run -o '<script>alert(1)</script>' \"&x\"";
  r["host"]["hostname"] = "<b>node</b>";
  r["errors"] = {"<img src=x>"};
  json t = failing_test("cpu", 0, 0, {{"kind", "cpu"}, {"cpu", 0}});
  t["id"] = "x\"><i>";
  r["tests"].push_back(t);
  const std::string page = sdc::render_html(r);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("<img") == std::string::npos);
  CHECK(page.find("<b>node") == std::string::npos);
  CHECK(page.find("<i>") == std::string::npos);
  CHECK(page.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(page.find("&#39;") != std::string::npos);
  CHECK(page.find("&quot;&amp;x&quot;") != std::string::npos);

  // Nothing at all, keys of the wrong type, units that are not objects: a page, never an exception.
  CHECK_NOTHROW(sdc::render_html(json::object()));
  CHECK_NOTHROW(sdc::render_html(json::array()));
  json bad = skeleton("cpu");
  bad["units"] = {1, "x", {{"kind", "cpu"}, {"cpu", "three"}}};
  bad["tests"] = {{{"result", "fail"}, {"miscompares", {{{"tile", -5}, {"xor_mask", 7}}}}, {"signatures", {1}}}};
  bad["exit"] = "fail";
  bad["throughput"] = {{"units", {{{"unit", 3}, {"relative", "x"}}}}};
  std::string page2;
  CHECK_NOTHROW(page2 = sdc::render_html(bad));
  CHECK(page2.find("</html>") != std::string::npos);
}

TEST_CASE("html: failures over iterations count every differing element, not the listed ones", "[html]") {
  // A persistent fault: 40 differing elements in each of two iterations, of which the report lists the first 32
  // (24 of iteration 0, 8 of iteration 1, as the screen's cap leaves them).
  json r = skeleton("cuda");
  json t = failing_test("cuda:0", 2, 3, {{"kind", "sm"}, {"device", 0}, {"sm", 2}});
  t["miscompared_elements"] = 80;
  const json listed = t["miscompares"][0];
  t["miscompares"] = json::array();
  for (int i = 0; i < 32; ++i) {
    json m = listed;
    m["iteration"] = i < 24 ? 0 : 1;
    t["miscompares"].push_back(m);
  }
  t["failures_by_iteration"] = {{{"iteration", 0}, {"elements", 40}, {"tiles", 5}},
                                {{"iteration", 1}, {"elements", 40}, {"tiles", 5}}};
  r["tests"].push_back(t);
  const std::string page = sdc::render_html(r);
  check_counts(page, {
                         {"class=\"iteration\" data-iteration=\"0\" data-elements=\"40\"", 1},
                         {"class=\"iteration\" data-iteration=\"1\" data-elements=\"40\"", 1},
                         {"<figure class=\"timeline\" data-counted=\"all\">", 1},
                     });
  // A report from before the counts (schema 14) draws the listed ones, and says that it does.
  r["tests"][0].erase("failures_by_iteration");
  const std::string old = sdc::render_html(r);
  check_counts(old, {
                        {"class=\"iteration\" data-iteration=\"0\" data-elements=\"24\"", 1},
                        {"<figure class=\"timeline\" data-counted=\"listed\">", 1},
                        {"counts only the listed ones", 1},
                    });
}

TEST_CASE("html: the throughput axis reaches the fastest unit, with units on its labels", "[html]") {
  json r = skeleton("cpu");
  const double rel[] = {1.0, 2.71, 0.4, 1.05};
  for (int i = 0; i < 4; ++i)
    r["throughput"]["units"].push_back(
        {{"unit", fmt::format("cpu {}", i)}, {"relative", rel[i]}, {"rounds", 7}, {"slow", i == 2}});
  const std::string page = sdc::render_html(r);
  const std::regex bar(
      R"re(data-unit="cpu (\d)" data-relative="([0-9.]+)" x="\d+" y="(\d+)" width="\d+" height="(\d+)")re");
  const std::regex plot(R"re(data-axis-top="([0-9.]+)" data-plot-top="(\d+)" data-plot-bottom="(\d+)")re");
  std::smatch p;
  REQUIRE(std::regex_search(page, p, plot));
  const double top = std::stod(p[1].str()), plot_h = std::stod(p[3].str()) - std::stod(p[2].str());
  CHECK(top >= 2.71);
  int bars = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), bar); it != std::sregex_iterator(); ++it, ++bars) {
    const double v = std::stod((*it)[2].str()), h = std::stod((*it)[4].str());
    INFO((*it)[0].str());
    CHECK(std::abs(h - v / top * plot_h) <= 1.0);                            // in proportion, none cut off
    CHECK(std::stoi((*it)[3].str()) >= std::stoi(p[2].str()));               // inside the plot
    CHECK(count(page, fmt::format(">cpu {}</text>", (*it)[1].str())) == 1);  // named under its bar
  }
  CHECK(bars == 4);
  check_counts(page, {
                         {">3.0x</text>", 1},
                         {">1.0x</text>", 1},
                         {"x peers' median</text>", 1},
                         {">floor 0.85x</text>", 1},
                     });
  check_svg_sizes(page, 400);
}

TEST_CASE("html: every cell carries its unit's number; the legend says what it is; the reproduce box", "[html]") {
  json r = skeleton("cpu");
  for (int c = 0; c < 4; ++c)
    r["units"].push_back({{"kind", "cpu"},
                          {"cpu", c},
                          {"core", c % 2},
                          {"package", 0},
                          {"tiles", 10},
                          {"failed_tiles", c == 3 ? 1 : 0},
                          {"result", c == 3 ? "fail" : "pass"}});
  r["reproduce"] =
      "sdcscreen run --profile boot --enable gemm_bf16_exactint.uniform_256x192x512 --seed 7 --inject "
      "case=gemm_f32.uniform_1024,element=0,bit=20";
  const std::string page = sdc::render_html(r);
  for (int c = 0; c < 4; ++c) {
    INFO("cpu " << c);
    const size_t g = page.find(fmt::format("data-unit=\"cpu {}\"", c));
    REQUIRE(g != std::string::npos);
    const std::string cell = page.substr(g, page.find("</g>", g) - g);
    CHECK(count(cell, fmt::format(R"(fill="{}">{}</text>)", c == 3 ? "#ffffff" : "#1a1a1a", c)) == 1);
  }
  CHECK(count(page, "the number in a cell: the logical CPU") == 1);
  CHECK(count(page, "<section id=\"reproduce\"><h2>Reproduce</h2>") == 1);
  CHECK(count(page,
              "<span class=\"w\"><span>gemm_bf16_exactint.uniform_256x192x512</span></span> <span "
              "class=\"w\"><span>--seed</span></span>") == 1);
  CHECK(count(page,
              "<span class=\"w\"><span>case=gemm_f32.uniform_1024,</span><wbr><span>element=0,</span><wbr><span>"
              "bit=20</span></span></pre>") == 1);
  json gpu = skeleton("cuda");
  gpu["devices"].push_back({{"index", 0}, {"kind", "cuda"}, {"name", "GPU"}, {"sm_count", 4}});
  CHECK(count(sdc::render_html(gpu), "the number in a cell: the SM of the GPU") == 1);
}

TEST_CASE("html: the bit histogram draws the signature's format: fp32, binary64's 64 bits, int32's", "[html]") {
  json r = skeleton("cpu");
  json t = failing_test("cpu", 3, 0, {{"kind", "cpu"}, {"cpu", 3}});
  r["tests"].push_back(t);
  // A report before schema 18 (no format): fp32, 32 bars.
  std::string page = sdc::render_html(r);
  check_counts(page,
               {{"class=\"bit\" data-bit=", 32}, {"data-bit=\"20\" data-flips=\"1\"", 1}, {"data-format=\"fp32\"", 1}});
  json& bf = r["tests"][0]["signatures"][0]["bit_flips"];
  json zeros = json::array();
  for (int b = 0; b < 64; ++b) zeros.push_back(0);
  json rises = zeros;
  rises[62] = 3;  // binary64's top exponent bit
  bf = {{"format", "binary64"}, {"sign", 0},           {"exponent", 3}, {"mantissa", 0},
        {"zero_to_one", rises}, {"one_to_zero", zeros}};
  page = sdc::render_html(r);
  check_counts(
      page,
      {{"class=\"bit\" data-bit=", 64}, {"data-bit=\"62\" data-flips=\"3\"", 1}, {"data-format=\"binary64\"", 1}});
  check_svg_sizes(page, 2000);
  // int32: 32 bars, one band, no floating-point fields; the miscompare table's last column is the difference.
  json z32 = json::array(), r32;
  for (int b = 0; b < 32; ++b) z32.push_back(0);
  r32 = z32;
  r32[7] = 2;
  bf = {{"format", "int32"}, {"zero_to_one", r32}, {"one_to_zero", z32}};
  r["tests"][0]["miscompares"][0]["int32"] = {{"expected", 5}, {"actual", 133}, {"difference", 128}};
  page = sdc::render_html(r);
  check_counts(page, {{"class=\"bit\" data-bit=", 32},
                      {"data-bit=\"7\" data-flips=\"2\"", 1},
                      {"data-format=\"int32\"", 1},
                      {">exponent<", 0},
                      {"<th>difference</th>", 1},
                      {"<th>ulps</th>", 0}});
}

TEST_CASE("html: a failing SM drills into the warps and lanes its miscompares name", "[html]") {
  json r = skeleton("cuda");
  r["devices"].push_back({{"index", 0}, {"kind", "cuda"}, {"name", "GPU"}, {"sm_count", 4}});
  for (int sm = 0; sm < 4; ++sm)
    r["units"].push_back({{"kind", "sm"},
                          {"gpu", 0},
                          {"sm", sm},
                          {"tiles", 3},
                          {"failed_tiles", sm == 2 ? 3 : 0},
                          {"result", sm == 2 ? "fail" : "pass"}});
  const json on_sm2 = {{"kind", "sm"}, {"gpu", 0}, {"sm", 2}};
  json t = failing_test("cuda:0", 2, 5, on_sm2);
  const json base = t["miscompares"][0];
  t["miscompares"] = json::array();
  // warp 1 lane 7 three times, warp 1 lane 9 once, warp 3 lane 7 once; one without a thread and one with a lane
  // past 31 (a corrupt report) are not counted.
  for (const auto& [warp, lane] : std::initializer_list<std::pair<int, int>>{{1, 7}, {1, 7}, {3, 7}, {1, 9}, {1, 7}}) {
    json m = base;
    m["warp"] = warp;
    m["lane"] = lane;
    t["miscompares"].push_back(m);
  }
  t["miscompares"].push_back(base);
  json bad = base;
  bad["warp"] = 0;
  bad["lane"] = 40;
  t["miscompares"].push_back(bad);
  r["tests"].push_back(t);
  const std::string page = sdc::render_html(r);
  check_counts(page, {
                         {"<details class=\"sm-warps\"", 1},
                         {"<details class=\"sm-warps\" data-device=\"cuda:0\" data-sm=\"2\" data-elements=\"5\"", 1},
                         {"<tr data-warp=", 2},
                         {"<tr data-warp=\"1\" data-elements=\"4\" data-lanes=\"7 9\">", 1},
                         {"<tr data-warp=\"3\" data-elements=\"1\" data-lanes=\"7\">", 1},
                         {"<td>7 (3), 9 (1)</td>", 1},
                         {"<title>lane 7: 3</title>", 1},
                         {"fill=\"#6a3d9a\"", 3},  // lanes 7 and 9 of warp 1, lane 7 of warp 3
                     });

  // Miscompares that name no thread (a library kernel): no drill-down.
  for (json& m : r["tests"][0]["miscompares"]) {
    m.erase("warp");
    m.erase("lane");
  }
  CHECK(count(sdc::render_html(r), "<details class=\"sm-warps\"") == 0);
}
