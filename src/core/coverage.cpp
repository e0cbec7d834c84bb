#include "src/core/coverage.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sdc {

const char* range_name(ValueRange r) {
  switch (r) {
    case ValueRange::near_one: return "near-1";
    case ValueRange::tiny: return "tiny";
    case ValueRange::large: return "large";
    case ValueRange::subnormal: return "subnormal";
    case ValueRange::mixed: return "mixed";
  }
  return "";
}

const char* range_description(ValueRange r) {
  switch (r) {
    case ValueRange::near_one: return "magnitudes in [2^-4, 2^4)";
    case ValueRange::tiny: return "normal magnitudes below 2^-20";
    case ValueRange::large: return "finite magnitudes of 2^20 or more";
    case ValueRange::subnormal: return "subnormal values of the format the family stores (fp32 or binary64)";
    case ValueRange::mixed: return "32 consecutive values whose magnitudes span 2^20 or more";
  }
  return "";
}

void RangeTally::add(const float* words, uint64_t n, unsigned words_per_value) {
  int group_lo = 0, group_hi = 0;
  unsigned group_n = 0;
  auto close_group = [&] {
    if (group_n >= 2) {
      ++groups;
      in[static_cast<size_t>(ValueRange::mixed)] += group_hi - group_lo >= MIXED_SPAN;
    }
    group_n = 0;
  };
  unsigned in_group = 0;
  for (uint64_t i = 0; i + words_per_value <= n; i += words_per_value) {
    double v;
    bool sub;
    if (words_per_value == 2) {
      std::memcpy(&v, words + i, sizeof v);
      sub = std::fpclassify(v) == FP_SUBNORMAL;
    } else {
      const float x = words[i];
      v = x;
      sub = std::fpclassify(x) == FP_SUBNORMAL;
    }
    if (++in_group > static_cast<unsigned>(MIXED_GROUP)) {
      close_group();
      in_group = 1;
    }
    if (v == 0 || !std::isfinite(v)) continue;
    ++values;
    const int e = std::ilogb(v);  // the binary exponent of |v| (of a subnormal too: its leading bit)
    auto bump = [&](ValueRange r) { ++in[static_cast<size_t>(r)]; };
    if (sub) bump(ValueRange::subnormal);
    else if (e < TINY_EXP) bump(ValueRange::tiny);
    if (e >= LARGE_EXP) bump(ValueRange::large);
    if (e >= -NEAR_ONE_EXP && e < NEAR_ONE_EXP) bump(ValueRange::near_one);
    if (group_n == 0) group_lo = group_hi = e;
    group_lo = std::min(group_lo, e);
    group_hi = std::max(group_hi, e);
    ++group_n;
  }
  close_group();
}

bool RangeTally::covers(ValueRange r) const {
  const uint64_t of = r == ValueRange::mixed ? groups : values;
  const uint64_t hits = in[static_cast<size_t>(r)];
  return hits > 0 && hits * RANGE_SHARE >= of;
}

std::vector<ValueRange> RangeTally::covered() const {
  std::vector<ValueRange> out;
  for (size_t r = 0; r < VALUE_RANGES; ++r)
    if (covers(static_cast<ValueRange>(r))) out.push_back(static_cast<ValueRange>(r));
  return out;
}

std::vector<ValueRange> case_ranges(const Family& f, const Problem& p) {
  constexpr uint64_t STRETCH = 4096, STRETCHES = 4;
  const unsigned w = f.value_words;
  RangeTally tally;
  std::vector<float> buf, bytes;
  const auto tensors = p.inputs();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const uint64_t n = tensors[t].elements;
    const uint64_t len = std::min<uint64_t>(n, STRETCH * w);
    // Stretches at evenly spread starts, aligned to a group of values (and to a value's first word).
    const uint64_t stretches = n <= len ? 1 : std::min<uint64_t>(STRETCHES, n / len);
    buf.resize(len);
    for (uint64_t s = 0; s < stretches; ++s) {
      uint64_t begin = stretches == 1 ? 0 : s * (n - len) / (stretches - 1);
      begin -= begin % (MIXED_GROUP * w);
      p.generate_input(t, begin, begin + len, buf.data());
      if (f.int8_inputs) {  // each word's 4 bytes are int8 values: classified as the integers they are
        bytes.resize(4 * len);
        for (uint64_t i = 0; i < len; ++i) {
          uint32_t u;
          std::memcpy(&u, &buf[i], sizeof u);
          for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<float>(static_cast<int8_t>(u >> (8 * b)));
        }
        tally.add(bytes.data(), bytes.size(), 1);
      } else {
        tally.add(buf.data(), len, w);
      }
    }
  }
  return tally.covered();
}

}  // namespace sdc
