// MOE21 (session 16): issue rate of the FP8 -> FP16 converter (cvt.rn.f16x2.e4m3x2, SASS
// F2FP.F16.E4M3.UNPACK_B) on sm_90 against LOP3 (integer ALU pipe) and FFMA (FMA pipe), alone and
// mixed 1:1 in one dependency chain: if a 1:1 mix costs the sum of the two alone, the two share a
// pipe; if it costs the larger, they do not. Then whole 32-bit words of eight E2M1 codes expanded
// for the decode GEMM's A fragment: today's repacked BF16 decode (moe_repack.h decode_pairs_shift
// + one HMUL2 per pair for the E8M0 scale) against converter sequences (the checkpoint order of
// the MOE21 brief, and the best a converter-specific repack could do: 3 LOP3 + 2 shifts).
// Standalone: nvcc -O3 -arch=sm_90a -o f2fp_rate f2fp_rate.cu
// Output: warp instructions (or words) per SM clock, from each block's clock64 span with a fixed
// resident set (one wave, 32 warps per SM). Compare the figures only with each other: on an H200
// (MOE21 call 1) they read ~1.55x above the pipe peaks (LOP3 alone 3.09 where the ALU pipe issues
// at most 2 warp-instructions per SM clock; ncu put that kernel at 99.4% of the ALU pipe), the
// blocks of an SM not spanning the same interval. Run with F2FP_ONCE=1 under ncu for the pipes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

