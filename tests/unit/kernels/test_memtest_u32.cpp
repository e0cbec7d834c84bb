// memtest_u32 on the CPU: the healthy record is the fixed one (written out here by hand), and a memory fault
// (--inject target=memory) between a pass's write and its read makes exactly its slice's record name the pass,
// the word (its byte offset in the region), the word expected and the word read, whatever order the pass reads in;
// the drill's checks and the case's shape rules.
#include <cstring>
#include <vector>

#include "kernels/memtest_u32/memtest_u32.h"
#include "src/core/inject.h"
#include "tests/unit/case_inputs.h"
#include "tests/unit/catch.h"

using namespace sdc;

namespace {

constexpr int64_t SLICES = 4, WORDS = 256;

Case mem_case(int64_t region_mib = 256, int64_t permille = 0) {
  Case c;
  c.id = "memtest_u32.unit_test";
  c.family = "memtest_u32";
  c.shape.dims = {
      {"slices", SLICES}, {"cpu_slice_words", WORDS}, {"region_mib", region_mib}, {"free_permille", permille}};
  c.iterations["boot"] = 1;
  return c;
}

std::vector<uint32_t> words(const std::vector<float>& t) {
  std::vector<uint32_t> w(t.size());
  std::memcpy(w.data(), t.data(), 4 * t.size());
  return w;
}

// The healthy record: ten zero counts, no first pass, no offset (all ones), expected and read 0, no SM.
const std::vector<uint32_t> HEALTHY = {0, 0, 0,           0,           0,           0, 0, 0,
                                       0, 0, 0xffffffffu, 0xffffffffu, 0xffffffffu, 0, 0, 0xffffffffu};

Injection memory_fault(const std::string& spec, const Problem& p, uint64_t& tile) {
  Injection inj;
  REQUIRE(parse_injection(spec, inj).empty());
  REQUIRE(inj.memory);
  REQUIRE(p.check_memory_fault(inj, tile).empty());
  return inj;
}

// The record of tile `tile` computed with the fault, and every other tile's computed with it too (unchanged).
std::vector<uint32_t> faulty_record(const test::CaseInputs& k, const Injection& inj, uint64_t tile) {
  std::vector<float> out(16);
  Workspace ws;
  for (uint64_t t = 0; t < k.p->tile_count(); ++t) {
    const bool hit = k.p->compute_tile_with_memory_fault(k.ptrs.data(), t, out.data(), ws, inj);
    REQUIRE(hit == (t == tile));
    if (t != tile) REQUIRE(words(out) == HEALTHY);
  }
  REQUIRE(k.p->compute_tile_with_memory_fault(k.ptrs.data(), tile, out.data(), ws, inj));
  return words(out);
}

}  // namespace

TEST_CASE("memtest_u32: every slice's healthy record is the fixed one, on both paths", "[families][memtest]") {
  const test::CaseInputs k = test::prepare_inputs(mem_case());
  REQUIRE(k.p->inputs().empty());
  REQUIRE(k.p->tile_count() == SLICES);
  REQUIRE(k.p->tile_elements() == 16);
  test::for_each_tile_both_ways(k, [](uint64_t, const std::vector<float>& fast, const std::vector<float>& spec) {
    REQUIRE(words(fast) == HEALTHY);
    REQUIRE(words(spec) == HEALTHY);
  });
}

