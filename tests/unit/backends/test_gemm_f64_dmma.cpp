// gemm_f64's kernel in every form (gemm_f64_device.h, kForms: the family's m8n8k4 ones and those with the sm_90
// instructions m16n8k8 and m16n8k16 only the benchmark runs, blocks of 64 and 128, slabs of 8 and 16, 2 stages
// through registers or 3 and 4 through cp.async) on the emulated device, at shapes where M or N is not a multiple
// of the 128-row block and K not a multiple of a slab or of 4 (odd K, and operands 8 bytes off 16-byte alignment,
// take the cp.async forms' 8-byte copies), against the specification's chain computed here with std::fma. The operands
// span 2^-60 to 2^60 with random signs and some signed zeros, so a wrong fragment element, edge mask, stride, ring
// buffer or chain order changes bits. Also: every block runs race-free, the sm_90 instructions are refused on an sm_80
// device, and forms needing more shared memory than a device grants. Compiled like test_racecheck.cpp (-DSDC_EMU).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/gemm_f64/gemm_f64.h"
#include "kernels/gemm_f64/gemm_f64_device.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/emu/emu_device.h"
#include "src/backends/emu/racecheck.h"
#include "tests/unit/catch.h"

using namespace sdc;
using gemm_f64::TILE;
using gemm_f64::emu::Dmma;

namespace {

std::vector<double> operand(size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.0);
  std::vector<double> v(n);
  for (double& x : v) {
    const uint64_t r = rng();
    x = r % 29 == 0 ? (r & 64 ? -0.0 : 0.0)
                    : std::ldexp(r & 1 ? -u(rng) : u(rng), static_cast<int>(r >> 40) % 121 - 60);
  }
  return v;
}

std::unique_ptr<cuda::DeviceRuntime> device(int cc_major, int cc_minor = 0) {
  emu::Spec spec;
  spec.cc_major = cc_major;
  spec.cc_minor = cc_minor;
  spec.sample_blocks = 0;                            // every block
  static std::vector<std::vector<DeviceInfo>> keep;  // the devices live until the process ends
  keep.push_back(emu::create_devices({spec}));
  auto rt = cuda::open_emulated_runtime(keep.back()[0]);
  rt->make_current();
  return rt;
}

// A call that launches a form on a 64 x 64 x 4 product (contents unused) on rt and returns what launch_gemm does.
auto launcher(std::shared_ptr<cuda::DeviceRuntime> rt) {
  return [rt](const gemm_f64::emu::Form& f) {
    cuda::Stream s(*rt);
    cuda::DeviceBuffer da(*rt, 64 * 4 * 8), db(*rt, 4 * 64 * 8), dout(*rt, 64 * 64 * 8), dsm(*rt, 4);
    return gemm_f64::emu::launch_gemm(f, da.as<const double>(), db.as<const double>(), dout.as<float>(),
                                      dsm.as<uint32_t>(), 64, 64, 4, s.get());
  };
}

}  // namespace

