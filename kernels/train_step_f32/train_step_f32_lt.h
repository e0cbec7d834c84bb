// train_step_bf16 on cuBLASLt (mode recorded, shape key `engine` 1; docs/families.md, "The tensor-core replay"):
// every matmul of the step (Y = X W, dX = dY W^T, dW = X^T dY, lm_head's included) is cuBLASLt's bf16 product with
// fp32 accumulation and output, the path a training framework takes; the rest of the step is the replay's own
// kernels. The operands are packed into cuBLASLt's TN layout first (pack_bf16_kernel), and each distinct shape has
// one plan whose pinned algorithm (the heuristic's first) the engine names, so a recording is kept per library
// version and algorithms, as the recorded GEMMs' are. Part of train_step_f32.cu's translation unit.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "kernels/train_step_f32/train_step_f32_chain.h"
#include "src/backends/cuda/device_problem.h"
#if !defined(SDC_EMU)  // cuBLASLt runs only on a real GPU
#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/cublaslt.h"
#endif

namespace sdc::train_step_f32::SDC_TARGET {
namespace {

// A matmul's shape: out (rows x cols) from chains of len products.
struct MatmulShape {
  int64_t rows, cols, len;
  bool operator<(const MatmulShape& o) const {
    return std::tie(rows, cols, len) < std::tie(o.rows, o.cols, o.len);
  }
};

// The workspace offered to cuBLASLt (split-K partial sums), as the cuBLASLt GEMM families offer it.
constexpr uint64_t LT_WORKSPACE_BYTES = uint64_t{32} << 20;

class LtMatmuls {
 public:
  // Plans every shape on the current device (the GPU's host thread, after cudaSetDevice). A device that cannot run
  // them gets no plan and refusal() says why: the emulated device (no cuBLASLt), a GPU before compute capability 8.0
  // (no bf16 tensor cores). Throws cuda::LtError when the library cannot be loaded or offers no algorithm.
  explicit LtMatmuls(const std::set<MatmulShape>& shapes) {
#if defined(SDC_EMU)
    (void)shapes;
    refusal_ = "the replay's cuBLASLt engine runs only on a real GPU (the emulated device has no cuBLASLt)";
#else
    int dev = 0, major = 0, minor = 0;
    SDC_CUDA_CHECK(cudaGetDevice(&dev));
    SDC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    SDC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    refusal_ = cuda::lt_unsupported(cuda::LtDtype::bf16, major, minor);
    if (!refusal_.empty()) return;
    for (const MatmulShape& m : shapes)
      plans_.emplace(m, std::make_unique<cuda::LtGemm>(cuda::system_cublaslt(), cuda::LtDtype::bf16, m.rows, m.cols,
                                                       m.len, LT_WORKSPACE_BYTES));
#endif
  }

  const std::string& refusal() const { return refusal_; }

  // The loaded library's version and, per shape (rows x cols x len), the pinned algorithm.
  cuda::Engine engine() const {
    std::string algorithms;
#if !defined(SDC_EMU)
    for (const auto& [m, plan] : plans_)
      algorithms += (algorithms.empty() ? "" : "; ") + std::to_string(m.rows) + "x" + std::to_string(m.cols) + "x" +
                    std::to_string(m.len) + ": " + plan->pinned().description;
    if (!plans_.empty())
      return {plans_.begin()->second->library().version_text(),
              "train_step replay: bf16 matmul operands on cuBLASLt (f32 accumulation; per shape rows x cols x k, the "
              "pinned algorithm: " + algorithms + "), the rest simt fp32 (recorded)"};
#endif
    return {"cublasLt", "none: " + refusal_};
  }

  // Enqueues out (rows x cols fp32, row-major) = A B^T on s: a is rows x len, b cols x len, bf16 (pack_bf16_kernel).
  void run(const MatmulShape& m, const void* a, const void* b, float* out, void* workspace, cudaStream_t s) const {
#if defined(SDC_EMU)
    (void)m, (void)a, (void)b, (void)out, (void)workspace, (void)s;
    throw std::runtime_error(refusal_);
#else
    const auto it = plans_.find(m);
    if (it == plans_.end())
      throw std::logic_error("train_step_f32: no cuBLASLt plan for a " + std::to_string(m.rows) + "x" +
                             std::to_string(m.cols) + "x" + std::to_string(m.len) + " matmul");
    // As the cuBLASLt GEMM families (lt_gemm_device.cpp): a failed call that took the context with it is the GPU's.
    try {
      it->second->run(a, b, out, workspace, s);
    } catch (const cuda::LtError& e) {
      cuda::check_library_failure(e.what(), cudaStreamQuery(s));
      throw;
    }
#endif
  }

 private:
  std::string refusal_;
#if !defined(SDC_EMU)
  std::map<MatmulShape, std::unique_ptr<cuda::LtGemm>> plans_;
#endif
};

}  // namespace
}  // namespace sdc::train_step_f32::SDC_TARGET
