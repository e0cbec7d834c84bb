// The emulated device (emu_device.h) and its DeviceRuntime (src/backends/cuda/device_runtime.h).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include <pthread.h>
#include <time.h>

#include "../cuda/device_passes.h"
#include "../cuda/device_runtime.h"
#define SDC_EMU 1
#include "cuda_emu.h"

namespace sdc::emu {
namespace {

using cuda::CudaError;
class Device;

// A stream: a host thread that runs its queue in order.
class Stream {
 public:
  explicit Stream(Device& d) : dev(d), worker_([this] { loop(); }) {}
  // Ends the thread once the queue is done; true when it did. A stream whose work has not ended (a kernel
  // the watchdog gave up on) keeps its thread and its memory until the process ends.
  bool close() {
    {
      std::lock_guard<std::mutex> l(m_);
      quit_ = true;
    }
    cv_.notify_all();
    if (!idle()) {
      worker_.detach();
      return false;
    }
    worker_.join();
    return true;
  }
  uint64_t enqueue(std::function<void()> op) {
    std::lock_guard<std::mutex> l(m_);
    q_.push_back(std::move(op));
    cv_.notify_all();
    return ++enqueued_;
  }
  bool reached(uint64_t seq) {
    std::lock_guard<std::mutex> l(m_);
    return completed_ >= seq;
  }
  void wait(uint64_t seq) {
    std::unique_lock<std::mutex> l(m_);
    done_cv_.wait(l, [&] { return completed_ >= seq; });
  }
  void drain() {
    uint64_t seq;
    {
      std::lock_guard<std::mutex> l(m_);
      seq = enqueued_;
    }
    wait(seq);
  }
  bool idle() {
    std::lock_guard<std::mutex> l(m_);
    return completed_ == enqueued_;
  }
  // The CPU time this stream's thread has used.
  double cpu_seconds() {
    clockid_t id;
    timespec t{};
    if (pthread_getcpuclockid(worker_.native_handle(), &id) != 0 || clock_gettime(id, &t) != 0) return -1;
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }
  Device& dev;
  bool sampling = false;  // host side: a launch enqueued now is a family's compute kernel

 private:
  void loop() {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return quit_ || !q_.empty(); });
        if (q_.empty()) return;
        op = std::move(q_.front());
        q_.pop_front();
      }
      op();
      {
        std::lock_guard<std::mutex> l(m_);
        ++completed_;
      }
      done_cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> q_;
  uint64_t enqueued_ = 0, completed_ = 0;
  bool quit_ = false;
  std::thread worker_;
};

struct Event {
  Stream* stream = nullptr;
  uint64_t seq = 0;
};

cudaError_t to_emu_error(CudaError::Kind k) {
  return k == CudaError::Kind::out_of_memory  ? cudaErrorMemoryAllocation
         : k == CudaError::Kind::context_lost ? cudaErrorLaunchFailure
                                              : cudaErrorInvalidValue;
}

class Device {
 public:
  Device(const Spec& s, int ordinal) : spec(s) {
    info.index = ordinal;
    info.name = fmt::format("sdcscreen emulated GPU (sm_{}{}, {} SMs)", s.cc_major, s.cc_minor, s.sms);
    info.uuid = fmt::format("EMU-{:08x}-0000-0000-0000-{:012x}", ordinal, ordinal);
    info.pci_bus_id = fmt::format("emulated:{}", ordinal);
    info.cc_major = s.cc_major;
    info.cc_minor = s.cc_minor;
    info.sm_count = s.sms;
    info.memory_bytes = s.memory_bytes;
    info.driver = "emulated";
    info.driver_cuda = "emulated";
    info.runtime = "emulated";
    info.ecc = "off";
    info.emulated = true;
  }
  Spec spec;
  DeviceInfo info;

