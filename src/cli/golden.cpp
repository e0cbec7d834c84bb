// sdcscreen golden and verify-patterns: recompute the goldens on this machine's CPUs, and check the pattern
// data against its manifest.
#include <fmt/format.h>

#include <chrono>

#include "src/backends/cpu/cpu_executor.h"
#include "src/core/patterns.h"
#include "src/core/recording.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/cli/commands.h"
#include "src/cli/screen.h"

namespace sdc {

int cmd_golden(const std::string& dir, const std::vector<int>& cpus) {
  Battery battery;
  try {
    battery = load_battery_file(dir + "/battery.json");
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
  std::vector<const Case*> cases;
  for (const Case& c : battery.cases)
    if (has_cpu_golden(c.mode)) cases.push_back(&c);  // recorded/consensus goldens come from GPUs (`record`)
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  const auto golden = cpu::compute_goldens(cases, cpus, stop_token(), [&](const Case& c) {
    ++done;
    say_err("[{}/{}] {}\n", done, cases.size(), c.id);
  });
  try {
    write_goldens(dir, battery, golden);
  } catch (const FileError& e) {
    return config_error(e.what());
  }
  say("wrote goldens of {} cases to {}/golden and {}/manifest.json in {:.1f} s\n", golden.size(), dir, dir,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

int cmd_verify(const std::string& dir, bool accept_patterns) {
  try {
    const PatternSet ps = load_patterns(dir);
    size_t tiles = 0;
    for (const auto& [id, g] : ps.golden) tiles += g.tile_digests.size();
    const RecordedGoldens recorded = load_recorded_goldens(dir);  // parsed too, not only hashed
    const std::string mismatch = pattern_digest_mismatch(ps, built_pattern_digests());
    if (!mismatch.empty() && !accept_patterns) return config_error(mismatch);
    say("patterns ok: {} cases, {} profiles, {} tile digests, {} recorded goldens, every file matches "
        "manifest.json ({})\n",
        ps.battery.cases.size(), ps.battery.profiles.size(), tiles, recorded.size(), dir);
    say("{}\n", mismatch.empty() ? "the pattern data is the one this sdcscreen was built with"
                                 : "NOT the pattern data this sdcscreen was built with (accepted by "
                                   "--accept-patterns): screens with it are marked as weakened");
    return 0;
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
}

}  // namespace sdc
