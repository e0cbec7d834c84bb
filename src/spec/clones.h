// Instruction-set clones of a CPU hot loop (GCC's target_clones), one of which the loader picks at start-up
// for the CPU at hand; every clone computes the same bits (lanes are independent outputs, integer sums are
// associative). Not under sanitizers: their runtime is not ready when the loader runs the clones' ifunc
// resolvers (a ThreadSanitizer build crashes before main).
#pragma once

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SDC_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#else
#define SDC_TARGET_CLONES(...)
#endif
