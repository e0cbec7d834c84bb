// The text report's lines of a training-step replay's metrics: one line per metric, and a per-step series
// (level 3's losses and parameter distances: the metrics whose site is "step S") summarized in one line that
// says how many steps it has and gives its first departure from the reference, its largest and its last, so
// that a long trajectory neither floods the report nor loses a step silently (the JSON report has every one).
#include "src/report/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace sdc {
namespace {

bool is_series(const ReplayMetric& m) { return m.site.rfind("step ", 0) == 0; }

// How far a value lies from its reference, to find the largest departure: relative where the reference is
// not 0, absolute where it is; a value that is not a number departs the most.
double departure(const ReplayMetric& m) {
  const double v = m.value, r = m.reference;
  const double d = r == 0 ? std::fabs(v - r) : std::fabs(v - r) / std::fabs(r);
  return std::isnan(d) ? INFINITY : d;
}

std::string point(const ReplayMetric& m) {
  return m.value == m.reference ? fmt::format("{} = {}", m.site, m.value)
                                : fmt::format("{} = {} (reference {})", m.site, m.value, m.reference);
}

}  // namespace

std::string replay_metric_lines(const TestResult& t, int unit) {
  std::string s;
  std::map<std::string, std::vector<const ReplayMetric*>> series;  // "L3 loss" -> its steps, in step order
  std::vector<std::string> order;
  for (const ReplayMetric& m : t.replay_metrics) {
    if (m.unit != unit) continue;
    if (!is_series(m)) {
      s += fmt::format("    {} = {} (reference {})\n", replay_metric_name(m), m.value, m.reference);
      continue;
    }
    const std::string key = fmt::format("L{} {}", m.level, m.metric);
    if (!series.count(key)) order.push_back(key);
    series[key].push_back(&m);
  }
  for (const std::string& key : order) {
    const std::vector<const ReplayMetric*>& v = series[key];
    const ReplayMetric *first = nullptr, *max = v.front();
    for (const ReplayMetric* m : v) {
      if (!first && std::memcmp(&m->value, &m->reference, sizeof(float)) != 0) first = m;
      if (departure(*m) > departure(*max)) max = m;
    }
    s += fmt::format("    {} per step ({} steps): {}; largest departure {}; last {}\n", key, v.size(),
                     first ? "first departure " + point(*first) : std::string("every step the reference's"),
                     point(*max), point(*v.back()));
  }
  for (const ReplayFailureMode& f : t.replay_failure_modes)
    if (f.unit == unit) s += fmt::format("    failure mode {} (docs/families.md, \"Level 3's trajectory\")\n", f.mode);
  return s;
}

}  // namespace sdc
