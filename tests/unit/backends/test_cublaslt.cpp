// The cuBLASLt path on the CPU (no GPU needed): the families computed by cuBLASLt are registered like their
// mma.sync twins (same modes, shapes, validation, inputs and tiles; for the exact-integer ones the same
// reference, hence the same goldens; the recorded ones have no CPU reference) but for GPUs only; and, in a
// CUDA build, the run-time loader fails with one line naming the library, and algorithm descriptions are
// complete and distinct.
#include <limits.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/gemm_case.h"
#include "src/core/family.h"

#if SDC_HAVE_CUDA
#include "bench/cublas_loader.h"
#include "src/backends/cuda/cublaslt.h"
#include "src/backends/cuda/cuda_backend.h"
#include "src/backends/cuda/cuda_check.h"
#endif

using namespace sdc;

namespace {

struct Twin {
  std::string lt, own;
  Distribution inputs;  // a distribution both define, for comparing inputs
};
const std::vector<Twin> LT_TWINS = {
    {"gemm_bf16_exactint_cublaslt", "gemm_bf16_exactint", Distribution::mantissa_walk},
    {"gemm_f16_exactint_cublaslt", "gemm_f16_exactint", Distribution::mantissa_walk},
    {"gemm_tf32_exactint_cublaslt", "gemm_tf32_exactint", Distribution::mantissa_walk},
    {"gemm_fp8_exactint_cublaslt", "gemm_fp8_exactint", Distribution::mantissa_walk},
    {"gemm_bf16_cublaslt", "gemm_bf16", Distribution::heavy_tail},
    {"gemm_f16_cublaslt", "gemm_f16", Distribution::heavy_tail},
};

Case lt_case(const std::string& family, int64_t m, int64_t n, int64_t k, Distribution d = Distribution::uniform) {
  Case c = test::gemm_case(family, find_family(family)->modes.front(), m, n, k, d, 4242);
  c.id = "unit_test.case";  // one id for both families: validation messages name it
  return c;
}

// The cuBLASLt family and its twin, both registered.
std::pair<const Family*, const Family*> registered(const std::string& lt, const std::string& twin) {
  const Family* f = find_family(lt);
  const Family* t = find_family(twin);
  REQUIRE(f != nullptr);
  REQUIRE(t != nullptr);
  return {f, t};
}

}  // namespace

TEST_CASE("cublaslt: the families are registered like their twins, for GPUs only", "[cublaslt]") {
  for (const auto& [lt, twin, unused] : LT_TWINS) {
    INFO(lt);
    const auto [f, t] = registered(lt, twin);
    CHECK(f->modes == t->modes);
    CHECK((f->modes == std::vector<Mode>{Mode::exact_integer} ||
           f->modes == std::vector<Mode>{Mode::recorded, Mode::consensus}));
    CHECK(f->shape_keys == t->shape_keys);
    // A family declares its backends itself: a cuBLASLt family the CUDA backend alone, which a build without
    // CUDA does not offer.
#if SDC_HAVE_CUDA
    CHECK(f->backends == std::vector<std::string>{"cuda"});
    CHECK(f->prepare_cuda != nullptr);
    CHECK(f->prepare_cuda != t->prepare_cuda);
#else
    CHECK(f->backends.empty());
    CHECK(f->prepare_cuda == nullptr);
#endif
  }
}

TEST_CASE("cublaslt: shape validation is the twin's", "[cublaslt]") {
  for (const auto& [lt, twin, unused] : LT_TWINS) {
    INFO(lt);
    const auto [f, t] = registered(lt, twin);
    // valid, K past the exactness bound, M not a multiple of 64, K not a multiple of 32, a distribution
    // the pattern may not define, the largest K each admits
    const std::vector<Case> cases = {
        lt_case(lt, 64, 128, 64),
        lt_case(lt, 64, 64, 70016),
        lt_case(lt, 100, 64, 64),
        lt_case(lt, 64, 64, 48),
        lt_case(lt, 64, 64, 64, Distribution::heavy_tail),
        lt_case(lt, 128, 64, 544),
        lt_case(lt, 128, 64, 576),
        lt_case(lt, 64, 64, 8192),
        lt_case(lt, 64, 64, 8224),
        lt_case(lt, 64, 64, 65792),
        lt_case(lt, 64, 64, 65824),
        lt_case(lt, 64, 64, 64, Distribution::mantissa_walk),
    };
    int valid = 0;
    for (const Case& c : cases) {
      CHECK(f->validate(c) == t->validate(c));
      valid += f->validate(c).empty();
    }
    CHECK(valid >= 2);                 // each family admits some of these shapes...
    CHECK(valid < int(cases.size()));  // ...and rejects others
  }
}

