// The host's identity: CPU (vendor, family/model/stepping, microcode, PPIN, topology), firmware and board
// (DMI), kernel. What a vendor asks for in an RMA.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "src/host/host_readers.h"

namespace sdc::host {

HostRoot HostRoot::under(const std::string& dir) { return {dir + "/proc", dir + "/sys", dir + "/dev"}; }

HostRoot HostRoot::from_env() {
  HostRoot r;
  if (const char* d = std::getenv("SDCSCREEN_HOST_ROOT"); d && *d) r = under(d);
  if (const char* s = std::getenv("SDCSCREEN_SYSFS_ROOT"); s && *s) r.sys = s;
  return r;
}

std::string unreadable_reason(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR: return "missing";
    case EACCES:
    case EPERM: return "not readable (needs root)";
    default: return fmt::format("not readable: {}", std::strerror(err));
  }
}

FileValue read_first_line(const std::string& path) {
  // open(2) rather than a stream: the reason (missing, permission) is the errno, and reports say it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {std::nullopt, unreadable_reason(errno)};
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return {std::nullopt, unreadable_reason(err)};  // sysfs says "no" at read time too (EIO, EPERM)
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.find('\n') != std::string::npos || text.size() > 65536) break;
  }
  ::close(fd);
  text = text.substr(0, text.find('\n'));
  const size_t b = text.find_first_not_of(" \t\r");
  const size_t e = text.find_last_not_of(" \t\r");
  return {b == std::string::npos ? "" : text.substr(b, e - b + 1), ""};
}

std::optional<uint64_t> parse_count(const std::string& text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::nullopt;
  const size_t e = text.find_last_not_of(" \t\r\n");
  const std::string t = text.substr(b, e - b + 1);
  if (t.size() > 19 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(t);
}

std::string read_whole_file(const std::string& path, std::string& why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = unreadable_reason(errno);
    return "";
  }
  std::string text;
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < (64u << 20)) text.append(buf, static_cast<size_t>(n));
  if (n < 0) why = unreadable_reason(errno);
  ::close(fd);
  return n < 0 ? "" : text;
}

namespace {

// "key\t: value" lines of /proc/cpuinfo, one map per processor block.
std::vector<std::map<std::string, std::string>> cpuinfo_blocks(const std::string& cpuinfo) {
  std::vector<std::map<std::string, std::string>> blocks(1);
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      if (!blocks.back().empty()) blocks.emplace_back();
      continue;
    }
    std::string key = line.substr(0, colon);
    key = key.substr(0, key.find_last_not_of(" \t") + 1);
    const size_t v = line.find_first_not_of(" \t", colon + 1);
    blocks.back()[key] = v == std::string::npos ? "" : line.substr(v);
  }
  if (blocks.back().empty()) blocks.pop_back();
  return blocks;
}

int to_int(const std::string& s) {
  const auto v = parse_count(s);
  return v && *v < (1u << 30) ? static_cast<int>(*v) : -1;
}

// The PPIN of the package whose first CPU is `cpu`: sysfs (Linux 6.1, root only) or the MSR (the msr driver,
// root only): Intel MSR_PPIN 0x4f, AMD 0xc00102f1. A CPU whose PPIN is disabled reads 0 or faults.
std::optional<std::string> read_ppin(const HostRoot& root, const std::string& vendor, int cpu, std::string& why) {
  const FileValue f = read_first_line(fmt::format("{}/devices/system/cpu/cpu{}/topology/ppin", root.sys, cpu));
  if (f.text && !f.text->empty()) return *f.text;
  why = "topology/ppin " + f.why;
  const uint64_t address = vendor == "GenuineIntel" ? 0x4f : vendor == "AuthenticAMD" ? 0xc00102f1 : 0;
  if (address == 0) return std::nullopt;
  const int fd = ::open(fmt::format("{}/cpu/{}/msr", root.dev, cpu).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why += fmt::format(", /dev/cpu/{}/msr {}", cpu, unreadable_reason(errno));
    return std::nullopt;
  }
  uint64_t v = 0;
  const ssize_t n = ::pread(fd, &v, sizeof v, static_cast<off_t>(address));
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof v) || v == 0) {
    why += fmt::format(", MSR {:#x} {}", address, n < 0 ? unreadable_reason(err) : "reads 0 (PPIN disabled)");
    return std::nullopt;
  }
  return fmt::format("{:#018x}", v);
}

}  // namespace

