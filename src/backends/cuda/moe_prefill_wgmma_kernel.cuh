// The wgmma GEMM kernel of the routed-expert prefill (moe_prefill_wgmma.h; sm_90a), included by
// moe_prefill_wgmma.cu (L2 and the launch sequence) and moe_prefill_wgmma_up.cu (L1): two
// translation units that compile in parallel.
//
// Block: 256 threads = 2 warpgroups, one (row block, pair tile). L1: warpgroup q owns rows
// 64 q .. 64 q + 63 of the block's 128 rows of W1 and the same rows of W3 (two accumulators);
// L2: warpgroup q owns 128 of the block's 256 rows of W2 (rows 0-63 and 64-127 of its share in
// two accumulators). Per 16-k step each warpgroup issues wgmma.m64nNk16 with A = the expanded
// weights in registers and B = the tile's activations in shared memory; N (32/64/96/128) is the
// smallest that holds the tile's pair count (a block-uniform branch).
//
// A fragment (wgmma m64nNk16, per warp w of the warpgroup: rows 16 w .. 16 w + 15, the mma.sync
// m16n8k16 layout): lane (g, c) holds rows g and g + 8 at logical k {2c, 2c+1} (regs 0 / 1) and
// {2c+8, 2c+9} (regs 2 / 3). The logical k order inside a 128-wide round is a permutation of
// the physical one, applied to both operands: lane c's A data for all 8 steps of the round comes
// from its own 16 weight bytes (physical k 32 c .. 32 c + 31, fp4_mma.cuh's expansion): step s
// takes word w = s / 2, pairs P_i = (v_i, v_{i+4}) with i = 2 (s & 1) (regs 0 / 1) and i + 1
// (regs 2 / 3). So logical k 32 w + 8 i + 2 c + h holds physical k 32 c + 8 w + i + 4 h.
//
// B in shared memory: per round and stage, two 64-k "atoms" of 128 token rows x 128 bytes,
// K-major with the 128-byte swizzle (16-byte chunk j of row n at chunk j ^ (n & 7)), atoms
// 1024-byte aligned; a step's descriptor starts at atom s / 4, byte 32 (s % 4) (SBO 1024).
// Staging task (token n, w): the 4 physical 16-byte chunks k = 32 c + 8 w (c = 0..3) are loaded,
// paired (X_i = (v_i, v_{i+4})) and transposed into the 4 logical chunks 8 i + 32 w (i = 0..3):
// chunk i = (X_i of c = 0, 1, 2, 3).
//
// Pipeline: three activation stages; round r + 1's activations are loaded into registers during
// round r's steps 0 / 4 and stored at steps 4 / 7 into stage (r + 1) % 3, whose last readers
// (round r - 2's wgmmas) completed before the barrier that ended round r - 1. Weights stream
// through a per-thread cp.async ring k_wdepth rounds deep, scales one round ahead in registers.
// (Measured on the H200: the ring and BF16 h changed little against weights one round ahead in
// registers and f32 h, Flash T = 4096 4.22 -> 4.17 ms: the core is not bound by HBM. The main
// loop issues ~60 instructions per warp and step against 64-128 tensor cycles; the suspected
// limits are the activation staging through registers, whose loads get 3-4 steps of cover,
// the barrier per round, and the SwiGLU epilogue with one block per SM. Not yet profiled.)
// After each step's commit, wait_group 1 leaves that step in flight while the next one's A
// registers are expanded; the A registers cycle through 4 sets, so a set is rewritten only after
// its wgmma retired (ptxas also tracks this, and warns C7513 where it has to serialize).
//
// Repacked weights (RP, moe_repack.h; moe_prefill_wgmma_rp_*.cu): lane c's 16 bytes of rows g
// and g + 8 of a round are exactly its slots of the round's 1024-byte tile (the same words,
// each bit-permuted), so only the address (lane_round_ptr) and the pair extraction
// (weight_pair: fp4_repack::decode_pair, 11 instead of 15 integer instructions per word) change;
// the BF16 pairs, and so every product and sum, are bit for bit those of the checkpoint bytes.
//
// Determinism: each output element is one pair's sum over k in a fixed order.
#pragma once

