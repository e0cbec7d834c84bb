// Benchmark: sdc::gemm_cpu::tile_fast for float and double (bit-exact fused chains, 64x64 tiles,
// one thread) against single-threaded OpenBLAS cblas_sgemm and cblas_dgemm on the same shapes, in one process.
//
// Usage: bench_cpu_gemm [--reps N] [--big] [--shape MxNxK]... [--min-ratio R] [--no-thp] [--keep-coretype]
//                       [--only f32|f64]
//   --big adds 4096x4096x1024; --shape replaces the default shapes (repeatable); --only measures one precision.
//   Each shape prints "ratio MxNxK R" (fp32) and "ratio f64:MxNxK R" (fp64). Exit status 1 if any
//   throughput ratio ours/OpenBLAS is below --min-ratio (default 0.7), 2 if the two results disagree beyond
//   rounding, or the fp64 result differs in any bit from the plain specification (gemm_cpu::tile_scalar, on
//   a sample of tiles), so it can serve as a check; 3 when it could not run (out of memory, the run against
//   OpenBLAS's own choice failed); 64 for a bad argument.
// Timings alternate between the two implementations so that frequency or neighbour noise on a
// shared machine hits both alike; the median of the repetitions is reported.
//
// Fairness notes:
//  * OpenBLAS built with DYNAMIC_ARCH picks its kernels from the CPU model; under some hypervisors it
//    does not recognise the CPU and falls back to "Prescott" (SSE3) kernels, ~5x slower than its AVX-512
//    ones, which would make any ratio meaningless. Unless OPENBLAS_CORETYPE is already set (or
//    --keep-coretype is given), we re-execute ourselves with OPENBLAS_CORETYPE naming the best kernel
//    family this CPU supports. The kernels OpenBLAS really uses are printed with whose choice they are.
//    When the environment forces them (OPENBLAS_CORETYPE set before the benchmark starts: some sites set
//    it because older OpenBLAS builds misbehave on new CPUs, and it can name a family older than the CPU,
//    which flatters the ratio), the benchmark also runs itself as a child process with the variable
//    cleared, measuring ours against OpenBLAS's own choice in that process with its result checked the
//    same way, and reports both ratios.
//  * Matrices are 2 MiB aligned and, unless --no-thp, advised to use transparent huge pages. Both
//    implementations read the very same buffers. Our tile kernel fetches strided B rows for every
//    tile, so it is more sensitive to TLB misses than OpenBLAS, which packs B once per large block.
#include <cblas.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/openblas_util.h"
#include "kernels/gemm_cpu/gemm_cpu.h"

namespace {

using sdc::bench::Clock;
using sdc::bench::ensure_openblas_coretype;
using sdc::bench::kCoreSetByBench;
using sdc::bench::openblas_core_choice;
using sdc::bench::median;
using sdc::bench::time_once;
constexpr int64_t kTile = 64;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
using Buffer = std::unique_ptr<T[], FreeDeleter>;

template <class T>
Buffer<T> alloc(size_t n, bool thp) {
  constexpr size_t kAlign = size_t{2} << 20;
  const size_t bytes = (n * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, bytes);
  if (!p) {
    std::fprintf(stderr, "out of memory\n");
    std::exit(3);
  }
  if (thp) madvise(p, bytes, MADV_HUGEPAGE);  // best effort: ignored where THP is unavailable
  std::memset(p, 0, bytes);
  return Buffer<T>(static_cast<T*>(p));
}

struct Shape {
  int64_t m, n, k;
};

template <class T>
void tile_fast(const T* A, const T* B, const Shape& s, int64_t i0, int64_t j0, int64_t mt, int64_t nt, T* out,
               std::vector<T>& scratch) {
  sdc::gemm_cpu::tile_fast(A, B, s.k, s.n, i0, j0, mt, nt, out, scratch);
}

// Every 64x64 tile in row-major tile order, as the tool sweeps a product; one thread.
template <class T>
void ours(const T* A, const T* B, T* C, const Shape& s, T* tile, std::vector<T>& scratch) {
  for (int64_t i0 = 0; i0 < s.m; i0 += kTile) {
    const int64_t mt = std::min(kTile, s.m - i0);
    for (int64_t j0 = 0; j0 < s.n; j0 += kTile) {
      const int64_t nt = std::min(kTile, s.n - j0);
      tile_fast(A, B, s, i0, j0, mt, nt, tile, scratch);
      for (int64_t i = 0; i < mt; ++i)
        std::memcpy(C + (i0 + i) * s.n + j0, tile + i * nt, static_cast<size_t>(nt) * sizeof(T));
    }
  }
}

void blas(const float* A, const float* B, float* C, const Shape& s) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0f, A, static_cast<int>(s.k), B, static_cast<int>(s.n), 0.0f, C,
              static_cast<int>(s.n));
}
void blas(const double* A, const double* B, double* C, const Shape& s) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), 1.0, A, static_cast<int>(s.k), B, static_cast<int>(s.n), 0.0, C,
              static_cast<int>(s.n));
}

