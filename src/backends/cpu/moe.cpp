// Router (sqrt-softplus / softmax / sigmoid scores, bias for selection only, hash routing through
// tid2eid) and routed experts with the clamped SwiGLU.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

void cpu_ops::moe_route(const tensor& x, const prepared_linear& gate, const tensor* bias,
                        const tensor* tid2eid, const tensor& ids, router_score score, int64_t top_k,
                        bool normalize, float route_scale, tensor& indices, tensor& weights) {
  const int64_t T = x.size(0);
  const int64_t E = gate.out;
  DSV4_CHECK(top_k > 0 && top_k <= E, "router: top-{} of {} experts", top_k, E);
  tensor logits = linear(x, gate);
  for (int64_t t = 0; t < T; ++t) {
    float* l = logits.data<float>() + t * E;
    if (score == router_score::softmax) {
      const float mx = *std::max_element(l, l + E);
      float sum = 0;
      for (int64_t e = 0; e < E; ++e) sum += (l[e] = std::exp(l[e] - mx));
      for (int64_t e = 0; e < E; ++e) l[e] /= sum;
    } else {
      for (int64_t e = 0; e < E; ++e) {
        const float v = l[e];
        if (score == router_score::sigmoid)
          l[e] = 1.0f / (1.0f + std::exp(-v));
        else
          l[e] = std::sqrt(v > 20.0f ? v : std::log1p(std::exp(v)));  // softplus threshold 20
      }
    }
    int32_t* idx = indices.data<int32_t>() + t * top_k;
    if (tid2eid) {
      const int32_t id = ids.data<int32_t>()[t];
      DSV4_CHECK(id >= 0 && id < tid2eid->size(0), "router: token id {} outside tid2eid", id);
      for (int64_t k = 0; k < top_k; ++k) idx[k] = tid2eid->data<int32_t>()[id * top_k + k];
    } else {
      std::vector<int32_t> order(E);
      for (int64_t e = 0; e < E; ++e) order[e] = int32_t(e);
      const float* b = bias ? bias->data<float>() : nullptr;
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [&](int32_t a, int32_t c) {
                          const float va = l[a] + (b ? b[a] : 0.0f);
                          const float vc = l[c] + (b ? b[c] : 0.0f);
                          return va > vc || (va == vc && a < c);
                        });
      std::copy(order.begin(), order.begin() + top_k, idx);
    }
    float* w = weights.data<float>() + t * top_k;
    float sum = 0;
    for (int64_t k = 0; k < top_k; ++k) sum += (w[k] = l[idx[k]]);
    for (int64_t k = 0; k < top_k; ++k)
      w[k] = (normalize ? w[k] / (sum + 1e-20f) : w[k]) * route_scale;
  }
}

namespace {

// Shared body of moe_experts (exact order: y += w * w2(h)) and moe_experts_official (h *= w,
// FP8 fake-quant of h per 128 values, y += w2(h)).
tensor experts_forward(const tensor& x, const tensor& indices, const tensor& weights,
                       const prepared_experts& experts, float swiglu_limit, bool official) {
  check_f32(x, "moe input");
  const auto& ex = static_cast<const cpu_experts&>(experts);
  const int64_t T = x.size(0);
  const int64_t D = ex.hidden;
  const int64_t I = ex.inter;
  const int64_t K = indices.size(1);
  DSV4_CHECK(x.size(1) == D, "moe: input {} for hidden {}", x.shape().str(), D);
  tensor y = tensor::zeros(dtype::f32, {T, D});
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    std::vector<float> h(I);
    for (int64_t t = b; t < e; ++t) {
      const float* xt = x.data<float>() + t * D;
      float* yt = y.data<float>() + t * D;
      for (int64_t k = 0; k < K; ++k) {
        const int32_t ei = indices.data<int32_t>()[t * K + k];
        DSV4_CHECK(ei >= 0 && ei < ex.count, "moe: expert {} of {}", ei, ex.count);
        const float* w1 = ex.w1[ei].data<float>();
        const float* w3 = ex.w3[ei].data<float>();
        const float* w2 = ex.w2[ei].data<float>();
        for (int64_t i = 0; i < I; ++i) {
          const float g = std::min(dot(xt, w1 + i * D, D), swiglu_limit);
          const float u = std::clamp(dot(xt, w3 + i * D, D), -swiglu_limit, swiglu_limit);
          h[i] = g / (1.0f + std::exp(-g)) * u;
        }
        const float wk = weights.data<float>()[t * K + k];
        if (official) {
          // The official Expert scales h by the routing weight, and the FP8/FP4 w2 quantizes
          // its input (docs/dsv4-model.md §3.7, §4).
          for (int64_t i = 0; i < I; ++i) h[i] *= wk;
          fake_quant_fp8_values(h.data(), I, 128);
          for (int64_t o = 0; o < D; ++o) yt[o] += dot(h.data(), w2 + o * I, I);
        } else {
          for (int64_t o = 0; o < D; ++o) yt[o] += wk * dot(h.data(), w2 + o * I, I);
        }
      }
    }
  });
  return y;
}

}  // namespace

tensor cpu_ops::moe_experts(const tensor& x, const tensor& indices, const tensor& weights,
                            const prepared_experts& experts, float swiglu_limit) {
  return experts_forward(x, indices, weights, experts, swiglu_limit, false);
}

tensor cpu_ops::moe_experts_official(const tensor& x, const tensor& indices, const tensor& weights,
                                     const prepared_experts& experts, float swiglu_limit) {
  return experts_forward(x, indices, weights, experts, swiglu_limit, true);
}

}  // namespace dsv4::cpu
