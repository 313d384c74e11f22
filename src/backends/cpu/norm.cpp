#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

tensor cpu_ops::rms_norm(const tensor& x, const tensor* weight, float eps, int64_t groups) {
  check_f32(x, "rms_norm input");
  const int64_t n = x.size(-1);
  const int64_t rows = x.numel() / n;
  DSV4_CHECK(groups > 0 && n % groups == 0, "rms_norm: {} features in {} groups", n, groups);
  const int64_t g = n / groups;
  if (weight) {
    check_f32(*weight, "rms_norm weight");
    DSV4_CHECK(weight->numel() == g, "rms_norm: weight of {} for groups of {}", weight->numel(), g);
  }
  tensor y = tensor::empty(dtype::f32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const float* wp = weight ? weight->data<float>() : nullptr;
  thread_pool::global().parallel_for(rows * groups, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xi = xp + r * g;
      float* yi = yp + r * g;
      const float inv = 1.0f / std::sqrt(dot(xi, xi, g) / float(g) + eps);
      for (int64_t i = 0; i < g; ++i) yi[i] = wp ? wp[i] * (xi[i] * inv) : xi[i] * inv;
    }
  });
  return y;
}

}  // namespace dsv4::cpu
