// sdcscreen list: the families, modes, distributions, profiles and cases the patterns define.
#include <fmt/format.h>

#include "../core/patterns.h"
#include "../core/result.h"
#include "commands.h"

namespace sdc {
namespace {

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

}  // namespace sdc
