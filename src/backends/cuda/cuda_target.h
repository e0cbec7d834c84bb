// What device code is compiled against: the CUDA runtime under nvcc (and for the host code of a CUDA
// build), or the emulation header when the same source is compiled for the emulated device (-DSDC_EMU,
// src/backends/emu/cuda_emu.h). SDC_TARGET names the namespace that keeps the two compilations of one
// source apart in one binary (gpu, emu): every function a kernel file defines with external linkage lives
// in it, so the linker can never take one target's copy for the other's.
#pragma once

#if defined(SDC_EMU)
#include "src/backends/emu/cuda_emu.h"
#define SDC_TARGET emu
#else
#include <cuda_runtime.h>
#define SDC_TARGET gpu
#endif
