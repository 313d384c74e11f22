// How exactly an MXFP4 matrix runs on the W4A8 prefill core
// (src/backends/cuda/moe_prefill_w4a8.cu), counted on the host from the checkpoint bytes (e.g. at
// load time, or by a tool over a real checkpoint). That core folds each group's E8M0 exponent E
// into the E4M3 expansion of its codes relative to a per-row base B = (largest E of the row) - 6:
// code * 2^(E - B) is exact in E4M3 for E >= B - 8, i.e. for groups within 14 binades of the row's
// largest; further below, a code whose folded value is not a multiple of 2^-9 is rounded onto the
// E4M3 grid (inexact); all-zero groups and codes that stay on the grid are exact. A row with an
// E8M0 byte 255 (NaN scale) comes out NaN, as the reference's.
#pragma once

#include <cstdint>

namespace dsv4 {

struct w4a8_fold_stats {
  int64_t groups = 0;          // groups of 32 counted
  int64_t inexact_groups = 0;  // groups with a code the fold rounds
  int64_t inexact_rows = 0;    // rows with at least one such group
  int64_t nan_rows = 0;        // rows with an E8M0 byte 255
  int max_spread = 0;          // largest (row's max E) - E over groups with a nonzero code
};

// codes: rows x cols / 2 bytes (two E2M1 values per byte, the first in the low nibble); e8m0:
// rows x cols / 32 scale bytes; cols a multiple of 32.
w4a8_fold_stats mxfp4_w4a8_fold_stats(const uint8_t* codes, const uint8_t* e8m0, int64_t rows,
                                      int64_t cols);

}  // namespace dsv4
