// The pattern data this binary was built with (sdc_built_patterns.h is generated at build time from
// patterns/battery.json and patterns/manifest.json by cmake/pattern_digest.cpp).
#include "sdc_built_patterns.h"

#include "src/cli/commands.h"

namespace sdc {

PatternDigests built_pattern_digests() { return {SDC_BUILT_BATTERY_XXH3_128, SDC_BUILT_MANIFEST_XXH3_128}; }

}  // namespace sdc
