// The reduction trees of fpmath.h (pairwise_sum, fold_max) evaluated in parallel on a GPU warp or a group
// of warps, with the same bits as the serial specification. The building blocks are SDC_HD; the warp
// drivers (shuffles, shared memory) are in chunked_reduce.cuh, and emulate_row_sum/emulate_row_max
// run the same blocks with the 32 lanes and the warps of a group as loops, so the host unit test
// (tests/unit/spec/test_chunked_reduce.cpp) checks the exact split the kernels use.
//
// Geometry: a row of n elements is cut into segments of SEG = 128 consecutive elements; lane l of a warp
// holds elements 4l..4l+3 of a segment (one coalesced float4 per lane), forms their two-level subtree in
// registers, and five butterfly levels (xor 1, 2, 4, 8, 16) form the segment's subtree on every lane. A
// warp owns PER_WARP (a power of two) consecutive segments and folds their subtrees with a streaming
// pairwise accumulator; the G warps of a group hand their results to one more butterfly.
//
// Why this is the specification's tree (every claim is tested with the exact code below):
//
// (A) Chunks. For C a power of two and n >= 1, let k = ceil(n / C) and S[c] = pairwise_sum of the chunk
//     x[cC .. min((c+1)C, n)). Then pairwise_sum(x, n) = pairwise_sum(S, k) as the identical tree: the same
//     additions of the same operands. Induction on n: if n <= C, k = 1 and both are S[0]. Otherwise the
//     split h (largest power of two below n) is >= C, so C divides h; the left part pairwise_sum(x, h) is
//     the perfect tree of h leaves, i.e. the perfect tree over the h/C chunk trees = pairwise_sum(S, h/C);
//     the right part pairwise_sum(x + h, n - h) has chunks aligned with those of x, so by induction it is
//     pairwise_sum over S[h/C .. k). And pairwise_sum(S, k) splits at h/C, the largest power of two below
//     k: h < n <= kC gives h/C < k, and n <= 2h gives k = ceil(n/C) <= 2h/C.
//     Applied with C = SEG (segments) and C = SEG * PER_WARP (the warps of a group).
// (B) Absent leaves. A perfect tree over 2^j leaf slots whose first m >= 1 slots hold x[0..m), in which a
//     node whose right subtree holds no element takes its left subtree's value without an addition, is
//     the tree of pairwise_sum(x, m). Induction on j: if m <= 2^(j-1), the root's right subtree is empty
//     and the root is the left subtree, by induction pairwise_sum(x, m). Otherwise 2^(j-1) < m <= 2^j, so
//     the specification's split h is 2^(j-1): left is the perfect tree of h elements, right holds x[h..m)
//     in 2^(j-1) slots, by induction pairwise_sum(x + h, m - h); the root adds them, as the spec does.
//     This reduces the partial last segment of a row on 32 lanes, and the group's warp results (fewer
//     than 32) on one butterfly. No padding value is ever added, so the tree holds even for NaN and -0.
// (C) Streaming. pairwise_sum pushes each element as a block of size 1 and merges equal-sized neighbour
//     blocks (a binary counter); PairwiseStream keeps the same blocks in level[b] for the set bits b of the
//     count, merges them the same way (left + right) and finishes with the same right-nested sum.
// (D) Maximum. For a run of elements let L = its leftmost maximal non-NaN element (compared with >, so
//     +0 and -0 tie and the earlier one is kept), or NaN if it has none. max_combine(L(A), L(B)) = L(AB)
//     for adjacent runs A, B, so max_combine is associative with NaN as identity: any bracketing of
//     adjacent runs, e.g. lanes then butterfly then segments then warps, gives L(x). The spec's left fold
//     m = v > m ? v : m from m = x[0] returns x[0] if x[0] is NaN (nothing replaces a NaN), else L(x)
//     (a NaN v never replaces, a tie keeps the earlier element). So fold_max = max_finish(x[0], L(x)),
//     bit for bit including the sign of a zero maximum.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "src/spec/fpmath.h"

