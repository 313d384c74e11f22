// weight_facts.h: the uploader's scan for E8M0 scales <= 128 (device_weight::scales_at_most_2).
// Oracle: the definition (every byte <= 128), at the boundary and at every position.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/cuda/weight_facts.h"

namespace dsv4::cuda {
namespace {

TEST(weight_facts, e8m0_scales_at_most_2_holds_up_to_128_and_fails_on_any_larger_byte) {
  EXPECT_TRUE(e8m0_scales_at_most_2(nullptr, 0));
  std::vector<uint8_t> s(257, 127);
  EXPECT_TRUE(e8m0_scales_at_most_2(s.data(), int64_t(s.size())));
  s.assign(s.size(), 128);  // scale 2: the one-step multiply's largest
  EXPECT_TRUE(e8m0_scales_at_most_2(s.data(), int64_t(s.size())));
  s.assign(s.size(), 0);
  EXPECT_TRUE(e8m0_scales_at_most_2(s.data(), int64_t(s.size())));
  for (const uint8_t big : {uint8_t(129), uint8_t(200), uint8_t(255)})
    for (size_t at : {size_t(0), size_t(1), size_t(100), s.size() - 1}) {
      std::vector<uint8_t> t(s.size(), 127);
      t[at] = big;
      EXPECT_FALSE(e8m0_scales_at_most_2(t.data(), int64_t(t.size()))) << int(big) << " at " << at;
      // Only the first `at` bytes: the large one is outside.
      EXPECT_TRUE(e8m0_scales_at_most_2(t.data(), int64_t(at))) << int(big) << " at " << at;
    }
}

}  // namespace
}  // namespace dsv4::cuda
