// Recordings and consensus (src/core/recording.h, recording_merge.h): the merge rules on small in-memory
// recordings, the strict parsers on every malformed variant, and the accepted-recordings files in a copy
// of the pattern directory (written, covered by the manifest, loaded back).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "tests/unit/catch.h"
#include "src/core/patterns.h"
#include "src/core/recording.h"
#include "src/core/recording_merge.h"
#include "src/spec/digest.h"
#include "src/util/atomic_file.h"

using namespace sdc;
namespace fs = std::filesystem;

namespace {

const RecordingKey KEY{"sm_90",
                       "gemm_bf16",
                       "gemm_bf16.uniform_256",
                       "0123456789abcdef",
                       "cublasLt 13.0.2",
                       "algo=6 tile=128x128 stages=4 splitk=1"};
const std::vector<uint64_t> GOOD{1, 2, 3, 4};
const std::vector<uint64_t> BAD{1, 2, 3, 5};  // one bit of one tile differs

Recording device(const std::string& uuid, const std::vector<std::pair<RecordingKey, std::vector<uint64_t>>>& entries) {
  Recording r = new_recording({"NVIDIA H100 80GB HBM3", uuid, "00000000:1B:00.0", "node-" + uuid, "580.65"});
  for (const auto& [k, d] : entries) add_recording_entry(r, k, d);
  return r;
}

Recording device(const std::string& uuid, const std::vector<uint64_t>& digests) {
  return device(uuid, {{KEY, digests}});
}

std::vector<std::string> uuids(const std::vector<DeviceRef>& refs) {
  std::vector<std::string> out;
  for (const DeviceRef& d : refs) out.push_back(d.uuid);
  return out;
}

// Parses a modified rendering of a valid recording and returns the error message ("" when accepted).
std::string recording_error(const std::function<void(std::string&)>& edit) {
  std::string t = render_recording(device("GPU-a", GOOD));
  edit(t);
  try {
    parse_recording("rec.json", t);
    return "";
  } catch (const PatternError& e) {
    return e.what();
  }
}

// A small pattern directory of its own (one reduce_sum_f32 case, its golden, the manifest), so that the
// test does not depend on the state of the source tree's patterns.
void make_pattern_dir(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "golden");
  write_file_atomic((dir / "battery.json").string(), R"({"format": "sdcscreen-battery", "version": 1,
    "profiles": {"boot": {"description": "test", "time_budget_s": 10}},
    "cases": [{"id": "reduce_sum_f32.uniform_256x64", "family": "reduce_sum_f32", "mode": "exact",
               "distribution": "uniform", "seed": 1, "shape": {"rows": 256, "cols": 64}, "iterations": {"boot": 1}}]})");
  const Battery b = load_battery_file((dir / "battery.json").string());
  const Case& c = b.cases.at(0);
  const auto p = find_family(c.family)->prepare(c);
  std::vector<float> x(p->inputs().at(0).elements), out(p->tile_elements());
  p->generate_input(0, 0, x.size(), x.data());
  const float* in[] = {x.data()};
  GoldenCase g;
  g.fingerprint = case_fingerprint(c);
  for (uint64_t t = 0; t < p->tile_count(); ++t) {
    p->compute_tile_scalar(in, t, out.data());
    g.tile_digests.push_back(tile_digest(t, out.data(), p->tile_elements()));
  }
  g.output_digest = output_digest(g.tile_digests.data(), g.tile_digests.size());
  write_goldens(dir.string(), b, {{c.id, g}});
  REQUIRE_NOTHROW(load_patterns(dir.string()));
}

