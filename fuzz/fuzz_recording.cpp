// parse_recording and parse_recorded_goldens (the screen's loader of accepted recordings) on arbitrary
// text: a PatternError naming the file, or data that keeps the format's promises: unique keys, tile
// digests that add up, a lossless round trip through the writer, and (accepted recordings) the
// consensus rules. An accepted recording also goes through merge_recordings, which must agree with it.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "fuzz/fuzz_json.h"
#include "src/core/patterns.h"
#include "src/core/recording.h"
#include "src/core/recording_merge.h"
#include "src/spec/digest.h"

namespace {

void check_recording(const std::string& text, const char* file) {
  const auto parsed =
      sdc_fuzz::parse_input(file, text, sdc::parse_recording, "sdcscreen-recording", sdc::RECORDING_VERSION);
  if (!parsed) return;
  const sdc::Recording& r = *parsed;
  if (r.entries.empty() || r.device.uuid.empty()) sdc_fuzz::fuzz_fail("accepted a recording without entries or uuid");
  std::set<sdc::RecordingKey> keys;
  for (const sdc::RecordingEntry& e : r.entries) {
    if (!keys.insert(e.key).second) sdc_fuzz::fuzz_fail("accepted a duplicate key " + e.key.str());
    if (sdc::output_digest(e.tile_digests.data(), e.tile_digests.size()) != e.output_digest)
      sdc_fuzz::fuzz_fail("accepted tile digests that do not add up: " + e.key.str());
  }
  // What the writer makes of it must parse back to the same thing.
  const std::string again = sdc::render_recording(r);
  if (sdc::render_recording(sdc::parse_recording(file, again)) != again)
    sdc_fuzz::fuzz_fail("recording does not round-trip");
  // The same device twice counts once: every key accepted, provisional, nobody suspect.
  const sdc::ConsensusResult self = sdc::merge_recordings({r, r});
  if (self.keys.size() != r.entries.size() || self.exit_code() != 0)
    sdc_fuzz::fuzz_fail("a device disagreed with itself");
  for (const sdc::KeyConsensus& k : self.keys)
    if (k.verdict != sdc::ConsensusVerdict::accepted || !k.accepted.provisional || k.devices != 1)
      sdc_fuzz::fuzz_fail("one device recorded twice is not a provisional golden: " + k.key.str());
  // A second device with the same digests: confirmed goldens, accepted by the accepted-recordings parser.
  sdc::Recording twin = r;
  twin.device.uuid += "-twin";
  for (const sdc::AcceptedRecording& a : sdc::merge_recordings({r, twin}).accepted_recordings()) {
    if (a.provisional || a.voters.size() != 2) sdc_fuzz::fuzz_fail("two agreeing devices are not a confirmed golden");
    const std::string t = sdc::render_recorded_goldens(a.key.architecture, a.key.family, {a});
    if (sdc::parse_recorded_goldens(file, t).at(a.key).tile_digests != a.tile_digests)
      sdc_fuzz::fuzz_fail("accepted golden does not round-trip");
  }
}

void check_recorded_goldens(const std::string& text, const char* file) {
  const auto parsed = sdc_fuzz::parse_input(file, text, sdc::parse_recorded_goldens, "sdcscreen-recorded-goldens",
                                            sdc::RECORDED_GOLDENS_VERSION);
  if (!parsed) return;
  const sdc::RecordedGoldens& g = *parsed;
  std::vector<sdc::AcceptedRecording> all;
  for (const auto& [key, a] : g) {
    if (a.voters.size() <= a.dissenters.size()) sdc_fuzz::fuzz_fail("accepted a minority golden: " + key.str());
    if (a.provisional != (a.voters.size() < 2)) sdc_fuzz::fuzz_fail("accepted a wrong provisional flag: " + key.str());
    if (sdc::output_digest(a.tile_digests.data(), a.tile_digests.size()) != a.output_digest)
      sdc_fuzz::fuzz_fail("accepted tile digests that do not add up: " + key.str());
    if (sdc::recorded_goldens_path(key.architecture, key.family).find("..") != std::string::npos)
      sdc_fuzz::fuzz_fail("accepted an architecture or family that leaves the pattern directory: " + key.str());
    all.push_back(a);
  }
  if (g.empty()) return;
  const sdc::RecordingKey& k0 = g.begin()->first;
  const std::string again = sdc::render_recorded_goldens(k0.architecture, k0.family, all);
  if (sdc::render_recorded_goldens(k0.architecture, k0.family, [&] {
        std::vector<sdc::AcceptedRecording> v;
        for (const auto& [key, a] : sdc::parse_recorded_goldens(file, again)) v.push_back(a);
        return v;
      }()) != again)
    sdc_fuzz::fuzz_fail("accepted recordings do not round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_recording(text, "fuzz/recording.json");
  check_recorded_goldens(text, "fuzz/recordings/sm_90/x.json");
  return 0;
}
