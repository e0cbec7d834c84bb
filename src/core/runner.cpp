#include "runner.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "../backends/cpu/worker_pool.h"
#include "../spec/digest.h"

namespace sdc {

std::atomic<int> g_stop_signal{0};

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t MAX_LISTED_PER_TILE = 8;
constexpr size_t MAX_LISTED_PER_TEST = 32;

uint64_t string_hash(const std::string& s) {
  uint64_t h = 0;
  for (unsigned char ch : s) h = mix64(h ^ ch);
  return h;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool matches(const std::string& glob, const Case& c) {
  return fnmatch(glob.c_str(), c.id.c_str(), 0) == 0 || fnmatch(glob.c_str(), c.family.c_str(), 0) == 0;
}

// One case's buffers: inputs generated once, the output of the current iteration, and per tile the
// digest and the worker that computed it (the unit a miscompare is attributed to).
struct CaseState {
  std::unique_ptr<Problem> problem;
  std::vector<std::vector<float>> inputs;
  std::vector<float> out;
  std::vector<uint64_t> digest;
  std::vector<uint32_t> worker_of;
  std::vector<char> computed_by;  // per worker, in the current iteration: computed a tile with a faulty input
  std::vector<std::string> worker_error;  // per worker: why it could not compute a tile
};

// When a job must end: its deadline (the watchdog) and the stop signal.
struct Watch {
  Clock::time_point deadline;
  bool ok(cpu::WorkerPool& pool, const std::function<void(size_t)>& job) const {
    return pool.run_until(job, deadline, [] { return g_stop_signal.load() != 0; });
  }
};

// Runs job on every worker under the watch. On a timeout or stop the job may still be running on a stuck
// worker, so it is leaked rather than destroyed; the caller leaks what the job refers to as well.
bool run_watched(cpu::WorkerPool& pool, const Watch& watch, std::function<void(size_t)> fn) {
  auto job = std::make_unique<std::function<void(size_t)>>(std::move(fn));
  if (watch.ok(pool, *job)) return true;
  (void)job.release();
  return false;
}

// The watchdog's deadline for one pass over a case: generous against the slowest plausible CPU (20x a
// rate of 1 GFLOP/s per worker, or 50 ns per generated element), plus 10 s.
Clock::time_point pass_deadline(double work_seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(10.0 + 20.0 * work_seconds));
}

// Allocates a case's buffers and generates its inputs; false when the watch ended it.
bool prepare_case(const Case& c, cpu::WorkerPool& pool, CaseState& s) {
  s.problem = find_family(c.family)->prepare(c);
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
  // Every worker generates a slice of every tensor, on its own CPU.
  const Watch watch{pass_deadline(50e-9 * static_cast<double>(elements) / static_cast<double>(workers))};
  return run_watched(pool, watch, [&s, tensors, workers](size_t w) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      const uint64_t n = tensors[t].elements;
      const uint64_t begin = n * w / workers, end = n * (w + 1) / workers;
      if (end > begin) s.problem->generate_input(t, begin, end, s.inputs[t].data() + begin);
    }
  });
}

// The injections of one case at one iteration, resolved to workers and tiles.
struct ActiveFault {
  Injection* inj;
  int worker;  // -1: any worker
  uint64_t tile = 0;
  uint32_t offset = 0;
  std::vector<float> corrupted;  // input injections: the tensor as the faulty unit reads it
};

