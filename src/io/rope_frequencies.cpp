#include "io/rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace dsv4 {
namespace {

// find_correction_dim: the pair index whose wavelength completes `rotations` turns over the
// original context (Python double arithmetic).
double correction_dim(double rotations, double dim, double base, double max_position) {
  return (dim * std::log(max_position / (rotations * 2 * std::numbers::pi))) / (2 * std::log(base));
}

// pos_freqs = base ** (arange(0, dim, 2) / dim) in float32, as torch evaluates it.
std::vector<float> position_frequencies(double base, int64_t rope_dim) {
  std::vector<float> out(size_t(rope_dim / 2));
  const float base_f = float(base);
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const float exponent = float(2 * i) / float(rope_dim);
    out[size_t(i)] = std::pow(base_f, exponent);
  }
  return out;
}

}  // namespace

yarn_correction_range rope_yarn_correction_range(const rope_config& rope, int64_t rope_dim) {
  const double dim = double(rope_dim);
  double low = correction_dim(rope.beta_fast, dim, rope.theta, rope.original_max_position);
  double high = correction_dim(rope.beta_slow, dim, rope.theta, rope.original_max_position);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, dim - 1)};
}

std::vector<float> rope_inverse_frequencies(const rope_config& rope, int64_t rope_dim) {
  DSV4_CHECK(rope_dim > 0 && rope_dim % 2 == 0, "rope: rotary dim {} must be even and positive",
             rope_dim);
  const std::vector<float> pos = position_frequencies(rope.theta, rope_dim);
  std::vector<float> inv(pos.size());
  if (!rope.yarn) {
    for (size_t i = 0; i < pos.size(); ++i) inv[i] = 1.0f / pos[i];
    return inv;
  }
  const yarn_correction_range range = rope_yarn_correction_range(rope, rope_dim);
  double high = range.high;
  if (range.low == high) high += 0.001;  // transformers: prevent a zero-width ramp
  const float low_f = float(range.low);
  const float width_f = float(high - range.low);
  const float factor_f = float(rope.factor);
  for (size_t i = 0; i < pos.size(); ++i) {
    const float extrapolation = 1.0f / pos[i];
    const float interpolation = 1.0f / (factor_f * pos[i]);
    const float ramp = std::clamp((float(i) - low_f) / width_f, 0.0f, 1.0f);
    const float extrapolation_weight = 1.0f - ramp;
    // Two products and a sum, each rounded to float as torch's separate elementwise kernels do;
    // the volatile stores keep a compiler targeting FMA from fusing them (a different rounding).
    const volatile float a = interpolation * (1.0f - extrapolation_weight);
    const volatile float b = extrapolation * extrapolation_weight;
    inv[i] = a + b;
  }
  return inv;
}

}  // namespace dsv4
