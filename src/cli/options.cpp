#include "options.h"

#include <fmt/format.h>

#include <cctype>

namespace sdc::cli {

// A bare number is seconds ("45"); otherwise number-unit pairs in decreasing units, each unit once
// ("1h30m", "90s", "500ms"): "1h1h" and "1s5m" are mistakes, not sums.
std::string parse_duration(const std::string& text, double& seconds) {
  const std::string what = fmt::format("'{}' is not a duration like 45s, 5m, 1h30m, 500ms or 45 (seconds)", text);
  if (text.empty() || text.size() > 32) return what;
  double total = 0;
  size_t i = 0;
  int last_rank = 4;  // h 3, m 2, s 1, ms 0: each pair's unit must be smaller than the one before
  while (i < text.size()) {
    const size_t num_start = i;
    bool dot = false;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
      dot = dot || text[i] == '.';
      ++i;
    }
    if (i == num_start || (i == num_start + 1 && dot)) return what;
    const double v = std::stod(text.substr(num_start, i - num_start));
    const size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string unit = text.substr(unit_start, i - unit_start);
    const bool bare = unit.empty() && num_start == 0 && i == text.size();
    const int rank = bare ? 1 : unit == "ms" ? 0 : unit == "s" ? 1 : unit == "m" ? 2 : unit == "h" ? 3 : -1;
    if (rank < 0 || rank >= last_rank) return what;
    last_rank = rank;
    total += v * (rank == 0 ? 0.001 : rank == 1 ? 1.0 : rank == 2 ? 60.0 : 3600.0);
  }
  if (!(total > 0)) return fmt::format("duration '{}' must be positive", text);
  if (total > 30 * 24 * 3600.0) return fmt::format("duration '{}' is longer than 30 days", text);
  seconds = total;
  return "";
}

}  // namespace sdc::cli
