// What an injected fault does to the 32-bit words it hits: the one definition the CPU executor, the GPU
// executor's digest and input passes and the emulated device share (docs/reliability.md, "Drills").
//
// A fault has a kind (flip: xor the mask in, which makes multi-bit flips with a mask of several bits;
// stuck-at-0 / stuck-at-1: the mask's bits read as 0 / 1 whatever was computed, so a word whose bits already
// had that value is unchanged) and a footprint: `count` words, `stride` apart, from the first one (a warp's
// 32 lanes writing adjacent words: count=32, stride=1 from a multiple of 32; a fault periodic in address: a
// larger stride).
#pragma once

#include <cstdint>

#include "src/spec/hd.h"

namespace sdc {

enum FaultKind : uint32_t { FAULT_FLIP = 0, FAULT_STUCK_AT_0 = 1, FAULT_STUCK_AT_1 = 2 };

// The most words one fault hits (a tile of 32 x 32 words; bounded so that the device's input pass saves the
// words it changes in a small buffer and the CPU's checks stay cheap).
constexpr uint32_t MAX_FAULT_COUNT = 1024;

struct WordFault {
  uint32_t mask = 0;  // 0: no fault
  uint32_t kind = FAULT_FLIP;
  uint32_t count = 1;
  uint32_t stride = 1;

  SDC_HD uint32_t apply(uint32_t bits) const {
    return kind == FAULT_FLIP ? bits ^ mask : kind == FAULT_STUCK_AT_0 ? bits & ~mask : bits | mask;
  }
  // Whether word i (an offset in a tile, or an element of a tensor) is one of those from `first` on.
  SDC_HD bool hits(uint64_t i, uint64_t first) const {
    if (mask == 0 || i < first) return false;
    const uint64_t d = i - first;
    return d % stride == 0 && d / stride < count;
  }
  // The last word it hits, from `first`.
  SDC_HD uint64_t last(uint64_t first) const { return first + static_cast<uint64_t>(count - 1) * stride; }
};

}  // namespace sdc
