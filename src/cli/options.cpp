#include "src/cli/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "src/backends/cpu/cpu_topology.h"
#include "src/core/history.h"
#include "src/core/inject.h"
#include "src/util/atomic_file.h"
#include "src/util/int_list.h"
#include "src/util/run_lock.h"

namespace sdc::cli {

// A bare number is seconds ("45"); otherwise number-unit pairs in decreasing units, each unit once
// ("1h30m", "90s", "500ms"): "1h1h" and "1s5m" are mistakes, not sums.
std::string parse_duration(const std::string& text, double& seconds) {
  const std::string what = fmt::format("'{}' is not a duration like 45s, 5m, 1h30m, 500ms or 45 (seconds)", text);
  if (text.empty() || text.size() > 32) return what;
  double total = 0;
  size_t i = 0;
  int last_rank = 4;  // h 3, m 2, s 1, ms 0: each pair's unit must be smaller than the one before
  while (i < text.size()) {
    const size_t num_start = i;
    bool dot = false;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
      dot = dot || text[i] == '.';
      ++i;
    }
    if (i == num_start || (i == num_start + 1 && dot)) return what;
    const double v = std::stod(text.substr(num_start, i - num_start));
    const size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string unit = text.substr(unit_start, i - unit_start);
    const bool bare = unit.empty() && num_start == 0 && i == text.size();
    const int rank = bare ? 1 : unit == "ms" ? 0 : unit == "s" ? 1 : unit == "m" ? 2 : unit == "h" ? 3 : -1;
    if (rank < 0 || rank >= last_rank) return what;
    last_rank = rank;
    total += v * (rank == 0 ? 0.001 : rank == 1 ? 1.0 : rank == 2 ? 60.0 : 3600.0);
  }
  if (!(total > 0)) return fmt::format("duration '{}' must be positive", text);
  if (total > 30 * 24 * 3600.0) return fmt::format("duration '{}' is longer than 30 days", text);
  seconds = total;
  return "";
}

// "512M", "8G", "1.5T", "1048576" (bytes): decimal digits with at most one point, then K, M, G, T or nothing;
// at least one byte.
std::string parse_size(const std::string& text, uint64_t& bytes) {
  const std::string what = fmt::format("'{}' is not a size like 512M or 8G", text);
  size_t used = 0;
  bool dot = false;
  while (used < text.size() && (std::isdigit(static_cast<unsigned char>(text[used])) || (text[used] == '.' && !dot))) {
    dot = dot || text[used] == '.';
    ++used;
  }
  if (used == 0 || (used == 1 && dot)) return what;
  double v = 0;
  try {
    v = std::stod(text.substr(0, used));
  } catch (const std::exception&) {  // out of range
    return what;
  }
  const std::string unit = text.substr(used);
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return what;
  if (!(v > 0) || v * scale > 1e18) return what;
  if (v * scale < 1) return fmt::format("'{}' is less than one byte", text);
  bytes = static_cast<uint64_t>(v * scale);
  return "";
}

}  // namespace sdc::cli

namespace sdc {
namespace {

// Whether path (a file to write) would land inside directory dir, symbolic links resolved.
bool inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path d = std::filesystem::weakly_canonical(dir, ec);
  if (ec || d.empty()) return false;
  const std::filesystem::path f = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return false;
  const auto rel = f.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

// A path as the file it names: absolute, symbolic links resolved as far as they exist (an output that is a link is
// refused later; here it still names the file it would have written).
std::filesystem::path file_of(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path f = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? std::filesystem::path(path) : f;
}

// Outputs that are one file with each other, with a file of the node's history or with the lock file: the later
// write would replace the other (the history's earlier lines, the lock another screen waits on). "" when none.
std::string colliding_output(const std::vector<std::pair<const char*, std::string>>& outputs,
                             const std::string& history_dir, const std::string& lock_file) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path.empty()) continue;
    const std::filesystem::path f = file_of(path);
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].second.empty() && file_of(outputs[j].second) == f)
        return fmt::format("{} and {} name the same file ({}): each output needs its own", outputs[j].first, flag,
                           path);
    if (f == file_of(lock_file))
      return fmt::format("{}: {} is the lock file that keeps one screen at a time on this node", flag, path);
    const std::string name = f.filename().string();
    if (!history_dir.empty() && f.parent_path() == file_of(history_dir) &&
        (name == history::FILE_NAME || name.rfind(history::PENDING_PREFIX, 0) == 0 || name == ".history.lock"))
      return fmt::format("{}: {} is a file of the node's history ({}): writing it would destroy the history", flag,
                         path, history_dir);
  }
  return "";
}

}  // namespace

