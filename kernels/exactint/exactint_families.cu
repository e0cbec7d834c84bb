// The device side of the exact-integer GEMM families: `prepare_cuda` for each SDC_GEMM_EXACTINT line of the
// family table (kernels/families.def), in namespace sdc::<id>::SDC_TARGET, on the line's engine:
//  * mma: the format's tensor cores through mma.sync (m16n8k16 for bf16 and fp16, m16n8k8 for tf32, m16n8k32
//    for e4m3; f32 accumulators). The kernel, the generation of the narrow inputs and the geometry are the
//    shared ones (exactint_mma.cuh), bound to the format's traits (exactint_device.cuh);
//  * cublaslt: cuBLASLt's pinned algorithm on the same exact-integer inputs (fp32 accumulation and output;
//    exactint_lt.cuh). A real GPU only: the emulated device's compilation of this file has none of them.
// Each line derives its own traits type in its own namespace (MmaTraits, LtTraits), so every kernel
// instantiation belongs to one family and is made once, here.
#include "kernels/exactint/exactint_device.cuh"
#include "kernels/exactint/formats.h"

// traits: the line's own traits type; prepare: exactint_device.cuh's prepare_mma or prepare_lt.
#define SDC_EXACTINT_DEVICE(id, format, traits, prepare)                                                    \
  namespace sdc::id::SDC_TARGET {                                                                           \
  struct traits : exactint::DeviceTraits<exactint::formats::format> {};                                     \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c) { return exactint::prepare<traits>(c); } \
  }
#define SDC_EXACTINT_DEVICE_mma(id, format) SDC_EXACTINT_DEVICE(id, format, MmaTraits, prepare_mma)
#if defined(SDC_EMU)  // cuBLASLt runs only on a real GPU
#define SDC_EXACTINT_DEVICE_cublaslt(id, format)
#else
#define SDC_EXACTINT_DEVICE_cublaslt(id, format) SDC_EXACTINT_DEVICE(id, format, LtTraits, prepare_lt)
#endif
#define SDC_GEMM_EXACTINT(id, engine, format) SDC_EXACTINT_DEVICE_##engine(id, format)
#include "kernels/families.def"
