// Benchmark of the CUDA backend, in one process on one GPU (docs/design.md, "Performance targets"):
//  1. the exact fp32 GEMM (gemm_f32) against cuBLAS SGEMM without TF32 on the same shapes and inputs:
//     median time of interleaved runs, TFLOP/s of both and the ratio (target: at least 0.85);
//  1b. the exact fp64 GEMM (gemm_f64) against cuBLAS DGEMM (its default math: fp64 tensor cores where the
//     GPU has them) on the same shapes and inputs, as 1 (target: at least 0.8); then each form of its kernel
//     (blocks, slabs, and on sm_90 the m16n8k8 and m16n8k16 instructions: bench_dmma.cpp), its ratio and how many
//     values differ from the family's, and in 4 the tiles where the sm_90 forms differ from each gemm_f64 golden;
//  2. the verification overhead: the generic digest pass, the copy of the digests to the host and the
//     host comparison, as a share of the GEMM kernel's time on the same shape (target: at most 3%);
//  3. cuBLASLt on exact-integer bf16 and fp16 inputs at large shapes (bench_lt.cpp): bare matmul against
//     the verified stress (target: at least 0.95) and the digest share (target: at most 3%), both with
//     the same pinned algorithm, and the project's own mma.sync kernel as a ratio of cuBLASLt;
//  4. every case of the battery: the device's tile digests checked against the golden digests first,
//     then compute() timed and reported as TFLOP/s (Problem::tile_flops * tiles / time).
//
// Usage: bench_gpu [--patterns DIR] [--reps N] [--shapes MxNxK[,MxNxK...]] [--device I] [--json FILE]
// Defaults: the source tree's patterns, 10 repetitions, shapes 8192x8192x8192 and 4096x12288x8192.
// Exit status: 0 all figures taken; 1 a device result disagreed (golden digests, repeat digests, or
// cuBLAS beyond rounding; outranks 2); 2 no usable device or a CUDA error; 64 bad command line; 78 bad
// pattern data.
// Targets are reported (text and JSON), never turned into an exit status: timings belong to the
// validation record, not to a pass/fail test.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "bench/cublas_loader.h"
#include "kernels/gemm_f32/gemm_f32.h"
#include "kernels/gemm_f64/gemm_f64.h"
#include "src/backends/cuda/cuda_check.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_problem.h"
#include "src/core/family.h"
#include "src/core/patterns.h"
#include "src/core/patterns_location.h"
#include "src/util/atomic_file.h"

