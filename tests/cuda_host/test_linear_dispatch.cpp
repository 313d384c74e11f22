// The dense-linear dispatch rules of src/backends/cuda/linear_dispatch.h (host logic only; runs
// without a GPU). The cases are the measured shapes its comment cites (bench/RESULTS.md, sessions
// 4 and 5): a change of rule must come with new measurements and a change here.
#include <gtest/gtest.h>

#include "backends/cuda/linear_dispatch.h"

namespace dsv4::cuda {
namespace {

constexpr auto gemv = dense_linear_path::gemv;
constexpr auto decode = dense_linear_path::linear_decode;
constexpr auto gemm = dense_linear_path::linear_gemm;

dense_linear_path pick(weight_kind k, int64_t rows, int64_t tokens, int64_t groups = 1,
                       bool decode_ok = true, bool gemm_ok = true) {
  return choose_dense_linear_path(k, rows, tokens, groups, decode_ok, gemm_ok);
}

TEST(linear_dispatch, one_token_takes_linear_decode_on_packed_weights) {
  for (int64_t rows : {512, 1024, 4096, 32768, 65536})
    for (weight_kind k : {weight_kind::fp8_block, weight_kind::nvfp4, weight_kind::mxfp4}) {
      EXPECT_EQ(pick(k, rows, 1), decode) << rows;
      EXPECT_EQ(pick(k, rows, 1, 1, false, true), gemv) << rows;  // never linear_gemm at T = 1
    }
  EXPECT_EQ(pick(weight_kind::bf16, 4096, 1), gemv);
}

TEST(linear_dispatch, few_row_fp8_matrices_take_linear_decode_to_16_tokens) {
  for (int64_t T : {2, 3, 4, 8, 16}) {
    EXPECT_EQ(pick(weight_kind::fp8_block, 1024, T), decode);  // Flash wq_a
    EXPECT_EQ(pick(weight_kind::fp8_block, 512, T), decode);   // Flash wkv
  }
  EXPECT_EQ(pick(weight_kind::fp8_block, 512, 32), gemm);     // wkv above 16 tokens
  EXPECT_EQ(pick(weight_kind::fp8_block, 1024, 32), decode);  // wq_a
}

TEST(linear_dispatch, fp8_matrices_take_linear_decode_to_32_tokens) {
  for (int64_t rows : {2048, 4096, 32768, 65536})
    for (int64_t T : {2, 4, 16, 32}) EXPECT_EQ(pick(weight_kind::fp8_block, rows, T), decode);
  for (int64_t T : {33, 64}) {
    EXPECT_EQ(pick(weight_kind::fp8_block, 32768, T), gemm);
    EXPECT_EQ(pick(weight_kind::fp8_block, 1024, T), gemm);
  }
}

TEST(linear_dispatch, four_bit_matrices_take_linear_decode_to_64_tokens) {
  for (int64_t T : {2, 16, 64}) {
    EXPECT_EQ(pick(weight_kind::nvfp4, 2048, T), decode);
    EXPECT_EQ(pick(weight_kind::mxfp4, 7168, T), decode);
  }
}

// Repacked NVFP4 matrices (dense_layout.h): linear_decode to 64 tokens (grouped wo_a at T = 1
// too), linear_gemm above, never the GEMV while either takes them.
TEST(linear_dispatch, repacked_matrices_take_linear_decode_then_linear_gemm) {
  const auto rp = [](int64_t rows, int64_t T, int64_t groups, bool decode_ok, bool gemm_ok) {
    return choose_dense_linear_path(weight_kind::nvfp4, rows, T, groups, decode_ok, gemm_ok, false,
                                    true);
  };
  for (int64_t T : {1, 2, 8, 16, 33, 64}) {
    EXPECT_EQ(rp(2048, T, 1, true, true), decode) << T;
    EXPECT_EQ(rp(8 * 1024, T, 8, true, true), decode) << T;  // wo_a
    EXPECT_EQ(rp(2048, T, 1, false, true), gemm) << T;
  }
  EXPECT_EQ(pick(weight_kind::nvfp4, 8 * 1024, 1, 8), gemv);  // the checkpoint layout's wo_a
  for (int64_t T : {65, 512, 4096}) {
    EXPECT_EQ(rp(2048, T, 1, true, true), gemm) << T;
    EXPECT_EQ(rp(8 * 1024, T, 8, true, true), gemm) << T;
  }
  EXPECT_EQ(rp(2048, 65, 1, true, false), gemv);  // refused there: the caller reports it
  EXPECT_EQ(rp(2048, 1, 1, false, false), gemv);
}

TEST(linear_dispatch, prefill_takes_linear_gemm_or_falls_back) {
  for (weight_kind k : {weight_kind::fp8_block, weight_kind::nvfp4, weight_kind::bf16})
    EXPECT_EQ(pick(k, 4096, 65), gemm);
  EXPECT_EQ(pick(weight_kind::fp8_block, 4096, 4096, 1, true, false), gemv);
}

TEST(linear_dispatch, small_bf16_matrices_take_linear_decode_from_two_tokens) {
  for (int64_t T : {2, 4, 16, 64})
    for (int64_t rows : {64, 256, 384, 1024, 4096}) {
      EXPECT_EQ(pick(weight_kind::bf16, rows, T), decode) << rows << " " << T;
      EXPECT_EQ(pick(weight_kind::bf16, rows, T, 1, false, true), gemv);  // not cuBLAS: unmeasured
    }
  EXPECT_EQ(pick(weight_kind::bf16, 256, 1), gemv);  // the GEMV wins at one token
}

TEST(linear_dispatch, f32_weights_keep_the_gemv_at_decode) {
  EXPECT_EQ(pick(weight_kind::f32, 64, 8), gemv);
  EXPECT_EQ(pick(weight_kind::f32, 129280, 16), gemv);
}

TEST(linear_dispatch, large_bf16_matrices_take_cublas_from_five_tokens) {
  const auto head = [](int64_t T, bool plain = true) {
    return choose_dense_linear_path(weight_kind::bf16, 129280, T, 1, true, true, plain);
  };
  EXPECT_EQ(head(1), gemv);            // 350 vs 388 us (H100): the GEMV at 98% of read
  EXPECT_EQ(head(4), gemv);            // 368 vs 389
  EXPECT_EQ(head(8), gemm);            // 419 vs 902 on the GEMV
  EXPECT_EQ(head(64), gemm);           // 410 vs 3912
  EXPECT_EQ(head(16, false), decode);  // f32 activations: no expansion of the head to f32
  EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 8192, 8, 8, true, true, true), gemm);
  // BF16 wo_a at 2-4 tokens and heads of <= 16384 rows: linear_decode (l27c, both GPUs).
  EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 8192, 4, 8, true, true, true), decode);
  EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 8192, 1, 8, true, true, true), gemv);
  EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 16384, 1, 1, true, true, true), gemv);
  for (int64_t T : {2, 3, 4})
    EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 16384, T, 1, true, true, true), decode);
  EXPECT_EQ(choose_dense_linear_path(weight_kind::bf16, 16384, 2, 1, false, true, true), gemv);
}

