// Which kernel runs a dense linear, from host-known shapes only (token count, matrix dims and
// format), so a decode step takes the same path every time and can be graph-captured. The rules
// follow bench/kernels/bench_linear_gemm (H200, 2026-11-22, bench/RESULTS.md, session 4: the
// linear_decode split sweep), DeepSeek-V4 Flash and Pro projections at T = 1..64, graphs of 16
// calls:
//  * T = 1: the warp-per-rows GEMV (linear.h) wins every shape (Flash wq_b 13.0 us vs
//    linear_decode 17.4 us; wo_b 12.2 us = 61% of the read ceiling with its K split).
//  * T = 2 on FP8 matrices of <= 1024 rows: the GEMV and linear_decode tie (wq_a 6.8 vs 6.9 us);
//    the GEMV is kept. From T = 2 on every other FP8 matrix, linear_decode (tensor cores, packed
//    weights, one wave of K-split warps) wins: wo_b 14.8 us vs GEMV 24.0 us at T = 2, Pro wo_b
//    38.1 vs 70.5 us, wq_b 14.0 vs 23.8 us, shared w13 7.7 vs 8.3 us.
//  * linear_decode stays ahead of linear_gemm (expand + cuBLAS) on FP8 up to 32 tokens (wq_a 11.6
//    vs 12.6 us, wq_b 20.6 vs 48.2 us, Pro wo_b 67.5 vs 193 us at T = 32), except on the 512-row
//    wkv above 16 tokens (11.2 vs 9.8 us at T = 32); from 33 tokens linear_gemm wins FP8
//    (wq_a 12.8 vs 19.4 us, wo_b 53 vs 66 us at T = 64). On 4-bit weights linear_decode wins
//    from 2 to 64 tokens (NVFP4 shared w13 T = 64: 16.0 vs 21.4 us).
//  * Prefill (> 64 tokens): linear_gemm, 55-96% of cuBLAS BF16 on a pre-expanded copy.
// BF16/f32 matrices and grouped linears keep the GEMV up to 64 tokens (not measured otherwise).
#pragma once

#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

enum class dense_linear_path { gemv, linear_decode, linear_gemm };

// decode_ok / gemm_ok: linear_decode_supported(w) / linear_gemm_supported<act_t>(w) for this
// matrix (both false falls back to the GEMV / tiled kernel of linear.h).
inline dense_linear_path choose_dense_linear_path(weight_kind kind, int64_t rows, int64_t tokens,
                                                  int64_t groups, bool decode_ok, bool gemm_ok) {
  constexpr int64_t k_gemv_max_tokens = 64;
  if (tokens > k_gemv_max_tokens)
    return gemm_ok ? dense_linear_path::linear_gemm : dense_linear_path::gemv;
  const bool packed =
      kind == weight_kind::fp8_block || kind == weight_kind::mxfp4 || kind == weight_kind::nvfp4;
  if (tokens == 1 || groups != 1 || !packed) return dense_linear_path::gemv;
  const bool four_bit = kind != weight_kind::fp8_block;
  if (!four_bit && tokens == 2 && rows <= 1024) return dense_linear_path::gemv;
  const bool decode_wins = four_bit || tokens <= 16 || (tokens <= 32 && rows > 512);
  if (decode_ok && decode_wins) return dense_linear_path::linear_decode;
  if (gemm_ok) return dense_linear_path::linear_gemm;
  return decode_ok ? dense_linear_path::linear_decode : dense_linear_path::gemv;
}

}  // namespace dsv4::cuda
