// Files that are never seen half-written: content goes to a temporary file in the same directory, is
// flushed to disk, and renamed over the destination. A reader sees the old file or the new one.
#pragma once

#include <stdexcept>
#include <string>

namespace sdc {

struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws FileError("<path>: <reason>") when the file cannot be written. A symbolic link, a directory, a device, a
// FIFO or a socket at `path` is refused (never followed, never replaced).
void write_file_atomic(const std::string& path, const std::string& content);
// Checks up front that write_file_atomic(path, ...) can succeed (the path names a regular file or none, and a file
// can be created in its directory: one is, and removed); throws FileError naming the path otherwise.
void check_writable(const std::string& path);
// Reads a whole file; throws FileError naming the path when it cannot.
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace sdc
