// Shape checks shared by the families' validate functions: each returns "" when the case is valid, else
// a message naming the case, the key and the problem.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "src/core/family.h"

namespace sdc {

struct DimRule {
  const char* key;
  int64_t min;
  int64_t max;
  int64_t multiple_of;  // 1 for none
};

// Every key of rules must be present and satisfy its rule; no other key may be present.
std::string check_shape(const Case& c, std::initializer_list<DimRule> rules);

inline int64_t dim(const Case& c, const char* key) { return c.shape.dims.at(key); }

}  // namespace sdc
