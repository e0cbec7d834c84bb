// What the CPU benchmarks against OpenBLAS share (bench_cpu_gemm.cpp, bench_train_step.cpp): the choice of
// OpenBLAS's kernels, medians and one timing.
#pragma once

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int num_threads);
extern "C" char* openblas_get_corename(void);

namespace sdc::bench {

using Clock = std::chrono::steady_clock;

// OpenBLAS built with DYNAMIC_ARCH picks its kernels from the CPU model; under some hypervisors it does not
// recognise the CPU and falls back to SSE3 kernels, several times slower, which would make any ratio
// meaningless. Unless OPENBLAS_CORETYPE is set, the benchmark runs itself again naming the best kernel
// family this CPU supports (and marks that it did, so that the kernels' origin can be said).
inline constexpr const char* kCoreSetByBench = "SDC_BENCH_CORETYPE_SET";

inline void ensure_openblas_coretype(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  const std::string core = openblas_get_corename();
  const char* want = nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    if (core != "SkylakeX" && core != "Cooperlake" && core != "SapphireRapids") want = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    if (core != "Haswell" && core != "Zen" && core != "SkylakeX") want = "Haswell";
  }
  if (!want) return;
  std::printf("openblas autodetected core %s; re-running with OPENBLAS_CORETYPE=%s\n", core.c_str(), want);
  std::fflush(stdout);
  setenv("OPENBLAS_CORETYPE", want, 1);
  setenv(kCoreSetByBench, core.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::perror("execv");  // fall through and measure with the autodetected core
}

// Whose choice OpenBLAS's kernels are in this process. A ratio means little without it: OPENBLAS_CORETYPE
// set in the environment (some sites set it because older OpenBLAS builds misbehave on new CPUs) can name a
// kernel family older than the CPU's, and the ratio against it flatters the exact code.
struct CoreChoice {
  std::string core;    // the kernels OpenBLAS runs (openblas_get_corename)
  std::string forced;  // OPENBLAS_CORETYPE's value when the environment set it, else empty
  std::string text;    // one line for the output
};

inline CoreChoice openblas_core_choice() {
  CoreChoice c;
  c.core = openblas_get_corename();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const char* by_bench = std::getenv(kCoreSetByBench);
  std::string why = "OpenBLAS's own choice for this CPU";
  if (env && by_bench) {
    why = std::string("OPENBLAS_CORETYPE=") + env + " set by this benchmark: OpenBLAS chose " + by_bench +
          ", a fallback slower than this CPU allows";
  } else if (env) {
    c.forced = env;
    why = std::string("forced by OPENBLAS_CORETYPE=") + env + " in the environment";
  }
  c.text = "openblas kernels " + c.core + " (" + why + ")";
  return c;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

template <class F>
inline double time_once(F&& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace sdc::bench
