// Probe (session 14, IDX11): are FP8 wgmma (m64n64k32 e4m3 x e4m3, f32 accumulate, A from
// registers) block sums of E2M1 products exact on sm_90a? E2M1 codes are placed at E4M3 bits
// {7, 4, 3, 2} (the value x 2^-6, exact); a 32-dim block's sum of products is then a multiple of
// 2^-14 below 2^-1. Modes: `shift` puts B's codes up to 2^6 higher (E4M3 exponent bits 6..5: a
// power-of-two query scale folded into the codes); chained: the four k32 blocks in one accumulator
// (scale-d 1). Prints mismatches against the exact (double) sums per mode.
// Built as the bench target fp8_exact_probe (bench/kernels/CMakeLists.txt).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cuda/wgmma_common.cuh"
#include "backends/cuda/wgmma_fp8.cuh"

using namespace dsv4::cuda;

// a: [64][128] e4m3 bytes (row = key), b: [64][128] (row = head), out: [5][64][64] (blocks 0..3
// each with a fresh accumulator, then the four chained).
__global__ void __launch_bounds__(128) probe(const uint8_t* a, const uint8_t* b, float* out) {
  __shared__ __align__(1024) uint8_t bs[64 * 128];
  for (int i = threadIdx.x; i < 64 * 8; i += 128) {
    const int r = i / 8, c = i % 8;
    *reinterpret_cast<uint4*>(bs + r * 128 + ((c ^ (r & 7)) << 4)) =
        *reinterpret_cast<const uint4*>(b + r * 128 + c * 16);
  }
  wgmma::fence_async_smem();
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t b_s = uint32_t(__cvta_generic_to_shared(bs));
  auto frag = [&](int k, uint32_t(&f)[4]) {
    const int r0 = 16 * warp + g, r1 = r0 + 8;
    f[0] = *reinterpret_cast<const uint32_t*>(a + r0 * 128 + 32 * k + 4 * t);
    f[1] = *reinterpret_cast<const uint32_t*>(a + r1 * 128 + 32 * k + 4 * t);
    f[2] = *reinterpret_cast<const uint32_t*>(a + r0 * 128 + 32 * k + 16 + 4 * t);
    f[3] = *reinterpret_cast<const uint32_t*>(a + r1 * 128 + 32 * k + 16 + 4 * t);
  };
  auto store = [&](const float(&d)[32], int slot) {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int row = 16 * warp + g + 8 * ((i % 4) / 2), col = 8 * (i / 4) + 2 * t + (i % 2);
      out[slot * 4096 + row * 64 + col] = d[i];
    }
  };
  float d[32];
  for (int k = 0; k < 4; ++k) {
    uint32_t f[4];
    frag(k, f);
#pragma unroll
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    wgmma::fence();
    wgmma::fp8_rs<64>::run(d, f, wgmma::sw128_desc(b_s + 32 * k, 16, 1024), 0);
    wgmma::commit();
    wgmma::wait<0>();
    for (int i = 0; i < 32; ++i) wgmma::reg_fence(d[i]);
    store(d, k);
  }
  for (int k = 0; k < 4; ++k) {
    uint32_t f[4];
    frag(k, f);
    wgmma::fence();
    if (k == 0)
      wgmma::fp8_rs<64>::run(d, f, wgmma::sw128_desc(b_s + 32 * k, 16, 1024), 0);
    else
      wgmma::fp8_rs<64>::run(d, f, wgmma::sw128_desc(b_s + 32 * k, 16, 1024), 1);
    wgmma::commit();
    wgmma::wait<0>();
    for (int i = 0; i < 32; ++i) wgmma::reg_fence(d[i]);
  }
  store(d, 4);
}

static double e4m3_value(uint8_t x) {
  const int s = x >> 7, e = (x >> 3) & 15, m = x & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -v : v;
}

