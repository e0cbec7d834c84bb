// The progress line of `sdcscreen run` on a terminal: one line rewritten in place with "\r\033[K". A line
// longer than the terminal wraps, and the carriage return then goes back to the start of its last part
// only: every update would leave a stale line behind. So the line is cut to the terminal's width.
#pragma once

#include <sys/ioctl.h>

#include <cstdlib>
#include <string>

namespace sdc {

// The columns a progress line may use: the terminal's (tty_columns, 0 when unknown), else $COLUMNS (env,
// may be null), else 80.
inline int progress_columns(int tty_columns, const char* env) {
  if (tty_columns > 0) return tty_columns;
  if (env) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0 && v < 100000) return static_cast<int>(v);
  }
  return 80;
}

// The columns of the terminal behind fd, read at each update (the terminal may be resized).
inline int terminal_columns(int fd) {
  struct winsize w {};
  const int tty = ioctl(fd, TIOCGWINSZ, &w) == 0 ? w.ws_col : 0;
  return progress_columns(tty, std::getenv("COLUMNS"));
}

// line cut to columns - 1 characters (the last column stays free: some terminals wrap on writing it).
// Counts UTF-8 code points, never cuts one in two; line holds no escape sequences.
inline std::string fit_progress_line(const std::string& line, int columns) {
  const size_t room = columns > 1 ? static_cast<size_t>(columns - 1) : 0;
  size_t shown = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (shown == room) return line.substr(0, i);
    ++shown;
  }
  return line;
}

}  // namespace sdc