TEST_CASE("cublaslt: inputs and tiles are the twin's, and so is the reference where there is one", "[cublaslt]") {
  for (const auto& [lt, twin, dist] : LT_TWINS) {
    INFO(lt);
    const Case c = lt_case(lt, 128, 192, 96, dist);
    REQUIRE(find_family(lt)->validate(c).empty());
    const auto p = find_family(lt)->prepare(c);
    const auto q = find_family(twin)->prepare(c);
    REQUIRE(p->tile_count() == q->tile_count());
    REQUIRE(p->tile_elements() == q->tile_elements());
    CHECK(p->tile_count() == 6);
    for (uint64_t t = 0; t < p->tile_count(); ++t) CHECK(p->tile_name(t) == q->tile_name(t));
    CHECK(p->element_name(12345) == q->element_name(12345));
    const auto tensors = p->inputs();
    REQUIRE(tensors.size() == 2);
    std::vector<std::vector<float>> in, in_twin;
    std::vector<const float*> ptrs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      in.emplace_back(tensors[i].elements);
      in_twin.emplace_back(tensors[i].elements);
      p->generate_input(i, 0, tensors[i].elements, in.back().data());
      q->generate_input(i, 0, tensors[i].elements, in_twin.back().data());
      CHECK(std::memcmp(in.back().data(), in_twin.back().data(), tensors[i].elements * 4) == 0);
      ptrs.push_back(in.back().data());
    }
    Workspace ws;
    std::vector<float> a(p->tile_elements()), b(p->tile_elements());
    if (!has_cpu_golden(c.mode)) {
      // recorded: no CPU reference; asking for one is a defect, never a silent result
      CHECK_THROWS_AS(p->compute_tile(ptrs.data(), 0, a.data(), ws), std::logic_error);
      CHECK_THROWS_AS(q->compute_tile(ptrs.data(), 0, b.data(), ws), std::logic_error);
      continue;
    }
    for (uint64_t t = 0; t < p->tile_count(); ++t) {
      p->compute_tile(ptrs.data(), t, a.data(), ws);
      q->compute_tile(ptrs.data(), t, b.data(), ws);
      CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    }
  }
}

#if SDC_HAVE_CUDA

