// The training-step replay's tensor-core matmul (mma_chain_kernel, kernels/train_step_f32/train_step_f32_kernels.cuh)
// on the emulated device, at shapes whose rows, columns and k are not multiples of the fragment's (16 x 8 x 16),
// with the three operand layouts of the replay's matmuls (Y = X W, dX = dY W^T, dW = X^T dY). The operands are
// small integers, bf16 values whose every partial sum is exact in fp32 whatever the order, so the product must
// equal a CPU's chain bit for bit: a wrong fragment map, edge mask or stride shows. Also with a grid too small for
// the fragments (the kernel's warps then stride over them). Compiled like test_racecheck.cpp (-DSDC_EMU).
#include <cstdint>
#include <cstring>
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

using train_step_f32::emu::Chain;

// a (rows x len as the chain reads it) and b, small integers; out = the CPU's chain.
void check_product(const char* what, const Chain& m, uint64_t a_size, uint64_t b_size, unsigned grid, unsigned block) {
  static const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  cuda::Stream s(*rt);
  std::vector<float> a(a_size), b(b_size), want(static_cast<size_t>(m.rows * m.cols)), got(want.size(), -1.0f);
  for (uint64_t i = 0; i < a_size; ++i) a[i] = static_cast<float>(static_cast<int>((i * 7 + 3) % 9) - 4);
  for (uint64_t i = 0; i < b_size; ++i) b[i] = static_cast<float>(static_cast<int>((i * 5 + 1) % 7) - 3);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t c = 0; c < m.cols; ++c) {
      float acc = 0;
      for (int64_t q = 0; q < m.len; ++q) acc = fmaf(a[r * m.ar + q * m.aq], b[q * m.bq + c * m.bc], acc);
      want[static_cast<size_t>(r * m.cols + c)] = acc;
    }
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
  check_product("matmul", Chain{t, n, k, k, 1, n, 1}, t * k, k * n, (need + 127) / 128, 128);
  // dX (t x k) = dY (t x n) W^T (W k x n)
  check_product("matmul_dx", Chain{t, k, n, n, 1, 1, n}, t * n, k * n,
                static_cast<unsigned>((train_step_f32::emu::tensor_core_threads(t, k) + 127) / 128), 128);
  // dW (k x n) = X^T (X t x k) dY (t x n): chains over tokens
  check_product("matmul_dw", Chain{k, n, t, 1, k, n, 1}, t * k, t * n,
                static_cast<unsigned>((train_step_f32::emu::tensor_core_threads(k, n) + 127) / 128), 128);
  // One block of two warps for all the fragments: the warps stride over them.
  check_product("matmul, grid short", Chain{t, n, k, k, 1, n, 1}, t * k, k * n, 1, 64);
  CHECK(need == 2 * 2 * 32);  // 19 rows: 2 fragments of 16; 11 columns: 2 of 8
}
