// The device side of the recorded tensor-core GEMM families: `prepare_cuda` for each SDC_GEMM_RECORDED line
// of the family table (kernels/families.def), in namespace sdc::<id>::SDC_TARGET, on the line's engine:
//  * mma: the format's tensor cores through mma.sync m16n8k16 (f32 accumulators). The kernel is the
//    exact-integer GEMMs' (kernels/exactint/exactint_mma.cuh): only the inputs differ
//    (recorded_gemm_device.cuh). Its accumulation order is fixed (each warp's fragments in k order, stage by
//    stage), so a GPU repeats its own bits; what the tensor cores do inside one instruction is the
//    architecture's, hence recordings;
//  * cublaslt: cuBLASLt's pinned algorithm (fp32 accumulation and output) on the same inputs, generated on
//    the device by the same kernel. What the library's kernel does inside one instruction and how it splits K
//    are its own, hence recordings keyed by the library's version and the pinned algorithm. A real GPU only:
//    the emulated device's compilation of this file has none of them.
// Each line derives its own traits type in its own namespace (Traits), so every kernel instantiation belongs
// to one family and is made once, here.
#include "kernels/recorded_gemm/recorded_gemm_device.cuh"

// make: recorded_gemm_device.cuh's make_mma_device or make_lt_device.
#define SDC_RECORDED_DEVICE(id, format, make)                                                                 \
  namespace sdc::id::SDC_TARGET {                                                                             \
  struct Traits : recorded_gemm::DtypeTraits<recorded_gemm::formats::format::DTYPE> {};                       \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return recorded_gemm::make<Traits>(c); } \
  }
#define SDC_RECORDED_DEVICE_mma(id, format) SDC_RECORDED_DEVICE(id, format, make_mma_device)
#if defined(SDC_EMU)  // cuBLASLt runs only on a real GPU
#define SDC_RECORDED_DEVICE_cublaslt(id, format)
#else
#define SDC_RECORDED_DEVICE_cublaslt(id, format) SDC_RECORDED_DEVICE(id, format, make_lt_device)
#endif
#define SDC_GEMM_RECORDED(id, engine, format) SDC_RECORDED_DEVICE_##engine(id, format)
#include "kernels/families.def"
