#include "src/util/run_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace sdc {

// root: /run/sdcscreen; anyone else: $XDG_RUNTIME_DIR (private to the user), else a directory of their own
// under /tmp (made 0700 and checked when the lock is taken), never a file directly in world-writable /tmp.
std::string RunLock::default_path() {
  if (geteuid() == 0) return "/run/sdcscreen/lock";
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) return fmt::format("{}/sdcscreen.lock", xdg);
  return fmt::format("/tmp/sdcscreen-{}/lock", geteuid());
}

// The lock is opened without following a symbolic link (a link planted in its place would make the screen
// truncate its target) and must be a regular file owned by this user with no other hard link, in a directory nobody else can write
// unless it is sticky (/tmp itself) or owned by root.
std::string RunLock::acquire(const std::string& path, bool* busy, long owner_pid) {
  *busy = false;
  const uid_t me = geteuid();
  const auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    mkdir(dir.c_str(), 0700);  // exists: fine, checked below
    struct stat d {};
    if (lstat(dir.c_str(), &d) != 0) return fmt::format("lock file {}: {}", path, std::strerror(errno));
    if (!S_ISDIR(d.st_mode))
      return fmt::format("lock file {}: {} is not a directory (a symbolic link?): refusing it", path, dir);
    if ((d.st_mode & (S_IWGRP | S_IWOTH)) && !(d.st_mode & S_ISVTX) && d.st_uid != me && d.st_uid != 0)
      return fmt::format("lock file {}: {} can be written by others and is not ours: refusing it", path, dir);
  }
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0)
    return errno == ELOOP ? fmt::format("lock file {} is a symbolic link: refusing to follow it", path)
                          : fmt::format("lock file {}: {}", path, std::strerror(errno));
  struct stat f {};
  if (fstat(fd_, &f) != 0 || !S_ISREG(f.st_mode) || f.st_uid != me) {
    close(fd_);
    fd_ = -1;
    return fmt::format("lock file {}: not a regular file owned by uid {}: refusing it", path, me);
  }
  // A hard link is a planted link too: writing our pid would rewrite the file it shares its inode with.
  if (f.st_nlink > 1) {
    close(fd_);
    fd_ = -1;
    return fmt::format("lock file {} has {} hard links (another name for the same file): refusing it", path,
                       static_cast<unsigned long>(f.st_nlink));
  }
  // A holder whose named owner is gone is a screen dying with its supervisor (killed outright; the kernel
  // kills the child a moment later): wait up to 2 s for its lock rather than refuse.
  for (int tries = 0; flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK && tries < 200; ++tries) {
    char buf[32] = {};
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    const long holder = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
    if (holder <= 0 || kill(static_cast<pid_t>(holder), 0) == 0 || errno != ESRCH) break;
    usleep(10000);
  }
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
  const std::string pid = fmt::format("{}\n", owner_pid > 0 ? owner_pid : static_cast<long>(getpid()));
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return fmt::format("lock file {}: cannot write: {}", path, std::strerror(errno));
  return "";
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);  // closing drops the flock; the file stays for the next run to reuse
}

}  // namespace sdc
