// The screen on GPUs: one host thread and one stream per GPU, every selected case on every GPU at once.
// Per case and GPU: inputs generated on the device (never copied over PCIe), then per iteration the
// family's kernels, one digest pass (which also applies injected faults), and a copy of the per-tile
// digests and SM ids to the host; the host compares them with the golden digests and, for a failing
// tile, copies that tile back and recomputes it on the CPU to list the elements that differ.
//
// Fail closed: every output element and SM id is poisoned before each iteration, so a tile a kernel
// did not write can never pass on stale data; a waiting host thread gives up at the watchdog deadline
// and leaves that GPU's buffers allocated (the kernel may still be running); a CUDA error makes the
// test `error`, and an error that leaves the context unusable ends that GPU's run, not the others'.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "../../spec/digest.h"
#include "../../core/node_consensus.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "device_passes.h"
#include "runner_state.h"

namespace sdc::cuda {
namespace {


// Allocates a case's buffers and generates its inputs; false when the watchdog gave up.
bool prepare_case(Gpu& g, const Case& c, DeviceCase& dc, uint64_t max_memory, TestResult& r) {
  dc.problem = find_family(c.family)->prepare(c);
  dc.device = find_family(c.family)->prepare_cuda(c);
  if (const std::string why = dc.device->unsupported(g.info.cc_major, g.info.cc_minor); !why.empty()) {
    r.verdict = Verdict::skip;
    r.not_applicable = true;
    r.reason = fmt::format("not applicable on {} ({}): {}", g.info.label(), g.info.architecture(), why);
    return true;
  }
  const uint64_t tiles = dc.problem->tile_count(), te = dc.problem->tile_elements();
  const auto tensors = dc.problem->inputs();
  uint64_t need = tiles * te * 4 + tiles * (4 + 8) + dc.device->scratch_bytes();
  for (size_t t = 0; t < tensors.size(); ++t) need += dc.device->input_bytes(t);
  size_t free_b = 0, total_b = 0;
  SDC_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (max_memory && need > max_memory)
    throw std::runtime_error(fmt::format("needs {} MiB of device memory, more than --max-memory ({} MiB)", need >> 20,
                                         max_memory >> 20));
  if (need > free_b)
    throw std::runtime_error(fmt::format("needs {} MiB of device memory, {} MiB free on {}", need >> 20, free_b >> 20,
                                         g.info.label()));
  for (size_t t = 0; t < tensors.size(); ++t) dc.inputs.emplace_back(dc.device->input_bytes(t));
  dc.out = DeviceBuffer(tiles * te * 4);
  dc.tile_sm = DeviceBuffer(tiles * 4);
  dc.digests = DeviceBuffer(tiles * 8);
  dc.scratch = DeviceBuffer(dc.device->scratch_bytes());
  dc.host_digests.assign(tiles, 0);
  dc.host_sm.assign(tiles, NO_SM);
  uint64_t elements = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    dc.device->generate(t, dc.inputs[t].get(), g.stream->get());
    elements += tensors[t].elements;
  }
  SDC_CUDA_CHECK(cudaEventRecord(g.event->get(), g.stream->get()));
  if (wait_until(g.event->get(), deadline_after(1e-9 * static_cast<double>(elements)))) return true;
  r.verdict = Verdict::error;
  r.reason = fmt::format("watchdog: input generation on {} did not finish", g.info.label());
  return false;
}


IterationFaults faults_for(Shared& sh, const Gpu& g, const Case& c, const DeviceCase& dc, int it) {
  const Problem& p = *dc.problem;
  IterationFaults f;
  for (Injection& inj : sh.result.injections) {
    if (inj.case_id != c.id || inj.iteration != it || inj.device != g.info.index) continue;
    if (inj.hang) f.hang = &inj;
    else if (inj.input) {
      // The flip is a 32-bit xor: a tensor the device stores narrower (bf16, fp16, fp8) cannot take it.
      if (dc.device->input_bytes(inj.tensor_index) != p.inputs()[inj.tensor_index].elements * 4)
        throw std::runtime_error(fmt::format("--inject '{}': input faults on the GPU need a 32-bit tensor; {} stores "
                                             "'{}' narrower (drill its output instead)",
                                             inj.spec, c.id, inj.tensor));
      f.input.push_back(&inj);
    }
    else if (!f.output) {  // one output fault per case, GPU and iteration (checked when parsing)
      f.output = &inj;
      uint64_t tile = 0;
      uint32_t offset = 0;
      p.locate(inj.element, tile, offset);
      f.fault.mask = inj.mask;
      f.fault.offset = offset;
      if (inj.unit >= 0 && !dc.device->records_sm())
        throw std::runtime_error(fmt::format("--inject '{}': {} runs in a library kernel that does not say which SM "
                                             "computed a tile; drill an element instead of unit=",
                                             inj.spec, c.id));
      if (inj.unit >= 0) f.fault.sm = inj.unit;
      else f.fault.tile = tile;
    }
  }
  return f;
}

// Enqueues one iteration and waits for it; false when the watchdog gave up.
bool run_iteration(Gpu& g, DeviceCase& dc, const IterationFaults& f, Clock::time_point deadline) {
  cudaStream_t s = g.stream->get();
  const uint64_t tiles = dc.problem->tile_count(), te = dc.problem->tile_elements();
  SDC_CUDA_CHECK(cudaMemsetAsync(dc.out.get(), 0xff, tiles * te * 4, s));
  SDC_CUDA_CHECK(cudaMemsetAsync(dc.tile_sm.get(), 0xff, tiles * 4, s));
  for (const Injection* inj : f.input) flip_bits(dc.inputs[inj->tensor_index].get(), inj->element, inj->mask, s);
  std::vector<const void*> in;
  for (const DeviceBuffer& b : dc.inputs) in.push_back(b.get());
  if (f.hang) {
    *g.hang_release = 0;
    launch_hang(g.hang_release, s);
  } else {
    dc.device->compute(in.data(), dc.out.as<float>(), dc.tile_sm.as<uint32_t>(), dc.scratch.get(), s);
  }
  for (const Injection* inj : f.input) flip_bits(dc.inputs[inj->tensor_index].get(), inj->element, inj->mask, s);
  digest_tiles(dc.out.as<float>(), dc.device->output_layout(), tiles, static_cast<uint32_t>(te),
               dc.tile_sm.as<uint32_t>(), f.fault, dc.digests.as<uint64_t>(), s);
  SDC_CUDA_CHECK(cudaMemcpyAsync(dc.host_digests.data(), dc.digests.get(), tiles * 8, cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaMemcpyAsync(dc.host_sm.data(), dc.tile_sm.get(), tiles * 4, cudaMemcpyDeviceToHost, s));
  SDC_CUDA_CHECK(cudaEventRecord(g.event->get(), s));
  return wait_until(g.event->get(), deadline);
}


// Runs `iterations` more iterations of one case on one GPU, accumulating into r.
void run_case(Shared& sh, Gpu& g, const Case& c, int iterations, size_t index, TestResult& r) {
  const auto t0 = Clock::now();
  auto dc = std::make_unique<DeviceCase>();
  Workspace ws;
  try {
    if (!prepare_case(g, c, *dc, sh.opt.max_memory_bytes, r)) {
      g.stuck = true;
    } else {
      if (r.not_applicable) return;
      const uint64_t tiles = dc->problem->tile_count();
      r.tiles = tiles;
      const Engine engine = dc->device->engine();
      r.library = engine.library;
      r.algorithm = engine.algorithm;
      const Reference ref = choose_reference(sh, g, c, *dc, r);
      if (ref.kind == Reference::repeats) {
        // Consensus compares runs with each other: at least two. The first run's output stays on the
        // device (when it fits) so that a later miscompare lists elements, not only tiles.
        if (r.reference_digests.empty()) iterations = std::max(iterations, 2);
        const uint64_t bytes = tiles * dc->problem->tile_elements() * 4ull;
        size_t free_b = 0, total_b = 0;
        SDC_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        if (r.reference_digests.empty() && bytes + (256ull << 20) < free_b) dc->first_out = DeviceBuffer(bytes);
      }
      std::map<uint64_t, std::vector<float>> expected_cache;
      const int first = r.iterations_done;
      r.iterations_planned = first + iterations;
      const double work = dc->problem->tile_flops() * static_cast<double>(tiles) * 1e-12;
      for (int it = first; it < first + iterations; ++it) {
        if (g_stop_signal.load() || (it > first && Clock::now() >= sh.deadline)) break;
        if (sh.opt.on_progress && g.slot == 0) {
          std::lock_guard<std::mutex> lock(sh.callback_mutex);
          sh.opt.on_progress(c, index, sh.sel.cases.size(), it - first, iterations);
        }
        const IterationFaults f = faults_for(sh, g, c, *dc, it);
        const auto it_start = Clock::now();
        if (!run_iteration(g, *dc, f, deadline_after(work))) {
          r.verdict = Verdict::error;
          r.reason = fmt::format("watchdog: iteration {} on {} did not finish in {:.1f} s", it, g.info.label(),
                                 seconds_since(it_start));
          if (f.hang) {
            f.hang->fired = true;
            f.hang->fired_unit = -1;
            *g.hang_release = 1;  // the drill's kernel may end now; the buffers stay leaked all the same
          }
          g.stuck = true;
          break;
        }
        ++r.iterations_done;
        compare_iteration(sh, g, *dc, f, it, ref, expected_cache, ws, r);
      }
      std::sort(r.units_failed.begin(), r.units_failed.end());
    }
  } catch (const CudaError& e) {
    r.verdict = Verdict::error;
    r.reason = e.out_of_memory() ? fmt::format("out of device memory on {}: {}", g.info.label(), e.what()) : e.what();
    if (e.sticky()) g.dead = e.what();
  } catch (const std::bad_alloc&) {
    r.verdict = Verdict::error;
    r.reason = "out of host memory";
  } catch (const std::exception& e) {
    r.verdict = Verdict::error;
    r.reason = e.what();
  }
  r.duration_s += seconds_since(t0);
  if (r.duration_s > 0 && dc->problem)
    r.gflops = dc->problem->tile_flops() * static_cast<double>(r.tiles) * r.iterations_done / r.duration_s * 1e-9;
  if (g.stuck || !g.dead.empty()) {
    dc->leak();  // a kernel may still be running on them, or the context cannot free them
    (void)dc.release();
  }
}

// A GPU test's verdict: a miscompare stands; an error stays; a pass needs one complete iteration.
void settle(TestResult& r) {
  if (r.not_applicable) return;
  if (r.failed_tiles > 0) {
    r.verdict = Verdict::fail;
  } else if (r.verdict == Verdict::error) {
  } else if (r.judged_by == "consensus" && r.iterations_done == 1) {
    r.verdict = Verdict::skip;  // unless another GPU of the node agrees (apply_node_consensus)
    r.reason = CONSENSUS_ONE_RUN;
  } else if (r.iterations_done >= 1) {
    r.verdict = Verdict::pass;
    r.reason.clear();
    if (r.iterations_done < r.iterations_planned)
      r.notes.push_back(fmt::format("{} of {} iterations ran before the {}", r.iterations_done, r.iterations_planned,
                                    g_stop_signal.load() ? "interruption" : "time budget ran out"));
  } else {
    r.verdict = Verdict::skip;
    if (r.reason.empty()) r.reason = g_stop_signal.load() ? "interrupted before it ran" : "time budget ran out before it ran";
  }
}

void run_gpu(Shared& sh, Gpu& g) {
  const size_t ngpu = sh.result.devices.size();
  auto test = [&](size_t ci) -> TestResult& { return sh.result.tests[ci * ngpu + g.slot]; };
  if (g.dead.empty()) try {
    SDC_CUDA_CHECK(cudaSetDevice(g.info.index));
    g.stream = std::make_unique<Stream>();
    g.event = std::make_unique<Event>();
    void* flag = nullptr;
    SDC_CUDA_CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped));
    g.hang_release = static_cast<volatile int*>(flag);
  } catch (const CudaError& e) {
    g.dead = e.what();
  }
  for (int round = 0;; ++round) {
    for (size_t ci = 0; ci < sh.sel.cases.size(); ++ci) {
      const Case& c = *sh.sel.cases[ci];
      TestResult& r = test(ci);
      if (round > 0 && (g_stop_signal.load() || g.stuck || !g.dead.empty() || Clock::now() >= sh.deadline)) break;
      if (round > 0 && r.verdict != Verdict::pass) continue;
      const char* not_started = g_stop_signal.load()          ? "interrupted before it started"
                                : g.stuck                      ? "not run: the watchdog ended this GPU's run"
                                : Clock::now() >= sh.deadline ? "time budget exhausted before it started"
                                                              : nullptr;
      if (round == 0 && !g.dead.empty()) {
        r.verdict = Verdict::error;
        r.reason = fmt::format("{} is unusable: {}", g.info.label(), g.dead);
      } else if (round == 0 && not_started) {
        r.verdict = Verdict::skip;
        r.reason = not_started;
      } else if (!find_family(c.family)->prepare_cuda) {
        r.verdict = Verdict::skip;
        r.reason = fmt::format("family {} has no CUDA kernel", c.family);
      } else {
        run_case(sh, g, c, sh.sel.iterations[ci], ci, r);
        settle(r);
      }
      if (round == 0 && sh.opt.on_test_done) {
        std::lock_guard<std::mutex> lock(sh.callback_mutex);
        sh.opt.on_test_done(r, ci, sh.sel.cases.size());
      }
    }
    if (!sh.opt.fill_budget || g_stop_signal.load() || g.stuck || !g.dead.empty() || Clock::now() >= sh.deadline) break;
  }
}

}  // namespace