#include <cuda_bf16.h>

#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/moe_prefill_common.cuh"
#include "backends/cuda/moe_prefill_wgmma.h"
#include "backends/cuda/moe_prefill_wgmma_ops.cuh"
#include "backends/cuda/wgmma_common.cuh"

// wgmma exists only in the sm_90a feature set; other targets compile a trapping body (the host
// side runs this core only on compute capability 9.0, see moe_prefill_use_wgmma).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSV4_PREFILL_WGMMA 1
#else
#define DSV4_PREFILL_WGMMA 0
#endif

namespace dsv4::cuda::prefill {

namespace {

constexpr int k_threads = 256;
constexpr int k_round = 128;                      // k per round (one 16-byte weight load per lane)
constexpr int k_atom_bytes = k_wgmma_tile * 128;  // 64 k of every token row
constexpr int k_stage_bytes = 2 * k_atom_bytes;
constexpr int k_stages = 3;
// Weight ring: each thread's 4 x 16 bytes (2 accumulators x 2 rows) per round, k_wdepth rounds.
constexpr int k_wdepth = 4;
constexpr int k_wround_bytes = 4 * k_threads * 16;
constexpr int k_smem_bytes =
    k_stages * k_stage_bytes + k_wdepth * k_wround_bytes + 1024;  // + alignment slack
constexpr int k_up_rows = 128;                                    // W1 (and W3) rows per L1 block
constexpr int k_down_rows = 256;                                  // W2 rows per L2 block

// K-major operand, 128-byte swizzle, 8-row groups 1024 bytes apart (LBO unused: 16).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return wgmma::sw128_desc(addr, 16, 1024);
}

// A registers of step s (0..7) of a round for one matrix: regs 0 / 1 = P_i of rows g / g + 8,
// regs 2 / 3 = P_{i+1}, i = 2 (s & 1), from word s / 2 (see the top of the file). RP: the words
// are in the repacked bit order (same pairs bit for bit).
template <weight_kind K, int s, bool RP>
__device__ __forceinline__ void expand_step(const tile_round& r, const tile_scale& sc,
                                            uint32_t (&a)[4]) {
  constexpr int w = s >> 1, i = 2 * (s & 1);
#pragma unroll
  for (int row = 0; row < 2; ++row) {
    const uint32_t word = word_of(r.v[row], w);
    uint32_t p0 = fp4mma::mul_bf16x2(weight_pair<i, RP>(word), sc.m1[row][w >> 1]);
    uint32_t p1 = fp4mma::mul_bf16x2(weight_pair<i + 1, RP>(word), sc.m1[row][w >> 1]);
    if constexpr (K == weight_kind::mxfp4) {
      if (sc.two) {  // E8M0 > 128: the second exact power-of-two step
        p0 = fp4mma::mul_bf16x2(p0, sc.m2[row]);
        p1 = fp4mma::mul_bf16x2(p1, sc.m2[row]);
      }
    }
    a[row] = p0;
    a[2 + row] = p1;
  }
}

// One staging task's loads: 4 x 8 activations of a token row (physical k0 + 32 c + 8 w).
template <typename in_t>
struct task_regs;
template <>
struct task_regs<__nv_bfloat16> {
  uint4 v[4];
};
template <>
struct task_regs<float> {
  float4 v[4][2];
};

template <typename in_t>
__device__ __forceinline__ void task_load(task_regs<in_t>& t, const in_t* row, int64_t k0, int w) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int64_t k = k0 + 32 * c + 8 * w;
    if constexpr (std::is_same_v<in_t, float>) {
      t.v[c][0] = row ? __ldg(reinterpret_cast<const float4*>(row + k)) : make_float4(0, 0, 0, 0);
      t.v[c][1] =
          row ? __ldg(reinterpret_cast<const float4*>(row + k + 4)) : make_float4(0, 0, 0, 0);
    } else {
      t.v[c] = row ? __ldg(reinterpret_cast<const uint4*>(row + k)) : make_uint4(0, 0, 0, 0);
    }
  }
}

