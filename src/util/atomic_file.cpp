#include "src/util/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sdc {
namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw FileError(fmt::format("{}: {}", path, what));
}

// `path` as a file to replace: a regular file or none. A symbolic link is refused, not followed: root writing through
// a link another user planted in a world-writable directory would replace the file it names (the kernel's
// protection applies to links it follows, not to one followed by hand), and renaming over it would drop the link
// (run_lock.cpp refuses a planted lock file the same way). A directory, a device, a FIFO or a socket is refused:
// renaming over /dev/null as root would replace the system's.
void check_target(const std::string& path) {
  if (path.empty()) fail(path, "empty file name");
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) fail(path, "is a symbolic link: name the file itself (a link is never followed)");
    if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
    if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file (a device, FIFO or socket): name a file to write");
  }
  const std::string dir = dir_of(path);
  if (stat(dir.c_str(), &st) != 0) fail(path, fmt::format("directory {} does not exist", dir));
  if (!S_ISDIR(st.st_mode)) fail(path, fmt::format("{} is not a directory", dir));
}

// A temporary file beside `path`, open for writing, named after it (or `name` when given): its descriptor, its
// name in *tmp.
int temporary_beside(const std::string& path, std::string* tmp, const char* name = nullptr) {
  *tmp = fmt::format("{}/.{}.tmp.XXXXXX", dir_of(path), name ? name : path.substr(path.rfind('/') + 1));
  const int fd = mkstemp(tmp->data());
  if (fd < 0) fail(path, fmt::format("cannot create a file in {}: {}", dir_of(path), std::strerror(errno)));
  return fd;
}

}  // namespace

// Not access(W_OK), which is true for root on a read-only mount or in /proc: a file is created in the directory and
// removed, as the write itself will (named apart: a name too long for the write's temporary file is found then).
void check_writable(const std::string& path) {
  check_target(path);
  std::string tmp;
  close(temporary_beside(path, &tmp, "sdcscreen-check"));
  unlink(tmp.c_str());
}

void write_file_atomic(const std::string& path, const std::string& content) {
  check_target(path);
  std::string tmp;
  const int fd = temporary_beside(path, &tmp);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      unlink(tmp.c_str());
      fail(path, fmt::format("write failed: {}", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  // Readable like any report (mkstemp creates 0600).
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    fail(path, fmt::format("write failed: {}", std::strerror(err)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    fail(path, fmt::format("rename failed: {}", std::strerror(err)));
  }
}

std::string read_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) fail(path, "is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, file_exists(path) ? "cannot be read" : "missing");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, "read error");
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace sdc
