// Sparse attention over window rows + compressed rows with a per-head sink in the softmax
// denominator. K = V: the same row is the key and the value.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace dsv4::cpu {

namespace {

// Appends the key rows of token t from `src` to `keys`.
void collect_keys(const kv_source& src, int64_t t, std::vector<const float*>& keys) {
  const int64_t d = src.pool->size(1);
  const float* pool = src.pool->data<float>();
  const int64_t pool_rows = src.pool->size(0);
  auto push = [&](int64_t row) {
    DSV4_CHECK(row < pool_rows, "attention: key row {} of {}", row, pool_rows);
    keys.push_back(pool + row * d);
  };
  if (src.rows) {
    const int64_t k = src.rows->size(1);
    const int32_t* r = src.rows->data<int32_t>() + t * k;
    for (int64_t i = 0; i < k; ++i)
      if (r[i] >= 0) push(r[i]);
    return;
  }
  const int64_t width = src.block_table->size(1);
  const int32_t* table =
      src.block_table->data<int32_t>() + src.token_seq->data<int32_t>()[t] * width;
  const int64_t n = src.n_visible->data<int32_t>()[t];
  for (int64_t s = 0; s < n; ++s) {
    const int64_t block = s / src.block_size;
    DSV4_CHECK(block < width && table[block] >= 0, "attention: entry {} has no block", s);
    push(int64_t(table[block]) * src.block_size + s % src.block_size);
  }
}

}  // namespace

tensor cpu_ops::sparse_attention(const tensor& q, int64_t heads, const kv_source& window,
                                 const kv_source* compressed, const tensor& sinks, float scale) {
  check_f32(q, "attention q");
  const int64_t T = q.size(0);
  const int64_t d = window.pool->size(1);
  DSV4_CHECK(q.size(1) == heads * d && sinks.numel() == heads,
             "attention: q {} for {} heads of {} and {} sinks", q.shape().str(), heads, d,
             sinks.numel());
  if (compressed)
    DSV4_CHECK(compressed->pool->size(1) == d, "attention: compressed rows of {} for head dim {}",
               compressed->pool->size(1), d);
  tensor out = tensor::empty(dtype::f32, {T, heads * d});
  thread_pool::global().parallel_for(T, [&](int64_t b, int64_t e) {
    std::vector<const float*> keys;
    std::vector<float> s;
    for (int64_t t = b; t < e; ++t) {
      keys.clear();
      collect_keys(window, t, keys);
      if (compressed) collect_keys(*compressed, t, keys);
      s.resize(keys.size());
      for (int64_t h = 0; h < heads; ++h) {
        const float* qh = q.data<float>() + (t * heads + h) * d;
        float* oh = out.data<float>() + (t * heads + h) * d;
        const float sink = sinks.data<float>()[h];
        float mx = sink;
        for (size_t i = 0; i < keys.size(); ++i)
          mx = std::max(mx, s[i] = scale * dot(qh, keys[i], d));
        float den = std::exp(sink - mx);
        for (int64_t c = 0; c < d; ++c) oh[c] = 0;
        for (size_t i = 0; i < keys.size(); ++i) {
          const float p = std::exp(s[i] - mx);
          den += p;
          for (int64_t c = 0; c < d; ++c) oh[c] += p * keys[i][c];
        }
        for (int64_t c = 0; c < d; ++c) oh[c] /= den;
      }
    }
  });
  return out;
}

}  // namespace dsv4::cpu
