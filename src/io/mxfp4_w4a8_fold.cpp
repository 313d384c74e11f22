#include "io/mxfp4_w4a8_fold.h"

#include <algorithm>

namespace dsv4 {

w4a8_fold_stats mxfp4_w4a8_fold_stats(const uint8_t* codes, const uint8_t* e8m0, int64_t rows,
                                      int64_t cols) {
  w4a8_fold_stats s;
  const int64_t groups = cols / 32;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* e = e8m0 + r * groups;
    const uint8_t* q = codes + r * (cols / 2);
    // The kernel's base uses every group of the row, zero or not.
    const int emax = *std::max_element(e, e + groups);
    if (emax == 255) ++s.nan_rows;
    bool inexact = false;
    for (int64_t g = 0; g < groups; ++g) {
      ++s.groups;
      // The smallest 2-adic valuation of m over the group's nonzero codes, where code = m / 2,
      // m in {1, 2, 3, 4, 6, 8, 12} for magnitude codes 1..7; -1 for an all-zero group.
      static constexpr int k_v2[8] = {-1, 0, 1, 0, 2, 1, 3, 2};
      int v2 = 99;
      for (int64_t b = 0; b < 16; ++b)
        for (int h = 0; h < 2; ++h) {
          const int mag = (q[g * 16 + b] >> (4 * h)) & 7;
          if (mag) v2 = std::min(v2, k_v2[mag]);
        }
      if (v2 == 99) continue;
      const int spread = emax - int(e[g]);
      s.max_spread = std::max(s.max_spread, spread);
      // Folded value m * 2^(d - 1), d = 6 - spread: an E4M3 value iff it is a multiple of 2^-9
      // (m has at most 2 significant bits and d <= 6 keeps it <= 384), i.e. v2 + d + 8 >= 0.
      if (v2 + (6 - spread) + 8 < 0) {
        ++s.inexact_groups;
        inexact = true;
      }
    }
    if (inexact) ++s.inexact_rows;
  }
  return s;
}

}  // namespace dsv4
