// A fresh directory for one test under the system's temporary directory, removed with what it holds when the
// test leaves its scope.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace sdc::test {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("sdc-" + name + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot create a temporary directory " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace sdc::test
