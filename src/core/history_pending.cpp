// The markers of screens whose history line is not written yet (src/core/history.h): created and locked
// before a screen's first test, removed once its line is on disk; one left behind, unlocked, is a screen
// that ended without its line.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>

#include "src/util/iso_time.h"
#include "src/core/history.h"

namespace sdc::history {
namespace {

std::string pending_path(const std::string& dir, const std::string& run_id) {
  return dir + "/" + PENDING_PREFIX + run_id;
}

bool is_marker(const std::string& name) {
  const std::string prefix = PENDING_PREFIX;
  return name.size() == prefix.size() + 32 && name.rfind(prefix, 0) == 0 &&
         name.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
}

// The markers in DIR, sorted.
std::vector<std::string> markers(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = readdir(d))
    if (is_marker(e->d_name)) out.emplace_back(e->d_name);
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Whether a running screen holds the marker (it keeps an exclusive lock on it while it runs).
bool held(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool busy = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // drops the lock this took, if it took one
  return busy;
}

}  // namespace

std::string new_run_id() {
  std::random_device rd;  // the kernel's random source
  std::string id;
  for (int i = 0; i < 4; ++i) id += fmt::format("{:08x}", static_cast<uint32_t>(rd()));
  return id;
}

int begin_pending(const std::string& dir, const std::string& run_id, std::string& err) {
  const std::string path = pending_path(dir, run_id);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    err = fmt::format("--history: cannot create {}: {}", path, std::strerror(errno));
    return -1;
  }
  int locked;
  while ((locked = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (locked != 0) {
    err = fmt::format("--history: cannot lock {}: {}", path, std::strerror(errno));
    close(fd);
    unlink(path.c_str());
    return -1;
  }
  // What the marker is, for whoever finds it; the name and the lock are what count (a full disk may refuse these
  // bytes, never the empty file).
  const std::string text = fmt::format("a screen started at {} (pid {}) and has not written its line to {} yet\n",
                                       iso_time(static_cast<double>(std::time(nullptr))), getpid(), FILE_NAME);
  if (write(fd, text.data(), text.size()) < 0) {
  }
  return fd;
}

void end_pending(const std::string& dir, const std::string& run_id) { unlink(pending_path(dir, run_id).c_str()); }

void read_pending(const std::string& dir, History& h) {
  for (const std::string& name : markers(dir)) {
    const std::string path = dir + "/" + name;
    if (held(path)) {
      ++h.in_progress;
      continue;
    }
    struct stat st {};
    const std::string since = stat(path.c_str(), &st) == 0 ? iso_time(static_cast<double>(st.st_mtime)) : "?";
    h.unrecorded.push_back(fmt::format("{} (since {})", path, since));
  }
}

std::vector<std::string> acknowledge(const std::string& dir) {
  std::vector<std::string> removed;
  for (const std::string& name : markers(dir)) {
    const std::string path = dir + "/" + name;
    if (held(path)) continue;  // its screen is still running: it removes the marker itself
    if (unlink(path.c_str()) == 0) removed.push_back(path);
  }
  return removed;
}

}  // namespace sdc::history
