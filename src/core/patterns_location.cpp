// The pattern directory's lookup (patterns_location.h).
#include "src/core/patterns_location.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace sdc {
namespace {

#ifndef SDCSCREEN_INSTALLED_PATTERNS
#define SDCSCREEN_INSTALLED_PATTERNS ""
#endif

bool has_manifest(const std::string& dir) {
  struct stat st {};
  return stat((dir + "/manifest.json").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool same_dir(const std::string& a, const std::string& b) {
  char ra[PATH_MAX], rb[PATH_MAX];
  return realpath(a.c_str(), ra) && realpath(b.c_str(), rb) && std::string(ra) == rb;
}

}  // namespace

std::string PatternsLocation::not_found_message() const {
  std::string where;
  for (const std::string& d : looked_in) where += (where.empty() ? "" : ", ") + d;
  return "no pattern directory found (looked in " + where + "): give --patterns DIR or set " + PATTERNS_ENV;
}

PatternsLocation locate_patterns(const char* env_value, const std::string& exe_dir, const std::string& installed_dir) {
  PatternsLocation loc;
  if (env_value && *env_value) {
    loc.dir = env_value;
    loc.how = PATTERNS_ENV;
    loc.looked_in.push_back(loc.dir);
    return loc;
  }
  const std::pair<std::string, const char*> candidates[] = {
      {exe_dir + "/patterns", "next to the executable"},
      {exe_dir + "/../share/sdcscreen/patterns", "next to the executable"},
      {installed_dir, "installed"},
  };
  for (const auto& [dir, how] : candidates) {
    if (dir.empty()) continue;
    loc.looked_in.push_back(dir);
    if (!has_manifest(dir)) continue;
    loc.dir = dir;
    loc.how = how;
    return loc;
  }
  return loc;
}

PatternsLocation locate_patterns() {
  return locate_patterns(std::getenv(PATTERNS_ENV), executable_dir(), SDCSCREEN_INSTALLED_PATTERNS);
}

std::string executable_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

bool installed_patterns_dir(const std::string& dir) {
  const std::string installed = SDCSCREEN_INSTALLED_PATTERNS;
  return same_dir(dir, executable_dir() + "/../share/sdcscreen/patterns") ||
         (!installed.empty() && same_dir(dir, installed));
}

}  // namespace sdc
