#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

namespace {

// y[t, o_begin + o] = x[t, x_offset : x_offset + in] . w[o_begin + o, :] for o < count.
void matmul_rows(const float* x, int64_t x_stride, int64_t x_offset, const float* w, int64_t in,
                 int64_t o_begin, int64_t count, float* y, int64_t y_stride, int64_t T) {
  // Parallel over (token, output) tiles; each output is one dot product, so the result does not
  // depend on the partition.
  constexpr int64_t tile = 16;
  const int64_t out_tiles = (count + tile - 1) / tile;
  thread_pool::global().parallel_for(T * out_tiles, [&](int64_t b, int64_t e) {
    for (int64_t job = b; job < e; ++job) {
      const int64_t t = job / out_tiles;
      const int64_t o0 = (job % out_tiles) * tile;
      const int64_t o1 = std::min(count, o0 + tile);
      const float* xr = x + t * x_stride + x_offset;
      for (int64_t o = o0; o < o1; ++o)
        y[t * y_stride + o_begin + o] = dot(xr, w + (o_begin + o) * in, in);
    }
  });
}

}  // namespace

tensor cpu_ops::linear(const tensor& x, const prepared_linear& w) {
  check_f32(x, "linear input");
  const auto& cw = static_cast<const cpu_linear&>(w);
  const int64_t T = x.size(0);
  DSV4_CHECK(x.shape().rank() == 2 && x.size(1) == w.in, "linear {}: input {} for weight [{}, {}]",
             w.name, x.shape().str(), w.out, w.in);
  tensor y = tensor::empty(dtype::f32, {T, w.out});
  matmul_rows(x.data<float>(), w.in, 0, cw.weight.data<float>(), w.in, 0, w.out, y.data<float>(),
              w.out, T);
  return y;
}

tensor cpu_ops::grouped_linear(const tensor& x, const prepared_linear& w, int64_t groups) {
  check_f32(x, "grouped_linear input");
  const auto& cw = static_cast<const cpu_linear&>(w);
  const int64_t T = x.size(0);
  DSV4_CHECK(groups > 0 && w.out % groups == 0 && x.size(1) == groups * w.in,
             "grouped_linear {}: input {} for weight [{}, {}] in {} groups", w.name,
             x.shape().str(), w.out, w.in, groups);
  const int64_t out_g = w.out / groups;
  tensor y = tensor::empty(dtype::f32, {T, w.out});
  for (int64_t g = 0; g < groups; ++g)
    matmul_rows(x.data<float>(), x.size(1), g * w.in, cw.weight.data<float>(), w.in, g * out_g,
                out_g, y.data<float>(), w.out, T);
  return y;
}

}  // namespace dsv4::cpu
