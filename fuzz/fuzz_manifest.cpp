// parse_manifest on arbitrary text: entries whose names stay inside the pattern directory, or a
// PatternError naming the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_json.h"
#include "src/core/patterns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const kFile = "fuzz/manifest.json";
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto files =
      sdc_fuzz::parse_input(kFile, text, sdc::parse_manifest, "sdcscreen-manifest", sdc::MANIFEST_VERSION);
  if (!files) return 0;
  for (const auto& [rel, entry] : *files) {
    if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos)
      sdc_fuzz::fuzz_fail("accepted a file name that leaves the pattern directory: " + rel);
    (void)entry;
  }
  return 0;
}
