// Localizing a miscompare: which elements of a failing tile differ from the expected values, by how
// many bits and ULPs. Both backends list a failing tile's elements with it.
#pragma once

#include <cstdint>
#include <vector>

#include "src/core/family.h"
#include "src/core/result.h"

namespace sdc {

// How a family's output words read in signatures (signature.h): int32 for Family::int32_outputs, binary64 for a
// two-word family, else fp32 (null: fp32).
WordFormat word_format(const Family* f);

// Lists the elements of a failing tile that differ from the expected values (recomputed on this CPU
// into `expected` unless it already holds them, and checked against the golden digest: a note says
// when even the recomputation disagrees). At most a few elements per tile and per test are listed;
// all are counted and go into the unit's bit signature (signature.h).
void analyse_tile(const Problem& problem, const std::vector<std::vector<float>>& inputs, uint64_t golden_digest,
                  uint64_t tile, const float* actual, int iteration, int unit, Workspace& ws,
                  std::vector<float>& expected, TestResult& r);

}  // namespace sdc
