// Every family: the fast path equals the specification bit for bit on every tile of small cases of every
// distribution; outputs are free of NaN; the output geometry is consistent; inputs matter.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "src/core/family.h"
#include "src/core/family_util.h"
#include "src/spec/digest.h"
#include "src/spec/generator.h"

using namespace sdc;

namespace {

Case make_case(const std::string& family, Distribution d, std::map<std::string, int64_t> dims, uint64_t seed = 77) {
  Case c;
  c.id = family + ".unit_test";
  c.family = family;
  c.distribution = d;
  c.data_seed = seed;
  c.shape.dims = std::move(dims);
  c.iterations["boot"] = 1;
  return c;
}

// Small cases of the families, in every distribution each defines: those of a family with a folder of its
// own by its id (folder_cases), those of a tensor-core GEMM by its table line's kind.
struct SmallCases {
  std::vector<Distribution> distributions;
  std::vector<std::map<std::string, int64_t>> shapes;
};

const std::vector<Distribution> ALL_DISTRIBUTIONS = {Distribution::uniform, Distribution::heavy_tail,
                                                     Distribution::special, Distribution::mantissa_walk};

const std::map<std::string, SmallCases>& folder_cases() {
  static const std::map<std::string, SmallCases> cases = {
      {"gemm_f32", {ALL_DISTRIBUTIONS, {{{"m", 128}, {"n", 192}, {"k", 77}}}}},
      {"attention_f32",
       {ALL_DISTRIBUTIONS,
        {{{"heads", 2}, {"seq", 96}, {"dim", 40}, {"causal", 1}},
         {{"heads", 1}, {"seq", 64}, {"dim", 128}, {"causal", 0}}}}},
      {"reduce_sum_f32", {ALL_DISTRIBUTIONS, {{{"rows", 32}, {"cols", 1000}}}}},
      {"softmax_f32", {ALL_DISTRIBUTIONS, {{{"rows", 8}, {"cols", 777}}}}},
      {"rmsnorm_f32", {ALL_DISTRIBUTIONS, {{{"rows", 8}, {"cols", 513}}}}},
      {"cross_entropy_f32", {ALL_DISTRIBUTIONS, {{{"tokens", 32}, {"vocab", 1001}}}}},
      {"gemm_f64", {ALL_DISTRIBUTIONS, {{{"m", 128}, {"n", 192}, {"k", 77}}}}},
      {"reduce_sum_f64", {ALL_DISTRIBUTIONS, {{{"rows", 32}, {"cols", 1000}}, {{"rows", 16}, {"cols", 5}}}}},
      {"convert_f32", {ALL_DISTRIBUTIONS, {{{"n", 4096}}, {{"n", 512}}}}},
      {"elementwise_f32", {ALL_DISTRIBUTIONS, {{{"n", 4096}}, {{"n", 512}}}}},
      {"sfu_f32", {ALL_DISTRIBUTIONS, {{{"n", 4096}}, {{"n", 512}}}}},
      {"gemm_i8",
       {ALL_DISTRIBUTIONS,
        {{{"m", 128}, {"n", 128}, {"k", 260}, {"engine", 0}}, {{"m", 64}, {"n", 64}, {"k", 4}, {"engine", 1}}}}},
      // The tensor-core attentions: the exact-integer pattern defines uniform and mantissa_walk,
      // attention_bf16 uniform only.
      {"attention_bf16_exactint",
       {{Distribution::uniform, Distribution::mantissa_walk},
        {{{"heads", 2}, {"seq", 128}, {"dim", 32}, {"causal", 1}}}}},
      {"attention_bf16", {{Distribution::uniform}, {{{"heads", 2}, {"seq", 128}, {"dim", 64}, {"causal", 0}}}}},
      // The training-step replay generates its own data (the uniform distribution only), tiny preset.
      {"train_step_f32",
       {{Distribution::uniform},
        {{{"preset", 0}, {"level", 12}, {"steps", 2}, {"optimizer", 0}, {"replicas", 2}},
         {{"preset", 0}, {"level", 3}, {"steps", 2}, {"optimizer", 0}, {"replicas", 2}}}}},
      {"train_step_bf16",  // the same replay in bf16 mixed precision
       {{Distribution::uniform}, {{{"preset", 0}, {"level", 12}, {"steps", 1}, {"optimizer", 1}, {"replicas", 1}}}}},
      // The memory test has no inputs (the distribution is not read): slices of a CPU buffer.
      {"memtest_u32",
       {{Distribution::uniform},
        {{{"slices", 4}, {"cpu_slice_words", 256}, {"region_mib", 1}, {"free_permille", 0}},
         {{"slices", 2}, {"cpu_slice_words", 4}, {"region_mib", 0}, {"free_permille", 900}}}}},
      // 8 x 513: spans of 4 on the device, the last one short; 4 x 3: fewer elements than threads per row.
      {"rmsnorm_f64", {ALL_DISTRIBUTIONS, {{{"rows", 8}, {"cols", 513}}, {{"rows", 4}, {"cols", 3}}}}},
  };
  return cases;
}

// A tensor-core GEMM line's: exact-integer patterns define uniform and mantissa_walk, recorded ones
// uniform and heavy_tail; K a multiple of 32, as both engines take it.
const SmallCases EXACTINT_GEMM = {{Distribution::uniform, Distribution::mantissa_walk},
                                  {{{"m", 128}, {"n", 64}, {"k", 96}}}};
const SmallCases RECORDED_GEMM = {{Distribution::uniform, Distribution::heavy_tail},
                                  {{{"m", 128}, {"n", 64}, {"k", 96}}}};

// Small cases of every family of the table (kernels/families.def, read here line by line). A family of the
// table without one fails "every family has a small case" below: it is never skipped silently.
std::vector<Case> small_cases() {
  std::vector<Case> out;
  const auto add = [&](const char* family, const SmallCases& s) {
    for (Distribution d : s.distributions)
      for (const auto& dims : s.shapes) out.push_back(make_case(family, d, dims));
  };
  const auto add_folder = [&](const char* family) {
    const auto it = folder_cases().find(family);
    if (it != folder_cases().end()) add(family, it->second);
  };
#define SDC_FAMILY(id) add_folder(#id);
#define SDC_GEMM_EXACTINT(id, engine, format) add(#id, EXACTINT_GEMM);
#define SDC_GEMM_RECORDED(id, engine, format) add(#id, RECORDED_GEMM);
#include "kernels/families.def"
  return out;
}

// A family has a CPU reference when one of its modes has a golden computed on the CPU; the others
// (recorded, consensus) are judged on GPUs only.
bool has_cpu_reference(const Family& f) { return std::any_of(f.modes.begin(), f.modes.end(), has_cpu_golden); }

// Whether a tile holds a NaN, read as the family's values (two words per binary64 value, low half first).
bool has_nan(const Family& f, const std::vector<float>& tile) {
  REQUIRE((f.value_words == 1 || tile.size() % 2 == 0));
  return output_has_nan(f, tile.data(), tile.size());
}

}  // namespace

