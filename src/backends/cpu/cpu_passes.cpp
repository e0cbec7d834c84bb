// The passes of a case on the CPU workers (cpu_case.h): generating the inputs and computing every tile once,
// under the watchdog, with the drills that make a worker crash or exit outside its tiles.
#include "src/backends/cpu/cpu_case.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include "src/core/activity.h"
#include "src/core/miscompare.h"
#include "src/core/unit_name.h"
#include "src/spec/digest.h"
#include "src/spec/fault.h"
#include "src/util/int_list.h"
#include "src/backends/cpu/cpu_case.h"
#include "src/backends/cpu/cpu_probe.h"
#include "src/backends/cpu/cpu_retest.h"
#include "src/backends/cpu/worker_pool.h"

namespace sdc::cpu {

uint64_t string_hash(const std::string& s) {
  uint64_t h = 0;
  for (unsigned char ch : s) h = mix64(h ^ ch);
  return h;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

namespace {
constexpr auto STOP_GRACE = std::chrono::seconds(2);
}  // namespace

JobEnd run_watched(WorkerPool& pool, const Watch& watch, std::function<void(size_t)> fn) {
  auto job = std::make_unique<std::function<void(size_t)>>(std::move(fn));
  if (watch.ok(pool, *job)) return JobEnd::finished;
  if (watch.stop.stop_requested() && pool.wait_idle(Clock::now() + STOP_GRACE)) return JobEnd::stopped;
  (void)job.release();
  return JobEnd::stuck;
}

namespace {

// The crash drill (action=crash): a store to a page that allows no access, a real segmentation fault taken
// by this worker's thread, as a core that corrupted an address would take one.
[[noreturn]] void take_a_segfault() {
  void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *static_cast<volatile int*>(page) = 1;
  std::abort();  // never reached: the store faults (and mmap failing makes it a null store)
}

// SDCSCREEN_DRILL_WORKER_EXIT=CPU: the CPU whose worker calls exit(0) at its first iteration; -1 when unset.
int exit_drill_cpu() {
  static const int cpu = [] {
    const char* v = std::getenv("SDCSCREEN_DRILL_WORKER_EXIT");
    if (!v || !*v || std::strspn(v, "0123456789") != std::strlen(v) || std::strlen(v) > 6) return -1;
    return std::atoi(v);
  }();
  return cpu;
}

// SDCSCREEN_DRILL_WORKER_CRASH=CPU[:WHERE]: the worker of that CPU crashes outside any tile, at its first
// chance: `inputs` (the default) a segmentation fault while it generates its first case's inputs, `between`
// one after its first tile and before the next, `stack` a stack overflow at its first iteration. Compiled
// in, off unless set (and named in every output: weakened.cpp), like the other drills.
enum class CrashAt { inputs, between, stack };
struct CrashDrill {
  int cpu = -1;
  CrashAt at = CrashAt::inputs;
};
const CrashDrill& crash_drill() {
  static const CrashDrill d = [] {
    CrashDrill out;
    const char* v = std::getenv("SDCSCREEN_DRILL_WORKER_CRASH");
    if (!v || !*v) return out;
    const std::string text(v);
    const size_t colon = text.find(':');
    const std::string cpu = text.substr(0, colon), where = colon == std::string::npos ? "inputs" : text.substr(colon + 1);
    if (cpu.empty() || cpu.size() > 6 || cpu.find_first_not_of("0123456789") != std::string::npos) return out;
    if (where == "between")
      out.at = CrashAt::between;
    else if (where == "stack")
      out.at = CrashAt::stack;
    else if (where != "inputs")
      return out;
    out.cpu = std::atoi(cpu.c_str());
    return out;
  }();
  return d;
}

// The stack overflow of the crash drill: each frame keeps a page of its own alive until the guard page.
[[gnu::noinline]] int overflow_stack(int depth) {
  if (depth > (1 << 30)) return 0;  // never reached: the stack ends first
  volatile char frame[4096];
  frame[static_cast<size_t>(depth) % sizeof frame] = static_cast<char>(depth);
  return overflow_stack(depth + 1) + frame[static_cast<size_t>(depth * 7) % sizeof frame];
}

// The crash drill's fault, when the worker of CPU `cpu` reaches `at`.
void crash_drill_at(CrashAt at, int cpu) {
  const CrashDrill& d = crash_drill();
  if (d.cpu != cpu || d.at != at) return;
  if (at == CrashAt::stack) (void)overflow_stack(0);
  take_a_segfault();
}

}  // namespace

// The watchdog's deadline for one pass over a case: generous against the slowest plausible CPU (20x a
// rate of 1 GFLOP/s per worker, or 50 ns per generated element), plus 10 s.
Clock::time_point pass_deadline(double work_seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(10.0 + 20.0 * work_seconds));
}

// Allocates the buffers of a prepared case and generates its inputs.
JobEnd generate_inputs(WorkerPool& pool, const StopToken& stop, CaseState& s, const char* case_id) {
  const auto tensors = s.problem->inputs();
  uint64_t elements = 0;
  for (const auto& t : tensors) {
    s.inputs.emplace_back(t.elements);
    elements += t.elements;
  }
  const size_t workers = pool.size();
  const uint64_t tiles = s.problem->tile_count();
  s.out.assign(tiles * s.problem->tile_elements(), 0.0f);
  s.digest.assign(tiles, 0);
  s.worker_of.assign(tiles, 0);
  s.computed_by.assign(workers, 0);
  s.worker_error.assign(workers, "");
  s.busy_s.assign(workers, 0.0);
  s.done.assign(workers, 0);
  // Every worker generates a slice of every tensor, on its own CPU.
  const Watch watch{pass_deadline(50e-9 * static_cast<double>(elements) / static_cast<double>(workers)), stop};
  return run_watched(pool, watch, [&s, &pool, tensors, workers, case_id](size_t w) {
    activity::publish_stage(activity::STAGE_INPUTS, case_id);
    crash_drill_at(CrashAt::inputs, pool.cpu(w).cpu);
    for (size_t t = 0; t < tensors.size(); ++t) {
      const uint64_t n = tensors[t].elements;
      const uint64_t begin = n * w / workers, end = n * (w + 1) / workers;
      if (end > begin) s.problem->generate_input(t, begin, end, s.inputs[t].data() + begin);
    }
  });
}

// Computes every tile once. Tile t goes to worker (t + rotation) mod W unless a fault pins it to its
// unit; the worker computes it, applies output faults, and digests it. An iteration a stop touched is
// incomplete (`stopped`).
// case_id and iteration name the work on the activity board (src/core/activity.h) when a supervisor
// watches this screen.
// A retest (only_tiles) gives the listed tiles to only_worker and computes no other tile.
JobEnd compute_iteration(CaseState& s, WorkerPool& pool, const StopToken& stop, std::vector<Workspace>& ws,
                         uint64_t rotation, std::vector<ActiveFault>& faults, const char* case_id, int iteration,
                         const std::vector<uint64_t>* only_tiles, uint32_t only_worker) {
  const uint64_t tiles = s.problem->tile_count();
  const uint32_t te = s.problem->tile_elements();
  const size_t workers = pool.size();
  constexpr uint32_t NOBODY = UINT32_MAX;
  // A fault on a named unit pins work to it: an output or memory fault its tile, an input fault every tile (the
  // faulty unit then computes every tile that reads the corrupted element, whichever those are).
  std::map<uint64_t, uint32_t> pinned;
  int input_fault_worker = -1;
  for (ActiveFault& f : faults) {
    if (f.worker < 0 || f.inj->hang || f.inj->crash) continue;
    if (!f.inj->submodule.empty())  // a replay fault: its unit computes tile 0 (and whatever else it gets)
      pinned[0] = static_cast<uint32_t>(f.worker);
    else if (f.inj->input)
      input_fault_worker = f.worker;
    else
      pinned[f.tile] = static_cast<uint32_t>(f.worker);
  }
  for (uint64_t t = 0; t < tiles; ++t) {
    const auto it = pinned.find(t);
    s.worker_of[t] = only_tiles                ? NOBODY
                     : it != pinned.end()      ? it->second
                     : input_fault_worker >= 0 ? static_cast<uint32_t>(input_fault_worker)
                                               : static_cast<uint32_t>((t + rotation) % workers);
  }
  if (only_tiles)
    for (uint64_t t : *only_tiles) s.worker_of[t] = only_worker;
  std::fill(s.computed_by.begin(), s.computed_by.end(), 0);
  std::fill(s.busy_s.begin(), s.busy_s.end(), 0.0);
  std::fill(s.done.begin(), s.done.end(), 0);
  const double work = s.problem->tile_flops() * 1e-9 *
                      (only_tiles ? static_cast<double>(only_tiles->size())
                                  : static_cast<double>(tiles) / static_cast<double>(workers));
  const JobEnd end = run_watched(
      pool, Watch{pass_deadline(work), stop}, [&s, &pool, stop, &ws, &faults, tiles, te, case_id, iteration](size_t w) {
        activity::publish_iteration(pool.cpu(w).cpu, case_id, iteration);
        for (ActiveFault& f : faults) {
          const bool mine = f.worker == static_cast<int>(w) || (f.worker < 0 && s.worker_of[0] == w);
          if (f.inj->hang && mine)  // the hidden drill for the watchdog: this worker never finishes
            for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the main thread records it
          if (f.inj->crash && mine) take_a_segfault();                      // the hidden drill for crash supervision
        }
        // Drill for a worker that leaves the process with exit(0) (a library that calls exit): the
        // supervisor must not take that for a pass (docs/reliability.md). Compiled in, off unless asked.
        if (pool.cpu(w).cpu == exit_drill_cpu()) std::exit(0);
        crash_drill_at(CrashAt::stack, pool.cpu(w).cpu);  // the stack overflow drill
        std::vector<const float*> in;
        for (const auto& v : s.inputs) in.push_back(v.data());
        bool reads_fault = false;
        for (ActiveFault& f : faults)
          if (f.inj->input && (f.worker < 0 || f.worker == static_cast<int>(w))) {
            in[f.inj->tensor_index] = f.corrupted.data();
            reads_fault = true;
          }
        bool computed = false;
        for (uint64_t t = 0; t < tiles; ++t) {
          if (s.worker_of[t] != w) continue;
          if (stop.stop_requested()) return;
          const auto tile_start = Clock::now();
          activity::publish_tile(static_cast<int64_t>(t));
          float* out = s.out.data() + t * te;
          // A replay fault is applied inside every tile its unit computes (the unit of tile 0 when none is named).
          ActiveFault* replay = nullptr;
          for (ActiveFault& f : faults)
            if (!f.inj->submodule.empty() && (f.worker == static_cast<int>(w) || (f.worker < 0 && s.worker_of[0] == w)))
              replay = &f;
          // A memory fault (the memory test's) hits the memory of the tiles that hold its words, on its unit or any.
          ActiveFault* memory = nullptr;
          for (ActiveFault& f : faults)
            if (f.inj->memory && (f.worker < 0 || f.worker == static_cast<int>(w))) memory = &f;
          try {
            if (memory) {
              if (s.problem->compute_tile_with_memory_fault(in.data(), t, out, ws[w], *memory->inj) &&
                  !memory->inj->fired) {
                memory->inj->fired = true;
                memory->inj->fired_unit = pool.cpu(w).cpu;
                memory->inj->fired_tile = t;
              }
            } else if (!replay || !s.problem->replay()) {
              s.problem->compute_tile(in.data(), t, out, ws[w]);
            } else if (s.problem->replay()->compute_tile_with_fault(in.data(), t, out, ws[w], *replay->inj) &&
                       !replay->inj->fired) {
              replay->inj->fired = true;
              replay->inj->fired_unit = pool.cpu(w).cpu;
              replay->inj->fired_tile = t;
            }
          } catch (const std::exception& e) {  // e.g. out of memory for scratch: an error, not a crash
            s.worker_error[w] = fmt::format("cpu {}: {}", pool.cpu(w).cpu, e.what());
            return;
          }
          computed = true;
          for (ActiveFault& f : faults) {
            if (f.inj->input || f.inj->hang || f.inj->crash || !f.inj->submodule.empty() || f.inj->memory ||
                f.tile != t)
              continue;
            const WordFault word = f.inj->word();
            for (uint64_t o = f.offset; o <= word.last(f.offset); o += word.stride)
              out[o] = bits_float(word.apply(float_bits(out[o])));
            f.inj->fired = true;
            f.inj->fired_unit = pool.cpu(w).cpu;
            f.inj->fired_tile = t;
          }
          s.digest[t] = tile_digest(t, out, te);
          s.busy_s[w] += seconds_since(tile_start);
          ++s.done[w];
          activity::publish_tile_done();
          crash_drill_at(CrashAt::between, pool.cpu(w).cpu);
        }
        s.computed_by[w] = computed && reads_fault;
      });
  if (end != JobEnd::finished) return end;
  if (stop.stop_requested()) return JobEnd::stopped;  // the workers returned between tiles
  for (const std::string& e : s.worker_error)
    if (!e.empty()) throw std::runtime_error(e);
  // An input fault fired when a worker that reads it computed at least one tile.
  for (ActiveFault& f : faults) {
    if (!f.inj->input) continue;
    for (size_t w = 0; w < workers; ++w)
      if (s.computed_by[w] && (f.worker < 0 || f.worker == static_cast<int>(w))) {
        f.inj->fired = true;
        f.inj->fired_unit = f.worker < 0 ? -1 : pool.cpu(w).cpu;
      }
  }
  return JobEnd::finished;
}


// Host memory a case needs: its inputs and its output.
uint64_t case_bytes(const Problem& p) {
  uint64_t floats = p.output_elements();
  for (const auto& t : p.inputs()) floats += t.elements;
  return floats * sizeof(float);
}


}  // namespace sdc::cpu
