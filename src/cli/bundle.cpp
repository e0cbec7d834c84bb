// `sdcscreen bundle [DIR] [-o FILE]`: one tar.gz for a vendor ticket. It holds what a vendor asks for and
// nothing else from the host: the last reports the history names (run -o), the history itself, `info` as
// text and JSON, the pattern manifest (the battery's and goldens' versions), the reproduce command of each
// report, and a README saying what is in it and what could not be included and why.
//
// The archive is written by tar(1), started without a shell (argument vector, no string is ever parsed by
// a shell), from a private staging directory, into a temporary file beside FILE renamed into place: a
// failed bundle leaves no half archive under FILE's name. --force-local: a FILE with a colon is a file, never
// a remote host for tar to reach.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "src/cli/commands.h"
#include "src/cli/options.h"
#include "src/core/history.h"
#include "src/report/report.h"
#include "src/util/atomic_file.h"
#include "src/util/say.h"

extern char** environ;

namespace sdc {
namespace {

constexpr off_t MAX_REPORT_BYTES = off_t{64} << 20;  // a report bigger than this is not a report we wrote

// A name safe as a file name in the archive: letters, digits, '.', '-', '_'; anything else becomes '_'.
std::string safe_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
  return s;
}

// The reproduce command a report names: "reproduce" in a JSON report, the "reproduce: " line in a text one.
std::string reproduce_of(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.is_object() && j.contains("reproduce") && j["reproduce"].is_string())
      return j["reproduce"].get<std::string>();
    return "";
  } catch (const nlohmann::json::exception&) {
  }
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.rfind("reproduce: ", 0) == 0) return line.substr(11);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return "";
}

// Whether a file is a report this tool wrote: a JSON report (tool.name sdcscreen) or a text one (its first
// line "sdcscreen VERSION (...)  profile"). A history line can be edited by anyone who can write it: a path it
// names to anything else (/etc/shadow) must not ride along to a vendor.
bool is_report(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    return j.is_object() && j.contains("tool") && j["tool"].is_object() && j["tool"].contains("name") &&
           j["tool"]["name"] == "sdcscreen";
  } catch (const nlohmann::json::exception&) {
  }
  const std::string first = text.substr(0, text.find('\n'));
  return first.rfind("sdcscreen ", 0) == 0 && first.find("  profile ") != std::string::npos;
}

// Runs argv (no shell) and waits; "" or what went wrong.
std::string run_tool(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int e = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ); e != 0)
    return fmt::format("cannot start {}: {}", args[0], std::strerror(e));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fmt::format("{}: {}", args[0], std::strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return WIFSIGNALED(status) ? fmt::format("{} was killed by signal {}", args[0], WTERMSIG(status))
                             : fmt::format("{} exited {}", args[0], WEXITSTATUS(status));
}

// A regular file (never a link) of at most `limit` bytes; "" or why not.
std::string regular_file(const std::string& path, off_t limit) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_size > limit) return fmt::format("{} bytes, more than a report", st.st_size);
  return access(path.c_str(), R_OK) == 0 ? "" : std::strerror(errno);
}

struct Staging {
  std::string root;
  ~Staging() {
    std::error_code ec;
    if (!root.empty()) std::filesystem::remove_all(root, ec);
  }
};

}  // namespace

