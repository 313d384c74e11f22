// Decode-path routed experts on tensor cores (see moe_decode.h and fp4_mma.cuh).
//
// Launches:
//   1. moe_decode_prepare_kernel: block 0 plans (pairs grouped by expert, cut into chunks of up to
//      8 pairs: (expert, first position in `sorted`, count)); the other blocks convert x to the
//      paired BF16 hi (and lo, for f32 x) layout.
//   2. moe_decode_gemm_kernel<up = true>: item (chunk, 16-row tile): W1 and W3 rows of the tile
//      times the chunk's tokens; epilogue: SwiGLU, h written in the paired hi/lo layout.
//   3. moe_decode_gemm_kernel<up = false>: W2 rows times the chunk's h rows into out[pair, :].
//   4. moe_decode_combine_kernel: y[t] = sum_k weights[t, k] * out[t * top_k + k] in k order.
// Official order (moe_decode_experts_official): launch 2 writes hf = SwiGLU * weights[pair] in
// f32; moe_decode_quantize_h_kernel FP8-quantizes each 128-block of hf (quant::, the semantics
// of fake_quant_fp8_values) into the paired hi layout, where it is exact in BF16 (an e4m3 value
// times a power of two), so launch 3 runs without the lo part; the combine drops the weights.
// A block is 4 warps; each warp owns one 16-row tile and a quarter, half or all of K (RT = 1, 2
// or 4 tiles per block); K parts are summed through shared memory in warp order (deterministic).
// The grid is (row groups, chunk upper bound); blocks past the device-side chunk count exit.
// Two weight pipelines (RING, chosen per format and activation type in run()): RING streams the
// weights through a per-warp cp.async ring of k_stages rounds and launches 2..4 (and the
// quantize launch) with programmatic dependent launch, so each starts while its predecessor
// drains and L2 fetches its first W2 rounds before L1 has finished; !RING is the first
// version's register double buffer with plain launches. Both compute the same sums in the same
// order (the same outputs bit for bit).
// MOE8: a block whose chunk holds one pair may stage that pair's activation row in dynamic
// shared memory (moe_decode_set_stage_x_tokens; the GEMM kernel's stage_x). MOE9 (switches, not
// the default, see g_stage_x below): staging at every T (W2 from T = 2), W2 chunks of up to 2
// pairs (moe_decode_set_stage_pairs), 4 scale slots so that W1/W3 keeps 4 blocks per SM
// (moe_decode_set_scale_slots_from).
// MOE10 (moe_decode_set_chain): where the W1/W3 grid is one wave its last block per
// (chunk, 128-row group) quantizes h (no quantize launch); up to 8 pairs the prepare launch plans
// with one warp; at T <= 4 the GEMM blocks read their chunk with the count and the quantize /
// combine launches issue their loads before the index checks. MOE11 (chain bit 8; default 15):
// at T = 1 with bf16 x no prepare launch: each GEMM warp derives its block's chunk from the
// routing and W1/W3 converts x into its staged row itself (then the quantize launch runs: the
// fold's counters have nobody to zero them). Same sums (bit-equal to chain 0).
// MOE13 (chain bits 16, 32, 64; default 127): at T <= 4 on the engine's path the fold runs at every
// wave count and at T = 1, its counters in a per-stream buffer that the combine zeroes, and W2
// waits per chunk for its h (readiness counters released by the fold) instead of for the whole
// W1/W3 grid (chain_args; the SLOTS kernels). MOE15 (chain bit 256; default 383): a one-wave W2
// grid capped at ceil(blocks / SMs) blocks per SM (launch_gemm_ss); DSV4_MOE_TRACE (diagnostic
// builds only): %globaltimer stamps of every block (bench_moe_linear_trace).
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_decode_scales.h"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

namespace {

constexpr int k_warps = 4;
constexpr int k_threads = k_warps * k_warp_size;
constexpr int k_chunk = 8;    // pairs per chunk: the mma's N
constexpr int k_round = 128;  // k elements a warp covers per round (4 lanes x 32)
constexpr int k_plan_threads = 1024;
constexpr int64_t k_max_experts = 2048;

size_t align_256(size_t n) {
  return (n + 255) / 256 * 256;
}

int64_t max_chunks(int64_t pairs, int64_t experts) {
  return pairs / k_chunk + std::min(pairs, experts);
}

struct layout {
  size_t count = 0, sorted, chunks, xhi, xlo, hhi, hlo, hf, out, qcnt, total;
};

// Counters of the quantization folded into W1/W3 (moe_decode_set_chain), zeroed by the prepare
// launch of every call: one per (chunk slot, 128-row group of h).
int64_t qfold_counters(int64_t chunks_bound, int64_t inter) {
  return chunks_bound * (inter / 128);
}

layout make_layout(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden, int64_t inter) {
  const int64_t pairs = tokens * top_k;
  layout l;
  l.sorted = 256;
  l.chunks = l.sorted + align_256(size_t(pairs) * 4);
  l.xhi = l.chunks + align_256(size_t(max_chunks(pairs, experts)) * sizeof(int4));
  l.xlo = l.xhi + align_256(size_t(tokens * hidden) * 2);
  l.hhi = l.xlo + align_256(size_t(tokens * hidden) * 2);
  l.hlo = l.hhi + align_256(size_t(pairs * inter) * 2);
  l.hf = l.hlo + align_256(size_t(pairs * inter) * 2);  // official order only
  l.out = l.hf + align_256(size_t(pairs * inter) * 4);
  l.qcnt = l.out + align_256(size_t(pairs * hidden) * 4);
  l.total = l.qcnt + align_256(size_t(qfold_counters(max_chunks(pairs, experts), inter)) * 4);
  return l;
}

// One stacked 4-bit weight as the kernels see it.
struct fp4_weight {
  const uint8_t* data;
  const uint8_t* scale;
  const float* global;    // nvfp4 (null reads as 1)
  int64_t matrix_bytes;   // rows * cols / 2
  int64_t matrix_scales;  // scale elements per matrix
  int64_t cols;
  bool scale_f32;  // mxfp4 with f32 (power-of-two) scales
};

fp4_weight make_fp4_weight(const device_weight& w) {
  return fp4_weight{static_cast<const uint8_t*>(w.data),
                    static_cast<const uint8_t*>(w.scale),
                    w.global_scale,
                    weight_matrix_bytes(w.kind, w.rows, w.cols),
                    scale_matrix_count(w.kind, w.rows, w.cols),
                    w.cols,
                    w.kind == weight_kind::mxfp4 && !w.scale_e8m0};
}

// Programmatic dependent launch (pdl.cuh): the launches after the first carry the programmatic
// stream serialization attribute, so each may start while its predecessor drains. Every block
// of every such kernel executes pdl_wait() (the predecessor's grid complete and its writes
// visible) before it reads a predecessor's output and before it exits, and triggers its
// dependents only after that wait: a running dependent therefore knows that every earlier launch
// of the chain has completed (the plan, in particular).

// The activation layout of the decode kernels (x and h, hi and lo parts): fp4_mma.cuh's paired
// layout with the 16-byte groups of each 128-k round transposed, group i (k 8 i .. 8 i + 7) of
// lane q's 32 k at 16-byte slot 4 i + q of the round, so that each warp-wide 16-byte load of
// load_x covers 64 contiguous bytes (whole sectors of one line) per activation row; in the
// paired order it covered 16 of every 64 bytes over two lines. act_group_slot: the 16-byte slot
// (u16 index / 8) of 8-group j of a row; act_u16_index: the u16 index of activation k of a row
// (the row length a multiple of 128).
template <typename I>
__host__ __device__ __forceinline__ I act_group_slot(I j) {
  const I w = j & 15;  // the group's place in its round; its slot there: 4 (w % 4) + w / 4
  return j - w + (w & 3) * 4 + (w >> 2);
}
__host__ __device__ __forceinline__ int64_t act_u16_index(int64_t k) {
  return act_group_slot(k >> 3) * 8 + (fp4mma::paired_u16_index(k) & 7);
}

// 8 consecutive activations of a row, v(0) .. v(7) (f32), as the paired BF16 hi and lo words of
// their 16-byte group (word i: activation i in the low half, i + 4 in the high half). v is a
// function of j, not an array: with an array ptxas unrolled W1/W3's conversion loop differently.
template <typename F>
__device__ __forceinline__ void split_group8(F&& v, uint4& h, uint4& l) {
  uint16_t hi[8], lo[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) fp4mma::split_bf16(v(j), hi[j], lo[j]);
  h.x = hi[0] | (uint32_t(hi[4]) << 16), h.y = hi[1] | (uint32_t(hi[5]) << 16);
  h.z = hi[2] | (uint32_t(hi[6]) << 16), h.w = hi[3] | (uint32_t(hi[7]) << 16);
  l.x = lo[0] | (uint32_t(lo[4]) << 16), l.y = lo[1] | (uint32_t(lo[5]) << 16);
  l.z = lo[2] | (uint32_t(lo[6]) << 16), l.w = lo[3] | (uint32_t(lo[7]) << 16);
}

// ---- 1. plan + activation prepare ----
// The routing of up to 32 pairs as one whole warp sees it (lane p holds pair p): lanes grouped
// by expert with __match_any_sync. Shared by the one-warp plan and the chain-8 chunk derivation,
// so that both group (and so cut chunks) alike.
struct warp_expert_groups {
  int e;           // indices[lane] (-1 past `pairs`)
  int key;         // e, or for an invalid lane a key of its own above every expert
  bool valid;      // e in [0, experts)
  unsigned vmask;  // lanes with a valid expert
  unsigned same;   // valid lanes of this lane's expert
};  // the leader: expert_leader (computed in the struct, it changed the prepare kernel's SASS)
__device__ __forceinline__ warp_expert_groups group_lanes_by_expert(const int32_t* indices,
                                                                    int pairs, int experts) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x % k_warp_size;
  const int e = lane < pairs ? indices[lane] : -1;
  const bool valid = e >= 0 && e < experts;
  const unsigned vmask = __ballot_sync(full, valid);
  const int key = valid ? e : experts + lane;  // so invalid lanes match no other lane
  const unsigned same = __match_any_sync(full, key) & vmask;
  return {e, key, valid, vmask, same};
}
// The lowest lane of its expert (valid lanes only): the lane that writes its expert's chunks.
__device__ __forceinline__ bool expert_leader(const warp_expert_groups& g) {
  return g.valid && int(threadIdx.x % k_warp_size) == __ffs(g.same) - 1;
}

// moe_plan.cuh's moe_group_pairs_by_expert for pairs <= 32, run by one whole warp: the same
// sorted[] / chunks[] / *chunk_count (pairs of one expert in increasing p), without shared memory
// or block barriers. Pair p's position: the valid pairs of smaller experts, then those of its own
// expert before it; its expert's first chunk: the chunks of the smaller experts.
__device__ __forceinline__ void moe_group_pairs_by_expert_warp(const int32_t* indices, int pairs,
                                                               int experts, int chunk_pairs,
                                                               int* chunk_count, int* sorted,
                                                               int4* chunks) {
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x % k_warp_size;
  const warp_expert_groups g = group_lanes_by_expert(indices, pairs, experts);
  const int count = __popc(g.same);
  const bool leader = expert_leader(g);
  const int my_chunks = leader ? (count + chunk_pairs - 1) / chunk_pairs : 0;
  int pairs_before = 0, chunks_before = 0;
#pragma unroll
  for (int j = 0; j < k_warp_size; ++j) {
    const int kj = __shfl_sync(full, g.key, j);
    const int cj = __shfl_sync(full, my_chunks, j);
    if (kj < g.key) {
      pairs_before += (g.vmask >> j) & 1u;
      chunks_before += cj;
    }
  }
  if (g.valid) sorted[pairs_before + __popc(g.same & ((1u << lane) - 1u))] = lane;
  for (int j = 0; j < my_chunks; ++j)
    chunks[chunks_before + j] = make_int4(g.e, pairs_before + j * chunk_pairs,
                                          min(chunk_pairs, count - j * chunk_pairs), 0);
  const int total = __reduce_add_sync(full, my_chunks);
  if (lane == 0) *chunk_count = total;
}

