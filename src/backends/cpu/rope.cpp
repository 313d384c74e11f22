#include <cmath>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

void rope_rotate(float* v, int64_t rope_dim, int32_t position, const float* inv_freq,
                 bool inverse) {
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const float angle = float(position) * inv_freq[i];
    const float c = std::cos(angle);
    const float s = inverse ? -std::sin(angle) : std::sin(angle);
    const float a = v[2 * i];
    const float b = v[2 * i + 1];
    v[2 * i] = a * c - b * s;
    v[2 * i + 1] = b * c + a * s;
  }
}

void cpu_ops::rope(tensor& x, int64_t heads, int64_t head_dim, int64_t rope_dim,
                   const tensor& positions, const tensor& inv_freq, bool inverse) {
  check_f32(x, "rope input");
  const int64_t T = x.size(0);
  DSV4_CHECK(x.numel() == T * heads * head_dim, "rope: input {} for {} heads of {}",
             x.shape().str(), heads, head_dim);
  DSV4_CHECK(rope_dim % 2 == 0 && rope_dim <= head_dim && inv_freq.numel() == rope_dim / 2,
             "rope: rope_dim {} with {} frequencies", rope_dim, inv_freq.numel());
  DSV4_CHECK(positions.numel() == T, "rope: {} positions for {} tokens", positions.numel(), T);
  float* xp = x.data<float>();
  const int32_t* pos = positions.data<int32_t>();
  const float* f = inv_freq.data<float>();
  thread_pool::global().parallel_for(T * heads, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* v = xp + r * head_dim + (head_dim - rope_dim);
      rope_rotate(v, rope_dim, pos[r / heads], f, inverse);
    }
  });
}

}  // namespace dsv4::cpu
