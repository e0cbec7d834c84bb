// sdcscreen reason REPORT: the drain reason of a failed screen's JSON report (src/report/drain_reason.h), the
// one the Slurm health check, the NHC check and sdcscreen-sweep drain a node with. Exit 0 a reason printed (the
// report's verdict is fail), 2 the report did not fail (no reason: nothing to drain for), 78 the file cannot be
// read or is not a JSON report of sdcscreen: the same reader as diff and fleet decides (report_reader.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "src/cli/commands.h"
#include "src/core/result.h"
#include "src/report/drain_reason.h"
#include "src/report/report_reader.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"

namespace sdc {

int cmd_reason(const std::string& file) {
  nlohmann::json r;
  ReportView view;
  try {
    view = read_report(file, &r);
  } catch (const NotReport& e) {
    return config_error(fmt::format("{}: {}", file, e.what()));
  } catch (const FileError& e) {
    return config_error(e.what());
  }
  const std::string why = drain_reason(r);
  if (why.empty()) {
    say_err("sdcscreen: {}: verdict {} (exit {}): no drain reason\n", file, view.verdict, view.exit_code);
    return EXIT_INCONCLUSIVE;
  }
  say("{}\n", why);
  return EXIT_PASS;
}

}  // namespace sdc
