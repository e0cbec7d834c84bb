// A case prepared through its family, with its input tensors generated whole as the executors generate them:
// the unit tests' way to a problem whose tiles they compute.
#pragma once

#include <memory>
#include <vector>

#include "tests/unit/catch.h"
#include "src/core/family.h"

namespace sdc::test {

struct CaseInputs {
  std::unique_ptr<Problem> p;
  std::vector<std::vector<float>> in;  // the input tensors, in the problem's order
  std::vector<const float*> ptrs;      // their data, as compute_tile takes it
};

// The case's family must exist and accept it (both checked).
inline CaseInputs prepare_inputs(const Case& c) {
  CaseInputs r;
  const Family* f = find_family(c.family);
  REQUIRE(f != nullptr);
  REQUIRE(f->validate(c).empty());
  r.p = f->prepare(c);
  for (const TensorInfo& t : r.p->inputs()) {
    r.in.emplace_back(t.elements);
    r.p->generate_input(r.in.size() - 1, 0, t.elements, r.in.back().data());
  }
  for (const std::vector<float>& v : r.in) r.ptrs.push_back(v.data());
  return r;
}

// Every tile t of the case computed both ways, the fast path and the specification: check(t, fast, spec).
template <class Check>
void for_each_tile_both_ways(const CaseInputs& in, Check check) {
  std::vector<float> fast(in.p->tile_elements()), spec(in.p->tile_elements());
  Workspace ws;
  for (uint64_t t = 0; t < in.p->tile_count(); ++t) {
    in.p->compute_tile(in.ptrs.data(), t, fast.data(), ws);
    in.p->compute_tile_scalar(in.ptrs.data(), t, spec.data());
    check(t, fast, spec);
  }
}

}  // namespace sdc::test
