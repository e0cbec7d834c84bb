// parse_injection on arbitrary text (never throws), then check_injection of what it accepts against the
// project's battery (never crashes, never accepts an element, tensor or unit out of range).
// The battery is patterns/battery.json of the source tree (SDC_FUZZ_BATTERY_DEFAULT, set by
// fuzz/CMakeLists.txt), or the file the environment variable SDC_FUZZ_BATTERY names.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fuzz/fuzz_common.h"
#include "src/core/inject.h"
#include "src/core/patterns.h"

namespace {

struct Known {
  uint64_t output_elements;
  std::vector<sdc::TensorInfo> inputs;
};

struct Fixture {
  sdc::Battery battery;
  std::map<std::string, Known> cases;
  std::vector<int> cpus{0, 1, 2, 3, 6, 64};
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    const char* env = std::getenv("SDC_FUZZ_BATTERY");
    const std::string path = env && *env ? env : SDC_FUZZ_BATTERY_DEFAULT;
    try {
      x.battery = sdc::load_battery_file(path);
    } catch (const sdc::PatternError& e) {
      std::fprintf(stderr, "fuzz_inject: cannot load the battery: %s\n", e.what());
      std::exit(2);
    }
    for (const sdc::Case& c : x.battery.cases) {
      const auto p = sdc::find_family(c.family)->prepare(c);
      x.cases[c.id] = Known{p->output_elements(), p->inputs()};
    }
    return x;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sdc_fuzz::fuzz_fail;
  const std::string text(reinterpret_cast<const char*>(data), size);
  sdc::Injection inj;
  inj.fired = true;                                        // parse_injection must reset everything
  if (!sdc::parse_injection(text, inj).empty()) return 0;  // no try: any exception is a bug

  // Syntax accepted: what the grammar in inject.h promises.
  if (inj.spec != text) fuzz_fail("spec is not the text given");
  if (inj.case_id.empty()) fuzz_fail("accepted an empty case");
  if (inj.mask == 0) fuzz_fail("accepted a zero mask");
  if (inj.input == inj.tensor.empty()) fuzz_fail("accepted tensor= inconsistent with target=");
  if (inj.element > (UINT64_MAX >> 1)) fuzz_fail("accepted element beyond 2^63-1");
  if (inj.unit < -1 || inj.unit > (1 << 20)) fuzz_fail("accepted unit " + std::to_string(inj.unit));
  if (inj.iteration < 0 || inj.iteration > 1000000) fuzz_fail("accepted iteration " + std::to_string(inj.iteration));
  if (inj.fired || inj.fired_unit != -1 || inj.fired_tile != 0) fuzz_fail("parse_injection left run state behind");

  const Fixture& f = fixture();
  if (!sdc::check_injection(inj, f.battery, f.cpus).empty()) return 0;

  // Accepted against the battery: the case exists and the element, tensor and unit are in range.
  const auto it = f.cases.find(inj.case_id);
  if (it == f.cases.end()) fuzz_fail("accepted unknown case " + inj.case_id);
  if (inj.input) {
    if (inj.tensor_index >= it->second.inputs.size()) fuzz_fail("tensor_index out of range for " + text);
    const sdc::TensorInfo& t = it->second.inputs[inj.tensor_index];
    if (t.name != inj.tensor) fuzz_fail("tensor_index names another tensor for " + text);
    if (inj.element >= t.elements) fuzz_fail("accepted input element out of range: " + text);
  } else if (inj.element >= it->second.output_elements) {
    fuzz_fail("accepted output element out of range: " + text);
  }
  if (inj.unit != -1 && std::find(f.cpus.begin(), f.cpus.end(), inj.unit) == f.cpus.end())
    fuzz_fail("accepted a unit that is not selected: " + text);
  return 0;
}
