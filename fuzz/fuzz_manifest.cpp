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
  std::map<std::string, sdc::ManifestEntry> files;
  try {
    files = sdc::parse_manifest(kFile, text);
  } catch (const sdc::PatternError& e) {
    sdc_fuzz::check_pattern_message(kFile, e.what());
    return 0;
  }
  sdc_fuzz::check_accepted_header(text, "sdcscreen-manifest", sdc::MANIFEST_VERSION);
  for (const auto& [rel, entry] : files) {
    if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos)
      sdc_fuzz::fuzz_fail("accepted a file name that leaves the pattern directory: " + rel);
    (void)entry;
  }
  return 0;
}
