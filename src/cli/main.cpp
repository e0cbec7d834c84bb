// sdcscreen: screens GPUs and CPU cores for silent data corruption. Command line (CLI11), one parse into
// one options value per subcommand, and the mapping of every failure to its exit code (docs/design.md,
// "Verdicts and exit codes"). Each subcommand lives in a file of its own (run.cpp, list.cpp, info.cpp,
// golden.cpp, consensus.cpp, record.cpp, history.cpp, diff.cpp, bundle.cpp, reason.cpp, fleet.cpp).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/activity.h"
#include "src/core/family.h"
#include "src/core/history.h"
#include "src/core/result.h"
#include "src/report/report.h"
#include "src/util/run_lock.h"
#include "src/util/say.h"

using namespace sdc;

namespace {

// Whether the command line is `run ... --npd ...` (before the options are parsed, or when they could not be).
bool npd_asked(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "run") return false;
  for (size_t i = 2; i < args.size(); ++i)
    if (args[i] == "--npd") return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // A closed pipe on stdout or stderr (`| head`, `| true`) loses text, never the verdict: with SIGPIPE the
  // first write after a miscompare killed the screen (and its supervisor: exit 141). say.h ignores the error.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv, argv + argc);
  args[0] = "sdcscreen";
  CLI::App app{
      "sdcscreen: screens GPUs and CPU cores for silent data corruption with bit-exact golden results.\n"
      "Exit codes: 0 pass, 1 miscompare (drain), 2 inconclusive (could not run everything), 3 a slow unit (only\n"
      "with --fail-slow), 64 bad command line, 78 bad configuration or pattern data, 128+N interrupted by signal N.",
      "sdcscreen"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("sdcscreen {} ({})", tool_version(), tool_git()));
  // Without --patterns: $SDCSCREEN_PATTERNS, next to the executable, installed (patterns_location.h).
  const PatternsLocation located = locate_patterns();
  std::string patterns_dir = located.dir;
  const std::string patterns_help = fmt::format(
      "pattern directory (battery, goldens, manifest); without it: ${}, else patterns/ or "
      "../share/sdcscreen/patterns next to the executable, else the installed one; here: {}",
      PATTERNS_ENV, located.dir.empty() ? "none found" : located.dir + " (" + located.how + ")");

