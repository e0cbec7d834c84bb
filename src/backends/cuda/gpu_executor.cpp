// The GPU executor (gpu_executor.h): one per GPU, which src/core/scheduler.h runs in a host thread of its
// own, with one stream, every selected case on every GPU at once; gpu_backend.cpp makes them. The retest is
// gpu_retest.cpp's, the comparison of an iteration with its reference cuda_compare.cpp's.
// Per case and GPU: inputs generated on the device (never copied over PCIe), then per iteration the
// family's kernels, one digest pass (which also applies injected faults), and a copy of the per-tile
// digests and SM ids to the host; the host compares them with the golden digests and, for a failing
// tile, copies that tile back and recomputes it on the CPU to list the elements that differ.
//
// Fail closed: every output element and SM id is poisoned before each iteration, so a tile a kernel
// did not write can never pass on stale data; a waiting host thread gives up at the watchdog deadline
// and leaves that GPU's buffers allocated (the kernel may still be running); a CUDA error makes the
// test `error`, and an error that leaves the context unusable ends that GPU's run, not the others'.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "src/core/inject.h"
#include "src/core/unit_name.h"
#include "src/spec/digest.h"
#include "src/backends/cuda/gpu_executor.h"

namespace sdc::cuda {
namespace {

// A problem measured against an in-process reference (the training-step replay) gets it computed by this
// host thread and checked against the golden before the GPU runs anything: a reference this CPU computed
// wrong would make a healthy GPU fail, so the test is an error that names the CPU instead.
void use_checked_reference(const Shared& sh, const Case& c, DeviceCase& dc, bool fresh_seed) {
  const ReplayProblem& replay = *dc.problem->replay();
  replay.compute_reference(nullptr);
  const uint32_t te = dc.problem->tile_elements();
  std::vector<float> tile(te);
  replay.reference_tile(0, tile.data());
  const auto golden = sh.patterns.golden.find(c.id);
  if (!fresh_seed && has_cpu_golden(c.mode) && golden != sh.patterns.golden.end() &&
      !golden->second.tile_digests.empty() && tile_digest(0, tile.data(), te) != golden->second.tile_digests[0])
    throw std::runtime_error(
        "this host's CPU computed the replay's reference wrong (its digest is not the golden's), so the GPU "
        "cannot be judged by it: screen this node's CPUs (--backend cpu)");
  dc.device->use_reference(*dc.problem);
}

}  // namespace

bool prepare_case(const Shared& sh, Gpu& g, const Case& c, DeviceCase& dc, uint64_t max_memory, TestResult& r,
                  bool fresh_seed) {
  const Family& f = *find_family(c.family);
  dc.problem = f.prepare(c);
  std::string cannot;
  dc.device = g.rt->prepare(f, c, cannot);
  if (!dc.device) {
    r.verdict = Verdict::skip;
    r.not_applicable = true;
    r.reason = fmt::format("not applicable on {}: {}", unit_text(UnitName::of_gpu(g.info.index)), cannot);
    return true;
  }
  if (const std::string why = dc.device->unsupported(g.info.cc_major, g.info.cc_minor); !why.empty()) {
    r.verdict = Verdict::skip;
    r.not_applicable = true;
    r.reason = fmt::format("not applicable on {} ({}): {}", unit_text(UnitName::of_gpu(g.info.index)), g.info.architecture(), why);
    return true;
  }
  // A replay in mode recorded (the tensor cores) has no host reference: its runs are judged by recordings and
  // consensus alone (train_step_f32_replay.h, ReplaySpec::tensor_cores).
  if (dc.problem->replay() && has_cpu_golden(c.mode)) use_checked_reference(sh, c, dc, fresh_seed);
  const uint64_t tiles = dc.problem->tile_count(), te = dc.problem->tile_elements();
  const auto tensors = dc.problem->inputs();
  uint64_t need = tiles * te * 4 + tiles * (4 + 8);
  for (size_t t = 0; t < tensors.size(); ++t) need += dc.device->input_bytes(t);
  if (max_memory) dc.device->cap_scratch(max_memory > need ? max_memory - need : 0);
  need += dc.device->scratch_bytes();
  dc.bytes = need;
  uint64_t free_b = 0, total_b = 0;
  g.rt->mem_info(free_b, total_b);
  if (max_memory && need > max_memory)
    throw std::runtime_error(
        fmt::format("needs {} MiB of device memory, more than --max-memory ({} MiB)", need >> 20, max_memory >> 20));
  if (need > free_b)
    throw std::runtime_error(
        fmt::format("needs {} MiB of device memory, {} MiB free on {}", need >> 20, free_b >> 20, unit_text(UnitName::of_gpu(g.info.index))));
  DeviceRuntime& rt = *g.rt;
  for (size_t t = 0; t < tensors.size(); ++t) dc.inputs.emplace_back(rt, dc.device->input_bytes(t));
  dc.out = DeviceBuffer(rt, tiles * te * 4);
  dc.tile_sm = DeviceBuffer(rt, tiles * 4);
  dc.digests = DeviceBuffer(rt, tiles * 8);
  dc.scratch = DeviceBuffer(rt, dc.device->scratch_bytes());
  uint64_t input_drills = 0;
  for (const Injection& inj : sh.run->result.injections)
    input_drills += inj.case_id == c.id && inj.input && inj.device == g.info.index;
  if (input_drills) dc.fault_saved = DeviceBuffer(rt, input_drills * MAX_FAULT_COUNT * 4);
  dc.pinned_digests = PinnedBuffer(rt, tiles * 8);
  dc.pinned_sm = PinnedBuffer(rt, tiles * 4);
  dc.host_digests.assign(tiles, 0);
  dc.host_sm.assign(tiles, NO_SM);
  uint64_t elements = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    dc.device->generate(t, dc.inputs[t].get(), g.stream->get());
    elements += tensors[t].elements;
  }
  rt.record(g.event->get(), g.stream->get());
  if (wait_until(rt, g.event->get(), deadline_after(1e-9 * static_cast<double>(elements), rt.slowness()))) return true;
  r.verdict = Verdict::error;
  r.reason = fmt::format("watchdog: input generation on {} did not finish", g.info.label());
  return false;
}

