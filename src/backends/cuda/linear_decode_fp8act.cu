// W8A8 dense decode linear (see linear_decode_fp8act.h).
//
// Fragments of mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32 (lane = 4 g + q): A registers a0 / a2
// hold row g at k = 4q..4q+3 / 16+4q..16+4q+3, a1 / a3 the same for row g + 8; B registers
// b0 / b1 hold token column g at those k. Since the product sums over k, any bijection of the
// 32 k of an MMA onto real columns works if A and B use the same one: lane q takes the 32
// consecutive bytes [q * 32, q * 32 + 32) of a 128-k round (two 16-byte loads per row), and its
// MMA j (0..3) uses bytes 8j..8j+3 as "4q.." and 8j+4..8j+7 as "16+4q..", for the weights and
// for the activations alike (natural layout, one 16-byte load per token and half-round). A round
// is one 128-k block of weights and activations: one weight scale, one activation scale per
// token. C: c0 / c1 row g, token columns 2q / 2q + 1; c2 / c3 row g + 8.
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_decode_tail.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_block = 128;  // k per round: one scale block of weights and activations
// Warps per block: 16 with one n-tile (122 registers), 8 with more (16 would leave them 128
// registers and spill), the limits linear_decode_make_split applies for n_tiles <= 2 / > 2.
template <int NT>
constexpr int max_threads() {
  return (NT == 1 ? 16 : 8) * k_warp_size;
}

__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Two f32 to e4m3 (round to nearest even, saturating to +-448; NaN stays NaN): lo in bits 0-7.
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// A warp per (token, 128-k block): x8 = e4m3(x / s), sx = s (ops::fake_quant_fp8_act's rule).
template <typename act_t>
__global__ void fp8act_quantize_kernel(const act_t* x, int64_t tokens, int64_t cols, uint8_t* x8,
                                       float* sx) {
  // The GEMM may launch now (it waits for this grid before reading x8 / sx); this grid waits for
  // its predecessor before it reads x or overwrites x8 / sx, which a previous GEMM may still read.
  pdl_trigger();
  pdl_wait();
  const int lane = threadIdx.x % k_warp_size;
  const int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / k_warp_size;
  const int64_t blocks = cols / k_block;
  if (item >= tokens * blocks) return;  // uniform over the warp
  const int64_t at = (item / blocks) * cols + (item % blocks) * k_block + lane * 4;
  float v[4];
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[j] = act_to_f32(x[at + j]);
    amax = fmaxf(amax, fabsf(v[j]));  // NaN ignored, as fake_quant_fp8_act does
  }
  amax = quant::warp_max(amax);
  const float s = quant::pow2_ceil(__fdiv_rn(fmaxf(amax, 1e-4f), 448.0f));
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = __fdiv_rn(v[j], s);  // exact: s is a power of two
  reinterpret_cast<uint32_t*>(x8 + at)[0] = e4m3x2(v[0], v[1]) | (e4m3x2(v[2], v[3]) << 16);
  if (lane == 0) sx[item] = s;
}

struct fp8_matrix {
  const uint8_t* data;
  const void* scale;
  int64_t rows, cols;
  bool scale_e8m0;
};

struct round_w {
  uint4 v[2][2];  // [row g, row g + 8][first, second 16 bytes of the lane's 32]
  float s;        // weight block scale (rows g and g + 8 share a 128-row block)
};

// Round `round` of the lane's rows: w0 / w1 point at rows g / g + 8 at the lane's byte offset;
// scale_row at the weight scales of the tile's 128-row block.
__device__ __forceinline__ void load_round(round_w& r, const uint8_t* w0, const uint8_t* w1,
                                           const void* scale_row, bool e8m0, int64_t round) {
  const int64_t k = round * k_block;
  r.v[0][0] = fp4mma::load_stream_16(w0 + k);
  r.v[0][1] = fp4mma::load_stream_16(w0 + k + 16);
  r.v[1][0] = fp4mma::load_stream_16(w1 + k);
  r.v[1][1] = fp4mma::load_stream_16(w1 + k + 16);
  r.s = detail::load_block_scale(scale_row, round, e8m0);
}

