// What the HTML report's unit tests share.
#pragma once

#include <cstddef>
#include <string>

namespace sdc::test {

// How many times `what` occurs in `text`, occurrences not overlapping.
inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

}  // namespace sdc::test