TEST_CASE("memtest_u32: a memory fault names its pass, word and bits in its slice's record", "[families][memtest]") {
  const test::CaseInputs k = test::prepare_inputs(mem_case());
  uint64_t tile = 0;
  SECTION("a flip read by the walking ones") {
    // Word 2 x 256 + 37 of the region holds 1 << 5 after the first sweep; bit 5 flips before pass 0 reads it.
    const uint64_t w = 2 * WORDS + 37;
    const Injection inj = memory_fault("case=x,target=memory,element=549,bit=5", *k.p, tile);
    REQUIRE(tile == 2);
    const std::vector<uint32_t> r = faulty_record(k, inj, tile);
    REQUIRE(r[0] == 1);  // walking_ones saw one mismatch, no later pass any (the next sweep rewrote the word)
    for (int p = 1; p < 10; ++p) REQUIRE(r[p] == 0);
    REQUIRE(r[10] == 0);
    REQUIRE((uint64_t{r[12]} << 32 | r[11]) == 4 * w);
    REQUIRE(r[13] == 0x20u);
    REQUIRE(r[14] == 0u);
    REQUIRE(r[15] == 0xffffffffu);  // no SM on the CPU
  }
  SECTION("a stuck bit in the address pass") {
    // Word 3 x 256 + 200 holds its own index (800: no high half to fold) when pass address reads it.
    const Injection inj =
        memory_fault("case=x,target=memory,element=968,mask=0x00010001,stuck=1,pass=address", *k.p, tile);
    REQUIRE(tile == 3);
    const std::vector<uint32_t> r = faulty_record(k, inj, tile);
    REQUIRE(r[8] == 1);
    REQUIRE(r[10] == 8);
    REQUIRE((uint64_t{r[12]} << 32 | r[11]) == 4 * 968u);
    REQUIRE(r[13] == 968u);
    REQUIRE(r[14] == (968u | 0x00010001u));
    REQUIRE(memtest_u32::pass_name(8) == std::string("address"));
  }
  SECTION("two words of a descending pass: the record names the lower, which the pass reads last") {
    const Injection inj = memory_fault(
        "case=x,target=memory,element=300,count=2,stride=7,bit=31,stuck=0,pass=inversions_ff_down", *k.p, tile);
    REQUIRE(tile == 1);
    const std::vector<uint32_t> r = faulty_record(k, inj, tile);
    REQUIRE(r[3] == 2);
    REQUIRE(r[10] == 3);
    REQUIRE((uint64_t{r[12]} << 32 | r[11]) == 4 * 300u);
    REQUIRE(r[13] == 0xffffffffu);
    REQUIRE(r[14] == 0x7fffffffu);
  }
}

TEST_CASE("memtest_u32: the memory drill's checks and the shape rules", "[families][memtest]") {
  const Family& f = *find_family("memtest_u32");
  const test::CaseInputs k = test::prepare_inputs(mem_case());
  uint64_t tile = 0;
  Injection inj;
  REQUIRE(parse_injection("case=x,target=memory,element=5,bit=1,pass=nonesuch", inj).empty());
  REQUIRE(k.p->check_memory_fault(inj, tile).find("walking_ones") != std::string::npos);
  REQUIRE(parse_injection("case=x,target=memory,element=1024,bit=1", inj).empty());  // past 4 x 256 words
  REQUIRE(!k.p->check_memory_fault(inj, tile).empty());
  REQUIRE(parse_injection("case=x,target=memory,element=1020,count=2,stride=4,bit=1", inj).empty());
  REQUIRE(!k.p->check_memory_fault(inj, tile).empty());
  REQUIRE(!parse_injection("case=x,element=5,bit=1,pass=address", inj).empty());  // pass= needs target=memory
  REQUIRE(!parse_injection("case=x,target=memory,element=5,bit=1,submodule=layer0", inj).empty());
  // A family that tests no memory refuses the drill.
  Case g;
  g.id = "reduce_sum_f64.unit_test";
  g.family = "reduce_sum_f64";
  g.shape.dims = {{"rows", 16}, {"cols", 8}};
  REQUIRE(parse_injection("case=x,target=memory,element=5,bit=1", inj).empty());
  REQUIRE(!find_family("reduce_sum_f64")->prepare(g)->check_memory_fault(inj, tile).empty());
  // Exactly one of a fixed region and a share of the free memory; cpu_slice_words a multiple of 4.
  REQUIRE(f.validate(mem_case(256, 0)).empty());
  REQUIRE(f.validate(mem_case(0, 900)).empty());
  REQUIRE(!f.validate(mem_case(0, 0)).empty());
  REQUIRE(!f.validate(mem_case(256, 900)).empty());
  REQUIRE(!f.validate(mem_case(0, 990)).empty());
  Case odd = mem_case();
  odd.shape.dims["cpu_slice_words"] = 6;
  REQUIRE(!f.validate(odd).empty());
}
