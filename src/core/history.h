// A node's screening history: one compact JSON line per screen, appended to DIR/history.jsonl by
// `run --history DIR`, read by `sdcscreen history DIR` (per unit: screens, failures, first and last
// failure, flapping) and by the resume policy the Slurm health check and sweep apply to a node drained
// for silent data corruption.
//
// Why a history at all: an intermittent fault passes most screens. Resuming a drained node after one clean
// screen puts it back into production on the fault's first quiet hour, and the next training run pays.
// So a node drained for SDC comes back only after enough clean screens of enough depth, counted here, and
// never when the same unit failed twice.
//
// A line (keys in this order; `v` is the format's version):
//   {"v":1,"time":"2026-11-23T19:20:00Z","unix":1795...,"run":"9f0c...(32 hex)","report_xxh3_128":"4be1...",
//    "host":"node1","profile":"standard","selection":"profile","drill":false,"exit":1,"verdict":"fail",
//    "screened":{"cpu":"0-63","gpu":"0-7"},"units":{"cpu 3":"fail","gpu 2":"crash"},
//    "failures":[{"unit":"cpu 3","case":"gemm_f32.uniform_1024","family":"gemm_f32","result":"fail",
//                 "drill":false,"package":0,"core":3}],
//    "microcode":"0xa20102b","report":"/var/log/sdc.json",
//    "gpus":{"gpu 2":{"uuid":"GPU-8c2f...","serial":null,"pci":"0000:41:00.0"}}}
//   run:       the screen's run id, 128 random bits in hex, drawn once per screen (the screens a crash
//              supervisor forks share it): a line copied twice is one screen, counted once;
//   report_xxh3_128: the XXH3-128 of the report the screen rendered (-o's file, or what it printed);
//   drill:     the screen injected faults (--inject): never a clean screen;
//   selection: "profile" when the run screened its profile's whole battery, "custom" with --enable or
//              --disable (such a run never counts as a screen of the profile);
//   screened:  the units that did work in this screen (logical CPUs; GPUs by CUDA ordinal);
//   units:     every screened unit whose result was not pass: fail, crash, hung, error;
//   failures:  one entry per failed or crashed test and unit (a GPU's failing SMs in "sms", the bit
//              signatures of its miscompares in "signatures", when elements could be compared, and the
//              retest's classification of a CPU in "class": persistent, intermittent, not reproduced), and
//              whether an --inject drill aimed at that case and unit made it ("drill"): a failure on a unit
//              no drill targeted is a real one, whatever else the run injected (lines without the key take
//              the line's "drill").
//   microcode: the host CPUs' microcode revision when it could be read (absent otherwise);
//   report:    the report file the screen wrote with -o, absolute (`sdcscreen bundle` collects the last ones);
//   gpus:      who each screened GPU is: its UUID, its serial (null until a reader supplies it) and PCI bus id.
//   weakened:  present only when something weakened the screen's verdict (src/core/weakened.h): the names of
//              the switches (SDCSCREEN_SUPERVISE, --accept-patterns, ...); such a screen is never a clean one
//              for the resume policy.
//
// Identity: a unit's record follows the part, not its number. A GPU is keyed by its UUID, so a GPU that
// CUDA renumbered keeps its record and a GPU replaced at the same ordinal starts a new one; a CPU is keyed
// by host and logical CPU (its package and core are recorded with each failure, the microcode with each
// screen). A microcode update does not start a new record: a core that failed twice stays held whatever
// firmware it runs now (the change is shown beside its failures, so a vendor sees which revision failed).
// Lines written before identity was recorded (no "gpus") name GPUs by ordinal only: such a GPU is taken to
// be the one the next line with identity names at that ordinal (so a swap before the upgrade merges two
// GPUs, as before, and never splits one), or stays keyed by ordinal when no later line says.
// A failed GPU whose ordinal a different GPU holds later, and that is never seen again, was replaced: its
// failures stay on record but no longer hold the node.
// A screen that started and never wrote its line (a full disk, a crash in its reporting, a kill) must not
// lose its failure: each screen creates DIR/unrecorded-RUN before its first test, holds an advisory lock on
// it while it runs, and removes it once its line is on disk. A marker nobody holds says a screen's line may
// be missing: the policy resumes nothing until an administrator checks the node and runs
// `sdcscreen history DIR --acknowledge`. Creating an empty file needs no data block, and the marker exists
// before the disk fills during the screen.
// An administrator's line after a repair: {"v":1,"time":...,"unix":...,"forget":"cpu 3"} (or "all", or a GPU's
// UUID): failures of that unit (the part that held that label last) before it no longer count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/core/result.h"

