// Host-side choices of the decode-path MoE launches that depend only on the shapes (moe_decode.cu
// calls them; pure functions, no CUDA): the chunk size and the row tiles per block.
#pragma once

#include <cstdint>

namespace dsv4::cuda::moe_decode_tuning {

constexpr int k_chunk_pairs = 8;  // pairs per chunk: the mma's N

// The row tiles per block (4, 2 or 1) of one GEMM launch (up: W1/W3, else W2) of `rows` rows
// and `rounds` 128-k rounds: see moe_decode_tuning.cpp. blocks_per_sm: resident blocks at RT 4,
// 2, 1; min_blocks_per_sm: moe_decode_rt_blocks_per_sm(); read_bytes_per_sm_cycle: the device's
// (device_info.h; 0 = unknown, the H100's class); four_scale_slots: the launch runs the 4-slot
// kernels (moe_decode_scale_slots_4); w2_pair: the W2 launch runs W2P (moe_decode_w2_pair; the
// launch then passes rows / 2, a W2P warp's 32-row tile counting as one tile); mxfp4: the weights
// are MXFP4 (the T = 1 short-second-wave rule was measured a gain for MXFP4 only).
int pick_rt(bool up, int64_t rows, int64_t rounds, int64_t tokens, int64_t top_k, int64_t experts,
            int64_t chunks_bound, int sms, const int (&blocks_per_sm)[3], int min_blocks_per_sm,
            double read_bytes_per_sm_cycle = 0.0, bool four_scale_slots = false,
            bool w2_pair = false, bool mxfp4 = false);

// Whether a W1/W3 launch at T = 1 takes the 4 scale slots under the default rule
// (moe_decode_set_up_scale_slots_4_t1(-1)): on a device of the H200's class (bandwidth_rich), when
// the 4-slot kernel holds more resident blocks per SM (blocks_4) than the 8-slot one (blocks_8)
// and the launch's grid (grid_blocks, at the row tiles both were counted for) is more than one
// wave of the 8-slot kernel on `sms` SMs.
bool up_four_slots_at_one_token(int blocks_8, int blocks_4, int64_t grid_blocks, int sms,
                                double read_bytes_per_sm_cycle);

}  // namespace dsv4::cuda::moe_decode_tuning