std::string choose_cpus(bool given, const std::string& cpuset, std::vector<int>& cpus) {
  std::vector<int> allowed;
  for (const auto& c : cpu::allowed_cpus()) allowed.push_back(c.cpu);
  if (!given) {
    cpus = allowed;
    return "";
  }
  if (const std::string err = parse_cpu_list(cpuset, cpus); !err.empty()) return fmt::format("--cpuset: {}", err);
  for (int c : cpus)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      return fmt::format("--cpuset: CPU {} does not exist or is not available to this process (available: {})", c,
                         format_cpu_list(allowed));
  return "";
}

SetupFailure run_request(const RunArgs& a, const std::vector<std::string>& argv, const std::string& patterns_dir,
                         RunRequest& r) {
  ScreenRequest& s = r.screen;
  RunOptions& opt = s.options;
  if (!a.time_budget.empty())
    if (const std::string err = cli::parse_duration(a.time_budget, s.time_budget_s); !err.empty())
      return {EXIT_USAGE, fmt::format("--time-budget: {}", err)};
  if (!a.deadline.empty())
    if (const std::string err = cli::parse_duration(a.deadline, r.deadline_s); !err.empty())
      return {EXIT_USAGE, fmt::format("--deadline: {}", err)};
  opt.injections.resize(a.inject.size());
  for (size_t i = 0; i < a.inject.size(); ++i)
    if (const std::string err = parse_injection(a.inject[i], opt.injections[i]); !err.empty())
      return {EXIT_USAGE, fmt::format("--inject '{}': {}", a.inject[i], err)};
  if (!a.max_memory.empty())
    if (const std::string err = cli::parse_size(a.max_memory, opt.max_memory_bytes); !err.empty())
      return {EXIT_USAGE, fmt::format("--max-memory: {}", err)};
  if (const std::string err = choose_cpus(a.cpuset_given, a.cpuset, opt.cpus); !err.empty()) return {EXIT_USAGE, err};
  // --cpuset names CPUs to screen: with --backend auto the CPU backend screens them, even on a node with GPUs (a
  // suspect core's triage must not pass on the GPUs instead).
  if (a.cpuset_given && a.backend != "auto" && a.backend != "cpu")
    return {EXIT_USAGE, fmt::format("--cpuset names CPUs to screen; --backend {} screens GPUs (select them with "
                                    "--devices)",
                                    a.backend)};
  // -o - is stdout: the report goes there in the chosen format, -q or not.
  OutputPlan& out = r.outputs;
  out.report_to_stdout = a.output == "-";
  out.report = out.report_to_stdout ? "" : a.output;
  out.json = a.output_format == "json";
  out.html = a.html;
  out.prometheus = a.prometheus;
  out.quiet = a.quiet;
  out.npd = a.npd;
  if (out.report_to_stdout && a.npd) return {EXIT_USAGE, "-o - and --npd both write stdout: choose one"};
  if (patterns_dir.empty()) return {EXIT_CONFIG, a.patterns_not_found};
  const std::string history_dir = a.history == "none" ? "" : a.history.empty() ? history::default_dir() : a.history;
  if (const std::string err = colliding_output({{"-o", out.report}, {"--html", a.html}, {"--prometheus", a.prometheus}},
                                               history_dir, RunLock::path(a.lock_file));
      !err.empty())
    return {EXIT_USAGE, err};
  for (const auto& [flag, path] :
       {std::pair{"-o", out.report}, std::pair{"--prometheus", a.prometheus}, std::pair{"--html", a.html}}) {
    if (path.empty()) continue;
    if (inside(path, patterns_dir))
      return {EXIT_USAGE, fmt::format("{}: {} is inside the pattern directory {}: writing there would replace "
                                      "pattern data",
                                      flag, path, patterns_dir)};
    try {
      check_writable(path);
    } catch (const FileError& e) {
      return {EXIT_CONFIG, fmt::format("{}: {}", flag, e.what())};
    }
  }
  s.profile = a.profile;
  s.argv = argv;
  s.program = a.program;
  s.patterns_dir = patterns_dir;
  s.seed = a.seed;
  s.seed_given = a.seed_given;
  s.gpu = {a.backend,
           a.devices_given,
           a.devices,
           a.expect_devices.empty() || a.expect_devices == "pci" ? 0 : std::stoi(a.expect_devices),
           a.expect_devices == "pci",
           a.cpuset_given};
  s.force = a.force;
  s.lock_file = a.lock_file;
  s.force_hint = " (--force runs anyway)";
  s.accept_patterns = a.accept_patterns;
  s.retest = a.retest;
  opt.keep_digests = a.digests;
  // slow units: measured by the probe after the battery (src/core/probe.h), unless --no-probe; the report then says
  // the probe did not run and why, and judges no unit slow
  opt.probe = !a.no_probe;
  if (a.no_probe) opt.probe_skipped = "--no-probe: no unit was measured for slowness";
  opt.throughput_floor = a.throughput_floor;
  r.cases = {a.profile, a.enable, a.enable_any, a.disable};
  r.full_battery = a.enable.empty() && a.enable_any.empty() && a.disable.empty();
  r.history = a.history;
  r.max_temperature = a.max_temperature;
  r.fail_slow = a.fail_slow;
  r.verbose = a.verbose;
  return {};
}