// Pairs and transposes a task into its 4 logical chunks of token row n in `stage`.
template <typename in_t>
__device__ __forceinline__ void task_store(const task_regs<in_t>& t, uint8_t* stage, int n, int w) {
  uint32_t x[4][4];  // x[c][i] = X_i of physical chunk c
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    if constexpr (std::is_same_v<in_t, float>) {
      const float4 a = t.v[c][0], b = t.v[c][1];
      x[c][0] = pack_bf16x2(a.x, b.x);
      x[c][1] = pack_bf16x2(a.y, b.y);
      x[c][2] = pack_bf16x2(a.z, b.z);
      x[c][3] = pack_bf16x2(a.w, b.w);
    } else {
      const uint4 v = t.v[c];  // (x0 x1) (x2 x3) (x4 x5) (x6 x7)
      x[c][0] = __byte_perm(v.x, v.z, 0x5410);
      x[c][1] = __byte_perm(v.x, v.z, 0x7632);
      x[c][2] = __byte_perm(v.y, v.w, 0x5410);
      x[c][3] = __byte_perm(v.y, v.w, 0x7632);
    }
  }
  uint8_t* row = stage + (w >> 1) * k_atom_bytes + n * 128;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int chunk = 4 * (w & 1) + i;
    *reinterpret_cast<uint4*>(row + ((chunk ^ (n & 7)) << 4)) =
        make_uint4(x[0][i], x[1][i], x[2][i], x[3][i]);
  }
}

struct block_args {
  int e, ntok;
  int64_t cols, out_rows;
  int64_t r0;  // this warp's first row of accumulator a (accumulator b: r0 + b_offset)
  int64_t b_offset;
};

// Logical position (within its 128-wide round) of physical k p: p = 32 c + 8 w + i + 4 h sits at
// 32 w + 8 i + 2 c + h.
__host__ __device__ constexpr int permuted_k(int p) {
  return 32 * ((p >> 3) & 3) + 8 * (p & 3) + 2 * (p >> 5) + ((p >> 2) & 1);
}
static_assert(permuted_k(0) == 0 && permuted_k(4) == 1 && permuted_k(32) == 2 &&
                  permuted_k(1) == 8 && permuted_k(8) == 32 && permuted_k(127) == 127,
              "logical k order of the top of the file");

// The epilogue of both GEMM cores. Accumulator j: row g + 8 ((j >> 1) & 1) of the warp's 16,
// token 8 (j >> 2) + 2 c + (j & 1). NVFP4 weights were expanded as code * scale * 2^-8: the f32
// sums take global * 2^8. UP: clamped SwiGLU of a (W1) and b (W3), times the pair's routing
// weight when given, into h; with PERMUTE_H and BF16 h each row goes to its permuted column
// (the cp core's L2 reads h' in the logical k order). Down: a and b are two row blocks of W2.
template <typename out_t, weight_kind K, bool UP, int N, bool PERMUTE_H>
__device__ __forceinline__ void store_tile(const float (&acc)[2][N / 2], const block_args& ba,
                                           const fp4_weight& wa, const fp4_weight& wb,
                                           const int* pair_of, int g, int c, float limit,
                                           const float* pair_weights, out_t* dst) {
  float fa = 1.0f, fb = 1.0f;
  if constexpr (K == weight_kind::nvfp4) {
    fa = (wa.global ? __ldg(wa.global + ba.e) : 1.0f) * 256.0f;
    fb = (wb.global ? __ldg(wb.global + ba.e) : 1.0f) * 256.0f;
  }
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    const int t = 8 * (j >> 2) + 2 * c + (j & 1);
    if (t >= ba.ntok) continue;
    const int p = pair_of[t];
    const int64_t row = ba.r0 + g + 8 * ((j >> 1) & 1);
    if constexpr (UP) {
      if (row < ba.out_rows) {
        const float v = moe_swiglu_value(acc[0][j] * fa, acc[1][j] * fb, limit);
        const int64_t col = PERMUTE_H && std::is_same_v<out_t, __nv_bfloat16>
                                ? (row & ~int64_t(127)) | permuted_k(int(row & 127))
                                : row;
        dst[int64_t(p) * ba.out_rows + col] =
            act_from_f32<out_t>(pair_weights ? __fmul_rn(v, pair_weights[p]) : v);
      }
    } else {
      if (row < ba.out_rows)
        dst[int64_t(p) * ba.out_rows + row] = act_from_f32<out_t>(acc[0][j] * fa);
      if (row + ba.b_offset < ba.out_rows)
        dst[int64_t(p) * ba.out_rows + row + ba.b_offset] = act_from_f32<out_t>(acc[1][j] * fb);
    }
  }
}

