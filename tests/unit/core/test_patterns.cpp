// Pattern loading in-process: the source patterns load, and the loader refuses data that does not match
// the manifest (the end-to-end test covers every broken variant through the binary and its exit code).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "src/core/patterns.h"
#include "src/core/patterns_location.h"
#include "src/util/atomic_file.h"
#include "tests/unit/catch.h"

using namespace sdc;
namespace fs = std::filesystem;

TEST_CASE("the source patterns load and cover every family and profile", "[patterns]") {
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  for (const char* p : {"boot", "standard", "burnin"}) REQUIRE(ps.battery.find_profile(p) != nullptr);
  for (const Family& f : families()) {
    bool in_boot = false;
    for (const Case& c : ps.battery.cases) in_boot = in_boot || (c.family == f.id && c.iterations.count("boot"));
    INFO(f.id);
    REQUIRE(in_boot);
  }
  size_t exact = 0;
  for (const Case& c : ps.battery.cases) exact += has_cpu_golden(c.mode);
  REQUIRE(exact < ps.battery.cases.size());  // recorded cases exist, and have no CPU golden
  REQUIRE(ps.golden.size() == exact);
}

TEST_CASE("a modified pattern file is refused, naming the file", "[patterns]") {
  const fs::path tmp = fs::temp_directory_path() / ("sdc_patterns_" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::copy(std::string(SDC_SOURCE_DIR) + "/patterns", tmp, fs::copy_options::recursive);
  REQUIRE_NOTHROW(load_patterns(tmp.string()));
  std::string text = read_file((tmp / "battery.json").string());
  text[text.size() / 2] ^= 1;
  { std::ofstream(tmp / "battery.json", std::ios::binary) << text; }
  try {
    load_patterns(tmp.string());
    FAIL("a modified battery.json was accepted");
  } catch (const PatternError& e) {
    REQUIRE(std::string(e.what()).find("battery.json") != std::string::npos);
  }
  fs::remove_all(tmp);
}

TEST_CASE("atomic writes replace the file and leave no temporary behind", "[patterns]") {
  const fs::path dir = fs::temp_directory_path() / ("sdc_atomic_" + std::to_string(getpid()));
  fs::create_directories(dir);
  write_file_atomic((dir / "f").string(), "one");
  write_file_atomic((dir / "f").string(), "two");
  REQUIRE(read_file((dir / "f").string()) == "two");
  REQUIRE(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}) == 1);
  REQUIRE_THROWS_AS(write_file_atomic((dir / "missing" / "f").string(), "x"), FileError);
  fs::remove_all(dir);
}

