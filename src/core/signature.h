// The bit signature of a failure: over every differing element that one unit produced in one test, which
// bit positions flipped (sign, exponent, mantissa), in which direction, by how many ULPs, how many elements
// per failing tile and how they lie in it (one element, one row, one column, one warp's lanes, scattered),
// and whether it reads as a stuck bit. It is accumulated over all differing elements, not only the few the
// report lists, and folds to a one-line string that a fleet groups nodes by:
//
//   <family>:bits=<bits>:dir=<dir>:ulp=<ulp>:cluster=<cluster>
//   e.g. gemm_f32:bits=m3:dir=0to1:ulp=2^3:cluster=single (mantissa bit 3 set in one element of a tile)
//
//   <family>:bits=<bits>:dir=<dir>:diff=<diff>:cluster=<cluster>   (a family whose outputs are int32)
//
//   bits     the flipped positions, highest first, joined by '+', named in the format of the family's output
//            values (WordFormat): fp32 s (bit 31), e7..e0 (bits 30..23), m22..m0 (bits 22..0); binary64 (a value
//            is two words, and counts once however many of its bits flipped) s (bit 63), e10..e0 (62..52), m51..m0
//            (51..0); int32 b31..b0 (two's complement: no fields). With more than 3 distinct positions, one term per
//            field touched: the bit when the field has one, else the field and '*' (e*, m*; b* for int32), so a
//            wandering fault reads "m*".
//   dir      0to1 (every flip set a bit), 1to0 (every flip cleared one) or both.
//   ulp      the largest ULP distance (of the fp32 or binary64 value), as its power-of-two bucket: 2^k stands for
//            [2^k, 2^(k+1)); 0 when the only differences are +0 against -0. The smallest is left out: it depends
//            on the data each unit happened to compute, the largest on the highest bit the fault reaches (the JSON
//            report has every bucket).
//   diff     for int32 outputs in place of ulp: the largest |actual - expected|, bucketed the same way.
//   cluster  the unit-level reading of the per-tile layouts (cluster_name): single, warp_lanes, row, column
//            or scattered.
//
// The string holds nothing that depends on the run (times, seeds, unit numbers, element counts, iterations):
// two nodes with the same fault in the same case share it. It depends only on the set of differing elements,
// not on the order they were added or merged.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sdc {

// How the differing elements of one failing tile lie in the output seen as rows and columns:
// single: one element; warp_lanes: more than one, in one row, within 32 adjacent columns (a warp's lanes on a
// GPU, a few vector registers on a CPU); row: one row, wider; column: one column, several rows; scattered:
// anything else. For a unit, the widest reading over its tiles: single when every tile is single,
// warp_lanes when every tile is single or warp_lanes, row when every tile is at most row, column when every
// tile is single or column, else scattered (a mix of rows and columns included).
enum class Cluster { single, warp_lanes, row, column, scattered };
const char* cluster_name(Cluster c);
constexpr int CLUSTERS = 5;

// Where an element sits in the output seen as rows and columns. `row` only has to be equal for the elements
// of one row (it is a key, not a coordinate); `col` is the innermost index.
struct ElementPosition {
  uint64_t row = 0;
  int64_t col = 0;
};
// From the element's name as the family spells it ("C[3][17]", "O[1][40][7]", "y[5]"): the last index is the
// column and everything before it is the row, so a 3-D output reads as its rows of the innermost dimension
// and a 1-D output as one row.
ElementPosition position_from_name(std::string_view element_name);

// The distance of two fp32 encodings in units in the last place: adjacent floats are 1 apart, +0 and -0 are 0
// apart.
uint64_t ulp_distance(uint32_t a, uint32_t b);
// The same for binary64 bit patterns.
uint64_t ulp_distance64(uint64_t a, uint64_t b);

// How a family's output values read (from Family::value_words and Family::int32_outputs: word_format in
// miscompare.h): fp32 words, binary64 values of two words (low word first), or int32 words.
enum class WordFormat { fp32, binary64, int32 };
const char* format_name(WordFormat f);  // "fp32", "binary64", "int32"
int format_bits(WordFormat f);          // bits of one value: 32, 64, 32

