// `sdcscreen record -o DIR [--enable ID|GLOB]... [--devices LIST] [--repeats N]`: runs the battery's
// recorded cases on this node's GPUs and writes one recording per GPU (DIR/<hostname>-<uuid>.json, the
// format of src/core/recording.h), for `consensus` to merge with other known-good devices' recordings.
//
// Every case runs at least twice on every GPU and is judged by consensus only (accepted recordings are
// not consulted): a GPU whose repeats differ, or that dissents from the node's majority, fails that case
// and its digests are not written; only what passed is recorded. Exit codes as for `run`: 0 every case
// recorded on every GPU, 1 a GPU disagreed with itself or with the others (suspect: do not use its
// recording), 2 something could not run (no GPU, CUDA error, timeout), 64 bad command line, 78 bad
// pattern data or an unwritable DIR.
#include <fmt/format.h>

#include "src/core/patterns.h"
#include "src/core/recording.h"
#include "src/report/report.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/cli/screen.h"

namespace sdc {
namespace {

// The recorded cases, narrowed by --enable/--disable; "" or a command-line error.
std::string select_recorded(const Battery& battery, const RecordArgs& a, Selection& sel) {
  // No profile: the cases --enable names, from any profile (as run's --enable-any), or every recorded case.
  CaseChoice choice{"", {}, a.enable, a.disable};
  if (choice.enable_any.empty())
    for (const Case& c : battery.cases)
      if (c.mode == Mode::recorded) choice.enable_any.push_back(c.id);
  if (choice.enable_any.empty()) return "the battery has no recorded case";
  if (const std::string err = select_cases(battery, choice, sel); !err.empty()) return err;
  for (const Case* c : sel.cases)
    if (c->mode != Mode::recorded)
      return fmt::format("{} is a case of mode {}: only recorded cases are recorded (narrow --enable)", c->id,
                         mode_name(c->mode));
  if (sel.cases.empty()) return "--disable leaves no recorded case";
  for (int& n : sel.iterations) n = a.repeats;
  return "";
}

}  // namespace

int cmd_record(const RecordArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir) {
  ScreenRequest req;
  Screen screen;
  const auto fail = [](const SetupFailure& f) {
    say_err("sdcscreen: {}{}\n", f.code == EXIT_INCONCLUSIVE ? "" : "error: ", f.message);
    return f.code;
  };
  if (const SetupFailure f = record_request(a, argv, patterns_dir, req); f.code != 0) return fail(f);
  const auto select = [&a](const Battery& battery, Selection& sel) { return select_recorded(battery, a, sel); };
  const auto check = [](Screen& s) -> SetupFailure {  // nothing is recorded unless every requested GPU can run
    if (!s.gpu.errors.empty()) return {EXIT_INCONCLUSIVE, s.gpu.errors.front() + "; nothing recorded"};
    if (!s.gpu.unusable.empty()) return {EXIT_INCONCLUSIVE, s.gpu.unusable + "; nothing recorded"};
    return {};
  };
  if (const SetupFailure f = set_up_screen(req, select, check, screen); f.code != 0) return fail(f);
  screen.gpu.reason = "record";
  screen.opt.on_test_done = [](const TestResult& t, size_t i, size_t n) {
    say_err("[{}/{}] {} {} {}\n", i + 1, n, t.id, t.device, verdict_name(t.verdict));
  };
  std::vector<FirstRun> first_runs;
  execute_screen(screen, &first_runs);
  const RunResult& result = screen.result;
  const PatternSet& patterns = screen.patterns;
  const std::vector<DeviceInfo>& gpus = screen.gpu.selected;
  const HostInfo host = host_info();
  say("{}", render_text(result, host));

  // One file per GPU, with what it computed stably and in agreement with the node.
  bool write_failed = false;
  for (size_t gi = 0; gi < gpus.size(); ++gi) {
    const DeviceInfo& d = gpus[gi];
    Recording rec = new_recording(recorded_device(d, host.hostname));
    std::vector<std::string> left_out;
    for (size_t ti = 0; ti < result.tests.size(); ++ti) {
      const TestResult& t = result.tests[ti];
      if (t.device_index != static_cast<int>(gi)) continue;
      static const std::vector<uint64_t> none;
      const std::vector<uint64_t>& digests = ti < first_runs.size() ? first_runs[ti].digests : none;
      if (t.verdict != Verdict::pass || t.judged_by != "consensus" || digests.empty()) {
        left_out.push_back(fmt::format("{} ({})", t.id, verdict_name(t.verdict)));
        continue;
      }
      const Case* c = patterns.battery.find_case(t.id);
      add_recording_entry(rec, {d.architecture(), c->family, c->id, case_fingerprint(*c), t.library, t.algorithm},
                          digests);
    }
    const std::string path =
        fmt::format("{}/{}-{}.json", a.output_dir, host.hostname.empty() ? "host" : host.hostname, d.uuid);
    if (rec.entries.empty()) {
      say("{}: nothing recorded ({})\n", d.label(), fmt::join(left_out, ", "));
      continue;
    }
    try {
      write_recording(path, rec);
      say("{}: wrote {} ({} cases{}{})\n", d.label(), path, rec.entries.size(),
          left_out.empty() ? "" : "; not recorded: ", fmt::join(left_out, ", "));
    } catch (const FileError& e) {
      say_err("sdcscreen: error: {}\n", e.what());
      write_failed = true;
    }
  }
  const int code = result.exit_code();
  if (result.workers_abandoned) std::_Exit(code == EXIT_PASS && write_failed ? EXIT_CONFIG : code);
  return code == EXIT_PASS && write_failed ? EXIT_CONFIG : code;
}

}  // namespace sdc