// Chain 8: the chunk of slot `slot`, derived by one whole warp from the routing of one token
// instead of read from a plan. pairs <= k_chunk, so each distinct valid expert is one chunk and
// slot s is the expert of rank s among them, the chunks[] order of both plans. mask: the chunk's
// pair positions (the block plan's sorted[] may list them in another order, which changes no
// sum: each pair is an mma column of its own). False (warp-uniform) past the chunk count.
__device__ __forceinline__ bool moe_decode_self_chunk(const int32_t* indices, int pairs,
                                                      int experts, int slot, int& e,
                                                      unsigned& mask) {
  const unsigned full = 0xffffffffu;
  const warp_expert_groups g = group_lanes_by_expert(indices, pairs, experts);
  const bool leader = expert_leader(g);
  const unsigned leaders = __ballot_sync(full, leader);
  int before = 0;  // chunks (distinct valid experts) below this lane's expert
#pragma unroll
  for (int j = 0; j < k_chunk; ++j)
    before += ((leaders >> j) & 1u) && __shfl_sync(full, g.key, j) < g.key;
  const unsigned hit = __ballot_sync(full, leader && before == slot);
  if (!hit) return false;
  const int at = __ffs(hit) - 1;
  e = __shfl_sync(full, g.key, at);
  mask = __shfl_sync(full, g.same, at);
  return true;
}

// Chain 8: position i (< the chunk's pair count) of the chunk whose pairs are `mask`'s bits.
__device__ __forceinline__ int self_chunk_pair(unsigned mask, int i) {
  return int(__fns(mask, 0, i + 1));
}

// moe_decode_set_chain: block 0 also zeroes the `n_zero` counters at `zero` (quantization folded
// into W1/W3) and plans with one warp (warp_plan: pairs <= 32; run() takes it up to 8).
template <typename act_t>
__global__ void __launch_bounds__(k_plan_threads)
    moe_decode_prepare_kernel(const int32_t* indices, int pairs, int experts, int* chunk_count,
                              int* sorted, int4* chunks, const act_t* x, int64_t x_count,
                              uint16_t* xhi, uint16_t* xlo, int* zero, int n_zero, int warp_plan) {
  pdl_trigger();  // L1 may start; it waits for this grid before reading the plan
  if (blockIdx.x > 0) {
    // Groups of 8 activations of one row (cols % 8 == 0): 4 paired words of hi (and lo).
    const int64_t grp = (int64_t(blockIdx.x) - 1) * blockDim.x + threadIdx.x;
    if (grp * 8 >= x_count) return;
    uint4 h, l;
    split_group8([&](int j) { return act_to_f32(x[grp * 8 + j]); }, h, l);
    const int64_t at = act_group_slot(grp);
    reinterpret_cast<uint4*>(xhi)[at] = h;
    reinterpret_cast<uint4*>(xlo)[at] = l;
    return;
  }
  __shared__ int counts[k_max_experts];
  __shared__ int offset[k_max_experts];
  __shared__ int warp_sums[2][32];
  for (int i = threadIdx.x; i < n_zero; i += blockDim.x) zero[i] = 0;
  if (warp_plan) {  // pairs <= 8 (run())
    if (threadIdx.x < k_warp_size)
      moe_group_pairs_by_expert_warp(indices, pairs, experts, k_chunk, chunk_count, sorted, chunks);
    return;
  }
  moe_group_pairs_by_expert(indices, pairs, experts, k_chunk, chunk_count, sorted, chunks, counts,
                            offset, warp_sums);
}

// ---- 2/3. the tensor-core GEMV over (chunk, row tile) items ----

// Weight stream: each lane copies its own fragment of a round (16 bytes of rows g and g + 8 per
// matrix, and the 4-byte scale word holding its scales) into a per-warp shared-memory ring of
// k_stages rounds with cp.async, and reads back only what it copied itself, so
// cp.async.wait_group alone orders the copy and the read (no warp or block barrier). k_stages
// rounds per warp stay in flight while the tensor cores work (the register double buffer of the
// first version kept one, which left T = 1 latency-bound).
constexpr int k_stages = 4;

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  asm volatile(
      "cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(uint32_t(__cvta_generic_to_shared(smem))),
      "l"(gmem)
      : "memory");
}
template <int N>  // 4 or 8 bytes (cache-all: cp.async.cg takes 16 only)
__device__ __forceinline__ void cp_async_small(void* smem, const void* gmem) {
  asm volatile(
      "cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(uint32_t(__cvta_generic_to_shared(smem))),
      "l"(gmem), "n"(N)
      : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// One stage of one warp's ring: per matrix m and row half i (rows g, g + 8), lane-major.
template <int NM>
struct stage_buf {
  uint4 w[NM][2][k_warp_size];
};

// A warp's scales: a chunk of up to 16 bytes of each of its 16 rows per matrix (16 bytes: 4 rounds
// of E8M0, 2 of NVFP4 E4M3, 1 of MXFP4 as f32), copied once by the lanes q == 0, instead of four
// 4-byte copies per round that each touched 8 rows (as many L1 wavefronts as the weights).
// Geometry and slots: moe_decode_scales.h; k_scale_slots is enough that no chunk is overwritten
// before its last round is read (k_stages rounds in flight, >= 1 round per chunk).
using moe_scales::k_scale_slots;
template <int NM, int SS = k_scale_slots>
struct scale_buf {
  uint4 s[SS][NM][2][8];  // [slot][matrix][row half][g]
};
// Slots = k_stages (moe_decode_set_scale_slots_from) hold the chunks of k_stages rounds in flight
// for every geometry: the refill after round j writes the chunk of round j + k_stages, at most
// k_stages - 1 past that of round j + 1 (one round per chunk); it may take round j's slot, hence
// the __syncwarp before the refill whenever k_stages >= slots. Frees 8 KB of a W1/W3 block (4 KB
// of W2): with a staged row, 4 W1/W3 blocks per SM instead of 3.

// One round's weights of one matrix for rows g and g + 8 as mma_round takes them.
template <weight_kind K>
struct round_w {
  uint4 v[2];
  uint32_t s[2];  // mxfp4: E8M0 byte; nvfp4: two E4M3 bytes (low = first 16)
};

// The register pipeline's loads of one round (RING = false): 16 weight bytes of rows g and
// g + 8 and their scales, straight into registers. RP: the weight bytes come from the repacked
// layout instead, `rp_lane` = this lane's 16 bytes of row g in the tile's round 0 (row g + 8 at
// +512, rounds 1 KB apart).
template <weight_kind K, int RP = 0>
__device__ __forceinline__ void load_round(round_w<K>& r, const uint8_t* row0, const uint8_t* srow0,
                                           int64_t row_bytes, int64_t srow, bool scale_f32,
                                           int64_t k, const uint8_t* rp_lane = nullptr) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (RP)
      r.v[i] = fp4mma::load_stream_16(rp_lane + (k / k_round) * fp4_repack::k_tile_bytes +
                                      i * (fp4_repack::k_tile_bytes / 2));
    else
      r.v[i] = fp4mma::load_stream_16(row0 + i * 8 * row_bytes + k / 2);
    const uint8_t* s = srow0 + i * 8 * srow * (scale_f32 ? 4 : 1);
    if constexpr (K == weight_kind::mxfp4) {
      r.s[i] = scale_f32 ? (__ldg(reinterpret_cast<const uint32_t*>(s) + k / 32) >> 23) & 0xFFu
                         : __ldg(s + k / 32);
    } else {
      r.s[i] = __ldg(s + k / 16) | (uint32_t(__ldg(s + k / 16 + 1)) << 8);
    }
  }
}

// The first version's round (the register pipeline keeps it): the same values as mma_round, with
// the MXFP4 multipliers from mx_scale_of and the second step as a per-lane branch per word.
// Measured on an H200 (MOE5 run 2): the register pipeline with mma_round instead took 1.09-1.12x
// longer (MXFP4 f32, Flash T = 1 and 64); the cp.async ring gained with it.

// One 32-bit word of eight E2M1 codes to four unscaled BF16 pairs, in the checkpoint's nibble
// order (RP = 0) or the repacked one: RP = 1 with fp4_repack::decode_pairs (rotations on the
// integer ALU pipe), RP = 2 with decode_pairs_shift (4 of the 5 rotations as IMAD shifts on the
// FMA pipe; the same pairs bit for bit). Every use of RP as a flag means "repacked layout".
template <int RP>
__device__ __forceinline__ void expand_word(uint32_t word, uint32_t (&p)[4]) {
  if constexpr (RP == 2) {
    fp4_repack::decode_pairs_shift(word, p);
  } else if constexpr (RP) {
    fp4_repack::decode_pairs(word, p);
  } else {
    p[0] = fp4mma::e2m1_pair<0>(word), p[1] = fp4mma::e2m1_pair<1>(word);
    p[2] = fp4mma::e2m1_pair<2>(word), p[3] = fp4mma::e2m1_pair<3>(word);
  }
}
template <weight_kind K, bool SPLIT, int RP>
__device__ __forceinline__ void mma_round_per_word(float (&acc)[4], const round_w<K>& r,
                                                   const uint4 (&xh)[4], const uint4 (&xl)[4]) {
  uint32_t m1[2][2], m2[2];
  bool two = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (K == weight_kind::mxfp4) {
      const fp4mma::mx_scale s = fp4mma::mx_scale_of(r.s[i]);
      m1[i][0] = m1[i][1] = s.m1;
      m2[i] = s.m2;
      two |= s.m2 != 0x3F803F80u;
    } else {
      m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
      m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
    }
  }
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    uint32_t p0[4], p1[4];
    expand_word<RP>(w == 0 ? r.v[0].x : w == 1 ? r.v[0].y : w == 2 ? r.v[0].z : r.v[0].w, p0);
    expand_word<RP>(w == 0 ? r.v[1].x : w == 1 ? r.v[1].y : w == 2 ? r.v[1].z : r.v[1].w, p1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      p0[j] = fp4mma::mul_bf16x2(p0[j], m1[0][w >> 1]);
      p1[j] = fp4mma::mul_bf16x2(p1[j], m1[1][w >> 1]);
    }
    if constexpr (K == weight_kind::mxfp4) {
      if (two) {  // E8M0 > 128 (scale > 2): a second exact power-of-two step
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          p0[j] = fp4mma::mul_bf16x2(p0[j], m2[0]);
          p1[j] = fp4mma::mul_bf16x2(p1[j], m2[1]);
        }
      }
    }
    fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xh[w].x, xh[w].y);
    fp4mma::mma_bf16(acc, p0[2], p1[2], p0[3], p1[3], xh[w].z, xh[w].w);
    if constexpr (SPLIT) {
      fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xl[w].x, xl[w].y);
      fp4mma::mma_bf16(acc, p0[2], p1[2], p0[3], p1[3], xl[w].z, xl[w].w);
    }
  }
}

// acc += the round's 16 rows x 32 k per lane (128 per quad) times the token fragments xh / xl.
// RP: the weight words are in the repacked bit order (moe_repack.h), which decodes to the same
// pairs with fewer instructions. An MXFP4 scale becomes its BF16x2 multiplier m1 = 2^(e - 1)
// with one IMAD (e * 0x00800080 + 0x3F003F00; exact for e <= 128, no carry between the halves);
// the second exact step for E8M0 > 128 (scale > 2, never in the checkpoints) is a separate
// whole-round variant (TWO) that the warp enters only when one of its lanes needs it (MOE4's
// loop branched per word and built m1 / m2 with ~30 SEL / ISETP per round). In the TWO variant
// every lane takes mx_scale_of, whose m2 is 1.0 for e <= 128, so lanes without a large scale
// compute the same values as in the fast variant: every product, scale step and sum is the
// first version's (bit-identical outputs).
// after_word0: called once, after word 0's HMMAs (the ring's next-round activation loads, see
// round_math; a no-op elsewhere).
struct no_hook {
  __device__ __forceinline__ void operator()() const {}
};
template <weight_kind K, bool SPLIT, bool TWO, int RP, typename H = no_hook>
__device__ __forceinline__ void mma_round(float (&acc)[4], const round_w<K>& r,
                                          const uint4 (&xh)[4], const uint4 (&xl)[4],
                                          const H& after_word0 = H{}) {
  uint32_t m1[2][2], m2[2] = {0x3F803F80u, 0x3F803F80u};
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (K == weight_kind::mxfp4) {
      if constexpr (TWO) {
        const fp4mma::mx_scale s = fp4mma::mx_scale_of(r.s[i]);
        m1[i][0] = m1[i][1] = s.m1;
        m2[i] = s.m2;
      } else {
        m1[i][0] = m1[i][1] = r.s[i] * 0x00800080u + 0x3F003F00u;
      }
    } else {
      m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
      m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
    }
  }
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    uint32_t p0[4], p1[4];
    expand_word<RP>(w == 0 ? r.v[0].x : w == 1 ? r.v[0].y : w == 2 ? r.v[0].z : r.v[0].w, p0);
    expand_word<RP>(w == 0 ? r.v[1].x : w == 1 ? r.v[1].y : w == 2 ? r.v[1].z : r.v[1].w, p1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      p0[j] = fp4mma::mul_bf16x2(p0[j], m1[0][w >> 1]);
      p1[j] = fp4mma::mul_bf16x2(p1[j], m1[1][w >> 1]);
    }
    if constexpr (TWO) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        p0[j] = fp4mma::mul_bf16x2(p0[j], m2[0]);
        p1[j] = fp4mma::mul_bf16x2(p1[j], m2[1]);
      }
    }
    fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xh[w].x, xh[w].y);
    fp4mma::mma_bf16(acc, p0[2], p1[2], p0[3], p1[3], xh[w].z, xh[w].w);
    if constexpr (SPLIT) {
      fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xl[w].x, xl[w].y);
      fp4mma::mma_bf16(acc, p0[2], p1[2], p0[3], p1[3], xl[w].z, xl[w].w);
    }
    if (w == 0) after_word0();
  }
}

