// The official order's FP8 rounding per 128 values (quant::fp8_block_warp's values: amax over the
// block with NaN ignored, s = pow2_ceil(max(amax, 1e-4) / 448), q = e4m3(v / s)) in fewer
// instructions, for the prefill's quantize kernels (moe_prefill_w4a8.cu: x and h as E4M3 bytes;
// moe_prefill_wgmma_ws.cu: h' in BF16); moe_prefill_set_nongemm_old (moe_prefill.h) runs the
// kernels they replaced, as the parity families' byte-for-byte reference.
//  * v / s as v * (1 / s): s = 2^k with k in [-126, 127] (pow2_ceil clamps), so 1 / s is exact
//    (2^-127 is a subnormal; this build does not flush them) and both are the correctly rounded
//    v * 2^-k.
//  * e4m3 by cvt.rn.satfinite.e4m3x2.f32 alone: round to nearest even onto the E4M3 grid
//    (subnormals included), saturating at +-448, NaN to NaN: quant::e4m3_round then the exact
//    cast, one instruction per two values instead of ~40 per value (bench_moe_linear
//    --fp8-check compares both over all 2^32 f32 inputs at s = 2^-126, 2^-22, 2^-10, 2^-3, 1, 2^5,
//    2^20, 2^120, 2^127: 0 bytes (W4A8) and 0 BF16 h' (W4A16) differ; H200, session 20).
// Measured (PREFILL20, H200, bench_moe_linear --w4a8-ab, Flash T = 4096, official MXFP4 call,
// same process): the W4A8 quantize kernels 76 + 182 us -> 30 + 48 us (x, h; stage breakdown),
// the call 1.037-1.041x with this kernel alone; the W4A16 h' quantize with the cvt part of the
// engine path's 1.044-1.054x (bench/kernels/results/2026-11-27_s20_prefill20_NOTES.md).
// Tried and removed (same notes): h as BF16 rounded to odd in the W4A16 ws kernels too (out_t
// bf16_odd in ws / q4 / wide, the h' quantize reading it): 0.994-1.003x of f32 h at Flash T = 4096,
// code at 90bb849.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/moe_prefill.h"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda::prefill {

// The block scale and the E4M3 step by cvt live with the other FP8 helpers (quantize.h,
// kv_record.cuh); the prefill's kernels name them unqualified.
using kv_record::e4m3x2_values;  // (two codes, low byte first -> f32, exact)
using quant::e4m3x2_bits;
using quant::fp8_block_scale;

// f32 to BF16 rounded to odd (truncated, the last bit set when a discarded bit was; NaN stays NaN
// through the set bit). Rounded to E4M3 later, at every scale the block rounding can take
// (s >= 2^-22, as max(amax, 1e-4) / 448 > 2^-23), it gives the f32 value's rounding: round to odd
// at 8 significant bits, then to nearest at <= 4, is the direct rounding, and E4M3's subnormal
// step 2^-9 s stays far above BF16's subnormals there. The block amax of the rounded values gives
// the same scale: round to odd is monotone and keeps every value on its side of each BF16 number
// with an even last bit, and the scale's steps (amax = 448 * 2^k = 7 * 2^(k + 6)) are such
// numbers. bench_moe_linear --fp8-check, all 2^32 inputs: 0 differences at s = 2^-22 .. 2^127
// and for the scale (over all 2^31 non-negative amax); at s = 2^-126 (unreachable) 2424800 bytes
// differ. Used by moe_prefill_w4a8.cu (launch_w4a8_gemms: L1 writes h so, the quantize reads it).
__device__ __forceinline__ uint16_t bf16_round_odd(float v) {
  const uint32_t u = __float_as_uint(v);
  return uint16_t((u >> 16) | ((u & 0xFFFFu) != 0u ? 1u : 0u));
}

}  // namespace dsv4::cuda::prefill