void run_screen(const PatternSet& patterns, const Selection& sel, const RunOptions& opt,
                const std::vector<DeviceInfo>& gpus, RunResult& result) {
  Shared sh{patterns, sel, opt, result, Clock::now(), {}, {}};
  sh.deadline = sh.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.time_budget_s));
  result.devices = gpus;
  result.injections = opt.injections;
  // One unit per SM id the GPU can report (%nsmid, usually the SM count). A GPU on which even that
  // query fails is kept, with the error, and its tests become `error`.
  std::vector<std::unique_ptr<Gpu>> run;
  for (size_t i = 0; i < gpus.size(); ++i) {
    int sm_ids = gpus[i].sm_count;
    std::string dead;
    try {
      SDC_CUDA_CHECK(cudaSetDevice(gpus[i].index));
      sm_ids = std::max(sm_ids, sm_id_limit());
    } catch (const CudaError& e) {
      dead = e.what();
    }
    run.push_back(std::make_unique<Gpu>(result.devices[i], i, result.units.size(), sm_ids));
    run.back()->dead = dead;
    for (int sm = 0; sm < sm_ids; ++sm) {
      UnitResult u;
      u.device = static_cast<int>(i);
      u.sm = sm;
      result.units.push_back(u);
    }
  }
  for (const Case* c : sel.cases)
    for (size_t i = 0; i < gpus.size(); ++i) {
      TestResult t;
      t.id = c->id;
      t.family = c->family;
      t.mode = mode_name(c->mode);
      t.distribution = distribution_name(c->distribution);
      t.device = gpus[i].label();
      t.device_index = static_cast<int>(i);
      result.tests.push_back(t);
    }
  std::vector<std::thread> threads;
  for (auto& g : run) threads.emplace_back([&sh, &g] { run_gpu(sh, *g); });
  for (std::thread& t : threads) t.join();
  apply_node_consensus(result, seconds_since(sh.start));
  for (auto& g : run)
    if (g->stuck) {
      result.watchdog_fired = result.watchdog_fired || g_stop_signal.load() == 0;
      result.workers_abandoned = true;  // a kernel may still run: end the process without unwinding
      (void)g->stream.release();
      (void)g->event.release();
    }
  result.interrupted_by = g_stop_signal.load();
}

}  // namespace sdc::cuda
