// Which kernel takes a linear with FP8 block-scaled weights and an FP8-quantized input (official
// precision mode, cuda_ops::linear_fp8_input), from host-known shapes only (token count, matrix
// dims) and the device class, so a decode step takes the same path every time and can be
// graph-captured. Order: linear_w8a8_wgmma, then cuBLASLt's block-scaled matmul, then
// linear_decode_fp8act (W8A8 on mma.sync), else linear() (linear_dispatch.h). These are the
// measured rules; the engine's environment overrides (DSV4_W8A8_WGMMA_TOKENS,
// DSV4_FP8_CUBLASLT_TOKENS) stay in cuda_ops_linear.cpp. bench_linear_gemm's route columns and
// tests/cuda_host/test_linear_fp8_dispatch.cpp read the same functions.
#pragma once

#include <cstdint>

#include "backends/cuda/device_info.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_w8a8_wgmma.h"

namespace dsv4::cuda {

// Up to 8 tokens, where linear_decode_fp8act beat linear_decode on every DeepSeek-V4 FP8
// projection (H200, bench/RESULTS.md session 5: 1.0-1.13x, e.g. Pro wq_b T = 1 28.6 vs 31.4 us);
// at 16-32 tokens it won on some shapes and lost on others (its 2- and 4-n-tile kernels run 8
// warps a block).
// From 9 to 32 tokens (two and four n-tiles) it also beat linear_decode and cuBLASLt on the
// projections of few rows and long rows (H200, bench_linear_gemm --fp8-cublaslt, session 24
// LIN14, T = 9 / 16 / 32, us): Flash wq_a (1024 x 4096) 6.5 / 6.6 / 10.7 -> 5.9 / 5.9 / 7.1, Flash
// shared w13 (2048 x 4096) 6.9 / 7.2 / 11.2 -> 6.5 / 6.6 / 8.7, Pro wq_a (1536 x 7168) 9.2 / 9.7 /
// 16.2 -> 8.5 / 9.1 / 11.4; it lost on the short rows of the shared w2 (Flash 4096 x 2048: 6.3 ->
// 7.8 at T = 9) and the larger matrices, which keep linear_decode or take cuBLASLt. And up to 16
// tokens on the >= 64 MiB matrices of short rows (Pro wq_b, 65536 x 1536, T = 9 / 16): H200
// (lead l24h, before the two-n-tile lead) 35.1 / 36.0 us against cuBLASLt's 38.8 / 45.2 and
// linear_decode's 47.3 / 49.0; H100 (l24j) 42.5 / 43.4 against 48.5 / 45.6 and 53.2 / 54.6 (at 32
// tokens cuBLASLt wins: 42.9 vs 48.2). With its activation lead at two n-tiles (session 24 l24l;
// linear_decode_fp8act_default_plan) it beat both from 9 to 16 tokens on every measured projection
// (H200, T = 9 / 16, us, W8A8 / the best other): Flash wq_b 13.7 / 13.9 vs cuBLASLt 19.6 / 15.1,
// Flash wo_b 16.6 / 17.2 vs linear_decode 18.8 / 19.0, Pro shared w13 13.5 / 13.6 vs 15.9 / 16.4,
// Pro shared w2 11.7 / 12.0 vs 13.2 / 13.5, Pro wq_a 7.3 / 7.5 vs 9.4 / 10.0 (l24m, one process:
// Pro wq_b 34.1 / 35.0 vs cuBLASLt 38.6 / 44.7); Pro wo_b ties cuBLASLt on the H200 (42.3 / 43.0
// vs 42.5 / 41.1) and wins on the H100 (48.1 / 48.2 vs 53.9 / 52.3, l24m). Not for the short rows
// of the Flash shared w2 (4096 x 2048: 7.8 / 8.1 vs linear_decode 6.4 / 6.4), which keep
// linear_decode.
inline bool fp8act_wins(int64_t T, int64_t rows, int64_t cols) {
  constexpr int64_t k_max_tokens = 8;
  const bool long_rows_small = rows <= 2048 && cols >= 4096;
  const bool short_rows_small = rows <= 4096 && cols <= 2048;
  return T >= 1 &&
         (T <= k_max_tokens || (T <= k_linear_decode_fp8act_max_tokens && long_rows_small) ||
          (T <= 16 && !short_rows_small));
}

// cuBLASLt's block-scaled FP8 matmul (linear_fp8_cublaslt.h) where it beat the path linear()
// takes (H200, bench_linear_gemm --fp8-cublaslt, session 24 LIN14, first of two processes that
// agreed within a few %; engine / cuBLASLt time, bf16 x). On the >= 32 MiB matrices linear_decode
// reads 37-50% of the HBM ceiling at 9-32 tokens and linear_gemm (BF16 expansion + cuBLAS)
// 13-16% from 33, cuBLASLt 39-68%; but cuBLASLt costs 15-16 us at least (Flash wq_a, 4 MiB, at
// every T from 8 to 128), so small matrices keep the engine's kernels.
//  * T >= 33, >= 8 MiB of FP8 (T = 64 / 128): Flash wq_b 3.04 / 3.26x, wo_b 2.81 / 2.74x,
//    shared w13 (8 MiB) 1.08 / 1.11x, w2 1.45 / 1.53x; Pro wq_a 1.20 / 1.22x, wq_b 4.21 / 4.57x,
//    wo_b 4.63 / 4.38x (512 / 1024 tokens: 2.19 / 1.75x), shared w13 1.92 / 1.82x, w2 2.24 /
//    2.35x; Flash wq_a (4 MiB) lost (0.77 / 0.79x).
//  * 16-32 tokens, >= 32 MiB (T = 16 / 32): Flash wq_b 1.15 / 1.19x, wo_b 1.09 / 1.18x, Pro wq_b
//    1.08 / 1.23x, wo_b 1.65 / 1.67x; the 21 MiB Pro shared experts tied or won a little
//    (0.99-1.16x), Pro wq_a tied at 32 (1.01x), smaller matrices lost (0.43-0.63x at T = 16).
//  * 9-15 tokens, >= 64 MiB (T = 9): Pro wq_b 1.18x, wo_b 1.57x; Flash wq_b / wo_b lost (0.86 /
//    0.98x).
//  * Not above 1024 tokens (not measured); not at <= 8 tokens, where linear_decode_fp8act won
//    everywhere (cuBLASLt 0.27-0.83x).
inline bool fp8_cublaslt_wins(int64_t T, int64_t rows, int64_t cols) {
  constexpr int64_t k_mib = int64_t(1) << 20;
  const int64_t bytes = rows * cols;  // one byte per FP8 weight
  if (T > 1024) return false;
  if (T >= 33) return bytes >= 8 * k_mib;
  if (T >= 16) return bytes >= 32 * k_mib;
  return T >= 9 && bytes >= 64 * k_mib;
}

// linear_w8a8_wgmma (wgmma, one weight pass for all tokens) where it beat the path below
// (takes_fp8act, then cuBLASLt, then linear()): H100, bench_linear_gemm --w8a8-wgmma and
// --w8a8-wgmma-sweep, session 26 call w8a8w r1 (one process each, bf16 x / y, graphs of 16 calls on
// weights rotated past L2; wgmma at linear_w8a8_wgmma_default_plan's K split; path / wgmma, us):
//  * 9-16 tokens, >= 20 MiB, except few long rows (T = 9 / 16): Flash wq_b 15.6 / 15.7 -> 14.0 /
//    14.1 (78% of read), Pro wq_b 40.2 / 41.2 -> 36.3 / 37.2 (90 / 88%), Pro wo_b 47.3 / 47.7 ->
//    44.3 / 44.6 (86%), Pro shared w13 14.3 / 14.6 -> 13.0 / 13.0, w2 12.5 / 12.7 -> 10.3 / 10.5
//    (all against linear_decode_fp8act); Flash wo_b (4096 x 8192) kept it: 17.7 / 18.3 vs 17.9 /
//    19.4 (its K split costs a partial-sum round trip the mma.sync kernel avoids).
//  * 17-32 tokens, >= 20 MiB (T = 17 / 32, against cuBLASLt or linear_decode): Flash wq_b 18.7 /
//    17.5 -> 14.8 / 15.2, wo_b 21.1 / 19.7 -> 17.7 / 18.6, Pro wq_b 49.9 / 46.6 -> 37.4 / 38.2,
//    wo_b 54.1 / 53.0 -> 45.7 / 46.5, shared w13 16.9 / 17.1 -> 14.5 / 14.9, w2 14.6 / 15.8 -> 11.5
//    / 12.1; the smaller matrices keep linear_decode_fp8act (Flash wq_a 6.8 / 7.2 vs 8.0 / 8.0; Pro
//    wq_a won at 32 only, 11.7 -> 10.4, not taken).
//  * 33-64 tokens, >= 4 MiB (measured at 64; against cuBLASLt or linear_gemm): Flash wq_b 18.6 ->
//    17.8, wq_a 12.7 -> 10.0, shared w13 15.7 -> 12.0, w2 10.6 -> 10.0, Pro wq_b 49.5 -> 40.7, wo_b
//    56.0 -> 53.3, wq_a 16.4 -> 13.6; ties: Flash wo_b 20.9 -> 20.4, Pro shared w13 17.4 -> 16.9,
//    w2 14.1 -> 14.3. Flash wkv (2 MiB) keeps linear_gemm (9.1 vs 9.8).
//  * Not above 64 tokens: at 128 cuBLASLt was as fast or faster (Flash wq_b 18.9 vs 21.4, Pro wq_b
//    48.2 vs 49.1; the kernel's widths stop at 64).
// H200 (session 37, call l37a, bench_linear_gemm --w8a8-wgmma, every Flash / Pro projection at 9 /
// 16 / 17 / 32 / 48 / 64 tokens, two processes, bench/RESULTS.md): the same rule wins everywhere it
// applies (Pro wq_b 27.9-33.3 us against 33.7-52.0, Pro wo_b 36.8-42.1 against 41.7-44.9, Flash
// wq_b 12.6-15.4 against 13.6-16.7), but the Flash wo_b exclusion loses there: W8A8 16.4 / 17.1 us
// at 9 / 16 tokens against this kernel's 15.7 / 16.0 (the device streams 1.44x the bytes per SM
// cycle, so the mma.sync kernel's issue-bound rounds fall behind), so it applies only below
// k_rich_read_bytes_per_sm_cycle (device_info.h). Left as measured on the H200 (ties or <= 3%
// against the rule): Flash shared w13 at 17-32 tokens (W8A8 8.3-8.8 vs 8.4-8.8), Pro shared w2 at
// 64 (cuBLASLt 13.8 vs 14.2), Flash wkv at 48 (linear_gemm 9.2 vs 9.2).
inline bool w8a8_wgmma_wins(int64_t T, int64_t rows, int64_t cols, double read_bytes_per_sm_cycle) {
  constexpr int64_t k_mib = int64_t(1) << 20;
  const int64_t bytes = rows * cols;  // one byte per FP8 weight
  if (T < 9 || T > k_linear_w8a8_wgmma_max_tokens) return false;
  if (T >= 33) return bytes >= 4 * k_mib;
  if (T >= 17) return bytes >= 20 * k_mib;
  const bool rich = bandwidth_rich(read_bytes_per_sm_cycle);
  return bytes >= 20 * k_mib && (rich || !(rows <= 4096 && cols >= 8192));
}

enum class fp8_input_path { w8a8_wgmma, cublaslt, fp8act, linear };

// The engine's choice. *_ok: the kernel supports this matrix (linear_w8a8_wgmma_supported,
// cuBLASLt scales prepared, linear_decode_fp8act_supported); the override flags stand for the
// environment windows when set (cuda_ops_linear.cpp) and the rules above otherwise.
inline fp8_input_path choose_fp8_input_path(bool wgmma_wins, bool wgmma_ok, bool cublaslt_wins,
                                            bool cublaslt_ok, bool fp8act_takes, bool fp8act_ok) {
  if (wgmma_wins && wgmma_ok) return fp8_input_path::w8a8_wgmma;
  const bool fp8act = fp8act_takes && fp8act_ok;
  if (cublaslt_ok && !fp8act && cublaslt_wins) return fp8_input_path::cublaslt;
  if (fp8act) return fp8_input_path::fp8act;
  return fp8_input_path::linear;
}

}  // namespace dsv4::cuda
