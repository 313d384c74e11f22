// Prefill-path routed experts (see moe_prefill.h): the plan, the mma.sync GEMM core and the
// launch sequence; the wgmma core's GEMMs are in moe_prefill_wgmma*.cu (same plan with 128-pair
// tiles, same combine).
//
// Launches:
//   1. moe_prefill_plan_kernel: pairs grouped by expert, cut into tiles of up to k_tile pairs
//      (moe_plan.cuh); the tile count stays on the device, the grids below use its upper bound.
//   2. moe_prefill_gemm_kernel<up = true>: block = (128 rows of W1 and W3, one pair tile); each
//      warp owns 16 rows of W1 and the same 16 of W3 for all 64 pairs of the tile; epilogue:
//      clamped SwiGLU (official order: times the routing weight), h in f32.
//   (official order: moe_quantize_h_kernel of moe_plan.cuh, FP8 per 128 values of each h row.)
//   3. moe_prefill_gemm_kernel<up = false>: block = (256 rows of W2, one pair tile); each warp
//      owns 2 x 16 rows; out[pair, row] in f32.
//   4. launch_moe_combine (moe_plan.cuh): y[t] = sum over k in order of weights[t, k] * out[t, k].
//
// The GEMM core (fragment mapping of fp4_mma.cuh): lane (g, c) reads 16 weight bytes (32 e2m1
// values at k offset 32 c of a 128-wide round) of rows g and g + 8 straight from global memory
// and expands them exactly to BF16 pairs (v_i, v_i+4). The pair tile's activations are staged
// through shared memory in the matching "paired" BF16 layout: per 8 consecutive k, four words
// X_i = (x_i, x_i+4); one 16-byte shared load then feeds the two mma steps of one weight word.
// Staging goes through registers (activation loads for round r + 1 and weight loads for round
// r + 2 are issued before round r's mmas; two shared buffers, one barrier per round). 8 warps,
// ~250 registers per thread: one block per SM.
//
// Shared layout of a staged round: token row t (0..63) of 256 bytes (128 k), 16-byte chunk j
// (k 8j..8j+7) at chunk j ^ (((j >> 3) & 1) << 1) ^ (t & 1): the 8 lanes of a 16-byte load
// phase (tokens g, g + 1, chunks 4c + w for c = 0..3) then hit 8 distinct bank groups.
//
// Determinism: every output element is one pair's sum over k in a fixed order; the order of
// pairs inside an expert's list (atomics) changes no arithmetic.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/moe_prefill.h"
#include "backends/cuda/moe_prefill_common.cuh"
#include "backends/cuda/moe_prefill_fp8.cuh"
#include "backends/cuda/moe_prefill_w4a8.h"
#include "backends/cuda/moe_prefill_wgmma.h"
#include "backends/cuda/moe_prefill_wgmma_ws.h"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

