// Consensus among a node's GPUs (src/core/node_consensus.h): who agrees, who dissents, when nobody can be
// named, and that groups (case, architecture, engine) are never compared with each other. Then the same
// rules applied to a GPU run's results: a dissenter fails on exactly the differing tiles, on the SMs that
// computed them; agreeing GPUs stay as they were.
#include "tests/unit/catch.h"
#include "src/core/device_info.h"
#include "src/core/node_consensus.h"
#include "src/core/result.h"
#include "tests/unit/result_test.h"

using namespace sdc;
using test::test_of;

namespace {

const std::vector<uint64_t> A{1, 2, 3, 4}, B{1, 2, 9, 4}, C{7, 2, 3, 4};

std::vector<NodeStanding> standings(const std::vector<NodeVote>& votes) {
  std::vector<NodeStanding> out;
  for (const NodeJudgement& j : judge_node(votes)) out.push_back(j.standing);
  return out;
}

// A GPU run of one consensus-judged case on n GPUs of one architecture, 4 tiles each, and each GPU's
// first complete run (the consensus state the CUDA executor keeps beside the results).
struct GpuRun {
  RunResult r;
  std::vector<FirstRun> first_runs;
};

GpuRun gpu_run(const std::vector<const std::vector<uint64_t>*>& firsts, const std::string& arch_of_last = "") {
  GpuRun run;
  RunResult& r = run.r;
  r.backend = "cuda";
  for (size_t i = 0; i < firsts.size(); ++i) {
    DeviceInfo d;
    d.index = static_cast<int>(i);
    d.cc_major = 9;
    d.cc_minor = 0;
    if (i + 1 == firsts.size() && !arch_of_last.empty()) d.cc_major = 8;
    r.devices.push_back(d);
    for (int sm = 0; sm < 4; ++sm) {
      UnitResult u;
      u.device = static_cast<int>(i);
      u.sm = sm;
      u.tiles = 1;
      r.units.push_back(u);
    }
    TestResult t = test_of("gemm_bf16.case", Verdict::pass, {}, static_cast<int>(i));
    t.mode = "recorded";
    t.judged_by = "consensus";
    t.device = d.label();
    t.library = "sdcscreen-kernels 1";
    t.algorithm = "mma.sync";
    t.iterations_done = 2;
    r.tests.push_back(t);
    run.first_runs.push_back({*firsts[i], {3, 2, 1, 0}});  // tile t ran on SM 3 - t
  }
  return run;
}

void apply(GpuRun& run, double elapsed_s) { apply_node_consensus(run.r, run.first_runs, elapsed_s); }

}  // namespace

TEST_CASE("node consensus: a strict majority names the dissenter", "[node_consensus]") {
  const auto j = judge_node({{"g", &A}, {"g", &B}, {"g", &A}});
  REQUIRE(j[0].standing == NodeStanding::agrees);
  REQUIRE(j[1].standing == NodeStanding::dissents);
  REQUIRE(j[2].standing == NodeStanding::agrees);
  REQUIRE(j[1].majority != SIZE_MAX);
  REQUIRE(j[0].cluster_size == 2);
  REQUIRE(j[1].cluster_size == 1);
  REQUIRE(j[1].group_size == 3);
  REQUIRE(differing_tiles(B, A) == std::vector<uint64_t>{2});
}

TEST_CASE("node consensus: no strict majority is a split, a lone GPU is alone", "[node_consensus]") {
  REQUIRE(standings({{"g", &A}, {"g", &B}}) == std::vector<NodeStanding>{NodeStanding::split, NodeStanding::split});
  REQUIRE(standings({{"g", &A}, {"g", &A}, {"g", &B}, {"g", &B}}) == std::vector<NodeStanding>(4, NodeStanding::split));
  REQUIRE(standings({{"g", &A}, {"g", &B}, {"g", &C}}) == std::vector<NodeStanding>(3, NodeStanding::split));
  REQUIRE(standings({{"g", &A}}) == std::vector<NodeStanding>{NodeStanding::alone});
  // Healthy: everyone agrees.
  REQUIRE(standings({{"g", &A}, {"g", &A}, {"g", &A}, {"g", &A}}) ==
          std::vector<NodeStanding>(4, NodeStanding::agrees));
  // 3 against 2: a strict majority.
  REQUIRE(standings({{"g", &B}, {"g", &A}, {"g", &A}, {"g", &B}, {"g", &A}}) ==
          std::vector<NodeStanding>{NodeStanding::dissents, NodeStanding::agrees, NodeStanding::agrees,
                                    NodeStanding::dissents, NodeStanding::agrees});
}