// Computes every tile once. Tile t goes to worker (t + rotation) mod W unless a fault pins it to its
// unit; the worker computes it, applies output faults, and digests it. False when the watch ended it.
bool compute_iteration(CaseState& s, cpu::WorkerPool& pool, std::vector<Workspace>& ws, uint64_t rotation,
                       std::vector<ActiveFault>& faults) {
  const uint64_t tiles = s.problem->tile_count();
  const uint32_t te = s.problem->tile_elements();
  const size_t workers = pool.size();
  // A fault on a named unit pins work to it: an output fault its tile, an input fault every tile (the
  // faulty unit then computes every tile that reads the corrupted element, whichever those are).
  std::map<uint64_t, uint32_t> pinned;
  int input_fault_worker = -1;
  for (ActiveFault& f : faults) {
    if (f.worker < 0 || f.inj->hang) continue;
    if (f.inj->input) input_fault_worker = f.worker;
    else pinned[f.tile] = static_cast<uint32_t>(f.worker);
  }
  for (uint64_t t = 0; t < tiles; ++t) {
    const auto it = pinned.find(t);
    s.worker_of[t] = it != pinned.end()        ? it->second
                     : input_fault_worker >= 0 ? static_cast<uint32_t>(input_fault_worker)
                                               : static_cast<uint32_t>((t + rotation) % workers);
  }
  std::fill(s.computed_by.begin(), s.computed_by.end(), 0);
  const double work = s.problem->tile_flops() * static_cast<double>(tiles) / static_cast<double>(workers) * 1e-9;
  const bool finished = run_watched(pool, Watch{pass_deadline(work)}, [&s, &pool, &ws, &faults, tiles, te](size_t w) {
    for (ActiveFault& f : faults)  // the hidden drill for the watchdog: this worker never finishes
      if (f.inj->hang && (f.worker == static_cast<int>(w) || (f.worker < 0 && s.worker_of[0] == w)))
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // the main thread records it
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
      if (g_stop_signal.load(std::memory_order_relaxed)) return;
      float* out = s.out.data() + t * te;
      try {
        s.problem->compute_tile(in.data(), t, out, ws[w]);
      } catch (const std::exception& e) {  // e.g. out of memory for scratch: an error, not a crash
        s.worker_error[w] = fmt::format("cpu {}: {}", pool.cpu(w).cpu, e.what());
        return;
      }
      computed = true;
      for (ActiveFault& f : faults) {
        if (f.inj->input || f.inj->hang || f.tile != t) continue;
        uint32_t bits;
        std::memcpy(&bits, out + f.offset, 4);
        bits ^= f.inj->mask;
        std::memcpy(out + f.offset, &bits, 4);
        f.inj->fired = true;
        f.inj->fired_unit = pool.cpu(w).cpu;
        f.inj->fired_tile = t;
      }
      s.digest[t] = tile_digest(t, out, te);
    }
    s.computed_by[w] = computed && reads_fault;
  });
  // A stop signal makes workers return between tiles: an iteration it touched is incomplete.
  if (!finished || g_stop_signal.load()) return false;
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
  return true;
}

// Iterations after which every worker has computed a tile of a case: tile t runs on worker
// (t + r + i) mod W in iteration i, so k iterations reach min(W, T + k - 1) workers.
int coverage_iterations(size_t workers, uint64_t tiles) {
  return tiles >= workers ? 1 : static_cast<int>(workers - tiles + 1);
}

// Host memory a case needs: its inputs and its output.
uint64_t case_bytes(const Case& c) {
  const auto p = find_family(c.family)->prepare(c);
  uint64_t floats = p->output_elements();
  for (const auto& t : p->inputs()) floats += t.elements;
  return floats * sizeof(float);
}

int worker_index(const cpu::WorkerPool& pool, int cpu) {
  for (size_t w = 0; w < pool.size(); ++w)
    if (pool.cpu(w).cpu == cpu) return static_cast<int>(w);
  return -1;
}

std::vector<cpu::LogicalCpu> describe(const std::vector<int>& cpus) {
  std::vector<cpu::LogicalCpu> out;
  for (int c : cpus) out.push_back(cpu::describe_cpu(c));
  return out;
}

}  // namespace

