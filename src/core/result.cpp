#include "result.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace sdc {

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

// Fail closed: a miscompare anywhere is 1; otherwise anything that did not run (an error, a skip, an
// injection that never fired, nothing selected) is 2; 0 only when every selected test ran and passed.
// A miscompare wins over an interruption too: a signal after a unit computed wrong bits must not turn a
// failing node into an interrupted one (the report still says it was interrupted).
int RunResult::exit_code() const {
  for (const TestResult& t : tests)
    if (t.verdict == Verdict::fail || t.verdict == Verdict::crash) return EXIT_FAIL;
  if (interrupted_by > 0) return 128 + interrupted_by;
  if (tests.empty() || !errors.empty() || watchdog_fired) return EXIT_INCONCLUSIVE;
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

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void assess_throughput(RunResult& r) {
  constexpr double MIN_BUSY_S = 0.005;
  constexpr int MIN_CASES = 3;
  std::map<std::string, std::vector<double>> rel;  // unit -> its relative rate, per comparable case
  const auto compare = [&rel](const std::vector<std::pair<std::string, double>>& rates) {
    if (rates.size() < 2) return;  // no peer
    for (size_t i = 0; i < rates.size(); ++i) {
      std::vector<double> peers;
      for (size_t j = 0; j < rates.size(); ++j)
        if (j != i) peers.push_back(rates[j].second);
      const double m = median(peers);
      if (m > 0) rel[rates[i].first].push_back(rates[i].second / m);
    }
  };
  std::map<std::string, std::vector<std::pair<std::string, double>>> gpu_rates;  // case -> (gpu, GFLOP/s)
  for (const TestResult& t : r.tests) {
    if (t.verdict != Verdict::pass && t.verdict != Verdict::fail) continue;
    if (t.device_index >= 0 && static_cast<size_t>(t.device_index) < r.devices.size()) {
      if (t.gflops > 0 && t.duration_s >= MIN_BUSY_S)
        gpu_rates[t.id].push_back(
            {fmt::format("gpu {}", r.devices[static_cast<size_t>(t.device_index)].index), t.gflops});
      continue;
    }
    std::vector<std::pair<std::string, double>> rates;
    bool enough = !t.unit_speed.empty();
    for (const UnitSpeed& u : t.unit_speed) {
      enough = enough && u.busy_s >= MIN_BUSY_S && u.tiles > 0;
      if (u.busy_s > 0) rates.push_back({fmt::format("cpu {}", u.unit), static_cast<double>(u.tiles) / u.busy_s});
    }
    if (enough) compare(rates);
  }
  for (const auto& [id, rates] : gpu_rates) compare(rates);
  r.throughput.clear();
  for (const auto& [unit, v] : rel) {
    UnitThroughput u;
    u.unit = unit;
    u.relative = median(v);
    u.cases = static_cast<int>(v.size());
    u.slow = u.cases >= MIN_CASES && u.relative < r.throughput_floor;
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

const char* RunResult::exit_word() const {
  switch (exit_code()) {
    case EXIT_PASS: return "pass";
    case EXIT_FAIL: return "fail";
    case EXIT_INCONCLUSIVE: return "error";
    case EXIT_SLOW: return "slow";
    default: return "interrupted";
  }
}

}  // namespace sdc
