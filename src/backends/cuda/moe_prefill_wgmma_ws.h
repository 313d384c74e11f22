// The warp-specialized persistent variant of the wgmma core (moe_prefill_core::wgmma_ws;
// moe_prefill_wgmma_ws.cu, its wide kernel in moe_prefill_wgmma_ws_wide.cu), called by
// moe_prefill.cu after its plan: internal to those files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda::prefill {

// As launch_wgmma_gemms / launch_wgmma_gemms_repacked (moe_prefill_wgmma.h; same plan with tiles
// of up to k_wgmma_tile pairs, same h and out regions, same results bit for bit), RP: weights in
// the repacked layout (BF16 x only). xp: BF16 scratch of max(tokens * hidden, pairs * inter)
// values (x' during L1, h' during L2, both in the core's logical k order). wide: tiles of up to
// k_ws_wide_tile pairs, the wide kernel (moe_prefill_wgmma_ws_wide.cu).
template <typename act_t, weight_kind K, bool RP>
cudaError_t launch_wgmma_ws_gemms(const act_t* x, int64_t tokens, int64_t top_k,
                                  const device_weight& w1, const device_weight& w3,
                                  const device_weight& w2, float limit, const int* tile_count,
                                  const int4* tiles, const int* sorted, int64_t tile_slots,
                                  const float* pair_weights, const int32_t* indices, int64_t pairs,
                                  float* h, float* out, __nv_bfloat16* xp, bool wide,
                                  cudaStream_t stream);

// The wide kernel (wide = true above; RP only): the plan's tiles then hold up to k_ws_wide_tile
// pairs. Automatic (moe_prefill_set_ws_wide(-1)): where the average expert holds more than
// k_wgmma_tile pairs, so that the 128-pair plan would cut most experts in two.
constexpr int k_ws_wide_tile = 256;
bool ws_use_wide(bool repacked, int64_t pairs, int64_t experts);

}  // namespace dsv4::cuda::prefill
