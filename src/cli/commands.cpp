// Helpers every subcommand uses: failing with the right exit code, and where the patterns are.
#include "commands.h"

#include <fmt/format.h>
#include <limits.h>
#include <unistd.h>

#include "../core/result.h"
#include "../util/say.h"

namespace sdc {
namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

int usage_error(const std::string& msg) {
  say_err("sdcscreen: error: {}\n", msg);
  return EXIT_USAGE;
}

int config_error(const std::string& msg) {
  say_err("sdcscreen: error: {}\n", msg);
  return EXIT_CONFIG;
}

std::string default_patterns_dir() {
  const std::string dir = exe_dir();
#if defined(SDCSCREEN_BUILD_DIR) && defined(SDCSCREEN_SOURCE_PATTERNS)
  char real_build[PATH_MAX];
  if (realpath(SDCSCREEN_BUILD_DIR, real_build) && dir == real_build) return SDCSCREEN_SOURCE_PATTERNS;
#endif
  return dir + "/../share/sdcscreen/patterns";
}

bool installed_patterns_dir(const std::string& dir) {
  char a[PATH_MAX], b[PATH_MAX];
  const std::string installed = exe_dir() + "/../share/sdcscreen/patterns";
  return realpath(dir.c_str(), a) && realpath(installed.c_str(), b) && std::string(a) == b;
}

}  // namespace sdc
