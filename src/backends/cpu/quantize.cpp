// The official precision mode's quantize-dequantize ops (docs/dsv4-model.md §3.7): FP8 e4m3
// activations and KV with power-of-two block scales, Hadamard + FP4 e2m1 for the indexer, and the
// routed experts in the official order. Every element is independent of the thread partition.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

float fp8_block_scale(float amax) {
  return e8m0_to_f32(f32_to_e8m0_ceil(std::fmax(amax, 1e-4f) / 448.0f));
}

float fp4_block_scale(float amax) {
  return e8m0_to_f32(f32_to_e8m0_ceil(std::fmax(amax, 6.0f * 0x1p-126f) / 6.0f));
}

void fake_quant_fp8_values(float* v, int64_t n, int64_t block) {
  for (int64_t b = 0; b < n; b += block) {
    const int64_t e = std::min(n, b + block);
    float amax = 0.0f;
    for (int64_t i = b; i < e; ++i) amax = std::fmax(amax, std::fabs(v[i]));  // NaN ignored
    const float s = fp8_block_scale(amax);
    for (int64_t i = b; i < e; ++i) v[i] = e4m3_to_f32(f32_to_e4m3(v[i] / s)) * s;
  }
}

void hadamard_values(float* v, int64_t n) {
  // Sylvester-order butterflies: after the stage of half-width h, v[j] and v[j + h] hold the
  // sum and difference of the two half-transforms; the result is H v with H[i][j] =
  // (-1)^popcount(i & j).
  for (int64_t h = 1; h < n; h *= 2)
    for (int64_t i = 0; i < n; i += 2 * h)
      for (int64_t j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
  const float norm = float(1.0 / std::sqrt(double(n)));
  for (int64_t i = 0; i < n; ++i) v[i] *= norm;
}

void fake_quant_fp4_values(float* v, int64_t n) {
  constexpr int64_t block = 32;
  for (int64_t b = 0; b < n; b += block) {
    const int64_t e = std::min(n, b + block);
    float amax = 0.0f;
    for (int64_t i = b; i < e; ++i) amax = std::fmax(amax, std::fabs(v[i]));
    const float s = fp4_block_scale(amax);
    for (int64_t i = b; i < e; ++i) v[i] = e2m1_to_f32(f32_to_e2m1(v[i] / s)) * s;
  }
}

void hadamard_fp4_values(float* v, int64_t n) {
  hadamard_values(v, n);
  fake_quant_fp4_values(v, n);
}

namespace {

bool power_of_two(int64_t n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Runs f(row pointer) on the pool rows named by `rows` (-1 skipped), in parallel.
template <class F>
void for_pool_rows(tensor& pool, const tensor& rows, const char* what, F&& f) {
  check_f32(pool, what);
  DSV4_CHECK(rows.type() == dtype::i32, "{}: rows must be i32", what);
  const int64_t R = pool.size(0);
  const int64_t W = pool.numel() / std::max<int64_t>(R, 1);
  const int64_t n = rows.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t r = rows.data<int32_t>()[i];
    DSV4_CHECK(r >= -1 && r < R, "{}: row {} outside the pool's {} rows", what, r, R);
  }
  thread_pool::global().parallel_for(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int32_t r = rows.data<int32_t>()[i];
      if (r >= 0) f(pool.data<float>() + int64_t(r) * W);
    }
  });
}

}  // namespace

void cpu_ops::fake_quant_fp8_act(tensor& x, int64_t block) {
  check_f32(x, "fake_quant_fp8_act input");
  DSV4_CHECK(block > 0 && x.shape().rank() >= 1, "fake_quant_fp8_act: block {} for {}", block,
             x.shape().str());
  const int64_t n = x.size(x.shape().rank() - 1);
  const int64_t rows = n ? x.numel() / n : 0;
  float* p = x.data<float>();
  thread_pool::global().parallel_for(rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fake_quant_fp8_values(p + r * n, n, block);
  });
}

void cpu_ops::fake_quant_kv_fp8(tensor& pool, const tensor& rows, int64_t nope_dims,
                                int64_t block) {
  DSV4_CHECK(block > 0 && nope_dims >= 0 && pool.shape().rank() == 2 && nope_dims <= pool.size(1),
             "fake_quant_kv_fp8: {} nope dims, block {} for pool {}", nope_dims, block,
             pool.shape().str());
  for_pool_rows(pool, rows, "fake_quant_kv_fp8",
                [&](float* row) { fake_quant_fp8_values(row, nope_dims, block); });
}

void cpu_ops::hadamard_fp4(tensor& x, int64_t heads, int64_t head_dim) {
  check_f32(x, "hadamard_fp4 input");
  DSV4_CHECK(
      power_of_two(head_dim) && heads > 0 && x.shape().rank() == 2 && x.size(1) == heads * head_dim,
      "hadamard_fp4: {} heads of {} for {}", heads, head_dim, x.shape().str());
  const int64_t vectors = x.size(0) * heads;
  float* p = x.data<float>();
  thread_pool::global().parallel_for(vectors, [&](int64_t b, int64_t e) {
    for (int64_t v = b; v < e; ++v) hadamard_fp4_values(p + v * head_dim, head_dim);
  });
}

void cpu_ops::hadamard_fp4_rows(tensor& pool, const tensor& rows, int64_t heads, int64_t head_dim) {
  DSV4_CHECK(power_of_two(head_dim) && heads > 0 && pool.shape().rank() == 2 &&
                 pool.size(1) == heads * head_dim,
             "hadamard_fp4_rows: {} heads of {} for pool {}", heads, head_dim, pool.shape().str());
  for_pool_rows(pool, rows, "hadamard_fp4_rows", [&](float* row) {
    for (int64_t h = 0; h < heads; ++h) hadamard_fp4_values(row + h * head_dim, head_dim);
  });
}

}  // namespace dsv4::cpu
