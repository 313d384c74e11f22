// What the two warp-specialized W4A16 prefill kernels share: the 128-pair kernel
// (moe_prefill_wgmma_ws.cu, whose top comment holds the design and the measured history) and the
// wide kernel of tiles of up to 256 pairs (moe_prefill_wgmma_ws_wide.cu). Block geometry, the
// kernels' arguments and ring handles, the scale cp.async widths, the consumers' MXFP4
// expansion (PREFILL9), and the one-accumulator kernels' (q4, wide) second step and epilogue.
// Included by those two translation units only.
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
// SHIFT (repacked words only): the pairs by fp4_repack::decode_pair (session 43's map), the same
// pairs bit for bit as weight_pair's.
template <int i, bool RP, bool SHIFT>
__device__ __forceinline__ uint32_t ws_weight_pair(uint32_t u) {
  if constexpr (RP && SHIFT)
    return fp4_repack::decode_pair<i>(u);
  else
    return weight_pair<i, RP>(u);
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

// ws_mx_second_step for one matrix's A registers of a step (rows g / g + 8: m2[0] / m2[1]): the
// kernels of one accumulator per consumer warpgroup (q4, wide).
__device__ __forceinline__ void ws_mx_second_step_one(uint32_t two, const tile_scale& sc,
                                                      uint32_t (&a)[4]) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %4, 0;\n@!p bra.uni WS_MX_SECOND_ONE_DONE;\n"
      "mul.rn.bf16x2 %0, %0, %5;\nmul.rn.bf16x2 %1, %1, %6;\n"
      "mul.rn.bf16x2 %2, %2, %5;\nmul.rn.bf16x2 %3, %3, %6;\n"
      "WS_MX_SECOND_ONE_DONE:\n}\n"
      : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3])
      : "r"(two), "r"(sc.m2[0]), "r"(sc.m2[1]));
}

// The destination rows and routing weights of the chunk of token blocks b0 .. b0 + chunk - 1 in the
// W4A16 epilogues: base[b][u] = token 8 (b0 + b) + 2 c + u's row of dst (null past ntok), pw its
// routing weight (UP with pair_weights; else 1).
template <bool UP, typename out_t, int chunk>
__device__ __forceinline__ void ws_chunk_rows(int b0, int c, int ntok, int64_t out_rows,
                                              const int* pair_of, const float* pair_weights,
                                              out_t* dst, out_t* (&base)[chunk][2],
                                              float (&pw)[chunk][2]) {
#pragma unroll
  for (int b = 0; b < chunk; ++b)
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int t = 8 * (b0 + b) + 2 * c + u;
      base[b][u] = nullptr;
      pw[b][u] = 1.0f;
      if (t < ntok) {
        const int p = pair_of[t];
        base[b][u] = dst + int64_t(p) * out_rows;
        if (UP && pair_weights) pw[b][u] = pair_weights[p];
      }
    }
}

// The epilogue of the kernels of one accumulator per consumer warpgroup (q4, wide):
// ws_store_tile's expressions (so the same bits), phased as it is (per chunk of CB token blocks:
// everything up to the division, the divisions, the stores). Accumulator j: token
// 8 (j >> 2) + 2 c + (j & 1), fragment row g + 8 ((j >> 1) & 1). UP: W1's g (fragment row g) and
// W3's u (row g + 8) of intermediate row `row` = row0 + row_off; down: output rows row and row + 8
// (row_off: the caller's per-thread part of the row, added here, after the global-scale loads,
// where the wide kernel's own epilogue added it: the same machine code as before it was shared).
// `second` (down): the warpgroup holds W2's second accumulator (its NVFP4 global scale is wb's).
// BOUNDS (q4, with row_off 0): rows at or past out_rows are not stored; false (wide) where the
// caller's rows are always inside.
template <typename out_t, weight_kind K, bool UP, int N, bool PERMUTE_H, int CB, bool BOUNDS>
__device__ __forceinline__ void ws_store_tile_one(const float (&acc)[N / 2], int e, int ntok,
                                                  int64_t row0, int row_off, int64_t out_rows,
                                                  bool second, const fp4_weight& wa,
                                                  const fp4_weight& wb, const int* pair_of, int c,
                                                  float limit, const float* pair_weights,
                                                  out_t* dst) {
  float fa = 1.0f, fb = 1.0f;
  if constexpr (K == weight_kind::nvfp4) {
    fa = (wa.global ? __ldg(wa.global + e) : 1.0f) * 256.0f;
    fb = (wb.global ? __ldg(wb.global + e) : 1.0f) * 256.0f;
  }
  if (!UP && second) fa = fb;
  // The rows and columns: the wide kernel's one row (and its permuted column, UP) and, with BOUNDS
  // (q4), each fragment row's bound and column up front. Written as each kernel had them, so that
  // both keep their machine code.
  constexpr bool permute = UP && PERMUTE_H && std::is_same_v<out_t, __nv_bfloat16>;
  const int64_t row = row0 + row_off;
  const int64_t col = permute ? (row & ~int64_t(127)) | permuted_k(int(row & 127)) : row;
  bool row_ok[2];
  int64_t col_b[2];
  if constexpr (BOUNDS) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int64_t r = row0 + (UP ? 0 : 8 * i);
      row_ok[i] = r < out_rows;
      col_b[i] = permute ? (r & ~int64_t(127)) | permuted_k(int(r & 127)) : r;
    }
  }
  constexpr int blocks = N / 8;
  constexpr int chunk = blocks < CB ? blocks : CB;
#pragma unroll
  for (int b0 = 0; b0 < blocks; b0 += chunk) {
    out_t* base[chunk][2];  // token 8 (b0 + b) + 2 c + u's row of dst; null past ntok
    float pw[chunk][2];
    ws_chunk_rows<UP>(b0, c, ntok, out_rows, pair_of, pair_weights, dst, base, pw);
    if constexpr (UP) {
      moe_swiglu_terms sw[chunk][2];
      float v[chunk][2];
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const int j = 4 * (b0 + b) + u;
          sw[b][u] = moe_swiglu_begin(acc[j] * fa, acc[j + 2] * fb, limit);
        }
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int u = 0; u < 2; ++u) v[b][u] = moe_swiglu_end(sw[b][u]);
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int u = 0; u < 2; ++u)
          if (base[b][u] && (!BOUNDS || row_ok[0]))
            base[b][u][BOUNDS ? col_b[0] : col] =
                act_from_f32<out_t>(pair_weights ? __fmul_rn(v[b][u], pw[b][u]) : v[b][u]);
    } else {
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int u = q & 1, i = q >> 1;
          if (base[b][u] && (!BOUNDS || row_ok[i]))
            base[b][u][BOUNDS ? col_b[i] : row + 8 * i] =
                act_from_f32<out_t>(acc[4 * (b0 + b) + q] * fa);
        }
    }
  }
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
