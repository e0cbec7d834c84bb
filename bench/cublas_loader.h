// cuBLAS for bench_gpu's SGEMM comparison, loaded at run time (dlopen) as the screen loads cuBLASLt
// (src/backends/cuda/cublaslt.cpp), from the same places (cuda_library_candidates): the loader's search path,
// then the built toolkit's library directory and /usr/local/cuda/lib64. bench_gpu then starts where the loader
// was never told where CUDA is, and where cuBLAS is missing altogether it says which files it tried (exit 2)
// instead of failing to start. cublas_v2.h gives the types only.
#pragma once

#include <cublas_v2.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "src/backends/cuda/cublaslt.h"

namespace sdc::bench {

// Exactly the entry points bench_gpu calls (cublas_v2.h maps cublasCreate and the others to their _v2 names).
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasGetVersion_v2) get_version = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasDgemm_v2) dgemm = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string file;  // the candidate that loaded
};

// Loads the first candidate that has every entry point (kept loaded: RTLD_NODELETE, as cuBLASLt); throws
// std::runtime_error naming every candidate tried and the first reason.
inline CublasApi load_cublas() {
  const auto names = cuda::cuda_library_candidates("libcublas", cuda::built_toolkit_libdir());
  std::string first_error, tried;
  for (const std::string& name : names) {
    tried += (tried.empty() ? "" : ", ") + name;
    dlerror();
    void* dl = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!dl) {
      const char* e = dlerror();
      if (first_error.empty()) first_error = e ? e : name + ": unknown dynamic loader error";
      continue;
    }
    CublasApi api;
    std::string missing;
    auto resolve = [&](auto& fn, const char* symbol) {
      void* p = dlsym(dl, symbol);
      if (!p && missing.empty()) missing = symbol;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    resolve(api.create, "cublasCreate_v2");
    resolve(api.destroy, "cublasDestroy_v2");
    resolve(api.set_stream, "cublasSetStream_v2");
    resolve(api.get_version, "cublasGetVersion_v2");
    resolve(api.set_math_mode, "cublasSetMathMode");
    resolve(api.sgemm, "cublasSgemm_v2");
    resolve(api.dgemm, "cublasDgemm_v2");
    resolve(api.status_string, "cublasGetStatusString");
    if (missing.empty()) {
      api.file = name;
      return api;
    }
    if (first_error.empty()) first_error = name + " lacks " + missing;
    dlclose(dl);
  }
  std::string what = "cannot load cuBLAS: " + first_error + " (tried " + tried + ")";
  for (char& c : what)
    if (c == '\n') c = ' ';
  throw std::runtime_error(what);
}

}  // namespace sdc::bench
