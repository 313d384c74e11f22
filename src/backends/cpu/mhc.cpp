// Manifold-constrained hyper-connections: hc_pre (collapse + Sinkhorn mixing weights), hc_post
// (expand + mix), hc_head (final collapse). All f32.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

namespace {

float sigmoid(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

// mixes[j] = (x / rms(x)) . fn[j] for the flattened streams x of one token.
void hc_mixes(const float* x, int64_t n, const float* fn, int64_t outputs, float norm_eps,
              float* mixes) {
  const float inv = 1.0f / std::sqrt(dot(x, x, n) / float(n) + norm_eps);
  std::vector<float> xn(n);
  for (int64_t i = 0; i < n; ++i) xn[i] = x[i] * inv;
  for (int64_t j = 0; j < outputs; ++j) mixes[j] = dot(xn.data(), fn + j * n, n);
}

}  // namespace

tensor cpu_ops::hc_pre(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                       int64_t sinkhorn_iters, float hc_eps, float norm_eps, tensor& post,
                       tensor& comb) {
  check_f32(x, "hc_pre input");
  const int64_t T = x.size(0);
  const int64_t hc = x.size(1);
  const int64_t D = x.size(2);
  const int64_t mix = (2 + hc) * hc;
  DSV4_CHECK(fn.size(0) == mix && fn.size(1) == hc * D && base.numel() == mix && scale.numel() == 3,
             "hc_pre: fn {} base {} scale {} for {} streams of {}", fn.shape().str(),
             base.shape().str(), scale.shape().str(), hc, D);
  tensor y = tensor::empty(dtype::f32, {T, D});
  const float* s = scale.data<float>();
  const float* bs = base.data<float>();
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    std::vector<float> m(mix);
    std::vector<float> c(hc * hc);
    std::vector<float> pre(hc);
    for (int64_t t = b; t < e; ++t) {
      const float* xt = x.data<float>() + t * hc * D;
      hc_mixes(xt, hc * D, fn.data<float>(), mix, norm_eps, m.data());
      for (int64_t j = 0; j < hc; ++j) {
        pre[j] = sigmoid(m[j] * s[0] + bs[j]) + hc_eps;
        post.data<float>()[t * hc + j] = 2.0f * sigmoid(m[hc + j] * s[1] + bs[hc + j]);
      }
      // comb[j][k]: softmax over k of each row j, + eps; then column normalisation; then
      // (iters - 1) rounds of row and column normalisation, each with + eps in the denominator.
      for (int64_t j = 0; j < hc; ++j) {
        float mx = -INFINITY;
        for (int64_t k = 0; k < hc; ++k) {
          c[j * hc + k] = m[2 * hc + j * hc + k] * s[2] + bs[2 * hc + j * hc + k];
          mx = std::max(mx, c[j * hc + k]);
        }
        float sum = 0;
        for (int64_t k = 0; k < hc; ++k) sum += (c[j * hc + k] = std::exp(c[j * hc + k] - mx));
        for (int64_t k = 0; k < hc; ++k) c[j * hc + k] = c[j * hc + k] / sum + hc_eps;
      }
      auto normalize_columns = [&] {
        for (int64_t k = 0; k < hc; ++k) {
          float sum = 0;
          for (int64_t j = 0; j < hc; ++j) sum += c[j * hc + k];
          for (int64_t j = 0; j < hc; ++j) c[j * hc + k] /= sum + hc_eps;
        }
      };
      auto normalize_rows = [&] {
        for (int64_t j = 0; j < hc; ++j) {
          float sum = 0;
          for (int64_t k = 0; k < hc; ++k) sum += c[j * hc + k];
          for (int64_t k = 0; k < hc; ++k) c[j * hc + k] /= sum + hc_eps;
        }
      };
      normalize_columns();
      for (int64_t it = 1; it < sinkhorn_iters; ++it) {
        normalize_rows();
        normalize_columns();
      }
      std::copy(c.begin(), c.end(), comb.data<float>() + t * hc * hc);
      float* yt = y.data<float>() + t * D;
      for (int64_t i = 0; i < D; ++i) {
        float acc = 0;
        for (int64_t j = 0; j < hc; ++j) acc += pre[j] * xt[j * D + i];
        yt[i] = acc;
      }
    }
  });
  return y;
}

tensor cpu_ops::hc_post(const tensor& x, const tensor& f, const tensor& post, const tensor& comb) {
  check_f32(x, "hc_post residual");
  check_f32(f, "hc_post sublayer output");
  const int64_t T = x.size(0);
  const int64_t hc = x.size(1);
  const int64_t D = x.size(2);
  DSV4_CHECK(f.numel() == T * D, "hc_post: output {} for residual {}", f.shape().str(),
             x.shape().str());
  tensor y = tensor::empty(dtype::f32, x.shape());
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const float* xt = x.data<float>() + t * hc * D;
      const float* ft = f.data<float>() + t * D;
      const float* pt = post.data<float>() + t * hc;
      const float* ct = comb.data<float>() + t * hc * hc;
      float* yt = y.data<float>() + t * hc * D;
      for (int64_t k = 0; k < hc; ++k)
        for (int64_t i = 0; i < D; ++i) {
          float acc = pt[k] * ft[i];
          for (int64_t j = 0; j < hc; ++j) acc += ct[j * hc + k] * xt[j * D + i];
          yt[k * D + i] = acc;
        }
    }
  });
  return y;
}

tensor cpu_ops::hc_head(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                        float hc_eps, float norm_eps) {
  check_f32(x, "hc_head input");
  const int64_t T = x.size(0);
  const int64_t hc = x.size(1);
  const int64_t D = x.size(2);
  DSV4_CHECK(fn.size(0) == hc && fn.size(1) == hc * D && base.numel() == hc,
             "hc_head: fn {} for {} streams of {}", fn.shape().str(), hc, D);
  tensor y = tensor::empty(dtype::f32, {T, D});
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    std::vector<float> m(hc);
    for (int64_t t = b; t < e; ++t) {
      const float* xt = x.data<float>() + t * hc * D;
      hc_mixes(xt, hc * D, fn.data<float>(), hc, norm_eps, m.data());
      for (int64_t j = 0; j < hc; ++j)
        m[j] = sigmoid(m[j] * scale.data<float>()[0] + base.data<float>()[j]) + hc_eps;
      float* yt = y.data<float>() + t * D;
      for (int64_t i = 0; i < D; ++i) {
        float acc = 0;
        for (int64_t j = 0; j < hc; ++j) acc += m[j] * xt[j * D + i];
        yt[i] = acc;
      }
    }
  });
  return y;
}

}  // namespace dsv4::cpu
