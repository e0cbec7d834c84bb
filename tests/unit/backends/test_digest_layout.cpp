// The device digest pass (src/backends/cuda/device_util.cu, digest_kernel) on the emulated device: the
// same source the GPU runs, compiled for the emulator. Each thread walks its elements of a tile by a fixed
// (row, column) step with one carry instead of dividing per element; these tests pin that walk to the host
// digest of the tile gathered by plain row and column loops, for contiguous tiles and for tiles of a
// row-major matrix (a cuBLASLt family's output) whose width does not divide the block's 256 threads, whose
// rows are padded (ld above the matrix width) and whose tiles hold fewer or more elements than the block
// has threads; and the fault hook flips the element where the layout puts it, in the tile it names only,
// and a cluster or stuck-at fault (src/spec/fault.h) exactly the words it names; the input pass applies a
// fault to a tensor and undoes it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "tests/unit/catch.h"
#include "src/backends/cuda/device_memory.h"
#include "src/backends/cuda/device_runtime.h"
#include "src/backends/emu/emu_device.h"
#include "src/spec/digest.h"
#include "src/spec/fault.h"

using namespace sdc;

namespace {

struct Matrix {
  uint64_t tile_rows_n, tiles_per_row;  // tiles down and across
  uint32_t tile_rows, tile_cols;
  uint64_t ld;                         // 0: contiguous tiles of tile_rows * tile_cols elements
};

float value_at(uint64_t i) { return bits_float(static_cast<uint32_t>(mix64(i + 17) >> 33) | 0x3f800000u); }

// Host digests of every tile, each gathered by rows and columns (no use of OutputLayout::index).
std::vector<uint64_t> host_digests(const std::vector<float>& buf, const Matrix& m) {
  const uint32_t te = m.tile_rows * m.tile_cols;
  std::vector<uint64_t> d;
  std::vector<float> tile(te);
  for (uint64_t t = 0; t < m.tile_rows_n * m.tiles_per_row; ++t) {
    for (uint32_t r = 0; r < m.tile_rows; ++r)
      for (uint32_t c = 0; c < m.tile_cols; ++c)
        tile[r * m.tile_cols + c] =
            m.ld ? buf[((t / m.tiles_per_row) * m.tile_rows + r) * m.ld + (t % m.tiles_per_row) * m.tile_cols + c]
                 : buf[t * te + r * m.tile_cols + c];
    d.push_back(tile_digest(t, tile.data(), te));
  }
  return d;
}

// The device pass over `buf` (with `fault`); returns the digests, and the buffer as the pass left it.
std::vector<uint64_t> device_digests(std::vector<float>& buf, const Matrix& m, cuda::DeviceFault fault) {
  static const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  cuda::Stream s(*rt);
  const uint64_t tiles = m.tile_rows_n * m.tiles_per_row;
  const uint32_t te = m.tile_rows * m.tile_cols;
  cuda::DeviceBuffer out(*rt, buf.size() * 4), sm(*rt, tiles * 4), dig(*rt, tiles * 8);
  rt->copy(out.get(), buf.data(), buf.size() * 4, s.get());
  std::vector<uint32_t> sms(tiles, 0);
  rt->copy(sm.get(), sms.data(), tiles * 4, s.get());
  cuda::OutputLayout layout;
  if (m.ld) {
    layout.tiles_per_row = m.tiles_per_row;
    layout.tile_rows = m.tile_rows;
    layout.tile_cols = m.tile_cols;
    layout.ld = m.ld;
  }
  rt->digest_tiles(out.as<float>(), layout, tiles, te, sm.as<uint32_t>(), fault, dig.as<uint64_t>(), s.get());
  std::vector<uint64_t> d(tiles);
  rt->copy(d.data(), dig.get(), tiles * 8, s.get());
  rt->copy(buf.data(), out.get(), buf.size() * 4, s.get());
  return d;
}

std::vector<float> filled(const Matrix& m) {
  const uint64_t n = m.ld ? m.tile_rows_n * m.tile_rows * m.ld
                          : m.tile_rows_n * m.tiles_per_row * m.tile_rows * m.tile_cols;
  std::vector<float> b(n);
  for (uint64_t i = 0; i < n; ++i) b[i] = value_at(i);
  return b;
}

}  // namespace

