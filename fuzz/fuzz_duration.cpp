// parse_duration on arbitrary text: never throws; accepts only positive durations up to 30 days.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "src/cli/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  double seconds = -1;
  const std::string err = sdc::cli::parse_duration(text, seconds);  // no try: any exception is a bug
  if (err.empty()) {
    if (!std::isfinite(seconds) || !(seconds > 0) || seconds > 30 * 24 * 3600.0)
      sdc_fuzz::fuzz_fail("accepted '" + text + "' as " + std::to_string(seconds) + " s");
  } else if (seconds != -1) {
    sdc_fuzz::fuzz_fail("refused '" + text + "' but wrote the result");
  }
  return 0;
}
