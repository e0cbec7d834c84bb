// The HTML report's smaller sections (src/report/html.h): a GPU that failed a test whose kernels span it (no SM is
// named) drawn as failed, each test's notes, a probe that did not run, the drills' units named as every output names
// them, no bit signature where flipped bits say nothing (a replay, the memory test), one iteration's axis, and the
// failing tiles of the whole test on the tile map, not only the listed ones.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/report/html.h"
#include "tests/unit/catch.h"
#include "tests/unit/report/html_test.h"

using json = nlohmann::json;

namespace {

using sdc::test::count;
using sdc::test::failing_test;
using sdc::test::skeleton;

// One GPU of 8 SMs; every SM idle, as a replay leaves them (its kernels span the GPU: no SM computed a tile).
json one_gpu_report() {
  json r = skeleton("cuda");
  r["devices"].push_back({{"index", 0}, {"kind", "emulated"}, {"name", "emulated sm_90"}, {"sm_count", 8}});
  for (int sm = 0; sm < 8; ++sm)
    r["units"].push_back(
        {{"kind", "sm"}, {"gpu", 0}, {"sm", sm}, {"tiles", 0}, {"failed_tiles", 0}, {"result", "idle"}});
  r["exit"] = {{"code", 1}, {"verdict", "fail"}};
  return r;
}

// A failing training-step replay on GPU 0: no SM in units_failed, its miscompares on the GPU (kind gpu).
json spanning_replay() {
  json t = failing_test("cuda:0", 0, 0, {{"kind", "gpu"}, {"gpu", 0}});
  t["id"] = "train_step_f32.l12_tiny";
  t["family"] = "train_step_f32";
  t["units_failed"] = json::array();
  t["miscompares"][0]["element_name"] = "replica 0: L1 layer0.attn.wo.forward mb 0 out 0 digest.lo";
  return t;
}

}  // namespace

TEST_CASE("html: a GPU that failed a test whose kernels span it is drawn failed, not untested", "[html]") {
  json r = one_gpu_report();
  r["tests"].push_back(spanning_replay());
  const std::string page = sdc::render_html(r);
  CHECK(count(page, R"(<figure class="gpu fail" data-device="cuda:0">)") == 1);
  CHECK(count(page, "<b>failed</b> in train_step_f32.l12_tiny (its kernels span the GPU: no SM is named)") == 1);
  CHECK(count(page, R"(<rect class="gpu-failed")") == 1);
  CHECK(count(page, R"(data-units="8" data-failing-units="1" data-failed-tiles="1")") == 1);
  CHECK(count(page, R"(data-class="gpu-fail")") == 1);
  CHECK(count(page, "<li>gpu 0: fail, 1 tile(s) of kernels that span the GPU failed in train_step_f32.l12_tiny</li>") ==
        1);
  // The case names its unit the way every output does: the GPU, not an SM.
  CHECK(count(page, "differing element(s) on gpu 0 (its kernels span the GPU)") == 1);
  // A failing SM is that SM's, and the GPU is not framed as a whole.
  json sm = one_gpu_report();
  sm["units"][2] = {{"kind", "sm"}, {"gpu", 0}, {"sm", 2}, {"tiles", 4}, {"failed_tiles", 1}, {"result", "fail"}};
  sm["tests"].push_back(failing_test("cuda:0", 2, 0, {{"kind", "sm"}, {"gpu", 0}, {"sm", 2}}));
  const std::string sm_page = sdc::render_html(sm);
  CHECK(count(sm_page, "gpu-failed") == 0);
  CHECK(count(sm_page, R"(<figure class="gpu" data-device="cuda:0">)") == 1);
  CHECK(count(sm_page, "differing element(s) on gpu 0 sm 2, first") == 1);
  CHECK(count(sm_page, R"(data-failing-units="1")") == 1);
}

TEST_CASE("html: each test's notes, escaped, in its failure section and the tests table", "[html]") {
  json r = skeleton("cpu");
  json t = failing_test("cpu", 1, 3, {{"kind", "cpu"}, {"cpu", 1}});
  t["id"] = "memtest_u32.boot_256m";
  t["family"] = "memtest_u32";
  t["notes"] = {"memory test slice 0: pass walking_ones read 0x00000082 for 0x00000002 <bits 0x00000080>"};
  r["tests"].push_back(t);
  json passed = failing_test("cpu", 0, 0, {{"kind", "cpu"}, {"cpu", 0}});
  passed["id"] = "softmax_f32.special_128x1000";
  passed["result"] = "pass";
  passed["notes"] = {"ran 1 of 2 planned iterations & stopped"};
  r["tests"].push_back(passed);
  const std::string page = sdc::render_html(r);
  const std::string note =
      "memory test slice 0: pass walking_ones read 0x00000082 for 0x00000002 &lt;bits 0x00000080&gt;";
  CHECK(count(page, R"(<ul class="notes"><li>)" + note + "</li></ul>") == 1);  // the failure's section
  CHECK(count(page, note) == 3);  // and its row, in the table of problems and of all tests
  CHECK(count(page, "ran 1 of 2 planned iterations &amp; stopped") == 1);
  CHECK(count(page, "<bits") == 0);
}

