// The decode-path MoE's scale-slot and W2P rules (moe_decode.h: moe_decode_scale_slots_4,
// moe_decode_w2_pair). Oracles: the rules as moe_decode.h states them (session 39's default: 4
// slots where W1/W3 stages its activation row, 2 <= T <= the stage_x up_max, on the H200's class
// only; session 40's: W2P at T >= 5 and, on the H200's class, T = 1; an explicit "from" overrides;
// 0 = never), with read rates of device_info.h's two classes.
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/cuda/moe_decode.h"

namespace dsv4::cuda {
namespace {

constexpr double k_h100 = 12.8, k_h200 = 18.4;

// Restores the process-wide switches this test touches.
struct switches_guard {
  int from = moe_decode_scale_slots_from();
  int w2_pair_from = moe_decode_w2_pair_from();
  int up_t1 = moe_decode_up_scale_slots_4_t1();
  int two_sets_from = moe_decode_w2_two_sets_from();
  moe_decode_stage_x stage = moe_decode_stage_x_tokens();
  ~switches_guard() {
    moe_decode_set_w2_two_sets_from(two_sets_from);
    moe_decode_set_scale_slots_from(from);
    moe_decode_set_w2_pair_from(w2_pair_from);
    moe_decode_set_up_scale_slots_4_t1(up_t1);
    moe_decode_set_stage_x_tokens(stage.up_max, stage.down_min, stage.down_max);
  }
};

TEST(moe_decode_switches, default_takes_four_slots_where_w1w3_is_staged_on_the_h200_class) {
  switches_guard g;
  moe_decode_set_scale_slots_from(-1);
  moe_decode_set_stage_x_tokens(4, 2, 4);
  for (int64_t t = 1; t <= 64; ++t) {
    EXPECT_EQ(moe_decode_scale_slots_4(t, k_h200), t >= 2 && t <= 4) << "T=" << t;
    EXPECT_FALSE(moe_decode_scale_slots_4(t, k_h100)) << "T=" << t;
    EXPECT_FALSE(moe_decode_scale_slots_4(t, 0.0)) << "T=" << t;  // unknown device
  }
  // The range follows the staging switch.
  moe_decode_set_stage_x_tokens(8, 2, 4);
  EXPECT_TRUE(moe_decode_scale_slots_4(8, k_h200));
  EXPECT_FALSE(moe_decode_scale_slots_4(9, k_h200));
  moe_decode_set_stage_x_tokens(0, 1, 0);
  EXPECT_FALSE(moe_decode_scale_slots_4(2, k_h200));
}

TEST(moe_decode_switches, explicit_settings_override_the_rule_on_every_device) {
  switches_guard g;
  moe_decode_set_scale_slots_from(0);
  for (const double r : {k_h100, k_h200})
    for (int64_t t = 1; t <= 64; ++t) EXPECT_FALSE(moe_decode_scale_slots_4(t, r));
  moe_decode_set_scale_slots_from(5);
  for (const double r : {k_h100, k_h200})
    for (int64_t t = 1; t <= 64; ++t) EXPECT_EQ(moe_decode_scale_slots_4(t, r), t >= 5);
  moe_decode_set_scale_slots_from(-7);  // clamped to the default rule
  EXPECT_EQ(moe_decode_scale_slots_from(), -1);
}

TEST(moe_decode_switches, w1w3_four_slots_at_one_token_default_is_the_rule_and_settings_clamp) {
  switches_guard g;
  EXPECT_EQ(moe_decode_up_scale_slots_4_t1(), -1);  // the default (session 42)
  moe_decode_set_up_scale_slots_4_t1(1);
  EXPECT_EQ(moe_decode_up_scale_slots_4_t1(), 1);
  moe_decode_set_up_scale_slots_4_t1(0);
  EXPECT_EQ(moe_decode_up_scale_slots_4_t1(), 0);
  moe_decode_set_up_scale_slots_4_t1(7);
  EXPECT_EQ(moe_decode_up_scale_slots_4_t1(), 1);
  moe_decode_set_up_scale_slots_4_t1(-5);
  EXPECT_EQ(moe_decode_up_scale_slots_4_t1(), -1);
}

TEST(moe_decode_switches, default_w2_pair_from_five_tokens_and_at_one_on_the_h200_class) {
  switches_guard g;
  moe_decode_set_w2_pair_from(-1);
  for (int64_t t = 1; t <= 64; ++t) {
    EXPECT_EQ(moe_decode_w2_pair(t, k_h200), t == 1 || t >= 5) << "T=" << t;
    EXPECT_EQ(moe_decode_w2_pair(t, k_h200, 4096), t == 1 || t >= 5) << "T=" << t;  // Flash
    EXPECT_TRUE(moe_decode_w2_pair(t, k_h200, 7168)) << "T=" << t;  // Pro: T = 2..4 too (s46)
    EXPECT_EQ(moe_decode_w2_pair(t, k_h100), t >= 5) << "T=" << t;
    EXPECT_EQ(moe_decode_w2_pair(t, k_h100, 7168), t >= 5) << "T=" << t;
    EXPECT_EQ(moe_decode_w2_pair(t, 0.0), t >= 5) << "T=" << t;  // unknown device
  }
  moe_decode_set_w2_pair_from(0);
  for (const double r : {k_h100, k_h200})
    for (int64_t t = 1; t <= 64; ++t) EXPECT_FALSE(moe_decode_w2_pair(t, r));
  moe_decode_set_w2_pair_from(3);
  for (const double r : {k_h100, k_h200})
    for (int64_t t = 1; t <= 64; ++t) EXPECT_EQ(moe_decode_w2_pair(t, r), t >= 3);
  moe_decode_set_w2_pair_from(-9);  // clamped to the default rule
  EXPECT_EQ(moe_decode_w2_pair_from(), -1);
}

TEST(moe_decode_switches, w2_two_sets_at_two_to_four_tokens_for_one_tile_w2_and_nvfp4_at_one) {
  switches_guard g;
  EXPECT_EQ(moe_decode_w2_two_sets_from(), -1);  // the default (sessions 48-49)
  constexpr int64_t flash_rows = 4096, pro_rows = 7168;
  for (int64_t t = 1; t <= 64; ++t) {
    for (const bool nvfp4 : {false, true}) {
      // Flash: T = 2..4 (W2 runs one row tile a warp-round there), and NVFP4 at T = 1.
      EXPECT_EQ(moe_decode_w2_two_sets(t, nvfp4, k_h200, flash_rows),
                (t >= 2 && t <= 4) || (t == 1 && nvfp4))
          << "T=" << t << " nvfp4=" << nvfp4;
      // Pro: W2P at T = 2..4 already runs two chains; NVFP4 at T = 1 only.
      EXPECT_EQ(moe_decode_w2_two_sets(t, nvfp4, k_h200, pro_rows), t == 1 && nvfp4)
          << "T=" << t << " nvfp4=" << nvfp4;
      for (const int64_t rows : {flash_rows, pro_rows}) {
        EXPECT_FALSE(moe_decode_w2_two_sets(t, nvfp4, k_h100, rows)) << "T=" << t;
        EXPECT_FALSE(moe_decode_w2_two_sets(t, nvfp4, 0.0, rows)) << "T=" << t;  // unknown device
      }
    }
  }
  moe_decode_set_w2_two_sets_from(0);
  for (int64_t t = 1; t <= 64; ++t)
    EXPECT_FALSE(moe_decode_w2_two_sets(t, true, k_h200, flash_rows));
  moe_decode_set_w2_two_sets_from(2);
  for (const double r : {k_h100, k_h200})
    for (const int64_t rows : {flash_rows, pro_rows})
      for (int64_t t = 1; t <= 64; ++t)
        EXPECT_EQ(moe_decode_w2_two_sets(t, false, r, rows), t >= 2);
  moe_decode_set_w2_two_sets_from(-4);  // clamped to the default rule
  EXPECT_EQ(moe_decode_w2_two_sets_from(), -1);
}

}  // namespace
}  // namespace dsv4::cuda
