// cuBLASLt, the GEMM library LLM training runs on, loaded at run time (dlopen) so that one binary runs
// where the library is absent: only the cases that need it fail, with one line naming the library.
// cublasLt.h supplies types and enums only; nothing here links against libcublasLt.
//
// LtGemm plans the one product the exact-integer families need:
//   C (M x N fp32, row-major, rows N apart) = A (M x K, row-major) * B (N x K, row-major)^T
// In cuBLASLt's column-major terms a row-major R x C matrix with rows L apart is a C x R column-major
// matrix with leading dimension L, so C^T (N x M, ld N) = B-buffer^T (N x K) * A-buffer (K x M): the
// library's "A" is the B buffer (K x N, ld K, transposed), its "B" the A buffer (K x M, ld K, not
// transposed). That is the "TN" layout fp8 kernels require, and it serves every dtype alike.
#pragma once

#include <cublasLt.h>  // types and enums only
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "src/backends/cuda/lt_dtype.h"

namespace sdc::cuda {

// A library that could not be loaded, or a cuBLASLt call that failed: one line naming the library or
// the call and the status name.
class LtError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exactly the entry points sdcscreen calls, resolved from the loaded library.
struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetVersion) get_version = nullptr;
  decltype(&cublasLtGetStatusName) get_status_name = nullptr;
  decltype(&cublasLtMatmulDescCreate) matmul_desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) matmul_desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) matmul_desc_set_attribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) matrix_layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) matrix_layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) preference_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) preference_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) preference_set_attribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) algo_config_get_attribute = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

// One loaded copy of the library. Loading with RTLD_NODELETE: closing the handle never unmaps code
// that CUDA may still call back into during process exit.
class LtLibrary {
 public:
  // `name` as the dynamic loader takes it (a file name it searches for, or a path). Throws LtError,
  // one line naming the library, when it cannot be loaded or lacks an entry point.
  explicit LtLibrary(const std::string& name);
  ~LtLibrary();
  LtLibrary(const LtLibrary&) = delete;
  LtLibrary& operator=(const LtLibrary&) = delete;

  const LtApi& api() const { return api_; }
  const std::string& name() const { return name_; }
  // The file the loader opened for `name` (its path, from an entry point's address); `name` if unknown.
  std::string path() const;
  // "cublasLt 13.1.0", from the loaded library (cublasLtGetVersion), not from the header built against.
  std::string version_text() const;
  // Throws LtError "<call>: <status name>" unless st is CUBLAS_STATUS_SUCCESS.
  void check(cublasStatus_t st, const char* call) const;

 private:
  void* dl_ = nullptr;
  std::string name_;
  LtApi api_;
};

// Where system_cublaslt() looks, in order: libcublasLt.so.13, then libcublasLt.so, as the loader finds
// them (LD_LIBRARY_PATH, its cache); then libcublasLt.so.13 in `toolkit_libdir` (the library directory of
// the CUDA toolkit this binary was built with) and in /usr/local/cuda/lib64, so that a node whose loader
// was never told where CUDA is still finds it. An empty or repeated directory is left out.
std::vector<std::string> cublaslt_candidates(const std::string& toolkit_libdir);
// The same places for another library of CUDA 13 (`stem` "libcublas": bench_gpu's cuBLAS, bench/cublas_loader.h).
std::vector<std::string> cuda_library_candidates(const std::string& stem, const std::string& toolkit_libdir);

// The library directory of the CUDA toolkit this binary was built with ("" if the build did not say).
const char* built_toolkit_libdir();

// The system's cuBLASLt, shared by the whole process: the first of cublaslt_candidates() that loads.
// Loaded on the first call (thread-safe) and kept; when none loads it throws LtError naming every one
// tried, and the next call tries again.
const LtLibrary& system_cublaslt();

