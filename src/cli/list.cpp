// sdcscreen list: the families, modes, distributions, profiles and cases the patterns define, as text
// (the default) or as one JSON document (--output-format json; its shape is in docs/families.md, section
// "sdcscreen list --output-format json").
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "src/core/coverage.h"
#include "src/core/patterns.h"
#include "src/core/result.h"
#include "src/util/say.h"
#include "src/cli/commands.h"

namespace sdc {
namespace {

const char* distribution_description(Distribution d) {
  switch (d) {
    case Distribution::uniform: return "multiples of 2^-23 in [-1, 1)";
    case Distribution::heavy_tail:
      return "uniform with 1 in 64 elements an outlier up to 2^12 larger (LLM activations)";
    case Distribution::special: return "exponents across subnormals, near underflow and, per tensor, near overflow";
    case Distribution::mantissa_walk:
      return "walking-one and walking-zero significands: every significand bit set and cleared";
  }
  return "";
}

constexpr Distribution DISTRIBUTIONS[] = {Distribution::uniform, Distribution::heavy_tail, Distribution::special,
                                          Distribution::mantissa_walk};
constexpr Mode MODES[] = {Mode::exact, Mode::exact_integer, Mode::recorded, Mode::consensus};

// The families that run in mode m, comma-separated.
std::string families_in_mode(Mode m) {
  std::string out;
  for (const Family& f : families())
    if (std::find(f.modes.begin(), f.modes.end(), m) != f.modes.end())
      out += std::string(out.empty() ? "" : ", ") + f.id;
  return out;
}

// A mode's description as the text listing wraps it: one string per line, continuation lines indented
// under the first. The JSON listing joins the lines with spaces.
std::vector<std::string> mode_description(Mode m) {
  switch (m) {
    case Mode::exact: return {"fully specified IEEE fp32 order; golden computed on the CPU, compared bit for bit"};
    case Mode::exact_integer:
      return {"tensor-core inputs whose every partial sum is exact in any order; golden in integer",
              "arithmetic on the CPU (for these families, uniform means random full significands",
              "and mantissa_walk walks A's fraction bits, over the family's bounded exponents;",
              "gemm_i8: int8 inputs summed in int32, docs/families.md)"};
    case Mode::recorded:
      return {"golden recorded on known-good devices of the same architecture (recordings are merged by",
              "'sdcscreen consensus'); a device with no recording falls back to consensus. Families:",
              families_in_mode(Mode::recorded)};
    case Mode::consensus:
      return {"repeats and devices of one node must agree bit for bit: the fallback of the recorded",
              "families, or a case's own mode"};
  }
  return {};
}

// The value ranges each listed case's inputs cover (src/core/coverage.h), by case id; none for a replay,
// whose model generates its own values from its seed.
std::map<std::string, std::vector<ValueRange>> listed_ranges(const Battery& b, const std::string& profile) {
  std::map<std::string, std::vector<ValueRange>> out;
  for (const Case& c : b.cases) {
    if (!profile.empty() && !c.iterations.count(profile)) continue;
    const Family& f = *find_family(c.family);
    out[c.id] = f.replay ? std::vector<ValueRange>{} : case_ranges(f, *f.prepare(c));
  }
  return out;
}

// Per family (table order) and range, the listed cases that cover it.
std::vector<std::pair<std::string, std::array<std::vector<std::string>, VALUE_RANGES>>> coverage_table(
    const Battery& b, const std::map<std::string, std::vector<ValueRange>>& ranges) {
  std::vector<std::pair<std::string, std::array<std::vector<std::string>, VALUE_RANGES>>> rows;
  for (const Family& f : families()) {
    rows.emplace_back(f.id, std::array<std::vector<std::string>, VALUE_RANGES>{});
    for (const Case& c : b.cases) {
      const auto it = ranges.find(c.id);
      if (c.family != f.id || it == ranges.end()) continue;
      for (ValueRange r : it->second) rows.back().second[static_cast<size_t>(r)].push_back(c.id);
    }
  }
  return rows;
}

void print_text(const Battery& b, const std::string& profile) {
  // Every column as wide as its longest entry, so that no long name pushes a row out of line. The names
  // of the first four sections share one width.
  size_t name_w = 20;
  for (const Family& f : families()) name_w = std::max(name_w, std::string_view(f.id).size());
  for (Mode m : MODES) name_w = std::max(name_w, std::string_view(mode_name(m)).size());
  for (Distribution d : DISTRIBUTIONS) name_w = std::max(name_w, std::string_view(distribution_name(d)).size());
  for (const Profile& p : b.profiles) name_w = std::max(name_w, p.name.size());
  struct Row {
    const Case* c;
    std::string shape, profiles;
  };
  std::vector<Row> rows;
  size_t id_w = 0, family_w = 0, distribution_w = 0, shape_w = 0;
  for (const Case& c : b.cases) {
    if (!profile.empty() && !c.iterations.count(profile)) continue;
    Row r{&c, "", ""};
    for (const auto& [k, v] : c.shape.dims) r.shape += fmt::format("{}{}={}", r.shape.empty() ? "" : " ", k, v);
    for (const auto& [p, n] : c.iterations) r.profiles += fmt::format("{}{}x{}", r.profiles.empty() ? "" : " ", p, n);
    id_w = std::max(id_w, c.id.size());
    family_w = std::max(family_w, c.family.size());
    distribution_w = std::max(distribution_w, std::string_view(distribution_name(c.distribution)).size());
    shape_w = std::max(shape_w, r.shape.size());
    rows.push_back(std::move(r));
  }
  say("families:\n");
  for (const Family& f : families()) {
    std::string modes;
    for (Mode m : f.modes) modes += std::string(modes.empty() ? "" : ",") + mode_name(m);
    say("  {:<{}} [{}] {}\n", f.id, name_w, modes, f.description);
  }
  say("modes:\n");
  for (Mode m : MODES) {
    const std::vector<std::string> lines = mode_description(m);
    for (size_t i = 0; i < lines.size(); ++i) say("  {:<{}} {}\n", i == 0 ? mode_name(m) : "", name_w, lines[i]);
  }
  say("distributions:\n");
  for (Distribution d : DISTRIBUTIONS) say("  {:<{}} {}\n", distribution_name(d), name_w, distribution_description(d));
  say("profiles:\n");
  for (const Profile& p : b.profiles)
    say("  {:<{}} budget {:>6.0f} s  {}\n", p.name, name_w, p.time_budget_s, p.description);
  say("cases:\n");
  for (const Row& r : rows)
    say("  {:<{}} {:<{}} {:<{}} {:<{}} {}\n", r.c->id, id_w, r.c->family, family_w,
        distribution_name(r.c->distribution), distribution_w, r.shape, shape_w, r.profiles);
  say("value ranges:\n");
  for (size_t r = 0; r < VALUE_RANGES; ++r)
    say("  {:<{}} {}\n", range_name(static_cast<ValueRange>(r)), name_w, range_description(static_cast<ValueRange>(r)));
  say("coverage:\n  ({}cases of each family with at least 1 in {} sampled input values in each range; - none; a "
      "training-step replay's model makes its own values)\n",
      profile.empty() ? "" : "the " + profile + " profile's ", RANGE_SHARE);
  std::string head = fmt::format("  {:<{}}", "family", name_w);
  for (size_t r = 0; r < VALUE_RANGES; ++r) head += fmt::format(" {:>9}", range_name(static_cast<ValueRange>(r)));
  say("{}\n", head);
  for (const auto& [family, cells] : coverage_table(b, listed_ranges(b, profile))) {
    std::string line = fmt::format("  {:<{}}", family, name_w);
    for (const auto& cases : cells) line += fmt::format(" {:>9}", cases.empty() ? "-" : std::to_string(cases.size()));
    say("{}\n", line);
  }
}

// Tiles whose elements the listing samples: up to this many, spread evenly from the first to the last.
constexpr uint64_t SAMPLED_TILES = 8;

nlohmann::json element_json(const Problem& p, uint64_t tile, uint32_t offset) {
  const uint64_t e = p.logical_element(tile, offset);
  return {{"element", e}, {"tile", tile}, {"offset", offset}, {"name", p.element_name(e)}};
}

// The case's geometry, from its prepared Problem: what an injection or a reader of a report needs to
// name an element or a tile without repeating the family's layout.
nlohmann::json geometry_json(const Case& c) {
  const auto p = find_family(c.family)->prepare(c);
  nlohmann::json g = {{"tile_count", p->tile_count()},
                      {"tile_elements", p->tile_elements()},
                      {"output_elements", p->output_elements()}};
  g["inputs"] = nlohmann::json::array();
  for (const TensorInfo& t : p->inputs()) g["inputs"].push_back({{"name", t.name}, {"elements", t.elements}});
  const uint64_t tiles = p->tile_count();
  const uint32_t last = p->tile_elements() - 1;
  g["tiles"] = {{{"tile", 0}, {"name", p->tile_name(0)}}, {{"tile", tiles - 1}, {"name", p->tile_name(tiles - 1)}}};
  g["elements"] = nlohmann::json::array();
  const uint64_t n = std::min(tiles, SAMPLED_TILES);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t = n == 1 ? 0 : i * (tiles - 1) / (n - 1);
    for (uint32_t offset : {0u, last / 2, last}) g["elements"].push_back(element_json(*p, t, offset));
  }
  return g;
}

void print_json(const Battery& b, const std::string& profile) {
  nlohmann::json j = {{"format", "sdcscreen-list"}, {"version", 1}};
  j["families"] = nlohmann::json::array();
  for (const Family& f : families()) {
    std::vector<std::string> modes;
    for (Mode m : f.modes) modes.push_back(mode_name(m));
    j["families"].push_back({{"id", f.id},
                             {"description", f.description},
                             {"modes", modes},
                             {"backends", f.backends},
                             {"device_side", f.device_side},
                             {"shape_keys", f.shape_keys},
                             {"optional_shape_keys", f.optional_shape_keys}});
  }
  j["modes"] = nlohmann::json::array();
  for (Mode m : MODES) {
    std::string text;
    for (const std::string& line : mode_description(m)) text += (text.empty() ? "" : " ") + line;
    j["modes"].push_back({{"name", mode_name(m)}, {"description", text}});
  }
  j["distributions"] = nlohmann::json::array();
  for (Distribution d : DISTRIBUTIONS)
    j["distributions"].push_back({{"name", distribution_name(d)}, {"description", distribution_description(d)}});
  j["profiles"] = nlohmann::json::array();
  for (const Profile& p : b.profiles)
    j["profiles"].push_back(
        {{"name", p.name}, {"description", p.description}, {"time_budget_s", p.time_budget_s}, {"fill", p.fill}});
  j["value_ranges"] = nlohmann::json::array();
  for (size_t r = 0; r < VALUE_RANGES; ++r)
    j["value_ranges"].push_back({{"name", range_name(static_cast<ValueRange>(r))},
                                 {"description", range_description(static_cast<ValueRange>(r))}});
  const auto ranges = listed_ranges(b, profile);
  j["coverage"] = nlohmann::json::array();
  for (const auto& [family, cells] : coverage_table(b, ranges)) {
    nlohmann::json row = {{"family", family}};
    for (size_t r = 0; r < VALUE_RANGES; ++r) row["cases"][range_name(static_cast<ValueRange>(r))] = cells[r];
    j["coverage"].push_back(row);
  }
  j["cases"] = nlohmann::json::array();
  for (const Case& c : b.cases) {
    if (!profile.empty() && !c.iterations.count(profile)) continue;
    std::vector<std::string> names;
    for (ValueRange r : ranges.at(c.id)) names.push_back(range_name(r));
    j["cases"].push_back({{"id", c.id},
                          {"family", c.family},
                          {"mode", mode_name(c.mode)},
                          {"distribution", distribution_name(c.distribution)},
                          {"data_seed", c.data_seed},
                          {"shape", c.shape.dims},
                          {"iterations", c.iterations},
                          {"value_ranges", names},
                          {"geometry", geometry_json(c)}});
  }
  say("{}\n", j.dump(1));
}

}  // namespace

int cmd_list(const ListArgs& a, const std::string& patterns_dir) {
  Battery b;
  try {
    b = load_patterns(patterns_dir, false).battery;
  } catch (const PatternError& e) {
    return config_error(e.what());
  }
  if (!a.profile.empty() && !b.find_profile(a.profile))
    return usage_error(fmt::format("unknown profile '{}'", a.profile));
  if (a.output_format == "json")
    print_json(b, a.profile);
  else
    print_text(b, a.profile);
  return 0;
}

}  // namespace sdc