SetupFailure check_injections(Screen& s) {
  const GpuChoice& gpu = s.gpu;
  std::vector<Injection>& injections = s.opt.injections;
  for (Injection& inj : injections) {
    if (inj.crash && inj.fired) continue;  // taken by an earlier screen of this run, on a CPU left out now
    if (const std::string err =
            check_injection(inj, s.patterns.battery, s.opt.cpus, gpu.cuda ? &gpu.selected : nullptr);
        !err.empty())
      return {EXIT_USAGE, fmt::format("--inject '{}': {}", inj.spec, err)};
    if (std::none_of(s.sel.cases.begin(), s.sel.cases.end(), [&](const Case* c) { return c->id == inj.case_id; }))
      return {EXIT_USAGE, fmt::format("--inject '{}': case {} is not selected in this run", inj.spec, inj.case_id)};
  }
  if (gpu.cuda)  // the digest pass applies one output fault per case, GPU and iteration
    for (size_t i = 0; i < injections.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const Injection &x = injections[i], &y = injections[j];
        if (!x.input && !y.input && !x.hang && !y.hang && x.case_id == y.case_id && x.device == y.device &&
            x.iteration == y.iteration)
          return {EXIT_USAGE, fmt::format("--inject '{}': a GPU takes one output fault per case, device and "
                                          "iteration ('{}' is another)",
                                          x.spec, y.spec)};
      }
  return {};
}

SetupFailure record_request(const RecordArgs& a, const std::vector<std::string>& argv,
                            const std::string& patterns_dir, ScreenRequest& r) {
  if (a.repeats < 2) return {EXIT_USAGE, "--repeats: at least 2 (repeats must agree before anything is recorded)"};
  r.time_budget_s = 3600;
  if (!a.time_budget.empty())
    if (const std::string err = cli::parse_duration(a.time_budget, r.time_budget_s); !err.empty())
      return {EXIT_USAGE, fmt::format("--time-budget: {}", err)};
  std::error_code ec;
  if (!std::filesystem::is_directory(a.output_dir, ec))
    return {EXIT_CONFIG, fmt::format("-o: {} is not a directory", a.output_dir)};
  try {
    check_writable(a.output_dir + "/recording.json");
  } catch (const FileError& e) {
    return {EXIT_CONFIG, fmt::format("-o: {}", e.what())};
  }
  r.profile = "record";
  r.argv = argv;
  r.patterns_dir = patterns_dir;
  r.seed_given = true;  // seed 0: the GPUs' schedule is theirs
  r.gpu = {"cuda", !a.devices.empty(), a.devices, 0};
  r.force = a.force;
  r.force_hint = " (--force records anyway)";
  r.accept_patterns = a.accept_patterns;
  r.options.recording = true;
  return {};
}

std::string outside_patterns(const std::string& flag, const std::string& path, const std::string& patterns_dir) {
  if (path.empty() || patterns_dir.empty() || !inside(path, patterns_dir)) return "";
  return fmt::format("{}: {} is inside the pattern directory {}: writing there would replace pattern data", flag, path,
                     patterns_dir);
}

}  // namespace sdc
