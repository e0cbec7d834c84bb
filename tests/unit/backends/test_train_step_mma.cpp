// The training-step replay's tensor-core matmul (mma_chain_kernel, kernels/train_step_f32/train_step_f32_kernels.cuh)
// on the emulated device, at shapes whose rows, columns and k are not multiples of the fragment's (16 x 8 x 16),
// with the three operand layouts of the replay's matmuls (Y = X W, dX = dY W^T, dW = X^T dY). The operands are
// small integers, bf16 values whose every partial sum is exact in fp32 whatever the order, so the product must
// equal a CPU's chain bit for bit: a wrong fragment map, edge mask or stride shows. Also with a grid too small for
// the fragments (the kernel's warps then stride over them). Compiled like test_racecheck.cpp (-DSDC_EMU).
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/emu/emu_device.h"
// The header's kernels have internal linkage (they belong to train_step_f32.cu's translation unit): this test
// launches one of them, and the rest are unused here by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "kernels/train_step_f32/train_step_f32_kernels.cuh"
#pragma GCC diagnostic pop
#include "tests/unit/catch.h"

using namespace sdc;

namespace {

using train_step_f32::Chain;

// Small integers in -mod/2 .. mod/2, as the operands a (rows x len as the chain reads it) and b: hashed from the
// index, so that no stride or transposition can read an equal value by a period of the pattern.
std::vector<float> operand(uint64_t size, uint64_t mul, uint64_t add, int mod) {
  std::vector<float> v(size);
  for (uint64_t i = 0; i < size; ++i) {
    const uint64_t h = ((i * mul + add) * 0x9E3779B97F4A7C15ull) >> 40;
    v[i] = static_cast<float>(static_cast<int>(h % static_cast<uint64_t>(mod)) - mod / 2);
  }
  return v;
}

// The CPU's chain: out[r][c] = chain over q of a[r * ar + q * aq] * b[q * bq + c * bc].
std::vector<float> chain_product(const Chain& m, const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> want(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      float acc = 0;
      for (int64_t q = 0; q < m.len; ++q) acc = fmaf(a[r * m.ar + q * m.aq], b[q * m.bq + c * m.bc], acc);
      want[static_cast<size_t>(r * m.cols + c)] = acc;
    }
  return want;
}

std::unique_ptr<cuda::DeviceRuntime> runtime() {
  static const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  return rt;
}

// a (rows x len as the chain reads it) and b, small integers; out = the CPU's chain.
void check_product(const char* what, const Chain& m, uint64_t a_size, uint64_t b_size, unsigned grid, unsigned block) {
  auto rt = runtime();
  cuda::Stream s(*rt);
  const std::vector<float> a = operand(a_size, 7, 3, 9), b = operand(b_size, 5, 1, 7), want = chain_product(m, a, b);
  std::vector<float> got(want.size(), -1.0f);
  cuda::DeviceBuffer da(*rt, a_size * 4), db(*rt, b_size * 4), dout(*rt, got.size() * 4);
  rt->copy(da.get(), a.data(), a_size * 4, s.get());
  rt->copy(db.get(), b.data(), b_size * 4, s.get());
  rt->copy(dout.get(), got.data(), got.size() * 4, s.get());
  cuda::launch("mma_chain_kernel", train_step_f32::emu::mma_chain_kernel, grid, block, s.get(), da.as<const float>(),
               db.as<const float>(), m, dout.as<float>());
  rt->copy(got.data(), dout.get(), got.size() * 4, s.get());
  INFO(what);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
}

}  // namespace

