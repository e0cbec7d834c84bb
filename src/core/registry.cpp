// The registry of kernel families: the table kernels/families.def, in its stable order (CMake reads it too,
// for the sources). What adding a family takes: docs/families.md, "Where things go".
#include <algorithm>

#include "src/core/family.h"

namespace sdc {

// Each family's CPU side (kernels/<f>/<f>_ref.cpp, or <f>_family.cpp) and its device side (<f>.cu), compiled
// for the GPU (in a CUDA build: namespace gpu) and, unless the family's device side is a vendor library, for
// the emulated device (every build: namespace emu; src/backends/cuda/cuda_target.h).
#define SDC_DEVICE_SIDE(target)                                     \
  namespace target {                                                \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c); \
  }
#define SDC_FAMILY(ns) \
  namespace ns {       \
  Family family();     \
  SDC_DEVICE_SIDE(gpu) \
  SDC_DEVICE_SIDE(emu) \
  }
#define SDC_FAMILY_LIBRARY(ns) \
  namespace ns {               \
  Family family();             \
  SDC_DEVICE_SIDE(gpu)         \
  }
#define SDC_FAMILY_CPU(ns) \
  namespace ns {           \
  Family family();         \
  }
#include "kernels/families.def"
#undef SDC_DEVICE_SIDE

namespace {

using Prepare = std::unique_ptr<cuda::DeviceProblem> (*)(const Case&);

// A family lists its backends itself (its family()); the registry binds the device sides of those with
// one. A build without CUDA has no CUDA backend: there, "cuda" is not among the backends it can offer (the
// emulated device, a test-only backend, runs the emulated side all the same).
Family with_device_side(Family f, const char* device_side, [[maybe_unused]] Prepare gpu, Prepare emu) {
  f.device_side = device_side;
#if SDC_HAVE_CUDA
  f.prepare_cuda = gpu;
#else
  std::erase(f.backends, "cuda");
#endif
  f.prepare_emu = emu;
  return f;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
#if SDC_HAVE_CUDA
#define SDC_GPU_SIDE(ns) ns::gpu::prepare_cuda
#else
#define SDC_GPU_SIDE(ns) nullptr
#endif
#if SDC_HAVE_EMU
#define SDC_EMU_SIDE(ns) ns::emu::prepare_cuda
#else  // a build of the core alone (the fuzz harnesses): no device sides at all
#define SDC_EMU_SIDE(ns) nullptr
#endif
#define SDC_FAMILY(ns) with_device_side(ns::family(), "kernel", SDC_GPU_SIDE(ns), SDC_EMU_SIDE(ns)),
#define SDC_FAMILY_LIBRARY(ns) with_device_side(ns::family(), "library", SDC_GPU_SIDE(ns), nullptr),
#define SDC_FAMILY_CPU(ns) with_device_side(ns::family(), "none", nullptr, nullptr),
#include "kernels/families.def"
#undef SDC_GPU_SIDE
#undef SDC_EMU_SIDE
  };
  return all;
}

const Family* find_family(const std::string& id) {
  for (const Family& f : families())
    if (id == f.id) return &f;
  return nullptr;
}

std::string replay_family_ids() {
  std::string ids;
  for (const Family& f : families())
    if (f.replay) ids += (ids.empty() ? "" : ", ") + std::string(f.id);
  return ids;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::exact: return "exact";
    case Mode::exact_integer: return "exact-integer";
    case Mode::recorded: return "recorded";
    case Mode::consensus: return "consensus";
  }
  return "?";
}

}  // namespace sdc
