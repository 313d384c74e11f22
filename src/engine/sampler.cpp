#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace dsv4 {

void sampler::validate(const sampling_params& p) {
  DSV4_CHECK(std::isfinite(p.temperature) && p.temperature >= 0, "temperature must be >= 0, got {}",
             p.temperature);
  DSV4_CHECK(p.top_k >= 0, "top_k must be >= 0, got {}", p.top_k);
  DSV4_CHECK(p.top_p > 0 && p.top_p <= 1, "top_p must be in (0, 1], got {}", p.top_p);
}

sampler::sampler(const sampling_params& params) : params_(params), rng_(params.seed) {
  validate(params);
}

int32_t sampler::sample(const float* logits, int64_t vocab) {
  DSV4_CHECK(vocab > 0, "sampler: empty logits");
  // Greedy: the first maximum (NaN never wins).
  if (params_.temperature == 0.0f) {
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (logits[i] > logits[best] || std::isnan(logits[best])) best = i;
    return int32_t(best);
  }
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  int64_t keep = vocab;
  if (params_.top_k > 0) keep = std::min(keep, params_.top_k);
  const double inv_t = 1.0 / params_.temperature;
  const double mx = double(logits[order[0]]);
  std::vector<double> p(keep);
  double sum = 0;
  for (int64_t i = 0; i < keep; ++i)
    sum += (p[i] = std::exp((double(logits[order[i]]) - mx) * inv_t));
  // top-p: the smallest prefix whose probability reaches top_p (at least one token).
  if (params_.top_p < 1.0f) {
    double cum = 0;
    int64_t cut = keep;
    for (int64_t i = 0; i < keep; ++i) {
      cum += p[i] / sum;
      if (cum >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  }
  std::uniform_real_distribution<double> u(0.0, sum);
  double r = u(rng_);
  for (int64_t i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0) return order[i];
  }
  return order[keep - 1];
}

}  // namespace dsv4