  // ---- memory ----
  void* alloc(uint64_t bytes) {
    const uint64_t size = (std::max<uint64_t>(bytes, 1) + 255) / 256 * 256;
    std::lock_guard<std::mutex> l(m_);
    if (used_ + size > spec.memory_bytes)
      throw CudaError(fmt::format("cudaMalloc of {} bytes: cudaErrorMemoryAllocation (out of memory) on emulated "
                                  "device {} ({} of {} bytes in use)",
                                  bytes, info.index, used_, spec.memory_bytes),
                      CudaError::Kind::out_of_memory);
    void* p = std::aligned_alloc(256, size);
    if (!p) throw CudaError("host memory for the emulated device ran out", CudaError::Kind::out_of_memory);
    used_ += size;
    allocs_[reinterpret_cast<uintptr_t>(p)] = size;
    return p;
  }
  void free(void* p) noexcept {
    wait_idle();  // as cudaFree, which synchronizes the device
    std::lock_guard<std::mutex> l(m_);
    const auto it = allocs_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocs_.end()) return;
    used_ -= it->second;
    allocs_.erase(it);
    std::free(p);
  }
  void* alloc_host(uint64_t bytes) {
    void* p = std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) throw CudaError("host memory ran out", CudaError::Kind::out_of_memory);
    std::lock_guard<std::mutex> l(m_);
    pinned_.insert(p);
    return p;
  }
  void free_host(void* p) noexcept {
    wait_idle();  // as cudaFreeHost
    std::lock_guard<std::mutex> l(m_);
    if (pinned_.erase(p)) std::free(p);
  }
  uint64_t used() {
    std::lock_guard<std::mutex> l(m_);
    return used_;
  }
  // Host memory that is neither device memory nor pinned: a copy to it is synchronous, as CUDA's.
  bool pageable(const void* p) {
    std::lock_guard<std::mutex> l(m_);
    const auto u = reinterpret_cast<uintptr_t>(p);
    auto it = allocs_.upper_bound(u);
    if (it != allocs_.begin() && u < std::prev(it)->first + std::prev(it)->second) return false;
    return pinned_.count(const_cast<void*>(p)) == 0;
  }
  // Enqueues a copy on s; to pageable memory it returns only when the copy is done, as CUDA's. Returns false
  // when the context is lost (nothing enqueued).
  bool copy_async(Stream& s, void* dst, const void* src, uint64_t bytes);

  // ---- streams ----
  Stream* create_stream() {
    auto* s = new Stream(*this);
    std::lock_guard<std::mutex> l(streams_m_);
    streams_.insert(s);
    return s;
  }
  // As cudaStreamDestroy, it returns at once; a stream whose work has not ended stays one of the device's
  // (wait_idle waits for it).
  void destroy_stream(Stream* s) {
    std::lock_guard<std::mutex> l(streams_m_);
    if (!s->close()) return;
    streams_.erase(s);
    delete s;
  }
  // Returns when every stream of the device has done what was enqueued on it, as cudaFree, cudaFreeHost and the
  // CUDA runtime's teardown do on a GPU: never, while a kernel that never ends runs on it.
  void wait_idle() noexcept {
    std::lock_guard<std::mutex> l(streams_m_);  // not m_: a stream's kernel may need it (lose)
    for (Stream* s : streams_) s->drain();
  }

  // ---- the sticky error ----
  void lose(const std::string& what) {
    std::lock_guard<std::mutex> l(m_);
    if (!lost_.empty()) return;
    lost_ = what;
    lost_flag_ = true;
  }
  bool lost() const { return lost_flag_; }
  void check_lost() {
    if (!lost_flag_) return;
    std::lock_guard<std::mutex> l(m_);
    throw CudaError(lost_, CudaError::Kind::context_lost);
  }
  uint64_t next_launch() { return ++launches_; }

 private:
  std::mutex m_;
  std::map<uintptr_t, uint64_t> allocs_;
  std::set<void*> pinned_;
  uint64_t used_ = 0;
  std::mutex streams_m_;
  std::set<Stream*> streams_;
  std::string lost_;
  std::atomic<bool> lost_flag_{false};
  std::atomic<uint64_t> launches_{0};
};

std::mutex g_devices_m;
// Every emulated device of the process, by ordinal. Never freed, nor is the list: a stream thread may still
// run a kernel the watchdog gave up on when the process exits.
std::vector<Device*>& g_devices = *new std::vector<Device*>;

thread_local Device* t_current = nullptr;          // the host thread's current device (make_current)
thread_local cudaError_t t_last = cudaSuccess;     // the host thread's last launch error
thread_local const Spec* t_launch_spec = nullptr;  // the device whose kernel this stream thread runs
thread_local const char* t_kernel = "";            // that kernel's name
thread_local uint64_t t_block_serial = 0;          // blocks run on this thread so far

Device* device(int ordinal) {
  std::lock_guard<std::mutex> l(g_devices_m);
  return ordinal >= 0 && static_cast<size_t>(ordinal) < g_devices.size() ? g_devices[static_cast<size_t>(ordinal)]
                                                                         : nullptr;
}

Stream* stream_of(cudaStream_t s) { return reinterpret_cast<Stream*>(s); }

