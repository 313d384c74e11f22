// Dense decode linears (1..64 tokens) on tensor cores:
// y[t, :] = x[t, :] . W^T, W one matrix of a device_weight (linear.h) in bf16, fp8_block (E4M3 +
// 128x128 block scales, f32 or E8M0), mxfp4 or nvfp4; x act_t (float or __nv_bfloat16), y f32.
//
// Weights are read once per launch in their checkpoint layout (16-byte streaming loads) and
// expanded exactly to BF16 in registers (fp4_mma.cuh; E4M3 -> BF16 is exact too); products on
// tensor cores (mma.sync m16n8k16, f32 accumulation), every token of the step in the same pass
// (up to 8 n-tiles of 8 tokens per warp). f32 activations enter as BF16 hi + lo (~2^-17 relative
// per product); bf16 activations are exact. fp8_block scales and the nvfp4 global scale multiply
// f32 partial sums; the output is f32, or bf16 for bf16 activations. Two launches (activation
// prepare, GEMV), no host synchronisation, launch configuration from the shapes only.
//
// Dispatched by cuda_ops for the shapes where it is the fastest dense path (linear_dispatch.h:
// 2..32 tokens on FP8 matrices of >= 4096 rows, 2..64 tokens on 4-bit matrices); matrices with
// few rows give it too few blocks (bench/kernels/bench_linear_gemm).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

constexpr int64_t k_linear_decode_max_tokens = 64;
constexpr int k_linear_decode_max_warps = 16;

// How one launch spreads a matrix: blocks of row_tiles x k_parts warps, each warp 16 rows and
// 1 / k_parts of K (rounds: K / (4 x the k of one 16-byte load)). Depends only on the shape, the
// token tiles (n_tiles of 8 tokens) and the SM count, so a decode step stays graph-capturable.
// ring_stages (<= 8 tokens only; ignored above): 0 streams each warp's weights through three
// rounds of registers; 4 or 6 (bf16 and fp8_block only) through a per-warp shared-memory ring of
// that many rounds (cp.async; the same results bit for bit). The planner picks it by format and
// shape (linear_decode.cu).
// x_lead (one n-tile, bf16 activations, bf16 / mxfp4 / nvfp4 weights; ignored otherwise; the
// same results bit for bit): 1 or 2 loads a round's activation fragments that many rounds ahead
// of its MMAs instead of at the round's start; registers: 1 or 2 with <= 8 warps a block; the
// ring: 1, bf16 weights.
struct linear_decode_split {
  int64_t row_tiles = 1;
  int64_t k_parts = 1;
  int ring_stages = 0;
  int x_lead = 0;
};
linear_decode_split linear_decode_make_split(int64_t rows, int64_t rounds, int n_tiles,
                                             int sm_count);
// The split linear_decode takes for this matrix and token count on the current device with bf16
// (or f32: no x_lead) activations, and whether a given split is one linear_decode_with_split
// accepts (benchmarks sweep splits).
linear_decode_split linear_decode_default_split(const device_weight& w, int64_t tokens,
                                                bool bf16_act = true);
bool linear_decode_split_fits(const device_weight& w, int64_t tokens,
                              const linear_decode_split& split);

// bf16 / fp8_block / mxfp4 / nvfp4, rows % 16 == 0, cols a multiple of 64 (bf16) or 128 (fp8,
// fp4), 16-byte aligned data; mxfp4 f32 scales must be powers of two (widened E8M0). nvfp4 may
// be in the repacked layout (linear.h; a 2-byte aligned scale array): the same y bit for bit, a
// round's weights decoded with fewer instructions (linear_decode.cu, repacked_lane).
bool linear_decode_supported(const device_weight& w);

size_t linear_decode_workspace_bytes(int64_t tokens, int64_t cols);

// x [tokens, cols] act_t, y [tokens, rows] out_t (f32; or bf16 for bf16 activations, rounded
// once from the f32 sum), matrix 0 of w. cudaErrorNotSupported when !linear_decode_supported(w)
// or tokens > k_linear_decode_max_tokens. Two launches with programmatic dependent launch
// (pdl.cuh): the weights of a call start streaming while the launch before it drains.
template <typename act_t, typename out_t>
cudaError_t linear_decode(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                          void* workspace, size_t workspace_bytes, cudaStream_t stream);

// Block-diagonal form (wo_a): x [tokens, groups * cols], W [groups * out_g, cols] (rows =
// groups * out_g), y [tokens, rows]; output row r reads x's columns (r / out_g) * cols ..
// + cols - 1. Needs out_g a multiple of 16 (a 16-row tile never straddles two groups); the
// workspace is linear_decode_workspace_bytes(tokens, groups * cols). groups == 1 is
// linear_decode. cudaErrorNotSupported where !linear_decode_grouped_supported(w, groups).
bool linear_decode_grouped_supported(const device_weight& w, int64_t groups);
template <typename act_t, typename out_t>
cudaError_t linear_decode_grouped(const act_t* x, int64_t tokens, const device_weight& w,
                                  int64_t groups, out_t* y, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream);

// linear_decode_grouped with the split given (null: the planner's, as linear_decode_grouped),
// under linear_decode_with_split's rules.
template <typename act_t, typename out_t>
cudaError_t linear_decode_grouped_with_split(const act_t* x, int64_t tokens, const device_weight& w,
                                             int64_t groups, out_t* y, void* workspace,
                                             size_t workspace_bytes,
                                             const linear_decode_split* split, cudaStream_t stream,
                                             bool pdl = true);

// linear_decode with the split given instead of linear_decode_make_split's (benchmarks sweep it;
// null: the planner's). row_tiles and k_parts powers of two, row_tiles dividing rows / 16, at most
// 16 warps in all (8 above 16 tokens); anything else returns cudaErrorInvalidValue. pdl false:
// plain launches (benchmarks compare).
template <typename act_t, typename out_t>
cudaError_t linear_decode_with_split(const act_t* x, int64_t tokens, const device_weight& w,
                                     out_t* y, void* workspace, size_t workspace_bytes,
                                     const linear_decode_split* split, cudaStream_t stream,
                                     bool pdl = true);

}  // namespace dsv4::cuda
