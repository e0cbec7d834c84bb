// elementwise_f32 on the CPU. The fast path runs each function over the whole tile (one loop per function,
// independent lanes, compiled in instruction-set clones); the specification computes element by element, the
// eight functions of one element in turn, unvectorized. Both call fpmath.h's functions, whose operations are
// fixed, so they agree bit for bit. Registration, inputs and output geometry here too (elementwise_f32.h).
#include <fmt/format.h>

#include <cstring>

#include "kernels/elementwise_f32/elementwise_f32.h"
#include "src/core/element_words.h"
#include "src/spec/clones.h"

namespace sdc::elementwise_f32 {
namespace {

// out[i * WORDS] = the stored bits of fn(x[i]) over a tile, one clone set per function (GCC clones no templates).
#define SDC_ELEMENTWISE_LOOP(name, fn)                                             \
  SDC_TARGET_CLONES("avx512f", "fma", "default") void name(const float* x, uint32_t* out) { \
    for (int i = 0; i < TILE; ++i) out[i * WORDS] = stored(fn(x[i]));              \
  }
SDC_ELEMENTWISE_LOOP(tile_exp, sdc_expf)
SDC_ELEMENTWISE_LOOP(tile_log, sdc_logf)
SDC_ELEMENTWISE_LOOP(tile_tanh, sdc_tanhf)
SDC_ELEMENTWISE_LOOP(tile_gelu, sdc_geluf)
SDC_ELEMENTWISE_LOOP(tile_silu, sdc_siluf)
SDC_ELEMENTWISE_LOOP(tile_rsqrt, sdc_rsqrtf)
SDC_ELEMENTWISE_LOOP(tile_sin, sdc_sinf)
SDC_ELEMENTWISE_LOOP(tile_cos, sdc_cosf)
#undef SDC_ELEMENTWISE_LOOP

constexpr const char* WORD_NAMES[WORDS] = {"exp", "log", "tanh", "gelu", "silu", "rsqrt", "sin", "cos"};

class ElementwiseProblem final : public ElementWordsProblem<TILE, WORDS, input_bits> {
 public:
  explicit ElementwiseProblem(const Case& c) : ElementWordsProblem(c, WORD_NAMES) {}

  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace&) const override {
    const float* x = in[0] + tile * TILE;
    uint32_t w[TILE_WORDS];
    tile_exp(x, w + EXP);
    tile_log(x, w + LOG);
    tile_tanh(x, w + TANH);
    tile_gelu(x, w + GELU);
    tile_silu(x, w + SILU);
    tile_rsqrt(x, w + RSQRT);
    tile_sin(x, w + SIN);
    tile_cos(x, w + COS);
    std::memcpy(out, w, sizeof w);
  }
  __attribute__((optimize("no-tree-vectorize"))) void compute_tile_scalar(const float* const* in, uint64_t tile,
                                                                          float* out) const override {
    const float* x = in[0] + tile * TILE;
    for (int i = 0; i < TILE; ++i) {
      uint32_t w[WORDS];
      outputs(x[i], w);
      std::memcpy(out + i * WORDS, w, sizeof w);
    }
  }
  double tile_flops() const override { return 20.0 * TILE * WORDS; }  // about 20 operations per function
};

std::string validate(const Case& c) { return check_shape(c, {{"n", TILE, MAX_N, TILE}}); }

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<ElementwiseProblem>(c); }

}  // namespace

Family family() {
  Family f{"elementwise_f32",
           "the project's exp, log, tanh, GELU, SiLU, rsqrt, sin and cos (fp32, fixed operations), bit-exact",
           {Mode::exact},
           {"cpu", "cuda"},
           {"n"},
           validate,
           prepare};
  f.defined_nans = true;
  return f;
}

}  // namespace sdc::elementwise_f32
