#include "commands.h"

#include <limits.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "../backends/cpu/cpu_topology.h"
#include "../backends/cuda/cuda_backend.h"
#include "../core/atomic_file.h"
#include "../core/patterns.h"
#include "../core/recording.h"
#include "../core/report.h"
#include "../core/result.h"
#include "../core/runner.h"
#include "../../kernels/gemm_f32/gemm_f32_cpu.h"

namespace sdc {
namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

const char* distribution_description(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "multiples of 2^-23 in [-1, 1)";
    case Distribution::heavy_tail: return "uniform with 1 in 64 elements an outlier up to 2^12 larger (LLM activations)";
    case Distribution::special: return "exponents across subnormals, near underflow and, per tensor, near overflow";
    case Distribution::mantissa_walk: return "walking-one and walking-zero significands: every significand bit set and cleared";
  }
  return "";
}

}  // namespace

int usage_error(const std::string& msg) {
  fmt::print(stderr, "sdcscreen: error: {}\n", msg);
  return EXIT_USAGE;
}

int config_error(const std::string& msg) {
  fmt::print(stderr, "sdcscreen: error: {}\n", msg);
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

int cmd_list(const ListArgs& a, const std::string& patterns_dir) {
  Battery b;
  try {
    b = load_patterns(patterns_dir, false).battery;
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
  if (!a.profile.empty() && !b.find_profile(a.profile)) return usage_error(fmt::format("unknown profile '{}'", a.profile));
  fmt::print("families:\n");
  for (const Family& f : families()) {
    std::string modes;
    for (Mode m : f.modes) modes += std::string(modes.empty() ? "" : ",") + mode_name(m);
    fmt::print("  {:<20} [{}] {}\n", f.id, modes, f.description);
  }
  fmt::print("modes:\n"
             "  exact                fully specified IEEE fp32 order; golden computed on the CPU, compared bit for bit\n"
             "  exact-integer        tensor-core inputs whose every partial sum is exact in any order; golden in integer\n"
             "                       arithmetic on the CPU (for these families, uniform means random full significands\n"
             "                       and mantissa_walk walks A's fraction bits, over the family's bounded exponents)\n"
             "  recorded             golden recorded on known-good devices of the same architecture (no family yet;\n"
             "                       recordings are merged by 'sdcscreen consensus')\n"
             "  consensus            repeats and devices of one node must agree bit for bit (no family yet)\n");
  fmt::print("distributions:\n");
  for (Distribution d : {Distribution::uniform, Distribution::heavy_tail, Distribution::special, Distribution::mantissa_walk})
    fmt::print("  {:<20} {}\n", distribution_name(d), distribution_description(d));
  fmt::print("profiles:\n");
  for (const Profile& p : b.profiles) fmt::print("  {:<20} budget {:>6.0f} s  {}\n", p.name, p.time_budget_s, p.description);
  fmt::print("cases:\n");
  for (const Case& c : b.cases) {
    if (!a.profile.empty() && !c.iterations.count(a.profile)) continue;
    std::string shape, profiles;
    for (const auto& [k, v] : c.shape.dims) shape += fmt::format("{}{}={}", shape.empty() ? "" : " ", k, v);
    for (const auto& [p, n] : c.iterations) profiles += fmt::format("{}{}x{}", profiles.empty() ? "" : " ", p, n);
    fmt::print("  {:<40} {:<18} {:<14} {:<28} {}\n", c.id, c.family, distribution_name(c.distribution), shape, profiles);
  }
  return 0;
}

int cmd_info() {
  const HostInfo h = host_info();
  fmt::print("sdcscreen {} ({})\n", tool_version(), tool_git());
  fmt::print("host:     {}\nos:       {}\nkernel:   {}\n", h.hostname, h.os, h.kernel);
  fmt::print("cpu:      {}\n", h.cpu_model);
  std::vector<int> allowed;
  const auto cpus = cpu::allowed_cpus();
  for (const auto& c : cpus) allowed.push_back(c.cpu);
  fmt::print("cpus:     {} online, {} available to this process: {}\n", h.cpus_online, allowed.size(), cpu::format_cpu_list(allowed));
  fmt::print("gemm isa: {}\n", gemm_f32::fast_path_isa());
  const cuda::Availability avail = cuda::probe();
  if (!avail.usable) {
    fmt::print("gpus:     none usable: {}\n", avail.reason);
  } else {
    for (const DeviceInfo& d : cuda::list_devices())
      fmt::print("gpu:      {} {}  {}  {}  cc {}.{}  {} SMs  {} MiB  ECC {}  driver {} (CUDA {})  runtime {}\n", d.label(),
                 d.name, d.uuid, d.pci_bus_id, d.cc_major, d.cc_minor, d.sm_count, d.memory_bytes >> 20, d.ecc, d.driver,
                 d.driver_cuda, d.runtime);
  }
  fmt::print("patterns: {}\n", default_patterns_dir());
  fmt::print("compiler: {}\n", __VERSION__);
  return 0;
}

int cmd_golden(const std::string& dir, const std::vector<int>& cpus) {
  Battery battery;
  try {
    battery = load_battery_file(dir + "/battery.json");
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
  std::vector<const Case*> cases;
  for (const Case& c : battery.cases)
    if (has_cpu_golden(c.mode)) cases.push_back(&c);  // recorded/consensus goldens come from GPUs (`record`)
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0;
  const auto golden = compute_goldens(cases, cpus, [&](const Case& c) {
    ++done;
    fmt::print(stderr, "[{}/{}] {}\n", done, cases.size(), c.id);
  });
  try {
    write_goldens(dir, battery, golden);
  } catch (const FileError& e) {
    return config_error(e.what());
  }
  fmt::print("wrote goldens of {} cases to {}/golden and {}/manifest.json in {:.1f} s\n", golden.size(), dir, dir,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

int cmd_verify(const std::string& dir) {
  try {
    const PatternSet ps = load_patterns(dir);
    size_t tiles = 0;
    for (const auto& [id, g] : ps.golden) tiles += g.tile_digests.size();
    const RecordedGoldens recorded = load_recorded_goldens(dir);  // parsed too, not only hashed
    fmt::print("patterns ok: {} cases, {} profiles, {} tile digests, {} recorded goldens, every file matches "
               "manifest.json ({})\n",
               ps.battery.cases.size(), ps.battery.profiles.size(), tiles, recorded.size(), dir);
    return 0;
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
}

}  // namespace sdc
