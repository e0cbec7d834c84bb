// A time as the reports and the history write it: ISO 8601 in UTC, to the second ("2026-11-23T19:20:00Z").
#pragma once

#include <ctime>
#include <string>

namespace sdc {

inline std::string iso_time(double unix_s) {
  const auto t = static_cast<time_t>(unix_s);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace sdc
