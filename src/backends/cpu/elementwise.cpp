#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

tensor cpu_ops::embed(const tensor& table, const tensor& ids) {
  check_f32(table, "embedding table");
  const int64_t T = ids.numel();
  const int64_t vocab = table.size(0);
  const int64_t dim = table.size(1);
  tensor y = tensor::empty(dtype::f32, {T, dim});
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = ids.data<int32_t>()[t];
    DSV4_CHECK(id >= 0 && id < vocab, "token id {} out of range [0, {})", id, vocab);
    std::memcpy(y.data<float>() + t * dim, table.data<float>() + int64_t(id) * dim, dim * 4);
  }
  return y;
}

void cpu_ops::add(tensor& x, const tensor& y) {
  check_f32(x, "add lhs");
  check_f32(y, "add rhs");
  DSV4_CHECK(x.numel() == y.numel(), "add: {} vs {}", x.shape().str(), y.shape().str());
  float* xp = x.data<float>();
  const float* yp = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] += yp[i];
}

void cpu_ops::scale(tensor& x, float s) {
  check_f32(x, "scale input");
  float* xp = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] *= s;
}

tensor cpu_ops::swiglu(const tensor& gate, const tensor& up, float limit) {
  check_f32(gate, "swiglu gate");
  check_f32(up, "swiglu up");
  DSV4_CHECK(gate.shape() == up.shape(), "swiglu: {} vs {}", gate.shape().str(), up.shape().str());
  tensor y = tensor::empty(dtype::f32, gate.shape());
  const float* g = gate.data<float>();
  const float* u = up.data<float>();
  float* yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float gc = std::min(g[i], limit);
    const float uc = std::min(std::max(u[i], -limit), limit);
    yp[i] = gc / (1.0f + std::exp(-gc)) * uc;
  }
  return y;
}

tensor cpu_ops::gather_rows(const tensor& x, const tensor& rows) {
  const int64_t width = x.numel() / x.size(0);
  const int64_t n = rows.numel();
  const size_t row_bytes = dtype_bytes(x.type(), width);
  dims shape = x.shape();
  shape[0] = n;
  tensor y = tensor::empty(x.type(), shape);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t r = rows.data<int32_t>()[i];
    DSV4_CHECK(r >= 0 && r < x.size(0), "gather_rows: row {} of {}", r, x.size(0));
    std::memcpy(y.data<uint8_t>() + i * row_bytes, x.data<uint8_t>() + r * row_bytes, row_bytes);
  }
  return y;
}

void cpu_ops::scatter_rows(const tensor& src, tensor& pool, const tensor& rows) {
  const int64_t width = pool.numel() / pool.size(0);
  DSV4_CHECK(src.type() == pool.type() && src.numel() == rows.numel() * width,
             "scatter_rows: src {} into pool {}", src.shape().str(), pool.shape().str());
  const size_t row_bytes = dtype_bytes(pool.type(), width);
  for (int64_t i = 0; i < rows.numel(); ++i) {
    const int32_t r = rows.data<int32_t>()[i];
    if (r < 0) continue;
    DSV4_CHECK(r < pool.size(0), "scatter_rows: row {} of {}", r, pool.size(0));
    std::memcpy(pool.data<uint8_t>() + r * row_bytes, src.data<uint8_t>() + i * row_bytes,
                row_bytes);
  }
}

}  // namespace dsv4::cpu
