// Which kernel runs a dense linear, from host-known shapes only (token count, matrix dims and
// format), so a decode step takes the same path every time and can be graph-captured. The rules
// follow bench/kernels/bench_linear_gemm (H200, 2026-11-22, bench/RESULTS.md: session 4's
// linear_decode split sweep, session 5's programmatic dependent launch), DeepSeek-V4 Flash and Pro
// projections at T = 1..64, graphs of 16 calls:
//  * Packed weights (FP8 blocks, MXFP4, NVFP4) take linear_decode from one token on: since it
//    streams its first weights before waiting for its inputs (session 5) it beats the
//    warp-per-rows GEMV (linear.h) at T = 1 (Flash wq_a 3.9 vs 4.7 us, wq_b 11.6 vs 13.0 us,
//    wo_b 12.0 vs 12.2 us, Pro wo_b 35.9 vs 43.0 us, NVFP4 shared w13 4.8 vs 7.1 us; Pro wq_b
//    31.4 vs 30.7 us, a tie) and by more from T = 2 (wq_a 4.1 vs 6.8 us).
//  * linear_decode stays ahead of linear_gemm (expand + cuBLAS) on FP8 up to 32 tokens (wq_a 10.6
//    vs 12.6 us, wq_b 19.1 vs 48.1 us, Pro wo_b 65.4 vs 194 us at T = 32), except on the 512-row
//    wkv above 16 tokens (10.4 vs 9.7 us at T = 32); from 33 tokens linear_gemm wins FP8
//    (wq_a 12.8 vs 23.2 us, wo_b 52.9 vs 81.3 us at T = 64). On 4-bit weights linear_decode wins
//    to 64 tokens (NVFP4 shared w13 T = 64: 14.6 vs 21.5 us).
//  * Prefill (> 64 tokens): linear_gemm, 55-96% of cuBLAS BF16 on a pre-expanded copy.
//  * BF16 matrices of up to 4096 rows (router gate, compressor wkv / wgate, indexer weights and
//    compressor) take linear_decode from 2 to 64 tokens: H200 2026-11-26 (test_backend_ops
//    --perf, single launches, f32 activations), GEMV / linear_decode time at 256 x 4096: T = 1
//    9.06 / 13.28 us, T = 4 14.91 / 12.80, T = 16 70.30 / 15.20, T = 64 68.26 / 30.11; the same
//    picture at 64, 1024 x 4096 and 384 x 7168 (T = 16: 66-118 us on the GEMV, 15-19 us).
//  * Grouped FP8 linears (wo_a: Flash 8 x 1024 rows, Pro 16 x 1024, 4096 columns) take
//    linear_decode_grouped from 2 tokens: H200 2026-11-26 (test_backend_ops --perf, single
//    launches, bf16 activations), GEMV / linear_decode us, Flash T = 1 18.3 / 21.7, T = 2 26.1 /
//    22.7, T = 4 33.9 / 23.7, T = 8 108.3 / 25.9, T = 64 481 / 94; Pro T = 1 25.6 / 32.5, T = 2
//    46.5 / 31.7.
//  * Large BF16 matrices (LM head 129280 rows; wo_a in convert.py's BF16 form) keep the GEMV to 4
//    tokens and take plain cuBLAS (linear_gemm) from 5: H100 2026-11-26 (same harness, bf16 x),
//    GEMV / cuBLAS / linear_decode us, Flash head T = 1 350 / 388 / 375 (the GEMV at 98% of
//    read), T = 4 368 / 389 / 379, T = 8 902 / 419 / 383, T = 16 982 / 392 / 541, T = 64 3912 /
//    410 / 614 (Pro head alike); BF16 wo_a T = 4 35.4 / 35.7 / 37.2, T = 8 66.4 / 35.3 / 36.8,
//    T = 64 270 / 38.2 / 52.5.
// f32 matrices keep the GEMV up to 64 tokens, as does a packed matrix (or a BF16 one) at T = 1
// that linear_decode does not take.
//  * NVFP4 matrices in the repacked layout (linear.h; cuda_ops::prepare_linear, dense_layout.h)
//    are read only by linear_decode and linear_gemm: linear_decode up to 64 tokens (grouped wo_a
//    at T = 1 too), linear_gemm above; neither taking them is the GEMV, which refuses them
//    (the caller reports it).
#pragma once