bool Device::copy_async(Stream& s, void* dst, const void* src, uint64_t bytes) {
  if (lost()) return false;
  const uint64_t seq = s.enqueue([this, dst, src, bytes] {
    if (!lost()) std::memcpy(dst, src, bytes);
  });
  if (pageable(dst)) s.wait(seq);
  return true;
}

struct Launch {
  std::string what;
  unsigned grid, block;
  std::function<void()> body;
  bool compute;
};

void thread_body(void* arg) { static_cast<const Launch*>(arg)->body(); }

// The blocks a launch runs: all, or for a compute kernel a seeded sample of spec.sample_blocks of them,
// the same for every launch of that kernel with that grid (so every iteration, and every emulated device
// with the same spec, computes the same tiles).
std::vector<unsigned> blocks_to_run(const Launch& l, const Spec& spec) {
  std::vector<unsigned> all(l.grid);
  for (unsigned b = 0; b < l.grid; ++b) all[b] = b;
  if (!l.compute || spec.sample_blocks == 0 || l.grid <= spec.sample_blocks) return all;
  uint64_t seed = 0x5dc5c4ee11ull ^ l.grid;
  for (char c : l.what) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  std::mt19937_64 rng(seed);
  for (unsigned i = 0; i < spec.sample_blocks; ++i) {
    std::uniform_int_distribution<unsigned> pick(i, l.grid - 1);
    std::swap(all[i], all[pick(rng)]);
  }
  all.resize(spec.sample_blocks);
  std::sort(all.begin(), all.end());
  return all;
}

double this_thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void run_launch(Device& dev, const Launch& l) {
  if (dev.lost()) return;  // nothing runs after the context is lost
  const uint64_t n = dev.next_launch();
  if (dev.spec.hang_launch && n == dev.spec.hang_launch)  // a block that never finishes: nothing releases it
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (dev.spec.fail_launch && n == dev.spec.fail_launch) {
    dev.lose(
        fmt::format("{}: cudaErrorIllegalAddress (an illegal memory access was encountered; injected: "
                    "kernel launch {} of emulated device {})",
                    l.what, n, dev.info.index));
    return;
  }
  thread_local BlockRunner runner;
  const double cpu_start = dev.spec.slow > 1 ? this_thread_cpu_seconds() : 0;
  t_launch_spec = &dev.spec;
  t_kernel = l.what.c_str();
  const unsigned sms = static_cast<unsigned>(dev.spec.sms);
  try {
    for (unsigned b : blocks_to_run(l, dev.spec)) {
      ++t_block_serial;
      runner.run(l.what.c_str(), Dim3{l.grid, 1, 1}, Dim3{l.block, 1, 1}, Dim3{b, 1, 1}, b % sms, sms, 0, thread_body,
                 const_cast<Launch*>(&l));
    }
  } catch (const std::exception& e) {  // a KernelFault, or an exception out of the kernel's code
    dev.lose(fmt::format("{}: cudaErrorLaunchFailure (unspecified launch failure): {}", l.what, e.what()));
  }
  t_launch_spec = nullptr;
  t_kernel = "";
  if (dev.spec.slow > 1) {  // a slower GPU: this thread busy for (slow - 1) times what the launch took
    const double until = cpu_start + dev.spec.slow * (this_thread_cpu_seconds() - cpu_start);
    while (this_thread_cpu_seconds() < until) {
    }
  }
}

