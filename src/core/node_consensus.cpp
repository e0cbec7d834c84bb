#include "src/core/node_consensus.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/core/family.h"
#include "src/core/result.h"

namespace sdc {

std::vector<NodeJudgement> judge_node(const std::vector<NodeVote>& votes) {
  std::vector<NodeJudgement> out(votes.size());
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < votes.size(); ++i) groups[votes[i].group].push_back(i);
  for (const auto& [key, members] : groups) {
    // Clusters of identical digests, in order of first appearance.
    std::vector<std::vector<size_t>> clusters;
    for (size_t v : members) {
      bool placed = false;
      for (auto& cl : clusters)
        if (*votes[cl.front()].digests == *votes[v].digests) {
          cl.push_back(v);
          placed = true;
          break;
        }
      if (!placed) clusters.push_back({v});
    }
    const std::vector<size_t>* winner = nullptr;
    for (const auto& cl : clusters)
      if (2 * cl.size() > members.size()) winner = &cl;
    for (const auto& cl : clusters)
      for (size_t v : cl) {
        NodeJudgement& j = out[v];
        j.group_size = members.size();
        j.cluster_size = cl.size();
        for (size_t o : members)
          if (o != v) j.others.push_back(o);
        if (members.size() == 1)
          j.standing = NodeStanding::alone;
        else if (!winner)
          j.standing = NodeStanding::split;
        else {
          j.standing = &cl == winner ? NodeStanding::agrees : NodeStanding::dissents;
          j.majority = winner->front();
        }
      }
  }
  return out;
}

std::vector<uint64_t> differing_tiles(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> out;
  for (size_t t = 0; t < a.size() && t < b.size(); ++t)
    if (a[t] != b[t]) out.push_back(t);
  return out;
}

namespace {

std::string device_list(const RunResult& result, const std::vector<size_t>& votes, const std::vector<size_t>& tests) {
  std::string out;
  for (size_t v : votes) out += (out.empty() ? "" : ", ") + result.tests[tests[v]].device;
  return out;
}

// Counts tile t of test r as failed on the SM that computed it in r's first run.
void fail_tile(RunResult& result, TestResult& r, const FirstRun& first, uint64_t t) {
  ++r.failed_tiles;
  if (t >= first.sms.size() || first.sms[t] == 0xffffffffu) return;  // a library kernel: SM unknown
  const int sm = static_cast<int>(first.sms[t]);
  for (UnitResult& u : result.units)
    if (u.device == r.device_index && u.sm == sm) ++u.failed_tiles;
  if (std::find(r.units_failed.begin(), r.units_failed.end(), sm) == r.units_failed.end()) r.units_failed.push_back(sm);
}

}  // namespace

void apply_node_consensus(RunResult& result, const std::vector<FirstRun>& first_runs, double elapsed_s) {
  std::vector<NodeVote> votes;
  std::vector<size_t> tests;  // vote -> test index
  for (size_t i = 0; i < result.tests.size(); ++i) {
    const TestResult& t = result.tests[i];
    if (t.judged_by != "consensus" || i >= first_runs.size() || first_runs[i].digests.empty() || t.device_index < 0)
      continue;
    const std::string arch = result.devices[static_cast<size_t>(t.device_index)].architecture();
    votes.push_back({fmt::format("{}|{}|{}|{}", t.id, arch, t.library, t.algorithm), &first_runs[i].digests});
    tests.push_back(i);
  }
  const std::vector<NodeJudgement> judged = judge_node(votes);
  for (size_t v = 0; v < votes.size(); ++v) {
    const NodeJudgement& j = judged[v];
    TestResult& r = result.tests[tests[v]];
    const FirstRun& first = first_runs[tests[v]];
    const std::string others = device_list(result, j.others, tests);
    std::vector<uint64_t> bad;
    switch (j.standing) {
      case NodeStanding::alone:
        r.notes.emplace_back("the only GPU of this node with its architecture and engine: judged by its own repeats");
        break;
      case NodeStanding::agrees:
        r.notes.push_back(
            fmt::format("agrees bit for bit with {} of the node's other GPUs ({})", j.cluster_size - 1, others));
        if (r.verdict == Verdict::skip && r.reason == CONSENSUS_ONE_RUN) {  // compared with another GPU after all
          r.verdict = Verdict::pass;
          r.reason.clear();
        }
        break;
      case NodeStanding::dissents:
        bad = differing_tiles(first.digests, *votes[j.majority].digests);
        r.notes.push_back(
            fmt::format("differs from the majority of the node's GPUs ({} of {} agree: {}) on {} tiles "
                        "(first: tile {}): this GPU is the suspect",
                        judged[j.majority].cluster_size, j.group_size, device_list(result, {j.majority}, tests),
                        bad.size(), bad.front()));
        break;
      case NodeStanding::split:
        for (size_t o : j.others)
          for (uint64_t t : differing_tiles(first.digests, *votes[o].digests))
            if (std::find(bad.begin(), bad.end(), t) == bad.end()) bad.push_back(t);
        std::sort(bad.begin(), bad.end());
        r.notes.push_back(
            fmt::format("the node's GPUs disagree ({} and {}) with no majority on {} tiles (first: tile "
                        "{}): at least one is faulty, none can be named",
                        r.device, others, bad.size(), bad.empty() ? 0 : bad.front()));
        break;
    }
    if (bad.empty()) continue;
    for (uint64_t t : bad) fail_tile(result, r, first, t);
    std::sort(r.units_failed.begin(), r.units_failed.end());
    r.verdict = Verdict::fail;
    r.reason.clear();
    if (r.time_to_fail_s < 0) r.time_to_fail_s = elapsed_s;
  }
}

}  // namespace sdc
