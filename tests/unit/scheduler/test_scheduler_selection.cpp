// The selection of a run's cases (select_cases): --enable selects within the profile, --enable-any from every
// profile, --disable removes; what cannot select anything is an error that says why.
#include <map>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "src/core/scheduler.h"

using namespace sdc;

namespace {

Case make_case(const std::string& id, const std::map<std::string, int>& iterations) {
  Case c;
  c.id = id;
  c.family = id.substr(0, id.find('.'));
  c.iterations = iterations;
  return c;
}

// Three profiles (in the loader's order, by name): small cases in all, large ones only in standard and burnin.
Battery battery() {
  Battery b;
  b.profiles = {{"boot", "", 45, false}, {"burnin", "", 1800, true}, {"standard", "", 300, true}};
  b.cases = {make_case("gemm.small_a", {{"boot", 2}, {"standard", 20}, {"burnin", 200}}),
             make_case("gemm.small_b", {{"boot", 2}, {"standard", 20}, {"burnin", 200}}),
             make_case("gemm.large_a", {{"standard", 10}, {"burnin", 100}}),
             make_case("gemm.large_b", {{"standard", 3}, {"burnin", 30}}),
             make_case("softmax.small", {{"boot", 2}, {"standard", 20}, {"burnin", 200}})};
  return b;
}

std::vector<std::string> ids(const Selection& s) {
  std::vector<std::string> out;
  for (const Case* c : s.cases) out.push_back(c->id);
  return out;
}

}  // namespace

TEST_CASE("--enable selects within the profile", "[selection]") {
  const Battery b = battery();
  Selection sel;
  REQUIRE(select_cases(b, CaseChoice{"boot", {"gemm.*"}, {}, {}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.small_a", "gemm.small_b"});
  CHECK(sel.iterations == std::vector<int>{2, 2});
  REQUIRE(select_cases(b, CaseChoice{"boot", {"gemm"}, {}, {}}, sel).empty());  // a family id too
  CHECK(ids(sel) == std::vector<std::string>{"gemm.small_a", "gemm.small_b"});
  REQUIRE(select_cases(b, CaseChoice{"standard", {"gemm.*"}, {}, {}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.small_a", "gemm.small_b", "gemm.large_a", "gemm.large_b"});
  CHECK(sel.iterations == std::vector<int>{20, 20, 10, 3});
  // Without --enable and --enable-any: the profile's every case.
  REQUIRE(select_cases(b, CaseChoice{"boot", {}, {}, {}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.small_a", "gemm.small_b", "softmax.small"});
}

TEST_CASE("--enable of cases outside the profile is an error naming where they are and --enable-any",
          "[selection]") {
  const Battery b = battery();
  Selection sel;
  const std::string one = select_cases(b, CaseChoice{"boot", {"gemm.large_a"}, {}, {}}, sel);
  CHECK(one ==
        "--enable 'gemm.large_a' matches no case of profile boot, only a case of profile standard, burnin "
        "(gemm.large_a): "
        "--enable selects within --profile; --enable-any 'gemm.large_a' selects from every profile");
  const std::string two = select_cases(b, CaseChoice{"boot", {"gemm.small_a", "gemm.large*"}, {}, {}}, sel);
  CHECK(two.find("--enable 'gemm.large*' matches no case of profile boot, only 2 cases of profile standard, "
                 "burnin (gemm.large_a, ...)") == 0);
  CHECK(two.find("--enable-any 'gemm.large*'") != std::string::npos);
  // A glob that matches nothing at all says so, whichever option gave it.
  CHECK(select_cases(b, CaseChoice{"boot", {"nosuch*"}, {}, {}}, sel) ==
        "'nosuch*' matches no test id or family (see 'sdcscreen list')");
  CHECK(select_cases(b, CaseChoice{"boot", {}, {"nosuch*"}, {}}, sel) ==
        "'nosuch*' matches no test id or family (see 'sdcscreen list')");
}

TEST_CASE("--enable-any selects from every profile, with what --enable selects", "[selection]") {
  const Battery b = battery();
  Selection sel;
  REQUIRE(select_cases(b, CaseChoice{"boot", {}, {"gemm.large_a"}, {}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.large_a"});
  CHECK(sel.iterations == std::vector<int>{10});  // outside the profile: its smallest count
  REQUIRE(select_cases(b, CaseChoice{"boot", {"softmax.*"}, {"gemm.*"}, {}}, sel).empty());
  CHECK(ids(sel) ==
        std::vector<std::string>{"gemm.small_a", "gemm.small_b", "gemm.large_a", "gemm.large_b", "softmax.small"});
  CHECK(sel.iterations == std::vector<int>{2, 2, 10, 3, 2});  // the profile's count for its own cases
  REQUIRE(select_cases(b, CaseChoice{"boot", {}, {"gemm.*"}, {"gemm.large_b"}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.small_a", "gemm.small_b", "gemm.large_a"});
  // No profile (record): only what --enable-any names.
  REQUIRE(select_cases(b, CaseChoice{"", {}, {"gemm.large*"}, {}}, sel).empty());
  CHECK(ids(sel) == std::vector<std::string>{"gemm.large_a", "gemm.large_b"});
  CHECK(select_cases(b, CaseChoice{"boot", {}, {"gemm.large_a"}, {"gemm"}}, sel) ==
        "no test selected (the --disable patterns removed everything)");
}