// All NM matrices of one round: the ring's mma_round (with the warp-wide choice of its TWO variant
// for MXFP4) or the register pipeline's mma_round_per_word. All lanes of the warp.
// H (the ring): after_word0 of matrix 0's round.
template <weight_kind K, bool SPLIT, int RP, int NM, bool RING = true, typename H = no_hook>
__device__ __forceinline__ void mma_rounds(float (&acc)[NM][4], const round_w<K> (&cur)[NM],
                                           const uint4 (&xh)[4], const uint4 (&xl)[4],
                                           const H& after_word0 = H{}) {
  if constexpr (!RING) {
#pragma unroll
    for (int m = 0; m < NM; ++m) mma_round_per_word<K, SPLIT, RP>(acc[m], cur[m], xh, xl);
  } else if constexpr (K == weight_kind::mxfp4) {
    uint32_t emax = 0;
#pragma unroll
    for (int m = 0; m < NM; ++m) emax = max(emax, max(cur[m].s[0], cur[m].s[1]));
    if (__any_sync(0xffffffffu, emax > 128u)) {
      mma_round<K, SPLIT, true, RP>(acc[0], cur[0], xh, xl, after_word0);
#pragma unroll
      for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, true, RP>(acc[m], cur[m], xh, xl);
    } else {
      mma_round<K, SPLIT, false, RP>(acc[0], cur[0], xh, xl, after_word0);
#pragma unroll
      for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, false, RP>(acc[m], cur[m], xh, xl);
    }
  } else {
    mma_round<K, SPLIT, false, RP>(acc[0], cur[0], xh, xl, after_word0);
#pragma unroll
    for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, false, RP>(acc[m], cur[m], xh, xl);
  }
}

// A lane's 32 activations of round `round` (act_u16_index layout): 4 groups of 8 = 4 x 16 bytes
// per part; hi / lo point at the lane's group 0 of round 0 (row start + q).
// COH: plain (weak, coherent) loads instead of the non-coherent path, which is for data
// read-only over the kernel's lifetime: chain 16's W2 reads h that the W1/W3 grid, still
// running, released after the kernel started. wait_counter's fence (MEMBAR.SC.GPU + CCTL.IVALL
// in the SASS) orders them after the release; they still hit L1 (the block's 4 warps read the
// same h row), which ld.global.cg would bypass.
template <bool COH = false>
__device__ __forceinline__ uint4 load_act16(const uint4* p) {
  if constexpr (COH)
    return *p;
  else
    return __ldg(p);
}
template <bool COH = false>
__device__ __forceinline__ void load_x(uint4 (&xh)[4], uint4 (&xl)[4], const uint4* hi,
                                       const uint4* lo, int64_t round, bool split) {
#pragma unroll
  for (int i = 0; i < 4; ++i) xh[i] = load_act16<COH>(hi + round * 16 + 4 * i);
  if (split) {
#pragma unroll
    for (int i = 0; i < 4; ++i) xl[i] = load_act16<COH>(lo + round * 16 + 4 * i);
  }
}

// Official order: FP8 quantize-dequantize of one 128-block of one pair's hf row (block maximum,
// scale and e4m3 rounding of quant::fp8_block_warp, i.e. fake_quant_fp8_values), written as BF16
// (exact) into the pair's paired-layout h row. One whole warp, 4 values per lane (v4, loaded by
// load_h_block from the block at k_base of the pair's row; L2 loads in the fold, where other
// blocks of the running grid wrote the row, visible through their fence and the counter).
template <bool L2 = false>
__device__ __forceinline__ float4 load_h_block(const float* hf_block, int lane) {
  const float4* p = reinterpret_cast<const float4*>(hf_block) + lane;
  return L2 ? __ldcg(p) : *p;
}
__device__ __forceinline__ void quantize_h_block(float4 v4, uint16_t* h_row, int64_t k_base,
                                                 int lane, bool store = true) {
  const int64_t k0 = k_base + lane * 4;
  const float v[4] = {v4.x, v4.y, v4.z, v4.w};
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 4; ++j) amax = fmaxf(amax, fabsf(v[j]));  // NaN ignored
  amax = quant::warp_max(amax);
  const float s = quant::pow2_ceil(__fdiv_rn(fmaxf(amax, 1e-4f), 448.0f));
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float q = __fmul_rn(quant::e4m3_round(__fdiv_rn(v[j], s)), s);
    if (store) h_row[act_u16_index(k0 + j)] = __bfloat16_as_ushort(__float2bfloat16_rn(q));
  }
}

// One term of the combine, y[t] += weight * out[p] (exact order) or out[p] (official order,
// weighted false): the FFMA / FADD the combine kernel compiled to before MOE10 (SASS of
// 023a8fe), spelled out so that both combine variants round alike.
__device__ __forceinline__ float combine_term(float acc, bool weighted, float weight, float v) {
  return weighted ? __fmaf_rn(weight, v, acc) : __fadd_rn(acc, v);
}

// moe_decode_set_chain, per GEMM launch. qcnt (UP, official order; null = the quantize launch
// runs): the last block of a (chunk, 128-row group of h) quantizes that group of the chunk's hf
// rows, "last" by a counter per group that every block increments after its stores, a barrier
// and a fence (the release of cooperative groups' grid sync); counters zeroed by the prepare
// launch. early_chunk: the chunk is read together with the chunk count (one dependent L2 load
// fewer before the weight stream; a slot past the count reads a stale entry and exits).
// self_indices (chain 8, T = 1, pairs <= 8, bf16 x, the ring): no prepare launch; every warp
// derives its block's chunk from the routing (moe_decode_self_chunk) and the W1/W3 blocks read x
// itself (ain_hi: the raw bf16 row), converted into the staged row as the prepare launch would.
// Chain 16 (ready non-null; the GEMM kernels with SLOTS): W1/W3's fold releases each quantized
// 128-row group of h on ready[slot * k_ready_stride] (after its stores and a barrier, by a release
// reduction; the fold's count is an acq_rel RMW);
// the W2 blocks, once their first ring rounds are in flight, wait for their own slot's
// `ready_target` groups instead of griddepcontrol.wait for the whole W1/W3 grid (see
// wait_counter) and read h with coherent loads (load_act16); they exit without
// griddepcontrol.wait (the exception to pdl.cuh's contract, argued at the kernel's end).
// fold_waves: the fold at any wave count (its counters then live in the per-stream buffer, not in
// the workspace). stage_h1 (host side, chain 32): W2 stages h at T = 1 too.
struct chain_args {
  int* qcnt;
  int early_chunk;
  const int32_t* self_indices;
  int self_pairs, self_experts;
  int* ready;
  int ready_target;
  int fold_waves;
  int stage_h1;
};

#ifdef DSV4_MOE_TRACE
// Diagnostic build only (bench_moe_linear_trace; never the library's default): %globaltimer
// stamps of thread 0 of every block of the traced calls: t[0] entry, t[1] after the wait for the
// predecessor (W2: its slot's h), t[2] after the weight loop, t[3] exit.
struct moe_trace_rec {
  unsigned long long t[4];
  int kind, sm, slot, bx;  // kind 0 W1/W3, 1 W2, 2 combine
};
constexpr int k_trace_max = 8192;
__device__ moe_trace_rec g_trace[k_trace_max];
__device__ unsigned g_trace_n;
__device__ int g_trace_on;
__device__ __forceinline__ unsigned long long trace_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
struct trace_block {  // stamps in shared memory: no registers taken from the kernel
  unsigned long long* t;
  __device__ trace_block() {
    __shared__ unsigned long long stamps[4];
    t = stamps;
    if (threadIdx.x == 0)
      for (int i = 0; i < 4; ++i) t[i] = 0;
  }
  __device__ void stamp(int i) {
    if (threadIdx.x == 0) t[i] = trace_now();
  }
  __device__ void flush(int kind, int slot) {
    if (threadIdx.x != 0 || !g_trace_on) return;
    t[3] = trace_now();
    const unsigned k = atomicAdd(&g_trace_n, 1u);
    if (k >= unsigned(k_trace_max)) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    moe_trace_rec r;
    for (int i = 0; i < 4; ++i) r.t[i] = t[i];
    r.kind = kind, r.sm = int(sm), r.slot = slot, r.bx = int(blockIdx.x);
    g_trace[k] = r;
  }
};
#define DSV4_TRACE(...) __VA_ARGS__
#else
#define DSV4_TRACE(...)
#endif

// Counters polled by many blocks each own a 128-byte line.
constexpr int k_ready_stride = 32;

// Thread 0 waits (relaxed loads with backoff: an acquire load per poll would also invalidate the
// SM's L1 each time) until *counter reaches `target`, then the block proceeds: the pattern of
// cooperative groups' grid sync (a fence after the spin, then the block barrier), so every
// thread's later L2 loads see what the producers stored before their release.
__device__ __forceinline__ void wait_counter(const int* counter, int target) {
  if (threadIdx.x == 0) {
    int v, ns = 32;
    for (int spins = 0;; ++spins) {
      asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
      if (v >= target) break;
      // Seconds without progress: a broken invariant (counters not zero at the start, producer
      // blocks not resident). Fail the launch rather than hang the device.
      if (spins == (1 << 24)) __trap();
      __nanosleep(ns);
      ns = min(ns * 2, 512);
    }
    __threadfence();
  }
  __syncthreads();
}

