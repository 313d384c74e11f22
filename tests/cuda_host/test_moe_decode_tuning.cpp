// The row tiles per block of the decode-path MoE GEMM launches (moe_decode_tuning.h). Oracles:
// the A/B codes and the old rule as moe_decode.h states them, and the row tiles that the
// measurements chose for the model shapes (MOE7: RT 4 from T = 16; MOE15, forced row tiles on an
// H200: RT 2 for W1/W3 at Flash and Pro T = 1, RT 4 for W2), with 4 resident blocks per SM at
// every RT on 132 SMs (the ring kernels' launch bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/moe_decode_tuning.h"

namespace dsv4::cuda::moe_decode_tuning {
namespace {

constexpr int k_sms = 132;
constexpr int k_four[3] = {4, 4, 4};

struct shape {
  int64_t hidden, inter, experts, top_k;
};
constexpr shape k_flash{4096, 2048, 256, 6}, k_pro{7168, 3072, 384, 6};

// moe_decode.cu's upper bound on the chunk count: full chunks plus one partial chunk per expert.
int64_t chunks_bound(int64_t pairs, int64_t experts) {
  return pairs / k_chunk_pairs + std::min(pairs, experts);
}

// read_bytes_per_sm_cycle: 0 (unknown) and 12.8 (H100 SXM) are the H100's class, 18.4 (H200) the
// bandwidth-rich one (device_info.h).
constexpr double k_h100 = 12.8, k_h200 = 18.4;

// w2_pair (W2 only): W2P, whose launch counts 32-row warp tiles as 16-row ones (moe_decode.cu).
int rt_of(bool up, const shape& s, int64_t tokens, int code = 0, double bytes_per_cycle = 0.0,
          bool four_slots = false, bool w2_pair = false, bool mxfp4 = false) {
  const int64_t rows = up ? s.inter : s.hidden, kdim = up ? s.hidden : s.inter;
  return pick_rt(up, w2_pair ? rows / 2 : rows, kdim / 128, tokens, s.top_k, s.experts,
                 chunks_bound(tokens * s.top_k, s.experts), k_sms, k_four, code, bytes_per_cycle,
                 four_slots, w2_pair, mxfp4);
}

TEST(moe_decode_tuning, ab_codes_force_the_row_tiles) {
  for (const int u : {1, 2, 4})
    for (const int d : {1, 2, 4}) {
      const int code = -(10 * u + d);
      EXPECT_EQ(rt_of(true, k_pro, 4, code), u) << code;
      EXPECT_EQ(rt_of(false, k_pro, 4, code), d) << code;
    }
  // A digit that is no row tile count leaves that launch to the model.
  EXPECT_EQ(rt_of(true, k_pro, 1, -4), rt_of(true, k_pro, 1));
  EXPECT_EQ(rt_of(false, k_pro, 1, -30), rt_of(false, k_pro, 1));
}

TEST(moe_decode_tuning, old_rule_takes_the_largest_rt_with_enough_blocks) {
  // 2048 rows, 10 chunk slots: 320 blocks at RT 4, 640 at RT 2, 1280 at RT 1.
  const auto rt = [](int n) { return pick_rt(true, 2048, 32, 4, 6, 256, 10, k_sms, k_four, n); };
  EXPECT_EQ(rt(1), 4);  // 320 >= 132
  EXPECT_EQ(rt(2), 4);  // 320 >= 264
  EXPECT_EQ(rt(4), 2);  // 320 < 528 <= 640
  EXPECT_EQ(rt(8), 1);  // 640 < 1056
}

TEST(moe_decode_tuning, model_shapes_take_the_measured_row_tiles) {
  // MOE15: one-wave W1/W3 grids at T = 1 balance the busiest SM (Pro: 288 blocks at RT 4 on 132
  // SMs left 24 SMs a third block).
  EXPECT_EQ(rt_of(true, k_pro, 1), 2);
  EXPECT_EQ(rt_of(true, k_flash, 1), 2);
  EXPECT_EQ(rt_of(false, k_pro, 1), 4);
  EXPECT_EQ(rt_of(false, k_flash, 1), 4);
  // -99: the model without that balance (before MOE15) keeps RT 4 for Pro's W1/W3.
  EXPECT_EQ(rt_of(true, k_pro, 1, -99), 4);
  // MOE7: from T = 16 every launch takes RT 4.
  for (const int64_t t : {16, 64})
    for (const shape& s : {k_flash, k_pro}) {
      EXPECT_EQ(rt_of(true, s, t), 4) << t;
      EXPECT_EQ(rt_of(false, s, t), 4) << t;
    }
}

TEST(moe_decode_tuning, ties_take_the_smaller_rt_on_the_bandwidth_rich_class) {
  // Pro T = 1's W2 ties RT 4 and RT 2 (2 waves x 36 = 3 waves x 24 rounds): the H100's class keeps
  // RT 4, the H200's takes RT 2 (l37e: 1.016 / 1.019x at the full clock).
  EXPECT_EQ(rt_of(false, k_pro, 1, 0, k_h100), 4);
  EXPECT_EQ(rt_of(false, k_pro, 1, 0, 0.0), 4);
  EXPECT_EQ(rt_of(false, k_pro, 1, 0, k_h200), 2);
  // Every other model-shape launch at T = 1..64 has no tie: the same row tiles on both classes
  // (l37e measured the model's choice best or within 0.4% at Flash and Pro T = 1 / 4 / 16 / 64).
  for (const shape& s : {k_flash, k_pro})
    for (const bool up : {true, false})
      for (int64_t t = 1; t <= 64; ++t) {
        if (s.hidden == k_pro.hidden && !up && t == 1) continue;
        EXPECT_EQ(rt_of(up, s, t, 0, k_h200), rt_of(up, s, t, 0, k_h100)) << up << " " << t;
      }
  // A/B codes force the row tiles on either class.
  EXPECT_EQ(rt_of(false, k_pro, 1, -24, k_h200), 4);
}

TEST(moe_decode_tuning, four_slot_w1w3_takes_rt4_at_two_to_four_tokens) {
  // Session 39 (l39f): with 4 scale slots W1/W3 at T = 2..4 takes RT 4, where the model (4 blocks
  // per SM) takes RT 2 at Flash T = 3 / 4 and Pro T = 2 / 4. Session 47 (l47e): except where the
  // RT 4 grid fits one wave of resident blocks on the H200 class: Flash T = 2 (13 chunk slots x 32
  // blocks = 416 <= 528) takes RT 2 there; the H100's class keeps RT 4.
  EXPECT_EQ(rt_of(true, k_flash, 3, 0, k_h200), 2);
  EXPECT_EQ(rt_of(true, k_pro, 2, 0, k_h200), 2);
  EXPECT_EQ(rt_of(true, k_flash, 2, 0, k_h200, true), 2);
  EXPECT_EQ(rt_of(true, k_flash, 2, 0, k_h100, true), 4);
  for (const shape& s : {k_flash, k_pro})
    for (int64_t t = 2; t <= 4; ++t) {
      if (s.hidden != k_flash.hidden || t != 2) {
        EXPECT_EQ(rt_of(true, s, t, 0, k_h200, true), 4) << t;
      }
      // W2, T = 1 and T > 4 keep the model's choice; A/B codes still force row tiles.
      EXPECT_EQ(rt_of(false, s, t, 0, k_h200, true), rt_of(false, s, t, 0, k_h200)) << t;
      EXPECT_EQ(rt_of(true, s, t, -20, k_h200, true), 2) << t;
    }
  for (const int64_t t : {1, 5, 8, 16})
    for (const shape& s : {k_flash, k_pro})
      EXPECT_EQ(rt_of(true, s, t, 0, k_h200, true), rt_of(true, s, t, 0, k_h200)) << t;
}

TEST(moe_decode_tuning, w2_pair_takes_rt2_at_one_token_on_the_h200_class) {
  // Session 40: W2P at T = 1 on the H200 class runs W2 at RT 2 (l38c / l39a / l39d: 1.006-1.024x
  // over W2P off at the model's RT 4), where the model takes RT 4 for W2P.
  for (const shape& s : {k_flash, k_pro}) {
    EXPECT_EQ(rt_of(false, s, 1, 0, k_h200, false, true), 2);
    EXPECT_EQ(rt_of(false, s, 1, 0, k_h200, false, false), rt_of(false, s, 1, 0, k_h200));
    // The H100 class, other T, W1/W3 and A/B codes keep their choices.
    EXPECT_EQ(rt_of(false, s, 1, 0, k_h100, false, true),
              pick_rt(false, s.hidden / 2, s.inter / 128, 1, s.top_k, s.experts,
                      chunks_bound(s.top_k, s.experts), k_sms, k_four, 0, k_h100));
    for (const int64_t t : {2, 5, 16})
      EXPECT_EQ(rt_of(false, s, t, 0, k_h200, false, true),
                pick_rt(false, s.hidden / 2, s.inter / 128, t, s.top_k, s.experts,
                        chunks_bound(t * s.top_k, s.experts), k_sms, k_four, 0, k_h200))
          << t;
    // The flag does not touch W1/W3 (moe_decode.cu passes it for W2 launches only).
    EXPECT_EQ(pick_rt(true, s.inter, s.hidden / 128, 1, s.top_k, s.experts,
                      chunks_bound(s.top_k, s.experts), k_sms, k_four, 0, k_h200, false, true),
              rt_of(true, s, 1, 0, k_h200));
    EXPECT_EQ(rt_of(false, s, 1, -44, k_h200, false, true), 4);
  }
  // Without the rule the model takes RT 4 for W2P at T = 1 (the test's premise).
  for (const shape& s : {k_flash, k_pro})
    EXPECT_EQ(pick_rt(false, s.hidden / 2, s.inter / 128, 1, s.top_k, s.experts,
                      chunks_bound(s.top_k, s.experts), k_sms, k_four, 0, k_h200),
              4);
}

TEST(moe_decode_tuning, w1w3_four_slots_at_one_token_only_where_they_add_a_block_past_one_wave) {
  // Session 42's rule as moe_decode_tuning.h states it. The model shapes at T = 1 and RT 2, with
  // the resident blocks of session 41's profile (8 slots and the staged row: 3 per SM) and 4 with 4
  // slots: Pro's 576 blocks are more than 3 x 132, Flash's 384 are not.
  const auto grid = [](const shape& s) {
    return (s.inter / 32) * chunks_bound(s.top_k, s.experts);
  };
  EXPECT_EQ(grid(k_pro), 576);
  EXPECT_EQ(grid(k_flash), 384);
  EXPECT_TRUE(up_four_slots_at_one_token(3, 4, grid(k_pro), k_sms, k_h200));
  EXPECT_FALSE(up_four_slots_at_one_token(3, 4, grid(k_flash), k_sms, k_h200));
  // No block gained (main's static shared memory: Pro stays at 3), or fewer.
  EXPECT_FALSE(up_four_slots_at_one_token(3, 3, grid(k_pro), k_sms, k_h200));
  EXPECT_FALSE(up_four_slots_at_one_token(4, 3, grid(k_pro), k_sms, k_h200));
  // Exactly one wave is not more than one; one block more is.
  EXPECT_FALSE(up_four_slots_at_one_token(3, 4, 3 * k_sms, k_sms, k_h200));
  EXPECT_TRUE(up_four_slots_at_one_token(3, 4, 3 * k_sms + 1, k_sms, k_h200));
  // The H100's class and an unknown device keep 8 slots.
  EXPECT_FALSE(up_four_slots_at_one_token(3, 4, grid(k_pro), k_sms, k_h100));
  EXPECT_FALSE(up_four_slots_at_one_token(3, 4, grid(k_pro), k_sms, 0.0));
}

TEST(moe_decode_tuning, mxfp4_w1w3_short_second_wave_takes_rt1_at_one_token_on_the_h200_class) {
  // Session 43 (l43d / l43e): Pro T = 1's W1/W3 at RT 2 is 576 blocks on 4 x 132 = 528 slots (1.09
  // waves): MXFP4 takes RT 1 on the H200 class (1.053-1.058x); NVFP4 (0.978-0.985x there) and the
  // H100's class keep the model's RT 2.
  const auto pro_up = [](int code, double bpc, bool mxfp4) {
    return rt_of(true, k_pro, 1, code, bpc, false, false, mxfp4);
  };
  EXPECT_EQ(pro_up(0, k_h200, true), 1);
  EXPECT_EQ(pro_up(0, k_h200, false), 2);
  EXPECT_EQ(pro_up(0, k_h100, true), 2);
  // A/B codes still force row tiles (s-22 is the choice before the rule).
  EXPECT_EQ(pro_up(-22, k_h200, true), 2);
  // One wave (Flash: 384 blocks) keeps RT 2; so do W2 and T >= 2.
  EXPECT_EQ(rt_of(true, k_flash, 1, 0, k_h200, false, false, true), 2);
  EXPECT_EQ(rt_of(false, k_pro, 1, 0, k_h200, false, false, true), 2);
  for (const int64_t t : {2, 4})
    EXPECT_EQ(rt_of(true, k_pro, t, 0, k_h200, false, false, true),
              rt_of(true, k_pro, t, 0, k_h200))
        << t;
  // More than 1.25 waves (3 blocks per SM: 576 blocks on 396 slots) keeps the model's choice.
  constexpr int three[3] = {3, 3, 3};
  const auto pro_rt = [&](const int(&b)[3], bool mxfp4) {
    return pick_rt(true, k_pro.inter, k_pro.hidden / 128, 1, 6, k_pro.experts,
                   chunks_bound(6, k_pro.experts), k_sms, b, 0, k_h200, false, false, mxfp4);
  };
  EXPECT_EQ(pro_rt(three, true), pro_rt(three, false));
  EXPECT_EQ(pro_rt(k_four, true), 1);
}

}  // namespace
}  // namespace dsv4::cuda::moe_decode_tuning
