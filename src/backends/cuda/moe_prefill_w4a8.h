// The W4A8 GEMM core of the routed-expert prefill (moe_prefill_w4a8.cu; moe_prefill_core::w4a8),
// called by moe_prefill.cu after its plan: internal to the two files (the public entry point and
// the core selection are in moe_prefill.h). Official order and MXFP4 weights only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda::prefill {

// Bytes of the W4A8 core's quantized-activation workspace region: x as E4M3 (tokens x hidden)
// with its f32 scales (one per token and 128 k), h likewise (pairs x inter).
size_t w4a8_workspace_bytes(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter);

// x (f32 or BF16, FP8-representable per 128 values in the official mode) quantized to E4M3 per
// token and 128 k; L1 (x times W1 and W3, clamped SwiGLU times pair_weights[p] into h f32
// [pairs, inter]); h quantized to E4M3 per pair and 128 k; L2 into out [pairs, hidden] f32.
// tile_count / tiles / sorted: the plan (moe_plan.cuh) with tiles of up to k_wgmma_tile (128)
// pairs, tile_slots its upper bound. Weights validated by the caller (MXFP4, hidden and inter
// multiples of 128). q: w4a8_workspace_bytes bytes, 256-byte aligned. pipelined: each round's
// A registers expanded while the previous round's wgmmas run, 8 rounds in flight
// (moe_prefill_core::w4a8), else expand, multiply, promote in turn with 4 rounds in flight
// (w4a8_serial; same results bit for bit). kernel: which of the three GEMM kernels runs (all
// give the same results bit for bit): serial, pipelined, or the warp-specialized persistent one
// (moe_prefill_core::w4a8_ws: a producer warpgroup fills an mbarrier ring, two consumer
// warpgroups expand and multiply; moe_prefill_w4a8.cu).
enum class w4a8_kernel { serial, pipelined, warp_specialized };

template <typename act_t>
cudaError_t launch_w4a8_gemms(const act_t* x, int64_t tokens, int64_t top_k,
                              const device_weight& w1, const device_weight& w3,
                              const device_weight& w2, float limit, const int* tile_count,
                              const int4* tiles, const int* sorted, int64_t tile_slots,
                              const float* pair_weights, const int32_t* indices, int64_t pairs,
                              float* h, float* out, void* q, w4a8_kernel kernel,
                              cudaStream_t stream);

}  // namespace dsv4::cuda::prefill