class EmuRuntime final : public cuda::DeviceRuntime {
 public:
  explicit EmuRuntime(Device& d) : d_(d) {}
  const DeviceInfo& info() const override { return d_.info; }
  void make_current() override { t_current = &d_; }
  std::unique_ptr<cuda::DeviceProblem> prepare(const Family& f, const Case& c, std::string& why) override {
    if (f.prepare_emu) return f.prepare_emu(c);
    why = std::string("family ") + f.id +
          (std::string_view(f.device_side) == "library" ? " calls cuBLASLt, which runs only on a real GPU"
                                                        : " has no CUDA kernel (it runs on CPUs only)");
    return nullptr;
  }
  void* alloc(uint64_t bytes) override {
    d_.check_lost();
    return d_.alloc(bytes);
  }
  void free(void* p) noexcept override { d_.free(p); }
  void* alloc_host(uint64_t bytes) override { return d_.alloc_host(bytes); }
  void free_host(void* p) noexcept override { d_.free_host(p); }
  void mem_info(uint64_t& free_bytes, uint64_t& total_bytes) override {
    d_.check_lost();
    total_bytes = d_.spec.memory_bytes;
    free_bytes = total_bytes - d_.used();
  }
  cudaStream_t create_stream() override { return reinterpret_cast<cudaStream_t>(d_.create_stream()); }
  void destroy_stream(cudaStream_t s) noexcept override { d_.destroy_stream(stream_of(s)); }
  cudaEvent_t create_event() override { return reinterpret_cast<cudaEvent_t>(new Event); }
  void destroy_event(cudaEvent_t e) noexcept override { delete reinterpret_cast<Event*>(e); }
  void record(cudaEvent_t e, cudaStream_t s) override {
    d_.check_lost();
    auto* ev = reinterpret_cast<Event*>(e);
    ev->stream = stream_of(s);
    ev->seq = ev->stream->enqueue([] {});
  }
  bool done(cudaEvent_t e) override {
    d_.check_lost();
    const auto* ev = reinterpret_cast<Event*>(e);
    const bool reached = !ev->stream || ev->stream->reached(ev->seq);
    if (reached) d_.check_lost();
    return reached;
  }
  void memset_async(void* p, int value, uint64_t bytes, cudaStream_t s) override {
    d_.check_lost();
    Device& d = d_;
    stream_of(s)->enqueue([&d, p, value, bytes] {
      if (!d.lost()) std::memset(p, value, bytes);
    });
  }
  void copy_async(void* dst, const void* src, uint64_t bytes, cudaStream_t s) override {
    d_.check_lost();
    d_.copy_async(*stream_of(s), dst, src, bytes);
    d_.check_lost();
  }
  // As the CUDA runtime's (cudaMemcpyAsync on s, then cudaStreamSynchronize(s)): the copy runs on the stream's
  // thread after what was enqueued on s before it, and only that.
  void copy(void* dst, const void* src, uint64_t bytes, cudaStream_t s) override {
    d_.check_lost();
    Device& d = d_;
    Stream& st = *stream_of(s);
    st.wait(st.enqueue([&d, dst, src, bytes] {
      if (!d.lost()) std::memcpy(dst, src, bytes);
    }));
    d_.check_lost();
  }
  void copy_2d(void* dst, uint64_t dst_pitch, const void* src, uint64_t src_pitch, uint64_t width_bytes,
               uint64_t rows, cudaStream_t s) override {
    d_.check_lost();
    Device& d = d_;
    Stream& st = *stream_of(s);
    st.wait(st.enqueue([&d, dst, dst_pitch, src, src_pitch, width_bytes, rows] {
      if (d.lost()) return;
      for (uint64_t r = 0; r < rows; ++r)
        std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch,
                    width_bytes);
    }));
    d_.check_lost();
  }
  void digest_tiles(float* out, const cuda::OutputLayout& layout, uint64_t tiles, uint32_t tile_elements,
                    const uint32_t* tile_sm, cuda::DeviceFault fault, uint64_t* digests, cudaStream_t s) override {
    cuda::emu::digest_tiles(out, layout, tiles, tile_elements, tile_sm, fault, digests, s);
  }
  void flip_bits(void* tensor, uint64_t index, uint32_t mask, cudaStream_t s) override {
    cuda::emu::flip_bits(tensor, index, mask, s);
  }
  int sm_id_limit() override { return cuda::emu::sm_id_limit(); }
  void launch_hang(const volatile int* release, cudaStream_t s) override { cuda::emu::launch_hang(release, s); }
  double stream_cpu_seconds(cudaStream_t s) override { return stream_of(s)->cpu_seconds(); }
  void compute_begin(cudaStream_t s) override { stream_of(s)->sampling = true; }
  void compute_end(cudaStream_t s) override { stream_of(s)->sampling = false; }
  bool samples_blocks() const override { return d_.spec.sample_blocks != 0; }
  // About 0.3 GFLOP/s on one core, against the watchdog's 1 TFLOP/s: 10000 leaves room for a loaded machine.
  double slowness() const override { return 1e4; }
  std::string test_note(const Family& f) const override {
    for (Mode m : f.modes)
      if (m == Mode::exact || m == Mode::exact_integer) return "";
    return "emulated device: the tensor cores' rounding is the emulator's (each exact sum rounded once), not a "
           "GPU's; judged only against emulated runs";
  }

 private:
  Device& d_;
};

bool parse_uint(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  v = std::stoull(s);
  return true;
}

}  // namespace

