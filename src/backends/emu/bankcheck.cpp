// The bank-conflict counter (bankcheck.h): each stream thread's requests of the block it is running, gathered
// per (warp, site, how many times the lane has reached the site), counted when the thread starts another block
// or when sites() asks. Linked only into the racecheck_tests executable, beside racecheck.cpp.
#include "src/backends/emu/bankcheck.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "src/backends/emu/block.h"
#include "src/backends/emu/emu_device.h"

namespace sdc::emu::bankcheck {
namespace {

constexpr unsigned kBanks = 32, kBankBytes = 4, kSectorBytes = 32;

// A warp-wide request being gathered: each lane's byte offset in shared memory, or its global address (-1: none yet).
struct Request {
  int64_t offsets[WARP_SIZE];
  unsigned bytes = 0;
  bool write = false;
};

// A request's site, warp and occurrence, and its memory (a helper left out of line may access both).
struct Key {
  uintptr_t pc;
  uint32_t warp, occurrence;
  bool global;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<uintptr_t>()(k.pc) ^ (static_cast<size_t>(k.warp) << 48) ^
           (static_cast<size_t>(k.occurrence) << 20) ^ static_cast<size_t>(k.global);
  }
};

// One stream thread's records of the block it runs. Its mutex is held by that thread while it records and by
// sites() or start() while they read or clear it.
struct Log {
  std::mutex m;
  uint64_t block = 0;  // block_serial() of the block recorded
  std::string kernel;
  std::vector<std::unordered_map<uintptr_t, uint32_t>> reached;  // per thread of the block: per site, how often
  std::unordered_map<Key, Request, KeyHash> requests;
};

// Totals per site: (kernel, pc, write, bytes, global).
using SiteKey = std::tuple<std::string, uintptr_t, bool, unsigned, bool>;
struct Total {
  uint64_t requests = 0, wavefronts = 0, ideal = 0;
  unsigned worst = 0;
  std::string example;
};

std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_uncounted{0};
std::mutex g_m;  // guards g_logs and g_totals; taken before a Log's own mutex, never after
std::vector<std::shared_ptr<Log>> g_logs;
std::map<SiteKey, Total> g_totals;
thread_local std::shared_ptr<Log> t_log;
// The watched global ranges [lo, hi): written while no kernel runs, read by every stream thread.
constexpr unsigned kMaxRanges = 16;
std::pair<uintptr_t, uintptr_t> g_ranges[kMaxRanges];
std::atomic<unsigned> g_range_count{0};

// The access sizes one GPU instruction moves, which the model knows.
bool modelled(unsigned n) { return n == 1 || n == 2 || n == 4 || n == 8 || n == 16; }

// Drops the log's requests and visit counts.
void clear(Log& log) {
  log.requests.clear();
  for (auto& r : log.reached) r.clear();
}

std::string lanes_text(const Request& r) {
  std::string s;
  for (unsigned l = 0; l < WARP_SIZE; ++l)
    if (r.offsets[l] >= 0) s += fmt::format("{}{}:{}", s.empty() ? "" : " ", l, r.offsets[l]);
  return s;
}

// Counts the log's requests into g_totals and empties it. Holds g_m and log.m.
void flush(Log& log) {
  // In a fixed order, so that a site's example is the same on every run: by warp, then by when it was reached.
  std::vector<std::pair<Key, const Request*>> order;
  order.reserve(log.requests.size());
  for (const auto& [key, r] : log.requests) order.emplace_back(key, &r);
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return std::tie(x.first.warp, x.first.occurrence, x.first.pc, x.first.global) <
           std::tie(y.first.warp, y.first.occurrence, y.first.pc, y.first.global);
  });
  for (const auto& [key, rp] : order) {
    const Request& r = *rp;
    unsigned ideal = 0;
    const unsigned w = key.global ? sectors(r.offsets, r.bytes, ideal) : wavefronts(r.offsets, r.bytes, ideal);
    Total& t = g_totals[SiteKey{log.kernel, key.pc, r.write, r.bytes, key.global}];
    ++t.requests, t.wavefronts += w, t.ideal += ideal;
    if (w > t.worst || t.example.empty()) t.worst = w, t.example = lanes_text(r);  // the first of the worst
  }
  clear(log);
}

Log& my_log() {
  if (!t_log) {
    t_log = std::make_shared<Log>();
    std::lock_guard<std::mutex> g(g_m);
    g_logs.push_back(t_log);
  }
  return *t_log;
}

}  // namespace

bool on() { return g_on.load(std::memory_order_relaxed); }

uint64_t uncounted() { return g_uncounted; }

void start() {
  std::lock_guard<std::mutex> g(g_m);
  g_uncounted = 0;
  for (auto& log : g_logs) {
    std::lock_guard<std::mutex> l(log->m);
    clear(*log);
  }
  g_totals.clear();
  g_on = true;
}

void stop() { g_on = false; }