template <typename in_t, typename out_t, weight_kind K, bool UP, int N, bool RP>
__device__ __forceinline__ void gemm_tile(const block_args& ba, const fp4_weight& wa,
                                          const fp4_weight& wb, const in_t* const* row_src,
                                          const int* pair_of, uint8_t* stages, float limit,
                                          const float* pair_weights, out_t* dst) {
  constexpr int tasks = 4 * N;  // (token row, w) per round
  constexpr int jobs = (tasks + k_threads - 1) / k_threads;
  static_assert(jobs <= 2, "staging schedule covers two tasks per thread");
  const int tid = threadIdx.x, lane = tid % k_warp_size;
  const int g = lane / 4, c = lane % 4;
  tile_rows tr[2];
  tr[0] = locate_tile<K, RP>(wa, ba.e, ba.r0 + g);
  tr[1] = locate_tile<K, RP>(wb, ba.e, ba.r0 + ba.b_offset + g);
  const int64_t klane = c * 32;
  const bool f32_scale = wa.scale_f32;

  float acc[2][N / 2];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) acc[m][j] = 0.0f;

  const int rounds = int(ba.cols / k_round);
  // Weight ring slot of (round, accumulator m, row i) for this thread: conflict-free 16-byte
  // accesses (consecutive threads, consecutive 16 bytes). Only the issuing thread reads a slot
  // back, after its own cp.async.wait_group: no barrier is involved.
  const uint32_t wring = smem_addr(stages + k_stages * k_stage_bytes) + tid * 16;
  const auto wslot = [&](int round, int m, int i) {
    return wring + ((round % k_wdepth) * 4 + 2 * m + i) * (k_threads * 16);
  };
  const auto issue_weights = [&](int round) {
    if (round < rounds)
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          cp_async_cg_16(wslot(round, m, i), lane_round_ptr<RP>(tr[m].w[i], round, c));
    cp_async_commit();  // empty past the end: the group count stays uniform
  };
  // Prologue: the weight ring's first rounds, round 0's activations into stage 0 and its
  // scales into registers.
#pragma unroll
  for (int d = 0; d < k_wdepth - 1; ++d) issue_weights(d);
#pragma unroll
  for (int j = 0; j < jobs; ++j) {
    const int task = tid + j * k_threads;
    if (task < tasks) {
      task_regs<in_t> t;
      task_load(t, row_src[task >> 2], 0, task & 3);
      task_store(t, stages, task >> 2, task & 3);
    }
  }
  tile_round cur[2], nxt[2];
#pragma unroll
  for (int m = 0; m < 2; ++m) load_tile_scales<K>(cur[m], tr[m], f32_scale, klane);
  wgmma::fence_async_smem();
  __syncthreads();

  // wgmma groups left in flight while the next step's A registers are expanded. 2 would suit
  // small N (short wgmmas next to their latency) but made ptxas serialize the NVFP4 kernels
  // (C7513: it could not keep three steps' A registers apart).
  constexpr int k_inflight = 1;
  for (int r = 0; r < rounds; ++r) {
    const bool more = r + 1 < rounds;
    const uint32_t buf = smem_addr(stages + (r % k_stages) * k_stage_bytes);
    uint8_t* nbuf = stages + ((r + 1) % k_stages) * k_stage_bytes;
    const int64_t knext = int64_t(r + 1) * k_round;
    issue_weights(r + k_wdepth - 1);
    cp_async_wait<k_wdepth - 1>();  // this thread's round r weights have landed
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) cur[m].v[i] = lds_16(wslot(r, m, i));
    if (more)