// RAII for one cuBLASLt object (handle, descriptor, layout, preference) and its destroy function.
template <class T>
class LtObject {
 public:
  using Destroy = cublasStatus_t (*)(T);
  LtObject() = default;
  LtObject(T object, Destroy destroy) : object_(object), destroy_(destroy) {}
  LtObject(LtObject&& o) noexcept
      : object_(std::exchange(o.object_, nullptr)), destroy_(std::exchange(o.destroy_, nullptr)) {}
  LtObject& operator=(LtObject&& o) noexcept {
    std::swap(object_, o.object_);
    std::swap(destroy_, o.destroy_);
    return *this;
  }
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  ~LtObject() {
    if (object_) destroy_(object_);  // a destructor cannot report a failure; the status is dropped
  }
  T get() const { return object_; }

 private:
  T object_ = nullptr;
  Destroy destroy_ = nullptr;
};

// Why a GPU of this compute capability cannot run the dtype ("" when it can): fp8 needs 8.9.
std::string lt_unsupported(LtDtype d, int cc_major, int cc_minor);

// An algorithm's configuration as cublasLtMatmulAlgoConfigGetAttribute reports it (enum values of
// cublasLt.h), kept plain so that its description is a pure function.
struct LtAlgoConfig {
  int32_t id = 0;
  uint32_t tile = 0;         // cublasLtMatmulTile_t
  uint32_t stages = 0;       // cublasLtMatmulStages_t
  int32_t split_k = 1;       // k split into this many parts, summed by `reduction`
  uint32_t reduction = 0;    // cublasLtReductionScheme_t
  uint32_t swizzle = 0;      // CTA swizzling
  uint32_t custom = 0;       // the algorithm's custom option
  uint16_t inner_shape = 0;  // cublasLtMatmulInnerShape_t
  uint16_t cluster = 0;      // cublasLtClusterShape_t
};

// "algo 21, tile 128x256, stages 64x3, split-k 1, reduction none, swizzle 0, custom 0, inner MMA16816,
// cluster 1x1x1": every field, named from cublasLt.h's enumerators ("#N" for a value this build does
// not name), always in this order. Recordings are keyed on it: two configurations never share a text.
std::string describe_algo(const LtAlgoConfig& c);

// One algorithm the heuristic offers for a plan.
struct LtAlgorithm {
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes;  // what it needs, at most the plan's workspace
  LtAlgoConfig config;
  std::string description;  // describe_algo(config)
};

class LtGemm {
 public:
  // Asked of the heuristic: more than it ever offers for one problem, so the list is all of them.
  static constexpr int HEURISTIC_REQUEST = 256;

  // Plans the product on the current device: descriptors, layouts, and every algorithm the heuristic
  // offers that fits in `workspace_bytes`, fastest first (its estimate). Throws LtError when there is none.
  LtGemm(const LtLibrary& lib, LtDtype dtype, int64_t m, int64_t n, int64_t k, uint64_t workspace_bytes);

  const std::vector<LtAlgorithm>& algorithms() const { return algorithms_; }
  // The heuristic's first choice: the algorithm the screen runs.
  const LtAlgorithm& pinned() const { return algorithms_.front(); }
  const LtLibrary& library() const { return lib_; }

  // Enqueues C = A * B^T with algorithms()[index] on stream s. a: M x K, b: N x K in the dtype; c: M x N
  // fp32; workspace: the plan's workspace_bytes of device memory. Every pointer as cudaMalloc aligns it.
  void run(const void* a, const void* b, float* c, void* workspace, cudaStream_t s, size_t index = 0) const;

 private:
  LtAlgoConfig read_config(const cublasLtMatmulAlgo_t& algo) const;

  const LtLibrary& lib_;
  uint64_t workspace_bytes_;
  LtObject<cublasLtHandle_t> handle_;
  LtObject<cublasLtMatmulDesc_t> desc_;
  LtObject<cublasLtMatrixLayout_t> lt_a_, lt_b_, lt_c_;  // the library's A (our B), B (our A), C = D
  std::vector<LtAlgorithm> algorithms_;
};

}  // namespace sdc::cuda
