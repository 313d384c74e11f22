// CPU reference ops against double-precision textbook formulas and invariants, on fresh random
// inputs. (The whole-model oracle is transformers, in tests/model.)
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/cpu/cpu_ops.h"

namespace dsv4 {
namespace {

struct rng_fill {
  std::mt19937 gen{1234};
  tensor f32(const dims& shape, float stddev = 1.0f) {
    std::normal_distribution<float> n(0.0f, stddev);
    tensor t = tensor::empty(dtype::f32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(gen);
    return t;
  }
};

tensor i32(const std::vector<int32_t>& v, const dims& shape) {
  tensor t = tensor::empty(dtype::i32, shape);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

TEST(cpu_ops, sparse_attention_matches_softmax_with_sink) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t T = 3, H = 2, d = 16, rows = 10;
  tensor q = r.f32({T, H * d});
  tensor pool = r.f32({rows, d});
  tensor comp_pool = r.f32({rows, d});
  tensor sinks = r.f32({H});
  // Token t sees window rows {t, t+1, -1} and compressed rows {2t, -1}.
  tensor wrows = i32({0, 1, -1, 1, 2, -1, 2, 3, -1}, {T, 3});
  tensor crows = i32({0, -1, 2, -1, 4, -1}, {T, 2});
  kv_source window{&pool, &wrows};
  kv_source comp{&comp_pool, &crows};
  const float scale = 0.3f;
  tensor out = o.sparse_attention(q, H, window, &comp, sinks, scale);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<const float*> keys = {pool.data<float>() + t * d,
                                        pool.data<float>() + (t + 1) * d,
                                        comp_pool.data<float>() + 2 * t * d};
      std::vector<double> logits;
      for (auto* k : keys) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += double(q.data<float>()[(t * H + h) * d + c]) * k[c];
        logits.push_back(scale * s);
      }
      double den = std::exp(double(sinks.data<float>()[h]));
      for (double l : logits) den += std::exp(l);
      for (int64_t c = 0; c < d; ++c) {
        double num = 0;
        for (size_t i = 0; i < keys.size(); ++i) num += std::exp(logits[i]) * keys[i][c];
        EXPECT_NEAR(out.data<float>()[(t * H + h) * d + c], num / den, 1e-5);
      }
    }
}

TEST(cpu_ops, rope_inverse_undoes_rope_and_keeps_the_leading_dims) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t T = 4, H = 3, d = 32, rd = 8;
  tensor x = r.f32({T, H * d});
  tensor y = o.upload(x.view());
  tensor pos = i32({0, 5, 1000, 65535}, {T});
  tensor freq = r.f32({rd / 2}, 0.5f);
  o.rope(y, H, d, rd, pos, freq, false);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float* a = x.data<float>() + (t * H + h) * d;
      const float* b = y.data<float>() + (t * H + h) * d;
      for (int64_t c = 0; c < d - rd; ++c) EXPECT_EQ(a[c], b[c]);
      for (int64_t i = 0; i < rd / 2; ++i) {
        // Each interleaved pair is a complex number multiplied by e^(i * pos * freq).
        // The angle is the f32 product, as the oracle computes it (f32 rounding of a large angle
        // is part of the semantics, not an error).
        const double ang = double(float(pos.data<int32_t>()[t]) * freq.data<float>()[i]);
        const double re = a[d - rd + 2 * i], im = a[d - rd + 2 * i + 1];
        EXPECT_NEAR(b[d - rd + 2 * i], re * std::cos(ang) - im * std::sin(ang), 2e-3);
        EXPECT_NEAR(b[d - rd + 2 * i + 1], im * std::cos(ang) + re * std::sin(ang), 2e-3);
      }
    }
  o.rope(y, H, d, rd, pos, freq, true);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(y.data<float>()[i], x.data<float>()[i], 1e-5);
}

