// The tensor-parallel exchange between the GPUs of a node (the training-step replay's tp cases, docs/gpu.md
// "Tensor parallelism across GPUs"): the GPU executors are one host thread per GPU with nothing shared per case,
// so a case split over R GPUs meets here. GPU slot s (its place among the run's GPUs) is rank s % R of group s / R;
// each rank sends its partial of every split layer (a message, numbered in the order every rank computes them)
// and receives its peers', through host memory. Plain C++ (no CUDA): a unit test drives it with threads
// (tests/unit/backends/test_tp_exchange.cpp).
//
// Nothing here waits without an end: a rank waits for its peers to start an iteration until they do, one of them
// ends the case (or its GPU's run ends: close), or the run stops; for a message until it comes, its sender ends, or
// the iteration's watchdog deadline passes. A rank that cannot go on says why (end), and its peers stop waiting.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sdc::cuda {

// A peer ended the case, or did not send in time: the iteration cannot be judged (an error, never a verdict on
// this GPU).
class TpError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One group's exchange for one case.
class TpExchange {
 public:
  using Clock = std::chrono::steady_clock;
  // names[r]: rank r's GPU as messages name it ("GPU 1").
  explicit TpExchange(std::vector<std::string> names);
  int ranks() const { return static_cast<int>(names_.size()); }
  const std::string& name(int rank) const { return names_.at(static_cast<size_t>(rank)); }

  // Rank `rank` starts its iteration k (0, 1, ...: its count of the case's iterations): waits until every rank has
  // started k. False when a rank ended the case before starting k, stop() said so, or `limit` passed (a bound
  // against a bug, not a schedule); `why` then says which.
  bool join(int rank, uint64_t k, Clock::time_point limit, const std::function<bool()>& stop, std::string& why);
  // Rank's message seq: n floats, kept until every other rank has received it.
  void send(int rank, uint64_t seq, const float* data, uint64_t n);
  // Rank src's message seq into out; throws TpError when src ended without sending it, its size is not n, or the
  // deadline passed first.
  void receive(int rank, int src, uint64_t seq, float* out, uint64_t n, Clock::time_point deadline);
  // The rank is done with the case (its iterations ran, or it stopped: why); waiting peers stop waiting for it.
  void end(int rank, const std::string& why);

 private:
  struct Rank {
    int64_t joined = -1;  // the last iteration it started
    bool ended = false;
    std::string why;
  };
  struct Message {
    std::vector<float> data;
    int readers = 0;  // peers yet to receive it
  };
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::string> names_;
  std::vector<Rank> ranks_;
  std::map<std::pair<int, uint64_t>, Message> box_;  // (sender, seq)
};

// The run's exchanges, by case and group (shared by the GPU executors).
class TpGroups {
 public:
  // The exchange of `case_id`'s group `group` of R ranks (names as TpExchange's), made by its first rank to ask;
  // a GPU whose run already ended (close) is ended there from the start.
  std::shared_ptr<TpExchange> get(const std::string& case_id, int group, const std::vector<std::string>& names);
  // GPU slot `slot` runs nothing more (its executor's loop ended): it is ended in every group, now and later.
  void close(size_t slot);
  // GPU slot `slot` did not join `case_id`'s group (it could not prepare the case: why): ended in that case's group,
  // now or when it is made.
  void abandon(const std::string& case_id, size_t slot, const std::string& why);

 private:
  std::mutex m_;
  std::map<std::pair<std::string, int>, std::shared_ptr<TpExchange>> groups_;
  std::set<size_t> closed_;
  std::map<std::pair<std::string, size_t>, std::string> abandoned_;  // (case, slot) -> why
  // Ends slot's rank in ex, the exchange of group `group`, when the slot is one of its ranks.
  static void end_slot(TpExchange& ex, int group, size_t slot, const std::string& why);
};

}  // namespace sdc::cuda
