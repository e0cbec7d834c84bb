// A time as the reports and the history write it: ISO 8601 in UTC, to the second ("2026-11-23T19:20:00Z"),
// and back.
#pragma once

#include <cstdio>
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

// The inverse of iso_time: "YYYY-MM-DDTHH:MM:SSZ" exactly, fields in range. Returns false on anything else.
inline bool parse_iso_time(const std::string& text, double& unix_s) {
  if (text.size() != 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':' ||
      text[19] != 'Z')
    return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18})
    if (text[i] < '0' || text[i] > '9') return false;
  struct tm tm {};
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec) != 6)
    return false;
  static constexpr int DAYS[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > DAYS[tm.tm_mon - 1] ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return false;
  const int year = tm.tm_year;
  if (tm.tm_mon == 2 && tm.tm_mday == 29 && !(year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))) return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  unix_s = static_cast<double>(timegm(&tm));
  return true;
}

}  // namespace sdc