TEST_CASE("the device digest pass matches the host digest of every layout's tiles", "[emu][digest]") {
  const Matrix shapes[] = {
      {2, 3, 16, 16, 0},        // contiguous, 256 elements: one per thread
      {1, 5, 8, 10, 0},         // contiguous, 80 elements: fewer than the threads
      {2, 2, 33, 20, 0},        // contiguous, 660 elements: the walk wraps twice, not at a row's end
      {2, 3, 16, 24, 3 * 24},   // matrix, 24 columns (256 = 10 x 24 + 16: the carry), unpadded
      {3, 2, 40, 24, 2 * 24 + 5},  // matrix, padded rows, 960 elements a tile
      {2, 2, 64, 64, 2 * 64},   // matrix, a cuBLASLt tile
      {2, 4, 3, 7, 4 * 7 + 1},  // matrix, 21 elements a tile, padded
  };
  for (const Matrix& m : shapes) {
    CAPTURE(m.tile_rows, m.tile_cols, m.ld);
    std::vector<float> buf = filled(m);
    const std::vector<float> before = buf;
    const std::vector<uint64_t> want = host_digests(buf, m);
    CHECK(device_digests(buf, m, cuda::DeviceFault{}) == want);
    CHECK(std::memcmp(buf.data(), before.data(), buf.size() * 4) == 0);  // no fault: the output untouched
  }
}

TEST_CASE("the digest pass's fault flips the element where the layout puts it, in that tile only", "[emu][digest]") {
  const Matrix m{3, 2, 40, 24, 2 * 24 + 5};
  const uint32_t te = m.tile_rows * m.tile_cols;
  for (const uint32_t offset : {0u, 23u, 24u, 255u, 256u, te - 1}) {
    for (const uint64_t tile : {uint64_t{0}, uint64_t{3}, uint64_t{5}}) {
      CAPTURE(offset, tile);
      std::vector<float> buf = filled(m);
      const std::vector<float> before = buf;
      cuda::DeviceFault f;
      f.word.mask = 1u << 9;
      f.offset = offset;
      f.tile = tile;
      const std::vector<uint64_t> got = device_digests(buf, m, f);
      // The one element changed is the fault's: row offset / 24, column offset % 24 of that tile.
      const uint64_t at = ((tile / m.tiles_per_row) * m.tile_rows + offset / m.tile_cols) * m.ld +
                          (tile % m.tiles_per_row) * m.tile_cols + offset % m.tile_cols;
      uint64_t changed = 0;
      for (uint64_t i = 0; i < buf.size(); ++i) changed += float_bits(buf[i]) != float_bits(before[i]);
      CHECK(changed == 1);
      CHECK((float_bits(buf[at]) ^ float_bits(before[at])) == f.word.mask);
      // The digests are the host's of the faulted output: the faulted tile's differs from the clean one.
      CHECK(got == host_digests(buf, m));
      CHECK(got[tile] != host_digests(before, m)[tile]);
    }
  }
}