#pragma unroll
      for (int m = 0; m < 2; ++m) load_tile_scales<K>(nxt[m], tr[m], f32_scale, knext + klane);
    const tile_scale sc[2] = {scale_of<K>(cur[0]), scale_of<K>(cur[1])};
    task_regs<in_t> t;
    uint32_t a[4][2][4];  // [step & 3][accumulator][reg]
    const auto step = [&](auto s_const) {
      constexpr int s = decltype(s_const)::value;
      // Round r + 1's activations: task 0 loaded at step 0 and stored at step 4, task 1 loaded
      // at step 4 and stored at step 7.
      if constexpr (s == 4 || s == 7) {
        const int task = tid + (s == 4 ? 0 : k_threads);
        if (more && task < tasks) task_store(t, nbuf, task >> 2, task & 3);
      }
      if constexpr (s == 0 || (s == 4 && jobs > 1)) {
        const int task = tid + (s == 0 ? 0 : k_threads);
        if (more && task < tasks) task_load(t, row_src[task >> 2], knext, task & 3);
      }
      expand_step<K, s, RP>(cur[0], sc[0], a[s & 3][0]);
      expand_step<K, s, RP>(cur[1], sc[1], a[s & 3][1]);
      __syncwarp();  // .aligned: the warp reconverged after the staging branches
      wgmma::fence();
      const uint64_t d = smem_desc(buf + (s >> 2) * k_atom_bytes + (s & 3) * 32);
      wgmma_rs<N>::run(acc[0], a[s & 3][0], d);
      wgmma_rs<N>::run(acc[1], a[s & 3][1], d);
      wgmma::commit();
      wgmma::wait<k_inflight>();
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
    step(std::integral_constant<int, 4>{});
    step(std::integral_constant<int, 5>{});
    step(std::integral_constant<int, 6>{});
    step(std::integral_constant<int, 7>{});
    wgmma::fence_async_smem();
    __syncthreads();
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) cur[m].s[i] = nxt[m].s[i];
  }
  cp_async_wait<0>();
  wgmma::wait<0>();
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) wgmma::reg_fence(acc[m][j]);

  store_tile<out_t, K, UP, N, false>(acc, ba, wa, wb, pair_of, g, c, limit, pair_weights, dst);
}

// UP: src = x (rows by token), wa = W1, wb = W3, dst = h [pairs, inter]. Down: src = h (rows by
// pair), wa = wb = W2, dst = out [pairs, hidden]. Grid: x = row blocks, y = tile slots. RP: the
// weights are repacked (moe_repack.h); everything else is the same.
template <typename in_t, typename out_t, weight_kind K, bool UP, bool RP>
__global__ void __launch_bounds__(k_threads, 1)
    moe_prefill_wgmma_kernel(const in_t* src, int top_k, const int* tile_count, const int4* tiles,
                             const int* sorted, fp4_weight wa, fp4_weight wb, float limit,
                             const float* pair_weights, out_t* dst) {
#if DSV4_PREFILL_WGMMA
  extern __shared__ uint8_t smem_raw[];
  __shared__ const in_t* row_src[k_wgmma_tile];
  __shared__ int pair_of[k_wgmma_tile];
  const int slot = blockIdx.y;
  if (slot >= *tile_count) return;  // uniform over the block
  const int4 tile = tiles[slot];
  block_args ba;
  ba.e = tile.x;
  ba.ntok = tile.z;
  ba.cols = wa.cols;
  ba.out_rows = wa.rows;
  if (threadIdx.x < k_wgmma_tile) {
    const int p = int(threadIdx.x) < ba.ntok ? sorted[tile.y + threadIdx.x] : -1;
    pair_of[threadIdx.x] = p;
    row_src[threadIdx.x] = p < 0 ? nullptr : src + int64_t(UP ? p / top_k : p) * ba.cols;
  }
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / k_warp_size) % 4;
  ba.r0 = UP ? int64_t(blockIdx.x) * k_up_rows + wg * 64 + warp * 16
             : int64_t(blockIdx.x) * k_down_rows + wg * 128 + warp * 16;
  ba.b_offset = UP ? 0 : 64;
  const uint32_t base = smem_addr(smem_raw);
  uint8_t* stages = smem_raw + ((1024u - (base & 1023u)) & 1023u);
  __syncthreads();
  if (ba.ntok <= 32)
    gemm_tile<in_t, out_t, K, UP, 32, RP>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights,
                                          dst);
  else if (ba.ntok <= 64)
    gemm_tile<in_t, out_t, K, UP, 64, RP>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights,
                                          dst);
  else if (ba.ntok <= 96)
    gemm_tile<in_t, out_t, K, UP, 96, RP>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights,
                                          dst);
  else
    gemm_tile<in_t, out_t, K, UP, 128, RP>(ba, wa, wb, row_src, pair_of, stages, limit,
                                           pair_weights, dst);