TEST_CASE("gemm_f64's kernel in every form equals the fma chain at ragged shapes, race-free", "[racecheck][mma]") {
  auto rt = device(9);
  cuda::Stream s(*rt);
  struct Dims {
    int64_t m, n, k;
    int64_t shift = 0;  // A and B start this many doubles into their buffers (8 bytes: not 16-byte aligned)
  };
  std::mt19937_64 rng(20261127);
  for (const Dims d : {Dims{64, 192, 13}, Dims{192, 128, 8}, Dims{128, 64, 1}, Dims{64, 64, 30}, Dims{128, 192, 37},
                       Dims{192, 64, 18, 1}}) {
    const std::vector<double> a = operand(static_cast<size_t>(d.m * d.k), rng),
                              b = operand(static_cast<size_t>(d.k * d.n), rng);
    std::vector<double> want(static_cast<size_t>(d.m * d.n));  // in the output's tile layout
    const int64_t tiles_n = d.n / TILE;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0.0;
        for (int64_t q = 0; q < d.k; ++q) acc = std::fma(a[i * d.k + q], b[q * d.n + j], acc);
        want[static_cast<size_t>(((i / TILE) * tiles_n + j / TILE) * TILE * TILE + (i % TILE) * TILE + j % TILE)] = acc;
      }
    const auto shift = static_cast<size_t>(d.shift);
    cuda::DeviceBuffer da(*rt, (a.size() + shift) * 8), db(*rt, (b.size() + shift) * 8), dout(*rt, want.size() * 8),
        dsm(*rt, want.size() / (TILE * TILE) * 4);
    rt->copy(da.as<double>() + shift, a.data(), a.size() * 8, s.get());
    rt->copy(db.as<double>() + shift, b.data(), b.size() * 8, s.get());
    for (const gemm_f64::emu::Form& form : gemm_f64::emu::kForms) {
      INFO(d.m << "x" << d.n << "x" << d.k << " shift " << d.shift << " instruction " << static_cast<int>(form.instr)
               << " block " << form.bm << " slab " << form.bk << " stages " << form.stages);
      std::vector<double> got(want.size(), 1.5);
      rt->copy(dout.get(), got.data(), got.size() * 8, s.get());
      emu::racecheck::reset();
      REQUIRE(gemm_f64::emu::launch_gemm(form, da.as<const double>() + shift, db.as<const double>() + shift,
                                         dout.as<float>(), dsm.as<uint32_t>(), d.m, d.n, d.k, s.get()));
      rt->copy(got.data(), dout.get(), got.size() * 8, s.get());
      size_t differ = 0;
      for (size_t e = 0; e < want.size(); ++e) differ += std::memcmp(&got[e], &want[e], 8) != 0;
      CHECK(differ == 0);
      for (const emu::racecheck::Race& r : emu::racecheck::races()) UNSCOPED_INFO(r.describe());
      CHECK(emu::racecheck::race_count() == 0);
    }
  }
}

TEST_CASE("gemm_f64's sm_90 forms are refused below sm_90, and a form it is not compiled in", "[racecheck][mma]") {
  const auto run = launcher(device(8));
  CHECK_FALSE(run({Dmma::m16n8k8, 128, 8, 2}));
  CHECK(gemm_f64::emu::unavailable({Dmma::m16n8k8, 128, 8, 2}) == "needs code for sm_90");
  CHECK_FALSE(run({Dmma::m16n8k16, 128, 16, 2}));
  CHECK_FALSE(run({Dmma::m8n8k4, 96, 8, 2}));   // no such block
  CHECK_FALSE(run({Dmma::m8n8k4, 64, 16, 2}));  // not compiled
  CHECK(gemm_f64::emu::unavailable({Dmma::m8n8k4, 64, 16, 2}) == "not a form gemm_f64's kernel is compiled in");
  CHECK(run({Dmma::m8n8k4, 64, 8, 2}));
  CHECK(gemm_f64::emu::unavailable({Dmma::m8n8k4, 64, 8, 2}).empty());
  CHECK(run({Dmma::m8n8k4, 128, 16, 3}));  // 112 KiB of shared memory: an sm_80 grants 163
}

TEST_CASE("gemm_f64's forms that need more shared memory than the device grants are refused", "[racecheck][mma]") {
  const auto run = launcher(device(8, 6));  // sm_86: 99 KiB per block
  CHECK_FALSE(run({Dmma::m8n8k4, 128, 16, 3}));
  CHECK(gemm_f64::emu::unavailable({Dmma::m8n8k4, 128, 16, 3}) ==
        "needs 112128 bytes of shared memory per block, the device grants 101376");
  CHECK(run({Dmma::m8n8k4, 128, 8, 4}));  // 82944 bytes
}

TEST_CASE("gemm_f64 takes 128 x 128 blocks only where every SM still gets one", "[racecheck][mma]") {
  CHECK(gemm_f64::emu::block_rows(4096, 4096, 132) == 128);  // 1024 blocks
  CHECK(gemm_f64::emu::block_rows(2048, 1024, 132) == 64);   // 128 blocks of 128 x 128 for 132 SMs
  CHECK(gemm_f64::emu::block_rows(2048, 1024, 128) == 128);
  CHECK(gemm_f64::emu::block_rows(192, 256, 4) == 128);  // 2 x 2 blocks, the bottom row half empty
  CHECK(gemm_f64::emu::block_rows(256, 256, 16) == 64);
}
