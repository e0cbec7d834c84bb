// memtest_u32: an exact pattern test of memory, exact mode, no inputs. A region of 32-bit words is split into
// `slices` equal slices (the output tiles); on a GPU the region is most of the device's free memory (or a fixed
// size), on the CPU `cpu_slice_words` words per slice of a host buffer. Eleven sweeps run over every slice, one
// after another: sweep 0 writes value(0, i) to each word i of the region, sweep s = 1..10 reads each word,
// compares it with value(s - 1, i) (pass s - 1) and, except sweep 10, writes value(s, i). Sweeps run ascending
// in the word index except passes 3 and 6 (descending), which makes passes 2..7 two rounds of moving
// inversions.
//
//   value(0, i) = 1 << (i % 32)               walking ones across consecutive words: every data bit alone at 1
//   value(1, i) = ~(1 << (i % 32))            walking zeros
//   value(2, i) = 0x00000000, (3) 0xffffffff, (4) 0x00000000      moving inversions of 0x00000000
//   value(5, i) = 0x55555555, (6) 0xaaaaaaaa, (7) 0x55555555      moving inversions of 0x55555555
//   value(8, i) = address(i), (9) ~address(i)                     each word holds its own index
//
// address(i) is the word's index in the region folded to 32 bits (low half xor high half), so that a word
// written at or read from the wrong address shows within 16 GiB.
//
// Output: per slice a record of RECORD_WORDS words (every word an integer): the mismatch count of each pass,
// then the first mismatch of the slice: the first pass that had one and, of that pass, the lowest word (its
// byte offset in the region, 64-bit, low word first), the word expected and the word read, and the %smid of
// the SM that read it (NO_SM on the CPU). The healthy record is fixed (HEALTHY_RECORD) whatever the region's
// size, so the goldens do not depend on how much memory a device has, and the first mismatch is the minimum
// of a total order (pass, then word), so a repeated fault gives the same record whatever the schedule.
#pragma once

#include <cstdint>

#include "src/spec/hd.h"

namespace sdc::memtest_u32 {

constexpr int PASSES = 10;          // the read-verify sweeps
constexpr int SWEEPS = PASSES + 1;  // sweep 0 writes only
constexpr uint32_t RECORD_WORDS = 16;
constexpr uint32_t NONE = 0xffffffffu;  // no mismatch (first pass, offset), no SM
// Record layout (word offsets in a slice's tile).
constexpr uint32_t R_FIRST_PASS = PASSES, R_OFFSET_LO = PASSES + 1, R_OFFSET_HI = PASSES + 2, R_EXPECTED = PASSES + 3,
                   R_READ = PASSES + 4, R_SM = PASSES + 5;
static_assert(R_SM + 1 == RECORD_WORDS);
// A slice's words are indexed by 32 bits in the device's first-mismatch atomics (memtest_u32.cu): at most
// 2^32 - 4 words (16 GiB) per slice, a multiple of 4 (the device sweeps 16-byte vectors).
constexpr uint64_t MAX_SLICE_WORDS = (uint64_t{1} << 32) - 4;

// The pass names, as reports and --inject pass= spell them.
inline const char* pass_name(int p) {
  static const char* const names[PASSES] = {"walking_ones",       "walking_zeros",      "inversions_00_up",
                                            "inversions_ff_down", "inversions_00_last", "inversions_55_up",
                                            "inversions_aa_down", "inversions_55_last", "address",
                                            "address_inverse"};
  return p >= 0 && p < PASSES ? names[p] : "none";
}

SDC_HD bool descending(int sweep) { return sweep == 4 || sweep == 7; }  // passes 3 and 6

SDC_HD uint32_t address_word(uint64_t i) { return static_cast<uint32_t>(i) ^ static_cast<uint32_t>(i >> 32); }

// The value word i of the region holds after sweep s (0..9); pass p reads value(p, i).
SDC_HD uint32_t value(int s, uint64_t i) {
  switch (s) {
    case 0: return 1u << (i % 32);
    case 1: return ~(1u << (i % 32));
    case 2: return 0x00000000u;
    case 3: return 0xffffffffu;
    case 4: return 0x00000000u;
    case 5: return 0x55555555u;
    case 6: return 0xaaaaaaaau;
    case 7: return 0x55555555u;
    case 8: return address_word(i);
    default: return ~address_word(i);
  }
}

// The record of a slice with no mismatch.
SDC_HD uint32_t healthy_word(uint32_t offset) {
  return offset < PASSES ? 0u : (offset == R_EXPECTED || offset == R_READ) ? 0u : NONE;
}

}  // namespace sdc::memtest_u32