namespace sdc::chunked {

constexpr uint32_t WARP = 32;
constexpr uint32_t LANE_ELEMS = 4;
constexpr uint32_t SEG = WARP * LANE_ELEMS;
// Levels of PairwiseStream: it holds up to 2^16 - 1 pushes. Rows up to MAX_ROW (2^15 segments) stay inside
// that even when one warp takes a whole row.
constexpr int STREAM_LEVELS = 16;
constexpr uint32_t MAX_ROW = SEG << (STREAM_LEVELS - 1);

// The value of an absent leaf slot: never used by a correct tree, and NaN so that a wrong one would show.
constexpr float ABSENT = NAN;

// A node of an absent-leaf tree (B): right_start is the index of the right subtree's first leaf slot.
SDC_HD float sum_node(float left, float right, uint32_t right_start, uint32_t m) {
  return right_start < m ? left + right : left;
}

// The bottom two levels of a segment inside one lane; base = 4 * lane, m = elements present in the segment.
SDC_HD float lane_sum4(const float (&e)[4], uint32_t base, uint32_t m) {
  const float a = sum_node(e[0], e[1], base + 1, m);
  const float b = sum_node(e[2], e[3], base + 3, m);
  return sum_node(a, b, base + 2, m);
}

// One butterfly level at xor distance o: lanes l and l ^ o hold the subtrees of two adjacent aligned groups
// of o lanes (per_lane leaf slots each); both form the parent with the lower group as left operand, so
// after the last level every lane holds the same root.
SDC_HD float sum_level(float mine, float other, uint32_t lane, uint32_t o, uint32_t m, uint32_t per_lane) {
  const bool upper = (lane & o) != 0;
  const float left = upper ? other : mine;
  const float right = upper ? mine : other;
  return sum_node(left, right, ((lane & ~(2 * o - 1)) + o) * per_lane, m);
}

// (D): NaN is the identity (an absent element or a run without a number).
SDC_HD float max_combine(float a, float b) { return a != a ? b : (b > a ? b : a); }

SDC_HD float max_level(float mine, float other, uint32_t lane, uint32_t o) {
  return (lane & o) != 0 ? max_combine(other, mine) : max_combine(mine, other);
}

SDC_HD float lane_max4(const float (&e)[4]) { return max_combine(max_combine(max_combine(e[0], e[1]), e[2]), e[3]); }

SDC_HD float max_finish(float x0, float leftmost_max) { return x0 != x0 ? x0 : leftmost_max; }

// (C): the specification's block stack with the blocks at fixed register positions (the loops unroll,
// so every index is a constant and nothing goes to local memory).
template <int LEVELS>
struct PairwiseStream {
  float level[LEVELS] = {};
  uint32_t count = 0;

  SDC_HD void push(float s) {
    bool carry = true;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int b = 0; b < LEVELS; ++b) {
      if (carry) {
        if ((count >> b) & 1u) {
          s = level[b] + s;
        } else {
          level[b] = s;
          carry = false;
        }
      }
    }
    ++count;
  }
  SDC_HD float finish() const {
    float s = 0.0f;  // pairwise_sum of nothing
    bool have = false;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int b = 0; b < LEVELS; ++b) {
      if ((count >> b) & 1u) {
        s = have ? level[b] + s : level[b];
        have = true;
      }
    }
    return s;
  }
};

// How a row of n >= 1 elements is split among the G warps of a group: warp g owns segments
// [g * per_warp, min((g + 1) * per_warp, segments)); `warps` of them own at least one.
struct RowSplit {
  uint32_t segments;
  uint32_t per_warp;  // a power of two: (A) needs the warps' chunks to be aligned powers of two
  uint32_t warps;
};

SDC_HD uint32_t pow2_ceil(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p *= 2;
  return p;
}

SDC_HD RowSplit row_split(uint32_t n, uint32_t group_warps) {
  const uint32_t segments = (n + SEG - 1) / SEG;
  const uint32_t per_warp = pow2_ceil((segments + group_warps - 1) / group_warps);
  return {segments, per_warp, (segments + per_warp - 1) / per_warp};
}

// The segments warp warp_in_group of the group owns (empty for the warps past sp.warps).
struct WarpRange {
  uint32_t begin, end;
};

SDC_HD WarpRange warp_range(const RowSplit& sp, uint32_t warp_in_group) {
  const uint32_t begin = warp_in_group * sp.per_warp;
  const uint32_t end = begin + sp.per_warp;
  return {begin, end < sp.segments ? end : sp.segments};
}

// The elements of segment seg that lane holds: first index and how many are present (0..4); m is the
// number of elements present in the whole segment.
struct LaneSpan {
  uint32_t first, count, m;
};