namespace {

using namespace prefill;

constexpr int k_warps = 8;
constexpr int k_threads = k_warps * k_warp_size;
constexpr int k_tile = 64;    // pairs per tile (the GEMM's N)
constexpr int k_round = 128;  // k per round
constexpr int k_row_bytes = k_round * 2;
constexpr int k_up_rows = k_warps * 16;        // W1 (and W3) rows per L1 block
constexpr int k_down_rows = k_warps * 2 * 16;  // W2 rows per L2 block
constexpr int k_plan_threads = 1024;
constexpr int64_t k_max_experts = 2048;

size_t align_256(size_t n) {
  return (n + 255) / 256 * 256;
}

// Tile slots of a plan with tiles of up to `tile` pairs (tile >= k_tile: the workspace is sized
// for k_tile, the smallest).
int64_t max_tiles(int64_t pairs, int64_t experts, int64_t tile = k_tile) {
  return pairs / tile + std::min(pairs, experts);
}

struct layout {
  size_t count = 0, sorted, tiles, h, out, xp, q, total;
};

layout make_layout(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden, int64_t inter) {
  const int64_t pairs = tokens * top_k;
  layout l;
  l.sorted = 256;
  l.tiles = l.sorted + align_256(size_t(pairs) * 4);
  l.h = l.tiles + align_256(size_t(max_tiles(pairs, experts)) * sizeof(int4));
  l.out = l.h + align_256(size_t(pairs) * size_t(inter) * 4);
  l.xp = l.out + align_256(size_t(pairs) * size_t(hidden) * 4);  // wgmma_cp / _ws: x', h' (BF16)
  l.q = l.xp + align_256(std::max(size_t(tokens) * size_t(hidden), size_t(pairs) * size_t(inter)) *
                         2);  // w4a8: E4M3 x and h
  l.total = l.q + align_256(w4a8_workspace_bytes(tokens, top_k, hidden, inter));
  return l;
}

// Tried and removed (PREFILL20, code at 5f2db11): the plan's one block staging the routing
// indices in shared memory first (8 loads in flight per thread; each of the grouping's two passes
// waits one global load per 1024 pairs): plan stage 24-42 -> 9-16 us, but whole calls at Flash
// T = 4096 within -0.7 .. +0.2% (W4A8 ws 3319.0 / 3318.0 us median without / with it), not kept.
__global__ void __launch_bounds__(k_plan_threads)
    moe_prefill_plan_kernel(const int32_t* indices, int pairs, int experts, int tile,
                            int* tile_count, int* sorted, int4* tiles) {
  __shared__ int counts[k_max_experts];
  __shared__ int offset[k_max_experts];
  __shared__ int warp_sums[2][32];
  moe_group_pairs_by_expert(indices, pairs, experts, tile, tile_count, sorted, tiles, counts,
                            offset, warp_sums);
}

// ---- the GEMM core ----

// Word w of a tile's round expanded: a[row][i] = BF16 pair P_i of rows g (row 0) / g + 8.
template <weight_kind K>
__device__ __forceinline__ void expand_word(const tile_round& r, const tile_scale& s, int w,
                                            uint32_t (&a)[2][4]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t word = word_of(r.v[i], w);
    a[i][0] = fp4mma::e2m1_pair<0>(word);
    a[i][1] = fp4mma::e2m1_pair<1>(word);
    a[i][2] = fp4mma::e2m1_pair<2>(word);
    a[i][3] = fp4mma::e2m1_pair<3>(word);
#pragma unroll
    for (int j = 0; j < 4; ++j) a[i][j] = fp4mma::mul_bf16x2(a[i][j], s.m1[i][w >> 1]);
  }
  if constexpr (K == weight_kind::mxfp4) {
    if (s.two) {  // E8M0 > 128 (scale > 2): a second exact power-of-two step
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) a[i][j] = fp4mma::mul_bf16x2(a[i][j], s.m2[i]);
    }
  }
}

__device__ __forceinline__ int swizzled_chunk(int j, int t) {
  return j ^ (((j >> 3) & 1) << 1) ^ (t & 1);
}

// A thread's share of one staged round: 64 tokens x 16 chunks = 4 chunks per thread.
constexpr int k_stage_chunks = k_tile * (k_round / 8) / k_threads;

template <typename in_t>
struct stage_regs;
template <>
struct stage_regs<__nv_bfloat16> {
  uint4 v[k_stage_chunks];
};
template <>
struct stage_regs<float> {
  float4 v[k_stage_chunks][2];
};

template <typename in_t>
__device__ __forceinline__ void stage_load(stage_regs<in_t>& s, const in_t* const* row_src,
                                           int64_t k0) {
#pragma unroll
  for (int q = 0; q < k_stage_chunks; ++q) {
    const int idx = threadIdx.x + q * k_threads;
    const in_t* p = row_src[idx >> 4];
    const int64_t k = k0 + (idx & 15) * 8;
    if constexpr (std::is_same_v<in_t, float>) {
      s.v[q][0] = p ? __ldg(reinterpret_cast<const float4*>(p + k)) : make_float4(0, 0, 0, 0);
      s.v[q][1] = p ? __ldg(reinterpret_cast<const float4*>(p + k + 4)) : make_float4(0, 0, 0, 0);
    } else {
      s.v[q] = p ? __ldg(reinterpret_cast<const uint4*>(p + k)) : make_uint4(0, 0, 0, 0);
    }
  }
}

