// The attention decode plan rules (src/backends/cuda/attention_decode_plan.cpp; host logic, runs
// without a GPU). Expected values are worked out by hand from the rules as attention_decode.h
// states them, at the shapes the measurements behind them used (bench/RESULTS.md; ATTN12 for the
// split rules, H100): a window of 128 slots, HCA compressed entries every 128
// tokens, CSA top-512, 64 heads per CTA, 32 slots per tile, 132 SMs. A change of rule must come
// with new measurements and a change here.
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

TEST(attention_decode_plan, hca_8k_one_token_takes_one_tile_splits) {
  // 128 + 64 slots = 6 tiles, 6 tiles of step work <= 48: 6 splits of 1 tile on the
  // warp-specialized kernel (alternate tiles, partials in L2, the row combine
  // with <= 8 splits).
  const attention_decode_plan p = plan(1, 64, 0);
  EXPECT_EQ(p.splits, 6);
  EXPECT_EQ(p.keys_per_split, 32);
  EXPECT_TRUE(p.producer);
  EXPECT_TRUE(p.alt);
  EXPECT_TRUE(p.partials_l2);
  EXPECT_TRUE(p.combine_rows);
  EXPECT_TRUE(p.pdl);
  EXPECT_FALSE(p.fold);
  // 1 token x 6 splits x 64 heads x (512 f32 + 8).
  EXPECT_EQ(p.scratch_bytes, size_t(6 * 64) * (512 * 4 + 8));
}

TEST(attention_decode_plan, one_token_csa_takes_one_tile_splits_on_the_producer_kernel) {
  // 128 + 512 = 640 slots = 20 tiles <= 48: 20 splits of 1 tile, the block combine (> 8 splits).
  const attention_decode_plan p = plan(1, 512, 0);
  EXPECT_EQ(p.splits, 20);
  EXPECT_EQ(p.keys_per_split, 32);
  EXPECT_TRUE(p.producer);
  EXPECT_TRUE(p.alt);
  EXPECT_FALSE(p.combine_rows);
  // Pro CSA T=1 (128 heads: 2 groups, 1152 slots = 36 tiles): 72 tiles of work > 48, so 2 tiles
  // per split: 18 splits.
  const attention_decode_plan pro = plan(1, 1024, 0, 128);
  EXPECT_EQ(pro.splits, 18);
  EXPECT_EQ(pro.keys_per_split, 2 * 32);
}

TEST(attention_decode_plan, short_multi_token_splits_stop_at_eight) {
  // Flash CSA T=4: 80 tiles of work > 48: 2 per split, 132 / 4 = 33 capped by 10 splits; 10 > 8
  // and ceil(20 / 8) = 3 <= 6: 7 splits of 3 (row combine).
  const attention_decode_plan csa4 = plan(4, 512, 0);
  EXPECT_EQ(csa4.splits, 7);
  EXPECT_EQ(csa4.keys_per_split, 3 * 32);
  EXPECT_TRUE(csa4.combine_rows);
  // HCA 128K T=8 (36 tiles): 16 splits -> 8 of 5.
  const attention_decode_plan hca128 = plan(8, 1024, 0);
  EXPECT_EQ(hca128.splits, 8);
  EXPECT_EQ(hca128.keys_per_split, 5 * 32);
  // Fewer than 8 rows, the cap adding more than one tile per split: uncapped. HCA 128K T=2 / T=4
  // (36 tiles, 2 per split): 18 splits of 2, not 8 of 5; Flash CSA T=2 (20 tiles of 1): 20.
  EXPECT_EQ(plan(2, 1024, 0).splits, 18);
  EXPECT_EQ(plan(4, 1024, 0).splits, 18);
  EXPECT_EQ(plan(2, 512, 0).splits, 20);
  // Pro CSA T=2 (4 rows of 36 tiles): 18 of 2; Pro CSA T=4 (8 rows): 8 of 5.
  EXPECT_EQ(plan(2, 1024, 0, 128).splits, 18);
  EXPECT_EQ(plan(4, 1024, 0, 128).splits, 8);
  // HCA 1M T=8 (260 tiles): ceil(260 / 8) = 33 > 6, 16 splits of 17 kept (block combine, 512
  // rows).
  const attention_decode_plan hca1m = plan(8, 8192, 0);
  EXPECT_EQ(hca1m.splits, 16);
  EXPECT_EQ(hca1m.keys_per_split, 17 * 32);
  EXPECT_FALSE(hca1m.combine_rows);
  // An explicit minimum keeps the plain rule: HCA 8K T=32, 2 tiles: 132 / 32 = 4 capped by 3.
  const attention_decode_plan hca8k = plan(32, 64, 2);
  EXPECT_EQ(hca8k.splits, 3);
  EXPECT_EQ(hca8k.keys_per_split, 2 * 32);
}

