#include "src/util/int_list.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <set>

namespace sdc {

std::string parse_index_list(const std::string& text, const char* noun, int limit, std::vector<int>& out_list) {
  std::set<int> out;
  if (text.empty()) return fmt::format("empty {} list", noun);
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    if (item.empty()) return fmt::format("empty item in {} list '{}'", noun, text);
    const size_t dash = item.find('-');
    auto number = [&](const std::string& s, int& v) {
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
      v = std::stoi(s);
      return v < limit;
    };
    int lo, hi;
    if (dash == std::string::npos) {
      if (!number(item, lo)) return fmt::format("'{}' is not a {} number (0..{})", item, noun, limit - 1);
      hi = lo;
    } else {
      if (!number(item.substr(0, dash), lo) || !number(item.substr(dash + 1), hi))
        return fmt::format("'{}' is not a {} range like 0-3", item, noun);
      if (hi < lo) return fmt::format("{} range '{}' runs backwards", noun, item);
    }
    for (int c = lo; c <= hi; ++c) out.insert(c);
    pos = comma + 1;
  }
  out_list.assign(out.begin(), out.end());
  return "";
}

std::string parse_cpu_list(const std::string& text, std::vector<int>& cpus) {
  return parse_index_list(text, "CPU", CPU_SETSIZE, cpus);
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return s;
}

}  // namespace sdc
