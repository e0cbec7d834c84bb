// The tensor-parallel exchange between the GPU executors (src/backends/cuda/tp_exchange.h), driven by threads: ranks
// start iterations together and swap messages; a rank that ends the case, a run that stops and a deadline end every
// wait with the reason, never a hang. No timing is measured: waits that must end are given an hour, waits that must
// give up a deadline already past. Assertions stay on the test's thread (Catch2's are not thread-safe).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/catch.h"
#include "src/backends/cuda/tp_exchange.h"

using sdc::cuda::TpError;
using sdc::cuda::TpExchange;
using sdc::cuda::TpGroups;

namespace {

using Clock = TpExchange::Clock;
Clock::time_point later() { return Clock::now() + std::chrono::hours(1); }
bool never() { return false; }

}  // namespace

TEST_CASE("tp exchange: ranks start an iteration together and receive each other's messages in order", "[tp]") {
  TpExchange ex({"gpu 0", "gpu 1", "gpu 2"});
  std::vector<std::vector<float>> got(3, std::vector<float>(6));
  std::vector<int> started(3, 0);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 3; ++rank)
    threads.emplace_back([&, rank] {
      std::string why;
      started[static_cast<size_t>(rank)] = ex.join(rank, 0, later(), never, why);
      for (uint64_t seq = 0; seq < 2; ++seq) {
        const std::vector<float> mine{static_cast<float>(rank), static_cast<float>(seq + 10)};
        // As the replay does: the lower ranks' messages before sending its own, the higher ranks' after.
        for (int src = 0; src < 3; ++src) {
          if (src == rank) ex.send(rank, seq, mine.data(), mine.size());
          else ex.receive(rank, src, seq, &got[static_cast<size_t>(rank)][static_cast<size_t>(src) * 2], 2, later());
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(started == std::vector<int>{1, 1, 1});
  for (int rank = 0; rank < 3; ++rank)
    for (int src = 0; src < 3; ++src)
      if (src != rank) {
        CHECK(got[static_cast<size_t>(rank)][static_cast<size_t>(src) * 2] == static_cast<float>(src));
        CHECK(got[static_cast<size_t>(rank)][static_cast<size_t>(src) * 2 + 1] == 11.0f);  // the last message's
      }
}

TEST_CASE("tp exchange: a rank that ended the case ends its peers' waits, with the reason", "[tp]") {
  SECTION("before it started: the peer's start fails") {
    TpExchange ex({"gpu 0", "gpu 1"});
    ex.end(1, "out of device memory");
    std::string why;
    CHECK_FALSE(ex.join(0, 0, later(), never, why));
    CHECK(why == "gpu 1 (rank 1 of the tensor-parallel group) did not run the case: out of device memory");
  }
  SECTION("after one iteration: the peer's second start fails, its first did not") {
    TpExchange ex({"gpu 0", "gpu 1"});
    std::string why;
    bool peer_started = false;
    std::thread peer([&] {
      std::string w;
      peer_started = ex.join(1, 0, later(), never, w);
      ex.end(1, "the time budget ran out");
    });
    CHECK(ex.join(0, 0, later(), never, why));
    peer.join();
    CHECK(peer_started);
    CHECK_FALSE(ex.join(0, 1, later(), never, why));
    CHECK(why == "gpu 1 (rank 1 of the tensor-parallel group) ended the case after 1 iteration: the time budget ran out");
  }
  SECTION("while a peer waits for its message: the wait ends with an error naming it") {
    TpExchange ex({"gpu 0", "gpu 1"});
    float x = 0;
    std::thread peer([&] { ex.end(1, "lost its context"); });
    CHECK_THROWS_WITH(ex.receive(0, 1, 0, &x, 1, later()),
                      "tensor-parallel exchange: gpu 1 (rank 1) stopped before sending its partial: lost its context");
    peer.join();
  }
  SECTION("a message sent before it ended still arrives") {
    TpExchange ex({"gpu 0", "gpu 1"});
    const float sent = 3.5f;
    ex.send(1, 4, &sent, 1);
    ex.end(1, "its iterations ran");
    float x = 0;
    ex.receive(0, 1, 4, &x, 1, later());
    CHECK(x == 3.5f);
  }
}

TEST_CASE("tp exchange: a deadline, a stop and a wrong size end a wait", "[tp]") {
  TpExchange ex({"gpu 0", "gpu 1"});
  float x[2] = {0, 0};
  CHECK_THROWS_AS(ex.receive(0, 1, 0, x, 2, Clock::now()), TpError);
  CHECK_THROWS_WITH(ex.receive(0, 1, 0, x, 2, Clock::now()),
                    "tensor-parallel exchange: gpu 1 (rank 1) did not send its partial within the watchdog's deadline");
  std::string why;
  CHECK_FALSE(ex.join(0, 0, later(), [] { return true; }, why));
  CHECK(why == "the run stopped while this GPU waited for its tensor-parallel peers");
  CHECK_FALSE(ex.join(0, 0, Clock::now(), never, why));
  CHECK(why == "its tensor-parallel peers did not start the case in time");
  const float three[3] = {1, 2, 3};
  ex.send(1, 0, three, 3);
  CHECK_THROWS_WITH(ex.receive(0, 1, 0, x, 2, later()),
                    "tensor-parallel exchange: gpu 1 sent 3 values where gpu 0 expects 2");
}

TEST_CASE("tp groups: a GPU whose run ended is ended in its groups, made before or after", "[tp]") {
  TpGroups groups;
  const std::vector<std::string> pair{"gpu 2", "gpu 3"};
  const auto before = groups.get("case.a", 1, pair);  // slots 2 and 3
  groups.close(3);
  const auto after = groups.get("case.b", 1, pair);
  const auto other = groups.get("case.b", 0, {"gpu 0", "gpu 1"});  // slot 3 is not in group 0
  std::string why;
  CHECK_FALSE(before->join(0, 0, later(), never, why));
  CHECK(why.find("gpu 3 (rank 1 of the tensor-parallel group) did not run the case: its run ended") == 0);
  CHECK_FALSE(after->join(0, 0, later(), never, why));
  CHECK(groups.get("case.a", 1, pair) == before);  // one exchange per case and group
  // A GPU that could not prepare a case is ended in that case's group alone, made before or after.
  const auto c0 = groups.get("case.c", 0, {"gpu 0", "gpu 1"});
  groups.abandon("case.c", 0, "out of device memory");
  groups.abandon("case.d", 1, "not applicable");
  CHECK_FALSE(c0->join(1, 0, later(), never, why));
  CHECK(why == "gpu 0 (rank 0 of the tensor-parallel group) did not run the case: out of device memory");
  CHECK_FALSE(groups.get("case.d", 0, {"gpu 0", "gpu 1"})->join(0, 0, later(), never, why));
  CHECK(why == "gpu 1 (rank 1 of the tensor-parallel group) did not run the case: not applicable");
  bool peer_started = false;
  std::thread peer([&] {
    std::string w;
    peer_started = other->join(1, 0, later(), never, w);
  });
  CHECK(other->join(0, 0, later(), never, why));
  peer.join();
  CHECK(peer_started);
}