TEST_CASE("atomic writes refuse a symbolic link and what is not a regular file", "[patterns]") {
  const fs::path dir = fs::temp_directory_path() / ("sdc_atomic_kinds_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  // A link, to a file or to none (one planted in a shared directory): never followed, never replaced.
  write_file_atomic((dir / "real" / "r.json").string(), "old");
  fs::create_symlink(dir / "real" / "r.json", dir / "link.json");
  fs::create_symlink(dir / "real" / "later.json", dir / "dangling.json");
  // A FIFO (or a device: /dev/null as root) is never renamed over.
  REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
  for (const char* name : {"link.json", "dangling.json", "fifo"}) {
    INFO(name);
    REQUIRE_THROWS_AS(check_writable((dir / name).string()), FileError);
    REQUIRE_THROWS_AS(write_file_atomic((dir / name).string(), "x"), FileError);
  }
  REQUIRE((fs::is_symlink(dir / "link.json") && fs::is_symlink(dir / "dangling.json") && fs::is_fifo(dir / "fifo")));
  REQUIRE(read_file((dir / "real" / "r.json").string()) == "old");
  REQUIRE_FALSE(fs::exists(dir / "real" / "later.json"));
  REQUIRE_THROWS_AS(write_file_atomic("/dev/null", "x"), FileError);
  REQUIRE(fs::is_character_file("/dev/null"));
  // The up-front check leaves nothing behind.
  check_writable((dir / "new.json").string());
  REQUIRE_FALSE(fs::exists(dir / "new.json"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  REQUIRE(entries == 4);  // real, link.json, dangling.json, fifo
  fs::remove_all(dir);
}

TEST_CASE("boot, standard and burn-in spend most of their GPU time on tensor-core families", "[patterns]") {
  // A nominal estimate, independent of any GPU: tensor-core families at 200 TFLOP/s, the fp32 (SIMT)
  // families at 20, and 50 us per iteration of every case for launches, the digest pass and the copy.
  const PatternSet ps = load_patterns(std::string(SDC_SOURCE_DIR) + "/patterns");
  auto tensor_family = [](const std::string& id) {
    for (const char* t : {"bf16", "f16", "tf32", "fp8"})
      if (id.find(t) != std::string::npos) return true;
    return false;
  };
  for (const char* profile : {"boot", "standard", "burnin"}) {
    double tensor_s = 0, total_s = 0;
    for (const Case& c : ps.battery.cases) {
      const auto it = c.iterations.find(profile);
      if (it == c.iterations.end()) continue;
      const auto p = find_family(c.family)->prepare(c);
      const double flops = p->tile_flops() * static_cast<double>(p->tile_count());
      const bool tensor = tensor_family(c.family);
      const double s = static_cast<double>(it->second) * (flops / (tensor ? 200e12 : 20e12) + 50e-6);
      total_s += s;
      if (tensor) tensor_s += s;
    }
    INFO(profile << ": tensor-core families " << tensor_s << " s of " << total_s << " s (nominal)");
    REQUIRE(total_s > 0);
    CHECK(tensor_s / total_s >= 0.9);
  }
  CHECK(tensor_family("gemm_bf16_cublaslt"));
  CHECK_FALSE(tensor_family("gemm_f32"));
  CHECK_FALSE(tensor_family("attention_f32"));
}

TEST_CASE("a cuBLASLt twin's goldens are its twin's, stored once", "[patterns]") {
  const std::string dir = std::string(SDC_SOURCE_DIR) + "/patterns";
  const PatternSet ps = load_patterns(dir);
  size_t shared = 0;
  for (const Case& c : ps.battery.cases) {
    const Family* f = find_family(c.family);
    REQUIRE(f != nullptr);
    const Case* twin = golden_twin_case(ps.battery, c);
    INFO(c.id);
    if (!f->goldens_of) {
      REQUIRE(twin == nullptr);
      continue;
    }
    ++shared;
    REQUIRE(twin != nullptr);
    REQUIRE(twin->family == f->goldens_of);
    REQUIRE(find_family(twin->family)->goldens_of == nullptr);
    // The same definition but for the family, so the same exact output.
    REQUIRE(twin->distribution == c.distribution);
    REQUIRE(twin->data_seed == c.data_seed);
    REQUIRE(twin->shape.dims == c.shape.dims);
    const GoldenCase& g = ps.golden.at(c.id);
    REQUIRE(g.fingerprint == case_fingerprint(c));
    REQUIRE(g.tile_digests == ps.golden.at(twin->id).tile_digests);
    REQUIRE(g.output_digest == ps.golden.at(twin->id).output_digest);
    REQUIRE(!fs::exists(dir + "/golden/" + c.family + ".json"));
  }
  REQUIRE(shared == 20);  // the four exact-integer cuBLASLt families, five cases each
}

TEST_CASE("a twin's golden follows the twin's case: without it the case has no golden", "[patterns]") {
  const std::string src = std::string(SDC_SOURCE_DIR) + "/patterns";
  Battery b = load_patterns(src).battery;
  const Case* lt = b.find_case("gemm_bf16_exactint_cublaslt.square_1024");
  REQUIRE(lt != nullptr);
  REQUIRE(golden_twin_case(b, *lt) == b.find_case("gemm_bf16_exactint.square_1024"));
  // Another seed for the twin's case: no case of the same definition is left.
  for (Case& c : b.cases)
    if (c.id == "gemm_bf16_exactint.square_1024") c.data_seed ^= 1;
  REQUIRE(golden_twin_case(b, *b.find_case("gemm_bf16_exactint_cublaslt.square_1024")) == nullptr);
}

TEST_CASE("the pattern lookup: environment, next to the executable, installed; nothing built in", "[patterns]") {
  const fs::path root = fs::temp_directory_path() / ("sdc_locate_" + std::to_string(getpid()));
  fs::remove_all(root);
  const fs::path bin = root / "prefix" / "bin", share = root / "prefix" / "share" / "sdcscreen" / "patterns",
                 beside = bin / "patterns", installed = root / "installed";
  for (const fs::path& d : {bin, share, installed}) fs::create_directories(d);
  const auto manifest = [](const fs::path& d) {
    fs::create_directories(d);
    std::ofstream(d / "manifest.json") << "{}";
  };

  // Nothing has a manifest: none found, and the message names every place looked in.
  PatternsLocation none = locate_patterns(nullptr, bin.string(), installed.string());
  CHECK(none.dir.empty());
  CHECK(none.looked_in.size() == 3);
  CHECK(none.not_found_message().find(installed.string()) != std::string::npos);
  CHECK(none.not_found_message().find("SDCSCREEN_PATTERNS") != std::string::npos);

  manifest(installed);
  CHECK(locate_patterns(nullptr, bin.string(), installed.string()).dir == installed.string());
  CHECK(locate_patterns(nullptr, bin.string(), installed.string()).how == "installed");
  CHECK(locate_patterns(nullptr, bin.string(), "").dir.empty());  // no installed location configured

  manifest(share);  // an install prefix, wherever it was moved
  const PatternsLocation prefix = locate_patterns(nullptr, bin.string(), installed.string());
  CHECK(fs::equivalent(prefix.dir, share));
  CHECK(prefix.how == "next to the executable");

  manifest(beside);  // a bundle, or a build tree's link
  CHECK(locate_patterns(nullptr, bin.string(), installed.string()).dir == (bin / "patterns").string());

  // The environment wins, taken as given even where nothing is (a wrong value must fail on load, never fall back
  // to other data); an empty value counts as unset.
  const PatternsLocation env = locate_patterns("/nonexistent/patterns", bin.string(), installed.string());
  CHECK(env.dir == "/nonexistent/patterns");
  CHECK(env.how == "SDCSCREEN_PATTERNS");
  CHECK(locate_patterns("", bin.string(), installed.string()).dir == (bin / "patterns").string());
  fs::remove_all(root);
}
