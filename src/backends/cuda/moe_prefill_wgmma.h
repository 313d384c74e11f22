// The wgmma GEMM core of the routed-expert prefill (moe_prefill_wgmma.cu), called by
// moe_prefill.cu after its plan: internal to the two files (the public entry points and the
// core selection are in moe_prefill.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda::prefill {

// Pairs per tile of the wgmma core's plan (the largest wgmma N it runs; a tile of fewer pairs
// runs the smallest N of 32, 64, 96, 128 that holds them).
constexpr int k_wgmma_tile = 128;

// L1 (clamped SwiGLU epilogue into h [pairs, inter], times pair_weights[p] when not null),
// then, when pair_weights is set (official order), the FP8 rounding of h, then L2 into out
// [pairs, hidden] f32. h (the f32 workspace region) holds BF16 values in the exact order (L2
// rounds h to BF16 anyway: same results, half the bytes) and f32 in the official order. tile_count
// / tiles / sorted: the plan (moe_plan.cuh) with tiles of up to k_wgmma_tile pairs; tile_slots its
// upper bound. Weights validated by the caller (4-bit kind K, hidden and inter multiples of 128).
// xp null: the GPU-verified core (activations staged through registers). xp set (tokens x hidden
// BF16 scratch): the cp.async-staged variant (moe_prefill_core::wgmma_cp).
template <typename act_t, weight_kind K>
cudaError_t launch_wgmma_gemms(const act_t* x, int64_t top_k, const device_weight& w1,
                               const device_weight& w3, const device_weight& w2, float limit,
                               const int* tile_count, const int4* tiles, const int* sorted,
                               int64_t tile_slots, const float* pair_weights,
                               const int32_t* indices, int64_t pairs, float* h, float* out,
                               __nv_bfloat16* xp, cudaStream_t stream);

// The same for weights in the repacked layout (moe_repack.h; device_weight::layout, validated by
// the caller) and BF16 x: exact and official order, no cp.async-staged variant. Same results
// bit for bit as launch_wgmma_gemms on the checkpoint bytes (the expansion yields the same BF16
// pairs; every sum keeps its order).
template <weight_kind K>
cudaError_t launch_wgmma_gemms_repacked(const __nv_bfloat16* x, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float limit, const int* tile_count,
                                        const int4* tiles, const int* sorted, int64_t tile_slots,
                                        const float* pair_weights, const int32_t* indices,
                                        int64_t pairs, float* h, float* out, cudaStream_t stream);

}  // namespace dsv4::cuda::prefill