TEST_CASE("node consensus: groups are never compared with each other", "[node_consensus]") {
  // Different digests in different groups (another architecture or engine) are not a disagreement.
  REQUIRE(standings({{"sm_90", &A}, {"sm_80", &B}}) ==
          std::vector<NodeStanding>{NodeStanding::alone, NodeStanding::alone});
  REQUIRE(standings({{"x", &A}, {"y", &B}, {"x", &A}}) ==
          std::vector<NodeStanding>{NodeStanding::agrees, NodeStanding::alone, NodeStanding::agrees});
}

TEST_CASE("node consensus on a run: the dissenting GPU fails on its differing tiles and SMs", "[node_consensus]") {
  GpuRun run = gpu_run({&A, &A, &B, &A});
  apply(run, 1.5);
  const RunResult& r = run.r;
  for (size_t i : {0u, 1u, 3u}) {
    INFO(i);
    REQUIRE(r.tests[i].verdict == Verdict::pass);
    REQUIRE(r.tests[i].failed_tiles == 0);
    REQUIRE(r.tests[i].notes.size() == 1);
    REQUIRE(r.tests[i].notes[0].find("agrees bit for bit with 2") != std::string::npos);
  }
  const TestResult& bad = r.tests[2];
  REQUIRE(bad.verdict == Verdict::fail);
  REQUIRE(bad.failed_tiles == 1);
  REQUIRE(bad.units_failed == std::vector<int>{1});  // tile 2 ran on SM 1
  REQUIRE(bad.time_to_fail_s == 1.5);
  REQUIRE(bad.notes.back().find("suspect") != std::string::npos);
  uint64_t failed_units = 0;
  for (const UnitResult& u : r.units) {
    failed_units += u.failed_tiles;
    if (u.failed_tiles) REQUIRE((u.device == 2 && u.sm == 1));
  }
  REQUIRE(failed_units == 1);
  REQUIRE(r.exit_code() == EXIT_FAIL);
}

TEST_CASE("node consensus on a run: two GPUs that disagree both fail; agreement is silent", "[node_consensus]") {
  GpuRun split_run = gpu_run({&A, &C});
  apply(split_run, 0.5);
  const RunResult& split = split_run.r;
  REQUIRE(split.tests[0].verdict == Verdict::fail);
  REQUIRE(split.tests[1].verdict == Verdict::fail);
  REQUIRE(split.tests[0].failed_tiles == 1);
  REQUIRE(split.tests[0].units_failed == std::vector<int>{3});  // tile 0 on SM 3
  REQUIRE(split.tests[0].notes.back().find("none can be named") != std::string::npos);

  GpuRun same_run = gpu_run({&A, &A});
  apply(same_run, 0.5);
  const RunResult& same = same_run.r;
  REQUIRE(same.tests[0].verdict == Verdict::pass);
  REQUIRE(same.tests[1].verdict == Verdict::pass);
  REQUIRE(same.exit_code() == EXIT_PASS);
}

TEST_CASE("node consensus on a run: other architectures, exact tests and one-run tests", "[node_consensus]") {
  // The last GPU is an sm_80: its different digests are not a disagreement with the sm_90s.
  GpuRun mixed_run = gpu_run({&A, &A, &B}, "sm_80");
  apply(mixed_run, 0.5);
  const RunResult& mixed = mixed_run.r;
  for (const TestResult& t : mixed.tests) REQUIRE(t.verdict == Verdict::pass);
  REQUIRE(mixed.tests[2].notes[0].find("only GPU") != std::string::npos);

  // Tests judged by a golden never vote.
  GpuRun exact_run = gpu_run({&A, &B});
  RunResult& exact = exact_run.r;
  for (TestResult& t : exact.tests) t.judged_by = "exact-integer";
  apply(exact_run, 0.5);
  for (const TestResult& t : exact.tests) REQUIRE((t.verdict == Verdict::pass && t.notes.empty()));

  // One completed run: skipped unless another GPU agrees.
  GpuRun one_run = gpu_run({&A, &A, &A});
  RunResult& one = one_run.r;
  for (TestResult& t : one.tests) {
    t.iterations_done = 1;
    t.verdict = Verdict::skip;
    t.reason = CONSENSUS_ONE_RUN;
  }
  one.tests.back().library = "cublasLt 13.0.0";  // alone in its group
  apply(one_run, 0.5);
  REQUIRE(one.tests[0].verdict == Verdict::pass);
  REQUIRE(one.tests[1].verdict == Verdict::pass);
  REQUIRE(one.tests[2].verdict == Verdict::skip);
  REQUIRE(one.exit_code() == EXIT_INCONCLUSIVE);
}
