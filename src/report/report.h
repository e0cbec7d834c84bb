// Reports: one RunResult, several renderings. Text for people, JSON for machines (docs/report.schema.json).
#pragma once

#include <string>

#include "src/core/result.h"
#include "src/util/host_facts.h"  // HostInfo, host_info(), tool_version()
#include "src/core/unit_name.h"

namespace sdc {

// 2: GPUs (devices, SM units, injection device); 3: judged_by, engine; 4: crash; 5: per-unit bit signatures;
// 6: per-tile digests (run --digests)
// 7: throughput; 8: retest (--retest-on-failure) and the drills' persist; 9: GPU retests, tile_grid;
// 10: throughput from the probe (throughput.probe, each unit's rate, spread, rounds, failed)
// 11: host.identity (CPU, firmware, board, kernel) and host.telemetry (counters before and after, events)
// 12: GPU memory temperature, CPU temperatures sampled during the run; 13: weakened_by (what weakened the verdict)
// 14: drain_reason; reproduce_left_out (the options the reproduce line leaves out)
// 15: failures_by_iteration of tests (every differing element and failing tile per iteration); a unit object
// names its GPU "gpu" (was "device"; the Prometheus labels' keys), a miscompare unit of kind gpu, the test
// result not_applicable and summary.not_applicable; 16: injections' fault kinds, value64, warp/lane, replay_metrics;
// 17: int32 miscompares; 18: signatures in the format of the family's values (bit_flips.format: fp32, binary64 over
// 64 bits, int32 without fields, its distance the difference: diff= in the string), and an injection's target
// memory (the memory test's region) with its pass; 19: replay_failure_modes of tests (level 3's trajectory
// classified), level 3's per-step param_distance among the replay metrics; 20: level 1's replay metrics (per
// submodule) and level 2's whole-model ratio (site "grad model"), level 12 over its case's steps; 21:
// failed_tile_ids of tests (every failing tile with element values, which the HTML tile map draws)
constexpr int REPORT_SCHEMA_VERSION = 21;

// The training-step replay's failing site from a miscompare's element name (a family with Family::replay:
// "replica 3: L1 layer1.mlp.down.forward mb 0 out 0 digest.lo"): "L1 layer1.mlp.down.forward", "L2 grad
// embed", "L3 step 5"; "" for an element of any other family. is_replay_family: the family id names such a
// family in this build's table.
bool is_replay_family(const std::string& family);
// Whether a difference in the family's outputs reads as a bit signature and a flipped-bit histogram: not for a
// training-step replay (its slots are digests and metrics) nor for a family whose outputs are records
// (Family::record_outputs: the memory test); their flipped bits say nothing about the hardware.
bool has_bit_signature(const std::string& family);
std::string replay_site(const std::string& element_name);
// A replay metric's name as its slot's element name ends: "L2 grad embed mismatch_severity", "L3 final loss_spike".
std::string replay_metric_name(const ReplayMetric& m);
// The text report's lines of one unit's replay metrics (report_replay.cpp): each metric by name and value, a
// per-step series summarized (its step count, first departure, largest and last), and the failure mode.
std::string replay_metric_lines(const TestResult& t, int unit);

std::string render_text(const RunResult& r, const HostInfo& host);
std::string render_json(const RunResult& r, const HostInfo& host);  // report_json.cpp
// A unit's verdict word: crash, fail (a tile it computed miscompared), hung, pass, or idle (it computed none).
const char* unit_result(const UnitResult& u);
// A 32-bit pattern as the reports print it: 0x0000abcd.
std::string hex32(uint32_t v);
// A binary64 pattern as the reports print it: 0x3ff0000000000000.
std::string hex64_bits(uint64_t v);
// A command line as a shell would read it back.
std::string shell_join(const std::vector<std::string>& argv);

// The reproduce line of a run: `program run` and the options that decide what runs (selection, profile, seed,
// drills, backend, devices, CPUs, budget, patterns), with --seed when the tool drew it, and --history none;
// the options of outputs and state (-o, --output-format, -q, --html, --prometheus, --npd, --history,
// --lock-file, --force, --digests) left out, named in left_out. Pasted, it replays the run without touching
// the failing run's report, the node's history or another screen's lock.
struct ReproduceLine {
  std::string command;
  std::vector<std::string> left_out;
};
// argv: the command line (argv[0] the program's name, argv[1] the subcommand); program: the name it was
// invoked by; seed: the seed to add ("" when the command line gives it).
ReproduceLine reproduce_line(const std::vector<std::string>& argv, const std::string& program,
                             const std::string& seed);
// The command that screens one failing unit alone with the burn-in profile: a CPU by --cpuset, a GPU (or the GPU
// of an SM) by --devices; the run's --patterns and --max-memory kept, and, like the reproduce line, no output or
// state option, with --history none: safe to paste on the node.
std::string retest_line(const std::vector<std::string>& argv, const std::string& program, const UnitName& unit);
// The text report's "next:" lines (report_next.cpp): per failing unit of a failed screen (a CPU, or a GPU with
// its failing SMs) what to do now: drain, the retest line, and replace or RMA when the retest found the fault
// persistent; "" when the screen did not fail.
std::string next_steps_text(const RunResult& r);

}  // namespace sdc

namespace sdc {

// node_exporter textfile: gauges only, bounded labels (profile, logical CPU, family), no timestamps.
// previous is the file's old content (may be empty): the last success time carries over from it when
// this run did not pass.
std::string render_prometheus(const RunResult& r, const std::string& previous);
// node-problem-detector custom plugin: one line of at most NPD_LINE_MAX characters (its max_output_length).
constexpr size_t NPD_LINE_MAX = 80;
std::string render_npd_line(const RunResult& r);
// Any text made into a plugin line: control characters blanked, at most 80 characters.
std::string npd_line_for(std::string text);
// The NPD exit status: 0 OK, 1 NonOK, 2 Unknown.
int npd_exit_code(const RunResult& r);

}  // namespace sdc