IterationFaults faults_for(Shared& sh, const Gpu& g, const Case& c, const DeviceCase& dc, int it, bool retest,
                           bool fresh) {
  const Problem& p = *dc.problem;
  IterationFaults f;
  for (Injection& inj : sh.run->result.injections) {
    if (inj.case_id != c.id || inj.device != g.info.index) continue;
    const bool output = !inj.hang && !inj.input && !inj.memory && inj.submodule.empty();
    if (output ? (f.output || !fires_now(inj, it, retest, fresh)) : (retest || inj.iteration != it)) continue;
    if (inj.hang)
      f.hang = &inj;
    else if (!inj.submodule.empty() || inj.memory) {  // inside the computation (DeviceProblem::set_replay_fault)
      if (!dc.device->set_replay_fault(nullptr))
        throw std::runtime_error(fmt::format("--inject '{}': {} takes no {} fault", inj.spec, c.id,
                                             inj.memory ? "target=memory" : "submodule="));
      f.replay = &inj;
    } else if (inj.input) {
      // The flip is a 32-bit xor: a tensor the device stores narrower (bf16, fp16, fp8) cannot take it.
      if (dc.device->input_bytes(inj.tensor_index) != p.inputs()[inj.tensor_index].elements * 4)
        throw std::runtime_error(
            fmt::format("--inject '{}': input faults on the GPU need a 32-bit tensor; {} stores "
                        "'{}' narrower (drill its output instead)",
                        inj.spec, c.id, inj.tensor));
      f.input.push_back(&inj);
    } else if (!f.output) {  // one output fault per case, GPU and iteration (checked when parsing)
      f.output = &inj;
      uint64_t tile = 0;
      uint32_t offset = 0;
      p.locate(inj.element, tile, offset);
      f.fault.word = inj.word();
      f.fault.offset = offset;
      if (inj.unit >= 0 && !dc.device->records_sm())
        throw std::runtime_error(
            fmt::format("--inject '{}': {} runs in a library kernel that does not say which SM "
                        "computed a tile; drill an element instead of unit=",
                        inj.spec, c.id));
      if (inj.unit >= 0)
        f.fault.sm = inj.unit;
      else
        f.fault.tile = tile;
    }
  }
  return f;
}

