// gemm_bf16 on CUDA: bf16 tensor cores (mma.sync m16n8k16, f32 accumulators) on random full-precision inputs.
// The kernel is the exact-integer GEMMs' (kernels/exactint/exactint_mma.cuh): only the inputs differ
// (kernels/recorded_gemm/recorded_gemm_device.cuh). Its accumulation order is fixed (each warp's fragments in
// k order, stage by stage), so a GPU repeats its own bits; what the tensor cores do inside one instruction is
// the architecture's, hence recordings.
#include "../recorded_gemm/recorded_gemm_device.cuh"

namespace sdc::gemm_bf16::SDC_TARGET {

struct Traits : recorded_gemm::DtypeTraits<cuda::LtDtype::bf16> {};

std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return recorded_gemm::make_mma_device<Traits>(c); }

}  // namespace sdc::gemm_bf16::SDC_TARGET