void replace(std::string& t, const std::string& from, const std::string& to) {
  const size_t at = t.find(from);
  REQUIRE(at != std::string::npos);
  t.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a strict majority gives the golden; the minority is named as dissenters", "[recording]") {
  const ConsensusResult r =
      merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", GOOD), device("GPU-d", BAD)});
  REQUIRE(r.keys.size() == 1);
  const KeyConsensus& k = r.keys[0];
  REQUIRE(k.verdict == ConsensusVerdict::accepted);
  REQUIRE(k.accepted.tile_digests == GOOD);
  REQUIRE(uuids(k.accepted.voters) == std::vector<std::string>{"GPU-a", "GPU-b", "GPU-c"});
  REQUIRE(uuids(k.accepted.dissenters) == std::vector<std::string>{"GPU-d"});
  REQUIRE(k.accepted.dissenters[0].hostname == "node-GPU-d");
  REQUIRE_FALSE(k.accepted.provisional);
  REQUIRE(uuids(r.suspects()) == std::vector<std::string>{"GPU-d"});
  REQUIRE(r.exit_code() == 1);
  REQUIRE(render_consensus(r).find("dissenters: GPU-d (NVIDIA H100 80GB HBM3, node-GPU-d)") != std::string::npos);

  const ConsensusResult clean = merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", GOOD)});
  REQUIRE(clean.keys[0].verdict == ConsensusVerdict::accepted);
  REQUIRE(clean.keys[0].accepted.dissenters.empty());
  REQUIRE(clean.exit_code() == 0);
  REQUIRE(render_consensus(clean).find("exit: pass") != std::string::npos);
}

TEST_CASE("a tie or no majority gives no golden", "[recording]") {
  const ConsensusResult tie =
      merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", BAD), device("GPU-d", BAD)});
  REQUIRE(tie.keys[0].verdict == ConsensusVerdict::tie);
  REQUIRE(tie.keys[0].groups.size() == 2);
  REQUIRE(tie.accepted_recordings().empty());
  REQUIRE(tie.suspects().empty());  // nobody can be blamed without a majority
  REQUIRE(tie.exit_code() == 2);

  const ConsensusResult one_one = merge_recordings({device("GPU-a", GOOD), device("GPU-b", BAD)});
  REQUIRE(one_one.keys[0].verdict == ConsensusVerdict::tie);

  // 2 of 4 is the largest group but not a majority.
  const ConsensusResult split = merge_recordings(
      {device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", BAD), device("GPU-d", {9, 9, 9, 9})});
  REQUIRE(split.keys[0].verdict == ConsensusVerdict::no_majority);
  REQUIRE(split.exit_code() == 2);
  REQUIRE(render_consensus(split).find("no majority, no golden (largest group 2 of 4 devices)") != std::string::npos);
}

TEST_CASE("keys that differ in any field are never merged", "[recording]") {
  RecordingKey arch = KEY, lib = KEY, algo = KEY, fp = KEY;
  arch.architecture = "sm_80";
  lib.library = "cublasLt 12.9.1";
  algo.algorithm = "algo=6 tile=128x128 stages=4 splitk=2";
  fp.fingerprint = "fedcba9876543210";
  // Alone on its key, each differing device would be outvoted by the other two if keys were mixed.
  const ConsensusResult r =
      merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", {{arch, BAD}}),
                        device("GPU-d", {{lib, BAD}}), device("GPU-e", {{algo, BAD}}), device("GPU-f", {{fp, BAD}})});
  REQUIRE(r.keys.size() == 5);
  for (const KeyConsensus& k : r.keys) {
    INFO(k.key.str());
    REQUIRE(k.verdict == ConsensusVerdict::accepted);
    REQUIRE(k.accepted.dissenters.empty());
    REQUIRE(k.accepted.provisional == !(k.key == KEY));
    REQUIRE(k.accepted.tile_digests == (k.key == KEY ? GOOD : BAD));
  }
  REQUIRE(r.exit_code() == 0);
}

TEST_CASE("the same device recorded twice counts once", "[recording]") {
  // Without the uuid rule GPU-a's two files would outvote GPU-b and GPU-c.
  const ConsensusResult r =
      merge_recordings({device("GPU-a", BAD), device("GPU-a", BAD), device("GPU-b", GOOD), device("GPU-c", GOOD)});
  const KeyConsensus& k = r.keys[0];
  REQUIRE(k.devices == 3);
  REQUIRE(k.verdict == ConsensusVerdict::accepted);
  REQUIRE(k.accepted.tile_digests == GOOD);
  REQUIRE(uuids(k.accepted.voters) == std::vector<std::string>{"GPU-b", "GPU-c"});
  REQUIRE(uuids(k.accepted.dissenters) == std::vector<std::string>{"GPU-a"});

  const ConsensusResult twice = merge_recordings({device("GPU-a", GOOD), device("GPU-a", GOOD)});
  REQUIRE(twice.keys[0].devices == 1);
  REQUIRE(twice.keys[0].accepted.provisional);
}