namespace {

// Adds the calling lane's access to its warp's request.
void add(int64_t offset, unsigned n, bool write, const void* pc, bool global) {
  const ThreadContext* t = current_thread;
  if (!t) return;
  if (!modelled(n)) {
    ++g_uncounted;
    return;
  }
  Log& log = my_log();
  const uint64_t block = block_serial();
  if (log.block != block) {  // a new block on this thread: count the last one's requests first
    std::lock_guard<std::mutex> g(g_m);
    std::lock_guard<std::mutex> l(log.m);
    flush(log);
    log.block = block;
    log.kernel = current_kernel();
  }
  std::lock_guard<std::mutex> l(log.m);
  if (log.reached.size() <= t->linear) log.reached.resize(t->linear + 1);
  const auto site = reinterpret_cast<uintptr_t>(pc);
  const uint32_t occurrence = log.reached[t->linear][site]++;
  auto [it, fresh] = log.requests.try_emplace(Key{site, t->warp, occurrence, global});
  Request& r = it->second;
  if (fresh) {
    std::fill(std::begin(r.offsets), std::end(r.offsets), int64_t{-1});
    r.bytes = n, r.write = write;
  }
  r.bytes = std::max(r.bytes, n);
  r.offsets[t->lane] = offset;
}

}  // namespace

void record(int64_t offset, unsigned n, bool write, const void* pc) { add(offset, n, write, pc, false); }

void watch_global(const void* p, uint64_t bytes) {
  if (on()) throw std::logic_error("bankcheck: a global range watched while counting");
  const unsigned i = g_range_count.load();
  if (i == kMaxRanges) throw std::logic_error("bankcheck: more than 16 watched ranges");
  const auto lo = reinterpret_cast<uintptr_t>(p);
  g_ranges[i] = {lo, lo + bytes};
  g_range_count.store(i + 1, std::memory_order_release);
}

void unwatch_global() {
  if (on()) throw std::logic_error("bankcheck: the global ranges dropped while counting");
  g_range_count.store(0, std::memory_order_release);
}

void record_global(uintptr_t a, unsigned n, bool write, const void* pc) {
  if (!on()) return;
  const unsigned count = g_range_count.load(std::memory_order_acquire);
  for (unsigned i = 0; i < count; ++i)
    if (a >= g_ranges[i].first && a < g_ranges[i].second) return add(static_cast<int64_t>(a), n, write, pc, true);
}

unsigned sectors(const int64_t (&offsets)[32], unsigned n, unsigned& ideal) {
  if (!modelled(n)) throw std::invalid_argument("bankcheck: a request of " + std::to_string(n) + "-byte accesses");
  int64_t starts[WARP_SIZE];
  unsigned count = 0;
  for (unsigned l = 0; l < WARP_SIZE; ++l)
    if (offsets[l] >= 0) starts[count++] = offsets[l];
  std::sort(starts, starts + count);
  uint64_t bytes = 0;
  unsigned total = 0;
  int64_t end = -1, last_sector = -1;  // the bytes counted so far end at `end`; the last sector counted
  for (unsigned i = 0; i < count; ++i) {
    const int64_t from = std::max(starts[i], end), to = starts[i] + n;  // the new bytes [from, to)
    if (from >= to) continue;
    bytes += static_cast<uint64_t>(to - from);
    end = to;
    const int64_t first = std::max(from / kSectorBytes, last_sector + 1), last = (to - 1) / kSectorBytes;
    if (last >= first) total += static_cast<unsigned>(last - first + 1), last_sector = last;
  }
  ideal = static_cast<unsigned>((bytes + kSectorBytes - 1) / kSectorBytes);
  return total;
}

unsigned wavefronts(const int64_t (&offsets)[32], unsigned n, unsigned& ideal) {
  if (!modelled(n)) throw std::invalid_argument("bankcheck: a request of " + std::to_string(n) + "-byte accesses");
  const unsigned per = n <= kBankBytes ? WARP_SIZE : WARP_SIZE * kBankBytes / n;  // lanes served together
  unsigned total = 0;
  ideal = 0;
  for (unsigned p = 0; p < WARP_SIZE; p += per) {
    int64_t words[WARP_SIZE * 2];  // a part's lanes touch at most 32 words aligned, 64 misaligned
    unsigned count = 0;
    for (unsigned l = p; l < p + per; ++l) {
      if (offsets[l] < 0) continue;
      for (int64_t w = offsets[l] / kBankBytes; w <= (offsets[l] + n - 1) / kBankBytes; ++w) words[count++] = w;
    }
    if (count == 0) continue;
    ++ideal;
    std::sort(words, words + count);
    count = static_cast<unsigned>(std::unique(words, words + count) - words);
    unsigned in_bank[kBanks] = {};
    unsigned most = 0;
    for (unsigned i = 0; i < count; ++i) most = std::max(most, ++in_bank[words[i] % kBanks]);
    total += most;
  }
  return total;
}

std::vector<Site> sites() {
  std::lock_guard<std::mutex> g(g_m);
  for (auto& log : g_logs) {
    std::lock_guard<std::mutex> l(log->m);
    flush(*log);
  }
  std::vector<Site> out;
  for (const auto& [key, t] : g_totals) {
    const auto& [kernel, pc, write, bytes, global] = key;
    Dl_info info{};
    const uintptr_t base =
        dladdr(reinterpret_cast<void*>(pc), &info) != 0 ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 0;
    out.push_back({kernel, pc - base, write, global, bytes, t.requests, t.wavefronts, t.ideal, t.example});
  }
  return out;
}

std::string Site::describe() const {
  return fmt::format(
      "{} in kernel {} at pc {:#x}: {} requests of {} bytes per lane take {} {}, {} at best; its worst request, "
      "lane:{}: {}",
      write ? "stores" : "loads", kernel, pc, requests, bytes, wavefronts,
      global ? "global-memory sectors" : "shared-memory wavefronts", ideal, global ? "address" : "byte offset",
      example);
}

}  // namespace sdc::emu::bankcheck