TEST(linear_dispatch, grouped_weights_take_linear_decode_from_two_or_four_tokens) {
  EXPECT_EQ(pick(weight_kind::fp8_block, 8192, 1, 8), gemv);       // wo_a, Flash FP8: GEMV 18.3 us
  EXPECT_EQ(pick(weight_kind::fp8_block, 8192, 2, 8), decode);     // 22.7 vs 26.1 us
  EXPECT_EQ(pick(weight_kind::fp8_block, 16384, 64, 16), decode);  // Pro: 178 vs 900 us
  EXPECT_EQ(pick(weight_kind::bf16, 8192, 2, 8), decode);  // BF16: 27.3 vs 25.0 us (H100, l27c)
  EXPECT_EQ(pick(weight_kind::bf16, 8192, 1, 8), gemv);
  EXPECT_EQ(pick(weight_kind::f32, 8192, 4, 8), gemv);
  EXPECT_EQ(pick(weight_kind::fp8_block, 8192, 8, 8, false, true), gemv);  // out_g % 16 != 0
  EXPECT_EQ(pick(weight_kind::fp8_block, 8192, 100, 8), gemm);             // prefill
}

TEST(linear_dispatch, unsupported_kernels_are_never_chosen) {
  EXPECT_EQ(pick(weight_kind::nvfp4, 2048, 8, 1, false, true), gemm);
  EXPECT_EQ(pick(weight_kind::fp8_block, 1024, 8, 1, true, false), decode);
  EXPECT_EQ(pick(weight_kind::fp8_block, 1024, 8, 1, false, false), gemv);
  EXPECT_EQ(pick(weight_kind::fp8_block, 32768, 8, 1, false, true), gemm);
}

}  // namespace
// choose_linear_decode_nvfp4 on an H200 (132 SMs): the launches session 46 measured best
// (l46a) on the model shapes, and linear_decode kept where it won.
TEST(linear_dispatch, nvfp4_ring_rule_takes_the_measured_launches) {
  constexpr int sms = 132;
  const auto check = [](linear_decode_nvfp4_choice c, bool take, int rt, int w2p, int st) {
    EXPECT_EQ(c.take, take);
    EXPECT_EQ(c.row_tiles, rt);
    EXPECT_EQ(c.w2_pair, w2p);
    EXPECT_EQ(c.stage_x, st);
  };
  // wq_b (Pro 65536 x 1536, Flash 32768 x 1024): 4 row tiles, W2P, staged to 2 tokens.
  check(choose_linear_decode_nvfp4(65536, 1536, 1, sms), true, 4, 1, 1);
  check(choose_linear_decode_nvfp4(65536, 1536, 2, sms), true, 4, 1, 1);
  check(choose_linear_decode_nvfp4(65536, 1536, 4, sms), true, 4, 1, 0);
  check(choose_linear_decode_nvfp4(32768, 1024, 8, sms), true, 4, 1, 0);
  // Pro wo_b (7168 x 16384, 128 rounds): W2P and staged to 2 tokens, plain from 4.
  check(choose_linear_decode_nvfp4(7168, 16384, 1, sms), true, 1, 1, 1);
  check(choose_linear_decode_nvfp4(7168, 16384, 2, sms), true, 1, 1, 1);
  check(choose_linear_decode_nvfp4(7168, 16384, 4, sms), true, 1, 0, 0);
  check(choose_linear_decode_nvfp4(7168, 16384, 8, sms), true, 1, 0, 0);
  // Pro shared w2 (7168 x 3072, 24 rounds): W2P throughout, staged at 1 token only.
  check(choose_linear_decode_nvfp4(7168, 3072, 1, sms), true, 1, 1, 1);
  check(choose_linear_decode_nvfp4(7168, 3072, 2, sms), true, 1, 1, 0);
  check(choose_linear_decode_nvfp4(7168, 3072, 8, sms), true, 1, 1, 0);
  // Fewer than 3 row tiles per SM: linear_decode (Flash wo_b, Pro shared w1 / w3).
  EXPECT_FALSE(choose_linear_decode_nvfp4(4096, 8192, 1, sms).take);
  EXPECT_FALSE(choose_linear_decode_nvfp4(3072, 7168, 2, sms).take);
  // Outside the kernel: 9 tokens, ragged shapes. Rows that allow no W2P (odd row tiles) or fewer
  // row tiles a block: the largest launch that divides them.
  EXPECT_FALSE(choose_linear_decode_nvfp4(65536, 1536, 9, sms).take);
  EXPECT_FALSE(choose_linear_decode_nvfp4(65536, 1500, 1, sms).take);
  check(choose_linear_decode_nvfp4(16 * 2111, 1024, 1, sms), true, 1, 0, 1);
  check(choose_linear_decode_nvfp4(32 * 1057, 1024, 1, sms), true, 1, 1, 1);
  check(choose_linear_decode_nvfp4(64 * 1057, 1024, 1, sms), true, 2, 1, 1);
  check(choose_linear_decode_nvfp4(16 * 601, 1024, 1, sms), true, 1, 0, 1);
  // Staged rows past the shared-memory cap stay in global memory.
  EXPECT_EQ(choose_linear_decode_nvfp4(7168, 65536, 1, sms).stage_x, 1);  // 128 KB: at the cap
  EXPECT_EQ(choose_linear_decode_nvfp4(7168, 65536 + 128, 1, sms).stage_x, 0);
}

}  // namespace dsv4::cuda
