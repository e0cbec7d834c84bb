#include "run_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace sdc {

std::string RunLock::default_path() {
  if (geteuid() == 0) return "/run/sdcscreen/lock";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return fmt::format("{}/sdcscreen.lock", xdg);
  return fmt::format("/tmp/sdcscreen-{}.lock", geteuid());
}

std::string RunLock::acquire(const std::string& path, bool* busy) {
  *busy = false;
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) mkdir(path.substr(0, slash).c_str(), 0755);  // exists: fine
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return fmt::format("lock file {}: {}", path, std::strerror(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) return fmt::format("lock file {}: {}", path, std::strerror(err));
    *busy = true;
    const long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    return pid > 0 ? fmt::format("another screen is running (pid {}; lock {})", pid, path)
                   : fmt::format("another screen is running (lock {})", path);
  }
  const std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return fmt::format("lock file {}: cannot write: {}", path, std::strerror(errno));
  return "";
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);  // closing drops the flock; the file stays for the next run to reuse
}

}  // namespace sdc