namespace {

// The pacing of a long computation (DeviceProblem::set_pacer): records an event and waits for the one
// recorded two calls before, so at most two chunks of launches are queued; false when the deadline passed.
struct Pacer {
  Gpu& g;
  cudaStream_t s;
  Clock::time_point deadline;
  int calls = 0;
  bool in_time = true;
  static bool pace(void* context) {
    Pacer& p = *static_cast<Pacer*>(context);
    if (!p.in_time) return false;
    p.g.rt->record(p.g.pace[p.calls % 2]->get(), p.s);
    ++p.calls;
    if (p.calls >= 2) p.in_time = wait_until(*p.g.rt, p.g.pace[p.calls % 2]->get(), p.deadline);
    return p.in_time;
  }
};

}  // namespace

// Enqueues one iteration and waits for it; false when the watchdog gave up.
// The copies back go to pinned buffers: a copy to pageable memory would return only when the kernel
// before it is done, and a hung kernel would hang this thread past the watchdog.
bool run_device_iteration(Gpu& g, DeviceCase& dc, const IterationFaults& f, Clock::time_point deadline) {
  DeviceRuntime& rt = *g.rt;
  cudaStream_t s = g.stream->get();
  const uint64_t tiles = dc.problem->tile_count(), te = dc.problem->tile_elements();
  rt.memset_async(dc.out.get(), 0xff, tiles * te * 4, s);
  rt.memset_async(dc.tile_sm.get(), 0xff, tiles * 4, s);
  // Input drills: applied before the kernels, undone after them (each one's words saved in its slot of
  // fault_saved, in the order faults_for lists them: the same order both times).
  const auto input_faults = [&](bool restore) {
    for (size_t k = 0; k < f.input.size(); ++k)
      rt.input_fault(dc.inputs[f.input[k]->tensor_index].get(), f.input[k]->element, f.input[k]->word(),
                     static_cast<char*>(dc.fault_saved.get()) + k * MAX_FAULT_COUNT * 4, restore, s);
  };
  input_faults(false);
  std::vector<const void*> in;
  for (const DeviceBuffer& b : dc.inputs) in.push_back(b.get());
  if (f.hang) {
    *g.hang_release = 0;
    rt.launch_hang(g.hang_release, s);
  } else {
    // A device that samples blocks (the emulated one) may do so only where the kernels say which tiles they
    // computed; a problem whose tiles span the whole device (the replay) runs every block.
    const bool sample = dc.device->records_sm();
    if (sample) rt.compute_begin(s);
    Pacer pacer{g, s, deadline};
    try {
      dc.device->set_replay_fault(f.replay);
      dc.device->set_pacer(&Pacer::pace, &pacer);
      dc.device->compute(in.data(), dc.out.as<float>(), dc.tile_sm.as<uint32_t>(), dc.scratch.get(), s);
      dc.device->set_pacer(nullptr, nullptr);
      dc.device->set_replay_fault(nullptr);
    } catch (...) {
      dc.device->set_pacer(nullptr, nullptr);
      dc.device->set_replay_fault(nullptr);
      if (sample) rt.compute_end(s);
      throw;
    }
    if (sample) rt.compute_end(s);
    if (!pacer.in_time) return false;                   // the queued work did not finish by the deadline: the watchdog
    if (f.replay && dc.device->replay_fault_fired()) {  // enqueued: it flips with the kernels it follows
      f.replay->fired = true;
      f.replay->fired_unit = -1;
      f.replay->fired_tile = dc.device->replay_fault_tile();
    }
  }
  input_faults(true);
  rt.digest_tiles(dc.out.as<float>(), dc.device->output_layout(), tiles, static_cast<uint32_t>(te),
                  dc.tile_sm.as<uint32_t>(), f.fault, dc.digests.as<uint64_t>(), s);
  rt.copy_async(dc.pinned_digests.get(), dc.digests.get(), tiles * 8, s);
  rt.copy_async(dc.pinned_sm.get(), dc.tile_sm.get(), tiles * 4, s);
  rt.record(g.event->get(), s);
  if (!wait_until(rt, g.event->get(), deadline)) return false;
  std::memcpy(dc.host_digests.data(), dc.pinned_digests.get(), tiles * 8);
  std::memcpy(dc.host_sm.data(), dc.pinned_sm.get(), tiles * 4);
  return true;
}

