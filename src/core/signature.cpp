#include "src/core/signature.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace sdc {
namespace {

constexpr int WARP_LANES = 32;
constexpr size_t MAX_LISTED_BITS = 3;  // more distinct positions are summarized per field

// FNV-1a: a row key that is the same in every run and on every host.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string ulp_label(int bucket) { return bucket == 0 ? "0" : fmt::format("2^{}", bucket - 1); }

}  // namespace

const char* cluster_name(Cluster c) {
  switch (c) {
    case Cluster::single: return "single";
    case Cluster::warp_lanes: return "warp_lanes";
    case Cluster::row: return "row";
    case Cluster::column: return "column";
    case Cluster::scattered: return "scattered";
  }
  return "?";
}

uint64_t ulp_distance(uint32_t a, uint32_t b) {
  // Map the sign-magnitude encoding onto a line where adjacent floats are adjacent integers.
  auto ord = [](uint32_t u) -> int64_t { return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : u; };
  const int64_t d = ord(a) - ord(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

uint64_t ulp_distance64(uint64_t a, uint64_t b) {
  constexpr uint64_t SIGN = uint64_t{1} << 63;
  const uint64_t ma = a & ~SIGN, mb = b & ~SIGN;
  if ((a & SIGN) == (b & SIGN)) return ma > mb ? ma - mb : mb - ma;
  return ma + mb;  // across zero: both magnitudes (each below 2^63, so no overflow)
}

ElementPosition position_from_name(std::string_view name) {
  ElementPosition p;
  const size_t open = name.rfind('[');
  if (open == std::string_view::npos) {
    p.row = fnv1a(name);
    return p;
  }
  p.row = fnv1a(name.substr(0, open));
  for (size_t i = open + 1; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
    p.col = p.col * 10 + (name[i] - '0');
  return p;
}

const char* format_name(WordFormat f) {
  switch (f) {
    case WordFormat::fp32: return "fp32";
    case WordFormat::binary64: return "binary64";
    case WordFormat::int32: return "int32";
  }
  return "?";
}

int format_bits(WordFormat f) { return f == WordFormat::binary64 ? 64 : 32; }

BitField bit_field(int bit, WordFormat f) {
  if (f == WordFormat::int32) return BitField::integer;
  const int top = format_bits(f) - 1, mantissa_bits = f == WordFormat::binary64 ? 52 : 23;
  if (bit == top) return BitField::sign;
  return bit >= mantissa_bits ? BitField::exponent : BitField::mantissa;
}

std::string bit_label(int bit, WordFormat f) {
  switch (bit_field(bit, f)) {
    case BitField::sign: return "s";
    case BitField::exponent: return fmt::format("e{}", bit - (f == WordFormat::binary64 ? 52 : 23));
    case BitField::mantissa: return fmt::format("m{}", bit);
    case BitField::integer: return fmt::format("b{}", bit);
  }
  return "?";
}

void Signature::add(int iteration, uint64_t tile, ElementPosition pos, uint64_t expected, uint64_t actual) {
  const int width = format_bits(format_);
  if (width == 32) {
    expected &= 0xffffffffu;
    actual &= 0xffffffffu;
  }
  const uint64_t diff = expected ^ actual;
  if (diff == 0) return;
  ++elements_;
  for (int b = 0; b < width; ++b) {
    if (!(diff >> b & 1u)) continue;
    if (actual >> b & 1u)
      ++rise_[b];
    else
      ++fall_[b];
  }
  uint64_t distance = 0;
  switch (format_) {
    case WordFormat::fp32:
      distance = ulp_distance(static_cast<uint32_t>(expected), static_cast<uint32_t>(actual));
      break;
    case WordFormat::binary64: distance = ulp_distance64(expected, actual); break;
    case WordFormat::int32: {
      const int64_t d = int64_t{static_cast<int32_t>(static_cast<uint32_t>(actual))} -
                        static_cast<int32_t>(static_cast<uint32_t>(expected));
      distance = static_cast<uint64_t>(d < 0 ? -d : d);
      break;
    }
  }
  ++ulps_[ulp_bucket(distance)];
  widen(tiles_[{iteration, tile}], Spot{1, pos.row, pos.row, pos.col, pos.col});
}

void Signature::widen(Spot& s, const Spot& o) {
  if (s.n == 0) {
    s = o;
    return;
  }
  s.n += o.n;
  s.min_row = std::min(s.min_row, o.min_row);
  s.max_row = std::max(s.max_row, o.max_row);
  s.min_col = std::min(s.min_col, o.min_col);
  s.max_col = std::max(s.max_col, o.max_col);
}

void Signature::merge(const Signature& o) {
  if (o.empty()) return;
  if (empty()) format_ = o.format_;
  if (format_ != o.format_)
    throw std::logic_error(
        fmt::format("merging a {} signature into a {} one", format_name(o.format_), format_name(format_)));
  elements_ += o.elements_;
  for (int b = 0; b < 64; ++b) {
    rise_[b] += o.rise_[b];
    fall_[b] += o.fall_[b];
  }
  for (int k = 0; k < ULP_BUCKETS; ++k) ulps_[k] += o.ulps_[k];
  for (const auto& [key, spot] : o.tiles_) widen(tiles_[key], spot);
}

int Signature::ulp_bucket(uint64_t ulps) {
  int k = 0;
  while (ulps) {
    ++k;
    ulps >>= 1;
  }
  return k;
}

std::vector<uint64_t> Signature::rises() const { return {rise_.begin(), rise_.begin() + format_bits(format_)}; }

std::vector<uint64_t> Signature::falls() const { return {fall_.begin(), fall_.begin() + format_bits(format_)}; }

uint64_t Signature::flips(BitField f) const {
  uint64_t n = 0;
  for (int b = 0; b < format_bits(format_); ++b)
    if (bit_field(b, format_) == f) n += flips(b);
  return n;
}

uint64_t Signature::rises_total() const {
  uint64_t n = 0;
  for (uint64_t v : rise_) n += v;
  return n;
}

uint64_t Signature::falls_total() const {
  uint64_t n = 0;
  for (uint64_t v : fall_) n += v;
  return n;
}

std::vector<Signature::IterationCount> Signature::by_iteration() const {
  std::vector<IterationCount> out;
  for (const auto& [key, spot] : tiles_) {  // in (iteration, tile) order
    if (out.empty() || out.back().iteration != key.first) out.push_back({key.first, 0, 0});
    out.back().elements += spot.n;
    ++out.back().tiles;
  }
  return out;
}

std::vector<uint64_t> Signature::tile_ids() const {
  std::set<uint64_t> ids;
  for (const auto& [key, spot] : tiles_) ids.insert(key.second);
  return {ids.begin(), ids.end()};
}

uint64_t Signature::min_elements_per_tile() const {
  uint64_t n = 0;
  for (const auto& [key, spot] : tiles_) n = n == 0 ? spot.n : std::min(n, spot.n);
  return n;
}

uint64_t Signature::max_elements_per_tile() const {
  uint64_t n = 0;
  for (const auto& [key, spot] : tiles_) n = std::max(n, spot.n);
  return n;
}

Cluster Signature::Spot::cluster() const {
  const bool one_row = min_row == max_row, one_col = min_col == max_col;
  if (n == 1 || (one_row && one_col)) return Cluster::single;  // the same element twice is one element
  if (one_row) return max_col - min_col < WARP_LANES ? Cluster::warp_lanes : Cluster::row;
  if (one_col) return Cluster::column;
  return Cluster::scattered;
}

std::array<uint64_t, CLUSTERS> Signature::tiles_by_cluster() const {
  std::array<uint64_t, CLUSTERS> n{};
  for (const auto& [key, spot] : tiles_) ++n[static_cast<int>(spot.cluster())];
  return n;
}

Cluster Signature::cluster() const {
  const auto n = tiles_by_cluster();
  auto has = [&](Cluster c) { return n[static_cast<int>(c)] > 0; };
  if (has(Cluster::scattered)) return Cluster::scattered;
  if (has(Cluster::column)) return has(Cluster::row) || has(Cluster::warp_lanes) ? Cluster::scattered : Cluster::column;
  if (has(Cluster::row)) return Cluster::row;
  if (has(Cluster::warp_lanes)) return Cluster::warp_lanes;
  return Cluster::single;
}

StuckAt Signature::stuck_at() const {
  StuckAt s;
  if (elements_ < 2) return s;
  int bit = -1;
  for (int b = 0; b < format_bits(format_); ++b) {
    if (flips(b) == 0) continue;
    if (bit >= 0) return s;  // more than one position
    bit = b;
  }
  if (bit < 0 || (rise_[bit] && fall_[bit])) return s;
  s.bit = bit;
  s.value = rise_[bit] ? 1 : 0;
  return s;
}

std::string Signature::text(std::string_view family) const {
  if (empty()) return {};
  std::vector<int> bits;  // highest first: sign, exponent, mantissa
  for (int b = format_bits(format_) - 1; b >= 0; --b)
    if (flips(b)) bits.push_back(b);
  std::string b_text;
  auto term = [&](const std::string& t) { b_text += (b_text.empty() ? "" : "+") + t; };
  if (bits.size() <= MAX_LISTED_BITS) {
    for (int b : bits) term(bit_label(b, format_));
  } else {
    for (BitField f : {BitField::sign, BitField::exponent, BitField::mantissa, BitField::integer}) {
      std::vector<int> in;
      for (int b : bits)
        if (bit_field(b, format_) == f) in.push_back(b);
      if (in.size() == 1) term(bit_label(in[0], format_));
      if (in.size() > 1) term(f == BitField::exponent ? "e*" : f == BitField::integer ? "b*" : "m*");
    }
  }
  const uint64_t up = rises_total(), down = falls_total();
  const char* dir = up && down ? "both" : up ? "0to1" : "1to0";
  int hi = 0;
  for (int k = 0; k < ULP_BUCKETS; ++k)
    if (ulps_[k]) hi = k;
  return fmt::format("{}:bits={}:dir={}:{}={}:cluster={}", family, b_text, dir,
                     format_ == WordFormat::int32 ? "diff" : "ulp", ulp_label(hi), cluster_name(cluster()));
}

Signature& signature_of(std::vector<UnitSignature>& list, int unit, WordFormat format) {
  auto it = std::lower_bound(list.begin(), list.end(), unit, [](const UnitSignature& u, int v) { return u.unit < v; });
  if (it == list.end() || it->unit != unit) it = list.insert(it, UnitSignature{unit, Signature(format)});
  return it->signature;
}

}  // namespace sdc
