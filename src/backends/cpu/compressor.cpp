// CSA/HCA token compressor: softmax pooling of each closed window, RMSNorm, RoPE at the window's
// first position. State: a ring of the last `ring` tokens' (kv, score + ape) per sequence.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

void cpu_ops::compressor(const tensor& kv, const tensor& score, const tensor& positions,
                         const tensor& state_base, const tensor& emit_rows, const tensor& ape,
                         const tensor& norm_weight, const tensor& inv_freq,
                         const compressor_params& p, tensor& state_kv, tensor& state_score,
                         tensor& out_pool) {
  check_f32(kv, "compressor kv");
  check_f32(score, "compressor score");
  const int64_t T = kv.size(0);
  const int64_t hd = p.head_dim;
  const int64_t width = (p.overlap ? 2 : 1) * hd;
  const int64_t ring = (p.overlap ? 2 : 1) * p.rate;
  DSV4_CHECK(kv.size(1) == width && score.size(1) == width && ape.size(0) == p.rate &&
                 ape.size(1) == width && state_kv.size(1) == width && out_pool.size(1) == hd,
             "compressor: kv {} score {} ape {} state {} pool {} for rate {} head_dim {}",
             kv.shape().str(), score.shape().str(), ape.shape().str(), state_kv.shape().str(),
             out_pool.shape().str(), p.rate, hd);
  const int32_t* pos = positions.data<int32_t>();
  const int32_t* base = state_base.data<int32_t>();
  const int32_t* emit = emit_rows.data<int32_t>();
  float* skv = state_kv.data<float>();
  float* ssc = state_score.data<float>();

  std::vector<float> entry(hd);
  std::vector<const float*> slot_kv;
  std::vector<const float*> slot_score;
  // Tokens in step order: a window's earlier tokens are in the ring before its last one arrives.
  for (int64_t t = 0; t < T; ++t) {
    const int64_t row = base[t] + pos[t] % ring;
    DSV4_CHECK(base[t] >= 0 && row < state_kv.size(0), "compressor: state row {} of {}", row,
               state_kv.size(0));
    const float* a = ape.data<float>() + (pos[t] % p.rate) * width;
    for (int64_t c = 0; c < width; ++c) {
      skv[row * width + c] = kv.data<float>()[t * width + c];
      ssc[row * width + c] = score.data<float>()[t * width + c] + a[c];
    }
    if (emit[t] < 0) continue;
    DSV4_CHECK((pos[t] + 1) % p.rate == 0 && emit[t] < out_pool.size(0),
               "compressor: token at position {} cannot close a window of {} (row {})", pos[t],
               p.rate, emit[t]);
    const int64_t w = pos[t] / p.rate;
    // Slots: with overlap, channels [0, hd) of window w-1 (absent for w = 0), then channels
    // [hd, 2hd) of window w; without, channels [0, hd) of window w.
    slot_kv.clear();
    slot_score.clear();
    if (p.overlap && w > 0)
      for (int64_t i = 0; i < p.rate; ++i) {
        const int64_t r = base[t] + ((w - 1) * p.rate + i) % ring;
        slot_kv.push_back(skv + r * width);
        slot_score.push_back(ssc + r * width);
      }
    const int64_t offset = p.overlap ? hd : 0;
    for (int64_t i = 0; i < p.rate; ++i) {
      const int64_t r = base[t] + (w * p.rate + i) % ring;
      slot_kv.push_back(skv + r * width + offset);
      slot_score.push_back(ssc + r * width + offset);
    }
    const size_t n = slot_kv.size();
    for (int64_t c = 0; c < hd; ++c) {
      float mx = -INFINITY;
      for (size_t i = 0; i < n; ++i) mx = std::max(mx, slot_score[i][c]);
      float den = 0;
      float num = 0;
      for (size_t i = 0; i < n; ++i) {
        const float e = std::exp(slot_score[i][c] - mx);
        den += e;
        num += e * slot_kv[i][c];
      }
      entry[c] = num / den;
    }
    const float inv =
        1.0f / std::sqrt(dot(entry.data(), entry.data(), hd) / float(hd) + p.norm_eps);
    float* out = out_pool.data<float>() + int64_t(emit[t]) * hd;
    for (int64_t c = 0; c < hd; ++c) out[c] = norm_weight.data<float>()[c] * (entry[c] * inv);
    rope_rotate(out + hd - p.rope_dim, p.rope_dim, int32_t(w * p.rate), inv_freq.data<float>(),
                false);
  }
}

}  // namespace dsv4::cpu
