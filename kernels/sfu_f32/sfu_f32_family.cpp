// sfu_f32 on the CPU: the family's registration, shape check, geometry and input generation (the reports name
// tiles and elements and show input values with them). There is no CPU reference: the SFU's approximations
// are the hardware's, so recorded and consensus cases are judged on GPUs only (sfu_f32.h).
#include <fmt/format.h>

#include <stdexcept>

#include "kernels/sfu_f32/sfu_f32.h"
#include "src/core/element_words.h"

namespace sdc::sfu_f32 {
namespace {

class SfuProblem final : public ElementWordsProblem<TILE, WORDS, input_bits> {
 public:
  explicit SfuProblem(const Case& c) : ElementWordsProblem(c, WORD_NAMES), id_(c.id) {}

  void compute_tile(const float* const*, uint64_t, float*, Workspace&) const override { no_reference(); }
  void compute_tile_scalar(const float* const*, uint64_t, float*) const override { no_reference(); }
  double tile_flops() const override { return 1.0 * TILE * WORDS; }  // one SFU instruction per word

 private:
  [[noreturn]] void no_reference() const {
    throw std::logic_error("case " + id_ +
                           ": sfu_f32 has no CPU reference (the SFU's approximations are the hardware's); "
                           "recorded and consensus cases are judged on GPUs");
  }
  std::string id_;
};

std::string validate(const Case& c) { return check_shape(c, {{"n", TILE, MAX_N, TILE}}); }

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<SfuProblem>(c); }

}  // namespace

// No "cpu" backend: only GPUs (and the emulated device) run the family.
Family family() {
  Family f{"sfu_f32",
           "the special function unit's ex2, lg2, rcp, rsqrt, sqrt, sin, cos and tanh approximations (PTX .approx.f32, "
           "no flush to zero): recorded on known-good GPUs of the architecture, or consensus",
           {Mode::recorded, Mode::consensus},
           {"cuda"},
           {"n"},
           validate,
           prepare};
  f.defined_nans = true;
  f.emulated_arithmetic = "the SFU's approximations are the emulator's (the host C library's functions)";
  return f;
}

}  // namespace sdc::sfu_f32