std::string parse_specs(const std::string& text, std::vector<Spec>& out) {
  out.clear();
  uint64_t n = 0;
  if (parse_uint(text, n)) {
    if (n < 1 || n > 16) return fmt::format("emulated device count {} is not in 1..16", text);
    out.assign(n, Spec{});
    return "";
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    Spec s;
    size_t colon = std::min(item.find(':'), item.size());
    const std::string head = item.substr(0, colon);
    uint64_t cc = 0, sms = 0;
    const size_t x = head.find('x');
    if (head.rfind("sm_", 0) != 0 || x == std::string::npos || !parse_uint(head.substr(3, x - 3), cc) ||
        !parse_uint(head.substr(x + 1), sms) || cc < 50 || cc > 120 || sms < 1 || sms > 1024)
      return fmt::format("'{}': an emulated device is sm_<cc>x<sms> (sm_90x8), cc 50..120, 1..1024 SMs", item);
    s.cc_major = static_cast<int>(cc / 10);
    s.cc_minor = static_cast<int>(cc % 10);
    s.sms = static_cast<int>(sms);
    while (colon < item.size()) {
      const size_t next = std::min(item.find(':', colon + 1), item.size());
      const std::string opt = item.substr(colon + 1, next - colon - 1);
      colon = next;
      const size_t eq = opt.find('=');
      const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
      uint64_t v = 0;
      if (key == "mem" && parse_uint(value, v) && v >= 1) {
        s.memory_bytes = v << 20;
      } else if (key == "sample" && parse_uint(value, v) && v <= 65536) {
        s.sample_blocks = static_cast<unsigned>(v);
      } else if (key == "slow" && parse_uint(value, v) && v >= 2 && v <= 100) {
        s.slow = static_cast<unsigned>(v);
      } else if (key == "fail-launch" && parse_uint(value, v) && v >= 1) {
        s.fail_launch = v;
      } else if (key == "hang-launch" && parse_uint(value, v) && v >= 1) {
        s.hang_launch = v;
      } else if (key == "mma-fault") {
        uint64_t sm = 0, lane = 0, bit = 0;
        const size_t a = value.find('/'), b = a == std::string::npos ? a : value.find('/', a + 1);
        if (b == std::string::npos || !parse_uint(value.substr(0, a), sm) ||
            !parse_uint(value.substr(a + 1, b - a - 1), lane) || !parse_uint(value.substr(b + 1), bit) || sm >= sms ||
            lane > 31 || bit > 31)
          return fmt::format("'{}': mma-fault is <sm>/<lane>/<bit> (an SM of the device, lane 0..31, bit 0..31)", opt);
        s.mma_sm = static_cast<int>(sm);
        s.mma_lane = static_cast<int>(lane);
        s.mma_bit = static_cast<int>(bit);
      } else {
        return fmt::format(
            "'{}': unknown or malformed option of an emulated device (mem=<MiB>, sample=<blocks>, "
            "fail-launch=<n>, hang-launch=<n>, mma-fault=<sm>/<lane>/<bit>, slow=<2..100>)",
            opt);
      }
    }
    out.push_back(s);
    if (out.size() > 16) return "at most 16 emulated devices";
    if (comma == text.size()) break;
  }
  return "";
}

std::vector<DeviceInfo> create_devices(const std::vector<Spec>& specs) {
  std::lock_guard<std::mutex> l(g_devices_m);
  // The runtime's teardown at exit(): it waits for every device's streams (a process that leaves a kernel
  // running ends with _Exit instead).
  static const bool teardown = std::atexit([] {
    std::vector<Device*> all;
    {
      std::lock_guard<std::mutex> g(g_devices_m);
      all = g_devices;
    }
    for (Device* d : all) d->wait_idle();
  }) == 0;
  (void)teardown;
  std::vector<DeviceInfo> out;
  const size_t base = g_devices.size();
  for (size_t i = 0; i < specs.size(); ++i) {
    g_devices.push_back(new Device(specs[i], static_cast<int>(base + i)));
    out.push_back(g_devices.back()->info);
  }
  return out;
}

void launch(const char* what, unsigned grid, unsigned block, cudaStream_t s, std::function<void()> body) {
  t_last = cudaSuccess;
  Stream* st = stream_of(s);
  if (!st || grid == 0 || block == 0 || block > 1024) {
    t_last = !st ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration;
    return;
  }
  if (st->dev.lost()) {
    t_last = cudaErrorLaunchFailure;
    return;
  }
  auto l = std::make_shared<Launch>(Launch{what, grid, block, std::move(body), st->sampling});
  Device& d = st->dev;
  st->enqueue([&d, l] { run_launch(d, *l); });
}

