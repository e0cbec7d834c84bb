// Writes to the standard streams that never throw: a full disk, a closed pipe or a stderr on /dev/full loses
// the text, never the verdict. fmt::print throws on a failed write, which aborted the program (exit 134)
// or turned a progress line into an inconclusive test; the exit code is decided by the screen alone.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace sdc {

// s with its control characters in a visible form (\n, \t, \x1b, a C1 control as \u0085; a backslash as \\):
// text from outside (a report's host name, a path) never moves the cursor or sends an escape sequence to a
// terminal. Distinct strings stay distinct.
std::string visible(const std::string& s);

// Writes s to f and flushes; a failure is ignored (and clears the stream's error for the next write).
void write_text(std::FILE* f, std::string_view s) noexcept;

template <class... T>
void say(fmt::format_string<T...> format, T&&... args) {
  write_text(stdout, fmt::format(format, std::forward<T>(args)...));
}

template <class... T>
void say_err(fmt::format_string<T...> format, T&&... args) {
  write_text(stderr, fmt::format(format, std::forward<T>(args)...));
}

}  // namespace sdc