template <int NT>
__device__ __forceinline__ void mma_round(float (&acc)[NT][4], const round_w& r,
                                          const uint8_t* const (&xr)[NT],
                                          const float* const (&sx)[NT][2], int64_t k,
                                          int64_t block) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const uint4 xa = __ldg(reinterpret_cast<const uint4*>(xr[j] + k));
    const uint4 xb = __ldg(reinterpret_cast<const uint4*>(xr[j] + k + 16));
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_e4m3(t, r.v[0][0].x, r.v[1][0].x, r.v[0][0].y, r.v[1][0].y, xa.x, xa.y);
    mma_e4m3(t, r.v[0][0].z, r.v[1][0].z, r.v[0][0].w, r.v[1][0].w, xa.z, xa.w);
    mma_e4m3(t, r.v[0][1].x, r.v[1][1].x, r.v[0][1].y, r.v[1][1].y, xb.x, xb.y);
    mma_e4m3(t, r.v[0][1].z, r.v[1][1].z, r.v[0][1].w, r.v[1][1].w, xb.z, xb.w);
    const float s0 = __fmul_rn(r.s, __ldg(sx[j][0] + block));
    const float s1 = __fmul_rn(r.s, __ldg(sx[j][1] + block));
    acc[j][0] = fmaf(t[0], s0, acc[j][0]);
    acc[j][1] = fmaf(t[1], s1, acc[j][1]);
    acc[j][2] = fmaf(t[2], s0, acc[j][2]);
    acc[j][3] = fmaf(t[3], s1, acc[j][3]);
  }
}

// A block is rt x ks warps: rt 16-row tiles, each split into ks K parts (linear_decode_make_split);
// a warp carries NT n-tiles of 8 tokens and three rounds of weights in flight.
template <int NT>
__global__ void __launch_bounds__(max_threads<NT>())
    fp8act_gemm_kernel(const uint8_t* x8, const float* sx_base, int tokens, fp8_matrix w, int rt,
                       int ks, void* y, bool y_bf16) {
  pdl_trigger();  // the next call's quantize waits for this grid before it touches anything
  extern __shared__ float partial[];  // [ks - 1][rt][NT][4][32]
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % rt, kpart = warp / rt;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * rt + tile) * 16;
  const int64_t rounds = w.cols / k_block;
  const int64_t rb = rounds * kpart / ks, re = rounds * (kpart + 1) / ks;
  const uint8_t* xr[NT];
  const float* sx[NT][2];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    // Clamped token rows and columns are computed but never stored.
    xr[j] = x8 + int64_t(min(8 * j + g, tokens - 1)) * w.cols + q * 32;
    sx[j][0] = sx_base + int64_t(min(8 * j + 2 * q, tokens - 1)) * rounds;
    sx[j][1] = sx_base + int64_t(min(8 * j + 2 * q + 1, tokens - 1)) * rounds;
  }
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  const uint8_t* w0 = w.data + (r0 + g) * w.cols + q * 32;
  const uint8_t* w1 = w0 + 8 * w.cols;
  const void* scale_row =
      static_cast<const uint8_t*>(w.scale) + (r0 / 128) * rounds * (w.scale_e8m0 ? 1 : 4);
  const bool e8m0 = w.scale_e8m0;
  round_w a, b, c;  // three named buffers (an array indexed by r % 3 would go to local memory)
  if (rb < re) load_round(a, w0, w1, scale_row, e8m0, rb);
  if (rb + 1 < re) load_round(b, w0, w1, scale_row, e8m0, rb + 1);
  pdl_wait();  // weights never depend on earlier launches; x8, sx and y do
  for (int64_t r = rb; r < re; r += 3) {
    if (r + 2 < re) load_round(c, w0, w1, scale_row, e8m0, r + 2);
    mma_round<NT>(acc, a, xr, sx, r * k_block, r);
    if (r + 1 >= re) break;
    if (r + 3 < re) load_round(a, w0, w1, scale_row, e8m0, r + 3);
    mma_round<NT>(acc, b, xr, sx, (r + 1) * k_block, r + 1);
    if (r + 2 >= re) break;
    if (r + 4 < re) load_round(b, w0, w1, scale_row, e8m0, r + 4);
    mma_round<NT>(acc, c, xr, sx, (r + 2) * k_block, r + 2);
  }
  if (!decode_tail::sum_k_parts<NT>(acc, partial, rt, ks, tile, kpart, lane)) return;
  decode_tail::store<NT>(
      acc, [](float v) { return v; }, tokens, w.rows, r0, g, q, y, y_bf16);
}

