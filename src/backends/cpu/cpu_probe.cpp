#include "src/backends/cpu/cpu_probe.h"

#include <time.h>

#include <cstdlib>

namespace sdc::cpu {
namespace {

Case probe_case() {
  Case c;
  c.id = "probe.gemm_f32_64x64x256";
  c.family = "gemm_f32";
  c.mode = Mode::exact;
  c.distribution = Distribution::uniform;
  c.data_seed = 0x70726f6265ull;
  c.shape.dims = {{"m", 64}, {"n", 64}, {"k", 256}};
  return c;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

long env_number(const char* name, long lo, long hi, long otherwise) {
  const char* v = std::getenv(name);
  if (!v || !*v) return otherwise;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == 0 && n >= lo && n <= hi ? n : otherwise;
}

}  // namespace

ProbeWork::ProbeWork(size_t workers) : out_(workers), ws_(workers) {
  const Case c = probe_case();
  problem_ = find_family(c.family)->prepare(c);
  const auto tensors = problem_->inputs();
  for (size_t t = 0; t < tensors.size(); ++t) {
    inputs_.emplace_back(tensors[t].elements);
    problem_->generate_input(t, 0, tensors[t].elements, inputs_.back().data());
  }
  for (const auto& v : inputs_) in_.push_back(v.data());
  for (auto& o : out_) o.assign(problem_->tile_elements(), 0.0f);
}

std::string ProbeWork::description() {
  return "one 64x64 tile of gemm_f32 with k = 256 (1 Mi fp32 fma), CPU time of each pinned worker";
}

double ProbeWork::run(size_t w, uint64_t reps) {
  const double start = thread_cpu_seconds();
  for (uint64_t i = 0; i < reps; ++i) problem_->compute_tile(in_.data(), 0, out_[w].data(), ws_[w]);
  return thread_cpu_seconds() - start;
}

int slow_drill_cpu() { return static_cast<int>(env_number("SDCSCREEN_DRILL_SLOW_CPU", 0, (1 << 20) - 1, -1)); }

uint64_t slow_drill_node() { return static_cast<uint64_t>(env_number("SDCSCREEN_DRILL_SLOW_NODE", 2, 1000, 1)); }

}  // namespace sdc::cpu