void mma(MmaType t, float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  struct Regs {
    const uint32_t* a;
    const uint32_t* b;
    float* d;
  };
  struct Ctx {
    MmaType t;
    const Spec* spec;
    unsigned sm;
  };
  Regs mine{a, b, d};
  Ctx ctx{t, t_launch_spec, here().sm};
  warp_exchange(
      0xffffffffu, &mine,
      [](void* c, void* const* lanes) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        uint32_t ra[32][4], rb[32][2];
        float rc[32][4], rd[32][4];
        for (int l = 0; l < 32; ++l) {
          const Regs& r = *static_cast<const Regs*>(lanes[l]);
          for (int i = 0; i < 4; ++i) ra[l][i] = r.a[i], rc[l][i] = r.d[i];
          for (int i = 0; i < 2; ++i) rb[l][i] = r.b[i];
        }
        mma_sync(x.t, ra, rb, rc, rd);
        if (x.spec && x.spec->mma_sm == static_cast<int>(x.sm)) {  // the planted tensor-core fault
          uint32_t bits;
          std::memcpy(&bits, &rd[x.spec->mma_lane][0], 4);
          bits ^= 1u << x.spec->mma_bit;
          std::memcpy(&rd[x.spec->mma_lane][0], &bits, 4);
        }
        for (int l = 0; l < 32; ++l)
          for (int i = 0; i < 4; ++i) static_cast<const Regs*>(lanes[l])->d[i] = rd[l][i];
      },
      &ctx);
}

void nanosleep(unsigned ns) { std::this_thread::sleep_for(std::chrono::nanoseconds(ns)); }
const char* current_kernel() { return t_kernel; }
uint64_t block_serial() { return t_block_serial; }

}  // namespace sdc::emu

namespace sdc::cuda {

std::unique_ptr<DeviceRuntime> open_emulated_runtime(const DeviceInfo& gpu) {
  ::sdc::emu::Device* d = ::sdc::emu::device(gpu.index);
  if (!d) throw CudaError(fmt::format("no emulated device {}", gpu.index), CudaError::Kind::other);
  return std::make_unique<::sdc::emu::EmuRuntime>(*d);
}

}  // namespace sdc::cuda

// ---- the CUDA runtime calls of device-side code (cuda_emu.h), on the current emulated device ----
using sdc::emu::t_current;
using sdc::emu::t_last;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaError (emulated)";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "no current emulated device";
    case cudaErrorLaunchFailure: return "the emulated device's context is lost";
    default: return "emulated device error";
  }
}
cudaError_t cudaGetLastError() {
  const cudaError_t e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaGetDevice(int* device) {
  if (!t_current) return cudaErrorInvalidDevice;
  *device = t_current->info.index;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, sdc_emu_cudaDeviceAttr attr, int device) {
  const sdc::emu::Device* d = sdc::emu::device(device);
  if (!d) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMultiProcessorCount: *value = d->spec.sms; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *value = d->spec.cc_major; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = d->spec.cc_minor; return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}
cudaError_t sdc_emu_func_attributes(cudaFuncAttributes* attr) {
  if (!t_current) return cudaErrorInvalidDevice;
  attr->binaryVersion = attr->ptxVersion = t_current->spec.cc_major * 10 + t_current->spec.cc_minor;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (!t_current) return cudaErrorInvalidDevice;
  try {
    *p = t_current->alloc(bytes);
    return cudaSuccess;
  } catch (const sdc::cuda::CudaError& e) {
    return sdc::emu::to_emu_error(e.kind());
  }
}
cudaError_t cudaFree(void* p) {
  if (!t_current) return cudaErrorInvalidDevice;
  t_current->free(p);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  if (!t_current) return cudaErrorInvalidDevice;
  *s = reinterpret_cast<cudaStream_t>(t_current->create_stream());
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  auto* st = sdc::emu::stream_of(s);
  st->dev.destroy_stream(st);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  auto* st = sdc::emu::stream_of(s);
  st->drain();
  return st->dev.lost() ? cudaErrorLaunchFailure : cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  auto* st = sdc::emu::stream_of(s);
  if (st->dev.lost()) return cudaErrorLaunchFailure;
  return st->idle() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, sdc_emu_cudaMemcpyKind, cudaStream_t s) {
  auto* st = sdc::emu::stream_of(s);
  return st->dev.copy_async(*st, dst, src, bytes) ? cudaSuccess : cudaErrorLaunchFailure;
}
