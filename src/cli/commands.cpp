// Helpers every subcommand uses: failing with the right exit code.
#include "src/cli/commands.h"

#include "src/core/result.h"
#include "src/util/say.h"

namespace sdc {

int usage_error(const std::string& msg) {
  say_err("sdcscreen: error: {}\n", msg);
  return EXIT_USAGE;
}

int config_error(const std::string& msg) {
  say_err("sdcscreen: error: {}\n", msg);
  return EXIT_CONFIG;
}

}  // namespace sdc
