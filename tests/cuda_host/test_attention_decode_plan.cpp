// The attention decode plan rules (src/backends/cuda/attention_decode_plan.cpp; host logic, runs
// without a GPU). Expected values are worked out by hand from the rules as attention_decode.h
// states them, at the shapes the H200 measurements behind them used (bench/RESULTS.md, session 7
// ATTN5): a window of 128 slots, HCA compressed entries every 128 tokens, CSA top-512, 64 heads
// per CTA, 32 slots per tile, 132 SMs. A change of rule must come with new measurements and a
// change here.
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/cuda/attention_decode.h"

namespace dsv4::cuda {
namespace {

constexpr int k_sms = 132;
constexpr int64_t k_window = 128;

attention_decode_plan plan(int64_t tokens, int64_t comp, int64_t min_tiles, int64_t heads = 64) {
  return attention_decode_make_plan(tokens, heads, 512, k_window, comp, k_sms, min_tiles);
}

TEST(attention_decode_plan, hca_8k_one_token_takes_a_fused_cluster_of_eight) {
  // 128 + 64 slots = 6 tiles; split with 1 tile per CTA: 6 CTAs. Fused: clusters 1, 2, 4, 8 all
  // fit half the SMs (one head group), 8 >= 6 tiles stops; 1 tile per CTA <= 1 + slack 1.
  const attention_decode_plan p = plan(1, 64, 1);
  EXPECT_TRUE(p.fused);
  EXPECT_EQ(p.splits, 8);
  EXPECT_EQ(p.keys_per_split, 32);
  // The split kernels' scratch (other pools): 1 token x 8 splits x 64 heads x (512 f32 + 8).
  EXPECT_EQ(p.scratch_bytes, size_t(8 * 64) * (512 * 4 + 8));
  const attention_decode_plan s =
      attention_decode_make_split_plan(1, 64, 512, k_window, 64, k_sms, 1);
  EXPECT_FALSE(s.fused);
  EXPECT_EQ(s.splits, 6);
  EXPECT_EQ(s.keys_per_split, 32);
}

TEST(attention_decode_plan, csa_one_token_keeps_the_split) {
  // 128 + 512 = 640 slots = 20 tiles; split 20 CTAs of 1 tile; the largest cluster is 8, whose
  // CTAs would take 3 tiles > 1 + 1: split.
  const attention_decode_plan p = plan(1, 512, 1);
  EXPECT_FALSE(p.fused);
  EXPECT_EQ(p.splits, 20);
  EXPECT_EQ(p.keys_per_split, 32);
  EXPECT_FALSE(p.producer);  // 1 tile per split < 4
  EXPECT_FALSE(p.alt);
}

TEST(attention_decode_plan, hca_8k_thirty_two_tokens_takes_clusters_of_two) {
  // 32 CTA groups: clusters of 2 fill 64 <= 66 SMs, 4 would not. Split: 132 / 32 = 4 splits
  // capped by ceil(6 / 2) = 3, 2 tiles each; fused CTAs take 3 tiles <= 2 + slack 2 (>= 8 groups).
  const attention_decode_plan p = plan(32, 64, 2);
  EXPECT_TRUE(p.fused);
  EXPECT_EQ(p.splits, 2);
  EXPECT_EQ(p.keys_per_split, 3 * 32);
  EXPECT_TRUE(p.alt);  // alternate tiles measured faster in every fused shape
}

TEST(attention_decode_plan, hca_1m_one_token_halves_splits_past_64) {
  // 128 + 8192 slots = 260 tiles, 2 per split: 130 splits > 64, so twice the minimum: 65 splits of
  // 4 tiles, the warp-specialized kernel (>= 4 tiles); fused CTAs would take 33 tiles: split.
  const attention_decode_plan p = plan(1, 8192, 2);
  EXPECT_FALSE(p.fused);
  EXPECT_EQ(p.splits, 65);
  EXPECT_EQ(p.keys_per_split, 4 * 32);
  EXPECT_TRUE(p.producer);
  EXPECT_TRUE(p.alt);  // alternate tiles per consumer warpgroup where the producer kernel runs
}

TEST(attention_decode_plan, one_split_folds_the_combine) {
  // Pro heads (2 groups) at 64 tokens: 132 / 128 = 1 split of 260 tiles (HCA 1M): the producer
  // kernel writes the output itself (plan.fold). 32 tokens of one group: 4 splits, combine kept.
  const attention_decode_plan pro = plan(64, 8192, 2, 128);
  EXPECT_FALSE(pro.fused);
  EXPECT_EQ(pro.splits, 1);
  EXPECT_TRUE(pro.producer);
  EXPECT_TRUE(pro.fold);
  const attention_decode_plan flash = plan(32, 8192, 2);
  EXPECT_EQ(flash.splits, 4);
  EXPECT_FALSE(flash.fold);
  // One split of fewer than 4 tiles (64 window slots: 2; the synchronous kernel): no fold.
  const attention_decode_plan small = attention_decode_make_split_plan(64, 128, 512, 64, 0, k_sms);
  EXPECT_EQ(small.splits, 1);
  EXPECT_FALSE(small.producer);
  EXPECT_FALSE(small.fold);
}

TEST(attention_decode_plan, combine_rows_up_to_8_splits_and_partials_in_l2_with_alt) {
  // HCA 1M T=32: 4 splits of 65 tiles: the row combine, partials kept in L2 (alt).
  const attention_decode_plan t32 = plan(32, 8192, 2);
  EXPECT_EQ(t32.splits, 4);
  EXPECT_TRUE(t32.combine_rows);
  EXPECT_TRUE(t32.partials_l2);
  // HCA 1M T=16: 8 splits, row combine; T=8: 16 splits, the block combine (measured faster).
  EXPECT_EQ(plan(16, 8192, 2).splits, 8);
  EXPECT_TRUE(plan(16, 8192, 2).combine_rows);
  const attention_decode_plan t8 = plan(8, 8192, 2);
  EXPECT_EQ(t8.splits, 16);
  EXPECT_FALSE(t8.combine_rows);
  EXPECT_TRUE(t8.partials_l2);
  // Flash CSA T=1: 20 one-tile splits on the synchronous kernel: no alt, so no L2 hints.
  const attention_decode_plan csa =
      attention_decode_make_split_plan(1, 64, 512, k_window, 512, k_sms);
  EXPECT_FALSE(csa.alt);
  EXPECT_FALSE(csa.partials_l2);
}

TEST(attention_decode_plan, default_tiles_per_split_follow_the_step_size) {
  // min_tiles 0 (the default the engine passes): 1 for one token with <= 2048 slots, else 2.
  // HCA 8K T=1 (192 slots): the 6-CTA split of 1 tile each, so the fused cluster of 8.
  EXPECT_EQ(attention_decode_make_split_plan(1, 64, 512, k_window, 64, k_sms).splits, 6);
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 64, k_sms).splits, 8);
  // Flash CSA T=1 (640 slots): 20 splits of 1 tile, split kept.
  const attention_decode_plan csa = attention_decode_make_plan(1, 64, 512, k_window, 512, k_sms);
  EXPECT_FALSE(csa.fused);
  EXPECT_EQ(csa.splits, 20);
  // HCA 1M T=1 (8320 slots > 2048): 2 tiles minimum, doubled past 64 splits: 65 of 4 tiles.
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 8192, k_sms).splits, 65);
  // Two tokens with few slots: 2 tiles per split (HCA 8K T=2: 3 splits of 2; the fused cluster of
  // 8 then gives its CTAs 1 tile <= 2 + 1).
  EXPECT_EQ(attention_decode_make_split_plan(2, 64, 512, k_window, 64, k_sms).splits, 3);
}

