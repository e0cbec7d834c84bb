# The determinism contract (docs/design.md): the compiler never fuses or splits floating-point operations
# on its own, no fast-math, subnormals kept. -fno-math-errno only lets sqrt inline; it changes no result.
# Shared by the main build and the fuzz build so that they cannot drift apart.
set(SDC_FP_FLAGS -ffp-contract=off -fno-fast-math -fno-math-errno -fno-finite-math-only)
set(SDC_WARN_FLAGS -Wall -Wextra)