#else
  __trap();
#endif
}

template <typename in_t, typename out_t, weight_kind K, bool UP, bool RP = false>
cudaError_t launch_one(dim3 grid, const in_t* src, int top_k, const int* tile_count,
                       const int4* tiles, const int* sorted, const fp4_weight& wa,
                       const fp4_weight& wb, float limit, const float* pair_weights, out_t* dst,
                       cudaStream_t stream) {
  if (const cudaError_t e =
          allow_dynamic_smem(moe_prefill_wgmma_kernel<in_t, out_t, K, UP, RP>, k_smem_bytes);
      e != cudaSuccess)
    return e;
  moe_prefill_wgmma_kernel<in_t, out_t, K, UP, RP><<<grid, k_threads, k_smem_bytes, stream>>>(
      src, top_k, tile_count, tiles, sorted, wa, wb, limit, pair_weights, dst);
  return cudaGetLastError();
}

}  // namespace

// L1 launch (moe_prefill_wgmma_up.cu): x (in_t) times W1 and W3 into h (out_t).
template <typename in_t, typename out_t, weight_kind K>
cudaError_t launch_wgmma_up(dim3 grid, const in_t* x, int top_k, const int* tile_count,
                            const int4* tiles, const int* sorted, const fp4_weight& w1,
                            const fp4_weight& w3, float limit, const float* pair_weights, out_t* h,
                            cudaStream_t stream);
// The same on repacked weights (moe_prefill_wgmma_rp_up.cu; BF16 x only, as the engine runs it).
template <typename out_t, weight_kind K>
cudaError_t launch_wgmma_up_rp(dim3 grid, const __nv_bfloat16* x, int top_k, const int* tile_count,
                               const int4* tiles, const int* sorted, const fp4_weight& w1,
                               const fp4_weight& w3, float limit, const float* pair_weights,
                               out_t* h, cudaStream_t stream);
// L2 on repacked weights (moe_prefill_wgmma_rp_down.cu): h (BF16 in the exact order, f32 in the
// official one) times W2 into out (f32). The checkpoint L2 is launched by moe_prefill_wgmma.cu.
template <typename in_t, weight_kind K>
cudaError_t launch_wgmma_down_rp(dim3 grid, const in_t* h, int top_k, const int* tile_count,
                                 const int4* tiles, const int* sorted, const fp4_weight& w2,
                                 float* out, cudaStream_t stream);

}  // namespace dsv4::cuda::prefill

// ---- The cp.async-staged variant (moe_prefill_core::wgmma_cp). ----
//
// The activations come pre-permuted into the logical k order above, as BF16 (x by
// moe_prefill_permute_kernel, h by L1's epilogue), so B is staged by plain 16-byte cp.async
// straight into the swizzled stages, two rounds ahead, with the weights of the same round in the
// same cp.async group: no activation registers, no load-to-store wait inside a round. Four B
// stages: the stage filled during round r (for r + 2) was last read by round r - 2, complete
// before the barrier that opens round r. Official order: L1 here (f32 h, not permuted), L2 the
// register-staged kernel above.
namespace dsv4::cuda::prefill {

namespace {

constexpr int k_cp_stages = 4;
constexpr int k_cp_smem_bytes = k_cp_stages * k_stage_bytes + k_wdepth * k_wround_bytes + 1024;

template <typename out_t, weight_kind K, bool UP, int N>
__device__ __forceinline__ void gemm_tile_cp(const block_args& ba, const fp4_weight& wa,
                                             const fp4_weight& wb,
                                             const __nv_bfloat16* const* row_src,
                                             const int* pair_of, uint8_t* stages, float limit,
                                             const float* pair_weights, out_t* dst) {
  constexpr int per_thread = N * 16 / k_threads;  // 16-byte B chunks per thread and round
  static_assert(per_thread * k_threads == N * 16, "N a multiple of 16");
  const int tid = threadIdx.x, lane = tid % k_warp_size;
  const int g = lane / 4, c = lane % 4;
  tile_rows tr[2];
  tr[0] = locate_tile<K>(wa, ba.e, ba.r0 + g);
  tr[1] = locate_tile<K>(wb, ba.e, ba.r0 + ba.b_offset + g);
  const int64_t klane = c * 32;
  const bool f32_scale = wa.scale_f32;

  float acc[2][N / 2];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) acc[m][j] = 0.0f;

