// Sampler: greedy is the argmax, a seed fixes the sequence, top-k / top-p restrict the support,
// and sampled frequencies follow softmax(logits / T).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "engine/sampler.h"

namespace dsv4 {
namespace {

const std::vector<float> k_logits = {0.5f, 2.0f, -1.0f, 1.5f, 0.0f};

TEST(sampler, greedy_is_argmax) {
  sampler s({0.0f, 0, 1.0f, 1});
  EXPECT_EQ(s.sample(k_logits.data(), 5), 1);
}

TEST(sampler, seed_fixes_the_sequence) {
  sampler a({1.0f, 0, 1.0f, 42}), b({1.0f, 0, 1.0f, 42});
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(a.sample(k_logits.data(), 5), b.sample(k_logits.data(), 5));
}

TEST(sampler, top_k_and_top_p_restrict_the_support) {
  sampler k2({1.0f, 2, 1.0f, 3});
  sampler p({1.0f, 0, 0.5f, 3});  // p(1) = 0.47 < 0.5, so {1, 3}
  for (int i = 0; i < 500; ++i) {
    const int32_t a = k2.sample(k_logits.data(), 5);
    EXPECT_TRUE(a == 1 || a == 3) << a;
    const int32_t b = p.sample(k_logits.data(), 5);
    EXPECT_TRUE(b == 1 || b == 3) << b;
  }
}

TEST(sampler, frequencies_follow_the_tempered_softmax) {
  const float t = 0.7f;
  sampler s({t, 0, 1.0f, 11});
  std::map<int32_t, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(k_logits.data(), 5)];
  double z = 0;
  for (float l : k_logits) z += std::exp(l / t);
  for (int i = 0; i < 5; ++i) {
    const double p = std::exp(k_logits[i] / t) / z;
    // 5 standard deviations of a binomial count.
    EXPECT_NEAR(counts[i], p * n, 5 * std::sqrt(n * p * (1 - p)) + 1) << i;
  }
}

TEST(sampler, rejects_bad_parameters) {
  EXPECT_THROW(sampler::validate({-0.1f, 0, 1.0f, 0}), error);
  EXPECT_THROW(sampler::validate({NAN, 0, 1.0f, 0}), error);
  EXPECT_THROW(sampler::validate({1.0f, -1, 1.0f, 0}), error);
  EXPECT_THROW(sampler::validate({1.0f, 0, 0.0f, 0}), error);
  EXPECT_THROW(sampler::validate({1.0f, 0, 1.5f, 0}), error);
}

}  // namespace
}  // namespace dsv4
