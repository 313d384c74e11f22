// The warp-specialized decode kernel's schedule and options from a plan
// (src/backends/cuda/attention_decode_ws_modes.cpp; host logic, runs without a GPU): plan.alt
// picks the alternate-tile schedule, plan.diag 1 / 2 / 4 the bench diagnoses (no row copies /
// no products / 32-bit divisions), every other diag none.
#include <gtest/gtest.h>

#include "backends/cuda/attention_decode_ws_modes.h"

namespace dsv4::cuda {
namespace {

TEST(attention_decode_ws_modes, alt_picks_the_alternate_schedule) {
  attention_decode_plan p;
  p.alt = false;
  EXPECT_EQ(attention_decode_ws_sched(p), k_ws_in_turn);
  p.alt = true;
  EXPECT_EQ(attention_decode_ws_sched(p), k_ws_alt);
}

TEST(attention_decode_ws_modes, diag_picks_the_exact_rescale) {
  attention_decode_plan p;
  p.alt = true;
  const int diags[4] = {8, 9, 10, 1};
  const int sched[4] = {k_ws_alt_bit, k_ws_alt_bit, k_ws_alt_bit, k_ws_alt};
  const int opts[4] = {0, k_ws_opt_no_load, k_ws_opt_no_compute, k_ws_opt_no_load};
  for (int i = 0; i < 4; ++i) {
    p.diag = diags[i];
    EXPECT_EQ(attention_decode_ws_sched(p), sched[i]) << "diag " << diags[i];
    EXPECT_EQ(attention_decode_ws_opts(p), opts[i]) << "diag " << diags[i];
    EXPECT_TRUE(ws_sched_is_alt(attention_decode_ws_sched(p)));
  }
  EXPECT_EQ(k_ws_alt, k_ws_alt_bit | k_ws_lazy_bit);  // the plans' schedule: lazy rescale
  p.alt = false;
  p.diag = 8;
  EXPECT_EQ(attention_decode_ws_sched(p), k_ws_in_turn);
}

TEST(attention_decode_ws_modes, diag_picks_the_options) {
  attention_decode_plan p;
  const int expected[6] = {0, k_ws_opt_no_load, k_ws_opt_no_compute, 0, k_ws_opt_divisions, 0};
  for (int diag = 0; diag < 6; ++diag) {
    p.diag = diag;
    EXPECT_EQ(attention_decode_ws_opts(p), expected[diag]) << "diag " << diag;
  }
}

}  // namespace
}  // namespace dsv4::cuda