  const int rounds = int(ba.cols / k_round);
  const uint32_t sbase = smem_addr(stages);
  const uint32_t wring = sbase + k_cp_stages * k_stage_bytes + tid * 16;
  const auto wslot = [&](int round, int m, int i) {
    return wring + ((round % k_wdepth) * 4 + 2 * m + i) * (k_threads * 16);
  };
  // Round `round`'s weights (this thread's) and B chunks (16 consecutive threads per token row).
  const auto issue = [&](int round) {
    if (round < rounds) {
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          cp_async_cg_16(wslot(round, m, i), tr[m].w[i] + (int64_t(round) * k_round + klane) / 2);
      const uint32_t stage = sbase + (round % k_cp_stages) * k_stage_bytes;
#pragma unroll
      for (int q = 0; q < per_thread; ++q) {
        const int idx = tid + q * k_threads, n = idx >> 4, j = idx & 15;
        const __nv_bfloat16* row = row_src[n];
        const uint32_t d = stage + (j >> 3) * k_atom_bytes + n * 128 + (((j & 7) ^ (n & 7)) << 4);
        cp_async_cg_16_zfill(d, row ? row + int64_t(round) * k_round + 8 * j : row_src[0],
                             row ? 16 : 0);
      }
    }
    cp_async_commit();  // empty past the end: the group count stays uniform
  };
  issue(0);
  issue(1);
  tile_round cur[2], nxt[2];
#pragma unroll
  for (int m = 0; m < 2; ++m) load_tile_scales<K>(cur[m], tr[m], f32_scale, klane);

  for (int r = 0; r < rounds; ++r) {
    const bool more = r + 1 < rounds;
    cp_async_wait<1>();  // this thread's round r chunks have landed
    wgmma::fence_async_smem();
    __syncthreads();  // everyone's round r chunks; round r - 2's wgmmas retired
    issue(r + 2);
    const uint32_t buf = sbase + (r % k_cp_stages) * k_stage_bytes;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) cur[m].v[i] = lds_16(wslot(r, m, i));
    if (more)
#pragma unroll
      for (int m = 0; m < 2; ++m)
        load_tile_scales<K>(nxt[m], tr[m], f32_scale, int64_t(r + 1) * k_round + klane);
    const tile_scale sc[2] = {scale_of<K>(cur[0]), scale_of<K>(cur[1])};
    uint32_t a[4][2][4];  // [step & 3][accumulator][reg]
    const auto step = [&](auto s_const) {
      constexpr int s = decltype(s_const)::value;
      expand_step<K, s, false>(cur[0], sc[0], a[s & 3][0]);
      expand_step<K, s, false>(cur[1], sc[1], a[s & 3][1]);
      __syncwarp();
      wgmma::fence();
      const uint64_t d = smem_desc(buf + (s >> 2) * k_atom_bytes + (s & 3) * 32);
      wgmma_rs<N>::run(acc[0], a[s & 3][0], d);
      wgmma_rs<N>::run(acc[1], a[s & 3][1], d);
      wgmma::commit();
      wgmma::wait<1>();
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
    step(std::integral_constant<int, 4>{});
    step(std::integral_constant<int, 5>{});
    step(std::integral_constant<int, 6>{});
    step(std::integral_constant<int, 7>{});
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) cur[m].s[i] = nxt[m].s[i];
  }
  cp_async_wait<0>();
  wgmma::wait<0>();
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) wgmma::reg_fence(acc[m][j]);

  // L1 with BF16 h writes each row at its permuted column (L2's B).
  store_tile<out_t, K, UP, N, true>(acc, ba, wa, wb, pair_of, g, c, limit, pair_weights, dst);
}

