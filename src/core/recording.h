// Recorded goldens (docs/design.md, mode "recorded"; docs/recordings.md): for tensor-core cases on
// full-precision random data no golden can be computed independently of the hardware, so one is recorded on
// known-good devices of the same architecture (and library version and pinned algorithm) and accepted only
// when most of them agree.
//
// Two file formats, both strict JSON (depth limit, no duplicate or unknown members, digests as 16
// lowercase hex digits like the golden files); any problem is a PatternError whose message is one line
// naming the file (exit 78):
// - a recording: what ONE device computed, written by `sdcscreen record`:
//     {"format": "sdcscreen-recording", "version": 1, "tool": "sdcscreen 0.1.0 (git)",
//      "device": {"name", "uuid", "pci_bus_id", "hostname", "driver"},
//      "entries": [{"architecture", "family", "case", "fingerprint", "library", "algorithm",
//                   "tile_digests": [...], "output_digest"}]}
// - accepted recordings: patterns/recordings/<architecture>/<family>.json, written by
//   `sdcscreen consensus --write`, listed in patterns/manifest.json, read by the screen:
//     {"format": "sdcscreen-recorded-goldens", "version": 1, "architecture", "family",
//      "entries": [{"case", "fingerprint", "library", "algorithm", "provisional",
//                   "voters": [{"uuid", "name", "hostname"}], "dissenters": [...], "unstable": [...],
//                   "tile_digests": [...], "output_digest"}]}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "src/core/device_info.h"

namespace sdc {

constexpr int RECORDING_VERSION = 1;
constexpr int RECORDED_GOLDENS_VERSION = 1;

// What a recorded golden is valid for. Two recordings are comparable only when every field is equal:
// tensor-core accumulation order differs between architectures, cuBLASLt versions and algorithms.
struct RecordingKey {
  std::string architecture;  // "sm_90" (DeviceInfo::architecture())
  std::string family;        // "gemm_bf16"
  std::string case_id;
  std::string fingerprint;  // case_fingerprint() of the case definition the digests belong to
  std::string library;      // "cublasLt 13.0.2", or "sdcscreen 0.1.0" for the project's own kernel
  std::string algorithm;    // pinned cuBLASLt algorithm (id, tile, stages, split-K, reduction...) or "mma.sync"
  auto tie() const { return std::tie(architecture, family, case_id, fingerprint, library, algorithm); }
  bool operator<(const RecordingKey& o) const { return tie() < o.tie(); }
  bool operator==(const RecordingKey& o) const { return tie() == o.tie(); }
  std::string str() const;  // one line for people: "sm_90 gemm_bf16 CASE [LIBRARY | ALGORITHM] fingerprint FP"
};

// The device a recording comes from. Devices are told apart by uuid only.
struct RecordedDevice {
  std::string name, uuid, pci_bus_id, hostname, driver;
};
RecordedDevice recorded_device(const DeviceInfo& d, const std::string& hostname);

struct RecordingEntry {
  RecordingKey key;
  std::vector<uint64_t> tile_digests;
  uint64_t output_digest = 0;
};

// One device's recording file.
struct Recording {
  std::string file;  // where it was read from (names it in errors), empty for one built in memory
  std::string tool;  // "sdcscreen <version> (<git>)" that recorded it
  RecordedDevice device;
  std::vector<RecordingEntry> entries;  // keys unique
};

// The writer side, for `record`: start from the device, add one entry per case, render or write.
Recording new_recording(const RecordedDevice& device);
// Computes the output digest; throws PatternError when the key is malformed, already present, or
// there are no tile digests.
void add_recording_entry(Recording& r, const RecordingKey& key, const std::vector<uint64_t>& tile_digests);
std::string render_recording(const Recording& r);
void write_recording(const std::string& path, const Recording& r);  // atomic; throws FileError

Recording parse_recording(const std::string& file, const std::string& text);
Recording load_recording_file(const std::string& path);  // read failures become PatternError too

// A device as the accepted recordings name it.
struct DeviceRef {
  std::string uuid, name, hostname;
};

// A golden accepted by consensus.
struct AcceptedRecording {
  RecordingKey key;
  std::vector<uint64_t> tile_digests;
  uint64_t output_digest = 0;
  bool provisional = false;           // from a single device: good enough to screen, not yet confirmed
  std::vector<DeviceRef> voters;      // the strict majority that recorded these digests
  std::vector<DeviceRef> dissenters;  // stable devices that recorded something else
  std::vector<DeviceRef> unstable;    // recorded this key twice with different results; not counted
};

using RecordedGoldens = std::map<RecordingKey, AcceptedRecording>;

// "recordings/<architecture>/<family>.json", relative to the pattern directory.
std::string recorded_goldens_path(const std::string& architecture, const std::string& family);
// Every entry must belong to `architecture` and `family`, the ones the file's path names.
RecordedGoldens parse_recorded_goldens(const std::string& file, const std::string& text);
std::string render_recorded_goldens(const std::string& architecture, const std::string& family,
                                    const std::vector<AcceptedRecording>& entries);

// The screen's loader: every recordings/ file that manifest.json lists, checked against its size and
// hash, parsed strictly, and checked to sit at the path its architecture and family name. Files not in
// the manifest are not read (as for goldens). Throws PatternError.
RecordedGoldens load_recorded_goldens(const std::string& patterns_dir);
const AcceptedRecording* find_recorded_golden(const RecordedGoldens& goldens, const RecordingKey& key);

// `consensus --write`: for each (architecture, family) of `accepted`, merges the entries into the
// existing accepted file (an accepted key replaces the same key; other keys are kept), writes it
// atomically and updates its manifest.json entry. Returns one line per file written for people.
// Throws PatternError (bad existing data, no manifest) or FileError (cannot write).
std::vector<std::string> write_recorded_goldens(const std::string& patterns_dir,
                                                const std::vector<AcceptedRecording>& accepted);

}  // namespace sdc