template <typename in_t>
__device__ __forceinline__ void stage_store(const stage_regs<in_t>& s, uint8_t* buf) {
#pragma unroll
  for (int q = 0; q < k_stage_chunks; ++q) {
    const int idx = threadIdx.x + q * k_threads;
    const int t = idx >> 4, j = idx & 15;
    uint4 o;
    if constexpr (std::is_same_v<in_t, float>) {
      const float4 a = s.v[q][0], b = s.v[q][1];
      o.x = pack_bf16x2(a.x, b.x);
      o.y = pack_bf16x2(a.y, b.y);
      o.z = pack_bf16x2(a.z, b.z);
      o.w = pack_bf16x2(a.w, b.w);
    } else {
      const uint4 v = s.v[q];  // (x0 x1) (x2 x3) (x4 x5) (x6 x7)
      o.x = __byte_perm(v.x, v.z, 0x5410);
      o.y = __byte_perm(v.x, v.z, 0x7632);
      o.z = __byte_perm(v.y, v.w, 0x5410);
      o.w = __byte_perm(v.y, v.w, 0x7632);
    }
    *reinterpret_cast<uint4*>(buf + t * k_row_bytes + swizzled_chunk(j, t) * 16) = o;
  }
}

// acc[m][n] += tile m's 16 rows x the staged round, n-tiles of 8 tokens below `ntok`.
template <weight_kind K>
__device__ __forceinline__ void mma_round(float (&acc)[2][k_tile / 8][4], const tile_round (&r)[2],
                                          const uint8_t* buf, int ntok) {
  const int lane = threadIdx.x % k_warp_size, g = lane / 4, c = lane % 4;
  const tile_scale s0 = scale_of<K>(r[0]), s1 = scale_of<K>(r[1]);
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    uint32_t a0[2][4], a1[2][4];
    expand_word<K>(r[0], s0, w, a0);
    expand_word<K>(r[1], s1, w, a1);
#pragma unroll
    for (int n = 0; n < k_tile / 8; ++n) {
      if (n * 8 < ntok) {
        const int t = n * 8 + g;
        const uint4 b = *reinterpret_cast<const uint4*>(buf + t * k_row_bytes +
                                                        swizzled_chunk(4 * c + w, t) * 16);
        fp4mma::mma_bf16(acc[0][n], a0[0][0], a0[1][0], a0[0][1], a0[1][1], b.x, b.y);
        fp4mma::mma_bf16(acc[0][n], a0[0][2], a0[1][2], a0[0][3], a0[1][3], b.z, b.w);
        fp4mma::mma_bf16(acc[1][n], a1[0][0], a1[1][0], a1[0][1], a1[1][1], b.x, b.y);
        fp4mma::mma_bf16(acc[1][n], a1[0][2], a1[1][2], a1[0][3], a1[1][3], b.z, b.w);
      }
    }
  }
}

// UP: src = x (rows by token), wa = W1, wb = W3, dst = h [pairs, inter]; rows of a warp: W1 and
// W3 rows r0..r0+15. Down: src = h (rows by pair), wa = wb = W2, dst = out [pairs, hidden];
// tile m = W2 rows r0 + 16 m .. + 15. Grid: x = row blocks, y = tile slots.
template <typename in_t, weight_kind K, bool UP>
__global__ void __launch_bounds__(k_threads, 1)
    moe_prefill_gemm_kernel(const in_t* src, int top_k, const int* tile_count, const int4* tiles,
                            const int* sorted, fp4_weight wa, fp4_weight wb, float limit,
                            const float* pair_weights, float* dst) {
  __shared__ __align__(16) uint8_t xs[2][k_tile * k_row_bytes];
  __shared__ const in_t* row_src[k_tile];
  __shared__ int pair_of[k_tile];
  const int slot = blockIdx.y;
  if (slot >= *tile_count) return;  // uniform over the block
  const int4 tile = tiles[slot];
  const int e = tile.x, ntok = tile.z;
  const int64_t cols = wa.cols, out_rows = wa.rows;
  if (threadIdx.x < k_tile) {
    const int p = int(threadIdx.x) < ntok ? sorted[tile.y + threadIdx.x] : -1;
    pair_of[threadIdx.x] = p;
    row_src[threadIdx.x] = p < 0 ? nullptr : src + int64_t(UP ? p / top_k : p) * cols;
  }
  __syncthreads();
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int64_t r0 = UP ? int64_t(blockIdx.x) * k_up_rows + warp * 16
                        : int64_t(blockIdx.x) * k_down_rows + warp * 32;
  const bool active = r0 < out_rows;  // warp-uniform; idle warps still stage and synchronise
  tile_rows tr[2];
  tr[0] = locate_tile<K>(wa, e, r0 + lane / 4);
  tr[1] = locate_tile<K>(wb, e, UP ? r0 + lane / 4 : r0 + 16 + lane / 4);
  const int64_t klane = (lane % 4) * 32;

  float acc[2][k_tile / 8][4];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < k_tile / 8; ++n)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[m][n][q] = 0.0f;

  const int rounds = int(cols / k_round);
  stage_regs<in_t> st;
  stage_load(st, row_src, 0);
  stage_store(st, xs[0]);
  // Weights are loaded two rounds ahead (the activations one): cur = round r, n1 = r + 1,
  // n2 = r + 2.
  tile_round cur[2], n1[2], n2[2];
  if (active)
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      load_tile_round<K>(cur[m], tr[m], wa.scale_f32, klane);
      if (rounds > 1) load_tile_round<K>(n1[m], tr[m], wa.scale_f32, k_round + klane);
    }
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    const bool more = r + 1 < rounds;
    if (more) stage_load(st, row_src, int64_t(r + 1) * k_round);
    if (active && r + 2 < rounds)