uint64_t ulp_distance(uint32_t a, uint32_t b) {
  // Map the sign-magnitude encoding onto a line where adjacent floats are adjacent integers.
  auto ord = [](uint32_t u) -> int64_t { return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : u; };
  const int64_t d = ord(a) - ord(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

void analyse_tile(const Problem& problem, const std::vector<std::vector<float>>& inputs, uint64_t golden_digest,
                  uint64_t tile, const float* actual, int iteration, int unit, Workspace& ws,
                  std::vector<float>& expected, TestResult& r) {
  const uint32_t te = problem.tile_elements();
  if (expected.size() != te) {  // not cached yet: recompute on this CPU
    expected.resize(te);
    std::vector<const float*> in;
    for (const auto& v : inputs) in.push_back(v.data());
    problem.compute_tile(in.data(), tile, expected.data(), ws);
    if (tile_digest(tile, expected.data(), te) != golden_digest)
      r.notes.push_back(fmt::format("tile {}: the analysing CPU's recomputation does not match the golden digest "
                                    "either; element lists for this tile are unreliable",
                                    tile));
  }
  size_t listed = 0;
  for (uint32_t e = 0; e < te; ++e) {
    uint32_t a, x;
    std::memcpy(&x, &expected[e], 4);
    std::memcpy(&a, &actual[e], 4);
    if (a == x) continue;
    ++r.miscompared_elements;
    if (listed >= MAX_LISTED_PER_TILE || r.miscompares.size() >= MAX_LISTED_PER_TEST) continue;
    ++listed;
    Miscompare m;
    m.iteration = iteration;
    m.tile = tile;
    m.unit = unit;
    m.element = problem.logical_element(tile, e);
    m.element_name = problem.element_name(m.element);
    m.expected = x;
    m.actual = a;
    m.ulps = ulp_distance(x, a);
    r.miscompares.push_back(m);
  }
}

std::string select_cases(const Battery& battery, const std::string& profile, const std::vector<std::string>& enable,
                         const std::vector<std::string>& disable, Selection& out) {
  if (!battery.find_profile(profile)) {
    std::string names;
    for (const Profile& p : battery.profiles) names += (names.empty() ? "" : ", ") + p.name;
    return fmt::format("unknown profile '{}' (profiles: {})", profile, names);
  }
  for (const auto* globs : {&enable, &disable})
    for (const std::string& g : *globs)
      if (std::none_of(battery.cases.begin(), battery.cases.end(), [&](const Case& c) { return matches(g, c); }))
        return fmt::format("'{}' matches no test id or family (see 'sdcscreen list')", g);
  out = Selection{};
  for (const Case& c : battery.cases) {
    const auto it = c.iterations.find(profile);
    bool chosen = enable.empty() ? it != c.iterations.end()
                                 : std::any_of(enable.begin(), enable.end(), [&](const std::string& g) { return matches(g, c); });
    if (std::any_of(disable.begin(), disable.end(), [&](const std::string& g) { return matches(g, c); })) chosen = false;
    if (!chosen) continue;
    int iters = it != c.iterations.end() ? it->second : 0;
    if (!iters) {  // enabled explicitly from another profile: its smallest count
      iters = INT32_MAX;
      for (const auto& [p, n] : c.iterations) iters = std::min(iters, n);
    }
    out.cases.push_back(&c);
    out.iterations.push_back(iters);
  }
  if (out.cases.empty()) return "no test selected (the --disable patterns removed everything)";
  return "";
}

namespace {

// What one screen shares across its cases and rounds.
struct Screen {
  const PatternSet& patterns;
  const RunOptions& opt;
  RunResult& result;
  Clock::time_point start, deadline;
  // Heap-held so that they can be leaked when the watchdog leaves a worker stuck inside a job.
  std::unique_ptr<cpu::WorkerPool> pool;
  std::unique_ptr<std::vector<Workspace>> ws;
  Workspace analysis_ws;
  bool stuck = false;  // a job did not finish: no further work can be given to the pool
};

// Runs `iterations` more iterations of one case, numbered from r.iterations_done, accumulating into r.
// Iterations stop at the time budget (never before the first of a round), a signal, or the watchdog.
void run_case(Screen& sc, const Case& c, int iterations, size_t index, size_t count, TestResult& r) {
  cpu::WorkerPool& pool = *sc.pool;
  const GoldenCase& golden = sc.patterns.golden.at(c.id);
  const auto t0 = Clock::now();
  auto s = std::make_unique<CaseState>();
  auto faults = std::make_unique<std::vector<ActiveFault>>();
  try {
    if (sc.opt.max_memory_bytes && case_bytes(c) > sc.opt.max_memory_bytes)
      throw std::runtime_error(fmt::format("needs {} MiB, more than --max-memory ({} MiB)", case_bytes(c) >> 20,
                                           sc.opt.max_memory_bytes >> 20));
    if (!prepare_case(c, pool, *s)) {
      sc.stuck = true;
      if (!g_stop_signal.load()) {
        r.verdict = Verdict::error;
        r.reason = "watchdog: input generation did not finish";
      }
    } else {
      const uint64_t tiles = s->problem->tile_count();
      r.tiles = tiles;
      const uint64_t rotation0 = mix64(sc.opt.seed ^ string_hash(c.id));
      std::map<uint64_t, std::vector<float>> expected_cache;
      const int first = r.iterations_done;
      r.iterations_planned = first + iterations;
      for (int it = first; it < first + iterations; ++it) {
        if (g_stop_signal.load() || (it > first && Clock::now() >= sc.deadline)) break;
        if (sc.opt.on_progress) sc.opt.on_progress(c, index, count, it - first, iterations);
        faults->clear();
        for (Injection& inj : sc.result.injections) {
          if (inj.case_id != c.id || inj.iteration != it) continue;
          ActiveFault f{&inj, inj.unit < 0 ? -1 : worker_index(pool, inj.unit), 0, 0, {}};
          if (inj.input) {
            f.corrupted = s->inputs[inj.tensor_index];
            uint32_t bits;
            std::memcpy(&bits, &f.corrupted[inj.element], 4);
            bits ^= inj.mask;
            std::memcpy(&f.corrupted[inj.element], &bits, 4);
          } else if (!inj.hang) {
            s->problem->locate(inj.element, f.tile, f.offset);
          }
          faults->push_back(std::move(f));
        }
        const auto it_start = Clock::now();
        if (!compute_iteration(*s, pool, *sc.ws, rotation0 + static_cast<uint64_t>(it), *faults)) {
          const std::vector<int> busy = pool.busy_cpus();
          if (!g_stop_signal.load()) {
            r.verdict = Verdict::error;
            r.reason = fmt::format("watchdog: iteration {} did not finish in {:.1f} s; stuck on cpu {}", it,
                                   seconds_since(it_start), cpu::format_cpu_list(busy));
          }
          for (ActiveFault& f : *faults)  // a hang drill fired if its unit is the one stuck
            if (f.inj->hang && busy.size() == 1) {
              f.inj->fired = true;
              f.inj->fired_unit = busy[0];
            }
          sc.stuck = true;
          break;
        }
        ++r.iterations_done;
        for (uint64_t t = 0; t < tiles; ++t) {
          const uint32_t w = s->worker_of[t];
          ++sc.result.units[w].tiles;
          if (s->digest[t] == golden.tile_digests[t]) continue;
          ++r.failed_tiles;
          ++sc.result.units[w].failed_tiles;
          const int cpu_id = pool.cpu(w).cpu;
          if (std::find(r.units_failed.begin(), r.units_failed.end(), cpu_id) == r.units_failed.end())
            r.units_failed.push_back(cpu_id);
          if (r.time_to_fail_s < 0) r.time_to_fail_s = std::chrono::duration<double>(Clock::now() - sc.start).count();
          analyse_tile(*s->problem, s->inputs, golden.tile_digests[t], t, s->out.data() + t * s->problem->tile_elements(),
                       it, cpu_id, sc.analysis_ws, expected_cache[t], r);
        }
      }
      std::sort(r.units_failed.begin(), r.units_failed.end());
      const double flops = s->problem->tile_flops() * static_cast<double>(tiles);
      r.duration_s += seconds_since(t0);
      if (r.duration_s > 0) r.gflops = flops * r.iterations_done / r.duration_s * 1e-9;
    }
  } catch (const std::bad_alloc&) {
    r.verdict = Verdict::error;
    r.reason = "out of host memory";
  } catch (const std::exception& e) {
    r.verdict = Verdict::error;
    r.reason = e.what();
  }
  if (sc.stuck) {
    // A worker may still be inside this case's job: keep everything it can touch alive.
    (void)s.release();
    (void)faults.release();
  }
}

// The verdict of a test from what ran: a miscompare stands whatever happened after it; an error stays
// an error; a pass needs every CPU to have computed tiles of the case.
void settle(TestResult& r, size_t workers) {
  if (r.failed_tiles > 0) {
    r.verdict = Verdict::fail;
    return;
  }
  if (r.verdict == Verdict::error) return;
  const int coverage = r.tiles ? coverage_iterations(workers, r.tiles) : 1;
  if (r.iterations_done >= coverage) {
    r.verdict = Verdict::pass;
    r.reason.clear();
    if (r.iterations_done < r.iterations_planned)
      r.notes.push_back(fmt::format("{} of {} iterations ran before the {}", r.iterations_done, r.iterations_planned,
                                    g_stop_signal.load() ? "interruption" : "time budget ran out"));
  } else {
    r.verdict = Verdict::skip;
    if (r.reason.empty())
      r.reason = g_stop_signal.load() ? "interrupted before every CPU computed a tile"
                                      : "time budget ran out before every CPU computed a tile";
  }
}

}  // namespace

void run_screen(const PatternSet& patterns, const Selection& sel, const RunOptions& opt, RunResult& result) {
  Screen sc{patterns, opt, result, Clock::now(), {}, std::make_unique<cpu::WorkerPool>(describe(opt.cpus)), nullptr, {}};
  sc.deadline = sc.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.time_budget_s));
  const size_t workers = sc.pool->size();
  sc.ws = std::make_unique<std::vector<Workspace>>(workers);
  for (size_t w = 0; w < workers; ++w) {
    UnitResult u;
    u.cpu = sc.pool->cpu(w);
    result.units.push_back(u);
  }
  result.injections = opt.injections;
  result.tests.resize(sel.cases.size());
  for (size_t ci = 0; ci < sel.cases.size(); ++ci) {
    const Case& c = *sel.cases[ci];
    TestResult& r = result.tests[ci];
    r.id = c.id;
    r.family = c.family;
    r.mode = mode_name(c.mode);
    r.distribution = distribution_name(c.distribution);
  }
  // Round 0 runs every case its iteration count (at least enough for every CPU to compute a tile); a
  // profile that fills its budget then repeats rounds until the budget ends.
  for (int round = 0;; ++round) {
    for (size_t ci = 0; ci < sel.cases.size(); ++ci) {
      const Case& c = *sel.cases[ci];
      TestResult& r = result.tests[ci];
      if (round == 0) {
        const char* not_started = g_stop_signal.load()          ? "interrupted before it started"
                                  : sc.stuck                     ? "not run: the watchdog ended the run"
                                  : Clock::now() >= sc.deadline ? "time budget exhausted before it started"
                                                                : nullptr;
        if (not_started) {
          r.verdict = Verdict::skip;
          r.reason = not_started;
          continue;
        }
        const auto& backends = find_family(c.family)->backends;
        const bool on_cpu = std::find(backends.begin(), backends.end(), "cpu") != backends.end();
        if (!on_cpu || !has_cpu_golden(c.mode)) {  // a GPU-only test: not applicable here, not inconclusive
          r.verdict = Verdict::skip;
          r.not_applicable = true;
          r.reason = !on_cpu ? fmt::format("family {} runs on GPUs only", c.family)
                             : fmt::format("{} mode runs on GPUs only: a CPU has no golden for it", mode_name(c.mode));
          if (opt.on_test_done) opt.on_test_done(r, ci, sel.cases.size());
          continue;
        }
        const auto p = find_family(c.family)->prepare(c);
        const int coverage = coverage_iterations(workers, p->tile_count());
        run_case(sc, c, std::max(sel.iterations[ci], coverage), ci, sel.cases.size(), r);
        if (r.iterations_done > 0) r.judged_by = mode_name(c.mode);
        settle(r, workers);
        if (opt.on_test_done) opt.on_test_done(r, ci, sel.cases.size());
      } else {
        if (g_stop_signal.load() || sc.stuck || Clock::now() >= sc.deadline) break;
        if (r.verdict == Verdict::error || r.verdict == Verdict::skip) continue;
        run_case(sc, c, sel.iterations[ci], ci, sel.cases.size(), r);
        settle(r, workers);
      }
    }
    if (!opt.fill_budget || g_stop_signal.load() || sc.stuck || Clock::now() >= sc.deadline) break;
  }
  if (sc.stuck) {
    sc.pool->abandon();
    (void)sc.pool.release();
    (void)sc.ws.release();
    result.watchdog_fired = g_stop_signal.load() == 0;
    result.workers_abandoned = true;
  }
  result.interrupted_by = g_stop_signal.load();
}

