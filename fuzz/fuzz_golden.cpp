// parse_golden on arbitrary text: golden digests that add up, or a PatternError naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_json.h"
#include "src/core/patterns.h"
#include "src/spec/digest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kFile = "fuzz/golden/x.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto golden = sdc_fuzz::parse_input(kFile, text, sdc::parse_golden, "sdcscreen-golden", sdc::GOLDEN_VERSION);
  if (!golden) return 0;
  for (const auto& [id, gc] : *golden) {
    if (sdc::output_digest(gc.tile_digests.data(), gc.tile_digests.size()) != gc.output_digest)
      sdc_fuzz::fuzz_fail("accepted tile digests that do not add up, case " + id);
    // Digests round-trip through their text form.
    uint64_t v = 0;
    if (!sdc::parse_hex64(sdc::hex64(gc.output_digest), v) || v != gc.output_digest)
      sdc_fuzz::fuzz_fail("hex64/parse_hex64 do not round-trip");
  }
  return 0;
}
