// The bf16 tensor-core attention kernel's index math on the host (no GPU here): the kernel's own SDC_HD
// fragment maps (kernels/attention_mma/attention_mma.h) run for every lane of every warp with an emulated
// mma.sync whose element maps are written from the PTX ISA's tables, in the kernel's staging layouts and
// key-block loops; the result must equal the exact reference bit for bit, and planted index faults must
// make it differ. Also the recorded family's generator, geometry and refusal of a CPU reference.
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <vector>

#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"
#include "kernels/attention_bf16/attention_bf16.h"
#include "kernels/attention_bf16_exactint/attention_bf16_exactint.h"
#include "src/core/family.h"

using namespace sdc;
namespace ax = sdc::attention_bf16_exactint;
namespace am = sdc::attention_mma;

namespace {

// PTX ISA, "Matrix fragments for mma.m16n8k16" (.bf16), element i of a lane's fragment (register i / 2,
// low half for even i); g = groupID, t = threadID_in_group.
struct At {
  int row, col;
};
At ptx_a(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {(i < 2 || (i >= 4 && i < 6)) ? g : g + 8, t * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
At ptx_b(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};
}
At ptx_c(int lane, int i) {
  const int g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

double half_value(uint32_t reg, int half) { return am::bf16_value(static_cast<uint16_t>(reg >> (16 * half))); }

using WarpA = uint32_t[32][4];
using WarpB = uint32_t[32][2];
using WarpD = float[32][4];

// One warp's mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32, D = A B + D. The sums are exact for the pattern's
// inputs (the header's bounds), so double and any order give the tensor cores' result.
void emulate_mma(const WarpA& a, const WarpB& b, WarpD& d) {
  double A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) A[ptx_a(lane, i).row][ptx_a(lane, i).col] = half_value(a[lane][i / 2], i % 2);
    for (int i = 0; i < 4; ++i) B[ptx_b(lane, i).row][ptx_b(lane, i).col] = half_value(b[lane][i / 2], i % 2);
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const At e = ptx_c(lane, i);
      double s = d[lane][i];
      for (int k = 0; k < 16; ++k) s += A[e.row][k] * B[k][e.col];
      d[lane][i] = static_cast<float>(s);
    }
}

enum class Fault { none, pv_halves_swapped, score_rows_swapped, pv_key_block_offset };

// attention_kernel's tile (attention_mma.cuh) with its shared-memory layouts, loops and fragment maps.
std::vector<float> emulate_tile(const Case& c, uint64_t tile, Fault fault) {
  const int64_t seq = c.shape.dims.at("seq"), dim = c.shape.dims.at("dim");
  const bool causal = c.shape.dims.at("causal") != 0;
  const ax::Pattern pat = ax::make_pattern(seq, dim, c.data_seed, c.distribution == Distribution::mantissa_walk);
  const int64_t head = static_cast<int64_t>(tile) / (seq / 64), i0 = static_cast<int64_t>(tile) % (seq / 64) * 64;
  const int64_t keys = causal ? i0 + 64 : seq;
  const auto bits = [&](uint32_t t, int64_t row, int64_t d) {
    return static_cast<uint32_t>(ax::element_bits(pat, t, static_cast<uint64_t>((head * seq + row) * dim + d)));
  };
  const float scale = ax::score_scale(pat, head);

  std::vector<uint32_t> qs(64 * am::LD), ks(64 * am::LD);
  for (int r = 0; r < 64; ++r)
    for (int w = 0; w < dim / 2; ++w) qs[r * am::LD + w] = bits(0, i0 + r, 2 * w) | bits(0, i0 + r, 2 * w + 1) << 16;
  std::vector<float> s(static_cast<size_t>(64 * keys));
  for (int64_t j0 = 0; j0 < keys; j0 += 64) {
    for (int r = 0; r < 64; ++r)
      for (int w = 0; w < dim / 2; ++w) ks[r * am::LD + w] = bits(1, j0 + r, 2 * w) | bits(1, j0 + r, 2 * w + 1) << 16;
    for (int warp = 0; warp < 4; ++warp) {
      static float acc[2][4][32][4];
      std::memset(acc, 0, sizeof acc);
      for (int step = 0; step < dim / 16; ++step) {
        uint32_t af[32][2][4], bf[32][4][2];
        for (int lane = 0; lane < 32; ++lane)
          am::score_fragments(qs.data(), ks.data(), warp, step, lane, af[lane], bf[lane]);
        if (fault == Fault::score_rows_swapped)
          for (int lane = 0; lane < 32; ++lane) std::swap(af[lane][0][0], af[lane][0][1]);
        for (int mi = 0; mi < 2; ++mi)
          for (int ni = 0; ni < 4; ++ni) {
            WarpA a;
            WarpB b;
            for (int lane = 0; lane < 32; ++lane) {
              std::memcpy(a[lane], af[lane][mi], sizeof a[lane]);
              std::memcpy(b[lane], bf[lane][ni], sizeof b[lane]);
            }
            emulate_mma(a, b, acc[mi][ni]);
          }
      }
      for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 4; ++ni)
          for (int lane = 0; lane < 32; ++lane)
            for (int cc = 0; cc < 4; ++cc)
              s[am::score_row(warp, mi, lane, cc) * keys + j0 + am::score_key(warp, ni, lane, cc)] =
                  acc[mi][ni][lane][cc] * scale;
    }
  }
  // The softmax as specified (the kernel's warp-parallel form is proved equal in chunked_reduce.h).
  std::vector<uint16_t> p(static_cast<size_t>(64 * keys), 0);
  float l[64];
  for (int r = 0; r < 64; ++r) {
    const auto n = static_cast<uint32_t>(causal ? i0 + r + 1 : seq);
    float* row = s.data() + r * keys;
    const float m = fold_max([&](uint32_t j) { return row[j]; }, n);
    for (uint32_t j = 0; j < n; ++j) row[j] = sdc_expf(row[j] - m);
    l[r] = pairwise_sum([&](uint32_t j) { return row[j]; }, n);
    for (uint32_t j = 0; j < n; ++j) p[r * keys + j] = am::bf16_bits(am::grid_weight(row[j]));
  }
  static float acc[4][16][32][4];
  std::memset(acc, 0, sizeof acc);
  std::vector<uint32_t> ps(64 * am::LD);
  std::vector<uint16_t> vs(64 * am::LD_HALF);
  for (int64_t j0 = 0; j0 < keys; j0 += 64) {
    const int64_t v0 = fault == Fault::pv_key_block_offset && j0 > 0 ? j0 - 1 : j0;
    for (int r = 0; r < 64; ++r)
      for (int w = 0; w < 32; ++w)
        ps[r * am::LD + w] = p[r * keys + j0 + 2 * w] | uint32_t{p[r * keys + j0 + 2 * w + 1]} << 16;
    for (int kk = 0; kk < 64; ++kk)
      for (int d = 0; d < dim; ++d) vs[kk * am::LD_HALF + d] = static_cast<uint16_t>(bits(2, v0 + kk, d));
    for (int warp = 0; warp < 4; ++warp)
      for (int step = 0; step < 4; ++step) {
        WarpA a;
        for (int lane = 0; lane < 32; ++lane) am::pv_a_fragment(ps.data(), warp, step, lane, a[lane]);
        for (int ni = 0; ni < dim / 8; ++ni) {
          WarpB b;
          for (int lane = 0; lane < 32; ++lane) {
            am::pv_b_fragment(vs.data(), step, ni, lane, b[lane]);
            if (fault == Fault::pv_halves_swapped) b[lane][1] = b[lane][1] >> 16 | b[lane][1] << 16;
          }
          emulate_mma(a, b, acc[warp][ni]);
        }
      }
  }
  std::vector<float> out(static_cast<size_t>(64 * dim));
  for (int warp = 0; warp < 4; ++warp)
    for (int ni = 0; ni < dim / 8; ++ni)
      for (int lane = 0; lane < 32; ++lane)
        for (int cc = 0; cc < 4; ++cc) {
          const int row = am::pv_row(warp, lane, cc);
          out[row * dim + am::pv_col(ni, lane, cc)] = acc[warp][ni][lane][cc] / l[row];
        }
  return out;
}