std::map<std::string, GoldenCase> compute_goldens(const std::vector<const Case*>& cases, const std::vector<int>& cpus,
                                                  const std::function<void(const Case&)>& on_case) {
  auto pool_owner = std::make_unique<cpu::WorkerPool>(describe(cpus));
  auto ws_owner = std::make_unique<std::vector<Workspace>>(pool_owner->size());
  cpu::WorkerPool& pool = *pool_owner;
  std::vector<Workspace>& ws = *ws_owner;
  std::vector<ActiveFault> none;
  std::map<std::string, GoldenCase> out;
  for (const Case* c : cases) {
    auto state = std::make_unique<CaseState>();
    CaseState& s = *state;
    // On a stop or a stuck worker, the workers may still use the case: leak it and them, then throw.
    auto give_up = [&] {
      pool.abandon();
      (void)state.release();
      (void)pool_owner.release();
      (void)ws_owner.release();
      return std::runtime_error(g_stop_signal.load() ? "interrupted" : fmt::format("case {}: a worker is stuck", c->id));
    };
    if (!prepare_case(*c, pool, s) || !compute_iteration(s, pool, ws, 0, none)) throw give_up();
    const std::vector<uint64_t> first = s.digest;
    const std::vector<float> first_out = s.out;
    // Every tile again, on the next worker.
    if (!compute_iteration(s, pool, ws, 1, none)) throw give_up();
    for (uint64_t t = 0; t < first.size(); ++t)
      if (first[t] != s.digest[t])
        throw std::runtime_error(fmt::format("case {} tile {}: two CPUs computed different results; this machine "
                                             "cannot generate goldens",
                                             c->id, t));
    for (float v : first_out)
      if (v != v)
        throw std::runtime_error(fmt::format("case {}: its output contains a NaN, whose bits are not portable; "
                                             "change its distribution or shape",
                                             c->id));
    GoldenCase g;
    g.fingerprint = case_fingerprint(*c);
    g.tile_digests = first;
    g.output_digest = output_digest(first.data(), first.size());
    out[c->id] = std::move(g);
    if (on_case) on_case(*c);
  }
  return out;
}

}  // namespace sdc
