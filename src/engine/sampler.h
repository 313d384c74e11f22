// Token sampling from one row of logits: greedy (temperature 0), or temperature + top-k + top-p
// with a seeded generator (std::mt19937_64), deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>

namespace dsv4 {

struct sampling_params {
  float temperature = 1.0f;  // 0: greedy
  int64_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  uint64_t seed = 0;
};

class sampler {
 public:
  explicit sampler(const sampling_params& params);
  // Validates the parameters (throws naming the bad one).
  static void validate(const sampling_params& params);
  int32_t sample(const float* logits, int64_t vocab);

 private:
  sampling_params params_;
  std::mt19937_64 rng_;
};

}  // namespace dsv4
