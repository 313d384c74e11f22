// Session 44: does mma.sync m16n8k16 (BF16 in, f32 accumulate) on sm_90 take subnormal BF16
// operands and produce tiny f32 products exactly, or flush them? The decode's E2M1 expansion
// places a code's bits in a BF16 word as e2m1 x 2^-126 (codes 0 and 1, i.e. 0 and 0.5, land in
// the subnormal range) and one HMUL2 per pair multiplies by the scale and 2^126 (64 HMUL2 a ring
// round, 24% of its instructions). Scaling after the MMA (the f32 partials of each 32-k block
// times the scale) would skip that multiply only if the tensor cores take the unscaled words as
// they are. Checks, per activation scale 2^S (S = 0: products near 2^-126, f32's own subnormal
// range; larger S: products normal): the MMA's outputs against exact sums (double precision, then
// rounded to f32), against the same sums with subnormal A flushed to zero, and the largest
// relative error. A probe of the hardware, not a test of an engine kernel.
// Standalone: nvcc -O3 -std=c++20 -arch=sm_90a -o mma_subnormal_probe mma_subnormal_probe.cu
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench_common.cuh"

// One warp: D (16 x 8, f32) = A (16 x 16, bf16 bits, row-major) x B (16 x 8, bf16 bits, B[k][n]
// at k * 8 + n) with a zero accumulator, in mma.sync's fragment layout (PTX ISA, m16n8k16).
__global__ void mma_kernel(const uint16_t* a, const uint16_t* b, float* d) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  const auto pack = [](uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); };
  const uint32_t a0 = pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  const uint32_t a1 = pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  const uint32_t a2 = pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  const uint32_t a3 = pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  const uint32_t b0 = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  const uint32_t b1 = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float d0, d1, d2, d3;
  const float z = 0.0f;
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(z), "f"(z), "f"(z), "f"(z));
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}

double bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t bf16_of(float f) {  // f exactly representable (built from a few mantissa bits)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}

int main() {
  std::mt19937 rng(44);
  uint16_t *da, *db;
  float* dd;
  CK(cudaMalloc(&da, 256 * 2));
  CK(cudaMalloc(&db, 128 * 2));
  CK(cudaMalloc(&dd, 128 * 4));
  printf(
      "mma_subnormal_probe: A = e2m1 codes as (code << 6) BF16 words (e2m1 x 2^-126; codes 0/1 "
      "subnormal),"
      " B = random 3-bit-mantissa BF16 in +-[2^-3, 2^3) times 2^S\n");
  for (int S : {0, 20, 40, 60, 100, 120}) {
    int exact = 0, flushed_match = 0, total = 0, trials = 20;
    double worst = 0.0;
    for (int trial = 0; trial < trials; ++trial) {
      std::vector<uint16_t> a(256), b(128);
      for (auto& w : a) {
        const uint32_t code = rng() & 15u;  // sign bit 3, magnitude bits 2..0
        w = uint16_t(((code & 8u) << 12) | ((code & 7u) << 6));
      }
      for (auto& w : b) {
        const int e = int(rng() % 6) - 3;
        const float m = 1.0f + float(rng() & 7u) / 8.0f;
        w = bf16_of(std::ldexp((rng() & 1u) ? -m : m, e + S));
      }
      CK(cudaMemcpy(da, a.data(), 512, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(db, b.data(), 256, cudaMemcpyHostToDevice));
      mma_kernel<<<1, 32>>>(da, db, dd);
      CK(cudaGetLastError());
      std::vector<float> d(128);
      CK(cudaMemcpy(d.data(), dd, 512, cudaMemcpyDeviceToHost));
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n) {
          double s = 0.0, sf = 0.0, mag = 0.0;
          for (int k = 0; k < 16; ++k) {
            const double av = bf16_value(a[m * 16 + k]), bv = bf16_value(b[k * 8 + n]);
            s += av * bv;
            mag += std::fabs(av * bv);
            if ((a[m * 16 + k] & 0x7F80u) != 0) sf += av * bv;  // subnormal A flushed
          }
          ++total;
          exact += float(s) == d[m * 8 + n];
          flushed_match += float(sf) == d[m * 8 + n];
          if (mag > 0) worst = std::fmax(worst, std::fabs(double(d[m * 8 + n]) - s) / mag);
        }
    }
    printf(
        "S = %3d: products ~2^%d: %d / %d outputs equal the exact sum rounded to f32, %d / %d the "
        "sum with subnormal A flushed; max |error| / sum|products| %.3e\n",
        S, S - 126, exact, total, flushed_match, total, worst);
  }
  return 0;
}
