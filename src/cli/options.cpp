#include "options.h"

#include <fmt/format.h>

#include <cctype>

namespace sdc::cli {

std::string parse_duration(const std::string& text, double& seconds) {
  const std::string what = fmt::format("'{}' is not a duration like 45s, 5m, 1h30m or 500ms", text);
  if (text.empty() || text.size() > 32) return what;
  double total = 0;
  size_t i = 0;
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
    if (unit == "ms")
      total += v / 1000;
    else if (unit == "s")
      total += v;
    else if (unit == "m")
      total += v * 60;
    else if (unit == "h")
      total += v * 3600;
    else
      return what;
  }
  if (!(total > 0)) return fmt::format("duration '{}' must be positive", text);
  if (total > 30 * 24 * 3600.0) return fmt::format("duration '{}' is longer than 30 days", text);
  seconds = total;
  return "";
}

}  // namespace sdc::cli
