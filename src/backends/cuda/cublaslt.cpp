// cuBLASLt loaded at run time, the GEMM plan and the description of its algorithms (cublaslt.h).
#include "src/backends/cuda/cublaslt.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <type_traits>

#include "src/backends/cuda/cuda_backend.h"

#ifndef SDC_CUDA_TOOLKIT_LIBDIR
#define SDC_CUDA_TOOLKIT_LIBDIR ""
#endif

namespace sdc::cuda {
namespace {

// dlerror()'s text on one line (it names the file and the reason).
std::string dl_reason() {
  const char* e = dlerror();
  std::string s = e ? e : "unknown dynamic loader error";
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Names of cublasLt.h's enumerators, generated from the header at configure time (CMakeLists.txt), each
// entry written with the enumerator itself so the compiler checks the value:
// TILE_NAMES, STAGES_NAMES, INNER_SHAPE_NAMES, CLUSTER_NAMES.
struct EnumName {
  uint32_t value;
  const char* name;
};
#include "cublaslt_names.inc"

template <size_t N>
std::string enum_name(const EnumName (&names)[N], uint32_t value, const char* zero) {
  if (value == 0) return zero;
  for (const EnumName& e : names)
    if (e.value == value) return e.name;
  return fmt::format("#{}", value);
}

std::string reduction_name(uint32_t r) {
  switch (r) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: return "none";
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: return "inplace";
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: return "compute-type";
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: return "output-type";
    default: return fmt::format("#{}", r);
  }
}

struct Types {
  cudaDataType_t ab;
  cublasComputeType_t compute;
};

Types types_of(LtDtype d) {
  switch (d) {
    case LtDtype::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case LtDtype::fp16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    // fp32 storage, TF32 tensor cores: the exact-integer inputs have 10 fraction bits, so converting
    // them to TF32 (by rounding or truncation) changes nothing.
    case LtDtype::tf32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
    case LtDtype::fp8_e4m3: return {CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F};
  }
  throw LtError("unknown cuBLASLt dtype");
}

}  // namespace

LtLibrary::LtLibrary(const std::string& name) : name_(name) {
  dlerror();  // clear a stale message
  dl_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!dl_) throw LtError(fmt::format("cannot load cuBLASLt ({}): {}", name, dl_reason()));
  auto resolve = [this](auto& fn, const char* symbol) {
    dlerror();
    void* p = dlsym(dl_, symbol);
    if (!p) {
      const std::string why = dl_reason();
      dlclose(dl_);
      throw LtError(fmt::format("cuBLASLt ({}) lacks {}: {}", name_, symbol, why));
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  resolve(api_.create, "cublasLtCreate");
  resolve(api_.destroy, "cublasLtDestroy");
  resolve(api_.get_version, "cublasLtGetVersion");
  resolve(api_.get_status_name, "cublasLtGetStatusName");
  resolve(api_.matmul_desc_create, "cublasLtMatmulDescCreate");
  resolve(api_.matmul_desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(api_.matmul_desc_set_attribute, "cublasLtMatmulDescSetAttribute");
  resolve(api_.matrix_layout_create, "cublasLtMatrixLayoutCreate");
  resolve(api_.matrix_layout_destroy, "cublasLtMatrixLayoutDestroy");
  resolve(api_.preference_create, "cublasLtMatmulPreferenceCreate");
  resolve(api_.preference_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(api_.preference_set_attribute, "cublasLtMatmulPreferenceSetAttribute");
  resolve(api_.algo_get_heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(api_.algo_config_get_attribute, "cublasLtMatmulAlgoConfigGetAttribute");
  resolve(api_.matmul, "cublasLtMatmul");
}

LtLibrary::~LtLibrary() {
  if (dl_) dlclose(dl_);
}

std::string LtLibrary::version_text() const {
  const size_t v = api_.get_version();  // MAJOR * 10000 + MINOR * 100 + PATCH
  return fmt::format("cublasLt {}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

void LtLibrary::check(cublasStatus_t st, const char* call) const {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  const char* name = api_.get_status_name(st);
  throw LtError(fmt::format("{}: {}", call, name ? name : fmt::format("status {}", static_cast<int>(st))));
}

std::string LtLibrary::path() const {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(api_.create), &info) && info.dli_fname && *info.dli_fname) return info.dli_fname;
  return name_;
}

std::vector<std::string> cuda_library_candidates(const std::string& stem, const std::string& toolkit_libdir) {
  std::vector<std::string> names{stem + ".so.13", stem + ".so"};
  for (std::string dir : {toolkit_libdir, std::string("/usr/local/cuda/lib64")}) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty()) continue;
    const std::string file = dir + "/" + stem + ".so.13";
    if (std::find(names.begin(), names.end(), file) == names.end()) names.push_back(file);
  }
  return names;
}

std::vector<std::string> cublaslt_candidates(const std::string& toolkit_libdir) {
  return cuda_library_candidates("libcublasLt", toolkit_libdir);
}

const char* built_toolkit_libdir() { return SDC_CUDA_TOOLKIT_LIBDIR; }

const LtLibrary& system_cublaslt() {
  // Built once; a failed load leaves nothing behind, so a later call tries again.
  static std::mutex mutex;
  static std::unique_ptr<LtLibrary> lib;
  std::lock_guard<std::mutex> lock(mutex);
  if (lib) return *lib;
  const std::vector<std::string> names = cublaslt_candidates(built_toolkit_libdir());
  std::string first_error;
  for (const std::string& name : names) {
    try {
      lib = std::make_unique<LtLibrary>(name);
      return *lib;
    } catch (const LtError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  throw LtError(fmt::format("{}; none of {} loaded either", first_error, fmt::join(names.begin() + 1, names.end(), ", ")));
}

std::string cublaslt_summary() {
  try {
    const LtLibrary& lib = system_cublaslt();
    return lib.version_text() + " from " + lib.path();
  } catch (const std::exception& e) {
    return std::string("not loaded: ") + e.what();
  }
}

const char* lt_dtype_name(LtDtype d) {
  switch (d) {
    case LtDtype::bf16: return "bf16";
    case LtDtype::fp16: return "fp16";
    case LtDtype::tf32: return "tf32";
    case LtDtype::fp8_e4m3: return "fp8 e4m3";
  }
  return "?";
}

std::string lt_unsupported(LtDtype d, int cc_major, int cc_minor) {
  return d == LtDtype::fp8_e4m3 && cc_major * 10 + cc_minor < 89
             ? "fp8 tensor cores need compute capability 8.9 or newer"
             : "";
}

std::string describe_algo(const LtAlgoConfig& c) {
  return fmt::format(
      "algo {}, tile {}, stages {}, split-k {}, reduction {}, swizzle {}, custom {}, inner {}, cluster {}", c.id,
      enum_name(TILE_NAMES, c.tile, "undefined"), enum_name(STAGES_NAMES, c.stages, "undefined"), c.split_k,
      reduction_name(c.reduction), c.swizzle, c.custom, enum_name(INNER_SHAPE_NAMES, c.inner_shape, "undefined"),
      enum_name(CLUSTER_NAMES, c.cluster, "auto"));
}

LtGemm::LtGemm(const LtLibrary& lib, LtDtype dtype, int64_t m, int64_t n, int64_t k, uint64_t workspace_bytes)
    : lib_(lib), workspace_bytes_(workspace_bytes) {
  const LtApi& f = lib.api();
  const Types t = types_of(dtype);
  cublasLtHandle_t h = nullptr;
  lib.check(f.create(&h), "cublasLtCreate");
  handle_ = LtObject<cublasLtHandle_t>(h, f.destroy);

  // fp32 scale (alpha, beta); no A/B scale pointers, so fp8 scales by 1. Fast accumulation keeps its
  // default (off); the fp8 bound (kernels/exactint/formats.h) holds for any accumulator of 13 bits or more anyway.
  cublasLtMatmulDesc_t d = nullptr;
  lib.check(f.matmul_desc_create(&d, t.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  desc_ = LtObject<cublasLtMatmulDesc_t>(d, f.matmul_desc_destroy);
  const int32_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  lib.check(f.matmul_desc_set_attribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t),
            "cublasLtMatmulDescSetAttribute(TRANSA)");
  lib.check(f.matmul_desc_set_attribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n),
            "cublasLtMatmulDescSetAttribute(TRANSB)");

  auto layout = [&](cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    cublasLtMatrixLayout_t l = nullptr;
    lib.check(f.matrix_layout_create(&l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
              "cublasLtMatrixLayoutCreate");
    return LtObject<cublasLtMatrixLayout_t>(l, f.matrix_layout_destroy);
  };
  lt_a_ = layout(t.ab, k, n, k);        // the B buffer: K x N column-major, transposed to N x K
  lt_b_ = layout(t.ab, k, m, k);        // the A buffer: K x M column-major
  lt_c_ = layout(CUDA_R_32F, n, m, n);  // C^T: N x M column-major = C row-major, rows N apart

  cublasLtMatmulPreference_t p = nullptr;
  lib.check(f.preference_create(&p), "cublasLtMatmulPreferenceCreate");
  const LtObject<cublasLtMatmulPreference_t> pref(p, f.preference_destroy);
  const uint64_t max_workspace = workspace_bytes;
  lib.check(
      f.preference_set_attribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof max_workspace),
      "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");

  std::vector<cublasLtMatmulHeuristicResult_t> found(HEURISTIC_REQUEST);
  int count = 0;
  lib.check(f.algo_get_heuristic(h, d, lt_a_.get(), lt_b_.get(), lt_c_.get(), lt_c_.get(), p, HEURISTIC_REQUEST,
                                 found.data(), &count),
            "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < count; ++i) {
    const cublasLtMatmulHeuristicResult_t& r = found[static_cast<size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > workspace_bytes) continue;
    LtAlgorithm a{r.algo, r.workspaceSize, read_config(r.algo), {}};
    a.description = describe_algo(a.config);
    algorithms_.push_back(std::move(a));
  }
  if (algorithms_.empty())
    throw LtError(fmt::format("cublasLtMatmulAlgoGetHeuristic: no algorithm for {} {}x{}x{} within {} MiB of workspace",
                              lt_dtype_name(dtype), m, n, k, workspace_bytes >> 20));
}

LtAlgoConfig LtGemm::read_config(const cublasLtMatmulAlgo_t& algo) const {
  const LtApi& f = lib_.api();
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, auto& value, const char* what) {
    size_t written = 0;
    lib_.check(f.algo_config_get_attribute(&algo, attr, &value, sizeof value, &written), what);
    if (written != sizeof value)
      throw LtError(fmt::format("{}: {} bytes written, {} expected", what, written, sizeof value));
  };
  LtAlgoConfig c;
  get(CUBLASLT_ALGO_CONFIG_ID, c.id, "cublasLtMatmulAlgoConfigGetAttribute(ID)");
  get(CUBLASLT_ALGO_CONFIG_TILE_ID, c.tile, "cublasLtMatmulAlgoConfigGetAttribute(TILE_ID)");
  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, c.stages, "cublasLtMatmulAlgoConfigGetAttribute(STAGES_ID)");
  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c.split_k, "cublasLtMatmulAlgoConfigGetAttribute(SPLITK_NUM)");
  get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c.reduction, "cublasLtMatmulAlgoConfigGetAttribute(REDUCTION_SCHEME)");
  get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c.swizzle, "cublasLtMatmulAlgoConfigGetAttribute(CTA_SWIZZLING)");
  get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c.custom, "cublasLtMatmulAlgoConfigGetAttribute(CUSTOM_OPTION)");
  get(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, c.inner_shape, "cublasLtMatmulAlgoConfigGetAttribute(INNER_SHAPE_ID)");
  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, c.cluster, "cublasLtMatmulAlgoConfigGetAttribute(CLUSTER_SHAPE_ID)");
  return c;
}

void LtGemm::run(const void* a, const void* b, float* c, void* workspace, cudaStream_t s, size_t index) const {
  const LtAlgorithm& algo = algorithms_.at(index);
  const float alpha = 1.0f, beta = 0.0f;  // host pointer mode (the default); beta 0: C is not read
  // The library's A is our B and its B our A (see cublaslt.h); C and D are the same buffer and layout.
  lib_.check(lib_.api().matmul(handle_.get(), desc_.get(), &alpha, b, lt_a_.get(), a, lt_b_.get(), &beta, c,
                               lt_c_.get(), c, lt_c_.get(), &algo.algo, workspace, workspace_bytes_, s),
             "cublasLtMatmul");
}

}  // namespace sdc::cuda
