// Consensus among the GPUs of one node (docs/design.md, mode "consensus"): where no golden exists, GPUs that
// ran the same case with the same engine on the same architecture must compute the same bits. Each GPU
// brings the tile digests of its first complete run (its repeats were checked against them already).
//
// Rules: votes are grouped by their group key (case, architecture, library, algorithm: never compared
// across them); within a group, GPUs with identical digests form a cluster; a cluster holding a strict
// majority of the group agrees, every other GPU dissents (suspect); no strict majority among two or
// more GPUs is a split (some GPU is wrong, none can be named); a GPU alone in its group is judged by its
// repeats only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sdc {

struct NodeVote {
  std::string group;                     // what must be equal for GPUs to be compared
  const std::vector<uint64_t>* digests;  // tile digests of the GPU's first complete run
};

enum class NodeStanding { alone, agrees, dissents, split };

struct NodeJudgement {
  NodeStanding standing = NodeStanding::alone;
  size_t group_size = 1;       // GPUs in the vote's group
  size_t cluster_size = 1;     // GPUs that computed the same digests as this one
  size_t majority = SIZE_MAX;  // a vote of the majority cluster (dissents and agrees), else SIZE_MAX
  std::vector<size_t> others;  // the other votes of the group
};

// One judgement per vote, in vote order.
std::vector<NodeJudgement> judge_node(const std::vector<NodeVote>& votes);

// Tiles where a and b differ (same length).
std::vector<uint64_t> differing_tiles(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

}  // namespace sdc

namespace sdc {
struct RunResult;

// A consensus test's first complete run on its GPU: the tile digests that later runs, the node's other
// GPUs and `record` compare with or keep, and the SM that computed each tile (0xffffffff: unknown, a
// library kernel). Empty when no run completed. The CUDA executor keeps it; reports never show it.
struct FirstRun {
  std::vector<uint64_t> digests;
  std::vector<uint32_t> sms;
};

// Applies judge_node to a GPU run: every test judged by consensus that completed a run votes (group:
// case, architecture, library, algorithm). A dissenting or split GPU's test fails on the tiles where it
// differs (counted on the SMs that computed them in its first run); an agreeing GPU's single run counts
// as compared; notes say who agreed with whom. Other tests are untouched.
// first_runs: one per test of result, in test order. elapsed_s: seconds since the run started (a new
// failure's time to fail).
void apply_node_consensus(RunResult& result, const std::vector<FirstRun>& first_runs, double elapsed_s);

// The skip reason of a consensus test that completed one run only; agreement with another GPU of the
// node judges it after all.
inline constexpr const char* CONSENSUS_ONE_RUN =
    "consensus needs a repeat or another GPU to compare with; one run completed";
}  // namespace sdc