TEST_CASE("the digest pass's cluster and stuck-at faults take exactly the words they name", "[emu][digest]") {
  const Matrix m{3, 2, 40, 24, 2 * 24 + 5};
  const uint32_t te = m.tile_rows * m.tile_cols;
  struct Kind {
    uint32_t kind, mask, count, stride, offset;
  };
  // value_at's words are in [1, 2): sign bit 0, bit 30 0, bit 29 1 (exponent 127 = 0x7f: bits 23..29 set).
  const Kind kinds[] = {
      {FAULT_FLIP, 0x00400003u, 1, 1, 100},      // a multi-bit flip
      {FAULT_FLIP, 1u << 5, 32, 1, 64},          // a warp-aligned cluster: offsets 64..95
      {FAULT_STUCK_AT_1, 1u << 31, 32, 1, 32},   // every word of a warp reads negative
      {FAULT_STUCK_AT_1, 1u << 31, 8, 96, 7},    // periodic in address: every 96th word
      {FAULT_STUCK_AT_0, 1u << 29, 4, 5, te - 16},  // bit 29 stuck at 0, to the tile's last words
  };
  for (const Kind& k : kinds) {
    CAPTURE(k.kind, k.mask, k.count, k.stride, k.offset);
    std::vector<float> buf = filled(m);
    const std::vector<float> before = buf;
    cuda::DeviceFault f;
    f.word = WordFault{k.mask, k.kind, k.count, k.stride};
    f.offset = k.offset;
    f.tile = 4;
    const std::vector<uint64_t> got = device_digests(buf, m, f);
    std::vector<uint64_t> want_changed;
    for (uint32_t j = 0; j < k.count; ++j) {
      const uint32_t o = k.offset + j * k.stride;
      want_changed.push_back(((4 / m.tiles_per_row) * m.tile_rows + o / m.tile_cols) * m.ld +
                             (4 % m.tiles_per_row) * m.tile_cols + o % m.tile_cols);
    }
    std::vector<uint64_t> changed;
    for (uint64_t i = 0; i < buf.size(); ++i)
      if (float_bits(buf[i]) != float_bits(before[i])) changed.push_back(i);
    std::sort(want_changed.begin(), want_changed.end());
    CHECK(changed == want_changed);
    for (const uint64_t i : changed) {
      const uint32_t a = float_bits(before[i]), b = float_bits(buf[i]);
      if (k.kind == FAULT_FLIP) CHECK((a ^ b) == k.mask);
      if (k.kind == FAULT_STUCK_AT_1) CHECK(b == (a | k.mask));
      if (k.kind == FAULT_STUCK_AT_0) CHECK(b == (a & ~k.mask));
    }
    CHECK(got == host_digests(buf, m));
    for (uint64_t t = 0; t < got.size(); ++t) CHECK((got[t] != host_digests(before, m)[t]) == (t == 4));
  }
}

TEST_CASE("a stuck-at fault on words that already hold its value changes nothing", "[emu][digest]") {
  const Matrix m{2, 2, 16, 16, 0};
  std::vector<float> buf = filled(m);
  const std::vector<float> before = buf;
  cuda::DeviceFault f;
  f.word = WordFault{1u << 29, FAULT_STUCK_AT_1, 32, 1};  // bit 29 is set in every word of [1, 2)
  f.offset = 0;
  f.tile = 1;
  CHECK(device_digests(buf, m, f) == host_digests(before, m));
  CHECK(std::memcmp(buf.data(), before.data(), buf.size() * 4) == 0);
}

TEST_CASE("the input fault pass applies a fault to a tensor's words and restores them", "[emu][digest]") {
  static const std::vector<DeviceInfo> gpus = emu::create_devices({emu::Spec{}});
  auto rt = cuda::open_emulated_runtime(gpus[0]);
  rt->make_current();
  cuda::Stream s(*rt);
  std::vector<float> host(1000);
  for (uint64_t i = 0; i < host.size(); ++i) host[i] = value_at(i);
  cuda::DeviceBuffer t(*rt, host.size() * 4), saved(*rt, MAX_FAULT_COUNT * 4);
  rt->copy(t.get(), host.data(), host.size() * 4, s.get());
  const WordFault f{1u << 31, FAULT_STUCK_AT_1, 10, 37};
  rt->input_fault(t.get(), 300, f, saved.get(), false, s.get());
  std::vector<float> faulty(host.size());
  rt->copy(faulty.data(), t.get(), host.size() * 4, s.get());
  for (uint64_t i = 0; i < host.size(); ++i) {
    const bool hit = i >= 300 && (i - 300) % 37 == 0 && (i - 300) / 37 < 10;
    CAPTURE(i);
    CHECK(float_bits(faulty[i]) == (hit ? float_bits(host[i]) | (1u << 31) : float_bits(host[i])));
  }
  rt->input_fault(t.get(), 300, f, saved.get(), true, s.get());
  std::vector<float> back(host.size());
  rt->copy(back.data(), t.get(), host.size() * 4, s.get());
  CHECK(std::memcmp(back.data(), host.data(), host.size() * 4) == 0);
}