__device__ __forceinline__ void bar_sync_threads(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// UP: W1 and W3 (NM = 2), SwiGLU epilogue into paired hi/lo h, or (pair_weights non-null, the
// official order) h * pair_weights[pair] into hf [pairs, rows] f32. !UP: W2 into out (f32).
// ain_hi / ain_lo: paired activations, one row of `kdim` per token (UP) or per pair (!UP).
// Before its grid-dependency wait the kernel reads only the plan (chain 8: the routing), complete
// (see pdl_wait), and the weights, so with RING, !UP streams its first k_stages rounds of W2
// while the L1 launch still finishes.
// RP: the weights are repacked (moe_repack.h): a lane's 16 bytes of rows g and g + 8 of a round
// are at tile * 1024 + lane * 16 and + 512 (each warp-wide load one contiguous 512 bytes),
// rounds of a row tile 1024 bytes apart; both pipelines read them.
// SSO: scale slots (0: k_scale_slots; moe_decode_set_scale_slots_from).
// SLOTS (chain 16; the ring without a lo part, RP = 2): W1/W3 releases each quantized group of
// h on chain.ready; W2 waits for its slot's h there instead of the grid dependency and reads h
// with coherent loads (see chain_args). A template parameter so that the other instantiations keep
// their SASS.
template <weight_kind K, bool UP, bool SPLIT, int RT, bool RING, int RP = 0, int SSO = 0,
          bool SLOTS = false>
__global__ void __launch_bounds__(k_threads, (RING && K == weight_kind::mxfp4) ? 4 : 1)
    moe_decode_gemm_kernel(const uint16_t* ain_hi, const uint16_t* ain_lo, int64_t kdim,
                           int64_t rows, int top_k, const int* chunk_count, const int4* chunks,
                           const int* sorted, fp4_weight wa, fp4_weight wb, float limit,
                           const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo, float* hf,
                           float* out, int stage_x, chain_args chain) {
  constexpr int NM = UP ? 2 : 1;
  constexpr int KS = k_warps / RT;
  // Scale chunks of the rounds in flight (at least one round per chunk) fit the slots.
  constexpr int SS = SSO ? SSO : k_scale_slots;
  static_assert(k_stages <= SS, "ring deeper than the scale slots");
  static_assert(!SLOTS || (RING && !SPLIT && RP == 2), "SLOTS: the engine's path only");
  constexpr bool HL2 = SLOTS && !UP;  // W2: h of the running W1/W3 grid (load_act16<true>)
  __shared__ int pair_of[k_chunk];
  __shared__ int fold_last;
  __shared__ float partial[KS > 1 ? (KS - 1) * RT : 1][NM][4][k_warp_size];
  // 128-byte aligned (MOE18): each warp's cp.async of a matrix-round half writes 512 contiguous
  // bytes here. With the ring only 16-byte aligned (W1/W3 had it at shared offset 48 after
  // pair_of / fold_last), every 32-byte global sector lands across two 32-byte shared chunks and
  // L1 requested each sector twice: ncu (H200, Flash T = 16) counted 32 L2 sectors per weight
  // LDGSTS instead of 16, twice the weights' bytes through L2 (L2 tag requests 86% of peak, the
  // "Mem Busy") and 4x the ideal shared wavefronts. W2 had it at 32 (sectors ideal).
  __shared__ alignas(128) stage_buf<NM> ring[RING ? k_warps : 1][RING ? k_stages : 1];
  __shared__ alignas(128) scale_buf<NM, SS> scale_ring[RING ? k_warps : 1];
  extern __shared__ uint4 dyn_smem[];
  DSV4_TRACE(trace_block tr; tr.stamp(0));
  // UP: the plan comes from the launch right before this one (chain 8: the routing and x, from
  // launches before the call).
  if constexpr (UP) pdl_wait();
  DSV4_TRACE(if constexpr (UP) tr.stamp(1));
  const int slot = blockIdx.y;
  int4 c;
  unsigned self_mask = 0;  // chain 8: the chunk's pair positions
  if (chain.self_indices) {
    // !UP: W2 runs only once every W1/W3 block has passed its wait, so the routing is complete.
    int e_self;
    if (!moe_decode_self_chunk(chain.self_indices, chain.self_pairs, chain.self_experts, slot,
                               e_self, self_mask)) {
      if constexpr (!UP && !HL2) pdl_wait();
      return;
    }
    c = make_int4(e_self, 0, __popc(self_mask), 0);
    // Positions past the count: the last pair, as the plan's clamp below (the value of
    // self_chunk_pair at the clamped position; spelled so, the SASS is MOE11's: the clamp changed
    // it).
    if (threadIdx.x < k_chunk)
      pair_of[threadIdx.x] = int(threadIdx.x) < c.z ? self_chunk_pair(self_mask, threadIdx.x)
                                                    : 31 - __clz(int(self_mask));
  } else {
    if (chain.early_chunk) c = chunks[slot];
    if (slot >= *chunk_count) {  // uniform over the block
      if constexpr (!UP && !HL2) pdl_wait();
      return;
    }
    if (!chain.early_chunk) c = chunks[slot];
    if (threadIdx.x < k_chunk) pair_of[threadIdx.x] = sorted[c.y + min(int(threadIdx.x), c.z - 1)];
  }
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % RT, kpart = warp / RT;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * RT + tile) * 16;
  const int64_t rounds = kdim / k_round;
  const int64_t rb = rounds * kpart / KS, re = rounds * (kpart + 1) / KS;

  const int64_t e = c.x;
  const int64_t row_bytes = kdim / 2;
  const int64_t srow = K == weight_kind::mxfp4 ? kdim / 32 : kdim / 16;
  const uint8_t* wrow[NM];
  const uint8_t* srow_p[NM];
  fp4_weight ws[2] = {wa, wb};
#pragma unroll
  for (int m = 0; m < NM; ++m) {
    wrow[m] = ws[m].data + e * ws[m].matrix_bytes + (r0 + g) * row_bytes;
    srow_p[m] =
        ws[m].scale + (e * ws[m].matrix_scales + (r0 + g) * srow) * (ws[m].scale_f32 ? 4 : 1);
  }
  float acc[NM][4];
#pragma unroll
  for (int m = 0; m < NM; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
  if constexpr (RING) {
    const bool scale_f32 = ws[0].scale_f32;  // one encoding for all three (moe_decode_supported)
    // This lane's copy sources at round rb, advanced by one round per issue: 64 weight bytes of a
    // row per round. Scale rows go in aligned chunks (moe_decode_scales.h: 16 bytes for the
    // model shapes, 8 or 4 for rows of 128 or 256 columns).
    const moe_scales::encoding enc = K == weight_kind::nvfp4 ? moe_scales::encoding::e4m3
                                     : scale_f32             ? moe_scales::encoding::f32
                                                             : moe_scales::encoding::e8m0;
    const moe_scales::geometry geo = moe_scales::make_geometry(srow * (scale_f32 ? 4 : 1), enc);
    const uint8_t* src_w[NM][2];
    const uint8_t* src_s[NM][2];
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if constexpr (RP)
          src_w[m][i] = ws[m].data + e * ws[m].matrix_bytes +
                        ((r0 / fp4_repack::k_tile_rows) * rounds + rb) * fp4_repack::k_tile_bytes +
                        i * (fp4_repack::k_tile_bytes / 2) + lane * 16;
        else
          src_w[m][i] = wrow[m] + i * 8 * row_bytes + rb * (k_round / 2) + q * 16;
        src_s[m][i] = srow_p[m] + i * 8 * srow * (scale_f32 ? 4 : 1);
      }
    const int nr = int(re - rb);  // this warp's rounds
    // Scale-chunk bookkeeping in 32 bits (rounds < 2^31) with the power-of-two slot count: the
    // values of moe_scales::chunk_of / copies_chunk / word_of and chunk % SS, without the 64-bit
    // shifts and signed-remainder fix-ups ptxas otherwise recomputes every round (MOE9).
    static_assert((SS & (SS - 1)) == 0, "scale slots: a power of two");
    const int rb32 = int(rb), rpc_shift = geo.rpc_shift, rpc_mask = (1 << geo.rpc_shift) - 1;
    stage_buf<NM>* const my_ring = &ring[0][0] + warp * k_stages;
    scale_buf<NM, SS>& my_scales = scale_ring[warp];
    // Round j (of this warp's) into stage j % k_stages, then commit (an empty group past the end
    // keeps one group per round for wait_group).
    const auto issue = [&](int j, int stage) {
      if (j < nr) {
        stage_buf<NM>& b = my_ring[stage];
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            cp_async_16(&b.w[m][i][lane], src_w[m][i]);
            src_w[m][i] += RP ? fp4_repack::k_tile_bytes : k_round / 2;
          }
        const int r = rb32 + j;
        if (q == 0 && (j == 0 || (r & rpc_mask) == 0)) {  // copies_chunk
          const int chunk = r >> rpc_shift;
#pragma unroll
          for (int m = 0; m < NM; ++m)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              void* dst = &my_scales.s[chunk & (SS - 1)][m][i][g];
              const uint8_t* src = src_s[m][i] + (uint32_t(chunk) << geo.cb_shift);
              if (geo.cb_shift == 4)
                cp_async_16(dst, src);
              else if (geo.cb_shift == 3)
                cp_async_small<8>(dst, src);
              else
                cp_async_small<4>(dst, src);
            }
        }
      }
      cp_async_commit();
    };
#pragma unroll
    for (int j = 0; j < k_stages; ++j) issue(j, j);

    // h from the launch before; HL2: the slot's h, released group by group by W1/W3's fold. The
    // spin cannot starve its producers: this grid launches only once every W1/W3 block has
    // executed pdl_trigger() or exited, and W1/W3 triggers only from inside its running blocks
    // (after its own wait and first copies, never after a wait on this grid), so every W1/W3
    // block is resident or done before any W2 block spins. What the whole-grid wait protected
    // besides h: the plan (chain 8: the routing), read above, complete once every W1/W3 block has
    // passed its own wait (the prepare launch is W1/W3's predecessor); out, last read by the
    // previous call's combine, complete for the same reason; nothing else of W1/W3 is read here.
    if constexpr (!UP) {
      if constexpr (HL2)
        wait_counter(chain.ready + slot * k_ready_stride, chain.ready_target);
      else
        pdl_wait();
      DSV4_TRACE(tr.stamp(1));
    }
    pdl_trigger();
    // Staged activations (stage_x: the launch gave kdim * 2 bytes of dynamic shared memory; bf16
    // x or quantized h, no lo part): a chunk of one pair reads its single activation row from
    // shared memory, copied once per block here, instead of per-warp global loads one round
    // ahead. Those loads shared one scoreboard, so every other round's first HMMA waited for the
    // loads just issued for the next round (SASS of MOE7's W1/W3 kernel): a load latency per two
    // rounds, the long-scoreboard stall that dominated T = 1. Block-uniform (c.z).
    // MOE9: stage_x = the most pairs a staged chunk may hold (moe_decode_set_stage_pairs; 1
    // before), one row each, rows 64 bytes apart modulo 128 when several (lanes g of two rows
    // read different banks).
    uint4* const xs_row = dyn_smem;
    const int xs_stride = int(kdim / 8) + (stage_x > 1 ? 4 : 0);  // uint4 per staged row
    // Chain 8, W1/W3: one token, so every pair of the chunk reads the one row of x, staged
    // whatever the chunk's pair count (the launch gave at least one row).
    const bool self_up = UP && chain.self_indices != nullptr;
    const bool staged = !SPLIT && (c.z <= stage_x || self_up);
    if (self_up && !SPLIT) {
      // ain_hi is x (bf16): each 16-byte group of 8 values converted as the prepare launch does
      // (split_group8 at act_group_slot), the hi part only: the lo part of a bf16 value is zero.
      const uint4* src = reinterpret_cast<const uint4*>(ain_hi);
      for (int i = threadIdx.x; i < int(kdim / 8); i += k_threads) {
        const uint4 v = __ldg(src + i);
        const uint32_t wv[4] = {v.x, v.y, v.z, v.w};
        uint4 h, unused_lo;
        split_group8(
            [&](int j) {
              return __bfloat162float(
                  __ushort_as_bfloat16(uint16_t(j & 1 ? wv[j >> 1] >> 16 : wv[j >> 1] & 0xFFFFu)));
            },
            h, unused_lo);
        xs_row[act_group_slot(i)] = h;
      }
    } else if (staged) {
      for (int p = 0; p < c.z; ++p) {
        const int pp = chain.self_indices ? self_chunk_pair(self_mask, p) : sorted[c.y + p];
        const int64_t srow_i = UP ? int64_t(pp / top_k) : int64_t(pp);
        const uint4* src = reinterpret_cast<const uint4*>(ain_hi + srow_i * kdim);
        for (int i = threadIdx.x; i < int(kdim / 8); i += k_threads)
          xs_row[p * xs_stride + i] = load_act16<HL2>(src + i);
      }
    }
    __syncthreads();  // pair_of, xs_row

    // Activation row of token / pair g of the chunk (clamped: lanes past the count compute
    // columns that are never stored).
    const int pg = pair_of[g];
    const int64_t arow = UP ? int64_t(pg / top_k) : int64_t(pg);
    const uint4* xh_p = reinterpret_cast<const uint4*>(ain_hi + arow * kdim) + rb * 16 + q;
    const uint4* xl_p = reinterpret_cast<const uint4*>(ain_lo + arow * kdim) + rb * 16 + q;
    const int scale_shift = moe_scales::shift_of(enc, q);
    const uint32_t scale_mask = moe_scales::mask_of(enc);

    // Round j's weights times the activation fragments cxh / cxl, then the refill of its stage.
    // after_word0: see mma_round (the unstaged path's next-round activation loads).
    const auto round_math = [&](int j, const uint4(&cxh)[4], const uint4(&cxl)[4],
                                const auto& after_word0) {
      const int u = j % k_stages;
      cp_async_wait<k_stages - 1>();  // round j (this lane's copies) has landed
      __syncwarp();                   // and the scale chunks the lanes q == 0 copied for it
      const stage_buf<NM>& b = my_ring[u];
      const int r = rb32 + j, in_chunk = r & rpc_mask;
      const int word = K == weight_kind::nvfp4 ? in_chunk * 2 + (q >> 1)  // word_of
                       : scale_f32             ? q
                                               : in_chunk;
      const auto& sc = my_scales.s[(r >> rpc_shift) & (SS - 1)];
      round_w<K> cur[NM];
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          cur[m].v[i] = b.w[m][i][lane];
          cur[m].s[i] =
              (reinterpret_cast<const uint32_t*>(&sc[m][i][g])[word] >> scale_shift) & scale_mask;
        }
#ifdef DSV4_MOE17_DIAG
      // Diagnostic (wrong y): the round's math replaced by one XOR fold of what it read (the
      // ring words, scales and activation fragments stay loaded): the kernel's memory pipeline
      // (grid, ring, copies, waits, x loads) without the expansion / scale / HMMA work.
      {
        uint32_t f = 0;
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            f ^= cur[m].v[i].x ^ cur[m].v[i].y ^ cur[m].v[i].z ^ cur[m].v[i].w ^ cur[m].s[i];
#pragma unroll
        for (int i = 0; i < 4; ++i) f ^= cxh[i].x ^ cxh[i].y ^ cxh[i].z ^ cxh[i].w ^ cxl[i].w;
        acc[0][0] += __uint_as_float(f & 0x807FFFFFu);  // |value| < 2^-126: no inf / NaN
        after_word0();
      }
