// The CPU side shared by the recorded tensor-core GEMMs: shape validation and the Problem (geometry,
// input generation, tile names). It has no CPU reference: recorded and consensus cases are judged on GPUs.
#pragma once

#include <memory>
#include <string>

#include "recorded_gemm.h"

namespace sdc::recorded_gemm {

// "" when the case is valid, else one line naming what is wrong.
std::string validate(const Case& c);
// Only for a validated case.
std::unique_ptr<Problem> prepare(const Encoding& e, const Case& c);
// The pattern of a validated case.
Pattern case_pattern(const Encoding& e, const Case& c);

}  // namespace sdc::recorded_gemm