namespace sdc::history {

constexpr int FORMAT_VERSION = 1;
constexpr const char* FILE_NAME = "history.jsonl";

struct Failure {
  std::string unit, case_id, family, result;  // result: fail or crash
  std::vector<int> sms;                       // a GPU's failing SMs
  std::vector<std::string> signatures;        // the bit signatures (src/core/signature.h) of its miscompares
  std::string classification;                 // the retest's (--retest-on-failure): persistent, ...; "" if none
  int package = -1, core = -1;                // a CPU's place, -1 when not recorded
  bool drill = false;                         // an --inject drill on this case and unit made it
};

// Who a screened GPU is. serial stays "" (written null) until a reader that knows it supplies it.
struct GpuId {
  std::string uuid, serial, pci;
};

struct Record {
  std::string time;  // ISO 8601, UTC
  double unix = 0;
  std::string host, profile, selection, verdict;
  bool drill = false;   // the screen injected faults (its failures say which are drills)
  std::string run_id;   // 32 hex digits; "" in lines written before run ids
  std::string report_digest;  // XXH3-128 of the rendered report, "" when none
  int exit = 0;
  std::vector<std::string> screened;         // unit labels: "cpu 3", "gpu 0"
  std::map<std::string, std::string> units;  // unit -> fail | crash | hung | error (not pass)
  std::vector<Failure> failures;
  std::string microcode;              // the host CPUs' microcode revision, "" when not read
  std::string report;                 // the report -o wrote (an absolute path), "" when none
  std::map<std::string, GpuId> gpus;  // "gpu 0" -> who it is (GPUs with a UUID only)
  std::vector<std::string> weakened;  // what weakened the verdict (RunResult::weakened_by, names): never counts clean
  std::string forget;  // an administrator's forget line: a unit label or "all"; nothing else is set then
  bool failed(const std::string& unit) const;  // the unit failed or crashed in this screen
  bool failed_for_real(const std::string& unit) const;  // ... outside the drills: a failure the policy counts
};

// The record of one screen. full_profile: no --enable or --disable narrowed the profile's battery.
Record record_of(const RunResult& r, const std::string& host, bool full_profile);
std::string to_line(const Record& rec);         // one line, without the newline
std::string new_run_id();                       // 128 random bits, 32 lowercase hex digits
Record forget_record(const std::string& unit);  // now, for `history --forget UNIT`

// The history file of DIR; "" on success or what is wrong (the directory cannot be made or written).
std::string prepare_dir(const std::string& dir);
// Where `run` records a screen without --history: $SDCSCREEN_HISTORY when set ("none": nowhere), else
// DEFAULT_DIR when running as root (the node's own record: a person triaging with sudo leaves one too),
// else nowhere (""). --history none records nowhere whatever this says.
std::string default_dir();
constexpr const char* DEFAULT_DIR = "/var/lib/sdcscreen";
// Appends one line (under an advisory lock on DIR/.history.lock); past MAX_LINES the file is rewritten
// atomically, keeping the newest KEEP_LINES lines and every older failure and forget line (a unit's
// first failure must not age out before its second). Throws FileError naming the file.
void append(const std::string& dir, const Record& rec);
constexpr size_t MAX_LINES = 4000, KEEP_LINES = 2000;

// The marker of a screen whose line is not written yet (see above): DIR/unrecorded-RUN.
constexpr const char* PENDING_PREFIX = "unrecorded-";
// Creates it and locks it: the returned descriptor holds the lock (keep it open for the whole screen; forked
// children share it). Returns -1 and sets err when it cannot be created.
int begin_pending(const std::string& dir, const std::string& run_id, std::string& err);
// Removes it (after the line is on disk, or when the screen never started).
void end_pending(const std::string& dir, const std::string& run_id);
// The markers of DIR into h.unrecorded (none holds them) and h.in_progress (a running screen does); load() calls it.
struct History;
void read_pending(const std::string& dir, History& h);
// `history --acknowledge`: removes the markers no running screen holds; returns their names.
std::vector<std::string> acknowledge(const std::string& dir);

struct History {
  std::string path;
  std::vector<Record> records;
  bool torn_tail = false;  // the last line had no newline (a write cut short): ignored
  size_t duplicates = 0;   // lines whose run id an earlier line has (a copied line): ignored
  std::vector<std::string> unrecorded;  // markers of screens that ended without their line: "NAME (since TIME)"
  size_t in_progress = 0;               // markers a running screen holds
};
// Reads DIR/history.jsonl (a line whose run id an earlier one has is counted once) and DIR's markers.
// Returns "" or one line naming the file, the line and the problem (exit 78). A missing file is an empty
// history with exists = false.
std::string load(const std::string& dir, History& h, bool& exists);

// The resume policy for a node drained for SDC.
struct PolicyConfig {
  int clean_screens = 3;                 // consecutive clean screens after the last failure
  std::string min_profile = "standard";  // of at least this depth (boot < standard < burnin)
};
enum class Decision {
  resume,     // every failure on record is followed by enough clean screens
  hold,       // some clean screens remain to be done
  never,      // a unit failed in two screens: only a repair (and `history --forget UNIT`) brings it back
  no_record,  // no failure on record (outside drills): the policy cannot vouch for the node
  unrecorded, // a screen ended without its line: a failure may be missing until an administrator acknowledges
};
struct ResumeVerdict {
  Decision decision = Decision::no_record;
  std::string short_text;  // for a Slurm drain reason: "2 clean standard screens to resume"
  std::vector<std::string> details;
  int remaining = 0;  // clean screens still needed (hold)
};
// Rank of a profile name; -1 for a name that is not boot, standard or burnin.
int profile_rank(const std::string& profile);
ResumeVerdict decide(const History& h, const PolicyConfig& cfg);

// The identity key of each unit label of each record (same order as h.records): a GPU's "uuid GPU-...", a
// CPU's "HOST cpu N", or the label itself for a GPU no line identifies. Forget lines map nothing.
std::vector<std::map<std::string, std::string>> identity_keys(const History& h);

// "cpu 3" < "cpu 12" < "gpu 0": by kind, then by number.
bool unit_less(const std::string& a, const std::string& b);
// Failed GPUs that were replaced: identity key -> its successor's key at the same ordinal (a UUID the history
// had never seen before, where the failed one is never seen again). Used by decide() and summarize().
std::map<std::string, std::string> replaced_gpus(const History& h,
                                                 const std::vector<std::map<std::string, std::string>>& keys);
// "gpu 0 (GPU-8c2f...)" for a GPU's key, the label alone for a CPU.
std::string display(const std::string& label, const std::string& key);

struct FailureAt {
  std::string time, case_id, family, microcode;
  std::vector<int> sms;
};

// Per unit (per identity), for `sdcscreen history`.
struct UnitSummary {
  std::string unit;                     // its label in the last screen that named it: "gpu 0"
  std::string id;                       // its identity key
  std::string uuid, serial, microcode;  // a GPU's, a CPU's host microcode at its last screen; "" unknown
  std::string replaced_by;              // a failed GPU's successor at its ordinal, when it was replaced
  std::vector<FailureAt> failure_list;
  int screens = 0, failures = 0;
  std::string first_failure, last_failure;   // ISO times, "" when none
  int flaps = 0;                             // times the unit failed again after passing since a failure
  std::vector<std::string> families;         // of its failures
  std::vector<std::string> signatures;       // of its failures, distinct
  std::vector<std::string> classifications;  // the retests' of its failures, distinct
};
std::vector<UnitSummary> summarize(const History& h);

}  // namespace sdc::history