#pragma unroll
      for (int m = 0; m < 2; ++m)
        load_tile_round<K>(n2[m], tr[m], wa.scale_f32, int64_t(r + 2) * k_round + klane);
    if (active) mma_round<K>(acc, cur, xs[r & 1], ntok);
    if (more) stage_store(st, xs[(r + 1) & 1]);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      cur[m] = n1[m];
      n1[m] = n2[m];
    }
  }
  if (!active) return;

  // Accumulator q of n-tile n: row g + 8 (q >> 1), token 8 n + 2 c + (q & 1). NVFP4 weights were
  // expanded as code * scale * 2^-8: the f32 sums take global * 2^8.
  float fa = 1.0f, fb = 1.0f;
  if constexpr (K == weight_kind::nvfp4) {
    fa = (wa.global ? __ldg(wa.global + e) : 1.0f) * 256.0f;
    fb = (wb.global ? __ldg(wb.global + e) : 1.0f) * 256.0f;
  }
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int n = 0; n < k_tile / 8; ++n) {
    if (n * 8 >= ntok) break;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int t = n * 8 + 2 * c + (q & 1);
      if (t >= ntok) continue;
      const int p = pair_of[t];
      const int64_t row = r0 + g + 8 * (q >> 1);
      if constexpr (UP) {
        if (row < out_rows) {
          const float v = moe_swiglu_value(acc[0][n][q] * fa, acc[1][n][q] * fb, limit);
          dst[int64_t(p) * out_rows + row] = pair_weights ? __fmul_rn(v, pair_weights[p]) : v;
        }
      } else {
        if (row < out_rows) dst[int64_t(p) * out_rows + row] = acc[0][n][q] * fa;
        if (row + 16 < out_rows) dst[int64_t(p) * out_rows + row + 16] = acc[1][n][q] * fb;
      }
    }
  }
}

template <typename act_t, weight_kind K>
cudaError_t launch_gemms(const act_t* x, int64_t top_k, const device_weight& w1,
                         const device_weight& w3, const device_weight& w2, float limit,
                         const int* tile_count, const int4* tiles, const int* sorted,
                         int64_t tile_slots, const float* pair_weights, const int32_t* indices,
                         int64_t pairs, float* h, float* out, cudaStream_t stream) {
  const int64_t hidden = w1.cols, inter = w1.rows;
  const dim3 grid1(unsigned(ceil_div(inter, k_up_rows)), unsigned(tile_slots));
  moe_prefill_gemm_kernel<act_t, K, true><<<grid1, k_threads, 0, stream>>>(
      x, int(top_k), tile_count, tiles, sorted, make_fp4_weight(w1), make_fp4_weight(w3), limit,
      pair_weights, h);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (pair_weights) {  // official order
    const int64_t items = pairs * ceil_div(inter, 128);
    moe_quantize_h_kernel<128><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
        h, indices, pairs, w1.count, inter);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const dim3 grid2(unsigned(ceil_div(hidden, k_down_rows)), unsigned(tile_slots));
  const fp4_weight f2 = make_fp4_weight(w2);
  moe_prefill_gemm_kernel<float, K, false><<<grid2, k_threads, 0, stream>>>(
      h, int(top_k), tile_count, tiles, sorted, f2, f2, limit, nullptr, out);
  return cudaGetLastError();
}

