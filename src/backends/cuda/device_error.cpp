#include "src/backends/cuda/device_error.h"

#include <cstring>

namespace sdc::cuda {

const char* source_name(const char* file) {
  for (const char* root : {"/src/", "/kernels/", "/bench/", "/tests/"}) {
    const char* p = std::strstr(file, root);
    if (p) return p + 1;
  }
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace sdc::cuda