TEST_CASE("cublaslt: a library that does not load is one line naming it, not an abort", "[cublaslt]") {
  const std::string missing = "libsdcscreen-test-no-such-cublasLt.so.13";
  std::string what;
  try {
    cuda::LtLibrary lib(missing);
  } catch (const cuda::LtError& e) {
    what = e.what();
  }
  REQUIRE(!what.empty());
  CHECK(what.find('\n') == std::string::npos);
  CHECK(what.find(missing) != std::string::npos);
  CHECK(what.find("cannot load cuBLASLt") != std::string::npos);

  // A library that loads but is not cuBLASLt: the first missing entry point, on one line.
  what.clear();
  try {
    cuda::LtLibrary lib("libc.so.6");
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  REQUIRE(!what.empty());
  CHECK(what.find('\n') == std::string::npos);
  CHECK(what.find("libc.so.6") != std::string::npos);
  CHECK(what.find("cublasLtCreate") != std::string::npos);
}

TEST_CASE("cublaslt: looked for by the loader first, then in the toolkit's and the usual CUDA directories", "[cublaslt]") {
  using V = std::vector<std::string>;
  const V loader{"libcublasLt.so.13", "libcublasLt.so"};
  const std::string usual = "/usr/local/cuda/lib64/libcublasLt.so.13";
  CHECK(cuda::cublaslt_candidates("/opt/cuda-13.0/lib64") ==
        V{loader[0], loader[1], "/opt/cuda-13.0/lib64/libcublasLt.so.13", usual});
  CHECK(cuda::cublaslt_candidates("/opt/cuda/lib//") == V{loader[0], loader[1], "/opt/cuda/lib/libcublasLt.so.13", usual});
  CHECK(cuda::cublaslt_candidates("") == V{loader[0], loader[1], usual});
  CHECK(cuda::cublaslt_candidates("/usr/local/cuda/lib64/") == V{loader[0], loader[1], usual});
  // This build's: the toolkit it was compiled with comes before the usual place.
  const V built = cuda::cublaslt_candidates(cuda::built_toolkit_libdir());
  REQUIRE(built.size() >= 3);
  CHECK(built.back() == usual);
  // A candidate given as a path loads from that path, whatever the loader's search path holds; one that is
  // not there is refused naming it.
  size_t loaded = 0;
  for (const std::string& name : built) {
    if (name.find('/') == std::string::npos) continue;
    struct stat st {};
    if (stat(name.c_str(), &st) != 0) {
      CHECK_THROWS_WITH(cuda::LtLibrary(name), Catch::Contains(name));
      continue;
    }
    const cuda::LtLibrary lib(name);
    char want[PATH_MAX], got[PATH_MAX];
    REQUIRE(realpath(name.c_str(), want));
    REQUIRE(realpath(lib.path().c_str(), got));
    CHECK(std::string(got) == want);
    CHECK(lib.version_text().rfind("cublasLt 13.", 0) == 0);
    ++loaded;
  }
  // The toolkit this was built with has the library (it is part of the toolkit).
  CHECK(loaded >= 1);
}

TEST_CASE("cublas (bench_gpu): looked for in cuBLASLt's places, loaded at run time with every entry point",
          "[cublaslt]") {
  using V = std::vector<std::string>;
  CHECK(cuda::cuda_library_candidates("libcublas", "/opt/cuda-13.0/lib64/") ==
        V{"libcublas.so.13", "libcublas.so", "/opt/cuda-13.0/lib64/libcublas.so.13",
          "/usr/local/cuda/lib64/libcublas.so.13"});
  CHECK(cuda::cuda_library_candidates("libcublasLt", cuda::built_toolkit_libdir()) ==
        cuda::cublaslt_candidates(cuda::built_toolkit_libdir()));
  // The toolkit this was built with has cuBLAS (part of the toolkit): one candidate loads, with every entry
  // point bench_gpu calls.
  bench::CublasApi api;
  REQUIRE_NOTHROW(api = bench::load_cublas());
  CHECK((api.create && api.destroy && api.set_stream && api.get_version && api.set_math_mode && api.sgemm &&
         api.status_string));
  CHECK(api.file.find("libcublas.so") != std::string::npos);
  CHECK(std::string(api.status_string(CUBLAS_STATUS_SUCCESS)).size() > 0);
}

TEST_CASE("cublaslt: the system library, where present, has every entry point and says its version", "[cublaslt]") {
  // Both outcomes are checked: a machine without the library must get the one-line error naming both
  // names tried; with it, the table is complete and the status names come from the library itself.
  const cuda::LtLibrary* lib = nullptr;
  std::string what;
  try {
    lib = &cuda::system_cublaslt();
  } catch (const cuda::LtError& e) {
    what = e.what();
  }
  if (!lib) {
    CHECK(what.find('\n') == std::string::npos);
    for (const std::string& name : cuda::cublaslt_candidates(cuda::built_toolkit_libdir()))
      CHECK(what.find(name + (name == "libcublasLt.so.13" ? ")" : "")) != std::string::npos);
    CHECK(cuda::cublaslt_summary() == "not loaded: " + what);
    return;
  }
  CHECK(&cuda::system_cublaslt() == lib);  // loaded once
  // The file it came from, for `info`: an absolute path that exists.
  const std::string path = lib->path();
  struct stat st {};
  CHECK((path.rfind('/', 0) == 0 && stat(path.c_str(), &st) == 0));
  CHECK(cuda::cublaslt_summary() == lib->version_text() + " from " + path);
  const cuda::LtApi& f = lib->api();
  CHECK((f.create && f.destroy && f.get_version && f.get_status_name && f.matmul_desc_create && f.matmul_desc_destroy &&
         f.matmul_desc_set_attribute && f.matrix_layout_create && f.matrix_layout_destroy && f.preference_create &&
         f.preference_destroy && f.preference_set_attribute && f.algo_get_heuristic && f.algo_config_get_attribute &&
         f.matmul));
  const std::string v = lib->version_text();
  CHECK(v.rfind("cublasLt 13.", 0) == 0);
  CHECK(std::count(v.begin(), v.end(), '.') == 2);
  std::string failed;
  try {
    lib->check(CUBLAS_STATUS_NOT_SUPPORTED, "cublasLtMatmul");
  } catch (const cuda::LtError& e) {
    failed = e.what();
  }
  CHECK(failed == "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK_NOTHROW(lib->check(CUBLAS_STATUS_SUCCESS, "cublasLtMatmul"));
}

TEST_CASE("cublaslt: algorithm descriptions name every field", "[cublaslt]") {
  const struct {
    cuda::LtAlgoConfig config;  // id, tile, stages, split_k, reduction, swizzle, custom, inner_shape, cluster
    const char* text;
  } cases[] = {
      {{21, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_STAGES_64x3, 1, CUBLASLT_REDUCTION_SCHEME_NONE, 1, 0,
        CUBLASLT_MATMUL_INNER_SHAPE_MMA16816, CUBLASLT_CLUSTER_SHAPE_2x1x1},
       "algo 21, tile 128x256, stages 64x3, split-k 1, reduction none, swizzle 1, custom 0, inner MMA16816, "
       "cluster 2x1x1"},
      {{21, CUBLASLT_MATMUL_TILE_64x8, CUBLASLT_MATMUL_STAGES_128xAUTO, 4, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE, 1, 0,
        CUBLASLT_MATMUL_INNER_SHAPE_MMA16816, CUBLASLT_CLUSTER_SHAPE_1x15x1},
       "algo 21, tile 64x8, stages 128xAUTO, split-k 4, reduction output-type, swizzle 1, custom 0, inner MMA16816, "
       "cluster 1x15x1"},
      // What a fresh configuration holds.
      {{},
       "algo 0, tile undefined, stages undefined, split-k 1, reduction none, swizzle 0, custom 0, inner undefined, "
       "cluster auto"},
      // Values no enumerator of this build names.
      {{0, 65000, 65001, 1, 64, 0, 0, 60000, 60001},
       "algo 0, tile #65000, stages #65001, split-k 1, reduction #64, swizzle 0, custom 0, inner #60000, "
       "cluster #60001"},
  };
  for (const auto& c : cases) CHECK(cuda::describe_algo(c.config) == c.text);
}

TEST_CASE("cublaslt: configurations that differ in any one field are described differently", "[cublaslt]") {
  const cuda::LtAlgoConfig base;
  std::vector<cuda::LtAlgoConfig> v(10, base);
  v[1].id = 6;
  v[2].tile = CUBLASLT_MATMUL_TILE_256x128;
  v[3].stages = CUBLASLT_MATMUL_STAGES_32x5;
  v[4].split_k = 2;
  v[5].reduction = CUBLASLT_REDUCTION_SCHEME_INPLACE;
  v[6].swizzle = 1;
  v[7].custom = 3;
  v[8].inner_shape = CUBLASLT_MATMUL_INNER_SHAPE_MMA884;
  v[9].cluster = CUBLASLT_CLUSTER_SHAPE_1x1x1;
  std::set<std::string> texts;
  for (const cuda::LtAlgoConfig& c : v) texts.insert(cuda::describe_algo(c));
  CHECK(texts.size() == v.size());
}

TEST_CASE("cublaslt: fp8 is not applicable before compute capability 8.9; widths of the dtypes", "[cublaslt]") {
  CHECK(!cuda::lt_unsupported(cuda::LtDtype::fp8_e4m3, 8, 0).empty());
  CHECK(!cuda::lt_unsupported(cuda::LtDtype::fp8_e4m3, 8, 6).empty());
  CHECK(cuda::lt_unsupported(cuda::LtDtype::fp8_e4m3, 8, 9).empty());
  CHECK(cuda::lt_unsupported(cuda::LtDtype::fp8_e4m3, 9, 0).empty());
  for (cuda::LtDtype d : {cuda::LtDtype::bf16, cuda::LtDtype::fp16, cuda::LtDtype::tf32})
    CHECK(cuda::lt_unsupported(d, 8, 0).empty());
  CHECK(cuda::lt_element_bytes(cuda::LtDtype::bf16) == 2);
  CHECK(cuda::lt_element_bytes(cuda::LtDtype::fp16) == 2);
  CHECK(cuda::lt_element_bytes(cuda::LtDtype::tf32) == 4);
  CHECK(cuda::lt_element_bytes(cuda::LtDtype::fp8_e4m3) == 1);
}

TEST_CASE("cublaslt: a failed library call that lost the context is the device's failure", "[cublaslt]") {
  const std::string what = "cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED";
  // The stream healthy or still running, or an error that leaves the context usable: the library's own error.
  for (cudaError_t e : {cudaSuccess, cudaErrorNotReady, cudaErrorInvalidValue, cudaErrorMemoryAllocation})
    CHECK_NOTHROW(cuda::check_library_failure(what, e));
  // A sticky error on the stream (a kernel fault, a contained error, an uncorrectable ECC error): the context
  // is gone, so the GPU is marked dead (CudaError::sticky), with both messages.
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorContained, cudaErrorECCUncorrectable, cudaErrorLaunchFailure}) {
    bool sticky = false;
    std::string text;
    try {
      cuda::check_library_failure(what, e);
    } catch (const cuda::CudaError& ce) {
      sticky = ce.sticky();
      text = ce.what();
    }
    CHECK(sticky);
    CHECK(text.find(what) != std::string::npos);
    CHECK(text.find(cudaGetErrorName(e)) != std::string::npos);
  }
}

#endif
