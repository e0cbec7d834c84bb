// Files that are never seen half-written: content goes to a temporary file in the same directory, is
// flushed to disk, and renamed over the destination. A reader sees the old file or the new one.
#pragma once

#include <stdexcept>
#include <string>

namespace sdc {

struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws FileError("<path>: <reason>") when the file cannot be written. A symbolic link at `path` is followed: the
// file it names is replaced, the link stays. A directory, device, FIFO or socket there is refused.
void write_file_atomic(const std::string& path, const std::string& content);
// Checks up front that write_file_atomic(path, ...) can succeed (the path names a regular file or none, and a file
// can be created in its directory: one is, and removed); throws FileError naming the path otherwise.
void check_writable(const std::string& path);
// The path a write of `path` lands on: symbolic links followed, the last one's target whether it exists or not
// (writing through a link to a file not written yet creates that file). False for a loop.
bool followed(const std::string& path, std::string& target);
// Reads a whole file; throws FileError naming the path when it cannot.
std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace sdc
