// The GPU tests' plan (tests/gpu/gpu_plan.h) walked on the CPU over the real battery: every case a GPU would
// run is described (no shape key assumed, every golden present and of the right size), so a case the GPU tests
// cannot handle fails here rather than on the first GPU; and the plan refuses a battery it could not run.
#include <fcntl.h>
#include <unistd.h>

#include "tests/unit/catch.h"
#include "tests/gpu/gpu_plan.h"

using namespace sdc;

namespace {

const PatternSet& source_patterns() {
  static const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  return ps;
}

}  // namespace

TEST_CASE("gpu plan: every battery case with a device side is described", "[gpu-plan]") {
  const PatternSet& ps = source_patterns();
  std::vector<gpu_tests::CasePlan> plan;
  REQUIRE_NOTHROW(plan = gpu_tests::plan(ps));

  size_t device_cases = 0;
  for (const Case& c : ps.battery.cases) device_cases += std::string(find_family(c.family)->device_side) != "none";
  CHECK(plan.size() == device_cases);

  std::set<std::string> hooked, golden_families;
  size_t lt_golden = 0, lt_repeats = 0;
  for (const gpu_tests::CasePlan& p : plan) {
    INFO(p.c->id);
    CHECK(p.tiles == find_family(p.c->family)->prepare(*p.c)->tile_count());
    CHECK(p.golden == has_cpu_golden(p.c->mode));
    if (p.golden) golden_families.insert(p.c->family);
    if (p.hooks) CHECK(hooked.insert(p.c->family).second);  // once per family
    const bool library = std::string(find_family(p.c->family)->device_side) == "library";
    if (!library) CHECK(p.lt == gpu_tests::LtCheck::none);
    if (library && p.c->mode == Mode::exact_integer) CHECK(p.lt == gpu_tests::LtCheck::golden);
    lt_golden += p.lt == gpu_tests::LtCheck::golden;
    lt_repeats += p.lt == gpu_tests::LtCheck::repeats;
  }
  CHECK(hooked == golden_families);  // the fault hooks run on every family that has a golden
  CHECK(lt_golden > 0);
  CHECK(lt_repeats > 0);

  // The case that stopped the first GPU run: recorded attention, a shape without m, n and k.
  const Case* attention = ps.battery.find_case("attention_bf16.causal_2x256x64");
  REQUIRE(attention != nullptr);
  CHECK(attention->shape.dims.count("m") == 0);
  bool planned = false;
  for (const gpu_tests::CasePlan& p : plan)
    if (p.c == attention) planned = !p.golden && p.lt == gpu_tests::LtCheck::none;
  CHECK(planned);
}

TEST_CASE("gpu plan: a case without its golden, or with too few digests, is refused by name", "[gpu-plan]") {
  const PatternSet& source = source_patterns();
  const Case* exact = nullptr;
  for (const Case& c : source.battery.cases)
    if (!exact && has_cpu_golden(c.mode) && std::string(find_family(c.family)->device_side) == "kernel") exact = &c;
  REQUIRE(exact != nullptr);

  PatternSet missing = source;
  missing.golden.erase(exact->id);
  try {
    gpu_tests::plan(missing);
    FAIL("a case without golden digests was planned");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(exact->id) != std::string::npos);
  }

  PatternSet short_golden = source;
  short_golden.golden.at(exact->id).tile_digests.pop_back();
  CHECK_THROWS_AS(gpu_tests::plan(short_golden), std::runtime_error);
}

TEST_CASE("gpu tests: a step that throws is its own failure, on one line written at once; later steps run",
          "[gpu-plan]") {
  // The log is a pipe, which stdio buffers fully: what the reading end holds while the step's FILE is still
  // open is what was flushed.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  REQUIRE(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
  std::FILE* log = fdopen(fds[1], "w");
  REQUIRE(log != nullptr);
  int failures = 0;
  std::vector<std::string> ran;
  CHECK(gpu_tests::guarded("first", failures, log, [&] { ran.push_back("first"); }));
  CHECK_FALSE(gpu_tests::guarded("gemm_bf16_exactint_cublaslt.x (cuBLASLt algorithms)", failures, log, [&] {
    ran.push_back("second");
    throw std::runtime_error("cannot load cuBLASLt: libcublasLt.so.13: not found");
  }));
  CHECK_FALSE(gpu_tests::guarded("third", failures, log, [&] {
    ran.push_back("third");
    throw 42;
  }));
  CHECK(gpu_tests::guarded("fourth", failures, log, [&] { ran.push_back("fourth"); }));
  CHECK(ran == std::vector<std::string>{"first", "second", "third", "fourth"});
  CHECK(failures == 2);
  char buf[512];
  const ssize_t n = read(fds[0], buf, sizeof buf);
  REQUIRE(n > 0);
  CHECK(std::string(buf, static_cast<size_t>(n)) ==
        "FAIL gemm_bf16_exactint_cublaslt.x (cuBLASLt algorithms): cannot load cuBLASLt: libcublasLt.so.13: not "
        "found\nFAIL third: an exception that is not a std::exception\n");
  std::fclose(log);
  close(fds[0]);
}