int cmd_bundle(const BundleArgs& a, const PatternsLocation& patterns) {
  if (a.reports < 1 || a.reports > 100) return usage_error(fmt::format("--reports {}: give 1 to 100", a.reports));
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  const std::string host = host_info().hostname;
  const std::string name = safe_name(fmt::format("sdcscreen-bundle-{}-{}", host, stamp));
  const std::string output = a.output.empty() ? name + ".tar.gz" : a.output;

  // The output first: inside the pattern directory it is refused as run's outputs are (64); an archive that
  // cannot be written is not worth collecting (exit 78, like any -o).
  if (const std::string err = outside_patterns("-o", output, patterns.dir); !err.empty()) return usage_error(err);
  struct stat ost {};
  if (stat(output.c_str(), &ost) == 0 && S_ISDIR(ost.st_mode))
    return config_error(fmt::format("-o {}: is a directory", output));
  std::string tmp_out = output + ".partial-XXXXXX";
  const int fd = mkstemp(tmp_out.data());
  if (fd < 0) return config_error(fmt::format("-o {}: cannot write: {}", output, std::strerror(errno)));
  close(fd);
  struct Remove {
    std::string path;
    ~Remove() {
      if (!path.empty()) unlink(path.c_str());
    }
  } partial{tmp_out};

  const char* tmpdir = std::getenv("TMPDIR");
  std::string root = fmt::format("{}/sdcscreen-bundle-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  if (!mkdtemp(root.data()))
    return config_error(fmt::format("cannot make a staging directory: {}", std::strerror(errno)));
  Staging staging{root};
  const std::string top = root + "/" + name;
  std::vector<std::string> contents, missing;
  try {
    std::filesystem::create_directories(top + "/reports");
    const auto put = [&](const std::string& rel, const std::string& text, const std::string& what) {
      write_file_atomic(top + "/" + rel, text);
      contents.push_back(fmt::format("{:<28} {}", rel, what));
    };

    // The history, as it is on disk (a line this version cannot read is still evidence).
    const std::string dir = a.dir;
    history::History h;
    bool exists = false;
    const std::string load_err = history::load(dir, h, exists);
    const std::string hist_file = dir + "/" + history::FILE_NAME;
    if (const std::string why = regular_file(hist_file, off_t{256} << 20); why.empty()) {
      put("history.jsonl", read_file(hist_file), "the node's history (" + hist_file + ")");
      if (!load_err.empty()) missing.push_back("the history could not be read in full: " + load_err);
    } else {
      missing.push_back(fmt::format("no history: {}: {}", hist_file, why));
      say_err("sdcscreen: note: no history at {} ({}); bundling what exists\n", hist_file, why);
    }

    // The last reports it names, newest first.
    std::set<std::string> seen;
    std::string reproduce;
    int n = 0;
    for (auto it = h.records.rbegin(); it != h.records.rend() && n < a.reports; ++it) {
      if (it->report.empty() || !seen.insert(it->report).second) continue;
      if (const std::string why = regular_file(it->report, MAX_REPORT_BYTES); !why.empty()) {
        missing.push_back(fmt::format("report of the screen at {}: {}: {}", it->time, it->report, why));
        continue;
      }
      const std::string text = read_file(it->report);
      if (!is_report(text)) {
        missing.push_back(fmt::format("{}: named by the history, but not an sdcscreen report: left out", it->report));
        continue;
      }
      ++n;
      const std::string rel =
          fmt::format("reports/{}-{}", n, safe_name(std::filesystem::path(it->report).filename().string()));
      put(rel, text, fmt::format("report of the screen at {} ({}, exit {})", it->time, it->verdict, it->exit));
      const std::string cmd = reproduce_of(text);
      reproduce += fmt::format("# {} ({}, screen at {})\n{}\n", rel, it->verdict, it->time,
                               cmd.empty() ? "# this report names no reproduce command" : cmd);
    }
    if (n == 0) missing.push_back("no report: the history names none that can still be read (run -o FILE)");
    put("reproduce.txt", reproduce.empty() ? "# no report, no reproduce command\n" : reproduce,
        "the reproduce command of each report");

    put("info.txt", info_output(patterns, false), "sdcscreen info");
    put("info.json", info_output(patterns, true), "sdcscreen info --output-format json");
    const std::string manifest = patterns.dir + "/manifest.json";
    if (patterns.dir.empty())
      missing.push_back("no pattern manifest: no pattern directory was found");
    else if (const std::string why = regular_file(manifest, MAX_REPORT_BYTES); !why.empty())
      missing.push_back(fmt::format("no pattern manifest: {}: {}", manifest, why));
    else
      put("patterns-manifest.json", read_file(manifest), "the battery's and goldens' versions (" + manifest + ")");

    std::string readme = fmt::format("sdcscreen {} bundle of {} at {}\n\n", tool_version(), host, stamp);
    for (const std::string& c : contents) readme += c + "\n";
    readme += "README.txt                   this file\n";
    if (!missing.empty()) {
      readme += "\nnot included:\n";
      for (const std::string& m : missing) readme += "  " + m + "\n";
    }
    write_file_atomic(top + "/README.txt", readme);
  } catch (const std::exception& e) {  // FileError, filesystem_error
    return config_error(fmt::format("cannot stage the bundle: {}", e.what()));
  }

  if (const std::string err = run_tool({"tar", "--force-local", "-czf", tmp_out, "--owner=0", "--group=0",
                                        "--numeric-owner", "-C", root, "--", name});
      !err.empty())
    return config_error(fmt::format("-o {}: {}", output, err));
  if (rename(tmp_out.c_str(), output.c_str()) != 0)
    return config_error(fmt::format("-o {}: {}", output, std::strerror(errno)));
  partial.path.clear();
  say("bundle {}: {} file{}{}\n", output, contents.size() + 1, contents.size() ? "s" : "",
      missing.empty()
          ? ""
          : fmt::format(" ({} thing{} not included: see README.txt)", missing.size(), missing.size() == 1 ? "" : "s"));
  return EXIT_PASS;
}

}  // namespace sdc
