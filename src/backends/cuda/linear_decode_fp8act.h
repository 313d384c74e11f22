// Dense decode linear on FP8 tensor cores for FP8-block weights (128 x 128 blocks, E8M0 or f32
// scales) whose input is taken in FP8 blocks: the official precision mode's W8A8 linear
// (docs/dsv4-model.md §3.7: act_quant to e4m3 per token and 128 k with a power-of-two scale,
// GEMM = sum over 128-k blocks of (A . B) * s_a * s_b in f32).
//
//   y[t, r] = sum_b s_w(r, b) * s_x(t, b) * sum_{k in block b} w8[r, k] * x8[t, k],
//   s_x(t, b) = 2^ceil(log2(max(amax_b, 1e-4) / 448)),  x8 = e4m3(x / s_x) (nearest even,
//   saturating), the scale rule of ops::fake_quant_fp8_act.
//
// When x already holds FP8 blocks (fake_quant_fp8_act(x, 128) leaves it unchanged, as the model's
// official-mode linear inputs do) the requantization is exact (x / s_x is an e4m3 value for the
// recomputed scale too), so y is W x with every product exact; only the f32 summation differs
// from the CPU's (per 32 k in the tensor core, per 128-k block with the scales, then over blocks
// and K parts in a fixed order). For other x it is the official W8A8 product, not W x.
//
// Against linear_decode (bf16 tensor cores): no FP8 -> BF16 expansion of the weights and half
// the MMAs (k32 instead of k16), the reason for this path (ncu on the H200, session 5:
// linear_decode issued ~415 instructions per warp and 2 KB of weights, 0.44 per scheduler cycle,
// latency-bound at 16 warps per SM).
//
// Launches (programmatic dependent launch, pdl.cuh): one quantize of x (a warp per token and
// 128-k block), one GEMM in linear_decode's shape (16-row tiles, K split over up to 16 warps by
// linear_decode_make_split, partials summed in K-part order: deterministic). Graph-capturable.
// The plan (linear_decode_fp8act_plan) may instead quantize x inside the GEMM (one launch) and
// prefetch weight rounds into L2 before the PDL wait; every plan gives bit-equal y for the
// same K split.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

constexpr int64_t k_linear_decode_fp8act_max_tokens = 32;

// fp8_block weights, rows % 16 == 0, cols % 128 == 0, 16-byte aligned data.
bool linear_decode_fp8act_supported(const device_weight& w);

size_t linear_decode_fp8act_workspace_bytes(int64_t tokens, int64_t cols);

// x [tokens, cols] act_t (f32 or bf16), y [tokens, rows] out_t (f32; bf16 for bf16 x), matrix 0
// of w. cudaErrorNotSupported when !linear_decode_fp8act_supported(w) or tokens >
// k_linear_decode_fp8act_max_tokens. pdl false: plain launches (benchmarks compare).
template <typename act_t, typename out_t>
cudaError_t linear_decode_fp8act(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                                 void* workspace, size_t workspace_bytes, cudaStream_t stream,
                                 bool pdl = true);

// How a call runs. quantize_in_gemm (<= 8 tokens, 16-byte aligned x): no quantize launch, the
// GEMM's warps quantize their 128-k blocks of x themselves after the PDL wait (one launch less
// on the dependency chain). l2_prefetch_rounds > 0: before its PDL wait, each warp bulk-prefetches
// that many more 128-k rounds of its 16 rows into L2 (beyond the two rounds it loads).
// Anything else out of range returns cudaErrorInvalidValue.
struct linear_decode_fp8act_plan {
  bool quantize_in_gemm = false;
  int l2_prefetch_rounds = 0;
  int k_parts = 0;  // > 0: K parts per 16-row tile instead of linear_decode_make_split's (a power
                    // of two, <= 16 at <= 8 tokens, else <= 8; one row tile per block)
  int x_lead = -1;  // 0 or 2: rounds ahead of its MMAs that a round's activations are loaded
                    // (the quantize launch's x8 / sx at <= 8 tokens; no effect otherwise)
  int late_scale = -1;  // 1: E8M0 weight scales converted at the MMAs, not at their load (with
                        // x_lead > 0); for both, -1: the default plan's choice
};
// The plan linear_decode_fp8act takes (the rule and its measurements: the .cu).
linear_decode_fp8act_plan linear_decode_fp8act_default_plan(const device_weight& w, int64_t tokens);

// linear_decode_fp8act with the plan given (null: the default plan; benchmarks and tests pick).
template <typename act_t, typename out_t>
cudaError_t linear_decode_fp8act_with_plan(const act_t* x, int64_t tokens, const device_weight& w,
                                           out_t* y, void* workspace, size_t workspace_bytes,
                                           const linear_decode_fp8act_plan* plan,
                                           cudaStream_t stream, bool pdl = true);

}  // namespace dsv4::cuda