TEST(attention_decode_plan, hca_1m_one_token_halves_splits_past_64) {
  // 128 + 8192 slots = 260 tiles > 48, 2 per split: 130 splits > 64, so twice the minimum: 65
  // splits of 4 tiles.
  const attention_decode_plan p = plan(1, 8192, 0);
  EXPECT_EQ(p.splits, 65);
  EXPECT_EQ(p.keys_per_split, 4 * 32);
  EXPECT_TRUE(p.producer);
  EXPECT_TRUE(p.alt);
}

TEST(attention_decode_plan, one_split_folds_the_combine) {
  // Pro heads (2 groups) at 64 tokens: 132 / 128 = 1 split of 260 tiles (HCA 1M): the producer
  // kernel writes the output itself (plan.fold). 32 tokens of one group: 4 splits, combine kept.
  const attention_decode_plan pro = plan(64, 8192, 2, 128);
  EXPECT_EQ(pro.splits, 1);
  EXPECT_TRUE(pro.producer);
  EXPECT_TRUE(pro.fold);
  const attention_decode_plan flash = plan(32, 8192, 2);
  EXPECT_EQ(flash.splits, 4);
  EXPECT_FALSE(flash.fold);
  // One split of 2 tiles (64 window slots, 64 tokens x 2 groups): the producer kernel folds too.
  const attention_decode_plan small = attention_decode_make_plan(64, 128, 512, 64, 0, k_sms);
  EXPECT_EQ(small.splits, 1);
  EXPECT_TRUE(small.producer);
  EXPECT_TRUE(small.fold);
}

TEST(attention_decode_plan, combine_rows_up_to_8_splits_and_partials_in_l2) {
  // HCA 1M T=32: 4 splits of 65 tiles: the row combine, partials kept in L2.
  const attention_decode_plan t32 = plan(32, 8192, 2);
  EXPECT_EQ(t32.splits, 4);
  EXPECT_TRUE(t32.combine_rows);
  EXPECT_TRUE(t32.partials_l2);
  // HCA 1M T=16: 8 splits, row combine; T=8: 16 splits over 512 rows (one wave of the block
  // combine at 4 CTAs per SM): the block combine; T=12: 11 splits over 768 rows: the row combine
  // (since session 33); Flash CSA T=1's 20 splits the block combine.
  EXPECT_EQ(plan(16, 8192, 2).splits, 8);
  EXPECT_TRUE(plan(16, 8192, 2).combine_rows);
  const attention_decode_plan t8 = plan(8, 8192, 2);
  EXPECT_EQ(t8.splits, 16);
  EXPECT_FALSE(t8.combine_rows);
  const attention_decode_plan t12 = plan(12, 8192, 0);
  EXPECT_EQ(t12.splits, 11);
  EXPECT_TRUE(t12.combine_rows);
  EXPECT_FALSE(plan(1, 512, 0).combine_rows);
  EXPECT_TRUE(t8.partials_l2);
  // bf16 partial rows with 2-64 splits: not with one split (no combine) nor HCA 1M T=1's 65.
  EXPECT_TRUE(t32.partials_bf16);
  EXPECT_TRUE(t8.partials_bf16);
  EXPECT_FALSE(attention_decode_make_plan(64, 128, 512, 64, 0, k_sms).partials_bf16);
  const attention_decode_plan t1 = attention_decode_make_plan(1, 64, 512, k_window, 8192, k_sms);
  EXPECT_EQ(t1.splits, 65);
  EXPECT_FALSE(t1.partials_bf16);
}

