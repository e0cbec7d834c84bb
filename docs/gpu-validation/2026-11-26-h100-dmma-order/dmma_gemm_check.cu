// Does a GEMM built of mma.sync.m8n8k4.f64 steps, chained in increasing k, give every output the bits of the
// plain specification (one fma chain per output over k in order, from +0)? Naive kernel: one warp per 8 x 8
// block of C; the k tail padded with products of -0 (A = -0, B = +0), the identity of round-to-nearest addition.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static double rnd(uint64_t key, int span, int zero_one_in) {
  uint64_t h = mix64(key), g = mix64(h ^ 0x1234567ULL);
  if (zero_one_in && (g >> 50) % zero_one_in == 0) return ((g >> 40) & 1) ? -0.0 : 0.0;
  uint64_t frac = h & ((1ULL << 52) - 1);
  int e = (int)(g % (uint64_t)(2 * span + 1)) - span;
  uint64_t bits = ((g >> 40) & 1ULL) << 63 | (uint64_t)(e + 1023) << 52 | frac;
  double d; memcpy(&d, &bits, 8); return d;
}

__global__ void dmma_gemm(const double* A, const double* B, double* C, int M, int N, int K) {
  int blocks_n = N / 8, t = blockIdx.x, lane = threadIdx.x;
  int r0 = (t / blocks_n) * 8, c0 = (t % blocks_n) * 8, g = lane >> 2, q = lane & 3;
  double d0 = 0.0, d1 = 0.0;
  for (int k0 = 0; k0 < K; k0 += 4) {
    int k = k0 + q;
    double a = k < K ? A[(size_t)(r0 + g) * K + k] : -0.0;
    double b = k < K ? B[(size_t)k * N + c0 + g] : 0.0;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(d0), "+d"(d1) : "d"(a), "d"(b));
  }
  C[(size_t)(r0 + g) * N + c0 + 2 * q] = d0;
  C[(size_t)(r0 + g) * N + c0 + 2 * q + 1] = d1;
}

int main() {
  struct Shape { int m, n, k, span, zeros; } shapes[] = {
      {64, 64, 1, 30, 0}, {64, 64, 3, 30, 0}, {64, 64, 4, 30, 0}, {64, 64, 5, 30, 0}, {64, 64, 127, 30, 0},
      {128, 128, 1024, 30, 0}, {128, 64, 4097, 8, 0}, {64, 64, 33, 30, 3}, {64, 64, 6, 0, 2}, {256, 256, 512, 60, 0},
      {64, 128, 2050, 1, 0}, {64, 64, 7, 30, 1}};
  long total = 0, bad = 0, neg_zero = 0;
  for (const Shape& s : shapes) {
    std::vector<double> a((size_t)s.m * s.k), b((size_t)s.k * s.n), c((size_t)s.m * s.n), ref(c.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = rnd(0xA000000000ULL + i * 7919 + s.k, s.span, s.zeros);
    for (size_t i = 0; i < b.size(); ++i) b[i] = rnd(0xB000000000ULL + i * 104729 + s.k, s.span, s.zeros);
    for (int i = 0; i < s.m; ++i)
      for (int j = 0; j < s.n; ++j) {
        double acc = 0.0;
        for (int k = 0; k < s.k; ++k) acc = std::fma(a[(size_t)i * s.k + k], b[(size_t)k * s.n + j], acc);
        ref[(size_t)i * s.n + j] = acc;
      }
    double *da, *db, *dc;
    cudaMalloc(&da, a.size() * 8); cudaMalloc(&db, b.size() * 8); cudaMalloc(&dc, c.size() * 8);
    cudaMemcpy(da, a.data(), a.size() * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b.data(), b.size() * 8, cudaMemcpyHostToDevice);
    dmma_gemm<<<(s.m / 8) * (s.n / 8), 32>>>(da, db, dc, s.m, s.n, s.k);
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) { printf("cuda error %s\n", cudaGetErrorString(e)); return 1; }
    cudaMemcpy(c.data(), dc, c.size() * 8, cudaMemcpyDeviceToHost);
    long mism = 0, nz = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      uint64_t x, y; memcpy(&x, &c[i], 8); memcpy(&y, &ref[i], 8);
      mism += x != y;
      nz += y == 0x8000000000000000ULL;
    }
    printf("m %d n %d k %d span %d zeros 1/%d: %zu outputs, %ld differ in bits from the fma chain, %ld are -0\n",
           s.m, s.n, s.k, s.span, s.zeros, c.size(), mism, nz);
    total += c.size(); bad += mism; neg_zero += nz;
    cudaFree(da); cudaFree(db); cudaFree(dc);
  }
  printf("TOTAL %ld outputs, %ld mismatches, %ld negative zeros\n", total, bad, neg_zero);
  return bad != 0;
}