// The fp64 fast path's product against the plain specification, bit for bit, on up to 9 tiles spread over
// the tile grid (the first and the last among them): the exact result the screen relies on. Returns the
// number of differing elements.
int64_t spec_mismatches(const double* A, const double* B, const double* C, const Shape& s) {
  const int64_t tm = (s.m + kTile - 1) / kTile, tn = (s.n + kTile - 1) / kTile, tiles = tm * tn;
  std::vector<double> want(static_cast<size_t>(kTile * kTile));
  int64_t bad = 0;
  for (int64_t q = 0; q < 9 && q < tiles; ++q) {
    const int64_t t = tiles == 1 ? 0 : q * (tiles - 1) / std::min<int64_t>(8, tiles - 1);
    const int64_t i0 = t / tn * kTile, j0 = t % tn * kTile;
    const int64_t mt = std::min(kTile, s.m - i0), nt = std::min(kTile, s.n - j0);
    sdc::gemm_cpu::tile_scalar(A, B, s.k, s.n, i0, j0, mt, nt, want.data());
    for (int64_t i = 0; i < mt; ++i)
      for (int64_t j = 0; j < nt; ++j)
        bad += std::memcmp(&want[static_cast<size_t>(i * nt + j)], C + (i0 + i) * s.n + j0 + j, sizeof(double)) != 0;
  }
  return bad;
}

// One precision on one shape: ours and OpenBLAS alternately, the medians, the agreement checks. Prints the
// shape's line and its ratio line ("ratio NAME R"); returns the ratio, and sets agree.
template <class T>
double measure(const Shape& s, const std::string& name, int reps, bool thp, std::mt19937& rng, bool& agree) {
  const size_t na = static_cast<size_t>(s.m * s.k), nb = static_cast<size_t>(s.k * s.n),
               nc = static_cast<size_t>(s.m * s.n);
  Buffer<T> A = alloc<T>(na, thp), B = alloc<T>(nb, thp), C1 = alloc<T>(nc, thp), C2 = alloc<T>(nc, thp),
            tile = alloc<T>(static_cast<size_t>(kTile * kTile), false);
  std::uniform_real_distribution<T> dist(-1, 1);
  for (size_t i = 0; i < na; ++i) A[i] = dist(rng);
  for (size_t i = 0; i < nb; ++i) B[i] = dist(rng);
  std::vector<T> scratch;

  ours(A.get(), B.get(), C1.get(), s, tile.get(), scratch);  // warm-up (also sizes scratch)
  blas(A.get(), B.get(), C2.get(), s);
  std::vector<double> t_ours, t_blas;
  for (int r = 0; r < reps; ++r) {
    t_ours.push_back(time_once([&] { ours(A.get(), B.get(), C1.get(), s, tile.get(), scratch); }));
    t_blas.push_back(time_once([&] { blas(A.get(), B.get(), C2.get(), s); }));
  }

  // OpenBLAS sums in another order, so only closeness is expected; |C| <~ sqrt(K).
  double max_diff = 0.0;
  for (size_t i = 0; i < nc; ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(C1[i] - C2[i])));
  const double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-13;
  agree = max_diff <= tolerance * static_cast<double>(s.k);
  std::string exact;
  if constexpr (sizeof(T) == 8) {
    const int64_t bad = spec_mismatches(A.get(), B.get(), C1.get(), s);
    exact = bad ? "  SPEC MISMATCH (" + std::to_string(bad) + " elements)" : "  bit-exact to the specification";
    agree = agree && bad == 0;
  }

  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const double mo = median(t_ours), mb = median(t_blas);
  const double ratio = mb / mo;
  std::printf("shape %s  ours %.4f s %.1f GFLOP/s  openblas %.4f s %.1f GFLOP/s  max|diff| %.3g%s%s\n", name.c_str(),
              mo, flops / mo * 1e-9, mb, flops / mb * 1e-9, max_diff,
              max_diff <= tolerance * static_cast<double>(s.k) ? "" : "  MISMATCH", exact.c_str());
  std::printf("ratio %s %.3f\n", name.c_str(), ratio);
  std::fflush(stdout);
  return ratio;
}

// "MxNxK" -> a shape; false for anything else.
bool parse_shape(const std::string& t, Shape& s) {
  long long m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(t.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3) return false;
  if (m < 1 || n < 1 || k < 1 || m > 65536 || n > 65536 || k > 65536) return false;
  s = {m, n, k};
  return true;
}

// This benchmark again in a child process with OpenBLAS's kernels left to OpenBLAS: the same arguments,
// OPENBLAS_CORETYPE cleared. Its lines are echoed indented; its ratios come back by shape name.
struct OwnChoice {
  std::map<std::string, double> ratios;
  std::string core_line;
  int status = 0;  // the child's exit status (2: its result disagreed), 3 if it could not run
};