// The wgmma core is compiled for sm_90a only (moe_prefill_wgmma.cu).
bool wgmma_device() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return false;
  return major == 9 && minor == 0;
}

template <typename act_t>
cudaError_t run_prefill(const act_t* x, int64_t tokens, const int32_t* indices,
                        const float* weights, int64_t top_k, const device_weight& w1,
                        const device_weight& w3, const device_weight& w2, float swiglu_limit,
                        void* workspace, size_t workspace_bytes, act_t* y, bool official,
                        moe_prefill_core core, cudaStream_t stream) {
  for (const device_weight* w : {&w1, &w3, &w2}) {
    if (const cudaError_t e = validate_weight(*w, true); e != cudaSuccess) return e;
    if (w->layout != w1.layout) return cudaErrorInvalidValue;
  }
  // Repacked weights (moe_repack.h): the wgmma core with BF16 x only (what the engine runs).
  const bool repacked = w1.layout == weight_layout::repacked;
  if (repacked && !std::is_same_v<act_t, __nv_bfloat16>) return cudaErrorInvalidValue;
  const int64_t experts = w1.count, hidden = w1.cols, inter = w1.rows;
  const bool fp4 = w1.kind == weight_kind::mxfp4 || w1.kind == weight_kind::nvfp4;
  if (!fp4 || w3.kind != w1.kind || w2.kind != w1.kind || w3.count != experts ||
      w2.count != experts || w3.rows != inter || w3.cols != hidden || w2.rows != hidden ||
      w2.cols != inter || w3.scale_e8m0 != w1.scale_e8m0 || w2.scale_e8m0 != w1.scale_e8m0)
    return cudaErrorInvalidValue;
  if (hidden % k_round != 0 || inter % k_round != 0 || tokens < 0 || top_k <= 0 ||
      experts > k_max_experts || !x || !indices || !weights || !y || !workspace || !aligned_16(x))
    return cudaErrorInvalidValue;
  // f32 MXFP4 scales are read as 32-bit words.
  for (const device_weight* w : {&w1, &w3, &w2})
    if (w->kind == weight_kind::mxfp4 && !w->scale_e8m0 &&
        (reinterpret_cast<uintptr_t>(w->scale) & 3u) != 0)
      return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t pairs = tokens * top_k;
  const int64_t slots = max_tiles(pairs, experts);
  if (pairs > INT32_MAX || slots > 65535) return cudaErrorInvalidValue;
  const layout l = make_layout(tokens, top_k, experts, hidden, inter);
  if (workspace_bytes < l.total || !aligned_16(workspace)) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(workspace);
  int* tile_count = reinterpret_cast<int*>(base + l.count);
  int* sorted = reinterpret_cast<int*>(base + l.sorted);
  int4* tiles = reinterpret_cast<int4*>(base + l.tiles);
  float* h = reinterpret_cast<float*>(base + l.h);
  float* out = reinterpret_cast<float*>(base + l.out);

  if (core == moe_prefill_core::automatic) {
    // The wgmma core's warp-specialized variant where its cp.async copies are aligned.
    bool ws_aligned = true;
    for (const device_weight* w : {&w1, &w3, &w2})
      ws_aligned = ws_aligned && aligned_16(w->data) && aligned_16(w->scale);
    core = !moe_prefill_use_wgmma(tokens, top_k, experts) ? moe_prefill_core::mma_sync
           : ws_aligned                                   ? moe_prefill_core::wgmma_ws
                                                          : moe_prefill_core::wgmma;
  }
  const bool w4a8 = core == moe_prefill_core::w4a8 || core == moe_prefill_core::w4a8_serial ||
                    core == moe_prefill_core::w4a8_ws;
  const bool ws = core == moe_prefill_core::wgmma_ws;
  const bool wg =
      core == moe_prefill_core::wgmma || core == moe_prefill_core::wgmma_cp || ws || w4a8;
  if ((wg && !wgmma_device()) || (repacked && core != moe_prefill_core::wgmma && !ws))
    return cudaErrorInvalidValue;
  // wgmma_ws copies weight bytes and scale rows by cp.async of up to 16 bytes.
  if (ws)
    for (const device_weight* w : {&w1, &w3, &w2})
      if (!aligned_16(w->data) || !aligned_16(w->scale)) return cudaErrorInvalidValue;
  // The w4a8 core: official order, MXFP4 in the checkpoint layout (repacked refused above), E8M0
  // scale rows read as 32-bit words.
  if (w4a8 && (!official || w1.kind != weight_kind::mxfp4)) return cudaErrorInvalidValue;
  if (w4a8)
    for (const device_weight* w : {&w1, &w3, &w2})
      if ((reinterpret_cast<uintptr_t>(w->scale) & 3u) != 0) return cudaErrorInvalidValue;
  auto* xp = core == moe_prefill_core::wgmma_cp || ws
                 ? reinterpret_cast<__nv_bfloat16*>(base + l.xp)
                 : nullptr;
  // wgmma_ws on repacked weights (BF16 x only) may plan tiles of up to 256 pairs (its wide kernel).
  const bool wide = ws && repacked && std::is_same_v<act_t, __nv_bfloat16> &&
                    prefill::ws_use_wide(true, pairs, experts);
  const int tile = wide ? prefill::k_ws_wide_tile : wg ? k_wgmma_tile : k_tile;
  const int64_t tile_slots = max_tiles(pairs, experts, tile);

  moe_prefill_plan_kernel<<<1, k_plan_threads, 0, stream>>>(indices, int(pairs), int(experts), tile,
                                                            tile_count, sorted, tiles);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const float* pair_weights = official ? weights : nullptr;
  const bool mx = w1.kind == weight_kind::mxfp4;
  cudaError_t status;
  if constexpr (std::is_same_v<act_t, __nv_bfloat16>) {
    if (repacked && ws) {
      status = mx ? launch_wgmma_ws_gemms<__nv_bfloat16, weight_kind::mxfp4, true>(
                        x, tokens, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted,
                        tile_slots, pair_weights, indices, pairs, h, out, xp, wide, stream)
                  : launch_wgmma_ws_gemms<__nv_bfloat16, weight_kind::nvfp4, true>(
                        x, tokens, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted,
                        tile_slots, pair_weights, indices, pairs, h, out, xp, wide, stream);
      if (status != cudaSuccess) return status;
      return launch_moe_combine(official, out, indices, weights, tokens, top_k, experts, hidden, y,
                                stream, (moe_prefill_nongemm_old() & 1) == 0);
    }
    if (repacked) {
      status = mx ? launch_wgmma_gemms_repacked<weight_kind::mxfp4>(
                        x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                        pair_weights, indices, pairs, h, out, stream)
                  : launch_wgmma_gemms_repacked<weight_kind::nvfp4>(
                        x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                        pair_weights, indices, pairs, h, out, stream);
      if (status != cudaSuccess) return status;
      return launch_moe_combine(official, out, indices, weights, tokens, top_k, experts, hidden, y,
                                stream, (moe_prefill_nongemm_old() & 1) == 0);
    }
  }
  if (w4a8)
    status = launch_w4a8_gemms<act_t>(
        x, tokens, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
        pair_weights, indices, pairs, h, out, base + l.q,
        core == moe_prefill_core::w4a8_ws ? w4a8_kernel::warp_specialized
        : core == moe_prefill_core::w4a8  ? w4a8_kernel::pipelined
                                          : w4a8_kernel::serial,
        stream);
  else if (ws)
    status = mx ? launch_wgmma_ws_gemms<act_t, weight_kind::mxfp4, false>(
                      x, tokens, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted,
                      tile_slots, pair_weights, indices, pairs, h, out, xp, false, stream)
                : launch_wgmma_ws_gemms<act_t, weight_kind::nvfp4, false>(
                      x, tokens, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted,
                      tile_slots, pair_weights, indices, pairs, h, out, xp, false, stream);
  else if (wg)
    status = mx ? launch_wgmma_gemms<act_t, weight_kind::mxfp4>(
                      x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                      pair_weights, indices, pairs, h, out, xp, stream)
                : launch_wgmma_gemms<act_t, weight_kind::nvfp4>(
                      x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                      pair_weights, indices, pairs, h, out, xp, stream);
  else
    status = mx ? launch_gemms<act_t, weight_kind::mxfp4>(
                      x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                      pair_weights, indices, pairs, h, out, stream)
                : launch_gemms<act_t, weight_kind::nvfp4>(
                      x, top_k, w1, w3, w2, swiglu_limit, tile_count, tiles, sorted, tile_slots,
                      pair_weights, indices, pairs, h, out, stream);
  if (status != cudaSuccess) return status;
  return launch_moe_combine(official, out, indices, weights, tokens, top_k, experts, hidden, y,
                            stream, (moe_prefill_nongemm_old() & 1) == 0);
}

}  // namespace

