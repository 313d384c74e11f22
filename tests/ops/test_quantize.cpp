// The official precision mode's quantize-dequantize ops (backends/cpu/quantize.cpp) against
// independent formulas: the e4m3 / e2m1 grids built from their bit layouts in double, nearest
// value with ties to the even code found by brute force, power-of-two scales from log2 in double,
// the Hadamard as a dense O(n^2) product in double; plus idempotence and the routed experts'
// official order against a composition of the plain ops.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_ops.h"

namespace dsv4 {
namespace {

// Non-negative finite e4m3fn values by code (0..126), from the bit layout: exponent bias 7,
// 3 mantissa bits, subnormals m * 2^-9.
std::vector<double> e4m3_grid() {
  std::vector<double> g;
  for (int code = 0; code < 127; ++code) {
    const int e = code >> 3, m = code & 7;
    g.push_back(e == 0 ? std::ldexp(double(m), -9) : std::ldexp(1.0 + m / 8.0, e - 7));
  }
  return g;
}

std::vector<double> e2m1_grid() {
  std::vector<double> g;
  for (int code = 0; code < 8; ++code) {
    const int e = code >> 1, m = code & 1;
    g.push_back(e == 0 ? 0.5 * m : std::ldexp(1.0 + m / 2.0, e - 1));
  }
  return g;
}

// Round-to-nearest onto `grid` (ascending, code = index), ties to the even code, saturating at
// the largest value; sign kept.
double round_to_grid(double y, const std::vector<double>& grid) {
  const double a = std::fabs(y);
  size_t best = 0;
  for (size_t c = 1; c < grid.size(); ++c) {
    const double d = std::fabs(grid[c] - a), db = std::fabs(grid[best] - a);
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return std::copysign(grid[best], y);
}

double pow2_ceil_log2(double v) {
  return std::ldexp(1.0, int(std::ceil(std::log2(v))));
}

// Expected FP8 (max 448, floor 1e-4) or FP4 (max 6, floor 6 * 2^-126) block quantization.
std::vector<float> expected_blocks(const std::vector<float>& x, int64_t block, bool fp4) {
  const std::vector<double> grid = fp4 ? e2m1_grid() : e4m3_grid();
  const double top = fp4 ? 6.0 : 448.0;
  const double floor = fp4 ? 6.0 * std::ldexp(1.0, -126) : 1e-4;
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += size_t(block)) {
    const size_t e = std::min(x.size(), b + size_t(block));
    double amax = 0;
    for (size_t i = b; i < e; ++i) amax = std::max(amax, std::fabs(double(x[i])));
    // The f32 quotient, as the quantizers compute it (then the power of two above it).
    const double s =
        pow2_ceil_log2(double(float(std::max(amax, double(float(floor)))) / float(top)));
    for (size_t i = b; i < e; ++i) out[i] = float(round_to_grid(double(x[i]) / s, grid) * s);
  }
  return out;
}

void expect_bitwise_equal(const float* got, const std::vector<float>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " element " << i << ": got " << got[i] << " want " << want[i];
  }
}

tensor from_vector(const std::vector<float>& v, const dims& shape) {
  tensor t = tensor::empty(dtype::f32, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

std::vector<float> to_vector(const tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// Every grid value, every midpoint (the ties), and points just either side of each midpoint,
// both signs, after a leading `top` that pins the block scale to 1.
std::vector<float> tie_probe(const std::vector<double>& grid, double top) {
  std::vector<float> v;
  for (size_t c = 0; c < grid.size(); ++c) {
    v.push_back(float(grid[c]));
    if (c + 1 < grid.size()) {
      const float mid = float((grid[c] + grid[c + 1]) / 2);  // exact in f32
      v.push_back(mid);
      v.push_back(std::nextafter(mid, 0.0f));
      v.push_back(std::nextafter(mid, 1e9f));
    }
  }
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  v.insert(v.begin(), float(top));
  return v;
}

TEST(quantize, fp8_every_e4m3_value_and_tie_rounds_to_nearest_even) {
  const std::vector<double> grid = e4m3_grid();
  const std::vector<float> probe = tie_probe(grid, 448.0);
  // One block holding everything: the 448 in front sets s = 1.
  std::vector<float> v = probe;
  cpu::fake_quant_fp8_values(v.data(), int64_t(v.size()), int64_t(v.size()));
  std::vector<float> want(probe.size());
  for (size_t i = 0; i < probe.size(); ++i) want[i] = float(round_to_grid(probe[i], grid));
  expect_bitwise_equal(v.data(), want, "e4m3 ties");
  // Spot checks written out: 17 is a tie between 16 and 18 -> 16 (even mantissa); 19 -> 20.
  std::vector<float> w = {448.0f, 17.0f, 19.0f, 0.0f, -0.0f};
  cpu::fake_quant_fp8_values(w.data(), int64_t(w.size()), 128);
  EXPECT_EQ(w[1], 16.0f);
  EXPECT_EQ(w[2], 20.0f);
  EXPECT_TRUE(std::signbit(w[4]));
}

TEST(quantize, fp4_every_e2m1_value_and_tie_rounds_to_nearest_even) {
  const std::vector<double> grid = e2m1_grid();
  ASSERT_EQ(grid, (std::vector<double>{0, 0.5, 1, 1.5, 2, 3, 4, 6}));
  const std::vector<float> probe = tie_probe(grid, 6.0);
  // Blocks of 32: repeat the leading 6 at every block start so each block has s = 1.
  std::vector<float> v;
  for (size_t i = 1; i < probe.size(); ++i) {
    if (v.size() % 32 == 0) v.push_back(6.0f);
    v.push_back(probe[i]);
  }
  std::vector<float> want(v.size());
  for (size_t i = 0; i < v.size(); ++i) want[i] = float(round_to_grid(v[i], grid));
  cpu::fake_quant_fp4_values(v.data(), int64_t(v.size()));
  expect_bitwise_equal(v.data(), want, "e2m1 ties");
  // Written out: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
  std::vector<float> w = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  cpu::fake_quant_fp4_values(w.data(), int64_t(w.size()));
  EXPECT_EQ(w, (std::vector<float>{6, 0, 1, 1, 2, 2, 4, 4}));
}

TEST(quantize, scales_are_powers_of_two_from_the_block_maximum) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> mag(-30, 30);
  for (bool fp4 : {false, true}) {
    const int64_t block = fp4 ? 32 : 128;
    std::vector<float> x(size_t(block) * 40 + 17);  // ragged last block
    for (size_t b = 0; b < x.size(); b += size_t(block)) {
      const float m = std::ldexp(1.0f, mag(gen));
      for (size_t i = b; i < std::min(x.size(), b + size_t(block)); ++i) x[i] = u(gen) * m;
    }
    x[5] = 448.0f * 4.0f;  // an amax that is exactly max * 2^k (scale 2^k, no extra doubling)
    x[block + 3] = 1e-9f;  // a tiny block value (under the FP8 floor) in an ordinary block
    for (size_t i = size_t(2 * block); i < size_t(3 * block); ++i) x[i] = 1e-7f * u(gen);
    std::vector<float> v = x;
    if (fp4)
      cpu::fake_quant_fp4_values(v.data(), int64_t(v.size()));
    else
      cpu::fake_quant_fp8_values(v.data(), int64_t(v.size()), block);
    expect_bitwise_equal(v.data(), expected_blocks(x, block, fp4), fp4 ? "fp4" : "fp8");
    // The scale helpers return exact powers of two.
    for (float a : {1e-12f, 1e-4f, 0.3f, 448.0f, 449.0f, 6.0f, 7e30f}) {
      const float s = fp4 ? cpu::fp4_block_scale(a) : cpu::fp8_block_scale(a);
      int e = 0;
      EXPECT_EQ(std::frexp(s, &e), 0.5f) << a;
      EXPECT_GE(double(s) * (fp4 ? 6.0 : 448.0), double(a)) << a;
    }
    EXPECT_EQ(cpu::fp8_block_scale(448.0f), 1.0f);
    EXPECT_EQ(cpu::fp8_block_scale(449.0f), 2.0f);
    EXPECT_EQ(cpu::fp8_block_scale(0.0f), 0x1p-22f);  // 1e-4 / 448 = 2.2e-7 -> 2^-22
    EXPECT_EQ(cpu::fp4_block_scale(0.0f), 0x1p-126f);
    EXPECT_EQ(cpu::fp4_block_scale(6.0f), 1.0f);
  }
}

TEST(quantize, quantizing_twice_changes_nothing) {
  cpu::cpu_ops o;
  std::mt19937 gen(11);
  std::normal_distribution<float> n(0.0f, 3.0f);
  tensor x = tensor::empty(dtype::f32, {9, 4 * 128 + 40});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = n(gen);
  o.fake_quant_fp8_act(x, 128);
  const std::vector<float> once = to_vector(x);
  o.fake_quant_fp8_act(x, 128);
  expect_bitwise_equal(x.data<float>(), once, "fp8 twice");

  std::vector<float> v(32 * 50);
  for (float& f : v) f = n(gen);
  cpu::fake_quant_fp4_values(v.data(), int64_t(v.size()));
  const std::vector<float> v1 = v;
  cpu::fake_quant_fp4_values(v.data(), int64_t(v.size()));
  expect_bitwise_equal(v.data(), v1, "fp4 twice");
}

TEST(quantize, fake_quant_fp8_act_is_per_row_blocks) {
  cpu::cpu_ops o;
  std::mt19937 gen(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t T = 5, W = 300;  // 128 + 128 + 44 per row
  std::vector<float> x(size_t(T * W));
  for (float& f : x) f = n(gen) * (1 + float(&f - x.data()) / 50.0f);
  tensor t = from_vector(x, {T, W});
  o.fake_quant_fp8_act(t, 128);
  std::vector<float> want;
  for (int64_t r = 0; r < T; ++r) {
    const std::vector<float> row(x.begin() + r * W, x.begin() + (r + 1) * W);
    const std::vector<float> q = expected_blocks(row, 128, false);
    want.insert(want.end(), q.begin(), q.end());
  }
  expect_bitwise_equal(t.data<float>(), want, "act rows");
}

TEST(quantize, fake_quant_kv_fp8_rounds_only_the_listed_rows_nope_dims) {
  cpu::cpu_ops o;
  std::mt19937 gen(5);
  std::normal_distribution<float> n(0.0f, 2.0f);
  const int64_t R = 6, W = 512, nope = 448;
  std::vector<float> pool(size_t(R * W));
  for (float& f : pool) f = n(gen);
  tensor p = from_vector(pool, {R, W});
  tensor rows = tensor::empty(dtype::i32, {3});
  const int32_t list[] = {4, -1, 1};  // distinct rows (the op's contract), one skipped
  std::copy(std::begin(list), std::end(list), rows.data<int32_t>());
  o.fake_quant_kv_fp8(p, rows, nope, 64);
  for (int64_t r = 0; r < R; ++r) {
    const std::vector<float> row(pool.begin() + r * W, pool.begin() + (r + 1) * W);
    std::vector<float> want = row;
    if (r == 1 || r == 4) {
      const std::vector<float> head(row.begin(), row.begin() + nope);
      const std::vector<float> q = expected_blocks(head, 64, false);
      std::copy(q.begin(), q.end(), want.begin());  // rope dims [448, 512) stay as they were
    }
    expect_bitwise_equal(p.data<float>() + r * W, want, "kv row");
  }
}

TEST(quantize, hadamard_matches_the_dense_product_in_double) {
  std::mt19937 gen(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t dim : {1, 2, 8, 32, 128}) {
    std::vector<float> x(static_cast<size_t>(dim));
    for (float& f : x) f = n(gen);
    std::vector<float> v = x;
    cpu::hadamard_values(v.data(), dim);
    double worst = 0, norm = 0;
    for (int64_t i = 0; i < dim; ++i) {
      double ref = 0;
      for (int64_t j = 0; j < dim; ++j)
        ref += (std::popcount(uint64_t(i & j)) % 2 ? -1.0 : 1.0) * double(x[size_t(j)]);
      ref /= std::sqrt(double(dim));
      worst = std::max(worst, std::fabs(double(v[size_t(i)]) - ref));
      norm = std::max(norm, std::fabs(ref));
    }
    // log2(dim) f32 butterfly stages and one f32 scaling: a few ulps of the largest output.
    EXPECT_LE(worst, 1e-6 * std::max(norm, 1.0)) << "dim " << dim;
  }
}

TEST(quantize, hadamard_fp4_ops_transform_then_quantize_each_head) {
  cpu::cpu_ops o;
  std::mt19937 gen(13);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t T = 3, H = 4, d = 128;
  std::vector<float> x(size_t(T * H * d));
  for (float& f : x) f = n(gen);
  tensor t = from_vector(x, {T, H * d});
  o.hadamard_fp4(t, H, d);
  std::vector<float> want = x;
  for (int64_t v = 0; v < T * H; ++v) {
    cpu::hadamard_values(want.data() + v * d, d);
    std::vector<float> head(want.begin() + v * d, want.begin() + (v + 1) * d);
    const std::vector<float> q = expected_blocks(head, 32, true);
    std::copy(q.begin(), q.end(), want.begin() + v * d);
  }
  expect_bitwise_equal(t.data<float>(), want, "hadamard_fp4");
  // Quantized output: each block of 32 is (e2m1 grid) * (one power of two).
  const std::vector<double> grid = e2m1_grid();
  for (int64_t b = 0; b < T * H * d; b += 32) {
    double amax = 0;
    for (int64_t i = b; i < b + 32; ++i)
      amax = std::max(amax, std::fabs(double(t.data<float>()[i])));
    const double s = amax / 6.0 > 0 ? pow2_ceil_log2(amax / 6.0) : 1.0;
    for (int64_t i = b; i < b + 32; ++i) {
      const double q = double(t.data<float>()[i]) / s;
      EXPECT_EQ(round_to_grid(q, grid), q) << i;
    }
  }

  // The pool-row variant: listed rows only, all heads of the row.
  tensor pool = from_vector(x, {T, H * d});
  tensor rows = tensor::empty(dtype::i32, {2});
  rows.data<int32_t>()[0] = 2;
  rows.data<int32_t>()[1] = -1;
  o.hadamard_fp4_rows(pool, rows, H, d);
  std::vector<float> want_pool = x;
  std::copy(want.begin() + 2 * H * d, want.end(), want_pool.begin() + 2 * H * d);
  expect_bitwise_equal(pool.data<float>(), want_pool, "hadamard_fp4_rows");
}

TEST(quantize, moe_official_order_weights_h_then_quantizes_it_before_w2) {
  cpu::cpu_ops o;
  std::mt19937 gen(17);
  std::normal_distribution<float> n(0.0f, 0.3f);
  const int64_t T = 4, E = 3, D = 64, I = 200, K = 2;  // I: 128 + 72 (ragged block)
  auto rnd = [&](const dims& s) {
    tensor t = tensor::empty(dtype::f32, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(gen);
    return t;
  };
  cpu::cpu_experts ex;
  ex.count = E;
  ex.hidden = D;
  ex.inter = I;
  for (int64_t e = 0; e < E; ++e) {
    ex.w1.push_back(rnd({I, D}));
    ex.w3.push_back(rnd({I, D}));
    ex.w2.push_back(rnd({D, I}));
  }
  tensor x = rnd({T, D});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] *= 10.0f;  // reach the clamps
  tensor idx = tensor::empty(dtype::i32, {T, K});
  tensor w = tensor::empty(dtype::f32, {T, K});
  for (int64_t i = 0; i < T * K; ++i) {
    idx.data<int32_t>()[i] = int32_t((i * 2 + i / K) % E);
    w.data<float>()[i] = 0.3f + 0.1f * float(i);
  }
  const float limit = 7.0f;
  tensor y = o.moe_experts_official(x, idx, w, ex, limit);
  // The same computation from the plain ops, one (token, slot) pair at a time.
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> acc(size_t(D), 0.0f);
    tensor xt = from_vector(
        std::vector<float>(x.data<float>() + t * D, x.data<float>() + (t + 1) * D), {1, D});
    for (int64_t k = 0; k < K; ++k) {
      const int32_t e = idx.data<int32_t>()[t * K + k];
      cpu::cpu_linear l1, l3, l2;
      for (auto [l, weight, out, in] :
           {std::tuple{&l1, &ex.w1[e], I, D}, std::tuple{&l3, &ex.w3[e], I, D},
            std::tuple{&l2, &ex.w2[e], D, I}}) {
        l->out = out;
        l->in = in;
        l->weight = *weight;
      }
      tensor h = o.swiglu(o.linear(xt, l1), o.linear(xt, l3), limit);
      o.scale(h, w.data<float>()[t * K + k]);
      o.fake_quant_fp8_act(h, 128);
      tensor yk = o.linear(h, l2);
      for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += yk.data<float>()[d];
    }
    expect_bitwise_equal(y.data<float>() + t * D, acc, "moe official");
  }
  // The exact order differs (the weight is applied after w2, nothing is quantized).
  tensor y_exact = o.moe_experts(x, idx, w, ex, limit);
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    diff += std::pow(double(y.data<float>()[i]) - double(y_exact.data<float>()[i]), 2);
    norm += std::pow(double(y_exact.data<float>()[i]), 2);
  }
  EXPECT_GT(diff / norm, 1e-8);  // FP8 rounding of h is visible
  EXPECT_LT(diff / norm, 1e-2);  // and small
}

}  // namespace
}  // namespace dsv4