#else
      mma_rounds<K, SPLIT, RP, NM>(acc, cur, cxh, cxl, after_word0);
#endif
      // Refill the stage just read only after the math consumed what was read from it (the
      // shared loads have returned), so the asynchronous copy cannot overtake them. With as
      // many rounds in flight as scale slots, the refill's scale chunk may take the slot this
      // round's chunk was read from by the other lanes of its row: wait for the whole warp.
      if constexpr (k_stages >= SS) __syncwarp();
      issue(j + k_stages, u);
    };
    if (staged) {
      if constexpr (!SPLIT) {
        // Lanes g of one pair read the same 64 bytes (lanes past the count: the last pair's).
        const uint4* xs_lane = xs_row + (self_up ? 0 : min(g, c.z - 1)) * xs_stride + rb * 16 + q;
        for (int j = 0; j < nr; ++j) {
          uint4 cx[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) cx[i] = xs_lane[j * 16 + 4 * i];
          round_math(j, cx, cx, no_hook{});
        }
      }
    } else {
      uint4 xh[4], xl[4], nxh[4], nxl[4];
      if (nr > 0) load_x<HL2>(xh, xl, xh_p, xl_p, 0, SPLIT);
      // Activations loaded one round ahead; two rounds per iteration with the buffers swapping
      // roles: no register copies between rounds. Round j + 1's loads are issued inside round j,
      // after its word 0's HMMAs, and their address depends on round j's fragments (+ 0 through
      // `opaque0`, which ptxas cannot fold): all activation loads share one variable-latency
      // scoreboard, so loads issued before round j's first HMMA made it wait for them too (a
      // full load latency every other round: MOE18's 20.7% of W1/W3's stall samples); issued
      // after round j's fragments arrived, round j + 1's loads have a whole round to land.
      // Without the address dependency ptxas hoists the loads above the first HMMA, which then
      // waits for them in every round (SASS of the engine's W1/W3 kernel, MOE19).
      const uint32_t opaque0 = uint32_t(uint64_t(kdim) >> 62);  // 0: kdim < 2^62
      for (int j = 0; j < nr; j += 2) {
        round_math(j, xh, xl, [&] {
          if (j + 1 < nr) {
            const uint32_t z = xh[0].x & opaque0;
            load_x<HL2>(nxh, nxl, xh_p + z, xl_p + z, j + 1, SPLIT);
          }
        });
        if (j + 1 < nr) {
          round_math(j + 1, nxh, nxl, [&] {
            if (j + 2 < nr) {
              const uint32_t z = nxh[0].x & opaque0;
              load_x<HL2>(xh, xl, xh_p + z, xl_p + z, j + 2, SPLIT);
            }
          });
        }
      }
    }
    cp_async_wait<0>();
    DSV4_TRACE(tr.stamp(2));
  } else {  // the first version's register double buffer (two rounds in flight), plain launches
    if constexpr (!UP) pdl_wait();  // no-op without PDL
    __syncthreads();                // pair_of
    const int pg = pair_of[g];
    const int64_t arow = UP ? int64_t(pg / top_k) : int64_t(pg);
    const uint4* xh_base = reinterpret_cast<const uint4*>(ain_hi + arow * kdim) + q;
    const uint4* xl_base = reinterpret_cast<const uint4*>(ain_lo + arow * kdim) + q;
    const uint8_t* rp_lane[NM];
#pragma unroll
    for (int m = 0; m < NM; ++m)
      rp_lane[m] = RP ? ws[m].data + e * ws[m].matrix_bytes +
                            (r0 / fp4_repack::k_tile_rows) * rounds * fp4_repack::k_tile_bytes +
                            lane * 16
                      : nullptr;
    round_w<K> cur[NM], nxt[NM];
    uint4 xh[4], xl[4], nxh[4], nxl[4];
    if (rb < re) {
      const int64_t k = rb * k_round + q * 32;
#pragma unroll
      for (int m = 0; m < NM; ++m)
        load_round<K, RP>(cur[m], wrow[m], srow_p[m], row_bytes, srow, ws[m].scale_f32, k,
                          rp_lane[m]);
      load_x(xh, xl, xh_base, xl_base, rb, SPLIT);
    }
    for (int64_t r = rb; r < re; ++r) {
      if (r + 1 < re) {
        const int64_t k = (r + 1) * k_round + q * 32;
#pragma unroll
        for (int m = 0; m < NM; ++m)
          load_round<K, RP>(nxt[m], wrow[m], srow_p[m], row_bytes, srow, ws[m].scale_f32, k,
                            rp_lane[m]);
        load_x(nxh, nxl, xh_base, xl_base, r + 1, SPLIT);
      }
      mma_rounds<K, SPLIT, RP, NM, false>(acc, cur, xh, xl);
#pragma unroll
      for (int m = 0; m < NM; ++m) cur[m] = nxt[m];
#pragma unroll
      for (int i = 0; i < 4; ++i) xh[i] = nxh[i], xl[i] = nxl[i];
    }
  }

  if constexpr (KS > 1) {  // K parts: warps kpart > 0 hand their sums to kpart 0, added in order
    if (kpart > 0)
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[(kpart - 1) * RT + tile][m][i][lane] = acc[m][i];
    __syncthreads();
    if (kpart > 0) return;  // (thread 0 is kpart 0)
    for (int p = 1; p < KS; ++p)
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][i] += partial[(p - 1) * RT + tile][m][i][lane];
  }

  // Accumulator i: row r0 + g + 8 * (i / 2), chunk column 2q + i % 2.
  float post[NM];
#pragma unroll
  for (int m = 0; m < NM; ++m)
    post[m] =
        K == weight_kind::nvfp4 ? (ws[m].global ? __ldg(ws[m].global + e) : 1.0f) * 256.0f : 1.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int col = 2 * q + (i & 1);
    if (col >= c.z) continue;
    const int p = pair_of[col];
    const int64_t row = r0 + g + 8 * (i >> 1);
    if constexpr (UP) {
      const float v = moe_swiglu_value(acc[0][i] * post[0], acc[1][i] * post[1], limit);
      if (pair_weights) {  // official order: weighted h in f32, quantized by the next launch
        hf[int64_t(p) * rows + row] = __fmul_rn(v, pair_weights[p]);
        continue;
      }
      uint16_t hi, lo;
      fp4mma::split_bf16(v, hi, lo);
      const int64_t at = int64_t(p) * rows + act_u16_index(row);
      h_hi[at] = hi;
      h_lo[at] = lo;
    } else {
      out[int64_t(p) * rows + row] = acc[0][i] * post[0];
    }
  }
  // HL2: no griddepcontrol.wait before the exit, so this grid may complete before W1/W3's (its
  // blocks of other slots may still be leaving): measured 1.06x at Flash T = 4 over waiting
  // (finished W2 blocks otherwise hold their SM slots until W1/W3 completes). What pdl.cuh's
  // contract gives the later launches still holds for memory: every W1/W3 block of a valid slot
  // stored hf, then counted on its fold counter (acq_rel); the last of each group quantized h,
  // then released the group (release reduction); blocks of other slots store nothing; so every
  // W1/W3 memory operation precedes a release that some W2 block observed before it completed
  // (a slot's last release follows every fold count of its groups), hence precedes W2's
  // completion, which the combine's griddepcontrol.wait covers.
  DSV4_TRACE(if constexpr (!UP) tr.flush(1, slot));
  if constexpr (UP) {
    if (!chain.qcnt) {
      DSV4_TRACE(tr.flush(0, slot));
      return;
    }
    // The quantize launch's work, by the last block of each (chunk, 128-row group): one group per
    // block (16 * RT divides 128), 128 / (16 * RT) blocks per group. The warps left are kpart 0,
    // threads 0 .. RT * 32 - 1.
    constexpr int active = RT * k_warp_size;
    const int64_t grp = r0 / 128;
    bar_sync_threads(1, active);  // every hf store of the block
    int* const fold_counter = chain.qcnt + int64_t(slot) * (rows / 128) + grp;
    if (threadIdx.x == 0) {
      if constexpr (SLOTS) {
        // One acq_rel RMW instead of fence.sc, RMW, fence.sc (MEMBAR.SC.GPU twice): release of
        // the block's stores (ordered before thread 0 by the barrier), acquire of the others'.
        // fence.sc at each block's exit delays every later wave (MOE13: Pro T = 4 0.92-0.97x).
        int before;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                     : "=r"(before)
                     : "l"(fold_counter)
                     : "memory");
        fold_last = before == 128 / (16 * RT) - 1;
      } else {
        __threadfence();
        fold_last = atomicAdd(fold_counter, 1) == 128 / (16 * RT) - 1;
        __threadfence();
      }
    }
    bar_sync_threads(1, active);
    if (!fold_last) {
      DSV4_TRACE(tr.flush(0, slot));
      return;
    }
    for (int i = warp; i < c.z; i += RT) {
      const int p = pair_of[i];
      quantize_h_block(load_h_block<true>(hf + int64_t(p) * rows + grp * 128, lane),
                       h_hi + int64_t(p) * rows, grp * 128, lane);
    }
    if constexpr (SLOTS) {  // the group is quantized: release it to the slot's W2 blocks
      bar_sync_threads(1, active);
      if (threadIdx.x == 0) {
        int* const r = chain.ready + int64_t(slot) * k_ready_stride;
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(r) : "memory");
      }
    }
    DSV4_TRACE(tr.flush(0, slot + 1000));  // a folding block
  }
}

// Official order: quantize_h_block of each 128-block of every valid pair's hf row, one warp per
// (pair, block). EARLY (moe_decode_set_chain 4): the hf block is loaded together with the pair's
// expert index instead of after its check (a row of a bad pair is read, never stored).
template <bool EARLY>
__global__ void __launch_bounds__(256)
    moe_decode_quantize_h_kernel(const float* hf, const int32_t* indices, int64_t pairs,
                                 int64_t experts, int64_t inter, uint16_t* h_hi) {
  pdl_wait();
  pdl_trigger();
  const int64_t blocks_per_row = inter / k_round;
  const int64_t item = int64_t(blockIdx.x) * (256 / k_warp_size) + threadIdx.x / k_warp_size;
  if (item >= pairs * blocks_per_row) return;  // uniform over the warp
  const int64_t p = item / blocks_per_row, b = item % blocks_per_row;
  const int lane = threadIdx.x % k_warp_size;
  const int32_t e = indices[p];
  const bool valid = e >= 0 && e < experts;  // else: hf row never written, its output row NaN
  // EARLY: no branch on the index before the load (ptxas would sink the load), the store
  // predicated instead.
  if (!EARLY && !valid) return;
  quantize_h_block(load_h_block(hf + p * inter + b * k_round, lane), h_hi + p * inter, b * k_round,
                   lane, valid);
}

// weights null: the official order (already applied to h). EARLY (moe_decode_set_chain 4): the
// top_k indices, weights and out values of an element are loaded in groups of 8 before they are
// used (one L2 latency per group instead of one per k); the same sum in the same order.
// zero / n_zero (chain 16): block 0 zeroes the call's counters in the per-stream buffer
// after its wait, i.e. once W2 has completed; every counter update of the call precedes W2's
// completion (W2's blocks waited on the slots' last releases, each after every fold count of its
// slot), and the next call touches the counters only after its own waits (pdl.cuh).
template <typename act_t, bool EARLY, bool ZERO = false>
__global__ void moe_decode_combine_kernel(const float* out, const int32_t* indices,
                                          const float* weights, int64_t tokens, int top_k,
                                          int64_t experts, int64_t hidden, act_t* y, int* zero,
                                          int n_zero) {
  DSV4_TRACE(trace_block tr; tr.stamp(0));
  pdl_wait();
  DSV4_TRACE(tr.stamp(1));
  pdl_trigger();
  if constexpr (ZERO)
    if (blockIdx.x == 0)
      for (int i = threadIdx.x; i < n_zero; i += blockDim.x) zero[i] = 0;
  const int64_t n = tokens * hidden;
  const bool weighted = weights != nullptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / hidden, o = i % hidden;
    float acc = 0.0f;
    bool bad = false;
    if constexpr (EARLY) {
      for (int k0 = 0; k0 < top_k; k0 += 8) {
        int32_t e[8];
        float w[8], v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int64_t p = t * top_k + k0 + j;
          if (k0 + j < top_k) {
            e[j] = indices[p];
            w[j] = weighted ? weights[p] : 0.0f;
            v[j] = out[p * hidden + o];
          }
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (k0 + j >= top_k) break;
          if (e[j] < 0 || e[j] >= experts) {
            bad = true;
            continue;
          }
          acc = combine_term(acc, weighted, w[j], v[j]);
        }
      }
    } else {
      for (int k = 0; k < top_k; ++k) {
        const int64_t p = t * top_k + k;
        const int32_t e = indices[p];
        if (e < 0 || e >= experts) {
          bad = true;
          continue;
        }
        acc = combine_term(acc, weighted, weighted ? weights[p] : 0.0f, out[p * hidden + o]);
      }
    }
    y[i] = act_from_f32<act_t>(bad ? __uint_as_float(0x7fc00000u) : acc);
  }
  DSV4_TRACE(tr.stamp(2); tr.flush(2, 0));
}