// Fields by bit position: fp32 31 sign, 30..23 exponent, 22..0 mantissa; binary64 63, 62..52, 51..0; int32
// has none (every bit is `integer`).
enum class BitField { sign, exponent, mantissa, integer };
BitField bit_field(int bit, WordFormat f = WordFormat::fp32);
std::string bit_label(int bit, WordFormat f = WordFormat::fp32);  // s, e7..e0, m22..m0 / e10..e0, m51..m0 / b31..b0

// A reading of a stuck bit: every flip of every element was at one position, all in one direction, over at
// least two elements (one element alone is as well a transient flip).
struct StuckAt {
  int bit = -1;  // -1: not a stuck bit
  int value = 0;
  explicit operator bool() const { return bit >= 0; }
};

class Signature {
 public:
  static constexpr int ULP_BUCKETS = 65;  // 0: 0 ULPs; k >= 1: [2^(k-1), 2^k)

  explicit Signature(WordFormat format = WordFormat::fp32) : format_(format) {}
  WordFormat format() const { return format_; }

  // One differing element (expected != actual): the tile it belongs to in one iteration, its position in
  // the output, its bits in the signature's format (fp32 and int32 in the low 32 bits; a binary64 value whole).
  void add(int iteration, uint64_t tile, ElementPosition pos, uint64_t expected, uint64_t actual);
  // The union of two accumulators (units or shares computed apart) of one format; a tile in both is one tile.
  // An empty accumulator takes the other's format.
  void merge(const Signature& other);

  bool empty() const { return elements_ == 0; }
  uint64_t elements() const { return elements_; }
  // Flips per bit position, by direction: format_bits() entries, bit 0 first.
  std::vector<uint64_t> rises() const;  // 0 -> 1
  std::vector<uint64_t> falls() const;  // 1 -> 0
  uint64_t flips(int bit) const { return rise_[bit] + fall_[bit]; }
  uint64_t flips(BitField f) const;
  uint64_t rises_total() const;
  uint64_t falls_total() const;
  const std::array<uint64_t, ULP_BUCKETS>& ulp_buckets() const { return ulps_; }
  static int ulp_bucket(uint64_t ulps);
  // Failing tiles (one tile in one iteration counts once per iteration) and differing elements per tile.
  uint64_t tiles() const { return tiles_.size(); }
  uint64_t min_elements_per_tile() const;
  uint64_t max_elements_per_tile() const;
  std::array<uint64_t, CLUSTERS> tiles_by_cluster() const;
  // Differing elements and failing tiles per iteration, in iteration order (iterations with none left out).
  struct IterationCount {
    int iteration = 0;
    uint64_t elements = 0, tiles = 0;
  };
  std::vector<IterationCount> by_iteration() const;
  // The failing tiles' ids, each once whatever the iterations it failed in, in increasing order.
  std::vector<uint64_t> tile_ids() const;
  Cluster cluster() const;
  StuckAt stuck_at() const;
  // The one-line signature (format at the top of this file); empty when nothing was added.
  std::string text(std::string_view family) const;

 private:
  struct Spot {  // the extent of one tile's differing elements
    uint64_t n = 0;
    uint64_t min_row = 0, max_row = 0;
    int64_t min_col = 0, max_col = 0;
    Cluster cluster() const;
  };
  static void widen(Spot& s, const Spot& o);

  WordFormat format_;
  uint64_t elements_ = 0;
  std::array<uint64_t, 64> rise_{}, fall_{};
  std::array<uint64_t, ULP_BUCKETS> ulps_{};
  std::map<std::pair<int, uint64_t>, Spot> tiles_;  // (iteration, tile)
};

// The signature of what one unit (a logical CPU, an SM) got wrong in one test.
struct UnitSignature {
  int unit = -1;
  Signature signature;
};
// The unit's entry of a list kept in unit order, added (of format `format`) when missing.
Signature& signature_of(std::vector<UnitSignature>& list, int unit, WordFormat format = WordFormat::fp32);

}  // namespace sdc
