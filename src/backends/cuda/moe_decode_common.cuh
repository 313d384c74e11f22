// Pieces every decode-path MoE kernel shares (moe_decode.cu and its moe_decode_*.cuh, one
// translation unit): the block geometry, the 4-bit weight view and the paired activation layout.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear.h"
#include "backends/cuda/moe_decode_tuning.h"

namespace dsv4::cuda {

namespace {

constexpr int k_warps = 4;
constexpr int k_threads = k_warps * k_warp_size;
constexpr int k_chunk = moe_decode_tuning::k_chunk_pairs;  // pairs per chunk: the mma's N
constexpr int k_round = 128;  // k elements a warp covers per round (4 lanes x 32)
constexpr int k_plan_threads = 1024;
constexpr int64_t k_max_experts = 2048;

// One stacked 4-bit weight as the kernels see it.
struct fp4_weight {
  const uint8_t* data;
  const uint8_t* scale;
  const float* global;    // nvfp4 (null reads as 1)
  int64_t matrix_bytes;   // rows * cols / 2
  int64_t matrix_scales;  // scale elements per matrix
  int64_t cols;
  bool scale_f32;  // mxfp4 with f32 (power-of-two) scales
  // mxfp4 with E8M0 scales all <= 128 (device_weight::scales_at_most_2): no two-step rounds.
  bool scales_at_most_2;
};

fp4_weight make_fp4_weight(const device_weight& w) {
  return fp4_weight{static_cast<const uint8_t*>(w.data),
                    static_cast<const uint8_t*>(w.scale),
                    w.global_scale,
                    weight_matrix_bytes(w.kind, w.rows, w.cols),
                    scale_matrix_count(w.kind, w.rows, w.cols),
                    w.cols,
                    w.kind == weight_kind::mxfp4 && !w.scale_e8m0,
                    w.kind == weight_kind::mxfp4 && w.scale_e8m0 && w.scales_at_most_2};
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

// split_group8's hi part of 8 bf16 activations (one 16-byte group, k in order): word i holds
// activation i low and i + 4 high. The hi part of a bf16 value is the value itself (its lo part
// is zero), so this is a permutation of the halves: the same bits as split_group8 for every value
// (no flush: split_bf16 rounds with F2FP, which keeps denormals), except that a NaN keeps its
// payload here where the round trip through f32 may make it the canonical NaN.
__device__ __forceinline__ uint4 paired_bf16_group(uint4 v) {
  return make_uint4(__byte_perm(v.x, v.z, 0x5410), __byte_perm(v.x, v.z, 0x7632),
                    __byte_perm(v.y, v.w, 0x5410), __byte_perm(v.y, v.w, 0x7632));
}

// 16-byte activation groups a W1/W3 thread requests before the weights' first rounds (chain 8's
// bf16 x, moe_decode_gemm_kernel): kdim <= 8 * 8 * k_threads = 8192 in one batch.
constexpr int k_x_prefetch = 8;
// 16-byte groups of a staged W2 row a thread loads before storing any (kdim <= 4096 at once).
constexpr int k_h_batch = 4;

}  // namespace

}  // namespace dsv4::cuda
