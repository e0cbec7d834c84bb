// The emulated device (emu_device.h): the list of devices, their specs and their DeviceRuntime
// (src/backends/cuda/device_runtime.h). The device's memory and streams are emu_device_impl.h's; kernel
// launches are emu_launch.cpp's; the CUDA runtime calls of device-side code are emu_cuda_api.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "src/backends/cuda/device_passes.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/emu/emu_device_impl.h"

namespace sdc::emu::detail {

namespace {

std::mutex g_devices_m;
// Every emulated device of the process, by ordinal. Never freed, nor is the list: a stream thread may still
// run a kernel the watchdog gave up on when the process exits.
std::vector<Device*>& g_devices = *new std::vector<Device*>;

}  // namespace

__thread Device* t_current = nullptr;
__thread cudaError_t t_last = cudaSuccess;

Device* device(int ordinal) {
  std::lock_guard<std::mutex> l(g_devices_m);
  return ordinal >= 0 && static_cast<size_t>(ordinal) < g_devices.size() ? g_devices[static_cast<size_t>(ordinal)]
                                                                         : nullptr;
}

bool Device::copy_async(Stream& s, void* dst, const void* src, uint64_t bytes) {
  if (lost()) return false;
  const uint64_t seq = s.enqueue([this, dst, src, bytes] {
    if (!lost()) std::memcpy(dst, src, bytes);
  });
  if (pageable(dst)) s.wait(seq);
  return true;
}

namespace {

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
  void copy_2d(void* dst, uint64_t dst_pitch, const void* src, uint64_t src_pitch, uint64_t width_bytes, uint64_t rows,
               cudaStream_t s) override {
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
  void input_fault(void* tensor, uint64_t first, WordFault fault, void* saved, bool restore, cudaStream_t s) override {
    cuda::emu::input_fault(tensor, first, fault, saved, restore, s);
  }
  int sm_id_limit() override { return cuda::emu::sm_id_limit(); }
  void launch_hang(const volatile int* release, cudaStream_t s) override { cuda::emu::launch_hang(release, s); }
  double stream_cpu_seconds(cudaStream_t s) override { return stream_of(s)->cpu_seconds(); }
  void compute_begin(cudaStream_t s) override { stream_of(s)->sampling = true; }
  void compute_end(cudaStream_t s) override { stream_of(s)->sampling = false; }
  bool samples_blocks() const override { return d_.spec.sample_blocks != 0; }
  // About 0.3 GFLOP/s on one core, against the watchdog's 1 TFLOP/s: 10000 leaves room for a loaded machine.
  double slowness() const override { return 1e4; }
  std::string test_note(const Family& f, Mode mode) const override {
    if (has_cpu_golden(mode)) return "";
    return fmt::format("emulated device: {}, not a GPU's; judged only against emulated runs",
                       f.emulated_arithmetic
                           ? f.emulated_arithmetic
                           : "the tensor cores' rounding is the emulator's (each exact sum rounded once)");
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

}  // namespace sdc::emu::detail

namespace sdc::emu {

using namespace detail;

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

}  // namespace sdc::emu

namespace sdc::cuda {

std::unique_ptr<DeviceRuntime> open_emulated_runtime(const DeviceInfo& gpu) {
  ::sdc::emu::detail::Device* d = ::sdc::emu::detail::device(gpu.index);
  if (!d) throw CudaError(fmt::format("no emulated device {}", gpu.index), CudaError::Kind::other);
  return std::make_unique<::sdc::emu::detail::EmuRuntime>(*d);
}

}  // namespace sdc::cuda