// Row tiles per block (RT; 4 / RT warps split K). Old rule (min_blocks_per_sm > 0, set by
// moe_decode_set_rt_blocks_per_sm): the largest RT whose grid has that many blocks per SM for
// the chunk upper bound. Default (0): the RT of least modelled time
//   waves(RT) * (rounds per warp + k_block_overhead_rounds),
//   waves = ceil(expected chunks * row tiles / RT / resident blocks),
// with the expected chunk count of uniform routing, E * (1 - (1 - k / E)^T) (the distinct
// experts; chunks of 8 pairs rarely split at T <= 64), ties to the larger RT. The old rule at 4
// blocks per SM left T = 1 and 4 with 1.1-1.6 waves of long blocks (Flash W1/W3 at T = 1: 768
// blocks of 8 rounds per warp on 528 slots; Pro W1/W3: 576); measured on an H100 (MOE7 run 2,
// same run): Flash T = 1 48.1 -> 44.6 us, Pro T = 1 117.2 -> 101.2 us, Flash T = 4 146.6 ->
// 133.7 us, Pro T = 4 345.0 -> 323.5 us with the RTs this model picks; from T = 16 it picks 4,
// as the old rule did. The overhead constant (prologue of the ring, K-part reduction, launch
// of a block) is the one of 8..12 that reproduces every best-measured choice of that run.
// MOE15 (default; -99 = without it): where that choice is one wave, the RT of least work on the
// busiest SM,
//   ceil(expected blocks / SMs) * (rounds * RT + 4 * k_block_overhead_rounds)
// (a block's warp-rounds plus its overhead), ties to the larger RT. A one-wave grid never
// rebalances: its blocks run where they were placed, and with blocks / SMs not an integer the SMs
// holding one block more finish last (trace, Pro T = 1 W1/W3 at RT 4, 288 blocks on 132 SMs:
// loop ends 39-60 us on an H200, 40-76 us on an H100). Same run (H200, s13 MOE15 run 2, forced
// row tiles): Pro T = 1 W1/W3 RT 2 instead of 4 80.99 vs 87.90 us (1.085x; controls 0.997-0.999x),
// RT 1 0.990x; at Flash T = 1 RT 2 (unchanged) beat 4 and 1 by 1.04 / 1.14x; W2's RT 4 (unchanged)
// beat 2 at Flash and Pro T = 1. Of the model shapes (Flash, Pro; T = 1..64) only Pro T = 1's
// W1/W3 changes (multi-wave grids keep MOE7's choice).
constexpr int k_block_overhead_rounds = 12;

int pick_rt(bool up, int64_t rows, int64_t rounds, int64_t tokens, int64_t top_k, int64_t experts,
            int64_t chunks_bound, int sms, const int (&blocks_per_sm)[3], int min_blocks_per_sm) {
  // A/B codes (MOE15, moe_decode_set_rt_blocks_per_sm(-(10 u + d))): RT u for W1/W3 and d for
  // W2 where it is 1, 2 or 4, else the model below; -99: the model without the one-wave balance.
  bool balance = true;
  if (min_blocks_per_sm < 0) {
    const int f = up ? (-min_blocks_per_sm / 10) % 10 : -min_blocks_per_sm % 10;
    if (min_blocks_per_sm == -99)
      balance = false;
    else if (f == 1 || f == 2 || f == 4)
      return f;
    min_blocks_per_sm = 0;
  }
  if (min_blocks_per_sm > 0) {
    for (int rt : {4, 2})
      if ((rows / (16 * rt)) * chunks_bound >= min_blocks_per_sm * int64_t(sms)) return rt;
    return 1;
  }
  const double e = double(experts), pk = std::min(1.0, double(top_k) / e);
  const double chunks =
      std::clamp(e * (1.0 - std::pow(1.0 - pk, double(tokens))), 1.0, double(chunks_bound));
  int best = 4;
  double best_cost = 0, best_waves = 0;
  for (int i = 0; i < 3; ++i) {
    const int rt = 4 >> i;
    const double slots = double(std::max(1, blocks_per_sm[i])) * sms;
    const double waves = std::ceil(double(rows / (16 * rt)) * chunks / slots - 1e-9);
    const double cost = waves * (double(rounds) * rt / 4.0 + k_block_overhead_rounds);
    if (i == 0 || cost < best_cost) best = rt, best_cost = cost, best_waves = waves;
  }
  if (!balance || best_waves > 1) return best;
  for (int i = 0; i < 3; ++i) {
    const int rt = 4 >> i;
    const double per_sm = std::ceil(double(rows / (16 * rt)) * chunks / sms - 1e-9);
    const double cost = per_sm * (double(rounds) * rt + 4.0 * k_block_overhead_rounds);
    if (i == 0 || cost < best_cost) best = rt, best_cost = cost;
  }
  return best;
}

// Resident blocks per SM of one GEMM instantiation with `smem` bytes of dynamic shared memory
// (queried once without; with, per launch: the staged row length varies with the shapes).
template <weight_kind K, bool UP, bool SPLIT, int RT, bool RING, int RP, int SSO>
int gemm_blocks_per_sm(size_t smem) {
  const auto query = [](size_t bytes) {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &b, moe_decode_gemm_kernel<K, UP, SPLIT, RT, RING, RP, SSO>, k_threads, bytes) !=
        cudaSuccess)
      b = 1;
    return std::max(b, 1);
  };
  static const int n0 = query(0);
  if (smem == 0) return n0;
  static std::atomic<uint64_t> last{0};  // (bytes << 32) | blocks of the latest query
  const uint64_t v = last.load(std::memory_order_relaxed);
  if ((v >> 32) == smem) return int(v & 0xFFFFFFFFu);
  const int n = query(smem);
  last.store((uint64_t(smem) << 32) | uint32_t(n), std::memory_order_relaxed);
  return n;
}

// Dynamic shared memory (at least `base`) that leaves `kernel` at most `cap` resident blocks per
// SM (never fewer than `base` allows), or `base` where that is already so. Cached per kernel
// for the latest (base, cap).
size_t dyn_smem_for_cap(const void* kernel, size_t base, int cap) {
  static std::mutex mu;
  static std::map<const void*, std::pair<uint64_t, size_t>> cache;
  const uint64_t key = (uint64_t(base) << 8) | uint64_t(cap);
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(kernel); it != cache.end() && it->second.first == key)
      return it->second.second;
  }
  const auto blocks = [&](size_t bytes) {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, k_threads, bytes) !=
        cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return b;
  };
  size_t bytes = base;
  cudaFuncAttributes a{};
  int device = 0, per_sm = 0, reserved = 0;
  if (cap > 0 && blocks(base) > cap && cudaFuncGetAttributes(&a, kernel) == cudaSuccess &&
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) ==
          cudaSuccess &&
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) ==
          cudaSuccess) {
    // Per block: static + dynamic + reserved > per_sm / (cap + 1).
    const int64_t want =
        int64_t(per_sm) / (cap + 1) + 1 - int64_t(a.sharedSizeBytes) - int64_t(reserved);
    size_t pad = size_t(std::max<int64_t>(int64_t(base), (want + 127) / 128 * 128));
    if (allow_dynamic_smem(kernel, pad) == cudaSuccess) {
      for (int i = 0; i < 8 && blocks(pad) > cap; ++i) pad += 128;
      const int b = blocks(pad);
      if (b == cap) bytes = pad;
    } else {
      cudaGetLastError();
    }
  }
  const std::lock_guard<std::mutex> lock(mu);
  cache[kernel] = {key, bytes};
  return bytes;
}

template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP, int SSO>
cudaError_t launch_gemm_ss(int sms, const uint16_t* a_hi, const uint16_t* a_lo, int64_t kdim,
                           int64_t rows, int64_t tokens, int64_t experts, int top_k,
                           const int* chunk_count, const int4* chunks, const int* sorted,
                           int64_t chunks_bound, const fp4_weight& wa, const fp4_weight& wb,
                           float limit, const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo,
                           float* hf, float* out, chain_args& chain, cudaStream_t stream) {
  // Staged activation rows (moe_decode_set_stage_x_tokens): the ring kernels without a lo part.
  const moe_decode_stage_x sx = moe_decode_stage_x_tokens();
  const bool stage =
      UP ? tokens <= sx.up_max
         : (tokens >= sx.down_min || (chain.ready && chain.stage_h1)) && tokens <= sx.down_max;
  const int stage_pairs = UP ? moe_decode_stage_pairs().up : moe_decode_stage_pairs().down;
  const size_t stage_bytes =
      RING && !SPLIT && stage ? size_t(stage_pairs) * (kdim * 2 + (stage_pairs > 1 ? 64 : 0)) : 0;
  const int blocks_per_sm[3] = {gemm_blocks_per_sm<K, UP, SPLIT, 4, RING, RP, SSO>(stage_bytes),
                                gemm_blocks_per_sm<K, UP, SPLIT, 2, RING, RP, SSO>(stage_bytes),
                                gemm_blocks_per_sm<K, UP, SPLIT, 1, RING, RP, SSO>(stage_bytes)};
  const int rt = pick_rt(UP, rows, kdim / k_round, tokens, top_k, experts, chunks_bound, sms,
                         blocks_per_sm, moe_decode_rt_blocks_per_sm());
  const dim3 grid(unsigned(rows / (16 * rt)), unsigned(chunks_bound));
  // The quantization folded into W1/W3 only where the grid is one wave: each block's counter
  // round trip at its exit then delays nothing but the last blocks, less than the quantize
  // launch it replaces; over several waves it delays every wave (run 2: Pro T = 1, 3 waves,
  // 0.96x; Flash T = 1, one wave, 1.035x).
  // (Chain 16: at any wave count, fold_waves; W2 then waits for it per slot.)
  const int rt_index = rt == 4 ? 0 : rt == 2 ? 1 : 2;  // blocks_per_sm's order
  if (chain.qcnt && !chain.fold_waves &&
      int64_t(grid.x) * grid.y > int64_t(blocks_per_sm[rt_index]) * sms)
    chain.qcnt = nullptr;
  // SLOTS (chain 16) only on the engine's path (run() sets ready only there).
  constexpr bool slots_ok = RING && !SPLIT && RP == 2;
  // Chain 256 (MOE15): a one-wave W2 grid of the SLOTS path at most ceil(blocks / SMs) blocks per
  // SM (padded dynamic shared memory). Its blocks take the SM slots that W1/W3's blocks free,
  // first on the SMs whose W1/W3 blocks end first: at Flash T = 1 (384 blocks, 4 per SM) they
  // piled 4 deep on ~110 SMs (trace), each SM then issue-bound on 16 warps' E2M1 expansion while
  // ~20 SMs ran no W2 block. Same kernels and row tiles (the same sums).
  int pad_cap = 0;
  if constexpr (!UP && slots_ok)
    if (chain.ready && (moe_decode_chain() & 256)) {
      const int64_t blocks = int64_t(grid.x) * grid.y;
      if (blocks <= int64_t(blocks_per_sm[rt_index]) * sms) pad_cap = int((blocks + sms - 1) / sms);
      if (pad_cap >= blocks_per_sm[rt_index]) pad_cap = 0;
    }
#define DSV4_GEMM_K(RT, SL)                                                                        \
  [&] {                                                                                            \
    const auto kernel = moe_decode_gemm_kernel<K, UP, SPLIT, RT, RING, RP, SSO, SL>;               \
    const size_t dyn =                                                                             \
        pad_cap ? dyn_smem_for_cap(reinterpret_cast<const void*>(kernel), stage_bytes, pad_cap)    \
                : stage_bytes;                                                                     \
    return (dyn ? allow_dynamic_smem(kernel, dyn) : cudaSuccess) != cudaSuccess                    \
               ? cudaErrorInvalidValue                                                             \
               : launch_pdl(RING, kernel, grid, dim3(k_threads), dyn, stream, a_hi, a_lo, kdim,    \
                            rows, top_k, chunk_count, chunks, sorted, wa, wb, limit, pair_weights, \
                            h_hi, h_lo, hf, out, stage_bytes > 0 ? stage_pairs : 0, chain);        \
  }()
#define DSV4_GEMM(RT) (slots_ok && chain.ready ? DSV4_GEMM_K(RT, slots_ok) : DSV4_GEMM_K(RT, false))
  if (!slots_ok && chain.ready) return cudaErrorInvalidValue;
  cudaError_t e;
  if (rt == 4)
    e = DSV4_GEMM(4);
  else if (rt == 2)
    e = DSV4_GEMM(2);
  else
    e = DSV4_GEMM(1);
#undef DSV4_GEMM
#undef DSV4_GEMM_K
  return e;
}