TEST(attention_decode_plan, fused_off_gives_the_split_plan) {
  const attention_decode_plan p =
      attention_decode_make_plan(1, 64, 512, k_window, 64, k_sms, 1, /*fused=*/0);
  EXPECT_FALSE(p.fused);
  EXPECT_EQ(p.splits, 6);
}

TEST(attention_decode_plan, invalid_shapes_and_clusters_give_no_plan) {
  EXPECT_EQ(attention_decode_make_plan(1, 64, 256, k_window, 64, k_sms).splits, 0);
  EXPECT_EQ(attention_decode_make_plan(0, 64, 512, k_window, 64, k_sms).splits, 0);
  EXPECT_EQ(attention_decode_make_plan(1, 0, 512, k_window, 64, k_sms).splits, 0);
  EXPECT_EQ(attention_decode_make_fused_plan(1, 64, 512, k_window, 64, 3).splits, 0);
  EXPECT_EQ(attention_decode_make_fused_plan(1, 64, 512, k_window, 64, 32).splits, 0);
  EXPECT_EQ(attention_decode_make_fused_plan(1, 64, 512, k_window, 64, 0).splits, 0);
  // 16 is accepted when asked for explicitly (never picked by the plan).
  const attention_decode_plan p = attention_decode_make_fused_plan(2, 128, 512, k_window, 64, 16);
  EXPECT_EQ(p.splits, 16);
  EXPECT_EQ(p.keys_per_split, 32);  // 6 tiles over 16 CTAs: the last 10 get none
  EXPECT_TRUE(p.fused);
}

}  // namespace
}  // namespace dsv4::cuda
