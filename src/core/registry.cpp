// The registry of kernel families: the table kernels/families.def, in its stable order. Adding a family
// means one folder under kernels/ and one line in that table (CMake reads it too, for the sources).
#include <algorithm>

#include "family.h"

namespace sdc {

// Each family's CPU side (kernels/<f>/<f>_ref.cpp) and, in a CUDA build, its device side (<f>.cu).
#define SDC_FAMILY(ns)                                              \
  namespace ns {                                                    \
  Family family();                                                  \
  std::unique_ptr<cuda::DeviceProblem> prepare_cuda(const Case& c); \
  }
#define SDC_FAMILY_CPU(ns) \
  namespace ns {           \
  Family family();         \
  }
#include "../../kernels/families.def"

namespace {

// A family lists its backends itself (its family()); the registry binds the device side of those with
// one. A build without CUDA has no CUDA backend: there, "cuda" is not among the backends it can offer.
Family bind(Family f, [[maybe_unused]] std::unique_ptr<cuda::DeviceProblem> (*prepare_cuda)(const Case&)) {
#if SDC_HAVE_CUDA
  f.prepare_cuda = prepare_cuda;
#else
  std::erase(f.backends, "cuda");
#endif
  return f;
}

}  // namespace

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
#if SDC_HAVE_CUDA
#define SDC_FAMILY(ns) bind(ns::family(), ns::prepare_cuda),
#else
#define SDC_FAMILY(ns) bind(ns::family(), nullptr),
#endif
#define SDC_FAMILY_CPU(ns) bind(ns::family(), nullptr),
#include "../../kernels/families.def"
  };
  return all;
}

const Family* find_family(const std::string& id) {
  for (const Family& f : families())
    if (id == f.id) return &f;
  return nullptr;
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
