// Option parsers: every malformed value is refused with a message; valid values parse exactly.
#include "tests/unit/catch.h"
#include "src/cli/options.h"
#include "src/core/inject.h"
#include "src/core/result.h"
#include "src/util/int_list.h"

using namespace sdc;

TEST_CASE("durations", "[parsers]") {
  double s = 0;
  REQUIRE(cli::parse_duration("45s", s).empty());
  REQUIRE(s == 45);
  REQUIRE(cli::parse_duration("5m", s).empty());
  REQUIRE(s == 300);
  REQUIRE(cli::parse_duration("1h30m", s).empty());
  REQUIRE(s == 5400);
  REQUIRE(cli::parse_duration("500ms", s).empty());
  REQUIRE(s == 0.5);
  REQUIRE(cli::parse_duration("2.5s", s).empty());
  REQUIRE(s == 2.5);
  REQUIRE(cli::parse_duration("45", s).empty());  // a bare number is seconds
  REQUIRE(s == 45);
  REQUIRE(cli::parse_duration("1h30m15s", s).empty());
  REQUIRE(s == 5415);
  // Units in decreasing order, each once: a repeated or misordered unit is a mistake, not a sum.
  for (const char* bad : {"", "s", "0s", "-5s", "5x", "1.2.3s", "m5", "5 s", "99999999h", ".s", "1h1h", "1s5m", "30m1h",
                          "45s5", "5 ", "0"})
    REQUIRE_FALSE(cli::parse_duration(bad, s).empty());
}

TEST_CASE("sizes", "[parsers]") {
  uint64_t b = 0;
  REQUIRE(cli::parse_size("512M", b).empty());
  REQUIRE(b == 512ull << 20);
  REQUIRE(cli::parse_size("1.5G", b).empty());
  REQUIRE(b == 3ull << 29);
  REQUIRE(cli::parse_size("1048576", b).empty());
  REQUIRE(b == 1048576);
  REQUIRE(cli::parse_size("1", b).empty());
  REQUIRE(b == 1);
  // Less than a byte would be 0, which means "no limit": refused, as are hexadecimal, signs, spaces and exponents.
  for (const char* bad : {"", "0", "0.5", "1e-300G", "0x10M", "+5M", " 5M", "-5M", "5e3", "5m", "12Q", "M", ".",
                          "1.2.3", "nan", "infG", "2000000000T"})
    REQUIRE_FALSE(cli::parse_size(bad, b).empty());
  REQUIRE_FALSE(cli::parse_size(std::string(400, '9'), b).empty());  // beyond a double's range: refused, no throw
  REQUIRE_FALSE(cli::parse_size("0." + std::string(400, '0') + "1G", b).empty());
}