TEST(attention_decode_plan, two_rows_of_long_context_work_take_tma_length_splits) {
  // HCA 1M (128 + 8192 slots = 260 tiles): Flash T=2 and Pro T=1 (two (token, head group) rows)
  // would take 66 -> 65 splits of 4 tiles; past 64 splits with two rows they take the TMA key
  // tiles' minimum, 8 tiles: 33 splits (H200 l32f). Flash T=1 (one row) keeps 65 of 4.
  const attention_decode_plan t2 = attention_decode_make_plan(2, 64, 512, k_window, 8192, k_sms);
  EXPECT_EQ(t2.splits, 33);
  EXPECT_EQ(t2.keys_per_split, k_attention_decode_key_tma_min_tiles * 32);
  const attention_decode_plan pro = attention_decode_make_plan(1, 128, 512, k_window, 8192, k_sms);
  EXPECT_EQ(pro.splits, 33);
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 8192, k_sms).splits, 65);
  // With an explicit tile minimum the rule before it: ceil(260 / (2 x 2)) = 65.
  EXPECT_EQ(attention_decode_make_plan(2, 64, 512, k_window, 8192, k_sms, 2).splits, 65);
}

TEST(attention_decode_plan, long_splits_below_the_tma_minimum_take_it_past_32_splits) {
  // HCA 1M T=3: 132 / 3 = 44 splits of 6 tiles; 33 splits of 8 still fill 99 of 132 SMs: 33 x 8.
  const attention_decode_plan t3 = attention_decode_make_plan(3, 64, 512, k_window, 8192, k_sms);
  EXPECT_EQ(t3.splits, 33);
  EXPECT_EQ(t3.keys_per_split, k_attention_decode_key_tma_min_tiles * 32);
  // T=4 already has 33 of 8; T=6 22 of 12 (at most 32 splits: unchanged).
  EXPECT_EQ(attention_decode_make_plan(4, 64, 512, k_window, 8192, k_sms).splits, 33);
  EXPECT_EQ(attention_decode_make_plan(6, 64, 512, k_window, 8192, k_sms).splits, 22);
  // HCA 128K T=1 (36 one-tile splits): 5 splits of 8 would leave most SMs idle: unchanged.
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 1024, k_sms).splits, 36);
  // HCA 512K T=3 (132 tiles, 44 splits of 3): 17 of 8 x 3 rows = 51 CTAs: unchanged.
  EXPECT_EQ(attention_decode_make_plan(3, 64, 512, k_window, 4096, k_sms).splits, 44);
}

TEST(attention_decode_plan, bf16_partials_up_to_64_splits) {
  // 33 splits (Flash HCA 1M T=2 / T=4, Pro T=1) and HCA 128K T=1's 36: bf16 partial rows; HCA 1M
  // T=1's 65 keep f32.
  EXPECT_TRUE(attention_decode_make_plan(2, 64, 512, k_window, 8192, k_sms).partials_bf16);
  EXPECT_TRUE(attention_decode_make_plan(4, 64, 512, k_window, 8192, k_sms).partials_bf16);
  EXPECT_TRUE(attention_decode_make_plan(1, 128, 512, k_window, 8192, k_sms).partials_bf16);
  const attention_decode_plan one = attention_decode_make_plan(1, 64, 512, k_window, 1024, k_sms);
  EXPECT_EQ(one.splits, 36);
  EXPECT_TRUE(one.partials_bf16);
  const attention_decode_plan t1 = attention_decode_make_plan(1, 64, 512, k_window, 8192, k_sms);
  EXPECT_EQ(t1.splits, 65);
  EXPECT_FALSE(t1.partials_bf16);
}

TEST(attention_decode_plan, default_tiles_per_split_follow_the_step_size) {
  // min_tiles 0 (the default the engine passes): 1 while tokens x groups x tiles <= 48, else 2.
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 64, k_sms).splits, 6);
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 512, k_sms).splits, 20);
  EXPECT_EQ(attention_decode_make_plan(1, 64, 512, k_window, 8192, k_sms).splits, 65);
  // HCA 8K T=2 (12 tiles of work): 6 splits of 1; T=8 (48): 6 of 1; T=32 (192): 3 of 2.
  EXPECT_EQ(attention_decode_make_plan(2, 64, 512, k_window, 64, k_sms).splits, 6);
  EXPECT_EQ(attention_decode_make_plan(8, 64, 512, k_window, 64, k_sms).splits, 6);
  EXPECT_EQ(attention_decode_make_plan(32, 64, 512, k_window, 64, k_sms).splits, 3);
}