OwnChoice run_own_choice(int argc, char** argv) {
  OwnChoice r;
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("pipe");
    r.status = 3;
    return r;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    r.status = 3;
    return r;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(kCoreSetByBench);
    std::vector<char*> args(argv, argv + argc);
    args.push_back(const_cast<char*>("--keep-coretype"));  // OpenBLAS's own choice, even a fallback
    args.push_back(nullptr);
    execv("/proc/self/exe", args.data());
    std::perror("execv");
    _exit(3);
  }
  close(fds[1]);
  FILE* in = fdopen(fds[0], "r");
  char line[512];
  while (in && std::fgets(line, sizeof line, in)) {
    std::printf("  | %s", line);
    char name[64];
    double v = 0;
    if (std::sscanf(line, "ratio %63s %lf", name, &v) == 2) r.ratios[name] = v;
    if (std::strncmp(line, "openblas kernels ", 17) == 0) r.core_line = line + 17;
  }
  if (in) std::fclose(in);
  int ws = 0;
  waitpid(pid, &ws, 0);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 3;
  if (!r.core_line.empty() && r.core_line.back() == '\n') r.core_line.pop_back();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  bool big = false, thp = true, keep_coretype = false, f32 = true, f64 = true;
  std::vector<Shape> shapes;
  double min_ratio = 0.7;
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--reps" && a + 1 < argc) {
      reps = std::max(5, std::atoi(argv[++a]));
    } else if (arg == "--big") {
      big = true;
    } else if (arg == "--min-ratio" && a + 1 < argc) {
      min_ratio = std::atof(argv[++a]);
    } else if (arg == "--no-thp") {
      thp = false;
    } else if (arg == "--keep-coretype") {
      keep_coretype = true;
    } else if (arg == "--only" && a + 1 < argc && (std::strcmp(argv[a + 1], "f32") == 0 ||
                                                   std::strcmp(argv[a + 1], "f64") == 0)) {
      f32 = std::strcmp(argv[++a], "f32") == 0;
      f64 = !f32;
    } else if (arg == "--shape" && a + 1 < argc) {
      Shape sh{};
      if (!parse_shape(argv[++a], sh)) {
        std::fprintf(stderr, "bench_cpu_gemm: --shape wants MxNxK with each from 1 to 65536, not '%s'\n", argv[a]);
        return 64;
      }
      shapes.push_back(sh);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--reps N>=5] [--big] [--shape MxNxK]... [--min-ratio R] [--no-thp] [--keep-coretype] "
                   "[--only f32|f64]\n",
                   argv[0]);
      return 64;
    }
  }
  if (!keep_coretype) ensure_openblas_coretype(argv);

  openblas_set_num_threads(1);
  const sdc::bench::CoreChoice core = openblas_core_choice();
  std::printf("isa %s (f32 and f64)\n", sdc::gemm_cpu::fast_path_isa());
  std::printf("openblas %s, 1 thread\n", openblas_get_config());
  std::printf("%s\n", core.text.c_str());
  std::printf("huge pages %s, %d timed repetitions each after one warm-up\n", thp ? "advised" : "off", reps);

  if (shapes.empty()) shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}};
  if (big) shapes.push_back({4096, 4096, 1024});
  std::vector<std::pair<std::string, double>> forced_ratios;  // in the order of the shapes

  std::mt19937 rng(12345);
  int status = 0;
  for (const Shape& s : shapes) {
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lldx%lld", static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k));
    for (const bool wide : {false, true}) {
      if (!(wide ? f64 : f32)) continue;
      const std::string label = wide ? std::string("f64:") + name : std::string(name);
      bool agree = true;
      const double ratio = wide ? measure<double>(s, label, reps, thp, rng, agree)
                                : measure<float>(s, label, reps, thp, rng, agree);
      forced_ratios.emplace_back(label, ratio);
      if (!agree) status = 2;
      if (ratio < min_ratio && status == 0) status = 1;
    }
  }
  if (core.forced.empty()) return status;  // also the child below: it runs with the variable cleared

  // The environment forced the kernels: the same measurement against OpenBLAS's own choice, in a child.
  std::printf("OPENBLAS_CORETYPE=%s came from the environment: measuring against OpenBLAS's own choice too "
              "(a child process with it cleared)\n", core.forced.c_str());
  const OwnChoice own = run_own_choice(argc, argv);
  if (own.status > 2) {
    std::fprintf(stderr, "bench_cpu_gemm: the run against OpenBLAS's own choice failed (exit %d)\n", own.status);
    return status ? status : 3;
  }
  const std::string own_core = own.core_line.substr(0, own.core_line.find(' '));
  for (const auto& [name, forced] : forced_ratios) {
    const auto it = own.ratios.find(name);
    if (it == own.ratios.end()) {
      std::fprintf(stderr, "bench_cpu_gemm: the run against OpenBLAS's own choice gave no ratio for %s\n", name.c_str());
      return status ? status : 3;
    }
    std::printf("ratio %s: %.3f against %s (forced), %.3f against %s (OpenBLAS's own choice)\n", name.c_str(), forced,
                core.core.c_str(), it->second, own_core.empty() ? "unknown kernels" : own_core.c_str());
    if (it->second < min_ratio && status == 0) status = 1;
  }
  if (own.status == 2) status = 2;
  return status;
}
