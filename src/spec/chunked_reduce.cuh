// The device half of chunked_reduce.h: the warp drivers of its reduction trees, lanes by shuffles and the
// warps of a group through shared memory. The trees, their proofs and the host emulation the unit test checks
// are in chunked_reduce.h; the kernels include this header.
#pragma once

#include <cstdint>

#include "src/backends/cuda/cuda_target.h"
#include "src/spec/chunked_reduce.h"

// ---- device drivers: the same blocks, lanes by shuffles, warps of a group through shared memory ----
namespace sdc::chunked {

constexpr unsigned FULL_MASK = 0xffffffffu;

__device__ __forceinline__ float warp_tree_sum(float v, uint32_t lane, uint32_t m, uint32_t per_lane) {
#pragma unroll
  for (uint32_t o = 1; o < WARP; o *= 2) v = sum_level(v, __shfl_xor_sync(FULL_MASK, v, o), lane, o, m, per_lane);
  return v;
}

__device__ __forceinline__ float warp_tree_max(float v, uint32_t lane) {
#pragma unroll
  for (uint32_t o = 1; o < WARP; o *= 2) v = max_level(v, __shfl_xor_sync(FULL_MASK, v, o), lane, o);
  return v;
}

// Reads elements [i, i + count) of a row, count <= 4; vec: the row is 16-byte aligned (then i is too).
__device__ __forceinline__ void load_span(const float* row, uint32_t i, uint32_t count, bool vec, float (&e)[4]) {
  if (vec && count == 4) {
    const float4 f = *reinterpret_cast<const float4*>(row + i);
    e[0] = f.x;
    e[1] = f.y;
    e[2] = f.z;
    e[3] = f.w;
  } else {
    for (uint32_t k = 0; k < count; ++k) e[k] = row[i + k];
  }
}

__device__ __forceinline__ void store_span(float* row, uint32_t i, uint32_t count, bool vec, const float (&e)[4]) {
  if (vec && count == 4) {
    *reinterpret_cast<float4*>(row + i) = make_float4(e[0], e[1], e[2], e[3]);
  } else {
    for (uint32_t k = 0; k < count; ++k) row[i + k] = e[k];
  }
}

__device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// The pairwise sum of segments [seg_begin, seg_end) of a row of n elements, on every lane of the warp.
// values(first, count, e) fills e[0..count) with the elements first..first+count-1 (count 1..4); it may
// store them too. U segments are loaded before any is reduced, to keep loads in flight.
template <int U, typename Values>
__device__ __forceinline__ float warp_sum(Values values, uint32_t n, uint32_t seg_begin, uint32_t seg_end,
                                          uint32_t lane) {
  PairwiseStream<STREAM_LEVELS> acc;
  for (uint32_t s0 = seg_begin; s0 < seg_end; s0 += U) {
    float e[U][4];
    uint32_t m[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      e[u][0] = e[u][1] = e[u][2] = e[u][3] = ABSENT;
      m[u] = 0;
      if (s0 + u < seg_end) {
        const LaneSpan ls = lane_span(n, s0 + u, lane);
        if (ls.count) values(ls.first, ls.count, e[u]);
        m[u] = ls.m;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (s0 + u < seg_end) acc.push(warp_tree_sum(lane_sum4(e[u], lane * LANE_ELEMS, m[u]), lane, m[u], LANE_ELEMS));
  }
  return acc.finish();
}

// L (see (D)) of segments [seg_begin, seg_end), on every lane; not yet finished with x[0].
template <int U, typename Values>
__device__ __forceinline__ float warp_max(Values values, uint32_t n, uint32_t seg_begin, uint32_t seg_end,
                                          uint32_t lane) {
  float acc = NAN;
  for (uint32_t s0 = seg_begin; s0 < seg_end; s0 += U) {
    float e[U][4];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      e[u][0] = e[u][1] = e[u][2] = e[u][3] = NAN;
      if (s0 + u < seg_end) {
        const LaneSpan ls = lane_span(n, s0 + u, lane);
        if (ls.count) values(ls.first, ls.count, e[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (s0 + u < seg_end) acc = max_combine(acc, warp_tree_max(lane_max4(e[u]), lane));
  }
  return acc;
}

// The group's sum from its warps' results (warp_in_group < G), on every thread of the group. red: G floats
// of shared memory for this group. Every thread of the block calls it the same number of times: it holds
// two block barriers (the second lets red be reused).
template <uint32_t G>
__device__ __forceinline__ float group_sum(float warp_result, float* red, uint32_t warp_in_group, uint32_t lane,
                                           uint32_t warps_present) {
  if constexpr (G == 1) {
    return warp_result;
  } else {
    if (lane == 0) red[warp_in_group] = warp_in_group < warps_present ? warp_result : ABSENT;
    __syncthreads();
    const float v = warp_tree_sum(lane < G ? red[lane] : ABSENT, lane, warps_present, 1);
    __syncthreads();
    return v;
  }
}

template <uint32_t G>
__device__ __forceinline__ float group_max(float warp_result, float* red, uint32_t warp_in_group, uint32_t lane) {
  if constexpr (G == 1) {
    return warp_result;
  } else {
    if (lane == 0) red[warp_in_group] = warp_result;
    __syncthreads();
    const float v = warp_tree_max(lane < G ? red[lane] : NAN, lane);
    __syncthreads();
    return v;
  }
}

}  // namespace sdc::chunked