__device__ __forceinline__ uint32_t f2fp_lo(uint32_t a) {
  uint32_t d;
  asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(uint16_t(a & 0xFFFFu)));
  return d;
}
// The high half through a b16 pair (mov.b32 {l, h}): ptxas then reads R.H1 (no SHF).
__device__ __forceinline__ uint32_t f2fp_hi(uint32_t a) {
  uint32_t d;
  asm volatile("{.reg .b16 l, h; mov.b32 {l, h}, %1; cvt.rn.f16x2.e4m3x2 %0, h;}"
               : "=r"(d)
               : "r"(a));
  return d;
}
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// d = A * B (zero accumulator), f16 in, f32 out
__device__ __forceinline__ void mma_f16_z(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}
__device__ __forceinline__ uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;  // (a & b) ^ c: LUT 0x6A
  asm volatile("lop3.b32 %0, %1, %2, %3, 0x6A;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
__device__ __forceinline__ float ffma(float a, float b, float c) {
  float d;
  asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
  return d;
}
__device__ __forceinline__ uint32_t hmul2_bf16(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hmul2_f16(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

constexpr int kChains = 8;
constexpr int kIters = 4096;

// MODE 0: F2FP only; 1: LOP3 only; 2: FFMA only; 3: F2FP + LOP3; 4: F2FP + FFMA;
// 5: LOP3 + FFMA (control: different pipes). Per iteration and chain one or two instructions.
template <int MODE>
__global__ void __launch_bounds__(256) op_rate(uint32_t* out, long long* cyc, uint32_t seed) {
  uint32_t x[kChains];
  float f[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) {
    x[i] = seed * (threadIdx.x + 1) + i * 0x01010101u;
    f[i] = float(threadIdx.x + i) * 1e-3f;
  }
  const uint32_t m = seed | 0x0F0F0F0Fu;
  const float a = 1.0000001f, b = 1e-7f;
  __syncthreads();
  const long long t0 = clock64();
#pragma unroll 4
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) {
      if constexpr (MODE == 0) x[i] = f2fp_lo(x[i]);
      if constexpr (MODE == 1) x[i] = lop3(x[i], m, x[(i + 1) % kChains]);
      if constexpr (MODE == 2) f[i] = ffma(f[i], a, b);
      if constexpr (MODE == 3) x[i] = lop3(f2fp_lo(x[i]), m, x[(i + 1) % kChains]);
      if constexpr (MODE == 4) {
        x[i] = f2fp_lo(x[i]);
        f[i] = ffma(f[i], a, __uint_as_float(x[i] & 0x3F800000u));
      }
      if constexpr (MODE == 5) {
        x[i] = lop3(x[i], m, x[(i + 1) % kChains]);
        f[i] = ffma(f[i], a, b);
      }
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  uint32_t r = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) r ^= x[i] ^ __float_as_uint(f[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

// Word expansions. Each returns the four A-fragment pairs of one 32-bit word, scaled.
// W 0: today (repacked, BF16): decode_pairs_shift (6 LOP3 + 1 SHF + 4 IMAD.SHL) + 4 HMUL2.
__device__ __forceinline__ void expand_today(uint32_t u, uint32_t s, uint32_t (&p)[4]) {
  const uint32_t M = 0x81C081C0u, S = 0x80008000u, G = 0x01C001C0u;
  p[0] = u & M;
  p[1] = ((u * 2u) & S) | ((u * 8u) & G);
  p[2] = ((u * 4u) & S) | (__funnelshift_l(u, u, 12) & G);
  p[3] = (u * 64u) & M;
#pragma unroll
  for (int j = 0; j < 4; ++j) p[j] = hmul2_bf16(p[j], s);
}
// W 1: the brief's checkpoint-order converter (value j at bits 4j..4j+3): odd codes
// (w & 0x80808080) | ((w >> 2) & 0x1C1C1C1C), even ((w << 4) & 0x80808080) | ((w << 2) & ...),
// 4 F2FP, 4 HMUL2 (FP16, exact scale range only).
__device__ __forceinline__ void expand_ckpt_cvt(uint32_t w, uint32_t s, uint32_t (&p)[4]) {
  const uint32_t odd = (w & 0x80808080u) | ((w >> 2) & 0x1C1C1C1Cu);
  const uint32_t even = ((w << 4) & 0x80808080u) | ((w << 2) & 0x1C1C1C1Cu);
  p[0] = f2fp_lo(even), p[1] = f2fp_hi(even), p[2] = f2fp_lo(odd), p[3] = f2fp_hi(odd);
#pragma unroll
  for (int j = 0; j < 4; ++j) p[j] = hmul2_f16(p[j], s);
}
// W 2: a converter-specific repack (hypothetical): R_A = u & 0x9C9C9C9C, R_B = ((u << 2) &
// 0x8C8C8C8C) | ((u >> 2) & 0x10101010): 3 LOP3 + 2 shifts + 4 F2FP; no HMUL2 (the scale as a
// per-32-k-group FFMA on the accumulators, counted as 2 FFMA per word here).
__device__ __forceinline__ void expand_rp_cvt(uint32_t u, uint32_t (&p)[4]) {
  const uint32_t ra = u & 0x9C9C9C9Cu;
  const uint32_t rb = ((u << 2) & 0x8C8C8C8Cu) | ((u >> 2) & 0x10101010u);
  p[0] = f2fp_lo(ra), p[1] = f2fp_hi(ra), p[2] = f2fp_lo(rb), p[3] = f2fp_hi(rb);
}

// Per iteration and lane: words of rows g and g + 8 (one per row) expanded and consumed by the
// two HMMAs they feed, as one word step of the decode round (fp4_mma.cuh fragment mapping). W 2
// runs them into a zeroed temp and adds it with one FFMA per accumulator (the per-32-k-group
// scale of a converter layout).
template <int W>
__global__ void __launch_bounds__(256)
    word_rate(const uint32_t* in, uint32_t* out, long long* cyc, uint32_t s) {
  uint32_t u[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) u[i] = in[(blockIdx.x * blockDim.x + threadIdx.x) * 4 + i];
  const uint32_t b0 = u[0] | 0x3C003C00u, b1 = u[1] | 0x3C003C00u;
  float acc[2][4] = {};
  const float sc = __uint_as_float(s);
  __syncthreads();
  const long long t0 = clock64();
#pragma unroll 2
  for (int it = 0; it < kIters / 4; ++it) {
#pragma unroll
    for (int i = 0; i < 4; i += 2) {
      uint32_t p[4], r[4];
      // fresh words by one IMAD each (FMA pipe; no mask term shared between words)
      u[i] = u[i] * 0x9E3779B1u + uint32_t(it), u[i + 1] = u[i + 1] * 0x9E3779B1u + uint32_t(it);
      const uint32_t w0 = u[i], w1 = u[i + 1];
      if constexpr (W == 0) expand_today(w0, s, p), expand_today(w1, s, r);
      if constexpr (W == 1) expand_ckpt_cvt(w0, s, p), expand_ckpt_cvt(w1, s, r);
      if constexpr (W == 2) expand_rp_cvt(w0, p), expand_rp_cvt(w1, r);
      const uint32_t a0[4] = {p[0], r[0], p[1], r[1]}, a1[4] = {p[2], r[2], p[3], r[3]};
      float(&c)[4] = acc[i >> 1];
      if constexpr (W == 2) {
        float t[4];
        mma_f16_z(t, a0, b0, b1);
        mma_f16(t, a1, b1, b0);
#pragma unroll
        for (int j = 0; j < 4; ++j) c[j] = ffma(t[j], sc, c[j]);
      } else if constexpr (W == 1) {
        mma_f16(c, a0, b0, b1);
        mma_f16(c, a1, b1, b0);
      } else {
        mma_bf16(c, a0, b0, b1);
        mma_bf16(c, a1, b1, b0);
      }
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float f = 0;
#pragma unroll
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) f += acc[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = __float_as_uint(f);
  if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

template <typename F>
static double span_rate(F launch, int blocks, long long* dcyc, double work_per_block) {
  std::vector<long long> c(blocks);
  if (std::getenv("F2FP_ONCE")) {  // one launch per kernel (under ncu)
    launch();
    cudaDeviceSynchronize();
    return 0;
  }
  launch();  // warm
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    launch();
    cudaDeviceSynchronize();
    cudaMemcpy(c.data(), dcyc, blocks * sizeof(long long), cudaMemcpyDeviceToHost);
    double mean = 0;
    for (long long v : c) mean += double(v);
    mean /= blocks;
    // 4 blocks resident per SM (one wave): per-SM rate = 4 blocks' work / span
    const double r = 4.0 * work_per_block / mean;
    if (r > best) best = r;
  }
  return best;
}

int main() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s, %d SMs\n", prop.name, sms);
  const int blocks = sms * 4, threads = 256;  // 32 warps per SM, one wave
  uint32_t* dout;
  uint32_t* din;
  long long* dcyc;
  CK(cudaMalloc(&dout, size_t(blocks) * threads * 4));
  CK(cudaMalloc(&din, size_t(blocks) * threads * 16));
  CK(cudaMemset(din, 0x5A, size_t(blocks) * threads * 16));
  CK(cudaMalloc(&dcyc, size_t(blocks) * 8));
  const double warps = threads / 32.0;
  const double per_iter = double(kIters) * kChains * warps;  // warp-instructions of one kind
  const char* names[6] = {"F2FP.F16.E4M3 alone",
                          "LOP3 alone",
                          "FFMA alone",
                          "F2FP+LOP3 1:1 (rate of pairs)",
                          "F2FP+FFMA 1:1 (rate of pairs)",
                          "LOP3+FFMA 1:1 (rate of pairs)"};
  double r[6];
  r[0] = span_rate([&] { op_rate<0><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  r[1] = span_rate([&] { op_rate<1><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  r[2] = span_rate([&] { op_rate<2><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  r[3] = span_rate([&] { op_rate<3><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  r[4] = span_rate([&] { op_rate<4><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  r[5] = span_rate([&] { op_rate<5><<<blocks, threads>>>(dout, dcyc, 0x3C3C3C3Cu); }, blocks, dcyc,
                   per_iter);
  CK(cudaGetLastError());
  for (int i = 0; i < 6; ++i)
    printf("%-32s %7.2f warp-instr (or pairs) / SM clock\n", names[i], r[i]);
  printf(
      "same-pipe test: 1/(1/F2FP + 1/LOP3) = %.2f pairs/clk (same pipe) vs min = %.2f (separate)\n",
      1.0 / (1.0 / r[0] + 1.0 / r[1]), r[0] < r[1] ? r[0] : r[1]);
  printf(
      "same-pipe test: 1/(1/F2FP + 1/FFMA) = %.2f pairs/clk (same pipe) vs min = %.2f (separate)\n",
      1.0 / (1.0 / r[0] + 1.0 / r[2]), r[0] < r[2] ? r[0] : r[2]);
  const double words = double(kIters) * warps;  // warp-words per block (4 per iteration)
  const char* wn[3] = {"today: repacked BF16 shift decode + 4 HMUL2",
                       "brief: checkpoint-order F2FP + 4 HMUL2.F16",
                       "converter repack: 3 LOP3 + 2 shifts + 4 F2FP, HMMA to temp + FFMA"};
  double wr[3];
  wr[0] = span_rate([&] { word_rate<0><<<blocks, threads>>>(din, dout, dcyc, 0x3F003F00u); },
                    blocks, dcyc, words);
  wr[1] = span_rate([&] { word_rate<1><<<blocks, threads>>>(din, dout, dcyc, 0x3C003C00u); },
                    blocks, dcyc, words);
  wr[2] = span_rate([&] { word_rate<2><<<blocks, threads>>>(din, dout, dcyc, 0x3C003C00u); },
                    blocks, dcyc, words);
  CK(cudaGetLastError());
  for (int i = 0; i < 3; ++i)
    printf("word expansion %-55s %6.2f warp-words / SM clock = %6.1f codes / SM clock\n", wn[i],
           wr[i], wr[i] * 32 * 8);
  printf("(H200 decode at 4.8 TB/s needs ~%.1f codes / SM clock at 1.98 GHz, 132 SMs)\n",
         9.6e12 / 132 / 1.98e9);
  return 0;
}
