// `sdcscreen consensus [--patterns DIR] [--write] FILE...`: merges recordings of known-good devices
// (one device per file, written by `record`) into recorded goldens (src/core/recording_merge.h has the
// rules). Exit 0: every key has a golden; 1: a device disagreed with the majority or with itself
// (suspect hardware); 2: some key has no golden (tie or no majority); 64: bad command line; 78: a bad
// recording file or pattern directory. With --write, the accepted goldens go into
// DIR/recordings/<architecture>/<family>.json and DIR/manifest.json, whatever the exit code: a
// dissenter is outvoted, and a key without a golden is simply not written.
#include <fmt/format.h>

#include "src/core/patterns.h"
#include "src/core/recording_merge.h"
#include "src/core/result.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/cli/commands.h"

namespace sdc {

int cmd_consensus(const ConsensusArgs& a, const std::string& patterns_dir) {
  if (a.files.empty()) return usage_error("consensus needs at least one recording file");
  std::vector<Recording> recordings;
  ConsensusResult result;
  try {
    for (const std::string& f : a.files) recordings.push_back(load_recording_file(f));
    result = merge_recordings(recordings);
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
  // Written first, so that a refused write prints no verdict: the report and its "exit:" line come last.
  const std::vector<AcceptedRecording> accepted = result.accepted_recordings();
  if (a.write && accepted.empty()) say("nothing written: no key has an accepted golden\n");
  if (a.write && !accepted.empty()) {
    std::vector<std::string> lines;
    try {
      lines = write_recorded_goldens(patterns_dir, accepted);
    } catch (const PatternError& e) {
      return config_error(e.what());
    } catch (const FileError& e) {
      return config_error(e.what());
    }
    for (const std::string& line : lines) say("wrote {}\n", line);
    say("updated {}/manifest.json\n", patterns_dir);
  }
  say("{}", render_consensus(result));
  return result.exit_code();
}

}  // namespace sdc
