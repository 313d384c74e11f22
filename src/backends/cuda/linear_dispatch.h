// Which kernel runs a dense linear, from host-known shapes only (token count, matrix dims and
// format), so a decode step takes the same path every time and can be graph-captured. The rules
// follow bench/kernels/bench_linear_gemm (H200, 2026-11-22, bench/RESULTS.md), DeepSeek-V4 Flash
// and Pro projections at T = 1..64, graphs of 16 calls:
//  * T = 1: the warp-per-rows GEMV (linear.h) wins every shape (e.g. Flash wq_b 13.0 us vs
//    linear_decode 16.2 us vs linear_gemm 48.0 us); on matrices of <= 4096 rows it splits K over
//    a block's warps (wq_a 9.9 -> 4.7 us, wo_b 19.2 -> 12.2 us = 61% of the read ceiling).
//  * With that split the GEMV also wins FP8 matrices of <= 4096 rows up to 4 tokens (wq_a 6.8 /
//    8.7 us at T = 2 / 4 vs linear_gemm 12.4 us; wo_b 23.9 us vs linear_decode 33.9 us at T = 2).
//  * Otherwise the GEMV degrades from T = 2 on (wq_b 23.8 us at T = 2, 84 us at T = 8). Up to 32
//  tokens,
//    linear_decode (tensor cores, packed weights) wins on matrices with many rows (>= 4096:
//    wq_b 16.5-27.4 us, wo_b, the indexer's wq_b, shared w2) and on 4-bit weights (NVFP4 shared
//    w13: 11.2 us vs 21.7 us); on FP8 matrices with few rows (wq_a, wkv, shared w13: 512-3072 rows)
//    its grid is too small and linear_gemm (expand + cuBLAS) wins (wq_a 12.4 us vs 18.7 us).
//  * From 33 tokens on, linear_gemm wins FP8 matrices (wq_b 49.0 us vs 54.9 us at T = 64, Pro
//    wo_b 196 us vs 262 us); linear_decode stays ahead on 4-bit weights up to 64 tokens.
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
  if (!four_bit && tokens <= 4 && rows <= 4096) return dense_linear_path::gemv;
  if (decode_ok && (four_bit || (tokens <= 32 && rows >= 4096)))
    return dense_linear_path::linear_decode;
  if (gemm_ok) return dense_linear_path::linear_gemm;
  return decode_ok ? dense_linear_path::linear_decode : dense_linear_path::gemv;
}

}  // namespace dsv4::cuda
