// `sdcscreen fleet PATH...`: many nodes' JSON reports (files, or directories searched for *.json) read one at a
// time into one compact row per node (src/report/fleet.h), then one table, the failures grouped by signature
// across nodes, the nodes not screened within --stale, and the files that were not reports. Exit 1 when any
// node's newest report failed; else 2 when any is inconclusive or stale; else 0. 78 when a PATH does not exist
// or no report at all could be read; 64 for a bad option or an output inside the pattern directory.
#include "src/report/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <string>
#include <system_error>

#include "src/core/result.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"
#include "src/cli/commands.h"
#include "src/cli/options.h"

namespace sdc {
namespace {

namespace fs = std::filesystem;

// A report is kilobytes (megabytes with --digests on a large battery); a file far larger is not one, and reading
// it whole would cost the memory that reading one report at a time saves.
constexpr uintmax_t MAX_REPORT_BYTES = uintmax_t{256} << 20;

void read_one(Fleet& f, const std::string& file, double now) {
  ++f.files_read;
  std::error_code ec;
  if (const uintmax_t size = fs::file_size(file, ec); !ec && size > MAX_REPORT_BYTES) {
    f.unreadable.emplace_back(
        file, fmt::format("{} bytes: larger than a report ({} MiB at most)", size, MAX_REPORT_BYTES >> 20));
    return;
  }
  try {
    const ReportView r = read_report(file);
    if (const std::string err = fleet_add(f, r, now); !err.empty()) f.unreadable.emplace_back(file, err);
  } catch (const NotReport& e) {
    f.unreadable.emplace_back(file, e.what());
  } catch (const FileError& e) {
    // FileError names the path already; keep its reason alone.
    std::string why = e.what();
    if (why.rfind(file + ": ", 0) == 0) why = why.substr(file.size() + 2);
    f.unreadable.emplace_back(file, why);
  }
}

// Every *.json under dir, in name order within each directory (so the listing of files not read is stable);
// directories that cannot be listed are themselves listed as not read.
void read_dir(Fleet& f, const fs::path& dir, double now) {
  std::error_code ec;
  std::vector<fs::path> files, dirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    const auto st = it->symlink_status(ec2);
    if (ec2) continue;
    if (fs::is_directory(st))
      dirs.push_back(it->path());
    else if (it->path().extension() == ".json" && (fs::is_regular_file(st) || fs::is_symlink(st)))
      files.push_back(it->path());
  }
  if (ec) {
    f.unreadable.emplace_back(dir.string(), "cannot list the directory: " + ec.message());
    return;
  }
  std::sort(files.begin(), files.end());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& p : files) read_one(f, p.string(), now);
  for (const fs::path& d : dirs) read_dir(f, d, now);
}

}  // namespace

int cmd_fleet(const FleetArgs& a, const std::string& patterns_dir) {
  double stale_s = 0;
  if (const std::string err = cli::parse_duration(a.stale, stale_s); !err.empty())
    return usage_error("--stale: " + err);
  for (const auto& [flag, o] : {std::pair{"-o", a.output}, std::pair{"--html", a.html}}) {
    if (o.empty()) continue;
    if (const std::string err = outside_patterns(flag, o, patterns_dir); !err.empty()) return usage_error(err);
    try {
      check_writable(o);
    } catch (const FileError& e) {
      return config_error(e.what());
    }
  }
  // A PATH that does not exist is a mistake in the command, not a node without reports: a fleet view that
  // silently left out a directory would understate what failed.
  for (const std::string& p : a.paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) return config_error(fmt::format("{}: no such file or directory", p));
  }
  Fleet f;
  const double now = static_cast<double>(std::time(nullptr));
  for (const std::string& p : a.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec))
      read_dir(f, p, now);
    else
      read_one(f, p, now);
  }
  if (f.nodes.empty())
    return config_error(fmt::format(
        "no report could be read from {} file{} under {}{}", f.files_read, f.files_read == 1 ? "" : "s",
        a.paths.front(),
        f.unreadable.empty() ? "" : fmt::format(" (first: {}: {})", f.unreadable[0].first, f.unreadable[0].second)));
  fleet_finish(f, now, stale_s);
  const std::string out = a.output_format == "json" ? render_fleet_json(f) : render_fleet_text(f);
  try {
    if (!a.html.empty()) write_file_atomic(a.html, render_fleet_html(f));
    if (!a.output.empty())
      write_file_atomic(a.output, out);
    else
      say("{}", out);
  } catch (const FileError& e) {
    return config_error(e.what());
  }
  if (!a.output.empty()) say("fleet: {} ({} nodes; written to {})\n", f.verdict, f.nodes.size(), a.output);
  return f.exit_code;
}

}  // namespace sdc
