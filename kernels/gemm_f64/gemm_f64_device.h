// gemm_f64's kernel as a call (gemm_f64.cu), for the family's device problem and for the benchmark, which also
// times the sm_90 form of the same kernel.
#pragma once

#include <cstdint>
#include <string>

#include "src/backends/cuda/cuda_target.h"

namespace sdc::gemm_f64::SDC_TARGET {

// The fp64 tensor-core instruction the kernel issues per full slab:
//  m8n8k4:   mma.sync.m8n8k4.f64 (sm_80 and later), whose order was measured (one fma chain in increasing k from C)
//            and which the family runs;
//  m16n8k8, m16n8k16: mma.sync.m16n8k8.f64 and .m16n8k16.f64 (sm_90 and later: one instruction per 16 x 8 block
//            and 8 or 16 k), assumed to chain the same way; no GPU has confirmed it, so only the benchmark runs
//            them, and counts where their results differ from the family's.
enum class Dmma { m8n8k4, m16n8k8, m16n8k16 };

// A form of the kernel: its instruction, its block of bm x bm outputs (64: one tile, 4 warps; 128: 2 x 2 tiles,
// 8 warps), its slab of bk k values and how many slabs its shared memory holds: 2, the next slab fetched into
// registers while one is multiplied, then stored (any GPU of sm_80 and later); 3 or more, a ring of slabs filled by
// cp.async `stages - 1` slabs ahead, no registers between (its shared memory, stages x the slab's, must be granted:
// up to 110 KiB here, which sm_86 and sm_89 GPUs do not grant). Only speed and which warp stores an element depend on
// the form, as long as the instruction chains its products in k order.
struct Form {
  Dmma instr;
  int bm, bk, stages;
  constexpr bool operator==(const Form&) const = default;
};

// The forms the kernel is compiled in: the family's two (m8n8k4, 64 or 128, slabs of 8, 2 stages) first, then
// those the benchmark compares them with.
inline constexpr Form kForms[] = {
    {Dmma::m8n8k4, 64, 8, 2},    {Dmma::m8n8k4, 128, 8, 2},    {Dmma::m8n8k4, 128, 16, 2}, {Dmma::m16n8k8, 128, 8, 2},
    {Dmma::m16n8k8, 128, 16, 2}, {Dmma::m16n8k16, 128, 16, 2}, {Dmma::m8n8k4, 64, 16, 3},  {Dmma::m8n8k4, 128, 8, 4},
    {Dmma::m8n8k4, 128, 16, 3},  {Dmma::m16n8k16, 128, 16, 3}};

// A warp's part of a block of bm x bm outputs: warp_rows(bm) x WARP_COLUMNS (64 x 32 in a 128 block, whose 8 warps
// then load 12 fragments per 32 DMMAs; 32 x 32 in a 64 block, 4 warps as the family's first kernel had, which keep
// a thread's registers near 128 so that 4 blocks share an SM).
constexpr int WARP_COLUMNS = 32;
constexpr int warp_rows(int bm) { return bm == 128 ? 64 : 32; }

// The block the family takes on a GPU of `sms` SMs: 128 (rows and columns: 2 x 2 tiles, 8 warps) when that
// still gives every SM a block, else 64 (one tile, 4 warps), so that small products spread over the whole GPU.
int block_rows(int64_t m, int64_t n, int sms);

// The form the family runs an m x n product in on the current device: m8n8k4, block_rows for its SM count, slabs
// of 8, 2 stages.
Form family_form(int64_t m, int64_t n);

// The instruction's PTX shape: "m8n8k4", "m16n8k8", "m16n8k16".
constexpr const char* instr_name(Dmma instr) {
  return instr == Dmma::m8n8k4 ? "m8n8k4" : instr == Dmma::m16n8k8 ? "m16n8k8" : "m16n8k16";
}

// "m8n8k4/128/k16/s3": the instruction, the block, the slab and the stages.
std::string form_name(const Form& f);

// Why the current device cannot run form f ("" when it can): a form not in kForms; m16n8k8 and m16n8k16 unless the
// kernel the device would run was compiled for sm_90 or later; more shared memory than the device grants a block.
std::string unavailable(const Form& f);

// Enqueues C = A B (gemm_f64.h's shapes and output tiles) on stream s in form f. Returns false, launching nothing,
// where the current device cannot run the form (unavailable); a launch error is thrown as the backend's launches
// are (device_util.cuh).
bool launch_gemm(const Form& f, const double* a, const double* b, float* out, uint32_t* tile_sm, int64_t m, int64_t n,
                 int64_t k, cudaStream_t s);

}  // namespace sdc::gemm_f64::SDC_TARGET