TEST_CASE("the replay's tensor-core matmul equals the chain on exact operands at ragged shapes", "[racecheck][mma]") {
  const int64_t t = 19, k = 21, n = 11;  // none a multiple of 16 or 8
  const unsigned need = static_cast<unsigned>(train_step_f32::emu::tensor_core_threads(t, n));
  // Y (t x n) = X (t x k) W (k x n)
  check_product("matmul", train_step_f32::matmul_chain(t, k, n), t * k, k * n, (need + 127) / 128, 128);
  // dX (t x k) = dY (t x n) W^T (W k x n)
  check_product("matmul_dx", train_step_f32::matmul_dx_chain(t, k, n), t * n, k * n,
                static_cast<unsigned>((train_step_f32::emu::tensor_core_threads(t, k) + 127) / 128), 128);
  // dW (k x n) = X^T (X t x k) dY (t x n): chains over tokens
  check_product("matmul_dw", train_step_f32::matmul_dw_chain(t, k, n), t * k, t * n,
                static_cast<unsigned>((train_step_f32::emu::tensor_core_threads(k, n) + 127) / 128), 128);
  // One block of two warps for all the fragments: the warps stride over them.
  check_product("matmul, grid short", train_step_f32::matmul_chain(t, k, n), t * k, k * n, 1, 64);
  CHECK(need == 2 * 2 * 32);  // 19 rows: 2 fragments of 16; 11 columns: 2 of 8
}

// cuBLASLt's engine (train_step_bf16 with engine 1) packs each operand into its TN layout (pack_bf16_kernel), which a
// GPU alone can multiply: here the packing runs on the emulated device and the CPU multiplies the packed rows,
// C[r][c] = chain over q of A[r][q] * B[c][q], which must be the replay's chain for each of the three layouts (a wrong
// stride or a swapped operand shows; the operands are small integers, exact in bf16 and in every partial sum).
TEST_CASE("cuBLASLt's packed operands of the replay's matmuls give the chains' products", "[racecheck][mma]") {
  const int64_t t = 19, k = 21, n = 11;
  const struct {
    const char* what;
    Chain m;
    uint64_t a_size, b_size;
  } layouts[] = {{"matmul", train_step_f32::matmul_chain(t, k, n), uint64_t{t * k}, uint64_t{k * n}},
                 {"matmul_dx", train_step_f32::matmul_dx_chain(t, k, n), uint64_t{t * n}, uint64_t{k * n}},
                 {"matmul_dw", train_step_f32::matmul_dw_chain(t, k, n), uint64_t{t * k}, uint64_t{t * n}}};
  for (const auto& l : layouts) {
    INFO(l.what);
    const Chain& m = l.m;
    auto rt = runtime();
    cuda::Stream s(*rt);
    const std::vector<float> a = operand(l.a_size, 7, 3, 9), b = operand(l.b_size, 5, 1, 7);
    cuda::DeviceBuffer da(*rt, l.a_size * 4), db(*rt, l.b_size * 4);
    cuda::DeviceBuffer pa(*rt, static_cast<uint64_t>(m.rows * m.len) * 2), pb(*rt, static_cast<uint64_t>(m.cols * m.len) * 2);
    rt->copy(da.get(), a.data(), l.a_size * 4, s.get());
    rt->copy(db.get(), b.data(), l.b_size * 4, s.get());
    cuda::launch("pack_bf16_kernel", train_step_f32::emu::pack_bf16_kernel, 1, 64, s.get(), da.as<const float>(), m,
                 false, pa.as<uint16_t>());
    cuda::launch("pack_bf16_kernel", train_step_f32::emu::pack_bf16_kernel, 3, 32, s.get(), db.as<const float>(), m,
                 true, pb.as<uint16_t>());
    std::vector<uint16_t> ha(static_cast<size_t>(m.rows * m.len)), hb(static_cast<size_t>(m.cols * m.len));
    rt->copy(ha.data(), pa.get(), ha.size() * 2, s.get());
    rt->copy(hb.data(), pb.get(), hb.size() * 2, s.get());
    auto value = [](uint16_t h) {
      const uint32_t u = uint32_t{h} << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    };
    std::vector<float> got(static_cast<size_t>(m.rows * m.cols));
    for (int64_t r = 0; r < m.rows; ++r)
      for (int64_t c = 0; c < m.cols; ++c) {
        float acc = 0;
        for (int64_t q = 0; q < m.len; ++q)
          acc = fmaf(value(ha[static_cast<size_t>(r * m.len + q)]), value(hb[static_cast<size_t>(c * m.len + q)]), acc);
        got[static_cast<size_t>(r * m.cols + c)] = acc;
      }
    const std::vector<float> want = chain_product(m, a, b);
    CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
  }
}
