/* Compiled into the executables of a portable build only (SDC_PORTABLE_BINARIES, CMakeLists.txt), which link
 * the C++ runtime statically so that the GPU bundle runs on an older C library than the one it was built on.
 * libstdc++.a's std::random_device (GCC 12, glibc 2.36 headers) calls arc4random, which glibc has only from
 * 2.36 on: the one symbol that would keep the binaries at 2.36. This definition satisfies the static link
 * first, so the binaries need the C library's getrandom (2.25) instead. The same contract: 32 random bits
 * from the kernel's generator, never failing. */
#include <stdint.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t v = 0;
  /* Interrupted by a signal, or a short read (never for 4 bytes from the urandom source): ask again. */
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
  }
  return v;
}
