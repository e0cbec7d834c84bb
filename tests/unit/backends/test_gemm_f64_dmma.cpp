// gemm_f64's kernel in every form (gemm_f64_device.h, kForms: the family's m8n8k4 ones and those with the sm_90
// instructions m16n8k8 and m16n8k16 only the benchmark runs, blocks of 64 and 128, slabs of 8 and 16, 2 stages
// through registers or 3 and 4 through cp.async) on the emulated device against the specification's chain at the
// ragged shapes of tests/gpu/gemm_f64_forms.h (which gpu_tests runs on a real GPU), every block race-free. Also:
// the sm_90 instructions are refused on an sm_80 device, and forms needing more shared memory than a device grants.
// Compiled like test_racecheck.cpp (-DSDC_EMU).
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
#include "tests/gpu/gemm_f64_forms.h"
#include "tests/unit/catch.h"

using namespace sdc;
using gemm_f64::emu::Dmma;

namespace {

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
  gemm_f64_forms::check_forms(
      *rt, gemm_f64::emu::kForms,
      [](auto&&... args) {
        emu::racecheck::reset();
        return gemm_f64::emu::launch_gemm(args...);
      },
      [](const gemm_f64_forms::Dims& d, const gemm_f64::emu::Form& form, bool ran, uint64_t differ, uint64_t) {
        INFO(d.m << "x" << d.n << "x" << d.k << " shifts " << d.a_shift << "," << d.b_shift << " instruction "
                 << static_cast<int>(form.instr) << " block " << form.bm << " slab " << form.bk << " stages "
                 << form.stages);
        REQUIRE(ran);
        CHECK(differ == 0);
        for (const emu::racecheck::Race& r : emu::racecheck::races()) UNSCOPED_INFO(r.describe());
        CHECK(emu::racecheck::race_count() == 0);
      });
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
  CHECK(gemm_f64::emu::form_name({Dmma::m16n8k16, 128, 16, 3}) == "m16n8k16/128/k16/s3");
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
