// The registry of kernel families: one explicit list, in a stable order. Adding a family means one
// folder under kernels/ and one line here.
#include "family.h"

namespace sdc {
namespace gemm_f32 { Family family(); }
namespace attention_f32 { Family family(); }
namespace reduce_sum_f32 { Family family(); }
namespace softmax_f32 { Family family(); }
namespace rmsnorm_f32 { Family family(); }
namespace cross_entropy_f32 { Family family(); }

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      gemm_f32::family(),    attention_f32::family(), reduce_sum_f32::family(),
      softmax_f32::family(), rmsnorm_f32::family(),   cross_entropy_f32::family(),
  };
  return all;
}

const Family* find_family(const std::string& id) {
  for (const Family& f : families())
    if (id == f.id) return &f;
  return nullptr;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::exact: return "exact";
    case Mode::exact_integer: return "exact-integer";
    case Mode::recorded: return "recorded";
    case Mode::consensus: return "consensus";
  }
  return "?";
}

}  // namespace sdc