Case make_case(const std::string& family, int64_t heads, int64_t seq, int64_t dim, bool causal,
               Distribution d = Distribution::uniform) {
  Case c;
  c.id = family + ".unit_test";
  c.family = family;
  c.mode = family == "attention_bf16" ? Mode::recorded : Mode::exact_integer;
  c.distribution = d;
  c.data_seed = 5;
  c.shape.dims = {{"heads", heads}, {"seq", seq}, {"dim", dim}, {"causal", causal ? 1 : 0}};
  c.iterations["boot"] = 1;
  return c;
}

std::vector<float> reference_tile(const Case& c, uint64_t tile) {
  const test::CaseInputs k = test::prepare_inputs(c);
  std::vector<float> out(k.p->tile_elements());
  Workspace ws;
  k.p->compute_tile(k.ptrs.data(), tile, out.data(), ws);
  return out;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("attention_mma: the kernel's fragment maps with an emulated mma.sync give the reference",
          "[attention_bf16]") {
  for (const Case& c : {make_case("attention_bf16_exactint", 2, 192, 48, true),
                        make_case("attention_bf16_exactint", 1, 128, 128, false, Distribution::mantissa_walk),
                        make_case("attention_bf16_exactint", 1, 128, 16, false)}) {
    const uint64_t tiles = static_cast<uint64_t>(c.shape.dims.at("heads") * c.shape.dims.at("seq") / 64);
    for (uint64_t t = 0; t < tiles; ++t) {
      INFO("dim " << c.shape.dims.at("dim") << " causal " << c.shape.dims.at("causal") << " tile " << t);
      REQUIRE(same_bits(emulate_tile(c, t, Fault::none), reference_tile(c, t)));
    }
  }
}

TEST_CASE("attention_mma: the emulation detects planted index faults", "[attention_bf16]") {
  const Case c = make_case("attention_bf16_exactint", 1, 128, 32, false);
  const std::vector<float> ref = reference_tile(c, 1);
  REQUIRE(same_bits(emulate_tile(c, 1, Fault::none), ref));
  for (Fault f : {Fault::pv_halves_swapped, Fault::score_rows_swapped, Fault::pv_key_block_offset}) {
    INFO("fault " << static_cast<int>(f));
    REQUIRE(!same_bits(emulate_tile(c, 1, f), ref));
  }
}

TEST_CASE("attention_bf16: random bf16 inputs, the shared geometry, no CPU reference", "[attention_bf16]") {
  const Family* f = find_family("attention_bf16");
  REQUIRE(f != nullptr);
  REQUIRE(f->modes == std::vector<Mode>{Mode::recorded, Mode::consensus});
  for (const std::string& b : f->backends) REQUIRE(b != "cpu");
  REQUIRE(!has_cpu_golden(Mode::recorded));
  const Case c = make_case("attention_bf16", 2, 128, 64, true);
  REQUIRE(f->validate(c) == "");
  REQUIRE(!f->validate(make_case("attention_bf16", 2, 100, 64, true)).empty());
  REQUIRE(!f->validate(make_case("attention_bf16", 2, 128, 72, true)).empty());
  const auto p = f->prepare(c);
  const auto ex =
      find_family("attention_bf16_exactint")->prepare(make_case("attention_bf16_exactint", 2, 128, 64, true));
  REQUIRE(p->tile_count() == ex->tile_count());
  REQUIRE(p->tile_elements() == ex->tile_elements());
  REQUIRE(p->tile_name(3) == ex->tile_name(3));
  REQUIRE(p->tile_name(3) == "O[1][64:128][:]");

  const attention_bf16::Params params = attention_bf16::make_params(c.data_seed, 64);
  REQUIRE(params.scale == 1.0f / std::sqrt(64.0f));
  const uint64_t n = p->inputs().at(1).elements;
  std::vector<float> k(n);
  p->generate_input(1, 0, n, k.data());
  std::set<int> exps;
  std::set<uint32_t> fracs, signs;
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t b = attention_bf16::element_bits(params, 1, i);
    REQUIRE(am::bf16_value(b) == k[i]);
    exps.insert(((b >> 7) & 0xff) - 127);
    fracs.insert(b & 0x7fu);
    signs.insert(b >> 15);
  }
  REQUIRE(exps.size() == attention_bf16::EXP_MAX - attention_bf16::EXP_MIN + 1);
  REQUIRE((*exps.begin() == attention_bf16::EXP_MIN && *exps.rbegin() == attention_bf16::EXP_MAX));
  REQUIRE(fracs.size() == 128);
  REQUIRE(signs.size() == 2);
  REQUIRE(attention_bf16::element_bits(params, 0, 7) != attention_bf16::element_bits(params, 1, 7));

  // P rounded to bf16, ties to even.
  REQUIRE(attention_bf16::weight(1.0f + std::ldexp(1.0f, -8)) == 1.0f);
  REQUIRE(attention_bf16::weight(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));
  REQUIRE(attention_bf16::weight(0.3f) == am::bf16_value(0x3e9a));

  std::vector<float> out(p->tile_elements());
  Workspace ws;
  const float* in[3] = {k.data(), k.data(), k.data()};
  REQUIRE_THROWS_AS(p->compute_tile(in, 0, out.data(), ws), std::logic_error);
  REQUIRE_THROWS_AS(p->compute_tile_scalar(in, 0, out.data()), std::logic_error);
}
