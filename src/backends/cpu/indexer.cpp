// Lightning indexer: per query token, score every visible compressed entry with
// sum_h w_h * relu(q_h . k) and keep the top k (ties to the lower entry, deterministic).
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

namespace {

// Pool row of entry s of the sequence whose block table row is `table`.
int64_t paged_row(const int32_t* table, int64_t table_width, int64_t block_size, int64_t s) {
  const int64_t block = s / block_size;
  DSV4_CHECK(block < table_width && table[block] >= 0, "paged row: entry {} has no block", s);
  return int64_t(table[block]) * block_size + s % block_size;
}

}  // namespace

tensor cpu_ops::indexer_topk(const tensor& q, const tensor& weights, const tensor& key_pool,
                             const tensor& block_table, const tensor& token_seq,
                             const tensor& n_visible, int64_t heads, int64_t block_size,
                             int64_t top_k, float q_scale) {
  check_f32(q, "indexer q");
  check_f32(weights, "indexer weights");
  const int64_t T = q.size(0);
  const int64_t d = key_pool.size(1);
  DSV4_CHECK(q.size(1) == heads * d && weights.size(1) == heads,
             "indexer: q {} weights {} for {} heads of {}", q.shape().str(), weights.shape().str(),
             heads, d);
  tensor out = tensor::empty(dtype::i32, {T, top_k});
  const int64_t width = block_table.size(1);
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    std::vector<std::pair<float, int64_t>> scored;
    for (int64_t t = b; t < e; ++t) {
      const int32_t* table = block_table.data<int32_t>() + token_seq.data<int32_t>()[t] * width;
      const int64_t n = n_visible.data<int32_t>()[t];
      const float* qt = q.data<float>() + t * heads * d;
      const float* wt = weights.data<float>() + t * heads;
      scored.clear();
      for (int64_t s = 0; s < n; ++s) {
        const int64_t row = paged_row(table, width, block_size, s);
        const float* k = key_pool.data<float>() + row * d;
        float acc = 0;
        for (int64_t h = 0; h < heads; ++h)
          acc += wt[h] * (std::max(dot(qt + h * d, k, d), 0.0f) * q_scale);
        scored.emplace_back(acc, s);
      }
      const int64_t keep = std::min<int64_t>(top_k, n);
      std::partial_sort(scored.begin(), scored.begin() + keep, scored.end(),
                        [](const auto& x, const auto& y) {
                          return x.first > y.first || (x.first == y.first && x.second < y.second);
                        });
      int32_t* o = out.data<int32_t>() + t * top_k;
      for (int64_t i = 0; i < top_k; ++i)
        o[i] = i < keep ? int32_t(paged_row(table, width, block_size, scored[i].second)) : -1;
    }
  });
  return out;
}

}  // namespace dsv4::cpu
