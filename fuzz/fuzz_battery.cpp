// parse_battery on arbitrary text: a valid battery, or a PatternError naming the file; nothing else.
// It runs every family's validate() on shapes from the input.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_json.h"
#include "src/core/patterns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kFile = "fuzz/battery.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto parsed = sdc_fuzz::parse_input(kFile, text, sdc::parse_battery, "sdcscreen-battery", sdc::BATTERY_VERSION);
  if (!parsed) return 0;
  const sdc::Battery& b = *parsed;
  // Accepted: what parse_battery promises about a battery it returns.
  if (b.profiles.empty() || b.cases.empty()) sdc_fuzz::fuzz_fail("accepted a battery without profiles or cases");
  for (const sdc::Profile& p : b.profiles)
    if (!(p.time_budget_s > 0)) sdc_fuzz::fuzz_fail("accepted a non-positive time budget in profile " + p.name);
  std::set<std::string> ids;
  for (const sdc::Case& c : b.cases) {
    if (!ids.insert(c.id).second) sdc_fuzz::fuzz_fail("accepted duplicate case id " + c.id);
    const sdc::Family* fam = sdc::find_family(c.family);
    if (!fam) sdc_fuzz::fuzz_fail("accepted unknown family " + c.family);
    if (!fam->validate(c).empty()) sdc_fuzz::fuzz_fail("accepted a case its family does not validate: " + c.id);
    if (c.iterations.empty()) sdc_fuzz::fuzz_fail("accepted a case without iterations: " + c.id);
    for (const auto& [profile, n] : c.iterations) {
      if (!b.find_profile(profile)) sdc_fuzz::fuzz_fail("accepted unknown profile " + profile);
      if (n < 1 || n > 1000000) sdc_fuzz::fuzz_fail("accepted iterations out of range in " + c.id);
    }
    (void)sdc::case_fingerprint(c);
  }
  return 0;
}