std::vector<UnitResult> GpuExecutor::units() const {
  std::vector<UnitResult> out(static_cast<size_t>(g_.sm_ids));
  for (int sm = 0; sm < g_.sm_ids; ++sm) {
    out[static_cast<size_t>(sm)].device = static_cast<int>(g_.slot);
    out[static_cast<size_t>(sm)].sm = sm;
  }
  return out;
}

void GpuExecutor::open() {
  if (g_.dead.empty()) try {
      g_.rt->make_current();
      g_.stream = std::make_unique<Stream>(*g_.rt);
      g_.event = std::make_unique<Event>(*g_.rt);
      for (auto& e : g_.pace) e = std::make_unique<Event>(*g_.rt);
      g_.hang_flag = PinnedBuffer(*g_.rt, sizeof(int));
      g_.hang_release = g_.hang_flag.as<volatile int>();
    } catch (const CudaError& e) {
      g_.dead = e.what();
    }
}

bool GpuExecutor::applicable(const Case& c, TestResult& r) const {
  if (find_family(c.family)->prepare_cuda || g_.info.emulated) return true;
  r.verdict = Verdict::skip;
  r.reason = fmt::format("family {} has no CUDA kernel", c.family);
  return false;
}

std::optional<PreparedCase> GpuExecutor::prepare(const Case& c, TestResult& r) {
  dc_ = std::make_unique<DeviceCase>();
  expected_cache_.clear();
  case_id_ = c.id;
  not_prepared_ = "it could not prepare the case";  // until it has (an exception leaves it so)
  if (!prepare_case(sh_, g_, c, *dc_, sh_.run->opt.max_memory_bytes, r)) {
    g_.stuck = true;
    not_prepared_ = "its watchdog gave up while it prepared the case";
    return std::nullopt;
  }
  if (r.not_applicable) {
    not_prepared_ = r.reason;
    return std::nullopt;
  }
  // Once per test: a profile that fills its budget prepares the case again every round (the device's note is its
  // first round's: a later round's buffers may lie elsewhere).
  if (const std::string note = g_.rt->test_note(*find_family(c.family), c.mode);
      !note.empty() && std::find(r.notes.begin(), r.notes.end(), note) == r.notes.end())
    r.notes.push_back(note);
  if (const std::string note = dc_->device->note(dc_->scratch.get()); !note.empty() && r.iterations_done == 0)
    r.notes.push_back(note);
  const uint64_t tiles = dc_->problem->tile_count();
  r.tiles = tiles;
  r.tiles_without_sm = !dc_->device->records_sm();
  const Engine engine = dc_->device->engine();
  r.library = engine.library;
  r.algorithm = engine.algorithm;
  ref_ = choose_reference(sh_, g_, c, *dc_, r);
  if (ref_.kind == Reference::repeats) {
    // Consensus compares runs with each other (at least two, until a first run is kept). The first run's
    // output stays on the device (when it fits) so that a later miscompare lists elements, not only tiles.
    const uint64_t bytes = tiles * dc_->problem->tile_elements() * 4ull;
    uint64_t free_b = 0, total_b = 0;
    g_.rt->mem_info(free_b, total_b);
    if (ref_.first->digests.empty() && bytes + (256ull << 20) < free_b) dc_->first_out = DeviceBuffer(*g_.rt, bytes);
  }
  // The device's own count where it has one (the memory test: bytes moved, so its GFLOP/s read as GB/s).
  const double tile_ops = dc_->device->work_ops() > 0 ? dc_->device->work_ops() / static_cast<double>(tiles)
                                                      : dc_->problem->tile_flops();
  work_ = tile_ops * static_cast<double>(tiles) * 1e-12;
  // Every tile runs on the SMs the GPU chose: one iteration covers the device.
  const int minimum = ref_.kind == Reference::repeats && ref_.first->digests.empty() ? 2 : 1;
  link_group(c, r);
  not_prepared_.clear();
  return PreparedCase{tiles, tile_ops, dc_->problem->tile_grid(), 1, minimum};
}