TEST_CASE("a device that disagrees with itself is flagged unstable and not counted", "[recording]") {
  const ConsensusResult r =
      merge_recordings({device("GPU-a", GOOD), device("GPU-a", BAD), device("GPU-b", GOOD), device("GPU-c", GOOD)});
  const KeyConsensus& k = r.keys[0];
  REQUIRE(uuids(k.unstable) == std::vector<std::string>{"GPU-a"});
  REQUIRE(k.devices == 2);
  REQUIRE(k.verdict == ConsensusVerdict::accepted);
  REQUIRE(uuids(k.accepted.voters) == std::vector<std::string>{"GPU-b", "GPU-c"});
  REQUIRE(uuids(k.accepted.unstable) == std::vector<std::string>{"GPU-a"});
  REQUIRE(r.exit_code() == 1);  // suspect hardware
  REQUIRE(render_consensus(r).find("unstable:   GPU-a") != std::string::npos);

  // Only an unstable device: nothing to accept.
  const ConsensusResult alone = merge_recordings({device("GPU-a", GOOD), device("GPU-a", BAD)});
  REQUIRE(alone.keys[0].verdict == ConsensusVerdict::no_majority);
  REQUIRE(alone.exit_code() == 1);
}

TEST_CASE("a golden from a single device is provisional", "[recording]") {
  const ConsensusResult r = merge_recordings({device("GPU-a", GOOD)});
  REQUIRE(r.keys[0].verdict == ConsensusVerdict::accepted);
  REQUIRE(r.keys[0].accepted.provisional);
  REQUIRE(r.exit_code() == 0);
  REQUIRE(render_consensus(r).find("provisional") != std::string::npos);
  REQUIRE_FALSE(merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD)}).keys[0].accepted.provisional);
}

TEST_CASE("recordings of one key with different tile counts are bad data, not a vote", "[recording]") {
  Recording a = device("GPU-a", GOOD), b = device("GPU-b", {1, 2, 3});
  b.file = "b.json";
  try {
    merge_recordings({a, b});
    FAIL("merged recordings with different tile counts");
  } catch (const PatternError& e) {
    REQUIRE(std::string(e.what()).rfind("b.json: ", 0) == 0);
    REQUIRE(std::string(e.what()).find("3 tile digests") != std::string::npos);
  }
}

TEST_CASE("a recording round-trips through its file format", "[recording]") {
  const Recording r = device("GPU-a", {{KEY, GOOD},
                                       {[] {
                                          RecordingKey k = KEY;
                                          k.case_id += "_b";
                                          return k;
                                        }(),
                                        BAD}});
  const Recording back = parse_recording("rec.json", render_recording(r));
  REQUIRE(back.file == "rec.json");
  REQUIRE(back.device.uuid == "GPU-a");
  REQUIRE(back.device.pci_bus_id == "00000000:1B:00.0");
  REQUIRE(back.device.driver == "580.65");
  REQUIRE(back.entries.size() == 2);
  REQUIRE(back.entries[0].key == KEY);
  REQUIRE(back.entries[0].tile_digests == GOOD);
  REQUIRE(back.entries[1].tile_digests == BAD);
  REQUIRE(render_recording(back) == render_recording(r));
}