TEST_CASE("cpu lists", "[parsers]") {
  std::vector<int> cpus;
  REQUIRE(parse_cpu_list("0-3,8,10-11", cpus).empty());
  REQUIRE(cpus == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  REQUIRE(parse_cpu_list("3,1,1", cpus).empty());
  REQUIRE(cpus == std::vector<int>{1, 3});
  REQUIRE(format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  for (const char* bad : {"", ",", "1,", "a", "3-1", "1-", "-1", "1--2", "99999999", "0-70000"})
    REQUIRE_FALSE(parse_cpu_list(bad, cpus).empty());
}

TEST_CASE("injection specs", "[parsers]") {
  Injection inj;
  REQUIRE(parse_injection("case=gemm_f32.uniform_1024,element=5,bit=3", inj).empty());
  REQUIRE(inj.case_id == "gemm_f32.uniform_1024");
  REQUIRE(inj.element == 5);
  REQUIRE(inj.mask == 8u);
  REQUIRE(inj.unit == -1);
  REQUIRE(!inj.input);
  REQUIRE(parse_injection("case=x,target=input,tensor=b,element=7,mask=0x80000001,unit=1,iteration=2", inj).empty());
  REQUIRE(inj.input);
  REQUIRE(inj.tensor == "b");
  REQUIRE(inj.mask == 0x80000001u);
  REQUIRE(inj.unit == 1);
  REQUIRE(inj.iteration == 2);
  for (const char* bad :
       {"", "case=x", "case=x,element=1", "element=1,bit=1", "case=x,element=1,bit=32", "case=x,element=-1,bit=1",
        "case=x,element=1,bit=1,mask=0x1", "case=x,element=1,mask=0x0", "case=x,element=1,mask=12",
        "case=x,element=1,bit=1,target=input", "case=x,element=1,bit=1,tensor=a", "case=x,element=1,bit=1,colour=red",
        "case=x,element=1,bit=1,case=y", "case=x,element=1,bit=1,unit=abc", "case=x,element=1,bit=1,"})
    REQUIRE_FALSE(parse_injection(bad, inj).empty());
  // A replay drill at a rate (every K-th execution of the submodule's output): not with step= or microbatch=,
  // which name one execution.
  REQUIRE(parse_injection("case=x,submodule=layer0.mlp.down.forward,element=1,bit=1,rate=3,output=0", inj).empty());
  REQUIRE(inj.rate == 3);
  REQUIRE(parse_injection("case=x,submodule=layer0.mlp.down.forward,element=1,bit=1", inj).empty());
  REQUIRE(inj.rate == 0);
  const std::string sub = "case=x,submodule=layer0.mlp.down.forward,element=1,bit=1,";
  REQUIRE(parse_injection(sub + "rate=2,step=1", inj) ==
          "rate= hits every K-th execution of the submodule's output, over all steps and micro-batches: not with "
          "step= or microbatch=");
  REQUIRE(parse_injection(sub + "microbatch=0,rate=2", inj).find("not with step= or microbatch=") != std::string::npos);
  REQUIRE(parse_injection("case=x,element=1,bit=1,rate=2", inj) ==
          "step=, microbatch=, output= and rate= apply to submodule= only");
  REQUIRE(parse_injection(sub + "rate=0", inj) == "rate '0' is not an integer in 1..1000000");
  for (const char* bad : {"rate=-1", "rate=1000001", "rate=2x", "rate=", "rate=1/2"})
    REQUIRE(parse_injection(sub + bad, inj).rfind("rate '", 0) == 0);
  REQUIRE_FALSE(parse_injection("case=x,action=hang,rate=2", inj).empty());
  // A hang or crash drill is the whole unit's: a replay's site keys are refused, not ignored.
  for (const char* site : {"submodule=layer0.attn.wo.forward", "step=1", "microbatch=0", "output=1"})
    for (const char* action : {"hang", "crash"}) {
      INFO(action << " " << site);
      CHECK(parse_injection(std::string("case=x,action=") + action + "," + site, inj) ==
            std::string("action=") + action + " takes case, unit, device and iteration only");
    }
}

TEST_CASE("a drill's persistence: when it fires, in the run and in retests", "[parsers]") {
  Injection inj;
  REQUIRE(parse_injection("case=x,element=1,bit=1,unit=2,iteration=1", inj).empty());
  REQUIRE(persist_name(inj) == "once");  // the named iteration only, never in a retest
  REQUIRE_FALSE(fires_now(inj, 0, false, false));
  REQUIRE(fires_now(inj, 1, false, false));
  REQUIRE_FALSE(fires_now(inj, 2, false, false));
  REQUIRE_FALSE(fires_now(inj, 1, true, false));
  REQUIRE(parse_injection("case=x,element=1,bit=1,unit=2,iteration=1,persist=always", inj).empty());
  REQUIRE(persist_name(inj) == "always");
  REQUIRE_FALSE(fires_now(inj, 0, false, false));  // not before its iteration
  REQUIRE(fires_now(inj, 1, false, false));
  REQUIRE(fires_now(inj, 5, false, false));
  REQUIRE(fires_now(inj, -1, true, false));
  REQUIRE(fires_now(inj, -1, true, true));
  REQUIRE(parse_injection("case=x,element=1,bit=1,unit=2,persist=input", inj).empty());
  REQUIRE(persist_name(inj) == "input");
  REQUIRE(fires_now(inj, 0, false, false));
  REQUIRE(fires_now(inj, -1, true, false));
  REQUIRE_FALSE(fires_now(inj, -1, true, true));  // fresh seeds: the fault needs the case's own inputs
  REQUIRE(parse_injection("case=x,element=1,bit=1,unit=2,persist=1/3", inj).empty());
  REQUIRE(persist_name(inj) == "1/3");
  std::string fired;  // the first computation and every third after it, the retests counted on
  for (int it = 0; it < 4; ++it) fired += fires_now(inj, it, false, false) ? '1' : '0';
  for (int k = 0; k < 3; ++k) fired += fires_now(inj, -1, true, false) ? '1' : '0';
  REQUIRE(fired == "1001001");
  for (const char* bad : {"case=x,element=1,bit=1,persist=always", "case=x,element=1,bit=1,unit=1,persist=1/1",
                          "case=x,element=1,bit=1,unit=1,persist=1/1001", "case=x,element=1,bit=1,unit=1,persist=2/3",
                          "case=x,element=1,bit=1,unit=1,persist=", "case=x,action=hang,unit=1,persist=always"})
    REQUIRE_FALSE(parse_injection(bad, inj).empty());
}

TEST_CASE("a retest's classification", "[exit]") {
  UnitRetest u;
  REQUIRE(std::string(u.classification()) == "not retested");
  u.same_seed_runs = 3;
  REQUIRE(std::string(u.classification()) == "not reproduced");
  REQUIRE(u.input_dependent() == -1);
  u.same_seed_failed = 3;
  u.same_bits = 2;  // failed every time, but not always the same way
  REQUIRE(std::string(u.classification()) == "intermittent");
  REQUIRE(u.rate() == 1.0);
  u.same_bits = 3;
  REQUIRE(std::string(u.classification()) == "persistent");
  REQUIRE(u.input_dependent() == -1);  // no fresh seed ran
  u.fresh_seed_runs = 3;
  REQUIRE(u.input_dependent() == 1);
  u.fresh_seed_failed = 1;
  REQUIRE(u.input_dependent() == 0);
  u.same_seed_failed = 1;
  u.same_bits = 1;
  REQUIRE(std::string(u.classification()) == "intermittent");
  REQUIRE(u.rate() == Approx(1.0 / 3));
}

TEST_CASE("exit codes fail closed; a not-applicable skip alone does not make a run inconclusive", "[exit]") {
  auto test = [](Verdict v, bool na = false) {
    TestResult t;
    t.verdict = v;
    t.not_applicable = na;
    return t;
  };
  RunResult r;
  REQUIRE(r.exit_code() == EXIT_INCONCLUSIVE);  // nothing selected
  r.tests = {test(Verdict::pass), test(Verdict::skip, true)};
  REQUIRE(r.exit_code() == EXIT_PASS);
  r.tests = {test(Verdict::pass), test(Verdict::skip)};
  REQUIRE(r.exit_code() == EXIT_INCONCLUSIVE);  // an ordinary skip did not run
  r.tests = {test(Verdict::skip, true)};
  REQUIRE(r.exit_code() == EXIT_INCONCLUSIVE);  // nothing ran at all
  r.tests = {test(Verdict::fail), test(Verdict::error)};
  REQUIRE(r.exit_code() == EXIT_FAIL);
  r.tests = {test(Verdict::pass)};
  r.errors = {"--expect-devices 8: only 7 usable GPU(s) found, 1 missing"};
  REQUIRE(r.exit_code() == EXIT_INCONCLUSIVE);
}

TEST_CASE("--devices shares the index-list grammar", "[parsers]") {
  std::vector<int> out;
  REQUIRE(parse_index_list("0-2,5", "GPU", 8, out).empty());
  REQUIRE(out == std::vector<int>{0, 1, 2, 5});
  REQUIRE(parse_index_list("8", "GPU", 8, out) == "'8' is not a GPU number (0..7)");
  REQUIRE(parse_index_list("3-1", "GPU", 8, out) == "GPU range '3-1' runs backwards");
  REQUIRE(parse_index_list("", "GPU", 8, out) == "empty GPU list");
}

TEST_CASE("GPU injections are checked against the selected GPUs", "[parsers]") {
  Battery b;
  Case c;
  c.id = "softmax_f32.t";
  c.family = "softmax_f32";
  c.shape.dims = {{"rows", 4}, {"cols", 8}};
  b.cases.push_back(c);
  DeviceInfo gpu;
  gpu.index = 2;
  gpu.sm_count = 132;
  const std::vector<DeviceInfo> gpus{gpu};
  Injection inj;
  REQUIRE(parse_injection("case=softmax_f32.t,element=3,bit=1,unit=131", inj).empty());
  REQUIRE(check_injection(inj, b, {}, &gpus).empty());
  REQUIRE(inj.device == 2);  // the first selected GPU by default
  REQUIRE(parse_injection("case=softmax_f32.t,element=3,bit=1,unit=132", inj).empty());
  REQUIRE(check_injection(inj, b, {}, &gpus) == "unit=132: sm 132 is not an SM of gpu 2 (132 SMs)");
  REQUIRE(parse_injection("case=softmax_f32.t,element=3,bit=1,device=0", inj).empty());
  REQUIRE(check_injection(inj, b, {}, &gpus) == "device 0 is not among the selected GPUs");
  REQUIRE(parse_injection("case=softmax_f32.t,target=input,tensor=x,element=3,bit=1,unit=4", inj).empty());
  REQUIRE(check_injection(inj, b, {}, &gpus).find("cannot be pinned to an SM") != std::string::npos);
  REQUIRE(parse_injection("case=softmax_f32.t,element=3,bit=1,device=0", inj).empty());
  REQUIRE(check_injection(inj, b, {0}) == "device= applies to GPU runs (--backend cuda) only");
  // A fault inside a training-step replay: refused for a family without one, naming the ones that have it.
  REQUIRE(parse_injection("case=softmax_f32.t,submodule=layer0.mlp.down.backward,element=3,bit=1", inj).empty());
  REQUIRE(check_injection(inj, b, {0}) ==
          "submodule= applies to " + replay_family_ids() + " cases only; softmax_f32.t is a softmax_f32 case");
}