bool GpuExecutor::run_iteration(const Case& c, int it, TestResult& r) {
  faults_ = faults_for(sh_, g_, c, *dc_, it);
  if (tp_ && !join_group(it, r)) return false;
  const auto it_start = Clock::now();
  const Clock::time_point deadline = deadline_after(work_, g_.rt->slowness());
  bool done = false;
  if (tp_) {
    tp_link_.deadline = deadline;
    dc_->device->set_tp_link(&tp_link_);
  }
  try {
    done = run_device_iteration(g_, *dc_, faults_, deadline);
  } catch (const std::exception& e) {
    if (tp_) {
      dc_->device->set_tp_link(nullptr);
      tp_->end(tp_link_.rank, e.what());
    }
    throw;
  }
  if (tp_) dc_->device->set_tp_link(nullptr);
  if (done) return true;
  r.verdict = Verdict::error;
  r.reason = fmt::format("watchdog: iteration {} on {} did not finish in {:.1f} s", it, g_.info.label(),
                         seconds_since(it_start));
  if (faults_.hang) {
    faults_.hang->fired = true;
    faults_.hang->fired_unit = -1;
    *g_.hang_release = 1;  // the drill's kernel may end now; the buffers stay leaked all the same
  }
  g_.stuck = true;
  return false;
}

void GpuExecutor::release_case() {
  if (tp_) {
    tp_->end(tp_link_.rank, g_.stuck           ? "its watchdog gave up on a kernel"
                            : !g_.dead.empty() ? g_.dead
                                               : "its iterations ran");
    tp_.reset();
  } else if (!not_prepared_.empty()) {  // a tensor-parallel group of this case must not wait for this GPU
    sh_.tp.abandon(case_id_, g_.slot, not_prepared_);
  }
  not_prepared_.clear();
  if (dc_ && (g_.stuck || !g_.dead.empty())) {
    dc_->leak();  // a kernel may still be running on them, or the context cannot free them
    (void)dc_.release();
  }
  dc_.reset();
  faults_ = {};
  ref_ = {};
}

Verdict GpuExecutor::error_verdict(const std::exception& e) const {
  const auto* ce = dynamic_cast<const CudaError*>(&e);
  return ce && ce->sticky() ? Verdict::crash : Verdict::error;
}

std::string GpuExecutor::error_reason(const std::exception& e) {
  std::string why = error_text(e);
  if (!not_prepared_.empty()) not_prepared_ = why;  // release_case tells the case's tensor-parallel group
  return why;
}

std::string GpuExecutor::error_text(const std::exception& e) {
  if (const auto* ce = dynamic_cast<const CudaError*>(&e)) {
    if (ce->sticky()) {
      g_.dead = ce->what();
      return fmt::format("{} lost its context: {}", unit_text(UnitName::of_gpu(g_.info.index)), ce->what());
    }
    return ce->out_of_memory() ? fmt::format("out of device memory on {}: {}", unit_text(UnitName::of_gpu(g_.info.index)), ce->what())
                               : ce->what();
  }
  return Executor::error_reason(e);
}