SDC_HD LaneSpan lane_span(uint32_t n, uint32_t seg, uint32_t lane) {
  const uint32_t start = seg * SEG;
  const uint32_t m = n - start < SEG ? n - start : SEG;
  const uint32_t base = lane * LANE_ELEMS;
  const uint32_t count = base >= m ? 0 : (m - base < LANE_ELEMS ? m - base : LANE_ELEMS);
  return {start + base, count, m};
}

// ---- host emulation: the kernels' split with lanes and warps as loops ----

using LaneValues = std::array<float, WARP>;

// Butterfly over 32 emulated lanes; returns false if the lanes disagree at the end (they must not).
inline bool emulate_tree_sum(LaneValues& v, uint32_t m, uint32_t per_lane) {
  for (uint32_t o = 1; o < WARP; o *= 2) {
    LaneValues next;
    for (uint32_t l = 0; l < WARP; ++l) next[l] = sum_level(v[l], v[l ^ o], l, o, m, per_lane);
    v = next;
  }
  for (uint32_t l = 1; l < WARP; ++l)
    if (float_bits(v[l]) != float_bits(v[0])) return false;
  return true;
}

inline bool emulate_tree_max(LaneValues& v) {
  for (uint32_t o = 1; o < WARP; o *= 2) {
    LaneValues next;
    for (uint32_t l = 0; l < WARP; ++l) next[l] = max_level(v[l], v[l ^ o], l, o);
    v = next;
  }
  for (uint32_t l = 1; l < WARP; ++l)
    if (float_bits(v[l]) != float_bits(v[0])) return false;
  return true;
}

// What group_row_sum computes for elem(0..n), a group of group_warps warps (a power of two, <= 32).
template <typename Elem>
float emulate_row_sum(Elem elem, uint32_t n, uint32_t group_warps, bool& lanes_agree) {
  const RowSplit sp = row_split(n, group_warps);
  LaneValues group;
  group.fill(ABSENT);
  for (uint32_t g = 0; g < group_warps; ++g) {
    PairwiseStream<STREAM_LEVELS> acc;
    const WarpRange wr = warp_range(sp, g);
    for (uint32_t seg = wr.begin; seg < wr.end; ++seg) {
      LaneValues v;
      uint32_t m = 0;
      for (uint32_t l = 0; l < WARP; ++l) {
        const LaneSpan ls = lane_span(n, seg, l);
        float e[4] = {ABSENT, ABSENT, ABSENT, ABSENT};
        for (uint32_t k = 0; k < ls.count; ++k) e[k] = elem(ls.first + k);
        v[l] = lane_sum4(e, l * LANE_ELEMS, ls.m);
        m = ls.m;
      }
      lanes_agree = emulate_tree_sum(v, m, LANE_ELEMS) && lanes_agree;
      acc.push(v[0]);
    }
    if (g < sp.warps) group[g] = acc.finish();
  }
  if (group_warps == 1) return group[0];
  lanes_agree = emulate_tree_sum(group, sp.warps, 1) && lanes_agree;
  return group[0];
}

// What group_row_max computes (already finished with x[0], i.e. the value fold_max must equal).
template <typename Elem>
float emulate_row_max(Elem elem, uint32_t n, uint32_t group_warps, bool& lanes_agree) {
  const RowSplit sp = row_split(n, group_warps);
  LaneValues group;
  group.fill(NAN);
  for (uint32_t g = 0; g < group_warps; ++g) {
    float acc = NAN;
    const WarpRange wr = warp_range(sp, g);
    for (uint32_t seg = wr.begin; seg < wr.end; ++seg) {
      LaneValues v;
      for (uint32_t l = 0; l < WARP; ++l) {
        const LaneSpan ls = lane_span(n, seg, l);
        float e[4] = {NAN, NAN, NAN, NAN};
        for (uint32_t k = 0; k < ls.count; ++k) e[k] = elem(ls.first + k);
        v[l] = lane_max4(e);
      }
      lanes_agree = emulate_tree_max(v) && lanes_agree;
      acc = max_combine(acc, v[0]);
    }
    group[g] = acc;
  }
  if (group_warps > 1) lanes_agree = emulate_tree_max(group) && lanes_agree;
  return max_finish(elem(0), group[0]);
}

}  // namespace sdc::chunked
