// The tensor-parallel exchange between a node's GPUs (tp_exchange.h).
#include "src/backends/cuda/tp_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace sdc::cuda {

TpExchange::TpExchange(std::vector<std::string> names) : names_(std::move(names)), ranks_(names_.size()) {}

bool TpExchange::join(int rank, uint64_t k, Clock::time_point limit, const std::function<bool()>& stop,
                      std::string& why) {
  std::unique_lock<std::mutex> lock(m_);
  ranks_.at(static_cast<size_t>(rank)).joined = static_cast<int64_t>(k);
  cv_.notify_all();
  for (;;) {
    bool all = true;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const Rank& p = ranks_[r];
      if (p.joined >= static_cast<int64_t>(k)) continue;
      if (p.ended) {
        why = p.joined < 0 ? fmt::format("{} (rank {} of the tensor-parallel group) did not run the case: {}", names_[r],
                                         r, p.why)
                           : fmt::format("{} (rank {} of the tensor-parallel group) ended the case after {} iteration{}: {}",
                                         names_[r], r, p.joined + 1, p.joined == 0 ? "" : "s", p.why);
        return false;
      }
      all = false;
    }
    if (all) return true;
    if (stop && stop()) {
      why = "the run stopped while this GPU waited for its tensor-parallel peers";
      return false;
    }
    if (Clock::now() >= limit) {
      why = "its tensor-parallel peers did not start the case in time";
      return false;
    }
    cv_.wait_until(lock, std::min(limit, Clock::now() + std::chrono::milliseconds(100)));
  }
}

void TpExchange::send(int rank, uint64_t seq, const float* data, uint64_t n) {
  std::lock_guard<std::mutex> lock(m_);
  Message& msg = box_[{rank, seq}];
  msg.data.assign(data, data + n);
  msg.readers = ranks() - 1;
  cv_.notify_all();
}

void TpExchange::receive(int rank, int src, uint64_t seq, float* out, uint64_t n, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    if (const auto it = box_.find({src, seq}); it != box_.end()) {
      if (it->second.data.size() != n)
        throw TpError(fmt::format("tensor-parallel exchange: {} sent {} values where {} expects {}", names_.at(src),
                                  it->second.data.size(), names_.at(static_cast<size_t>(rank)), n));
      std::memcpy(out, it->second.data.data(), n * sizeof(float));
      if (--it->second.readers <= 0) box_.erase(it);
      return;
    }
    const Rank& p = ranks_.at(static_cast<size_t>(src));
    if (p.ended)
      throw TpError(fmt::format("tensor-parallel exchange: {} (rank {}) stopped before sending its partial: {}",
                                names_[static_cast<size_t>(src)], src, p.why));
    if (Clock::now() >= deadline)
      throw TpError(fmt::format("tensor-parallel exchange: {} (rank {}) did not send its partial within the "
                                "watchdog's deadline",
                                names_[static_cast<size_t>(src)], src));
    cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
  }
}

void TpExchange::end(int rank, const std::string& why) {
  std::lock_guard<std::mutex> lock(m_);
  Rank& p = ranks_.at(static_cast<size_t>(rank));
  if (!p.ended) {
    p.ended = true;
    p.why = why;
  }
  cv_.notify_all();
}

std::shared_ptr<TpExchange> TpGroups::get(const std::string& case_id, int group, const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(m_);
  auto& ex = groups_[{case_id, group}];
  if (!ex) {
    ex = std::make_shared<TpExchange>(names);
    for (const auto& [key, why] : abandoned_)  // first: a rank's first end is the one it keeps
      if (key.first == case_id) end_slot(*ex, group, key.second, why);
    for (size_t slot : closed_) end_slot(*ex, group, slot, "its run ended before it reached the case");
  }
  return ex;
}

void TpGroups::end_slot(TpExchange& ex, int group, size_t slot, const std::string& why) {
  const auto ranks = static_cast<size_t>(ex.ranks());
  if (slot / ranks == static_cast<size_t>(group)) ex.end(static_cast<int>(slot % ranks), why);
}

void TpGroups::abandon(const std::string& case_id, size_t slot, const std::string& why) {
  std::lock_guard<std::mutex> lock(m_);
  abandoned_.emplace(std::make_pair(case_id, slot), why);
  for (auto& [key, ex] : groups_)
    if (key.first == case_id) end_slot(*ex, key.second, slot, why);
}

void TpGroups::close(size_t slot) {
  std::lock_guard<std::mutex> lock(m_);
  closed_.insert(slot);
  for (auto& [key, ex] : groups_) end_slot(*ex, key.second, slot, "its run ended before it reached the case");
}

}  // namespace sdc::cuda