int main() {
  std::mt19937 rng(12345);
  uint8_t *da, *db;
  float* dout;
  cudaMalloc(&da, 64 * 128);
  cudaMalloc(&db, 64 * 128);
  cudaMalloc(&dout, 5 * 4096 * 4);
  int bad_total = 0;
  // mode 0: random codes; 1: all codes 6 (max sums), random signs; 2: B shifted by 2^0..2^6 per
  // head (bits 6..5 of the E4M3 exponent), random codes; 3: mode 2 with max codes; 4: sparse
  // (many zero codes, incl. all-zero blocks).
  for (int mode = 0; mode < 5; ++mode)
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<uint8_t> a(64 * 128), b(64 * 128);
      auto code = [&](bool maxc, bool sparse) {
        int mag = maxc ? 7 : int(rng() % 8);
        if (sparse && rng() % 4 != 0) mag = 0;
        return (int(rng() % 2) << 3) | mag;
      };
      auto place = [](int c, int shift) {  // e2m1 code -> e4m3 byte x 2^shift
        const int s = c >> 3, mag = c & 7;
        if (mag == 0) return uint8_t(s << 7);
        int e = (mag >> 1), m = mag & 1;
        if (e == 0) {  // subnormal 0.5: e4m3 subnormal mantissa 4 at e = 0, or normal when shifted
          if (shift == 0) return uint8_t((s << 7) | (m << 2));
          return uint8_t((s << 7) | ((shift) << 3));  // 0.5 * 2^-6 * 2^shift = 2^(shift - 7)
        }
        return uint8_t((s << 7) | ((e + shift) << 3) | (m << 2));
      };
      const bool maxc = mode == 1 || mode == 3, sparse = mode == 4,
                 shifted = mode >= 2 && mode <= 3;
      for (int r = 0; r < 64; ++r)
        for (int k = 0; k < 128; ++k) a[r * 128 + k] = place(code(maxc, sparse), 0);
      for (int h = 0; h < 64; ++h) {
        const int sh = shifted ? h % 7 : 0;
        for (int k = 0; k < 128; ++k) b[h * 128 + k] = place(code(maxc, sparse), sh);
      }
      if (sparse)  // an all-zero block in every other row
        for (int r = 0; r < 64; r += 2)
          for (int k = 32; k < 64; ++k) a[r * 128 + k] = 0;
      cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice);
      cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice);
      probe<<<1, 128>>>(da, db, dout);
      std::vector<float> out(5 * 4096);
      if (cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
        std::printf("CUDA error %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      int bad[5] = {0, 0, 0, 0, 0};
      double worst[5] = {0, 0, 0, 0, 0};
      for (int r = 0; r < 64; ++r)
        for (int h = 0; h < 64; ++h) {
          double all = 0;
          for (int k = 0; k < 4; ++k) {
            double s = 0;
            for (int i = 0; i < 32; ++i)
              s += e4m3_value(a[r * 128 + 32 * k + i]) * e4m3_value(b[h * 128 + 32 * k + i]);
            all += s;
            const float got = out[k * 4096 + r * 64 + h];
            if (double(got) != s) {
              ++bad[k];
              worst[k] =
                  std::max(worst[k], std::fabs(double(got) - s) / std::max(std::fabs(s), 1e-30));
            }
          }
          const float got = out[4 * 4096 + r * 64 + h];
          if (double(got) != all) {
            ++bad[4];
            worst[4] =
                std::max(worst[4], std::fabs(double(got) - all) / std::max(std::fabs(all), 1e-30));
          }
        }
      std::printf(
          "mode %d trial %d: block mismatches %d %d %d %d (worst rel %.3g), chained %d (worst rel "
          "%.3g)\n",
          mode, trial, bad[0], bad[1], bad[2], bad[3],
          std::max(std::max(worst[0], worst[1]), std::max(worst[2], worst[3])), bad[4], worst[4]);
      if (mode != 2 && mode != 3) bad_total += bad[0] + bad[1] + bad[2] + bad[3];
    }
  std::printf("fp8 exact probe: unshifted block mismatches %d -> %s\n", bad_total,
              bad_total == 0 ? "EXACT" : "INEXACT");
  return 0;
}