bool GpuExecutor::settle(TestResult& r) const {
  if (r.judged_by != "consensus" || r.iterations_done != 1) return false;
  r.verdict = Verdict::skip;
  r.reason = CONSENSUS_ONE_RUN;
  return true;
}

std::vector<std::string> GpuExecutor::probe_units() const {
  if (!g_.dead.empty() || g_.stuck) return {};
  return {unit_text(UnitName::of_gpu(g_.info.index))};
}

std::string GpuExecutor::probe_work() const {
  return g_.info.emulated ? "gemm_f32 128x128x128 on the whole emulated GPU, CPU time of its stream's thread"
                          : "gemm_f32 2048x2048x2048 on the whole GPU, wall time of its stream";
}

std::string GpuExecutor::probe(uint64_t reps, Clock::time_point deadline, std::vector<double>& seconds) {
  if (!g_.dead.empty() || g_.stuck) return fmt::format("{} cannot run the probe", g_.info.label());
  try {
    g_.rt->make_current();  // the probe may run on another host thread than the screen did
    if (!probe_case_) {
      Case c;
      c.id = "probe.gemm_f32";
      c.family = "gemm_f32";
      c.data_seed = 0x70726f6265ull;
      const int64_t n = g_.info.emulated ? 128 : 2048;
      c.shape.dims = {{"m", n}, {"n", n}, {"k", n}};
      auto dc = std::make_unique<DeviceCase>();
      TestResult scratch;
      const bool in_time = prepare_case(sh_, g_, c, *dc, sh_.run->opt.max_memory_bytes, scratch, true);
      if (!in_time) {
        g_.stuck = true;
        dc->leak(), (void)dc.release();
        return fmt::format("watchdog: the probe's inputs on {} were not generated in time", g_.info.label());
      }
      if (scratch.not_applicable) return scratch.reason;
      probe_case_ = std::move(dc);
    }
    DeviceCase& dc = *probe_case_;
    cudaStream_t s = g_.stream->get();
    std::vector<const void*> in;
    for (const DeviceBuffer& b : dc.inputs) in.push_back(b.get());
    Pacer pacer{g_, s, deadline};
    const auto start = Clock::now();
    const double cpu_start = g_.rt->stream_cpu_seconds(s);
    for (uint64_t i = 0; i < reps && pacer.in_time; ++i) {
      dc.device->compute(in.data(), dc.out.as<float>(), dc.tile_sm.as<uint32_t>(), dc.scratch.get(), s);
      if (i % 64 == 63) Pacer::pace(&pacer);
    }
    if (pacer.in_time) {
      g_.rt->record(g_.event->get(), s);
      pacer.in_time = wait_until(*g_.rt, g_.event->get(), deadline);
    }
    if (!pacer.in_time) {
      g_.stuck = true;
      probe_case_->leak(), (void)probe_case_.release();
      return fmt::format("watchdog: the probe did not finish on {}", g_.info.label());
    }
    const double cpu_end = cpu_start >= 0 ? g_.rt->stream_cpu_seconds(s) : -1;
    seconds = {cpu_end >= cpu_start && cpu_start >= 0 ? cpu_end - cpu_start : seconds_since(start)};
    return "";
  } catch (const CudaError& e) {
    if (e.sticky()) g_.dead = e.what();
    return fmt::format("{}: {}", g_.info.label(), e.what());
  } catch (const std::exception& e) {
    return fmt::format("{}: {}", g_.info.label(), e.what());
  }
}

void GpuExecutor::abandon() {
  (void)g_.stream.release();
  (void)g_.event.release();
  for (auto& e : g_.pace) (void)e.release();
  g_.hang_flag.release();
  (void)g_.rt.release();
}

}  // namespace sdc::cuda
