// The block runner's fault messages: which kernel, block and threads, the collective as the kernel called
// it, and for a deadlock what every group of waiting threads waits at.
#include <fmt/format.h>

#include <string>

#include "src/backends/emu/block_impl.h"

namespace sdc::emu::fiber {

namespace {

std::string thread_idx(const ThreadContext& t) {
  return fmt::format("({},{},{})", t.thread_idx.x, t.thread_idx.y, t.thread_idx.z);
}

// What blocked thread i waits at.
std::string waiting_at(const Impl& b, unsigned i) {
  if ((b.at_barrier[i / 64] >> (i % 64)) & 1u)
    return fmt::format("__syncthreads ({} of the {} threads still running have arrived)", b.arrived, b.live);
  const Warp& w = b.warps[i / WARP_SIZE];
  const uint32_t bit = 1u << (i % WARP_SIZE);
  for (unsigned k = 0; k < w.npending; ++k) {
    const Pending& p = w.pending[k];
    if (p.arrived & bit)
      return fmt::format("{}, which waits for {} of warp {}", call_name(p), lane_list(p.mask & ~p.arrived),
                         i / WARP_SIZE);
  }
  return "nothing known";
}

}  // namespace

std::string lane_list(uint32_t lanes) {
  std::string s;
  for (unsigned l = 0; l < WARP_SIZE;) {
    if (!((lanes >> l) & 1u)) {
      ++l;
      continue;
    }
    unsigned e = l;
    while (e + 1 < WARP_SIZE && ((lanes >> (e + 1)) & 1u)) ++e;
    if (!s.empty()) s += ',';
    s += e == l ? fmt::format("{}", l) : fmt::format("{}-{}", l, e);
    l = e + 1;
  }
  return fmt::format("{} {}", __builtin_popcount(lanes) == 1 ? "lane" : "lanes", s);
}

std::string prefix(const Impl& b) {
  return fmt::format("kernel {} block ({},{},{})", b.kernel, b.block_idx.x, b.block_idx.y, b.block_idx.z);
}

// "thread 33 [threadIdx (1,1,0), warp 1 lane 1]" or "threads 33-63 [threadIdx (1,1,0)..(31,1,0), warp 1 lanes 1-31]".
std::string threads(const Impl& b, unsigned first, unsigned last) {
  const ThreadContext& f = b.ctx[first];
  const ThreadContext& l = b.ctx[last];
  if (first == last)
    return fmt::format("thread {} [threadIdx {}, warp {} lane {}]", first, thread_idx(f), f.warp, f.lane);
  const std::string where = f.warp == l.warp ? fmt::format("warp {} lanes {}-{}", f.warp, f.lane, l.lane)
                                             : fmt::format("warps {}-{}", f.warp, l.warp);
  return fmt::format("threads {}-{} [threadIdx {}..{}, {}]", first, last, thread_idx(f), thread_idx(l), where);
}

std::string call_name(Kind kind, Shfl mode, uint32_t mask, uint32_t width) {
  switch (kind) {
    case Kind::syncwarp: return fmt::format("__syncwarp(mask {:#010x})", mask);
    case Kind::ballot: return fmt::format("__ballot_sync(mask {:#010x})", mask);
    case Kind::exchange: return fmt::format("a warp exchange (mma.sync) with mask {:#010x}", mask);
    case Kind::shfl32:
    case Kind::shfl64: {
      const char* name = mode == Shfl::idx    ? "__shfl_sync"
                         : mode == Shfl::up   ? "__shfl_up_sync"
                         : mode == Shfl::down ? "__shfl_down_sync"
                                              : "__shfl_xor_sync";
      return fmt::format("{}(mask {:#010x}, width {}{})", name, mask, width, kind == Kind::shfl64 ? ", 64-bit" : "");
    }
  }
  return "?";
}

std::string deadlock_message(const Impl& b) {
  std::string s = fmt::format("{}: deadlock: {} of {} threads have not returned and none can go on:", prefix(b),
                              b.n - b.finished, b.n);
  constexpr unsigned MAX_GROUPS = 24;
  unsigned groups = 0, more = 0;
  for (unsigned i = 0; i < b.n;) {
    if (b.has_returned(i)) {
      ++i;
      continue;
    }
    const std::string what = waiting_at(b, i);
    unsigned e = i;
    while (e + 1 < b.n && !b.has_returned(e + 1) && waiting_at(b, e + 1) == what) ++e;
    if (groups++ < MAX_GROUPS)
      s += fmt::format(" {} wait at {};", threads(b, i, e), what);
    else
      ++more;
    i = e + 1;
  }
  if (more) s += fmt::format(" and {} more groups of threads;", more);
  s.pop_back();
  return s;
}

}  // namespace sdc::emu::fiber