  // An option given with an empty value is a mistake, never "use the default".
  const CLI::Validator non_empty([](std::string& v) { return v.empty() ? std::string("empty value") : std::string(); },
                                 "NON-EMPTY");
  // CLI11's Range lets NaN through (every comparison with it is false).
  const CLI::Validator not_nan(
      [](std::string& v) {
        return std::isnan(std::strtod(v.c_str(), nullptr)) ? std::string("not a number") : std::string();
      },
      "");
  RunArgs ra;
  CLI::App* run = app.add_subcommand("run", "run the screen and report pass/fail per test and unit");
  run->add_option("--profile", ra.profile,
                  "boot (under 45 s, at node boot), standard (about 5 min) or burnin (30 min+)")
      ->capture_default_str()
      ->check(non_empty);
  run->add_option("--enable", ra.enable,
                  "run only the profile's tests whose id or family matches ID|GLOB (repeatable); a glob that matches "
                  "no test of --profile is an error (64)");
  run->add_option("--enable-any", ra.enable_any,
                  "run the tests whose id or family matches ID|GLOB from any profile of the battery (repeatable), with "
                  "those --enable selects; a test from outside --profile runs its smallest iteration count")
      ->check(non_empty);
  run->add_option("--disable", ra.disable, "do not run tests whose id or family matches ID|GLOB (repeatable)");
  run->add_option(
         "--time-budget", ra.time_budget,
         "stop starting new work after DURATION (45s, 5m, 1h30m, 500ms; a bare number is seconds); default: the "
         "profile's")
      ->check(non_empty);
  run->add_option("--deadline", ra.deadline,
                  "hard wall-clock limit of the whole run (45s, 5m): the screen stops a margin before it (a third of "
                  "it, at most 3 s), writes every output and exits by it: 1 if it found a miscompare, else 2 "
                  "(never a pass); a screen still running at the deadline is killed by its supervisor (1 or 2 the "
                  "same way). For wrappers that kill the screen at a limit of their own: give it a few seconds less")
      ->check(non_empty);
  run->add_option("--seed", ra.seed,
                  "schedule seed (which CPU computes which tile); the report gives it, reuse it to replay")
      ->check(
          [](const std::string& v) -> std::string {
            // Digits only, below 2^64: CLI11 alone took "-1" (as 2^64 - 1), "" and values that overflow.
            if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos ||
                (v.size() == 20 && v > "18446744073709551615"))
              return "'" + v + "' is not a seed (an integer from 0 to 18446744073709551615)";
            return "";
          },
          "UINT64");
  run->add_option("--backend", ra.backend, "auto (CUDA when a GPU is usable, else CPU), cpu or cuda")
      ->check(
          [](const std::string& v) -> std::string {
            // emulated:SPEC (emulated GPUs: the CUDA kernels on the CPU) is for the tests only: not in the help.
            if (v == "auto" || v == "cpu" || v == "cuda" || v.rfind("emulated:", 0) == 0) return "";
            return "'" + v + "' is not one of auto, cpu, cuda";
          },
          "auto|cpu|cuda")
      ->capture_default_str();
  run->add_option("--devices", ra.devices, "GPUs to screen, like 0-3,6 (CUDA ordinals; default: every visible GPU)")
      ->check(non_empty);
  run->add_option("--expect-devices", ra.expect_devices,
                  "the number of GPUs this node must have, or pci (as many as the NVIDIA GPUs on its PCI bus; none: "
                  "a CPU node): fewer usable is an error (exit 2) naming what is missing")
      ->check(
          [](const std::string& v) -> std::string {
            if (v == "pci") return "";
            if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos ||
                std::stoi(v) < 1 || std::stoi(v) > (1 << 16))
              return "'" + v + "' is not a GPU count from 1 to 65536, or pci";
            return "";
          },
          "N|pci");
  run->add_option("--cpuset", ra.cpuset,
                  "logical CPUs to screen, like 0-3,8 (default: every CPU this process may use); given, the CPUs are "
                  "screened, not the GPUs, whatever the node has (--backend auto or cpu)");
  run->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  run->add_flag("--accept-patterns", ra.accept_patterns,
                "screen with pattern data other than the data this sdcscreen was built with (an edited battery, its "
                "manifest rewritten to match; another version): refused (78) without it; with it every output marks "
                "the screen as weakened and the history never counts it toward resuming a node");
  run->add_option("--output-format", ra.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  run->add_option("-o,--output", ra.output,
                  "write the report to FILE atomically (stdout then gets the text report); -o - writes it to stdout")
      ->check(non_empty);
  run->add_flag("-q,--quiet", ra.quiet, "print nothing on stdout; rely on the exit code and -o");
  run->add_flag("-v,--verbose", ra.verbose, "print each test's result on stderr as it finishes");
  run->add_option("--prometheus", ra.prometheus, "also write a node_exporter textfile (gauges, written atomically)")
      ->check(non_empty);
  run->add_option("--html", ra.html,
                  "also write the report as one self-contained HTML page (written atomically; no network, script or "
                  "font needed to view it): verdict and reproduce command, a heat map of the CPUs or of each GPU's "
                  "SMs, each failing case's tiles, bits and iterations, retests and slow units")
      ->check(non_empty);
  run->add_flag("--npd", ra.npd,
                "node-problem-detector plugin mode: one line of at most 80 characters on stdout, exit 0 OK, 1 NonOK, "
                "2 Unknown");
  run->add_option(
         "--lock-file", ra.lock_file,
         fmt::format("lock that keeps one screen at a time on this node (default {})", RunLock::default_path()))
      ->check(non_empty);
  run->add_flag("--force", ra.force, "run even when another screen holds the lock");
  run->add_option("--max-memory", ra.max_memory,
                  "memory a case may use (512M, 8G); a larger case is an error, not a crash")
      ->check(non_empty);
  run->add_option(
      "--inject", ra.inject,
      "fault drill: case=ID,element=N,bit=B|mask=0xM[,stuck=0|1][,count=C[,stride=S]][,target=input,tensor=T]"
      "[,unit=CPU|SM][,device=GPU][,iteration=I][,persist=once|always|input|1/K] (repeatable); mask= flips "
      "several bits, stuck= holds the mask's bits at 0 or 1 instead of flipping them, count= hits C words S "
      "apart (an output's: tile offsets from the element's, inside its tile; count=32 from a multiple of 32 is a "
      "warp-aligned cluster); persist= makes a fault repeat (always; input: only on "
      "the case's own inputs; 1/K: every K-th computation) for --retest-on-failure (on a GPU with unit=SM); on a "
      "GPU, unit=SM flips the element's offset in every tile that SM computes; a "
      "training-step replay (" +
          replay_family_ids() +
          ") also takes submodule=NAME[,step=S][,microbatch=M][,output=K]: the flip (bit or mask, count, stride) "
          "of element N of that submodule's output, inside the replay, on the unit (rate=K instead of step= and "
          "microbatch=: every K-th time the output is computed, from the first, a broken datapath); the memory "
          "test (memtest_u32) takes target=memory[,pass=NAME]: word N of its region takes the fault between the "
          "write and the read of that pass (default walking_ones); the run is marked as injected in every output");
  run->add_option("--throughput-floor", ra.throughput_floor,
                  "a unit whose throughput is below R times the median of its peers' is flagged slow (in every "
                  "output; the exit code changes only with --fail-slow). Throughput is measured after the battery "
                  "by a probe of its own: every CPU (or GPU) runs the same fixed work item at once, in 7 rounds "
                  "sized by time; slow means below R in at least two thirds of the rounds and in their median, "
                  "and a unit that failed is reported failed, not slow")
      ->check(CLI::Range(0.01, 0.99))
      ->capture_default_str();
  CLI::Option* fail_slow =
      run->add_flag("--fail-slow", ra.fail_slow, "exit 3 when every test passed but a unit is slow");
  run->add_flag("--no-probe", ra.no_probe,
                "skip the throughput probe after the battery (about a tenth of a second of every unit): no unit is "
                "judged slow, and every output says the probe did not run. For short triage and drill runs; a screen "
                "of a node keeps it")
      ->excludes(fail_slow)
      ->excludes("--throughput-floor");
  run->add_option("--max-temperature", ra.max_temperature,
                  "a unit above C degrees Celsius while a case ran makes that case an error (its result cannot be "
                  "trusted): on a GPU its die or its memory (HBM) temperature through NVML, on CPUs a CPU sensor's "
                  "(package, core: hwmon coretemp/k10temp), each sampled every second")
      ->check(CLI::Range(1.0, 150.0))
      ->check(not_nan);
  run->add_option("--history", ra.history,
                  "append one line per screen to DIR/history.jsonl (created if missing): what 'sdcscreen history' "
                  "and the Slurm resume policy read (DIR/unrecorded-RUN marks the screen until its line is written). "
                  "Default: /var/lib/sdcscreen when run as root (a default that "
                  "cannot be written is a warning, not an error), else none; $SDCSCREEN_HISTORY overrides the "
                  "default; --history none records nothing")
      ->check(non_empty);
  run->add_option("--retest-on-failure", ra.retest,
                  "after a test fails on a unit, compute its failing tiles again N times on that unit and on its "
                  "neighbours (same core, same package), with the same inputs and with fresh seeds, and classify "
                  "the unit: persistent, intermittent (a rate) or not reproduced, input-dependent or not. Default: 0 "
                  "in boot, 3 in the profiles that fill their budget (standard, burnin). On a GPU the unit is an SM: "
                  "the whole case runs again N times (the other SMs are its neighbours) and N times with fresh "
                  "seeds, checked against the host CPU; a case whose kernels span the GPU is not retested")
      ->check(CLI::Range(0, 100));
  run->add_flag("--digests", ra.digests,
                "keep every tile's digest of each test's last complete iteration in the JSON report (for 'diff')");
  const char* examples =
      "Examples:\n"
      "  node boot (systemd, Slurm HealthCheckProgram):\n"
      "    sdcscreen run --profile boot -q -o /var/lib/sdcscreen/report.json --output-format json\n"
      "  fleet automation (read the exit code and the JSON):\n"
      "    sdcscreen run --profile standard --output-format json -o report.json\n"
      "  every GPU of an 8-GPU node, failing (exit 2) if one is missing:\n"
      "    sdcscreen run --backend cuda --expect-devices 8 --output-format json -o report.json\n"
      "  triage of a suspect GPU with a drill on SM 17:\n"
      "    sdcscreen run --backend cuda --devices 3 --profile standard --inject "
      "case=gemm_f32.uniform_1024,element=0,bit=3,unit=17\n"
      "  triage of a suspect core, replaying a failing run's schedule:\n"
      "    sdcscreen run --profile burnin --cpuset 12 --enable 'gemm_f32.*' --seed 1234 -v\n"
      "  one case of the standard profile, alone, in the boot profile's budget:\n"
      "    sdcscreen run --enable-any gemm_f32.uniform_2048 -v";
  run->footer(examples);
  app.footer(examples);

  ListArgs la;
  CLI::App* list = app.add_subcommand("list", "list families, test cases, profiles, modes and distributions");
  list->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  list->add_option("--profile", la.profile, "list only the cases of this profile")->check(non_empty);
  list->add_option("--output-format", la.output_format, "text or json (families, cases with their geometry, ...)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  CLI::App* info = app.add_subcommand("info", "show host, CPUs, devices and versions");
  std::string info_format = "text";
  info->add_option("--output-format", info_format, "text or json (host identity, telemetry now, devices, versions)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  GoldenArgs ga;
  CLI::App* golden =
      app.add_subcommand("golden", "recompute every golden digest on this machine's CPUs and rewrite the manifest");
  golden->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  golden->add_option("--cpuset", ga.cpuset, "CPUs to compute on (default: all available)");
  golden->add_flag("--force", ga.force, "rewrite the installed pattern directory (the package's) all the same");
  CLI::App* verify =
      app.add_subcommand("verify-patterns", "check the pattern data: manifest hashes, versions, goldens, and that it is "
                                            "the data this sdcscreen was built with");
  verify->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  bool verify_accept = false;
  verify->add_flag("--accept-patterns", verify_accept,
                   "exit 0 on consistent pattern data that is not the data this sdcscreen was built with (else 78)");
  ConsensusArgs ca;
  CLI::App* consensus = app.add_subcommand(
      "consensus",
      "merge recordings of known-good devices (one device per FILE) into recorded goldens; exit 0 every "
      "key accepted, 1 a device disagrees (suspect), 2 a key has no majority");
  consensus->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  consensus->add_flag("--write", ca.write,
                      "write the accepted goldens to recordings/ in the pattern directory and update its manifest");
  consensus->add_option("FILE", ca.files, "recording files, one device each (written by 'record')")
      ->required()
      ->check(non_empty);
  consensus->footer(
      "Example: merge the recordings of four known-good GPUs, write the accepted goldens, commit them:\n"
      "  sdcscreen consensus --write --patterns patterns rec-gpu0.json rec-gpu1.json rec-gpu2.json rec-gpu3.json\n"
      "  git add patterns/recordings patterns/manifest.json");

  RecordArgs rec;
  CLI::App* record = app.add_subcommand(
      "record",
      "run the recorded cases on this node's GPUs (each at least twice, judged by consensus) and write one "
      "recording per GPU for 'consensus'; exit 0 all recorded, 1 a GPU disagreed (suspect), 2 could not run");
  record->add_option("-o,--output-dir", rec.output_dir, "directory for the recordings (<hostname>-<gpu uuid>.json)")
      ->required()
      ->check(non_empty);
  record->add_option("--enable", rec.enable,
                     "record only cases whose id or family matches ID|GLOB (default: every recorded case)");
  record->add_option("--disable", rec.disable, "do not record cases whose id or family matches ID|GLOB");
  record->add_option("--devices", rec.devices, "GPUs to record on, like 0-3 (default: every visible GPU)")
      ->check(non_empty);
  record->add_option("--repeats", rec.repeats, "runs per case and GPU that must agree bit for bit (at least 2)")
      ->capture_default_str();
  record->add_option("--time-budget", rec.time_budget, "stop starting new work after DURATION (default 1h)")
      ->check(non_empty);
  record->add_option("--patterns", patterns_dir, patterns_help)->check(non_empty);
  record->add_flag("--force", rec.force, "record even when another screen holds the node's lock");
  record->add_flag("--accept-patterns", rec.accept_patterns,
                   "record with pattern data other than the data this sdcscreen was built with (a battery being "
                   "extended before the rebuild); refused (78) without it");
  record->footer(
      "Example: record on four known-good GPUs of two nodes, then accept what a majority agrees on:\n"
      "  node-a$ sdcscreen record -o rec/      node-b$ sdcscreen record -o rec/\n"
      "  sdcscreen consensus --write rec/*.json");

  HistoryArgs ha;
  CLI::App* hist = app.add_subcommand(
      "history",
      "per unit of this node: screens, failures, first and last failure, flapping (from 'run --history DIR'); "
      "with --resume-policy, whether a node drained for SDC may come back");
  hist->add_option("DIR", ha.dir, "the history directory given to 'run --history'")
      ->capture_default_str()
      ->check(non_empty);
  hist->add_flag("--resume-policy", ha.resume_policy,
                 "print the policy's decision on the first line (resume, hold, never, unrecorded, no-record) and exit "
                 "0 resume, 1 keep drained, 2 no failure on record (a missing history too); not with --forget, "
                 "--acknowledge or --output-format json");
  hist->add_option("--clean-screens", ha.clean_screens,
                   "clean screens a node needs after its last failure before it is resumed")
      ->capture_default_str();
  hist->add_option("--min-profile", ha.min_profile, "the least profile a clean screen must have run in full")
      ->capture_default_str();
  hist->add_option("--forget", ha.forget,
                   "after a repair: failures of UNIT ('cpu 3', 'gpu 0', a GPU's UUID or 'all') no longer count (a line "
                   "is appended)")
      ->check(non_empty);
  hist->add_flag("--acknowledge", ha.acknowledge,
                 "after checking a node whose screen left no history line (a full disk, a crash in its reporting): "
                 "remove the markers of such screens, so that the policy decides again");
  hist->add_option("--output-format", ha.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  hist->footer(
      "The policy: a unit that failed in two screens (drills aside) keeps the node drained until it is repaired\n"
      "and forgotten; otherwise the node comes back after --clean-screens consecutive clean screens of at least\n"
      "--min-profile, each screening every unit that failed. Inconclusive screens neither count nor reset.\n"
      "A screen that started and never wrote its line keeps the node drained until --acknowledge.\n"
      "Examples:\n"
      "  sdcscreen history /var/lib/sdcscreen\n"
      "  sdcscreen history /var/lib/sdcscreen --resume-policy\n"
      "  sdcscreen history /var/lib/sdcscreen --forget 'cpu 3'     # after the CPU was replaced");

  DiffArgs da;
  CLI::App* diff = app.add_subcommand(
      "diff",
      "compare two JSON reports (two runs of one node, or two nodes): per case and unit, which verdicts, "
      "signatures and tile digests differ; exit 0 they agree, 1 they differ, 78 a file is not a report");
  diff->add_option("A", da.a, "the first report (run --output-format json)")->required()->check(non_empty);
  diff->add_option("B", da.b, "the second report")->required()->check(non_empty);
  diff->add_option("--output-format", da.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  diff->footer(
      "Same cases and seed on both (run --seed S --digests) make the schedules and tile digests comparable:\n"
      "  node-a$ sdcscreen run --seed 7 --digests --output-format json -o a.json\n"
      "  node-b$ sdcscreen run --seed 7 --digests --output-format json -o b.json\n"
      "  sdcscreen diff a.json b.json");

  BundleArgs ba;
  ba.dir = history::default_dir().empty() ? history::DEFAULT_DIR : history::default_dir();
  CLI::App* bundle = app.add_subcommand(
      "bundle",
      "one tar.gz for a vendor ticket: the last reports the history names, the history, 'info' (text and JSON), "
      "the pattern manifest and the reproduce commands; nothing else from the host. Exit 0 written, 78 it "
      "could not be");
  bundle->add_option("DIR", ba.dir, "the history directory ('run --history DIR')")
      ->capture_default_str()
      ->check(non_empty);
  bundle->add_option("-o,--output", ba.output, "the archive (default: sdcscreen-bundle-HOST-TIME.tar.gz here)")
      ->check(non_empty);
  bundle->add_option("--reports", ba.reports, "how many of the last reports to include")->capture_default_str();
  bundle->footer(
      "A report is included when the screen wrote it with -o and it is still there; what is missing is said\n"
      "in the archive's README.txt. Example:\n"
      "  sdcscreen bundle /var/lib/sdcscreen -o ticket-4711.tar.gz");

  std::string reason_report;
  CLI::App* reason = app.add_subcommand(
      "reason",
      "print the reason a node is drained for after the failed screen of a JSON report, as the Slurm health "
      "check, the NHC check and sdcscreen-sweep give it (the report's drain_reason): exit 0 printed (the "
      "report's verdict is fail), 2 the report did not fail (nothing printed), 78 the file is not a JSON report");
  reason->add_option("REPORT", reason_report, "the report (run --output-format json)")->required()->check(non_empty);
  reason->footer(
      "Reasons: 'SDC: cpu 1 softmax_f32', 'SDC: gpu 0 persistent gemm_f32', 'SDC: cpu 3 crash gemm_f32',\n"
      "'SDC: cpu 2 hung (watchdog)', 'SDC: cpu 4 machine check during the screen', '... drill' for a drill.\n"
      "Example:\n"
      "  scontrol update nodename=n1 state=drain reason=\"$(sdcscreen reason report.json)\"");
  FleetArgs fa;
  CLI::App* fleet = app.add_subcommand(
      "fleet",
      "many nodes' JSON reports (files, or directories searched for *.json) in one table: each node's newest "
      "report, its failing units with their signature and retest classification, the signatures shared across "
      "nodes, the nodes not screened within --stale; exit 0 all pass, 1 a node failed, 2 a node is inconclusive "
      "or stale (a failure wins), 78 a PATH is missing or no report could be read");
  fleet->add_option("PATH", fa.paths, "report files, or directories searched recursively for *.json")
      ->required()
      ->check(non_empty);
  fleet->add_option("--stale", fa.stale, "a node whose newest report is older than this is stale (like 24h, 90m)")
      ->capture_default_str()
      ->check(non_empty);
  fleet->add_option("--output-format", fa.output_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  fleet->add_option("-o,--output", fa.output, "write the table (or JSON) to this file instead of stdout")
      ->check(non_empty);
  fleet->add_option("--html", fa.html, "also write one self-contained HTML page: a node grid coloured by verdict")
      ->check(non_empty);
  fleet->footer(
      "Files that are not reports are listed with the reason and skipped. Example, the reports the screens\n"
      "of a Slurm sweep collected:\n"
      "  sdcscreen fleet /shared/sdcscreen/reports --stale 36h --html fleet.html");

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
    if (!known)
      return usage_error(fmt::format(
          "unknown subcommand '{}' (run, list, info, golden, verify-patterns, record, consensus, history, diff, "
          "bundle, reason, fleet)",
          argv[1]));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad command line";
    say_err("sdcscreen: error: {} (see 'sdcscreen --help')\n", what);
    // node-problem-detector reads stdout: its line says why, even when the command line did not parse.
    if (npd_asked(args)) say("{}\n", npd_line_for("Unknown: bad command line: " + what));
    return EXIT_USAGE;
  }
  // Every subcommand but info, history, diff, bundle, reason and fleet reads the patterns: none found is a configuration
  // error (run says so after its argument checks, and on its --npd line too).
  if (patterns_dir.empty() && run->parsed()) ra.patterns_not_found = located.not_found_message();
  if (patterns_dir.empty() && !run->parsed() && !info->parsed() && !hist->parsed() && !diff->parsed() &&
      !bundle->parsed() && !reason->parsed() &&
      !fleet->parsed())
    return config_error(located.not_found_message());
  try {
    if (run->parsed()) {
      ra.seed_given = run->count("--seed") > 0;
      ra.cpuset_given = run->count("--cpuset") > 0;
      ra.devices_given = run->count("--devices") > 0;
      ra.program = argv[0];
      return cmd_run(ra, args, patterns_dir);
    }
    if (list->parsed()) return cmd_list(la, patterns_dir);
    if (info->parsed()) return cmd_info(located, info_format == "json");
    if (golden->parsed()) {
      std::vector<int> cpus;
      if (const std::string err = choose_cpus(golden->count("--cpuset") > 0, ga.cpuset, cpus); !err.empty())
        return usage_error(err);
      if (installed_patterns_dir(patterns_dir) && !ga.force)
        return usage_error(
            fmt::format("{} is the installed pattern directory: golden would replace the goldens "
                        "the package shipped; give --patterns DIR (a copy) or --force",
                        patterns_dir));
      if (cpus.size() < 2)  // the two passes must run on different CPUs to be independent
        return usage_error(fmt::format("golden computes every case twice, on two different CPUs: {} gives one",
                                       golden->count("--cpuset") > 0 ? "--cpuset" : "this machine"));
      return cmd_golden(patterns_dir, cpus);
    }
    if (verify->parsed()) return cmd_verify(patterns_dir, verify_accept);
    if (consensus->parsed()) return cmd_consensus(ca, patterns_dir);
    if (record->parsed()) return cmd_record(rec, args, patterns_dir);
    if (hist->parsed()) return cmd_history(ha);
    if (diff->parsed()) return cmd_diff(da);
    if (bundle->parsed()) return cmd_bundle(ba, located);
    if (reason->parsed()) return cmd_reason(reason_report);
    if (fleet->parsed()) return cmd_fleet(fa, patterns_dir);
  } catch (const std::exception& e) {
    say_err("sdcscreen: error: {}\n", e.what());
    if (run->parsed() && ra.npd) {  // the line the screen did not print, and the code its supervisor takes
      say("{}\n", npd_line_for(std::string("Unknown: error: ") + e.what()));
      std::fflush(stdout);
      activity::publish_completion(EXIT_INCONCLUSIVE);
    }
    return EXIT_INCONCLUSIVE;
  }
  return EXIT_USAGE;
}
