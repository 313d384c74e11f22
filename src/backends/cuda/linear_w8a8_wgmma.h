// Dense W8A8 linear on Hopper's warpgroup MMA for FP8-block weights (128 x 128 blocks, E8M0 or
// f32 scales) at 9-64 tokens (batched decode, MTP verification): the weight-read-bound regime
// above linear_decode_fp8act's 8 tokens, where its mma.sync kernel reads weights at 44-68% of the
// H200's HBM read bandwidth (bench/TARGETS.md issue 5).
//
// Numerics: linear_decode_fp8act.h's official W8A8 product, block for block:
//   y[t, r] = sum_b (s_w(r, b) * s_x(t, b)) * sum_{k in block b} w8[r, k] * x8[t, k],
// x8 / s_x from fp8act_quantize's rule (per token and 128-k block, power-of-two scale); each
// block's product is summed in the tensor core (f32, per 32 k), scaled once and added in f32 in
// block order; K parts (split K) are summed in part order by the last CTA of a row tile
// (deterministic: the order never depends on arrival).
//
// Shape: weight rows as the wgmma's M (128-row tiles, one 128-row scale block: 64 rows per
// consumer warpgroup), tokens as N (padded to 16, 32, 48 or 64). A producer thread streams each
// 128-k block of a tile's weights by TMA (128-byte swizzle) and the block's activations (written
// pre-swizzled by the quantize launch, codes and scales in one bulk copy) through a ring of
// shared-memory stages; persistent CTAs (one per SM) walk (tile, K part) items, so the weight
// stream continues across items. Launches: quantize (also zeroes the split-K counters), then the
// GEMM with programmatic dependent launch (it streams its first stages' weights before waiting). No
// host synchronisation; graph-capturable.
//
// Layout contract (weight scales): the producer bulk-copies the 16-byte aligned chunk that holds a
// block's scale, so the scale array must be readable from the 16-byte boundary at or below its
// first byte to the one above its last byte. The engine's tensors satisfy it (device_allocator
// gives every tensor its own cudaMalloc block of its size class: 512-byte aligned, a multiple of
// 512 bytes; a view into one stays inside it); the parity harness pads its scale buffers the
// same way. (Session 35, l35c: memcheck flagged the over-read on an exact 10-byte test
// allocation; l35d: consumers reading the scale from global memory instead, in bounds for any
// allocation, measured 0.92x at Flash wq_b and 1.05-1.07x at Flash wo_b on an H200: not taken.)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

// 9-64 tokens is the measured range (at 128 tokens cuBLASLt was as fast or faster: H100, session
// 26); fewer tokens work too (n = 16).
constexpr int64_t k_linear_w8a8_wgmma_max_tokens = 64;

// fp8_block weights (checkpoint layout), cols % 128 == 0, 16-byte aligned data, an sm_90 device.
bool linear_w8a8_wgmma_supported(const device_weight& w);

// How a call runs (linear_w8a8_wgmma_default_plan: the rule and its measurements in the .cu). n:
// padded tokens (16, 32, 48 or 64, >= tokens); k_parts: K parts per 128-row tile (<= cols / 128);
// ctas: persistent CTAs (<= tiles * k_parts).
struct linear_w8a8_wgmma_plan {
  int n = 0;
  int k_parts = 0;
  int ctas = 0;
};
// sms: the device's SMs; read_gbps: its HBM read rate (<= 0: estimated from the memory clock and
// bus width of the current device).
linear_w8a8_wgmma_plan linear_w8a8_wgmma_default_plan(int64_t tokens, int64_t rows, int64_t cols,
                                                      int sms, double read_gbps = 0);

size_t linear_w8a8_wgmma_workspace_bytes(const linear_w8a8_wgmma_plan& plan, int64_t rows,
                                         int64_t cols);
// The default plan's workspace on the current device.
size_t linear_w8a8_wgmma_workspace_bytes(int64_t tokens, int64_t rows, int64_t cols);

// x [tokens, cols] act_t (f32 or bf16), y [tokens, rows] out_t (f32; bf16 for bf16 x), matrix 0
// of w. cudaErrorNotSupported when !linear_w8a8_wgmma_supported(w) or tokens > 64; plan null:
// the default plan on the current device. pdl false: plain launches.
template <typename act_t, typename out_t>
cudaError_t linear_w8a8_wgmma(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream,
                              const linear_w8a8_wgmma_plan* plan = nullptr, bool pdl = true);

}  // namespace dsv4::cuda