TEST_CASE("every family is registered with a unique snake_case id", "[families]") {
  std::set<std::string> ids;
  for (const Family& f : families()) {
    REQUIRE(ids.insert(f.id).second);
    for (const char* ch = f.id; *ch; ++ch) REQUIRE((std::islower(*ch) || std::isdigit(*ch) || *ch == '_'));
  }
  for (const char* id :
       {"gemm_f32", "attention_f32", "reduce_sum_f32", "softmax_f32", "rmsnorm_f32", "cross_entropy_f32"})
    REQUIRE(find_family(id) != nullptr);
}

TEST_CASE("every family has a small case, valid and with a uniform one among them", "[families]") {
  const std::vector<Case> cases = small_cases();
  for (const Family& f : families()) {
    INFO(f.id);
    REQUIRE(std::any_of(cases.begin(), cases.end(),
                        [&](const Case& c) { return c.family == f.id && c.distribution == Distribution::uniform; }));
  }
  for (const Case& c : cases) {
    INFO(c.family << " " << static_cast<int>(c.distribution));
    REQUIRE(find_family(c.family) != nullptr);
    REQUIRE(find_family(c.family)->validate(c) == "");
  }
  for (const auto& [id, s] : folder_cases()) {  // no small cases of a family that is not in the table
    INFO(id);
    REQUIRE(find_family(id) != nullptr);
  }
}

