// Which value ranges a case's inputs cover (`sdcscreen list`'s coverage table, docs/families.md "Coverage"):
// read from the inputs themselves, not from what a case says of them, by sampling each input tensor with the
// family's own generator. Faults that show only for some input values (an exponent path, a subnormal path, a
// wide alignment shift in an adder) are found only by cases whose inputs reach them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/family.h"

namespace sdc {

// The ranges, in table order. A case covers a range when at least 1 in RANGE_SHARE of its sampled nonzero
// finite values (for mixed: of its sampled groups of 32 consecutive values) lies in it.
enum class ValueRange : uint8_t {
  near_one,   // |x| in [2^-4, 2^4)
  tiny,       // normal, |x| < 2^-20
  large,      // finite, |x| >= 2^20
  subnormal,  // subnormal in the binary format the family stores (fp32, or binary64 for a two-word family)
  mixed,      // 32 consecutive values whose magnitudes span at least 2^20 (as in a row or column a tile reads)
};
constexpr size_t VALUE_RANGES = 5;
constexpr uint64_t RANGE_SHARE = 1000;
constexpr int TINY_EXP = -20, LARGE_EXP = 20, NEAR_ONE_EXP = 4, MIXED_SPAN = 20, MIXED_GROUP = 32;

const char* range_name(ValueRange r);
// What the range means, one line (for list and its JSON).
const char* range_description(ValueRange r);

// Counts of sampled values (and groups) per range, to which a classifier adds.
struct RangeTally {
  uint64_t values = 0, groups = 0;
  std::array<uint64_t, VALUE_RANGES> in{};
  // Adds n consecutive values of a tensor (fp32 words, or binary64 as word pairs, low half first, when
  // words_per_value is 2; n counts words).
  void add(const float* words, uint64_t n, unsigned words_per_value);
  bool covers(ValueRange r) const;
  std::vector<ValueRange> covered() const;
};

// The ranges a case's inputs cover: each input tensor sampled in up to 4 stretches of 4096 values spread
// over it (a tensor smaller than that whole). A family with int8 inputs (Family::int8_inputs) is sampled in
// 4096 words, each word's 4 bytes classified as the integers -128..127 they are: nonzero ones of magnitude below
// 16 are near-1, and no integer of 8 bits reaches tiny, large, subnormal or mixed.
std::vector<ValueRange> case_ranges(const Family& f, const Problem& p);

}  // namespace sdc
