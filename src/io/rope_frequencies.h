// RoPE inverse frequencies for one rope_config, computed exactly as transformers does
// (modeling_rope_utils: _compute_default_rope_parameters / _compute_yarn_parameters): the same
// float32 operations in the same order, with the correction range in double as Python computes
// it. Pair i of the rotary dims (channels 2i, 2i+1) rotates by position * result[i].
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_config.h"

namespace dsv4 {

// YaRN's ramp bounds over the rope_dim / 2 pairs: pairs <= low keep base^(-2i/d), pairs >= high
// use that divided by the factor, linear in between. Truncated to integers when rope.truncate.
struct yarn_correction_range {
  double low = 0;
  double high = 0;
};
yarn_correction_range rope_yarn_correction_range(const rope_config& rope, int64_t rope_dim);

// rope_dim / 2 inverse frequencies (rope_dim even and positive; throws otherwise).
std::vector<float> rope_inverse_frequencies(const rope_config& rope, int64_t rope_dim);

}  // namespace dsv4