size_t x8_bytes(int64_t tokens, int64_t cols) {
  return (size_t(std::max<int64_t>(tokens, 1) * cols) + 255) / 256 * 256;
}

}  // namespace

bool linear_decode_fp8act_supported(const device_weight& w) {
  if (w.kind != weight_kind::fp8_block || validate_weight(w) != cudaSuccess) return false;
  return w.rows % 16 == 0 && w.cols % k_block == 0 && aligned_16(w.data) &&
         w.rows / 16 <= int64_t(std::numeric_limits<int32_t>::max());
}

size_t linear_decode_fp8act_workspace_bytes(int64_t tokens, int64_t cols) {
  return x8_bytes(tokens, cols) + size_t(std::max<int64_t>(tokens, 1) * (cols / k_block)) * 4;
}

template <typename act_t, typename out_t>
cudaError_t linear_decode_fp8act(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                                 void* workspace, size_t workspace_bytes, cudaStream_t stream,
                                 bool pdl) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, __nv_bfloat16>);
  if (tokens < 0 || !x || !y || !workspace) return cudaErrorInvalidValue;
  if (tokens > k_linear_decode_fp8act_max_tokens || !linear_decode_fp8act_supported(w))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  if (workspace_bytes < linear_decode_fp8act_workspace_bytes(tokens, w.cols) ||
      !aligned_16(workspace))
    return cudaErrorInvalidValue;
  auto* x8 = static_cast<uint8_t*>(workspace);
  auto* sx = reinterpret_cast<float*>(x8 + x8_bytes(tokens, w.cols));
  const int64_t items = tokens * (w.cols / k_block);
  const int threads = 256;
  if (const cudaError_t e = launch_pdl(pdl, fp8act_quantize_kernel<act_t>,
                                       dim3(unsigned(ceil_div(items * k_warp_size, threads))),
                                       dim3(threads), 0, stream, x, tokens, w.cols, x8, sx);
      e != cudaSuccess)
    return e;
  const fp8_matrix m{static_cast<const uint8_t*>(w.data), w.scale, w.rows, w.cols, w.scale_e8m0};
  const int nt = tokens <= 8 ? 1 : tokens <= 16 ? 2 : 4;
  // One wave of up to 16 warps per SM; at most 8 K parts from two n-tiles on (max_threads).
  const linear_decode_split sp = linear_decode_make_split(w.rows, w.cols / k_block, nt == 1 ? 1 : 4,
                                                          current_device_sm_count());
  const dim3 grid(unsigned(w.rows / (16 * sp.row_tiles)));
  const dim3 block(unsigned(sp.row_tiles * sp.k_parts * k_warp_size));
  const size_t smem = size_t(sp.k_parts - 1) * sp.row_tiles * nt * 4 * k_warp_size * sizeof(float);
  constexpr bool y_bf16 = std::is_same_v<out_t, __nv_bfloat16>;
  auto run = [&](auto kernel) {
    return launch_pdl(pdl, kernel, grid, block, smem, stream, x8, sx, int(tokens), m,
                      int(sp.row_tiles), int(sp.k_parts), static_cast<void*>(y), y_bf16);
  };
  if (nt == 1) return run(fp8act_gemm_kernel<1>);
  if (nt == 2) return run(fp8act_gemm_kernel<2>);
  return run(fp8act_gemm_kernel<4>);
}

template cudaError_t linear_decode_fp8act<float, float>(const float*, int64_t, const device_weight&,
                                                        float*, void*, size_t, cudaStream_t, bool);
template cudaError_t linear_decode_fp8act<__nv_bfloat16, float>(const __nv_bfloat16*, int64_t,
                                                                const device_weight&, float*, void*,
                                                                size_t, cudaStream_t, bool);
template cudaError_t linear_decode_fp8act<__nv_bfloat16, __nv_bfloat16>(const __nv_bfloat16*,
                                                                        int64_t,
                                                                        const device_weight&,
                                                                        __nv_bfloat16*, void*,
                                                                        size_t, cudaStream_t, bool);

}  // namespace dsv4::cuda
