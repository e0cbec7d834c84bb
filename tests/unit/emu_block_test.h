// Shared by the emulated device's execution-engine tests (test_emu_block.cpp, test_emu_block_faults.cpp).
#pragma once

#include <string>

#include "src/backends/emu/block.h"

namespace sdc::test {

// Runs f() as the body of every thread of one block.
template <typename F>
void launch(emu::BlockRunner& r, emu::Dim3 block, F& f, const char* kernel = "test_kernel", emu::Dim3 block_idx = {}) {
  r.run(
      kernel, emu::Dim3{4, 2, 1}, block, block_idx, 3, 132, 0, [](void* p) { (*static_cast<F*>(p))(); }, &f);
}

// What a block of f raises (a KernelFault's message), or "no fault".
inline std::string fault_of(emu::BlockRunner& r, emu::Dim3 block, auto& f, emu::Dim3 block_idx = {}) {
  try {
    launch(r, block, f, "faulty_kernel", block_idx);
  } catch (const emu::KernelFault& e) {
    return e.what();
  }
  return "no fault";
}

}  // namespace sdc::test