// The scale slots of moe_decode_set_scale_slots_from for the engine's path (ring, no lo part,
// repacked with the shift expansion); every other combination keeps k_scale_slots (fewer
// instantiations).
template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP>
cudaError_t launch_gemm(int sms, const uint16_t* a_hi, const uint16_t* a_lo, int64_t kdim,
                        int64_t rows, int64_t tokens, int64_t experts, int top_k,
                        const int* chunk_count, const int4* chunks, const int* sorted,
                        int64_t chunks_bound, const fp4_weight& wa, const fp4_weight& wb,
                        float limit, const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo,
                        float* hf, float* out, chain_args& chain, cudaStream_t stream) {
#define DSV4_GEMM_SS(SSO)                                                               \
  launch_gemm_ss<K, UP, SPLIT, RING, RP, SSO>(                                          \
      sms, a_hi, a_lo, kdim, rows, tokens, experts, top_k, chunk_count, chunks, sorted, \
      chunks_bound, wa, wb, limit, pair_weights, h_hi, h_lo, hf, out, chain, stream)
  if constexpr (RING && !SPLIT && RP == 2)
    if (const int from = moe_decode_scale_slots_from(); from > 0 && tokens >= from)
      return DSV4_GEMM_SS(k_stages);
  return DSV4_GEMM_SS(0);
#undef DSV4_GEMM_SS
}

// Chain 16's counters: k_slot_counters ints per (device, stream), allocated and zeroed on
// the first call outside stream capture (the engine's graphs run their step eagerly first); null
// while capturing before that, or when allocation fails (the call then runs chain 15's launches).
// Kept for the process. Each call leaves them zero (the combine zeroes them), so calls, replayed
// graphs included, start from zero; calls on one stream only (two streams have two buffers), and
// graphs captured on one stream are not replayed concurrently on others.
// 32768: chain 128's T = 64 (Pro: 432 slots, 24 groups: 24192).
constexpr int64_t k_slot_counters = 32768;
// Chain 16's largest T without bit 128 (MOE13: 4; MOE14: 16, see run()).
constexpr int64_t k_slots_max_tokens = 16;
int* slot_counters(cudaStream_t stream) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, int*> buffers;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(device, stream);
  if (const auto it = buffers.find(key); it != buffers.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return nullptr;
  }
  int* p = nullptr;
  if (cudaMalloc(&p, k_slot_counters * sizeof(int)) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (cudaMemsetAsync(p, 0, k_slot_counters * sizeof(int), stream) != cudaSuccess) {
    cudaGetLastError();
    cudaFree(p);
    return nullptr;
  }
  buffers.emplace(key, p);
  return p;
}

template <weight_kind K, int RP, typename act_t>
cudaError_t run(const act_t* x, int64_t tokens, const int32_t* indices, const float* weights,
                int64_t top_k, const device_weight& w1, const device_weight& w3,
                const device_weight& w2, float limit, const layout& l, unsigned char* base,
                act_t* y, bool official, cudaStream_t stream) {
  constexpr bool x_split = std::is_same_v<act_t, float>;
  // Weight pipeline: the cp.async ring with PDL, except MXFP4 with f32 activations, where the
  // register double buffer of the first version measured 1.0-1.2x faster on an H200 (the ring
  // is 1.0-1.2x faster for NVFP4 f32 and MXFP4 bf16; bench/kernels/results/
  // h200_2026-11-22_moe3_bench_moe_linear.txt).
  // The repacked layout (RP) takes the same pipeline as the checkpoint layout.
  constexpr bool ring = !(K == weight_kind::mxfp4 && x_split);
  const int64_t experts = w1.count, hidden = w1.cols, inter = w1.rows, pairs = tokens * top_k;
  const int64_t bound = max_chunks(pairs, experts);
  int* chunk_count = reinterpret_cast<int*>(base + l.count);
  int* sorted = reinterpret_cast<int*>(base + l.sorted);
  int4* chunks = reinterpret_cast<int4*>(base + l.chunks);
  auto* xhi = reinterpret_cast<uint16_t*>(base + l.xhi);
  auto* xlo = reinterpret_cast<uint16_t*>(base + l.xlo);
  auto* hhi = reinterpret_cast<uint16_t*>(base + l.hhi);
  auto* hlo = reinterpret_cast<uint16_t*>(base + l.hlo);
  auto* hf = reinterpret_cast<float*>(base + l.hf);
  auto* out = reinterpret_cast<float*>(base + l.out);
  // moe_decode_set_chain: 1 = the quantize launch's work in W1/W3's last block per (chunk,
  // 128-row group) at one wave, 2 = the plan by one warp at <= 8 pairs, 4 = chunk with its
  // count, quantize / combine loads issued together at T <= 4.
  const int chain = moe_decode_chain();
  // Bit 4 at T <= 4 only: T = 64 measured 0.994-0.996x with it (runs 2 and 3, controls
  // 0.997-1.000x), T = 16 noise.
  // 8: no prepare launch at T = 1 (bf16 x, the ring, W1/W3 staged, <= 8 pairs): the GEMM blocks
  // plan their own chunk and W1/W3 stages x itself. The fold of 1 is then off: nothing of the
  // call runs before W1/W3 to zero its counters, and the workspace keeps nothing between calls
  // (the engine allocates it per call). Measured (g_chain): Pro T = 1 1.02-1.03x, Flash T = 1
  // within noise.
  const bool self_plan = (chain & 8) && tokens == 1 && !x_split && ring && pairs <= k_chunk &&
                         moe_decode_stage_x_tokens().up_max >= 1;
  // 16 (MOE13, official order, T <= 16 since MOE14, the engine's path: bf16 x, ring, repacked,
  // shift decode): the fold at every wave count and with 8's self plan, its counters in a
  // per-stream buffer (slot_counters) that the combine zeroes; W2 waits per slot for its h
  // (chain_args) instead of for the whole W1/W3 grid; its fold counts with one acq_rel RMW and
  // releases with a release reduction (bit 64 chose that over fence.sc around plain atomics until
  // MOE14; now a no-op); 32: with 16, W2 stages h at T = 1 too (stage_x's down_min); 128 (MOE14,
  // A/B): 16 at every T.
  // MOE14 (H100, same process, two runs, controls bracketing; 2026-11-26_moe14_NOTES.md): 16 up
  // to T = 16 vs without, Flash T = 8 / 16 1.080 / 1.038-1.042x, Pro T = 8 1.041x, Pro T = 16
  // 1.002-1.005x (against the controls past the first position, which measured 3-4% slow there);
  // 128 at T = 64 1.004x (Flash) / 1.001x (Pro): neutral, so it stays a switch (T = 32, H200).
  const int64_t groups = inter / 128;
  const int64_t ready_ints = bound * k_ready_stride, n_slot = ready_ints + bound * groups;
  int* const slots_buf = official && ring && !x_split && RP == 2 &&
                                 (tokens <= k_slots_max_tokens || (chain & 128)) && (chain & 16) &&
                                 n_slot <= k_slot_counters
                             ? slot_counters(stream)
                             : nullptr;
  const bool qfold = official && (slots_buf || ((chain & 1) && !self_plan)),
             early = (chain & 4) && tokens <= 4;
  auto* qcnt = slots_buf ? slots_buf + ready_ints : reinterpret_cast<int*>(base + l.qcnt);
  int* const ready = slots_buf;
  const int fold_waves = slots_buf ? 1 : 0, stage_h1 = (chain & 32) ? 1 : 0;
  const int32_t* self_indices = self_plan ? indices : nullptr;
  chain_args up_chain{qfold ? qcnt : nullptr,
                      early,
                      self_indices,
                      int(pairs),
                      int(experts),
                      ready,
                      int(groups),
                      fold_waves,
                      stage_h1},
      down_chain{nullptr, early,       self_indices, int(pairs), int(experts),
                 ready,   int(groups), fold_waves,   stage_h1};

  if (!self_plan) {
    const int64_t groups = tokens * hidden / 8;
    moe_decode_prepare_kernel<act_t>
        <<<unsigned(1 + ceil_div(groups, k_plan_threads)), k_plan_threads, 0, stream>>>(
            indices, int(pairs), int(experts), chunk_count, sorted, chunks, x, tokens * hidden, xhi,
            xlo, qcnt, qfold && !slots_buf ? int(qfold_counters(bound, inter)) : 0,
            (chain & 2) && pairs <= k_chunk);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const int sms = current_device_sm_count();
  const fp4_weight f1 = make_fp4_weight(w1), f3 = make_fp4_weight(w3), f2 = make_fp4_weight(w2);
  // Chain 8: W1/W3 is the call's first launch (PDL: its blocks wait for the previous kernel
  // before reading anything) and reads x itself.
  const uint16_t* up_hi = self_plan ? reinterpret_cast<const uint16_t*>(x) : xhi;
  if (const cudaError_t e = launch_gemm<K, true, x_split, ring, RP>(
          sms, up_hi, xlo, hidden, inter, tokens, experts, int(top_k), chunk_count, chunks, sorted,
          bound, f1, f3, limit, official ? weights : nullptr, hhi, hlo, hf, nullptr, up_chain,
          stream);
      e != cudaSuccess)
    return e;
  if (official) {
    const int64_t items = pairs * (inter / k_round);
    if (!up_chain.qcnt)  // else W1/W3 quantized h (launch_gemm_ss keeps the fold at one wave)
      if (const cudaError_t e = launch_pdl(
              ring,
              early ? moe_decode_quantize_h_kernel<true> : moe_decode_quantize_h_kernel<false>,
              dim3(unsigned(ceil_div(items, 256 / k_warp_size))), dim3(256), 0, stream, hf, indices,
              pairs, experts, inter, hhi);
          e != cudaSuccess)
        return e;
    // The quantized h is exact in BF16: no lo part.
    if (const cudaError_t e = launch_gemm<K, false, false, ring, RP>(
            sms, hhi, hlo, inter, hidden, tokens, experts, int(top_k), chunk_count, chunks, sorted,
            bound, f2, f2, limit, nullptr, nullptr, nullptr, nullptr, out, down_chain, stream);
        e != cudaSuccess)
      return e;
  } else if (const cudaError_t e = launch_gemm<K, false, true, ring, RP>(
                 sms, hhi, hlo, inter, hidden, tokens, experts, int(top_k), chunk_count, chunks,
                 sorted, bound, f2, f2, limit, nullptr, nullptr, nullptr, nullptr, out, down_chain,
                 stream);
             e != cudaSuccess) {
    return e;
  }
  const int threads = 256;
  return launch_pdl(ring,
                    slots_buf ? (early ? moe_decode_combine_kernel<act_t, true, true>
                                       : moe_decode_combine_kernel<act_t, false, true>)
                    : early   ? moe_decode_combine_kernel<act_t, true>
                              : moe_decode_combine_kernel<act_t, false>,
                    dim3(grid_stride_blocks(tokens * hidden, threads)), dim3(threads), 0, stream,
                    out, indices, official ? nullptr : weights, tokens, int(top_k), experts, hidden,
                    y, slots_buf, slots_buf ? int(n_slot) : 0);
}

}  // namespace

