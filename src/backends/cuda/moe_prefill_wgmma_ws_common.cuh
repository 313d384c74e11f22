// What the two warp-specialized W4A16 prefill kernels share: the 128-pair kernel
// (moe_prefill_wgmma_ws.cu, whose top comment holds the design and the measured history) and the
// wide kernel of tiles of up to 256 pairs (moe_prefill_wgmma_ws_wide.cu). Block geometry, the
// kernels' arguments and ring handles, the scale cp.async widths, and the consumers' MXFP4
// expansion (PREFILL9). Included by those two translation units only.
#pragma once

#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"
#include "backends/cuda/moe_prefill_wgmma_ws.h"

namespace dsv4::cuda::prefill {

namespace {

constexpr int k_ws_threads = 384;
constexpr int k_ws_consumers = 256;  // = k_threads of the core: its rows per block

struct ws_args {
  const __nv_bfloat16* src;  // x' (L1, rows by token) or h' (L2, rows by pair)
  int top_k;
  const int* tile_count;
  const int4* tiles;
  const int* sorted;
  fp4_weight wa, wb;  // L1: W1, W3; L2: W2 twice
  float limit;
  const float* pair_weights;
  void* dst;
};

struct ws_ring {
  uint32_t smem;  // the 1024-aligned base (stage 0)
  uint32_t full;  // full[0]; empty[0] = full + 8 * stages (k_ws_stages, k_wd_stages)
  uint8_t* gen;   // the same base as a generic pointer
};

// The consumers' A registers of step s for one matrix with the first scale multiply only:
// expand_step without its MXFP4 second power-of-two step, which ws_mx_second_step applies to a
// whole step's registers behind one warp-uniform branch (the same products, in the same order, so
// the same BF16 pairs bit for bit).
// SHIFT (repacked words only): the pairs by fp4_repack::decode_pairs_shift's expressions (4 of the
// 5 rotations as multiplications, which ptxas may issue as IMAD.SHL on the FMA pipe instead of SHF
// on the integer pipe that the LOP3s also use); the same pairs bit for bit.
template <int i, bool RP, bool SHIFT>
__device__ __forceinline__ uint32_t ws_weight_pair(uint32_t u) {
  if constexpr (RP && SHIFT) {
    using namespace fp4_repack;
    if constexpr (i == 0)
      return u & k_pair_mask;
    else if constexpr (i == 1)
      return ((u * 2u) & k_sign_mask) | ((u * 8u) & k_mag_mask);
    else if constexpr (i == 2)
      return ((u * 4u) & k_sign_mask) | (rotl(u, 12) & k_mag_mask);
    else
      return (u * 64u) & k_pair_mask;
  } else {
    return weight_pair<i, RP>(u);
  }
}

template <weight_kind K, int s, bool RP, bool SHIFT>
__device__ __forceinline__ void ws_expand_first(const tile_round& r, const tile_scale& sc,
                                                uint32_t (&a)[4]) {
  constexpr int w = s >> 1, i = 2 * (s & 1);
#pragma unroll
  for (int row = 0; row < 2; ++row) {
    const uint32_t word = word_of(r.v[row], w);
    a[row] = fp4mma::mul_bf16x2(ws_weight_pair<i, RP, SHIFT>(word), sc.m1[row][w >> 1]);
    a[2 + row] = fp4mma::mul_bf16x2(ws_weight_pair<i + 1, RP, SHIFT>(word), sc.m1[row][w >> 1]);
  }
}

// scale_of<mxfp4> in fewer instructions: mx_scale_of's BF16x2 multipliers as integer expressions
// (m1 = 2^min(e - 1, 127): exponent field min(e + 126, 254); m2 = 2^max(e - 128, 0), NaN for
// e = 255; both halves by one multiply by 0x10001), two = e > 128. The same bits.
__device__ __forceinline__ tile_scale ws_mx_scale_of(const tile_round& r) {
  tile_scale s;
  s.two = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t e = r.s[i];
    const uint32_t m1 = (min(e + 126u, 254u) << 7) * 0x10001u;
    const uint32_t b2 = e == 255u ? 0x7FC0u : (max(e, 128u) - 1u) << 7;
    s.m1[i][0] = s.m1[i][1] = m1;
    s.m2[i] = b2 * 0x10001u;
    s.two |= e > 128u;
  }
  return s;
}

// Rows per block of the wide kernel (its launch_wgmma_ws_gemms sizes the grid by them).
constexpr int k_wd_up_rows = 64;     // intermediate rows (of W1 and of W3) per L1 block
constexpr int k_wd_down_rows = 128;  // W2 rows per L2 block

}  // namespace

// The wide kernel's launch (moe_prefill_wgmma_ws_wide.cu; wide = true of launch_wgmma_ws_gemms):
// row_blocks blocks of k_wd_up_rows (UP) / k_wd_down_rows rows times tile_slots tile slots, a
// persistent grid of at most one CTA per SM. The other arguments are ws_args's (dst: out_t).
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H>
cudaError_t launch_wgmma_ws_wide(int64_t row_blocks, int64_t tile_slots, const __nv_bfloat16* src,
                                 int top_k, const int* tile_count, const int4* tiles,
                                 const int* sorted, const fp4_weight& wa, const fp4_weight& wb,
                                 float limit, const float* pair_weights, out_t* dst,
                                 cudaStream_t stream);

}  // namespace dsv4::cuda::prefill
