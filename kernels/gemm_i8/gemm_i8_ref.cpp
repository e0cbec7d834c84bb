// gemm_i8 on the CPU: the family's registration, the screen's tile computation and the plain specification
// beside it (gemm_i8.h: storage, bound, inputs). Integer sums are exact, so the fast path may block k and
// vectorize over columns freely: it gives the specification's bits by the bound alone.
#include <algorithm>
#include <cstring>

#include "kernels/gemm_i8/gemm_i8.h"
#include "src/core/family_util.h"
#include "src/core/gemm_tiles.h"

namespace sdc::gemm_i8 {
namespace {

static_assert(GemmTiles::T == TILE);

constexpr int KB = 256;  // k per block of the fast path (a multiple of 4)

class GemmI8Problem final : public GemmTiles {
 public:
  explicit GemmI8Problem(const Case& c) : GemmTiles(c), dist_(c.distribution), seed_(c.data_seed) {}

  std::vector<TensorInfo> inputs() const override {
    return {{"a", static_cast<uint64_t>(m_ * (k_ / 4))}, {"b", static_cast<uint64_t>((k_ / 4) * n_)}};
  }
  void generate_input(size_t tensor, uint64_t begin, uint64_t end, float* dst) const override {
    const auto t = static_cast<uint32_t>(tensor);
    const uint64_t key = tensor_key(seed_, t);
    for (uint64_t w = begin; w < end; ++w) {
      const uint32_t u = input_word(dist_, t, key, w, static_cast<uint64_t>(k_ / 4), static_cast<uint64_t>(n_));
      std::memcpy(dst + (w - begin), &u, sizeof u);
    }
  }

  // Blocks of KB k: the tile's 64 columns of B and each row's A unpacked to int32, then c[r][0..63] +=
  // a[r][k] b[k][0..63] (the inner loop over 64 columns is what the compiler vectorizes).
  void compute_tile(const float* const* in, uint64_t tile, float* out, Workspace& ws) const override {
    const uint32_t* a = words(in[0]);
    const uint32_t* b = words(in[1]);
    const int64_t r0 = row0(tile), c0 = col0(tile), kq = k_ / 4;
    ws.i32.resize(static_cast<size_t>(TILE * TILE + KB * TILE + KB));
    int32_t* acc = ws.i32.data();
    int32_t* bt = acc + TILE * TILE;  // bt[kk][j]: B[k0 + kk][c0 + j]
    int32_t* ar = bt + KB * TILE;     // ar[kk]: A[r][k0 + kk]
    std::fill(acc, acc + TILE * TILE, 0);
    for (int64_t k0 = 0; k0 < k_; k0 += KB) {
      const int kn = static_cast<int>(std::min<int64_t>(KB, k_ - k0));
      for (int qq = 0; qq < kn / 4; ++qq) {
        const uint32_t* brow = b + (k0 / 4 + qq) * n_ + c0;
        for (int j = 0; j < TILE; ++j)
          for (int s = 0; s < 4; ++s) bt[(4 * qq + s) * TILE + j] = byte_of(brow[j], s);
      }
      for (int r = 0; r < TILE; ++r) {
        const uint32_t* arow = a + (r0 + r) * kq + k0 / 4;
        for (int qq = 0; qq < kn / 4; ++qq)
          for (int s = 0; s < 4; ++s) ar[4 * qq + s] = byte_of(arow[qq], s);
        int32_t* c = acc + r * TILE;
        for (int kk = 0; kk < kn; ++kk) {
          const int32_t x = ar[kk];
          const int32_t* bk = bt + kk * TILE;
          for (int j = 0; j < TILE; ++j) c[j] += x * bk[j];
        }
      }
    }
    std::memcpy(out, acc, TILE * TILE * sizeof(int32_t));
  }

  // The specification: C[i][j] = sum over k of A[i][k] B[k][j], each element read from its word and byte, the
  // sum in 64 bits (exact without any bound) and stored as int32 (which holds it: gemm_i8.h).
  void compute_tile_scalar(const float* const* in, uint64_t tile, float* out) const override {
    const uint32_t* a = words(in[0]);
    const uint32_t* b = words(in[1]);
    const int64_t kq = k_ / 4;
    for (int r = 0; r < TILE; ++r)
      for (int cc = 0; cc < TILE; ++cc) {
        const int64_t i = row0(tile) + r, j = col0(tile) + cc;
        int64_t sum = 0;
        for (int64_t k = 0; k < k_; ++k)
          sum += static_cast<int64_t>(byte_of(a[i * kq + k / 4], static_cast<int>(k % 4))) *
                 byte_of(b[(k / 4) * n_ + j], static_cast<int>(k % 4));
        const auto v = static_cast<int32_t>(sum);
        std::memcpy(out + r * TILE + cc, &v, sizeof v);
      }
  }

 private:
  static const uint32_t* words(const float* p) { return reinterpret_cast<const uint32_t*>(p); }

  Distribution dist_;
  uint64_t seed_;
};

std::string validate(const Case& c) {
  return check_shape(c,
                     {{"m", TILE, MAX_MN, TILE}, {"n", TILE, MAX_MN, TILE}, {"k", 4, MAX_K, 4}, {"engine", 0, 1, 1}});
}

std::unique_ptr<Problem> prepare(const Case& c) { return std::make_unique<GemmI8Problem>(c); }

}  // namespace

Family family() {
  Family f{"gemm_i8",
           "int8 matrix product into int32, exact (dp4a on CUDA cores or mma.sync s8 on tensor cores; CPU cores)",
           {Mode::exact_integer},
           {"cpu", "cuda"},
           {"m", "n", "k", "engine"},
           validate,
           prepare};
  f.int8_inputs = true;
  f.int32_outputs = true;
  return f;
}

}  // namespace sdc::gemm_i8
