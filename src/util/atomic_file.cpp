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

}  // namespace

void check_writable(const std::string& path) {
  struct stat st {};
  if (path.empty()) fail(path, "empty file name");
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(path, "is a directory");
  const std::string dir = dir_of(path);
  if (stat(dir.c_str(), &st) != 0) fail(path, fmt::format("directory {} does not exist", dir));
  if (!S_ISDIR(st.st_mode)) fail(path, fmt::format("{} is not a directory", dir));
  if (access(dir.c_str(), W_OK) != 0) fail(path, fmt::format("directory {} is not writable", dir));
}

void write_file_atomic(const std::string& path, const std::string& content) {
  check_writable(path);
  std::string tmp = fmt::format("{}/.{}.tmp.XXXXXX", dir_of(path), path.substr(path.rfind('/') + 1));
  const int fd = mkstemp(tmp.data());
  if (fd < 0) fail(path, fmt::format("cannot create temporary file: {}", std::strerror(errno)));
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