TEST_CASE("a family's backends are the ones it declares, and its device side is bound exactly when one is",
          "[families]") {
  for (const Family& f : families()) {
    INFO(f.id);
    std::set<std::string> seen;
    for (const std::string& b : f.backends) {
      REQUIRE((b == "cpu" || b == "cuda"));
      REQUIRE(seen.insert(b).second);
    }
    const bool cuda = seen.count("cuda") != 0;
#if SDC_HAVE_CUDA
    REQUIRE(cuda == (f.prepare_cuda != nullptr));
    REQUIRE(!f.backends.empty());
#else
    REQUIRE(!cuda);  // a build without CUDA offers no CUDA backend
    REQUIRE(f.prepare_cuda == nullptr);
#endif
    // A CPU backend needs a CPU reference to compare with.
    if (seen.count("cpu")) REQUIRE(has_cpu_reference(f));
  }
}

TEST_CASE("a family replays training steps exactly when it says so: its problems have the replay side", "[families]") {
  std::string ids;
  for (const Family& f : families())
    if (f.replay) ids += (ids.empty() ? "" : ", ") + std::string(f.id);
  CHECK(!ids.empty());  // the replay's paths (reference, in-tile faults) have a family to run them
  CHECK(replay_family_ids() == ids);
  for (const Case& c : small_cases()) {
    INFO(c.family);
    const Family* f = find_family(c.family);
    REQUIRE(f != nullptr);
    CHECK(f->replay == (f->prepare(c)->replay() != nullptr));
  }
}

TEST_CASE("fast path equals the specification on every tile, with no NaN", "[families]") {
  for (const Case& c : small_cases()) {
    INFO(c.family << " " << static_cast<int>(c.distribution));
    if (!has_cpu_reference(*find_family(c.family))) {  // recorded or consensus: no CPU reference to run
      const auto p = find_family(c.family)->prepare(c);
      std::vector<float> out(p->tile_elements());
      Workspace ws;
      REQUIRE_THROWS_AS(p->compute_tile(nullptr, 0, out.data(), ws), std::logic_error);
      REQUIRE_THROWS_AS(p->compute_tile_scalar(nullptr, 0, out.data()), std::logic_error);
      continue;
    }
    const Family& f = *find_family(c.family);
    test::for_each_tile_both_ways(test::prepare_inputs(c), [&f](uint64_t, const auto& fast, const auto& spec) {
      REQUIRE(std::memcmp(fast.data(), spec.data(), fast.size() * sizeof(float)) == 0);
      REQUIRE(!has_nan(f, fast));
    });
  }
}

TEST_CASE("output geometry: locate and logical_element are inverse and cover the output", "[families]") {
  for (const Case& c : small_cases()) {
    if (c.distribution != Distribution::uniform) continue;
    INFO(c.family);
    const auto p = find_family(c.family)->prepare(c);
    REQUIRE(p->output_elements() == p->tile_count() * p->tile_elements());
    std::vector<char> seen(p->output_elements(), 0);
    for (uint64_t t = 0; t < p->tile_count(); ++t)
      for (uint32_t o = 0; o < p->tile_elements(); ++o) {
        const uint64_t e = p->logical_element(t, o);
        REQUIRE(e < p->output_elements());
        REQUIRE(!seen[e]);
        seen[e] = 1;
        uint64_t t2;
        uint32_t o2;
        p->locate(e, t2, o2);
        REQUIRE(t2 == t);
        REQUIRE(o2 == o);
      }
    REQUIRE(!p->element_name(0).empty());
    REQUIRE(!p->tile_name(0).empty());
  }
}