bool moe_prefill_supported(const device_weight& w1, const device_weight& w3,
                           const device_weight& w2, int64_t tokens, int64_t top_k) {
  if (w1.kind != weight_kind::mxfp4 && w1.kind != weight_kind::nvfp4) return false;
  for (const device_weight* w : {&w1, &w3, &w2}) {
    if (validate_weight(*w, true) != cudaSuccess || w->kind != w1.kind ||
        w->scale_e8m0 != w1.scale_e8m0 || w->count != w1.count || w->layout != w1.layout)
      return false;
    if (w->kind == weight_kind::mxfp4 && !w->scale_e8m0 &&
        (reinterpret_cast<uintptr_t>(w->scale) & 3u) != 0)
      return false;
  }
  const int64_t hidden = w1.cols, inter = w1.rows;
  if (w3.rows != inter || w3.cols != hidden || w2.rows != hidden || w2.cols != inter ||
      hidden % k_round != 0 || inter % k_round != 0 || w1.count > k_max_experts || top_k <= 0 ||
      tokens < 0)
    return false;
  // Repacked weights: the wgmma core only (and BF16 x, which the entry point checks).
  if (w1.layout == weight_layout::repacked && !wgmma_device()) return false;
  const int64_t pairs = tokens * top_k;
  return pairs <= INT32_MAX && max_tiles(pairs, w1.count) <= 65535;
}