CpuIdentity parse_cpuinfo(const std::string& cpuinfo, std::vector<Unavailable>& not_available) {
  CpuIdentity c;
  const auto blocks = cpuinfo_blocks(cpuinfo);
  const auto missing = [&](const char* field) {
    not_available.push_back({fmt::format("/proc/cpuinfo {}", field), "missing"});
  };
  std::set<std::string> packages;
  std::set<std::pair<std::string, std::string>> cores;
  bool topology = !blocks.empty();
  for (const auto& b : blocks) {
    if (!b.count("processor")) continue;
    ++c.threads;
    const auto p = b.find("physical id"), k = b.find("core id");
    if (p == b.end() || k == b.end()) {
      topology = false;
      continue;
    }
    packages.insert(p->second);
    cores.insert({p->second, k->second});
  }
  if (topology && !packages.empty()) {
    c.sockets = static_cast<int>(packages.size());
    c.cores = static_cast<int>(cores.size());
  } else {
    missing("physical id, core id");
  }
  if (c.threads == 0) missing("processor");
  const std::map<std::string, std::string> none;
  const auto& first = blocks.empty() ? none : blocks.front();
  const auto field = [&](const char* key) -> std::string {
    const auto it = first.find(key);
    if (it == first.end() || it->second.empty()) {
      missing(key);
      return "";
    }
    return it->second;
  };
  c.vendor = field("vendor_id");
  c.model_name = field("model name");
  c.microcode = field("microcode");
  c.family = to_int(field("cpu family"));
  c.model = to_int(field("model"));
  c.stepping = to_int(field("stepping"));
  return c;
}

HostIdentity read_identity(const HostRoot& root) {
  HostIdentity h;
  std::string why;
  const std::string cpuinfo = read_whole_file(root.proc + "/cpuinfo", why);
  if (why.empty())
    h.cpu = parse_cpuinfo(cpuinfo, h.not_available);
  else  // one line for the file, not one per field it would have had
    h.not_available.push_back({"/proc/cpuinfo", why});
  // The microcode revision that is loaded now, where cpuinfo lacks it (some architectures, older kernels).
  if (h.cpu.microcode.empty()) {
    const FileValue m = read_first_line(root.sys + "/devices/system/cpu/cpu0/microcode/version");
    if (m.text && !m.text->empty()) h.cpu.microcode = *m.text;
  }
  // PPIN, once per package: the first processor of each physical id.
  std::map<std::string, int> first_cpu;
  for (const auto& b : cpuinfo_blocks(cpuinfo))
    if (b.count("processor") && b.count("physical id")) first_cpu.emplace(b.at("physical id"), to_int(b.at("processor")));
  std::string ppin_why;
  for (const auto& [pkg, cpu] : first_cpu) {
    if (cpu < 0) continue;
    std::string w;
    if (const auto p = read_ppin(root, h.cpu.vendor, cpu, w))
      h.cpu.ppin.push_back({to_int(pkg), *p});
    else if (ppin_why.empty())
      ppin_why = w;
  }
  if (h.cpu.ppin.empty()) h.not_available.push_back({"PPIN", ppin_why.empty() ? "no CPU package listed" : ppin_why});
  const std::string dmi = root.sys + "/class/dmi/id/";
  const std::pair<const char*, std::string*> fields[] = {
      {"bios_vendor", &h.dmi.bios_vendor},     {"bios_version", &h.dmi.bios_version},
      {"bios_date", &h.dmi.bios_date},         {"board_vendor", &h.dmi.board_vendor},
      {"board_name", &h.dmi.board_name},       {"board_serial", &h.dmi.board_serial},
      {"sys_vendor", &h.dmi.system_vendor},    {"product_name", &h.dmi.system_product},
      {"product_serial", &h.dmi.system_serial}};
  std::error_code ec;
  if (!std::filesystem::is_directory(dmi, ec)) {
    h.not_available.push_back({"/sys/class/dmi/id", "missing"});
  } else {
    for (const auto& [name, out] : fields) {
      const FileValue f = read_first_line(dmi + name);
      if (f.text && !f.text->empty())
        *out = *f.text;
      else
        h.not_available.push_back({std::string("/sys/class/dmi/id/") + name, f.text ? "empty" : f.why});
    }
  }
  const FileValue k = read_first_line(root.proc + "/sys/kernel/osrelease");
  if (k.text && !k.text->empty())
    h.kernel = *k.text;
  else
    h.not_available.push_back({"/proc/sys/kernel/osrelease", k.text ? "empty" : k.why});
  return h;
}

}  // namespace sdc::host
