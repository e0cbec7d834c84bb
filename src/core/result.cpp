#include "src/core/result.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/core/unit_name.h"

namespace sdc {

const char* result_name(const TestResult& t) {
  return t.verdict == Verdict::skip && t.not_applicable ? "not_applicable" : verdict_name(t.verdict);
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::error: return "error";
    case Verdict::skip: return "skip";
    case Verdict::crash: return "crash";
  }
  return "?";
}

const char* UnitRetest::classification() const {
  if (same_seed_runs == 0) return "not retested";
  if (same_seed_failed == same_seed_runs && same_bits == same_seed_runs) return "persistent";
  return same_seed_failed > 0 ? "intermittent" : "not reproduced";
}

int UnitRetest::input_dependent() const {
  if (same_seed_failed == 0 || fresh_seed_runs == 0) return -1;
  return fresh_seed_failed == 0 ? 1 : 0;
}

// Fail closed: a miscompare anywhere, or a unit that hung while others finished, is 1; otherwise anything that did not run (an error, a skip, an
// injection that never fired, nothing selected) is 2; 0 only when every selected test ran and passed.
// A miscompare wins over an interruption too: a signal after a unit computed wrong bits must not turn a
// failing node into an interrupted one (the report still says it was interrupted). An uncorrected hardware
// error during the run (an EDAC memory controller's ue_count, a machine-check exception) is a failure of the
// node as well, even when every test passed: the hardware said itself that it lost data.
int RunResult::exit_code() const {
  for (const TestResult& t : tests)
    if (t.verdict == Verdict::fail || t.verdict == Verdict::crash) return EXIT_FAIL;
  if (host.any_fatal()) return EXIT_FAIL;
  if (nvml.any("failure")) return EXIT_FAIL;  // a GPU's hardware said it failed (ECC, hardware Xid)
  // A unit the watchdog gave up on while its peers finished failed, as a crashed one does: a CPU that
  // wedges must be drained, not left to hang the next job. Every unit hung: the node, not a unit (2).
  const auto hung = std::count_if(units.begin(), units.end(), [](const UnitResult& u) { return u.hung; });
  if (hung > 0 && static_cast<size_t>(hung) < units.size()) return EXIT_FAIL;
  if (interrupted_by > 0) return 128 + interrupted_by;
  // The deadline ended the run: what it selected did not all run (the rest of the rounds, the retests, the
  // probe), so no miscompare is inconclusive, never a pass, like a timeout.
  if (tests.empty() || !errors.empty() || watchdog_fired || deadline_reached) return EXIT_INCONCLUSIVE;
  if (nvml.any("error")) return EXIT_INCONCLUSIVE;  // the driver killed work of this run (Xid 13, 31, 43)
  bool any_pass = false;
  for (const TestResult& t : tests) {
    if (t.verdict == Verdict::skip && t.not_applicable) continue;
    if (t.verdict != Verdict::pass) return EXIT_INCONCLUSIVE;
    any_pass = true;
  }
  if (!any_pass) return EXIT_INCONCLUSIVE;  // nothing ran at all
  for (const Injection& i : injections)
    if (!i.fired) return EXIT_INCONCLUSIVE;
  if (fail_slow && any_slow()) return EXIT_SLOW;
  return EXIT_PASS;
}

bool RunResult::any_slow() const {
  return std::any_of(throughput.begin(), throughput.end(), [](const UnitThroughput& u) { return u.slow; });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

// Whether the unit the probe calls `name` ("cpu 3", "gpu 1") failed in this run: a miscompare, a crash or
// a hang on that CPU, or on any SM of that GPU.
bool unit_failed(const RunResult& r, const std::string& name) {
  const auto bad = [](const UnitResult& u) { return u.failed_tiles > 0 || u.crash_signal != 0 || u.hung; };
  for (const UnitResult& u : r.units) {
    if (!bad(u)) continue;
    const std::string n = u.is_sm() && static_cast<size_t>(u.device) < r.devices.size()
                              ? unit_text(UnitName::of_gpu(r.devices[static_cast<size_t>(u.device)].index))
                              : u.is_sm() ? "" : unit_text(UnitName::of_cpu(u.cpu.cpu));
    if (n == name) return true;
  }
  return false;
}

}  // namespace