#include <cstdint>

#include "backends/cuda/linear.h"
#include "backends/cuda/linear_decode_nvfp4.h"

namespace dsv4::cuda {

enum class dense_linear_path { gemv, linear_decode, linear_gemm };

// decode_ok / gemm_ok: linear_decode_supported(w) / linear_gemm_supported<act_t>(w) for this
// matrix (both false falls back to the GEMV / tiled kernel of linear.h). plain_gemm: linear_gemm
// needs no expansion (BF16 weights with BF16 activations: cuBLAS on the weights themselves).
// repacked: the matrix is in the repacked layout.
inline dense_linear_path choose_dense_linear_path(weight_kind kind, int64_t rows, int64_t tokens,
                                                  int64_t groups, bool decode_ok, bool gemm_ok,
                                                  bool plain_gemm = false, bool repacked = false) {
  constexpr int64_t k_gemv_max_tokens = 64;
  if (repacked) {
    if (decode_ok && tokens <= k_gemv_max_tokens) return dense_linear_path::linear_decode;
    return gemm_ok ? dense_linear_path::linear_gemm : dense_linear_path::gemv;
  }
  if (tokens > k_gemv_max_tokens)
    return gemm_ok ? dense_linear_path::linear_gemm : dense_linear_path::gemv;
  constexpr int64_t k_bf16_decode_max_rows = 4096;
  const bool packed =
      kind == weight_kind::fp8_block || kind == weight_kind::mxfp4 || kind == weight_kind::nvfp4;
  const bool small_bf16 =
      kind == weight_kind::bf16 && rows <= k_bf16_decode_max_rows && tokens >= 2;
  // Large BF16 matrices (the LM head, BF16 wo_a): the GEMV to 4 tokens, then cuBLAS.
  constexpr int64_t k_bf16_gemv_max_tokens = 4;
  const bool large_bf16 =
      kind == weight_kind::bf16 && (rows > k_bf16_decode_max_rows || groups != 1);
  if (large_bf16 && tokens > k_bf16_gemv_max_tokens) {
    if (gemm_ok && plain_gemm) return dense_linear_path::linear_gemm;
    if (decode_ok) return dense_linear_path::linear_decode;
  }
  // BF16 at 2-4 tokens (bench_linear_gemm --bf16-large, session 27 l27c, H100 / H200, graphs):
  // wo_a's grouped GEMV falls to 54-80% of read while linear_decode_grouped (with its activation
  // lead) holds 78-91% (Flash T = 2 / 4: H100 27.3 / 29.2 -> 25.0 / 25.3 us, H200 21.5 / 26.8 ->
  // 18.3 / 18.8; Pro T = 4: 64.7 -> 48.9 us, 55.1 -> 35.1); at one token they tie within 3%. The
  // same for an ungrouped matrix of <= 16384 rows (a 16384 x 4096 head: the GEMV's 1024 blocks
  // are less than a wave; T = 2 / 4: H100 56.5 / 63.4 -> 47.8 / 48.1 us, H200 44.5 / 59.0 -> 33.7
  // / 33.9), not for the 129280-row heads, whose GEMV reads at 88-99% to 4 tokens (H100 ahead of
  // both others everywhere; H200 cuBLAS 1.04-1.08x ahead at 3-4 tokens, unused).
  constexpr int64_t k_bf16_gemv_rows_few = 16384;
  const bool bf16_few_rows_multi =
      kind == weight_kind::bf16 && tokens >= 2 && (groups != 1 || rows <= k_bf16_gemv_rows_few);
  if (groups != 1)  // wo_a (decode_ok: linear_decode_grouped_supported)
    return decode_ok && (packed || bf16_few_rows_multi) && tokens >= 2
               ? dense_linear_path::linear_decode
               : dense_linear_path::gemv;
  if (large_bf16 && bf16_few_rows_multi && decode_ok) return dense_linear_path::linear_decode;
  if (!(packed || small_bf16) || (tokens == 1 && !decode_ok)) return dense_linear_path::gemv;
  if (small_bf16) return decode_ok ? dense_linear_path::linear_decode : dense_linear_path::gemv;
  const bool four_bit = kind != weight_kind::fp8_block;
  const bool decode_wins = four_bit || tokens <= 16 || (tokens <= 32 && rows > 512);
  if (decode_ok && decode_wins) return dense_linear_path::linear_decode;
  if (gemm_ok) return dense_linear_path::linear_gemm;
  return decode_ok ? dense_linear_path::linear_decode : dense_linear_path::gemv;
}

// Repacked NVFP4 matrices that linear_decode takes at 1..8 tokens with bf16 activations: whether
// linear_decode_nvfp4 (the MoE decode kernel's W2 launch over one expert, linear_decode_nvfp4.h)
// takes them instead, and its launch: row tiles per block (4 / RT warps split K), W2P (two 16-row
// tiles a warp-round) and x staged in shared memory. Fitted on session 46's sweep of all 12
// launches at T = 1 / 2 / 4 / 8 (l46a) and checked at T = 1..8 (l46b; H200, bench_linear_gemm
// --nvfp4-ring-ab, graphs of 16 calls on rotated copies, against linear_decode in the same
// process): Pro wq_b (65536 x 1536) 1.09-1.29x (73.6% of read at T = 1, 65.7% at 8), Pro wo_b
// (7168 x 16384) 1.04-1.22x, Pro shared w2 (7168 x 3072) 1.10-1.18x, Flash wq_b (32768 x 1024)
// 1.05-1.13x except T = 3 (0.96x) and T = 4 (1.00x). Fewer than 3 row tiles of 16 per SM leave
// the kernel, whose 4-warp blocks split K at most 4 ways, too few warps on long rows:
// linear_decode's up-to-16-warp K split stays 1.10-1.31x ahead of the best launch on Flash wo_b
// (4096 x 8192) and Pro shared w1 / w3 (3072 x 7168) (Flash shared w2, 4096 x 2048, 16 rounds, ran
// 1.08-1.16x here but is below the 8 MiB that dense_layout.h repacks).
// Many row tiles (>= 8 per SM: the wq_b): 4 row tiles, W2P, x staged at 1-2 tokens; otherwise 1
// row tile (4 K parts), W2P at 1-2 tokens or <= 64 rounds of 128 columns (Pro wo_b at 4-8 tokens:
// 60 / 58% without, 38% with), x staged at 1 token and at 2 with >= 64 rounds (Pro shared w2 at 2
// tokens: 42% unstaged, 36% staged); staged 0.75-0.96x at 4-8 tokens everywhere; never past
// k_linear_decode_nvfp4_max_staged_bytes of shared memory. take: whether the rule prefers this
// kernel; the launch fields are filled whenever the shape is valid (a request may run it anyway).
struct linear_decode_nvfp4_choice {
  bool take = false;
  int row_tiles = 1, w2_pair = 0, stage_x = 0;
};
inline linear_decode_nvfp4_choice choose_linear_decode_nvfp4(int64_t rows, int64_t cols,
                                                             int64_t tokens, int sms) {
  linear_decode_nvfp4_choice c;
  const int64_t tiles = rows / 16, rounds = cols / 128;
  if (tokens < 1 || tokens > k_linear_decode_nvfp4_max_tokens || rows % 16 != 0 ||
      cols % 128 != 0 || sms <= 0)
    return c;
  c.take = tiles >= 3 * int64_t(sms);
  const bool pair_rows = rows % 32 == 0;
  if (tiles >= 8 * int64_t(sms)) {
    c.w2_pair = pair_rows ? 1 : 0;
    c.row_tiles = 4;
    while (c.row_tiles > 1 && rows % (16 * (c.w2_pair + 1) * c.row_tiles) != 0) c.row_tiles /= 2;
    c.stage_x = tokens <= 2 ? 1 : 0;
  } else {
    c.row_tiles = 1;
    c.w2_pair = pair_rows && (tokens <= 2 || rounds <= 64) ? 1 : 0;
    c.stage_x = tokens == 1 || (tokens == 2 && rounds >= 64) ? 1 : 0;
  }
  if (linear_decode_nvfp4_staged_bytes(tokens, cols) > k_linear_decode_nvfp4_max_staged_bytes)
    c.stage_x = 0;
  return c;
}

}  // namespace dsv4::cuda