TEST_CASE("the recording parser refuses every malformed variant, naming the file and the problem", "[recording]") {
  REQUIRE(recording_error([](std::string&) {}).empty());
  const std::vector<std::pair<std::function<void(std::string&)>, const char*>> cases = {
      {[](std::string& t) {
         t.resize(1);
         t[0] = '{';
       },
       "not valid JSON"},  // resize: GCC 12 -Wrestrict false alarm on t = "{"
      {[](std::string& t) { t = std::to_string(1); }, "top level is not an object"},
      {[](std::string& t) { replace(t, "sdcscreen-recording", "sdcscreen-golden"); }, "format is 'sdcscreen-golden'"},
      {[](std::string& t) { replace(t, "\"version\": 1", "\"version\": 2"); }, "version 2 is not supported"},
      {[](std::string& t) { replace(t, "\"version\": 1", "\"version\": 4294967297"); }, "version 4294967297 is not"},
      {[](std::string& t) { replace(t, "\"version\": 1", "\"version\": 1.0"); }, "lacks an integer 'version'"},
      {[](std::string& t) { replace(t, "\"version\": 1", "\"version\": 1e400"); }, "a number is out of range"},
      {[](std::string& t) { replace(t, " \"tool\"", " \"colour\": \"red\",\n \"tool\""); }, "unknown member 'colour'"},
      {[](std::string& t) { replace(t, "\"pci_bus_id\": \"00000000:1B:00.0\",", ""); }, "device lacks 'pci_bus_id'"},
      {[](std::string& t) { replace(t, "\"uuid\": \"GPU-a\"", "\"uuid\": \"\""); }, "'uuid' is not a non-empty string"},
      {[](std::string& t) { replace(t, "\"algorithm\":", "\"algorithm\": \"x\", \"algorithm\":"); },
       "member 'algorithm' appears twice"},
      {[](std::string& t) { replace(t, "\"sm_90\"", "\"../sm_90\""); }, "'architecture' is not a snake_case name"},
      {[](std::string& t) { replace(t, "\"gemm_bf16.uniform_256\"", "\"Gemm\""); }, "'case' is not snake_case words"},
      {[](std::string& t) { replace(t, "\"0123456789abcdef\"", "\"0123456789ABCDEF\""); }, "'fingerprint' is not 16"},
      {[](std::string& t) { replace(t, "\"0000000000000001\"", "\"0x00000000000001\""); }, "tile digest 0 is not 16"},
      {[](std::string& t) { replace(t, "\"0000000000000004\"", "\"0000000000000005\""); }, "do not add up"},
      {[](std::string& t) { replace(t, "\"0000000000000001\",", ""); }, "do not add up"},  // a tile dropped
      {[](std::string& t) { replace(t, "\"cublasLt 13.0.2\"", "\"cublasLt\\n13\""); }, "'library' is not a non-empty"},
      {[](std::string& t) {
         t = R"({"format": "sdcscreen-recording", "version": 1, "tool": "", "entries": [],
                 "device": {"name": "a", "uuid": "b", "pci_bus_id": "", "hostname": "", "driver": ""}})";
       },
       "'entries' is not a non-empty array"},
      {[](std::string& t) { t = std::string(40, '[') + std::string(40, ']'); }, "nested deeper than 32"},
      {[](std::string& t) {  // a second entry renamed to the first one's key
         RecordingKey b = KEY;
         b.case_id += "_b";
         t = render_recording(device("GPU-a", {{KEY, GOOD}, {b, GOOD}}));
         replace(t, "\"gemm_bf16.uniform_256_b\"", "\"gemm_bf16.uniform_256\"");
       },
       "entries[1] (gemm_bf16.uniform_256): duplicate key sm_90 gemm_bf16 gemm_bf16.uniform_256"},
  };
  for (const auto& [edit, expected] : cases) {
    const std::string msg = recording_error(edit);
    INFO(expected << " / got: " << msg);
    REQUIRE(msg.rfind("rec.json: ", 0) == 0);
    REQUIRE(msg.find(expected) != std::string::npos);
    REQUIRE(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("the writer refuses what the parser would refuse", "[recording]") {
  Recording r = device("GPU-a", GOOD);
  REQUIRE_THROWS_AS(add_recording_entry(r, KEY, GOOD), PatternError);  // twice
  RecordingKey k = KEY;
  k.family = "gemm/bf16";
  REQUIRE_THROWS_AS(add_recording_entry(r, k, GOOD), PatternError);
  REQUIRE_THROWS_AS(add_recording_entry(r,
                                        [] {
                                          RecordingKey x = KEY;
                                          x.case_id += "_c";
                                          return x;
                                        }(),
                                        {}),
                    PatternError);
  REQUIRE_THROWS_AS(new_recording({"H100", "", "", "", ""}), PatternError);
}

TEST_CASE("accepted recordings: written into the pattern directory, covered by the manifest, loaded back",
          "[recording]") {
  const fs::path tmp = fs::temp_directory_path() / ("sdc_recording_" + std::to_string(getpid()));
  make_pattern_dir(tmp);
  const std::string dir = tmp.string();
  REQUIRE(load_recorded_goldens(dir).empty());

  RecordingKey other = KEY;
  other.case_id = "gemm_bf16.uniform_512";
  const ConsensusResult r =
      merge_recordings({device("GPU-a", {{KEY, GOOD}, {other, BAD}}), device("GPU-b", GOOD), device("GPU-c", BAD)});
  write_recorded_goldens(dir, r.accepted_recordings());
  const std::string rel = "recordings/sm_90/gemm_bf16.json";
  REQUIRE(fs::exists(tmp / rel));
  REQUIRE(read_file(dir + "/manifest.json").find(rel) != std::string::npos);
  REQUIRE_NOTHROW(load_patterns(dir));  // the goldens' loader leaves recordings/ alone

  const RecordedGoldens g = load_recorded_goldens(dir);
  REQUIRE(g.size() == 2);
  const AcceptedRecording* a = find_recorded_golden(g, KEY);
  REQUIRE(a != nullptr);
  REQUIRE(a->tile_digests == GOOD);
  REQUIRE(uuids(a->dissenters) == std::vector<std::string>{"GPU-c"});
  REQUIRE(find_recorded_golden(g, other)->provisional);
  RecordingKey elsewhere = KEY;
  elsewhere.architecture = "sm_80";
  REQUIRE(find_recorded_golden(g, elsewhere) == nullptr);

  // A second run updates its keys and keeps the others.
  write_recorded_goldens(
      dir,
      merge_recordings({device("GPU-d", {{other, GOOD}}), device("GPU-e", {{other, GOOD}})}).accepted_recordings());
  const RecordedGoldens g2 = load_recorded_goldens(dir);
  REQUIRE(g2.size() == 2);
  REQUIRE(find_recorded_golden(g2, other)->tile_digests == GOOD);
  REQUIRE_FALSE(find_recorded_golden(g2, other)->provisional);
  REQUIRE(find_recorded_golden(g2, KEY)->tile_digests == GOOD);

  // `golden` rewrites the manifest: the recordings entry survives.
  const PatternSet ps = load_patterns(dir);
  write_goldens(dir, ps.battery, ps.golden);
  REQUIRE(load_recorded_goldens(dir).size() == 2);

  // A modified accepted file fails its manifest check, for the screen's loader and for the next --write.
  std::string text = read_file(dir + "/" + rel);
  replace(text, "\"provisional\": false", "\"provisional\": true ");
  { std::ofstream(tmp / rel, std::ios::binary) << text; }
  try {
    load_recorded_goldens(dir);
    FAIL("a modified accepted-recordings file was loaded");
  } catch (const PatternError& e) {
    REQUIRE(std::string(e.what()).find(rel + ": content hash") != std::string::npos);
  }
  REQUIRE_THROWS_AS(write_recorded_goldens(dir, r.accepted_recordings()), PatternError);
  fs::remove_all(tmp);
}

TEST_CASE("the accepted-recordings parser enforces the consensus rules", "[recording]") {
  const ConsensusResult r = merge_recordings({device("GPU-a", GOOD), device("GPU-b", GOOD), device("GPU-c", BAD)});
  const std::string good = render_recorded_goldens("sm_90", "gemm_bf16", r.accepted_recordings());
  REQUIRE(parse_recorded_goldens("acc.json", good).size() == 1);
  auto error = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    if (!from.empty())
      replace(t, from, to);
    else
      t = to;
    try {
      parse_recorded_goldens("acc.json", t);
      return std::string();
    } catch (const PatternError& e) {
      return std::string(e.what());
    }
  };
  auto has = [](const std::string& msg, const char* what) {
    INFO(msg);
    REQUIRE(msg.rfind("acc.json: ", 0) == 0);
    REQUIRE(msg.find(what) != std::string::npos);
  };
  has(error("\"provisional\": false", "\"provisional\": true"), "'provisional' must be false with 2 voters");
  has(error("\"provisional\": false", "\"provisional\": 0"), "not true or false");
  has(error("\"uuid\": \"GPU-b\"", "\"uuid\": \"GPU-a\""), "device GPU-a is listed twice");
  has(error("sdcscreen-recorded-goldens", "sdcscreen-recording"), "format is");
  has(error("\"unstable\": []", "\"unstable\": {}"), "'unstable' is not an array");
  has(error("\"dissenters\"", "\"extra\": 1, \"dissenters\""), "unknown member 'extra'");
  // A minority golden, as a hand edit could make it.
  AcceptedRecording minority = r.accepted_recordings()[0];
  minority.voters.pop_back();
  minority.provisional = true;
  has(error("", render_recorded_goldens("sm_90", "gemm_bf16", {minority})),
      "1 voters are not a strict majority over 1");
  nlohmann::json twice = nlohmann::json::parse(good);
  twice["entries"].push_back(twice["entries"][0]);
  has(error("", twice.dump()), "entries[1] (gemm_bf16.uniform_256): duplicate key");
}