TEST_CASE("a flipped input element changes the output (the computation reads its inputs)", "[families]") {
  for (const Case& c : small_cases()) {
    if (c.distribution != Distribution::uniform || !has_cpu_reference(*find_family(c.family))) continue;
    if (find_family(c.family)->replay) continue;  // the replay generates its own data: its input is a placeholder
    INFO(c.family);
    test::CaseInputs k = test::prepare_inputs(c);
    const uint32_t te = k.p->tile_elements();
    std::vector<float> before(te), after(te);
    Workspace ws;
    k.p->compute_tile(k.ptrs.data(), 0, before.data(), ws);
    // Element 0 of every input feeds tile 0 in every family, except that a causal first query row sees
    // one key only (its softmax is 1 whatever its score): there, row 5 of each tensor.
    const bool attention = c.family == "attention_f32" || c.family == "attention_bf16_exactint";
    const size_t e = attention ? static_cast<size_t>(5 * c.shape.dims.at("dim")) : 0;
    for (auto& v : k.in) {
      v[e] = -v[e];
      k.p->compute_tile(k.ptrs.data(), 0, after.data(), ws);
      REQUIRE(tile_digest(0, before.data(), te) != tile_digest(0, after.data(), te));
      v[e] = -v[e];
    }
  }
}

TEST_CASE("exponent windows keep the largest allowed shapes free of NaN", "[families]") {
  // The worst cases of the windows' proofs in the kernels' headers: the largest reduction length each
  // family allows with the special distribution.
  const std::vector<Case> worst = {
      make_case("gemm_f32", Distribution::special, {{"m", 64}, {"n", 64}, {"k", 8192}}),
      make_case("attention_f32", Distribution::special, {{"heads", 1}, {"seq", 8192}, {"dim", 128}, {"causal", 0}}),
      make_case("reduce_sum_f32", Distribution::special, {{"rows", 16}, {"cols", 65536}}),
      make_case("rmsnorm_f32", Distribution::special, {{"rows", 4}, {"cols", 16384}}),
      make_case("softmax_f32", Distribution::special, {{"rows", 4}, {"cols", 131072}}),
      make_case("cross_entropy_f32", Distribution::special, {{"tokens", 16}, {"vocab", 262144}}),
      make_case("gemm_f64", Distribution::special, {{"m", 64}, {"n", 64}, {"k", 8192}}),
      make_case("reduce_sum_f64", Distribution::special, {{"rows", 16}, {"cols", 65536}}),
      make_case("rmsnorm_f64", Distribution::special, {{"rows", 4}, {"cols", 16384}}),
  };
  for (const Case& c : worst) {
    INFO(c.family);
    test::CaseInputs k = test::prepare_inputs(c);
    std::vector<float> out(k.p->tile_elements());
    Workspace ws;
    k.p->compute_tile(k.ptrs.data(), 0, out.data(), ws);
    REQUIRE(!has_nan(*find_family(c.family), out));
  }
}

TEST_CASE("shape validation rejects what the kernels cannot compute", "[families]") {
  REQUIRE(!find_family("gemm_f32")
               ->validate(make_case("gemm_f32", Distribution::uniform, {{"m", 100}, {"n", 64}, {"k", 8}}))
               .empty());
  REQUIRE(!find_family("gemm_f32")
               ->validate(make_case("gemm_f32", Distribution::uniform, {{"m", 64}, {"n", 64}, {"k", 9000}}))
               .empty());
  REQUIRE(
      !find_family("gemm_f32")->validate(make_case("gemm_f32", Distribution::uniform, {{"m", 64}, {"n", 64}})).empty());
  REQUIRE(!find_family("softmax_f32")
               ->validate(make_case("softmax_f32", Distribution::uniform, {{"rows", 4}, {"cols", 8}, {"x", 1}}))
               .empty());
  REQUIRE(!find_family("attention_f32")
               ->validate(make_case("attention_f32", Distribution::uniform,
                                    {{"heads", 1}, {"seq", 40}, {"dim", 8}, {"causal", 0}}))
               .empty());
  REQUIRE(find_family("attention_f32")
              ->validate(make_case("attention_f32", Distribution::uniform,
                                   {{"heads", 1}, {"seq", 64}, {"dim", 8}, {"causal", 0}}))
              .empty());
}