TEST(cpu_ops, hc_pre_comb_is_doubly_stochastic_and_collapse_uses_pre) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t T = 5, hc = 4, D = 24, mix = (2 + hc) * hc;
  tensor x = r.f32({T, hc, D});
  tensor fn = r.f32({mix, hc * D}, 0.3f);
  tensor base = r.f32({mix}, 0.5f);
  tensor scale = r.f32({3}, 1.0f);
  tensor post = tensor::empty(dtype::f32, {T, hc});
  tensor comb = tensor::empty(dtype::f32, {T, hc, hc});
  tensor y = o.hc_pre(x, fn, base, scale, 20, 1e-6f, 1e-6f, post, comb);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < hc; ++j) {
      double row = 0, col = 0;
      for (int64_t k = 0; k < hc; ++k) {
        row += comb.data<float>()[t * hc * hc + j * hc + k];
        col += comb.data<float>()[t * hc * hc + k * hc + j];
      }
      EXPECT_NEAR(row, 1.0, 1e-3);
      EXPECT_NEAR(col, 1.0, 1e-4);  // the last Sinkhorn step normalises columns
      const float p = post.data<float>()[t * hc + j];
      EXPECT_GT(p, 0.0f);
      EXPECT_LT(p, 2.0f);
    }
    // pre_j = sigmoid(mix_j * scale0 + base_j) + eps with mix = rmsnormed(x) . fn_j.
    const float* xt = x.data<float>() + t * hc * D;
    double ms = 0;
    for (int64_t i = 0; i < hc * D; ++i) ms += double(xt[i]) * xt[i];
    const double inv = 1.0 / std::sqrt(ms / double(hc * D) + 1e-6);
    for (int64_t i = 0; i < D; ++i) {
      double want = 0;
      for (int64_t j = 0; j < hc; ++j) {
        double m = 0;
        for (int64_t c = 0; c < hc * D; ++c) m += xt[c] * inv * fn.data<float>()[j * hc * D + c];
        const double pre =
            1.0 / (1.0 + std::exp(-(m * scale.data<float>()[0] + base.data<float>()[j]))) + 1e-6;
        want += pre * xt[j * D + i];
      }
      EXPECT_NEAR(y.data<float>()[t * D + i], want, 1e-4);
    }
  }
}

TEST(cpu_ops, indexer_topk_picks_the_best_visible_entries_through_the_block_table) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t T = 4, H = 3, d = 8, bs = 4, rows = 5 * bs;
  tensor q = r.f32({T, H * d});
  tensor w = r.f32({T, H});
  tensor keys = r.f32({rows, d});
  // One sequence whose entries live in blocks 3, 0, 4 (logical order).
  tensor table = i32({3, 0, 4}, {1, 3});
  tensor seq = i32({0, 0, 0, 0}, {T});
  tensor visible = i32({0, 2, 7, 12}, {T});
  const int64_t k = 5;
  tensor got = o.indexer_topk(q, w, keys, table, seq, visible, H, bs, k, 0.25f);
  const int32_t blocks[] = {3, 0, 4};
  for (int64_t t = 0; t < T; ++t) {
    const int64_t n = visible.data<int32_t>()[t];
    std::vector<std::pair<double, int64_t>> s;
    for (int64_t e = 0; e < n; ++e) {
      const int64_t row = blocks[e / bs] * bs + e % bs;
      double acc = 0;
      for (int64_t h = 0; h < H; ++h) {
        double dp = 0;
        for (int64_t c = 0; c < d; ++c)
          dp += double(q.data<float>()[(t * H + h) * d + c]) * keys.data<float>()[row * d + c];
        acc += w.data<float>()[t * H + h] * std::max(dp, 0.0) * 0.25;
      }
      s.emplace_back(-acc, e);  // ties (ReLU zeros) go to the lower entry
    }
    std::sort(s.begin(), s.end());
    for (int64_t i = 0; i < k; ++i) {
      const int64_t want = i < n ? blocks[s[i].second / bs] * bs + s[i].second % bs : -1;
      EXPECT_EQ(got.data<int32_t>()[t * k + i], want) << t << " " << i;
    }
  }
}