namespace {

using namespace sdc::bench;
constexpr double kGemmTarget = 0.85;    // exact GEMM / cuBLAS SGEMM
constexpr double kDigestTarget = 0.03;  // digest + copy + compare / GEMM kernel
constexpr double kDgemmTarget = 0.8;    // exact fp64 GEMM / cuBLAS DGEMM
// cuBLAS, loaded at run time by main() before any call (cublas_loader.h).
CublasApi blas_api;

#define BENCH_CUBLAS(expr)                                                              \
  do {                                                                                  \
    const cublasStatus_t st_ = (expr);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                   \
      throw std::runtime_error(std::string(#expr) + ": " + blas_api.status_string(st_));  \
  } while (0)

struct Shape {
  int64_t m, n, k;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};

bool parse_shapes(const std::string& text, std::vector<Shape>& shapes) {
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    Shape s{};
    char tail = 0;
    if (std::sscanf(text.substr(pos, comma - pos).c_str(), "%" SCNd64 "x%" SCNd64 "x%" SCNd64 "%c", &s.m, &s.n, &s.k,
                    &tail) != 3)
      return false;
    shapes.push_back(s);
    pos = comma + 1;
  }
  return !shapes.empty();
}

sdc::Case gemm_case(const Shape& s, const char* family = "gemm_f32") {
  sdc::Case c;
  c.id = std::string("bench.") + family + "." + s.name();
  c.family = family;
  c.mode = sdc::Mode::exact;
  c.distribution = sdc::Distribution::uniform;
  c.data_seed = 20240601;
  c.shape.dims = {{"m", s.m}, {"n", s.n}, {"k", s.k}};
  return c;
}

// The largest |ours - cuBLAS| over C (T: float or double): ours in the exact GEMM's tiles of `tile` x `tile`
// values, row-major within a tile; cuBLAS's row-major (column-major C^T). Both are copied back on the stream
// both ran on (not the legacy default stream, which a non-blocking stream is not ordered with).
template <class T>
double max_abs_diff(const DeviceCase& dc, const DeviceBuffer& c_blas, const Shape& sh, int64_t tile, cudaStream_t s) {
  std::vector<T> ours_h(static_cast<size_t>(sh.m * sh.n)), blas_h(ours_h.size());
  SDC_CUDA_CHECK(cudaMemcpyAsync(ours_h.data(), dc.out.get(), ours_h.size() * sizeof(T), cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaMemcpyAsync(blas_h.data(), c_blas.get(), blas_h.size() * sizeof(T), cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaStreamSynchronize(s));
  double max_diff = 0.0;
  const int64_t tn = sh.n / tile;
  for (int64_t i = 0; i < sh.m; ++i)
    for (int64_t j = 0; j < sh.n; ++j) {
      const int64_t t = (i / tile) * tn + j / tile;
      const T v = ours_h[static_cast<size_t>(t * tile * tile + (i % tile) * tile + j % tile)];
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(v) - blas_h[static_cast<size_t>(i * sh.n + j)]));
    }
  return max_diff;
}

// A cuBLAS mode's median time on one shape: the prefix of its JSON keys ("cublas": its default math), ms.
struct BlasTime {
  const char* key;
  double ms;
};

// One shape of an exact GEMM against cuBLAS: prints its line (ms and TFLOP/s of ours and of each cuBLAS mode,
// the first mode's time over ours against `target`, the largest difference) and appends its JSON row.
void report_against_cublas(const Shape& sh, double exact_ms, std::initializer_list<BlasTime> blas, double target,
                           double max_diff, bool close, Json& rows) {
  const double flops = 2.0 * static_cast<double>(sh.m) * static_cast<double>(sh.n) * static_cast<double>(sh.k);
  const double ratio = blas.begin()->ms / exact_ms;
  std::printf("%-18s %9.3f %8.2f", sh.name().c_str(), exact_ms, flops / exact_ms * 1e-9);
  Json row = {{"shape", sh.name()},
              {"m", sh.m},
              {"n", sh.n},
              {"k", sh.k},
              {"exact_ms", exact_ms},
              {"exact_tflops", flops / exact_ms * 1e-9}};
  for (const BlasTime& b : blas) {
    std::printf(" %9.3f %8.2f", b.ms, flops / b.ms * 1e-9);
    row[std::string(b.key) + "_ms"] = b.ms;
    row[std::string(b.key) + "_tflops"] = flops / b.ms * 1e-9;
  }
  std::printf(" %7.3f%s  %.2g%s\n", ratio, ratio >= target ? "" : " (below target)", max_diff,
              close ? "" : "  MISMATCH");
  row["ratio"] = ratio;
  row["target"] = target;
  row["meets_target"] = ratio >= target;
  row["max_abs_diff_vs_cublas"] = max_diff;
  row["agrees_with_cublas"] = close;
  rows.push_back(std::move(row));
}

// Exact GEMM against cuBLAS SGEMM (FP32 arithmetic, no TF32) and the verification overhead, on one shape.
// Returns false when the two products disagree beyond rounding or two runs give different digests.
bool bench_gemm(const Shape& sh, int reps, cudaStream_t s, cublasHandle_t h, Json& gemm_rows, Json& digest_rows) {
  const sdc::Family& fam = *sdc::find_family("gemm_f32");
  DeviceCase dc(fam, gemm_case(sh), s);
  const int m = static_cast<int>(sh.m), n = static_cast<int>(sh.n), k = static_cast<int>(sh.k);
  DeviceBuffer c_blas(gpu(), static_cast<uint64_t>(sh.m * sh.n) * sizeof(float));
  const float one = 1.0f, zero = 0.0f;
  const auto* a = static_cast<const float*>(dc.ptrs[0]);
  const auto* b = static_cast<const float*>(dc.ptrs[1]);
  // cuBLAS is column-major: row-major C = A B is column-major C^T = B^T A^T, i.e. (n x k)(k x m).
  auto blas = [&] {
    BENCH_CUBLAS(blas_api.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c_blas.as<float>(), n));
  };
  auto ours = [&] { dc.compute(s); };

  for (int r = 0; r < kWarmup; ++r) ours(), blas();
  BENCH_CUBLAS(blas_api.set_math_mode(h, CUBLAS_PEDANTIC_MATH));
  for (int r = 0; r < kWarmup; ++r) blas();
  dc.digest(s);
  const std::vector<uint64_t> first = dc.host_digests(s);
  // Interleaved, so clock and power drift hit both alike.
  Events e1, e2;
  std::vector<double> t_ours, t_default, t_pedantic;
  for (int r = 0; r < reps; ++r) {
    SDC_CUDA_CHECK(cudaEventRecord(e1.a.get(), s));
    ours();
    SDC_CUDA_CHECK(cudaEventRecord(e1.b.get(), s));
    BENCH_CUBLAS(blas_api.set_math_mode(h, CUBLAS_DEFAULT_MATH));
    SDC_CUDA_CHECK(cudaEventRecord(e2.a.get(), s));
    blas();
    SDC_CUDA_CHECK(cudaEventRecord(e2.b.get(), s));
    t_ours.push_back(e1.ms());
    t_default.push_back(e2.ms());
    BENCH_CUBLAS(blas_api.set_math_mode(h, CUBLAS_PEDANTIC_MATH));
    SDC_CUDA_CHECK(cudaEventRecord(e2.a.get(), s));
    blas();
    SDC_CUDA_CHECK(cudaEventRecord(e2.b.get(), s));
    t_pedantic.push_back(e2.ms());
  }
  BENCH_CUBLAS(blas_api.set_math_mode(h, CUBLAS_DEFAULT_MATH));

  // Sanity: cuBLAS sums in another order, so only closeness is expected (|C| ~ sqrt(K) here).
  const double max_diff = max_abs_diff<float>(dc, c_blas, sh, sdc::gemm_f32::TILE, s);
  const bool close = max_diff <= 1e-5 * static_cast<double>(sh.k);

  // Verification overhead: digest pass + copy of the digests + host compare, against this output.
  Events ed;
  std::vector<double> t_digest, t_total;
  uint64_t repeat_mismatch = 0;
  uint64_t* pinned = nullptr;
  SDC_CUDA_CHECK(cudaMallocHost(&pinned, dc.tiles * sizeof(uint64_t)));
  std::unique_ptr<uint64_t, decltype(&cudaFreeHost)> pinned_owner(pinned, &cudaFreeHost);
  for (int r = 0; r < kWarmup + reps; ++r) {
    const auto t0 = Clock::now();
    SDC_CUDA_CHECK(cudaEventRecord(ed.a.get(), s));
    dc.digest(s);
    SDC_CUDA_CHECK(cudaEventRecord(ed.b.get(), s));
    SDC_CUDA_CHECK(cudaMemcpyAsync(pinned, dc.digests.get(), dc.tiles * sizeof(uint64_t), cudaMemcpyDeviceToHost, s));
    SDC_CUDA_CHECK(cudaStreamSynchronize(s));
    uint64_t bad = 0;
    for (uint64_t t = 0; t < dc.tiles; ++t) bad += pinned[t] != first[t];
    const double total = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    repeat_mismatch += bad;
    if (r >= kWarmup) t_digest.push_back(ed.ms()), t_total.push_back(total);
  }

  const double mo = median(t_ours), share = median(t_total) / mo;
  report_against_cublas(sh, mo, {{"cublas", median(t_default)}, {"cublas_pedantic", median(t_pedantic)}}, kGemmTarget,
                        max_diff, close, gemm_rows);
  digest_rows.push_back({{"shape", sh.name()},
                         {"tiles", dc.tiles},
                         {"digest_kernel_ms", median(t_digest)},
                         {"digest_copy_compare_ms", median(t_total)},
                         {"gemm_ms", mo},
                         {"share", share},
                         {"target", kDigestTarget},
                         {"meets_target", share <= kDigestTarget},
                         {"repeat_digest_mismatches", repeat_mismatch}});
  return close && repeat_mismatch == 0;
}

// Exact fp64 GEMM against cuBLAS DGEMM on one shape (interleaved, medians). Returns false when the two
// products disagree beyond rounding.
bool bench_dgemm(const Shape& sh, int reps, cudaStream_t s, cublasHandle_t h, Json& rows) {
  const sdc::Family& fam = *sdc::find_family("gemm_f64");
  const sdc::Case c = gemm_case(sh, "gemm_f64");
  DeviceCase dc(fam, c, s);
  const int m = static_cast<int>(sh.m), n = static_cast<int>(sh.n), k = static_cast<int>(sh.k);
  DeviceBuffer c_blas(gpu(), static_cast<uint64_t>(sh.m * sh.n) * sizeof(double));
  const double one = 1.0, zero = 0.0;
  const auto* a = static_cast<const double*>(dc.ptrs[0]);
  const auto* b = static_cast<const double*>(dc.ptrs[1]);
  auto blas = [&] {  // column-major: C^T = B^T A^T, as for SGEMM
    BENCH_CUBLAS(blas_api.dgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, n, a, k, &zero, c_blas.as<double>(), n));
  };
  auto ours = [&] { dc.compute(s); };
  BENCH_CUBLAS(blas_api.set_math_mode(h, CUBLAS_DEFAULT_MATH));
  for (int r = 0; r < kWarmup; ++r) ours(), blas();
  Events e1, e2;
  std::vector<double> t_ours, t_blas;
  for (int r = 0; r < reps; ++r) {
    SDC_CUDA_CHECK(cudaEventRecord(e1.a.get(), s));
    ours();
    SDC_CUDA_CHECK(cudaEventRecord(e1.b.get(), s));
    SDC_CUDA_CHECK(cudaEventRecord(e2.a.get(), s));
    blas();
    SDC_CUDA_CHECK(cudaEventRecord(e2.b.get(), s));
    t_ours.push_back(e1.ms());
    t_blas.push_back(e2.ms());
  }
  // The exact output is in tiles of two words per value (gemm_f64.h); |C| ~ sqrt(K) here.
  const double max_diff = max_abs_diff<double>(dc, c_blas, sh, sdc::gemm_f64::TILE, s);
  const bool close = max_diff <= 1e-13 * static_cast<double>(sh.k);
  report_against_cublas(sh, median(t_ours), {{"cublas", median(t_blas)}}, kDgemmTarget, max_diff, close, rows);
  rows.back()["forms"] = bench_dmma_forms(dc, c, reps, median(t_blas), s);
  return close;
}

void usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--patterns DIR] [--reps N>=3] [--shapes MxNxK[,MxNxK...]] [--device I] [--json FILE]\n",
               argv0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string patterns, json_path;  // patterns: --patterns, else the lookup of patterns_location.h
  int reps = 10, device = 0;
  std::vector<Shape> shapes;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const bool has_value = a + 1 < argc;
    if (arg == "--patterns" && has_value) {
      patterns = argv[++a];
    } else if (arg == "--reps" && has_value) {
      reps = std::atoi(argv[++a]);
      if (reps < 3) return usage(argv[0]), 64;
    } else if (arg == "--shapes" && has_value) {
      if (!parse_shapes(argv[++a], shapes)) return usage(argv[0]), 64;
    } else if (arg == "--device" && has_value) {
      device = std::atoi(argv[++a]);
    } else if (arg == "--json" && has_value) {
      json_path = argv[++a];
    } else {
      return usage(argv[0]), 64;
    }
  }
  if (shapes.empty()) shapes = {{8192, 8192, 8192}, {4096, 12288, 8192}};
  for (const Shape& s : shapes)
    if (const std::string err = sdc::find_family("gemm_f32")->validate(gemm_case(s)); !err.empty()) {
      std::fprintf(stderr, "bench_gpu: shape %s: %s\n", s.name().c_str(), err.c_str());
      return 64;
    }

  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    std::printf("bench_gpu: no usable CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
    return 2;
  }
  if (device < 0 || device >= count) {
    std::printf("bench_gpu: no usable CUDA device: index %d, %d present\n", device, count);
    return 2;
  }

  sdc::PatternSet ps;
  try {
    if (!json_path.empty()) sdc::check_writable(json_path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 64;
  }
  if (patterns.empty()) {
    const sdc::PatternsLocation located = sdc::locate_patterns();
    if (located.dir.empty()) {
      std::fprintf(stderr, "bench_gpu: %s\n", located.not_found_message().c_str());
      return 78;
    }
    patterns = located.dir;
  }
  try {
    ps = sdc::load_patterns(patterns);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    return 78;
  }

  // A miscompare outranks an error, as in the screen's own exit codes: 1, else 2, else 0.
  bool disagreed = false, failed = false;
  Json doc, rows = Json::array();
  uint64_t mismatches = 0;
  try {
    SDC_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    SDC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int runtime = 0, driver = 0, blas_version = 0;
    SDC_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    SDC_CUDA_CHECK(cudaDriverGetVersion(&driver));
    const sdc::cuda::Stream stream{sdc::bench::gpu()};
    const cudaStream_t s = stream.get();
    cublasHandle_t h{};
    blas_api = load_cublas();
    BENCH_CUBLAS(blas_api.create(&h));
    std::unique_ptr<cublasContext, decltype(blas_api.destroy)> h_owner(h, blas_api.destroy);
    BENCH_CUBLAS(blas_api.set_stream(h, s));
    BENCH_CUBLAS(blas_api.get_version(h, &blas_version));

    std::printf("bench_gpu: device %d %s, sm_%d%d, %d SMs, %.1f GiB; runtime %d, driver %d, cuBLAS %d (%s)\n",
                device, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30), runtime, driver, blas_version,
                blas_api.file.c_str());
    std::printf("median of %d timed runs after %d warm-up runs\n\n", reps, kWarmup);
    doc["device"] = {{"index", device},
                     {"name", prop.name},
                     {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                     {"sms", prop.multiProcessorCount},
                     {"memory_bytes", prop.totalGlobalMem},
                     {"cuda_runtime", runtime},
                     {"cuda_driver", driver},
                     {"cublas", blas_version},
                     {"cublas_library", blas_api.file}};
    doc["reps"] = reps;
    doc["warmup"] = kWarmup;

    std::printf(
        "exact fp32 GEMM vs cuBLAS SGEMM (fp32, no TF32; ratio = cuBLAS default time / exact time, target >= %.2f)\n",
        kGemmTarget);
    std::printf("%-18s %9s %8s %9s %8s %9s %8s %7s  %s\n", "shape", "exact ms", "TFLOP/s", "cublas ms", "TFLOP/s",
                "pedant ms", "TFLOP/s", "ratio", "max|diff|");
    Json gemm_rows = Json::array(), digest_rows = Json::array();
    for (const Shape& sh : shapes)
      if (!bench_gemm(sh, reps, s, h, gemm_rows, digest_rows)) disagreed = true;

    std::printf("\nverification overhead: digest pass + digest copy + host compare (target <= %.0f%% of the GEMM)\n",
                kDigestTarget * 100);
    std::printf("%-18s %8s %10s %14s %9s %7s\n", "shape", "tiles", "digest ms", "dig+copy+cmp ms", "gemm ms", "share");
    for (const Json& r : digest_rows)
      std::printf("%-18s %8llu %10.4f %14.4f %9.3f %6.2f%%%s\n", r["shape"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(r["tiles"].get<uint64_t>()), r["digest_kernel_ms"].get<double>(),
                  r["digest_copy_compare_ms"].get<double>(), r["gemm_ms"].get<double>(), r["share"].get<double>() * 100,
                  r["meets_target"].get<bool>() ? "" : " (above target)");
    doc["gemm_vs_cublas"] = gemm_rows;

    std::printf("\nexact fp64 GEMM vs cuBLAS DGEMM (default math; ratio = cuBLAS time / exact time, target >= %.2f)\n",
                kDgemmTarget);
    std::printf("%-18s %9s %8s %9s %8s %7s  %s\n", "shape", "exact ms", "TFLOP/s", "cublas ms", "TFLOP/s", "ratio",
                "max|diff|");
    Json dgemm_rows = Json::array();
    for (const Shape& sh : shapes)
      if (!bench_dgemm(sh, reps, s, h, dgemm_rows)) disagreed = true;
    doc["dgemm_vs_cublas"] = dgemm_rows;
    doc["digest_overhead"] = digest_rows;

    Json lt_rows = Json::array();
    if (!bench_cublaslt(reps, s, lt_rows, failed)) disagreed = true;
    doc["cublaslt"] = lt_rows;

    // Every battery case: golden digests first (a kernel that computes something else has no speed
    // worth reporting), then the timing of compute() alone.
    std::printf("\nbattery cases: device digests vs golden digests, then compute() timing\n");
    std::printf("%-44s %8s %10s %10s %9s\n", "case", "tiles", "mismatch", "ms", "TFLOP/s");
    for (const sdc::Case& c : ps.battery.cases) {
      const sdc::Family* fam = sdc::find_family(c.family);
      Json row = {{"case", c.id}, {"family", c.family}};
      if (!fam || !fam->prepare_cuda) {
        std::printf("%-44s skipped: no CUDA kernel\n", c.id.c_str());
        row["skipped"] = "no CUDA kernel";
        rows.push_back(row);
        continue;
      }
      try {
        DeviceCase dc(*fam, c, s);
        dc.compute(s);
        dc.digest(s);
        const std::vector<uint64_t> got = dc.host_digests(s);
        // A case without a golden digest (a recorded or consensus mode) is timed but reported unvalidated.
        const auto golden = ps.golden.find(c.id);
        uint64_t bad = 0;
        if (golden != ps.golden.end()) {
          const std::vector<uint64_t>& want = golden->second.tile_digests;
          for (uint64_t t = 0; t < dc.tiles; ++t) bad += t >= want.size() || got[t] != want[t];
        }
        mismatches += bad;
        if (c.family == "gemm_f64" && golden != ps.golden.end())
          row["sm90_forms"] = sm90_golden(dc, c, golden->second.tile_digests, s);
        row["tiles"] = dc.tiles;
        row["validated"] = golden != ps.golden.end();
        row["mismatched_tiles"] = bad;
        if (bad) {
          disagreed = true;
          std::printf("%-44s %8llu %10llu   MISMATCH: not timed\n", c.id.c_str(),
                      static_cast<unsigned long long>(dc.tiles), static_cast<unsigned long long>(bad));
        } else {
          const double ms = time_ms(s, reps, [&] { dc.compute(s); });
          const double tflops = dc.flops() / ms * 1e-9;
          row["ms"] = ms;
          row["tflops"] = tflops;
          std::printf("%-44s %8llu %10s %10.4f %9.3f\n", c.id.c_str(), static_cast<unsigned long long>(dc.tiles),
                      golden != ps.golden.end() ? "0" : "no golden", ms, tflops);
        }
      } catch (const std::exception& e) {  // a CUDA error, a cuBLASLt error (LtError), a case it cannot prepare
        if (const auto* ce = dynamic_cast<const sdc::cuda::CudaError*>(&e); ce && ce->sticky())
          throw;  // the context is gone: nothing more can run on this device
        failed = true;
        row["error"] = e.what();
        std::printf("%-44s ERROR: %s\n", c.id.c_str(), e.what());
      }
      rows.push_back(row);
      std::fflush(stdout);
    }
    std::printf("\ngolden mismatches: %llu tiles\n", static_cast<unsigned long long>(mismatches));
  } catch (const sdc::cuda::CudaError& e) {
    std::fprintf(stderr, "bench_gpu: CUDA error: %s\n", e.what());
    failed = true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu: %s\n", e.what());
    failed = true;
  }

  const int status = disagreed ? 1 : failed ? 2 : 0;
  doc["cases"] = rows;
  doc["golden_mismatched_tiles"] = mismatches;
  doc["exit_code"] = status;
  if (!json_path.empty()) {
    try {
      sdc::write_file_atomic(json_path, doc.dump(2) + "\n");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_gpu: %s\n", e.what());
      return 2;
    }
  }
  return status;
}
