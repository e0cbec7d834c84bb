// The element types of the tensor-core GEMMs, as the families' traits name them (cuBLASLt's dtypes, and the
// project's own mma.sync kernels). Plain C++ with no library header: the emulated device's compilation of
// the kernels includes it without cuBLASLt.
#pragma once

#include <cstdint>

namespace sdc::cuda {

// The input types of the exact-integer families. All accumulate in fp32 (tf32: fp32 storage on the
// TF32 tensor-core path) and write fp32.
enum class LtDtype { bf16, fp16, tf32, fp8_e4m3 };
const char* lt_dtype_name(LtDtype d);
constexpr uint32_t lt_element_bytes(LtDtype d) { return d == LtDtype::fp8_e4m3 ? 1 : d == LtDtype::tf32 ? 4 : 2; }

}  // namespace sdc::cuda
