// Which arithmetic does the fp64 tensor-core instruction mma.sync.m8n8k4.f64 perform? Writes A, B, C, D of
// many random tiles as raw bits; the analysis (exact rational arithmetic) is done offline.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

__device__ __host__ inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// random double: random sign, 53-bit significand, exponent in [-span, span]
__device__ __host__ inline double rnd(uint64_t key, int span) {
  uint64_t h = mix64(key), g = mix64(h ^ 0x1234567ULL);
  uint64_t frac = h & ((1ULL << 52) - 1);
  int e = (int)(g % (uint64_t)(2 * span + 1)) - span;
  uint64_t bits = ((g >> 40) & 1ULL) << 63 | (uint64_t)(e + 1023) << 52 | frac;
  double d; memcpy(&d, &bits, 8); return d;
}

// one warp per trial; A 8x4 row-major, B 4x8 (k rows), C/D 8x8 row-major
__global__ void probe(int span, uint64_t seed, double* A, double* B, double* C, double* D, int zeroC) {
  int t = blockIdx.x, lane = threadIdx.x;
  double* a = A + t * 32; double* b = B + t * 32; double* c = C + t * 64; double* d = D + t * 64;
  int g = lane >> 2, q = lane & 3;
  // generate into global (each lane its own elements)
  double av = rnd(seed ^ (uint64_t)(t * 1000 + g * 4 + q) * 0x9e3779b97f4a7c15ULL, span);
  double bv = rnd(seed ^ (uint64_t)(t * 1000 + 100 + q * 8 + g) * 0x9e3779b97f4a7c15ULL, span);
  double c0 = zeroC ? 0.0 : rnd(seed ^ (uint64_t)(t * 1000 + 200 + g * 8 + 2 * q) * 0x9e3779b97f4a7c15ULL, span);
  double c1 = zeroC ? 0.0 : rnd(seed ^ (uint64_t)(t * 1000 + 200 + g * 8 + 2 * q + 1) * 0x9e3779b97f4a7c15ULL, span);
  a[g * 4 + q] = av;          // A[row g][k q]
  b[q * 8 + g] = bv;          // B[k q][col g]
  c[g * 8 + 2 * q] = c0; c[g * 8 + 2 * q + 1] = c1;
  double d0, d1;
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
               : "=d"(d0), "=d"(d1) : "d"(av), "d"(bv), "d"(c0), "d"(c1));
  d[g * 8 + 2 * q] = d0; d[g * 8 + 2 * q + 1] = d1;
}

int main(int argc, char** argv) {
  const char* out = argv[1];
  const int trials = 1024;
  int spans[] = {0, 4, 30, 60};
  FILE* f = fopen(out, "wb");
  for (int zc = 0; zc < 2; ++zc)
  for (int s : spans) {
    double *A, *B, *C, *D;
    cudaMalloc(&A, trials * 32 * 8); cudaMalloc(&B, trials * 32 * 8);
    cudaMalloc(&C, trials * 64 * 8); cudaMalloc(&D, trials * 64 * 8);
    probe<<<trials, 32>>>(s, 0xC0FFEEULL + s * 7 + zc, A, B, C, D, zc);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { fprintf(stderr, "cuda error %s\n", cudaGetErrorString(e)); return 1; }
    std::vector<double> h(trials * 192);
    cudaMemcpy(h.data(), A, trials * 32 * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(h.data() + trials * 32, B, trials * 32 * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(h.data() + trials * 64, C, trials * 64 * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(h.data() + trials * 128, D, trials * 64 * 8, cudaMemcpyDeviceToHost);
    int hdr[3] = {trials, s, zc};
    fwrite(hdr, 4, 3, f); fwrite(h.data(), 8, h.size(), f);
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(D);
  }
  fclose(f);
  printf("wrote %s\n", out);
  return 0;
}
