// io/mxfp4_w4a8_fold.h: the exactness rule of the W4A8 fold (code * 2^d, d = E - (row max E - 6),
// an E4M3 value or not) checked against the E4M3 round trip of core/dtype.h for every code and d,
// and the counts on hand-made rows (spread 14 exact, 15 inexact only for the codes that leave the
// 2^-9 grid, all-zero groups exact, a NaN scale row).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "io/mxfp4_w4a8_fold.h"

namespace dsv4 {
namespace {

constexpr float k_codes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

// One row of `groups` groups, every value of group g the magnitude code codes[g] (sign + for even
// positions, - for odd), scales e[g].
struct row_bytes {
  std::vector<uint8_t> q, e;
};
row_bytes make_row(const std::vector<int>& codes, const std::vector<uint8_t>& e) {
  row_bytes r;
  r.e = e;
  for (int c : codes)
    for (int b = 0; b < 16; ++b) r.q.push_back(uint8_t(c | ((c | 8) << 4)));
  return r;
}

TEST(mxfp4_w4a8_fold, rule_matches_e4m3_round_trip) {
  // Row max E = 140 (group 0, code 7), group 1 at E = 140 - spread with one magnitude code: the
  // fold is exact iff code * 2^(6 - spread) survives the E4M3 round trip.
  for (int spread = 0; spread <= 30; ++spread)
    for (int code = 1; code < 8; ++code) {
      const row_bytes r = make_row({7, code}, {140, uint8_t(140 - spread)});
      const w4a8_fold_stats s = mxfp4_w4a8_fold_stats(r.q.data(), r.e.data(), 1, 64);
      const float v = std::ldexp(k_codes[code], 6 - spread);
      const bool exact = e4m3_to_f32(f32_to_e4m3(v)) == v;
      EXPECT_EQ(s.inexact_groups, exact ? 0 : 1) << "spread " << spread << " code " << code;
      EXPECT_EQ(s.max_spread, spread);
      EXPECT_EQ(s.groups, 2);
    }
}

TEST(mxfp4_w4a8_fold, counts_rows) {
  // Row 0: spread 14, every code: exact. Row 1: spread 15 with code 1 (0.5 * 2^-9: inexact) and
  // an all-zero group far below (exact). Row 2: a NaN scale.
  row_bytes rows[3] = {make_row({7, 1, 2, 3}, {130, 116, 116, 116}),
                       make_row({7, 1, 0, 2}, {130, 115, 0, 115}),
                       make_row({7, 7, 7, 7}, {255, 120, 120, 120})};
  std::vector<uint8_t> q, e;
  for (const row_bytes& r : rows) {
    q.insert(q.end(), r.q.begin(), r.q.end());
    e.insert(e.end(), r.e.begin(), r.e.end());
  }
  const w4a8_fold_stats s = mxfp4_w4a8_fold_stats(q.data(), e.data(), 3, 128);
  EXPECT_EQ(s.groups, 12);
  EXPECT_EQ(s.inexact_groups, 4);  // row 1's code-1 group, row 2's three groups 135 below 255
  EXPECT_EQ(s.inexact_rows, 2);
  EXPECT_EQ(s.nan_rows, 1);
}

}  // namespace
}  // namespace dsv4
