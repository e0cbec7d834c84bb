#include "src/core/shape.h"

#include <fmt/format.h>

namespace sdc {

std::string check_shape(const Case& c, std::initializer_list<DimRule> rules) {
  for (const DimRule& r : rules) {
    const auto it = c.shape.dims.find(r.key);
    if (it == c.shape.dims.end()) return fmt::format("case {}: shape lacks '{}'", c.id, r.key);
    const int64_t v = it->second;
    if (v < r.min || v > r.max)
      return fmt::format("case {}: shape '{}' = {} is outside [{}, {}]", c.id, r.key, v, r.min, r.max);
    if (v % r.multiple_of != 0)
      return fmt::format("case {}: shape '{}' = {} is not a multiple of {}", c.id, r.key, v, r.multiple_of);
  }
  for (const auto& [key, v] : c.shape.dims) {
    bool known = false;
    for (const DimRule& r : rules) known = known || key == r.key;
    if (!known) return fmt::format("case {}: shape has unknown key '{}'", c.id, key);
  }
  return "";
}

}  // namespace sdc