TEST(cpu_ops, compressor_pools_closed_windows_and_keeps_partial_ones_in_state) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t rate = 4, hd = 8, width = 2 * hd, ring = 2 * rate;
  compressor_params p;
  p.rate = rate;
  p.overlap = true;
  p.head_dim = hd;
  p.rope_dim = 4;
  tensor kv = r.f32({12, width});
  tensor score = r.f32({12, width});
  tensor ape = r.f32({rate, width});
  tensor norm = r.f32({hd});
  tensor freq = r.f32({2});
  std::vector<int32_t> posv, base, emit;
  for (int32_t i = 0; i < 12; ++i) {
    posv.push_back(i);
    base.push_back(0);
    emit.push_back((i + 1) % rate == 0 ? int32_t(i / rate) : -1);
  }
  tensor state_kv = tensor::zeros(dtype::f32, {ring, width});
  tensor state_score = tensor::zeros(dtype::f32, {ring, width});
  tensor pool = tensor::zeros(dtype::f32, {3, hd});
  // Feed as chunks 5 + 7 to exercise the ring across calls.
  auto slice = [](const tensor& t, int64_t a, int64_t n) {
    tensor s = tensor::empty(t.type(), [&] {
      dims d = t.shape();
      d[0] = n;
      return d;
    }());
    std::copy(t.data<float>() + a * t.size(1), t.data<float>() + (a + n) * t.size(1),
              s.data<float>());
    return s;
  };
  for (auto [a, n] : {std::pair<int64_t, int64_t>{0, 5}, {5, 7}}) {
    tensor pp = i32(std::vector<int32_t>(posv.begin() + a, posv.begin() + a + n), {n});
    tensor bb = i32(std::vector<int32_t>(base.begin() + a, base.begin() + a + n), {n});
    tensor ee = i32(std::vector<int32_t>(emit.begin() + a, emit.begin() + a + n), {n});
    o.compressor(slice(kv, a, n), slice(score, a, n), pp, bb, ee, ape, norm, freq, p, state_kv,
                 state_score, pool);
  }
  for (int64_t w = 0; w < 3; ++w) {
    // Slots: Ca (channels [0, hd)) of window w-1 if any, Cb (channels [hd, 2hd)) of window w.
    std::vector<double> entry(hd);
    for (int64_t c = 0; c < hd; ++c) {
      std::vector<std::pair<double, double>> slots;  // (score, kv)
      for (int64_t i = 0; i < rate; ++i) {
        if (w > 0) {
          const int64_t t = (w - 1) * rate + i;
          slots.emplace_back(score.data<float>()[t * width + c] + ape.data<float>()[i * width + c],
                             kv.data<float>()[t * width + c]);
        }
        const int64_t t = w * rate + i;
        slots.emplace_back(
            score.data<float>()[t * width + hd + c] + ape.data<float>()[i * width + hd + c],
            kv.data<float>()[t * width + hd + c]);
      }
      double mx = -1e30, den = 0, num = 0;
      for (auto& s : slots) mx = std::max(mx, s.first);
      for (auto& s : slots) den += std::exp(s.first - mx), num += std::exp(s.first - mx) * s.second;
      entry[c] = num / den;
    }
    double ms = 0;
    for (double v : entry) ms += v * v;
    const double inv = 1.0 / std::sqrt(ms / double(hd) + 1e-6);
    for (int64_t c = 0; c < hd - p.rope_dim; ++c)
      EXPECT_NEAR(pool.data<float>()[w * hd + c], norm.data<float>()[c] * entry[c] * inv, 1e-5)
          << "window " << w << " channel " << c;
  }
}

TEST(cpu_ops, hash_router_uses_tid2eid_and_normalised_scores) {
  cpu::cpu_ops o;
  rng_fill r;
  const int64_t T = 3, D = 8, E = 6, K = 2;
  tensor x = r.f32({T, D});
  linear_weight lw;
  tensor gw = r.f32({E, D});
  lw.name = "gate";
  lw.out = E;
  lw.in = D;
  lw.weight = gw.view();
  auto gate = o.prepare_linear(lw);
  tensor table = i32({0, 1, 2, 3, 4, 5, 5, 0}, {4, K});
  tensor ids = i32({3, 1, 2}, {T});
  tensor idx = tensor::empty(dtype::i32, {T, K});
  tensor wts = tensor::empty(dtype::f32, {T, K});
  o.moe_route(x, *gate, nullptr, &table, ids, router_score::sqrtsoftplus, K, true, 1.5f, idx, wts);
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      EXPECT_EQ(idx.data<int32_t>()[t * K + k],
                table.data<int32_t>()[ids.data<int32_t>()[t] * K + k]);
      sum += wts.data<float>()[t * K + k];
    }
    EXPECT_NEAR(sum, 1.5, 1e-5);
  }
  // Score routing: the bias changes the choice, not the weights' source.
  tensor bias = tensor::zeros(dtype::f32, {E});
  bias.data<float>()[E - 1] = 100.0f;
  o.moe_route(x, *gate, &bias, nullptr, ids, router_score::sqrtsoftplus, K, true, 1.0f, idx, wts);
  for (int64_t t = 0; t < T; ++t) EXPECT_EQ(idx.data<int32_t>()[t * K], E - 1);
}

}  // namespace
}  // namespace dsv4
