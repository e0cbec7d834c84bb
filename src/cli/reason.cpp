// sdcscreen reason REPORT: the drain reason of a failed screen's JSON report (src/report/drain_reason.h), the
// one the Slurm health check, the NHC check and sdcscreen-sweep drain a node with. Exit 0 a reason printed (the
// report's verdict is fail), 2 the report did not fail (no reason: nothing to drain for), 78 the file cannot be
// read or is not a JSON report of sdcscreen.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "src/core/result.h"
#include "src/report/drain_reason.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/util/strict_json.h"
#include "src/cli/commands.h"

namespace sdc {

int cmd_reason(const std::string& file) {
  std::string text;
  try {
    text = read_file(file);
  } catch (const FileError& e) {
    return config_error(e.what());
  }
  nlohmann::json r;
  if (const std::string err = parse_strict_json(text, r); !err.empty())
    return config_error(fmt::format("{}: not a JSON report: {}", file, err));
  const bool ours = r.is_object() && r.contains("tool") && r["tool"].is_object() &&
                    r["tool"].value("name", nlohmann::json()) == "sdcscreen";
  if (!ours || !r.contains("exit") || !r["exit"].is_object() || !r["exit"].contains("code") ||
      !r["exit"]["code"].is_number_integer() || !r["exit"].contains("verdict") || !r["exit"]["verdict"].is_string())
    return config_error(fmt::format("{}: not a JSON report of sdcscreen (tool.name, exit.code, exit.verdict)", file));
  const std::string why = drain_reason(r);
  if (why.empty()) {
    say_err("sdcscreen: {}: verdict {} (exit {}): no drain reason\n", file, r["exit"]["verdict"].get<std::string>(),
            r["exit"]["code"].get<int64_t>());
    return EXIT_INCONCLUSIVE;
  }
  say("{}\n", why);
  return EXIT_PASS;
}

}  // namespace sdc
