#include "backends/cuda/weight_facts.h"

namespace dsv4::cuda {

bool e8m0_scales_at_most_2(const uint8_t* scales, int64_t n) {
  // One pass, branch-free per byte (the loader runs it over every expert's scales: ~0.2 GB per
  // Flash layer stack at memory speed).
  uint8_t over = 0;
  for (int64_t i = 0; i < n; ++i) over |= uint8_t(scales[i] > 128);
  return over == 0;
}

}  // namespace dsv4::cuda