TEST(attention_decode_plan, prefill_steps_run_in_long_one_split_chunks) {
  auto chunk = [](int64_t tokens, int64_t heads, bool fold_kernel, int sms = k_sms) {
    return attention_decode_chunk_tokens(tokens, heads, 512, k_window, 1024, sms, fold_kernel);
  };
  // Decode-sized steps: one launch, the decode plans.
  EXPECT_EQ(chunk(1, 64, true), 1);
  EXPECT_EQ(chunk(64, 128, true), 64);
  // Prefill where one-split plans fold: chunks of up to 8192 tokens, each plan one split.
  EXPECT_EQ(chunk(67, 64, true), 67);
  EXPECT_EQ(chunk(1024, 64, true), 1024);
  EXPECT_EQ(chunk(4096, 128, true), 4096);
  EXPECT_EQ(chunk(8192, 64, true), 8192);
  EXPECT_EQ(chunk(10000, 64, true), 8192);
  EXPECT_EQ(attention_decode_make_plan(1024, 64, 512, k_window, 1024, k_sms).splits, 1);
  EXPECT_TRUE(attention_decode_make_plan(1024, 64, 512, k_window, 1024, k_sms).fold);
  // No fold kernel (in-turn records: the synchronous kernel's scratch), or a chunk whose plan
  // would still split (token x head-group CTAs at most half the SMs): 64-token chunks.
  EXPECT_EQ(chunk(1024, 64, false), 64);
  EXPECT_EQ(chunk(100, 64, true, 1000), 64);
  EXPECT_EQ(chunk(66, 64, true), 64);  // 66 CTAs: 2 splits at 132 SMs
  EXPECT_EQ(chunk(100, 64, false), 64);
  // Pro heads (64-token chunks already on one split): 64-token chunks up to two waves of CTAs
  // (132 tokens x 2 head groups), one launch beyond.
  EXPECT_EQ(chunk(96, 128, true), 64);
  EXPECT_EQ(chunk(132, 128, true), 64);
  EXPECT_EQ(chunk(133, 128, true), 133);
  EXPECT_EQ(chunk(256, 128, true), 256);
  // Flash heads (64-token chunks on 2 splits + combine): one launch from 67 tokens.
  EXPECT_EQ(chunk(96, 64, true), 96);
}

TEST(attention_decode_plan, invalid_shapes_give_no_plan) {
  EXPECT_EQ(attention_decode_make_plan(1, 64, 256, k_window, 64, k_sms).splits, 0);
  EXPECT_EQ(attention_decode_make_plan(0, 64, 512, k_window, 64, k_sms).splits, 0);
  EXPECT_EQ(attention_decode_make_plan(1, 0, 512, k_window, 64, k_sms).splits, 0);
}

TEST(attention_decode_plan, combine_triggers_the_next_kernel_first_unless_block_rows_exceed_sms) {
  // The row combine always; the block combine where T * heads <= SMs: Flash CSA T=1 (20 splits,
  // block, 64 rows) yes; HCA 1M T=8 (16 splits over 512 rows: block) no; HCA 1M T=32 (rows) yes.
  const attention_decode_plan csa1 = plan(1, 512, 0);
  EXPECT_FALSE(csa1.combine_rows);
  EXPECT_TRUE(csa1.combine_trigger);
  const attention_decode_plan t8 = plan(8, 8192, 2);
  EXPECT_FALSE(t8.combine_rows);
  EXPECT_FALSE(t8.combine_trigger);
  EXPECT_TRUE(plan(32, 8192, 0).combine_trigger);
  EXPECT_FALSE(plan(4, 8192, 0, 128).combine_trigger);  // Pro T=4: 512 rows, block combine
}

}  // namespace
}  // namespace dsv4::cuda