namespace {
std::atomic<int> g_nongemm_old{0};
}  // namespace

void moe_prefill_set_nongemm_old(int bits) {
  g_nongemm_old.store(bits, std::memory_order_relaxed);
}

int moe_prefill_nongemm_old() {
  return g_nongemm_old.load(std::memory_order_relaxed);
}

bool moe_prefill_use_wgmma(int64_t tokens, int64_t top_k, int64_t experts) {
  // Measured (H200, bench_moe_linear --prefill-quick): faster than mma.sync in all 34 timed
  // cases (Flash and Pro, MXFP4 and NVFP4, T = 256 / 1024 / 4096, bf16 / f32 / official), with
  // identical outputs; smaller steps were not timed and take it too.
  (void)tokens, (void)top_k, (void)experts;
  return wgmma_device();
}

size_t moe_prefill_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                   int64_t inter) {
  if (tokens <= 0 || top_k <= 0) return 256;
  return make_layout(tokens, top_k, experts, hidden, inter).total;
}

template <typename act_t>
cudaError_t moe_prefill_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                                const float* weights, int64_t top_k, const device_weight& w1,
                                const device_weight& w3, const device_weight& w2,
                                float swiglu_limit, void* workspace, size_t workspace_bytes,
                                act_t* y, cudaStream_t stream, moe_prefill_core core) {
  return run_prefill(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                     workspace_bytes, y, false, core, stream);
}

template <typename act_t>
cudaError_t moe_prefill_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                         const float* weights, int64_t top_k,
                                         const device_weight& w1, const device_weight& w3,
                                         const device_weight& w2, float swiglu_limit,
                                         void* workspace, size_t workspace_bytes, act_t* y,
                                         cudaStream_t stream, moe_prefill_core core) {
  return run_prefill(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                     workspace_bytes, y, true, core, stream);
}

#define DSV4_MOE_PREFILL_INSTANTIATE(T)                                                            \
  template cudaError_t moe_prefill_experts<T>(const T*, int64_t, const int32_t*, const float*,     \
                                              int64_t, const device_weight&, const device_weight&, \
                                              const device_weight&, float, void*, size_t, T*,      \
                                              cudaStream_t, moe_prefill_core);                     \
  template cudaError_t moe_prefill_experts_official<T>(                                            \
      const T*, int64_t, const int32_t*, const float*, int64_t, const device_weight&,              \
      const device_weight&, const device_weight&, float, void*, size_t, T*, cudaStream_t,          \
      moe_prefill_core);
DSV4_MOE_PREFILL_INSTANTIATE(float)
DSV4_MOE_PREFILL_INSTANTIATE(__nv_bfloat16)
#undef DSV4_MOE_PREFILL_INSTANTIATE

}  // namespace dsv4::cuda
