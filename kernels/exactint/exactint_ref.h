// The CPU side shared by the exact-integer GEMM families: shape validation and the Problem (input
// generation and the exact reference). Each family's <id>_ref.cpp binds its Format to these.
#pragma once

#include <memory>
#include <string>

#include "../../src/core/family.h"
#include "exactint.h"

namespace sdc::exactint {

// "" when the case can run exactly, else one line naming what is wrong (shape, K beyond the bound,
// a distribution the pattern does not define).
std::string validate(const Format& f, const Case& c);

// Only for a validated case.
std::unique_ptr<Problem> prepare(const Format& f, const Case& c);

// The pattern of a validated case (its shape's K, its seed and distribution).
Pattern case_pattern(const Format& f, const Case& c);

}  // namespace sdc::exactint
