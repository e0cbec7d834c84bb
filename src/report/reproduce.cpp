// The reproduce line (report.h): what the run screened, never where it wrote. Pasted as it stands it must not
// overwrite the failing run's report (-o, --html, --prometheus), add a line to the node's history (--history,
// or the default history of a run as root: hence --history none), or take another screen's lock file.
#include <algorithm>

#include "src/report/report.h"

namespace sdc {
namespace {

// `run` options that take a value: outputs and state (dropped with their value) and the rest (kept, their value
// copied as it stands even when it starts with '-').
const char* const DROPPED_WITH_VALUE[] = {"--output", "--output-format", "--prometheus",
                                          "--html",   "--history",       "--lock-file"};
const char* const DROPPED_FLAGS[] = {"--quiet", "--npd", "--force", "--digests"};
const char* const KEPT_WITH_VALUE[] = {
    "--profile", "--enable",           "--enable-any",      "--disable",         "--time-budget",
    "--deadline", "--seed",            "--backend",         "--devices",         "--expect-devices",
    "--cpuset",  "--patterns",         "--max-memory",      "--inject",          "--throughput-floor",
    "--max-temperature", "--retest-on-failure"};

template <size_t N>
const char* long_option(const std::string& arg, const char* const (&names)[N], bool* with_value) {
  for (const char* n : names) {
    const std::string name = n;
    if (arg == name) {
      *with_value = false;
      return n;
    }
    if (arg.rfind(name + "=", 0) == 0) {
      *with_value = true;
      return n;
    }
  }
  return nullptr;
}

void note(std::vector<std::string>& left_out, const std::string& option) {
  if (std::find(left_out.begin(), left_out.end(), option) == left_out.end()) left_out.push_back(option);
}

}  // namespace

ReproduceLine reproduce_line(const std::vector<std::string>& argv, const std::string& program,
                             const std::string& seed) {
  ReproduceLine out;
  std::vector<std::string> kept = {program.empty() ? (argv.empty() ? "sdcscreen" : argv[0]) : program};
  const bool run = argv.size() > 1 && argv[1] == "run";
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!run || i == 1) {
      kept.push_back(a);
      continue;
    }
    if (a == "--") {  // the rest is positional: as given
      kept.insert(kept.end(), argv.begin() + static_cast<long>(i), argv.end());
      break;
    }
    bool attached = false;
    if (const char* n = long_option(a, DROPPED_WITH_VALUE, &attached)) {
      note(out.left_out, n == std::string("--output") ? "-o" : n);
      if (!attached) ++i;  // and its value
      continue;
    }
    if (const char* n = long_option(a, DROPPED_FLAGS, &attached)) {
      note(out.left_out, n == std::string("--quiet") ? "-q" : n);
      continue;
    }
    if (long_option(a, KEPT_WITH_VALUE, &attached)) {
      kept.push_back(a);
      if (!attached && i + 1 < argv.size()) kept.push_back(argv[++i]);
      continue;
    }
    if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {  // short options, grouped or not: -q, -v, -o FILE, -qvoFILE
      std::string shorts;
      for (size_t k = 1; k < a.size(); ++k) {
        if (a[k] == 'q') {
          note(out.left_out, "-q");
        } else if (a[k] == 'o') {
          note(out.left_out, "-o");
          if (k + 1 == a.size()) ++i;  // its value is the next argument, else the rest of this one
          break;
        } else {
          shorts += a[k];
        }
      }
      if (!shorts.empty()) kept.push_back("-" + shorts);
      continue;
    }
    kept.push_back(a);
  }
  if (!seed.empty()) {
    kept.push_back("--seed");
    kept.push_back(seed);
  }
  if (run) {  // a run as root records in the default history: a reproduction is not a screen of record
    kept.push_back("--history");
    kept.push_back("none");
  }
  out.command = shell_join(kept);
  return out;
}

std::string retest_line(const std::vector<std::string>& argv, const std::string& program, const UnitName& unit) {
  std::vector<std::string> cmd = {program.empty() ? (argv.empty() ? "sdcscreen" : argv[0]) : program, "run",
                                  "--profile", "burnin"};
  // The original run's pattern data and memory cap still apply; its backend too when it named a GPU backend
  // (an emulated one in tests), else a GPU is retested on CUDA.
  std::string backend;
  for (size_t i = 2; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") break;
    for (const char* kept : {"--patterns", "--max-memory", "--backend"}) {
      const std::string name = kept;
      std::string value;
      if (a == name && i + 1 < argv.size())
        value = argv[i + 1];
      else if (a.rfind(name + "=", 0) == 0)
        value = a.substr(name.size() + 1);
      else
        continue;
      if (name == "--backend")
        backend = value;
      else
        cmd.insert(cmd.end(), {name, value});
    }
  }
  if (unit.is_cpu()) {
    cmd.insert(cmd.end(), {"--backend", "cpu", "--cpuset", std::to_string(unit.cpu)});
  } else {
    cmd.insert(cmd.end(), {"--backend", backend.empty() || backend == "auto" || backend == "cpu" ? "cuda" : backend,
                           "--devices", std::to_string(unit.gpu)});
  }
  cmd.insert(cmd.end(), {"--history", "none"});
  return shell_join(cmd);
}

}  // namespace sdc