void assess_throughput(RunResult& r) {
  r.throughput.clear();
  const ProbeRun& p = r.probe;
  const size_t n = p.units.size();
  if (n < 2 || p.reps == 0) return;  // no peer to compare with
  std::vector<std::vector<double>> rel(n);  // per unit, its relative rate in each round
  std::vector<std::vector<double>> rate(n);
  for (const std::vector<double>& round : p.seconds) {
    if (round.size() != n) continue;
    std::vector<double> rates(n);
    for (size_t i = 0; i < n; ++i) rates[i] = round[i] > 0 ? static_cast<double>(p.reps) / round[i] : 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> peers;
      for (size_t j = 0; j < n; ++j)
        if (j != i) peers.push_back(rates[j]);
      const double m = median(peers);
      if (m <= 0 || rates[i] <= 0) continue;
      rel[i].push_back(rates[i] / m);
      rate[i].push_back(rates[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (rel[i].empty()) continue;
    UnitThroughput u;
    u.unit = p.units[i];
    u.rate = median(rate[i]);
    u.relative = median(rel[i]);
    u.low = *std::min_element(rel[i].begin(), rel[i].end());
    u.high = *std::max_element(rel[i].begin(), rel[i].end());
    u.rounds = static_cast<int>(rel[i].size());
    u.below_floor =
        static_cast<int>(std::count_if(rel[i].begin(), rel[i].end(), [&r](double x) { return x < r.throughput_floor; }));
    u.failed = unit_failed(r, u.unit);
    u.slow = !u.failed && u.rounds >= PROBE_MIN_ROUNDS && u.relative < r.throughput_floor &&
             3 * u.below_floor >= 2 * u.rounds;
    r.throughput.push_back(u);
  }
  const auto number = [](const std::string& u) { return std::stol(u.substr(u.rfind(' ') + 1)); };
  std::sort(r.throughput.begin(), r.throughput.end(), [&number](const UnitThroughput& a, const UnitThroughput& b) {
    return a.unit.substr(0, 3) != b.unit.substr(0, 3) ? a.unit < b.unit : number(a.unit) < number(b.unit);
  });
}

bool RunResult::masked(const Injection& i) const {
  if (!i.fired || i.hang || i.crash) return false;
  for (const TestResult& t : tests)
    if (t.id == i.case_id && t.verdict == Verdict::fail) return false;
  return true;
}

void RunResult::flag_masked_injections() {
  for (const Injection& i : injections)
    if (masked(i))
      errors.push_back("injection " + i.spec +
                       " fired, masked: it changed no output of the case, so the drill proves nothing");
}

void RunResult::flag_nothing_applicable() {
  if (tests.empty() || !errors.empty() || interrupted_by > 0) return;
  if (!std::all_of(tests.begin(), tests.end(),
                   [](const TestResult& t) { return t.verdict == Verdict::skip && t.not_applicable; }))
    return;
  errors.push_back(fmt::format(
      "nothing ran: {} not applicable on the {} backend{} (each test says why); select cases that run there",
      tests.size() == 1 ? std::string("the one selected case is")
                        : fmt::format("all {} selected cases are", tests.size()),
      backend, backend == "cuda" ? " and its GPUs" : ""));
}

const char* verdict_of_exit_code(int64_t code) {
  switch (code) {
    case EXIT_PASS: return "pass";
    case EXIT_FAIL: return "fail";
    case EXIT_INCONCLUSIVE: return "error";
    case EXIT_SLOW: return "slow";
    default: return code > 128 && code < 256 ? "interrupted" : "";
  }
}

const char* RunResult::exit_word() const { return verdict_of_exit_code(exit_code()); }

}  // namespace sdc
