#include "src/host/cpu_sampler.h"

#include <fmt/format.h>

#include <chrono>

#include "src/core/result.h"

namespace sdc::host {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::atomic<int> CpuTemperatureSampler::live_{0};

CpuTemperatureSampler::CpuTemperatureSampler(HostRoot root, HostTelemetry& t, double interval_s)
    : root_(std::move(root)), t_(t) {
  ++live_;
  clock_.start(interval_s, [this] { sample_once(); });
}

CpuTemperatureSampler::~CpuTemperatureSampler() { stop(); }

int CpuTemperatureSampler::live() { return live_.load(); }

void CpuTemperatureSampler::stop() {
  if (clock_.stop()) --live_;
}

void CpuTemperatureSampler::sample_once() {
  const double t = now_unix();
  const std::optional<Temperature> h = hottest(read_cpu_temperatures(root_));
  if (!h) return;  // no CPU sensor: nothing is concluded (the before reading says why)
  t_.samples.push_back({t, *h});
  if (!t_.peak || h->celsius > t_.peak->hottest.celsius) t_.peak = t_.samples.back();
}

void judge_cpu_tests(RunResult& r, double max_c) {
  if (max_c <= 0) return;
  std::vector<CpuTemperatureSample> readings = r.host.samples;
  for (const TelemetrySnapshot* x : {&r.host.before, &r.host.after})
    if (x->taken)
      if (const std::optional<Temperature> h = hottest(x->temperatures)) readings.push_back({x->unix_time, *h});
  for (TestResult& t : r.tests) {
    if (t.device_index >= 0 || t.ran_unix.empty()) continue;
    // The readings within a sampling interval (1 s, and slack for the reading itself) of a round it ran.
    const Temperature* hot = nullptr;
    for (const CpuTemperatureSample& s : readings)
      for (const auto& [from, to] : t.ran_unix)
        if (s.unix_time >= from - 1.5 && s.unix_time <= to + 1.5) {
          if (!hot || s.hottest.celsius > hot->celsius) hot = &s.hottest;
          break;
        }
    if (!hot || hot->celsius <= max_c) continue;
    const std::string why = fmt::format("CPU sensor {} {} at {:.0f} C while it ran, above --max-temperature {:.0f} C: "
                                        "its result cannot be trusted",
                                        hot->sensor, hot->label, hot->celsius, max_c);
    if (t.verdict == Verdict::pass) {
      t.verdict = Verdict::error;
      t.reason = why;
    } else {
      t.notes.push_back(why);
    }
  }
}

}  // namespace sdc::host