// As moe_prefill_wgmma_kernel, src pre-permuted BF16 (x' or h').
template <typename out_t, weight_kind K, bool UP>
__global__ void __launch_bounds__(k_threads, 1)
    moe_prefill_wgmma_cp_kernel(const __nv_bfloat16* src, int top_k, const int* tile_count,
                                const int4* tiles, const int* sorted, fp4_weight wa, fp4_weight wb,
                                float limit, const float* pair_weights, out_t* dst) {
#if DSV4_PREFILL_WGMMA
  extern __shared__ uint8_t smem_raw[];
  __shared__ const __nv_bfloat16* row_src[k_wgmma_tile];
  __shared__ int pair_of[k_wgmma_tile];
  const int slot = blockIdx.y;
  if (slot >= *tile_count) return;  // uniform over the block
  const int4 tile = tiles[slot];
  block_args ba;
  ba.e = tile.x;
  ba.ntok = tile.z;
  ba.cols = wa.cols;
  ba.out_rows = wa.rows;
  if (threadIdx.x < k_wgmma_tile) {
    const int p = int(threadIdx.x) < ba.ntok ? sorted[tile.y + threadIdx.x] : -1;
    pair_of[threadIdx.x] = p;
    row_src[threadIdx.x] = p < 0 ? nullptr : src + int64_t(UP ? p / top_k : p) * ba.cols;
  }
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / k_warp_size) % 4;
  ba.r0 = UP ? int64_t(blockIdx.x) * k_up_rows + wg * 64 + warp * 16
             : int64_t(blockIdx.x) * k_down_rows + wg * 128 + warp * 16;
  ba.b_offset = UP ? 0 : 64;
  const uint32_t base = smem_addr(smem_raw);
  uint8_t* stages = smem_raw + ((1024u - (base & 1023u)) & 1023u);
  __syncthreads();
  if (ba.ntok <= 32)
    gemm_tile_cp<out_t, K, UP, 32>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights, dst);
  else if (ba.ntok <= 64)
    gemm_tile_cp<out_t, K, UP, 64>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights, dst);
  else if (ba.ntok <= 96)
    gemm_tile_cp<out_t, K, UP, 96>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights, dst);
  else
    gemm_tile_cp<out_t, K, UP, 128>(ba, wa, wb, row_src, pair_of, stages, limit, pair_weights, dst);
#else
  __trap();
#endif
}

template <typename out_t, weight_kind K, bool UP>
cudaError_t launch_one_cp(dim3 grid, const __nv_bfloat16* src, int top_k, const int* tile_count,
                          const int4* tiles, const int* sorted, const fp4_weight& wa,
                          const fp4_weight& wb, float limit, const float* pair_weights, out_t* dst,
                          cudaStream_t stream) {
  if (const cudaError_t e =
          allow_dynamic_smem(moe_prefill_wgmma_cp_kernel<out_t, K, UP>, k_cp_smem_bytes);
      e != cudaSuccess)
    return e;
  moe_prefill_wgmma_cp_kernel<out_t, K, UP><<<grid, k_threads, k_cp_smem_bytes, stream>>>(
      src, top_k, tile_count, tiles, sorted, wa, wb, limit, pair_weights, dst);
  return cudaGetLastError();
}

}  // namespace

// L1 launch of the cp.async-staged variant (moe_prefill_wgmma_up.cu): x' times W1 and W3 into h
// (BF16 permuted, or f32 in physical order).
template <typename out_t, weight_kind K>
cudaError_t launch_wgmma_cp_up(dim3 grid, const __nv_bfloat16* xp, int top_k, const int* tile_count,
                               const int4* tiles, const int* sorted, const fp4_weight& w1,
                               const fp4_weight& w3, float limit, const float* pair_weights,
                               out_t* h, cudaStream_t stream);

}  // namespace dsv4::cuda::prefill