TEST_CASE("html: a probe that did not run says so and why; one that ran does not", "[html]") {
  json r = skeleton("cpu");
  r["throughput"]["probe"] = {{"ran", false}, {"not_run", "--no-probe: no unit was measured for slowness"}};
  const std::string page = sdc::render_html(r);
  CHECK(count(page,
              "throughput probe not run: --no-probe: no unit was measured for slowness (no unit was judged "
              "slow)") == 1);
  CHECK(count(page, R"(<section id="telemetry">)") == 1);
  r["throughput"]["probe"] = {{"ran", true}, {"not_run", nullptr}};
  CHECK(count(sdc::render_html(r), "probe not run") == 0);
  r["throughput"]["probe"] = {{"ran", false}, {"not_run", "interrupted"}};  // the page's top says the signal
  CHECK(count(sdc::render_html(r), "probe not run") == 0);
}

TEST_CASE("html: a drill fired on a unit named as every output names it", "[html]") {
  json r = skeleton("cpu");
  r["injections"].push_back(
      {{"spec", "case=a.b,element=1,bit=3"}, {"fired", true}, {"fired_unit", 5}, {"device", nullptr}});
  r["injections"].push_back({{"spec", "case=c.d,element=1,bit=3"}, {"fired", true}, {"fired_unit", 17}, {"device", 1}});
  r["injections"].push_back(
      {{"spec", "case=e.f,element=1,bit=3"}, {"fired", true}, {"fired_unit", nullptr}, {"device", 0}});
  const std::string page = sdc::render_html(r);
  CHECK(count(page, "<code>case=a.b,element=1,bit=3</code>: fired on cpu 5</li>") == 1);
  CHECK(count(page, "<code>case=c.d,element=1,bit=3</code>: fired on gpu 1 sm 17</li>") == 1);
  CHECK(count(page, "<code>case=e.f,element=1,bit=3</code>: fired</li>") == 1);
  CHECK(count(page, "unit 5") == 0);
}

TEST_CASE("html: no bit signature or histogram for a replay or the memory test", "[html]") {
  json r = skeleton("cpu");
  r["tests"].push_back(failing_test("cpu", 3, 0, {{"kind", "cpu"}, {"cpu", 3}}));
  CHECK(count(sdc::render_html(r), R"(<figure class="bits")") == 1);  // a GEMM's bits say where the fault is
  CHECK(count(sdc::render_html(r), R"(<p class="signature">)") == 1);
  for (const char* family : {"train_step_f32", "memtest_u32"}) {
    INFO(family);
    r["tests"][0]["family"] = family;
    r["tests"][0]["id"] = std::string(family) + ".x";
    const std::string page = sdc::render_html(r);
    CHECK(count(page, R"(<figure class="bits")") == 0);
    CHECK(count(page, R"(<p class="signature">)") == 0);
    CHECK(count(page, R"(<p class="no-signature">no bit signature: )") == 1);
    CHECK(count(page, R"(<figure class="tiles" )") == 1);  // the tiles and iterations stay
  }
}

TEST_CASE("html: the failures over iterations of one iteration label its axis once", "[html]") {
  json r = skeleton("cpu");
  json t = failing_test("cpu", 3, 0, {{"kind", "cpu"}, {"cpu", 3}});
  t["iterations"] = 1;
  t["miscompares"][0]["iteration"] = 0;
  t["failures_by_iteration"] = {{{"iteration", 0}, {"elements", 1}, {"tiles", 1}}};
  r["tests"].push_back(t);
  const auto x_labels = [](const std::string& page) {  // the iteration axis' labels, under the bars
    const size_t at = page.find(R"(<figure class="timeline")");
    const std::string fig = page.substr(at, page.find("</figure>", at) - at);
    return count(fig, R"(y="80" class="axis">)") + count(fig, R"(y="80" class="axis" text-anchor="end">)");
  };
  const std::string one = sdc::render_html(r);
  CHECK(x_labels(one) == 1);
  CHECK(count(one, R"(y="80" class="axis">0</text>)") == 1);
  r["tests"][0]["iterations"] = 3;
  const std::string three = sdc::render_html(r);
  CHECK(x_labels(three) == 2);
  CHECK(count(three, R"(y="80" class="axis" text-anchor="end">2</text>)") == 1);
}

TEST_CASE("html: the tile map draws every failing tile the report names, not only the listed elements'", "[html]") {
  json r = skeleton("cpu");
  json t = failing_test("cpu", 3, 17, {{"kind", "cpu"}, {"cpu", 3}});
  t["failed_tiles"] = 3;
  t["failed_tile_ids"] = {9, 17, 40};
  r["tests"].push_back(t);
  const std::string page = sdc::render_html(r);
  CHECK(count(page, R"(<figure class="tiles" data-complete="all">)") == 1);
  CHECK(count(page, "(every one, in any iteration)") == 1);
  for (const int tile : {9, 17, 40}) {
    INFO(tile);
    CHECK(count(page, fmt::format(R"(class="tile failed" data-tile="{}")", tile)) == 1);
  }
  CHECK(count(page, "<title>tile 9: 0 differing element(s) listed</title>") == 1);
  // A report without the ids (older, or tiles judged by digests alone): the listed elements' tiles, and the caption
  // says that and how many failed in all.
  r["tests"][0].erase("failed_tile_ids");
  const std::string listed = sdc::render_html(r);
  CHECK(count(listed, R"(<figure class="tiles" data-complete="listed">)") == 1);
  CHECK(count(listed, "only the 1 tile(s) of the listed elements are drawn; 3 tile failure(s) in all") == 1);
  CHECK(count(listed, R"(class="tile failed")") == 1);
}
