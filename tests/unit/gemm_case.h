// An M x N x K GEMM case for the unit tests, as the battery would hold it (one boot iteration).
#pragma once

#include <cstdint>
#include <string>

#include "src/core/family.h"

namespace sdc::test {

inline Case gemm_case(const std::string& family, Mode mode, int64_t m, int64_t n, int64_t k,
                      Distribution d = Distribution::uniform, uint64_t seed = 77) {
  Case c;
  c.id = family + ".unit_test";
  c.family = family;
  c.mode = mode;
  c.distribution = d;
  c.data_seed = seed;
  c.shape.dims = {{"m", m}, {"n", n}, {"k", k}};
  c.iterations["boot"] = 1;
  return c;
}

}  // namespace sdc::test