namespace {
bool g_shift_decode = true;
int g_rt_blocks_per_sm = 0;
// Default (MOE8, H100, official order bf16 MXFP4, speed vs staging off in the same process;
// bench/kernels/results/h100_2026-11-26_s9_moe8_run{1,2}_*): this one (run 2) Flash T = 1 / 4
// 1.003 / 1.019x, Pro 0.988 / 1.067x (NVFP4 1.001 / 1.010x, 1.019 / 1.053x). W2 staged gains
// from T = 2 (~23 pair rows of h no longer fit in L1; W2 alone at T = 4: Pro 0.993 -> 1.067x);
// at T = 1 it is a trade: with W2 also staged (4, 1, 4) Flash T = 1 measured 1.034-1.036x but
// Pro T = 1 0.973-0.978x (three runs). W1/W3 staged alone: 0.99-1.00x official, 1.00-1.03x
// exact order.
//
// MOE9 (bench/kernels/results/h100_2026-11-26_s10_moe9_run3_bench.txt, H100, same process,
// against 4, 2, 4 with 1-pair chunks and 8 scale slots): staging at every T (64, 2, 64) with
// 2-pair W2 chunks and 4 scale slots (4 W1/W3 blocks per SM with the staged row) measured Flash
// T = 1 / 4 / 16 / 64 1.005 / 1.017 / 1.038 / 1.044x, Pro 0.990 / 1.045 / 1.074 / 1.037x; at
// T >= 16 the x loads one round ahead had been the largest stall (ncu, run 2: 38% of the W1/W3
// kernel's samples on the HMMA that waits for them at Flash T = 16). The 4 slots cost Pro T = 1
// 1.3% (every 4-slot configuration, the __syncwarp per round) and gain nothing there (one wave
// either way), so they start at T = 2; T = 1 stays as before. Not measured on an H200.
// NOT the default: the lead's verification (H100, same process, bench/kernels/results/
// h100_2026-11-26_s10_final1_*) measured that configuration (s0x64.2.64q2v2) against 4, 2, 4 at
// Flash T = 4 / 16 / 64 0.966 / 1.025 / 1.008x, Pro 0.951 / 1.031 / 1.019x, and with it
// test_gpu_model's repacked-vs-checkpoint comparison (exact order, bf16) lost its bit equality
// (13 of 27 steps differ: the two layouts' kernels then differ in shared memory, resident blocks
// and so the wave model's row tiles). The session-9 defaults stay; the switches remain for A/B.
moe_decode_stage_x g_stage_x = {4, 2, 4};
}  // namespace

void moe_decode_set_stage_x_tokens(int up_max, int down_min, int down_max) {
  g_stage_x = {std::max(0, up_max), std::max(1, down_min), std::max(0, down_max)};
}
moe_decode_stage_x moe_decode_stage_x_tokens() {
  return g_stage_x;
}

namespace {
// MOE10 (H100, official bf16 MXFP4, same process, vs 0; bench/kernels/results/
// h100_2026-11-26_s11_moe10_run{2,3}_bench.txt): 4 alone Flash T = 1 / 4 / 16 / 64 1.018 /
// 1.008 / 1.011 / 0.995x, Pro 1.010 / 1.005 / 1.003 / 0.999x (run 2); 7 Flash T = 1 1.066x (run
// 2), 1.068x (run 3), Pro T = 1 1.012x, Flash T = 4 1.010x (run 3). The one-warp plan at 24 pairs
// (Pro T = 4) measured 0.976 and 0.991x in two runs (not understood), hence only up to 8 pairs.
// MOE11 (H100, same process, vs 7; bench/kernels/results/h100_2026-11-26_s11_moe11_run{1,2}_
// bench.txt): 15 (no prepare launch at T = 1) Pro T = 1 1.022 / 1.030x (controls 0.998 / 1.004x),
// Flash T = 1 1.019 / 1.005x (controls 1.014 / 1.008x: no gain beyond noise there, where 15 also
// gives up 7's fold); T >= 2 runs 7's launches. Measured slower and removed: the fold by
// thread-block clusters instead of the counters (it would survive without the prepare launch;
// Flash T = 1 0.84x), and W2 quantizing its own pair's h row into its staged row in one-pair
// chunks (no quantize launch; Flash T = 1 1.007x, Pro T = 1 0.916x).
// MOE12 (H100, same process, vs 15; bench/kernels/results/h100_2026-11-26_s12_moe12_run{1,2}_*,
// 2026-11-26_moe12_NOTES.md), measured slower and removed: W1/W3, h's quantization (the fold of 1)
// and W2 as one persistent launch at T <= 4 (resident blocks over a queue of (slot, row block)
// items, W2 items prefetching before they wait on per-slot readiness counters kept in a buffer
// that the last block zeroes; bit-equal to chain 0: 39 parity cases, test_gpu_model 66/66).
// Flash T = 1 0.80-0.95x (best with W2's ring 4 deep and static items), Pro T = 1 0.84-1.02x,
// T = 4 0.80-0.98x; a phase trace (Flash T = 1) put its W1/W3 items' tail at 35-37 us and its W2
// phase 16-19 us past h's readiness. The code: branch wip/moe12 at 2a00904.
// MOE13 (H100, official bf16 MXFP4, same process, vs 15; bench/kernels/results/
// h100_2026-11-26_s12_moe13_run{1,2}_*, 2026-11-26_moe13_NOTES.md): 16 (W2 waits per chunk for its
// h, no quantize launch, the fold at every wave count) with 32 (W2 stages h at T = 1) and 64 (the
// fold's fences as one acq_rel RMW), i.e. 127, run 2: Flash T = 1 / 4 1.040 / 1.108x, Pro 1.069 /
// 1.011x (controls, 15 again: 1.005 / 1.000x, 1.001 / 1.016x: at Pro T = 4 the first
// configuration of each pass measures ~1.5-2.5% slow in both runs, so 127 is 0.995x there
// against the second control). Without 64 (fence.sc around the fold's atomics: MEMBAR.SC.GPU
// delays each W1/W3 block's exit, i.e. every later wave) Pro T = 4 lost: 63 0.924x, 31 0.970x
// against the second control (run 1, fold without 16: 0.936x); 32 gained 0.7-1.8% at T = 1 in
// both pairs. Measured slower and removed: W2's griddepcontrol.wait before its exit (run 1:
// Flash T = 4 1.039x vs 1.102x without), the fold of 16 with W2 waiting for the whole grid
// (Flash T = 1 1.031x, Pro T = 1 / 4 0.946 / 0.936x).
// MOE14: 64 folded into 16 (16 always counts with acq_rel and releases with red.release; the
// fence.sc path is gone, bit 64 is accepted and ignored, so 127 is still the default's mask).
// 16 at T <= 16 (was 4; H100: Flash T = 8 / 16 1.08 / 1.04x, Pro T = 8 1.04x, Pro T = 16
// neutral); 128 (A/B): 16 at every T (T = 64 neutral).
// MOE15: 256 (a one-wave W2 grid capped at ceil(blocks / SMs) blocks per SM); 383 the default.
int g_chain = 383;
}  // namespace
#ifdef DSV4_MOE_TRACE
// Trace control for the diagnostic build: on (clears the records) / off; copy out (returns the
// count, at most k_trace_max).
void moe_decode_trace_enable(bool on) {
  const unsigned zero = 0;
  const int v = on ? 1 : 0;
  cudaDeviceSynchronize();
  cudaMemcpyToSymbol(g_trace_n, &zero, sizeof zero);
  cudaMemcpyToSymbol(g_trace_on, &v, sizeof v);
  cudaDeviceSynchronize();
}
int moe_decode_trace_copy(unsigned long long* t4, int* info4, int max) {
  unsigned n = 0;
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(&n, g_trace_n, sizeof n);
  n = std::min<unsigned>(n, std::min<unsigned>(unsigned(max), unsigned(k_trace_max)));
  std::vector<moe_trace_rec> r(n);
  if (n) cudaMemcpyFromSymbol(r.data(), g_trace, n * sizeof(moe_trace_rec));
  for (unsigned i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) t4[4 * i + j] = r[i].t[j];
    info4[4 * i] = r[i].kind, info4[4 * i + 1] = r[i].sm, info4[4 * i + 2] = r[i].slot,
              info4[4 * i + 3] = r[i].bx;
  }
  return int(n);
}
#endif
void moe_decode_set_chain(int mask) {
  g_chain = mask & 511;
}
int moe_decode_chain() {
  return g_chain;
}

namespace {
int g_scale_slots_from = 0;                       // MOE9 measured 2 (see g_stage_x)
moe_decode_stage_pairs_t g_stage_pairs = {1, 1};  // MOE9 measured {1, 2} (see g_stage_x)
}  // namespace
void moe_decode_set_stage_pairs(int up, int down) {
  g_stage_pairs = {std::clamp(up, 1, k_chunk), std::clamp(down, 1, k_chunk)};
}
moe_decode_stage_pairs_t moe_decode_stage_pairs() {
  return g_stage_pairs;
}
void moe_decode_set_scale_slots_from(int tokens) {
  g_scale_slots_from = std::max(0, tokens);
}
int moe_decode_scale_slots_from() {
  return g_scale_slots_from;
}

void moe_decode_set_rt_blocks_per_sm(int n) {
  g_rt_blocks_per_sm = std::max(-99, n);  // < 0: MOE15's A/B codes (pick_rt)
}
int moe_decode_rt_blocks_per_sm() {
  return g_rt_blocks_per_sm;
}

void moe_decode_set_shift_decode(bool on) {
  g_shift_decode = on;
}
bool moe_decode_shift_decode() {
  return g_shift_decode;
}

bool moe_decode_supported(const device_weight& w1, const device_weight& w3,
                          const device_weight& w2) {
  if (w1.kind != weight_kind::mxfp4 && w1.kind != weight_kind::nvfp4) return false;
  // Either layout (the RP kernels read the repacked one), the same for all three.
  for (const device_weight* w : {&w1, &w3, &w2})
    if (validate_weight(*w, true) != cudaSuccess || w->kind != w1.kind ||
        w->scale_e8m0 != w1.scale_e8m0 || w->count != w1.count || w->layout != w1.layout ||
        !aligned_16(w->data) || !aligned_16(w->scale))
      return false;
  const int64_t hidden = w1.cols, inter = w1.rows;
  return w3.rows == inter && w3.cols == hidden && w2.rows == hidden && w2.cols == inter &&
         hidden % k_round == 0 && inter % k_round == 0 && w1.count <= k_max_experts;
}

size_t moe_decode_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                  int64_t inter) {
  if (tokens <= 0 || top_k <= 0) return 256;
  return make_layout(tokens, top_k, experts, hidden, inter).total;
}

namespace {

template <typename act_t>
cudaError_t run_decode(const act_t* x, int64_t tokens, const int32_t* indices, const float* weights,
                       int64_t top_k, const device_weight& w1, const device_weight& w3,
                       const device_weight& w2, float swiglu_limit, void* workspace,
                       size_t workspace_bytes, act_t* y, bool official, bool require_repacked,
                       cudaStream_t stream) {
  if (tokens < 0 || top_k <= 0 || top_k > 32 || !x || !indices || !weights || !y || !workspace)
    return cudaErrorInvalidValue;
  // The layout is the weights' own (device_weight::layout); the *_repacked entries insist on it.
  const bool repacked = w1.layout == weight_layout::repacked;
  if (require_repacked && !repacked) return cudaErrorInvalidValue;
  if (tokens > k_moe_decode_max_tokens || !moe_decode_supported(w1, w3, w2))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  const layout l = make_layout(tokens, top_k, w1.count, w1.cols, w1.rows);
  if (workspace_bytes < l.total || !aligned_16(workspace)) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(workspace);
#define DSV4_RUN(K, RP)                                                                          \
  run<K, RP>(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, l, base, y, official, \
             stream)
  const bool shift = moe_decode_shift_decode();
  if (w1.kind == weight_kind::mxfp4)
    return repacked ? (shift ? DSV4_RUN(weight_kind::mxfp4, 2) : DSV4_RUN(weight_kind::mxfp4, 1))
                    : DSV4_RUN(weight_kind::mxfp4, 0);
  return repacked ? (shift ? DSV4_RUN(weight_kind::nvfp4, 2) : DSV4_RUN(weight_kind::nvfp4, 1))
                  : DSV4_RUN(weight_kind::nvfp4, 0);
#undef DSV4_RUN
}

}  // namespace

template <typename act_t>
cudaError_t moe_decode_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                               const float* weights, int64_t top_k, const device_weight& w1,
                               const device_weight& w3, const device_weight& w2, float swiglu_limit,
                               void* workspace, size_t workspace_bytes, act_t* y,
                               cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, false, false, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, true, false, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_repacked(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, false, true, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_official_repacked(
    const act_t* x, int64_t tokens, const int32_t* indices, const float* weights, int64_t top_k,
    const device_weight& w1, const device_weight& w3, const device_weight& w2, float swiglu_limit,
    void* workspace, size_t workspace_bytes, act_t* y, cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, true, true, stream);
}

#define DSV4_MOE_DECODE_INSTANTIATE(NAME, T)                                                     \
  template cudaError_t NAME<T>(const T*, int64_t, const int32_t*, const float*, int64_t,         \
                               const device_weight&, const device_weight&, const device_weight&, \
                               float, void*, size_t, T*, cudaStream_t);
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_repacked, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_repacked, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official_repacked, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official_repacked, __nv_bfloat16)
#undef DSV4_MOE_DECODE_INSTANTIATE

}  // namespace dsv4::cuda
