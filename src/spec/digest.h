// Per-tile digests. digest(tile) = sum over elements e of mix64(((bits(e) << 32) | e) ^ key(tile)),
// modulo 2^64. For a fixed position the summand is a bijection of the element's bits (mix64 is a
// bijection and the position occupies the low word), so changing any bits of any single element always
// changes the digest; two simultaneous changes cancel with probability about 2^-64. The sum is
// order-independent integer arithmetic, so a GPU can reduce it in any tree and match the host exactly.
#pragma once

#include "src/spec/generator.h"

namespace sdc {

SDC_HD uint64_t digest_key(uint64_t tile) { return mix64(0x5dc5c4ee5dc5c4eeULL ^ mix64(tile)); }

SDC_HD uint64_t digest_term(uint64_t key, uint32_t offset, uint32_t bits) {
  return mix64(((static_cast<uint64_t>(bits) << 32) | offset) ^ key);
}

inline uint64_t tile_digest(uint64_t tile, const float* out, uint32_t count) {
  const uint64_t key = digest_key(tile);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < count; ++i) sum += digest_term(key, i, float_bits(out[i]));
  return sum;
}

// The digest of a whole output, from its tile digests (in tile order, position-sensitive).
inline uint64_t output_digest(const uint64_t* tile_digests, uint64_t tiles) {
  uint64_t sum = 0;
  for (uint64_t t = 0; t < tiles; ++t) sum += mix64(tile_digests[t] ^ digest_key(~t));
  return sum;
}

}  // namespace sdc
