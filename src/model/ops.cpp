// Default implementations of the optional ops (backends without FP4 indexer keys) and of the
// fusable chains (composed of the required ops).
#include "model/ops.h"

#include "core/error.h"

namespace dsv4 {

void ops::pack_indexer_fp4_rows(const tensor&, const tensor&, tensor&, tensor&) {
  DSV4_CHECK(false, "pack_indexer_fp4_rows: the {} backend keeps no FP4 indexer keys", name());
}

tensor ops::indexer_topk_fp4(const tensor& q, const tensor& weights, const tensor& key_pool,
                             const tensor&, const tensor&, const tensor& block_table,
                             const tensor& token_seq, const tensor& n_visible, int64_t heads,
                             int64_t block_size, int64_t top_k, float q_scale) {
  return indexer_topk(q, weights, key_pool, block_table, token_seq, n_visible, heads, block_size,
                      top_k, q_scale);
}

tensor ops::hc_post_pre_norm(const tensor& x, const tensor* f, const tensor& fn, const tensor& base,
                             const tensor& scale, int64_t sinkhorn_iters, float hc_eps,
                             float norm_eps, const tensor& norm_weight, tensor& post, tensor& comb,
                             tensor& x_next, const tensor* fp8_copy_rows, tensor* fp8_copy) {
  DSV4_CHECK(!fp8_copy_rows == !fp8_copy,
             "hc_post_pre_norm: an FP8 copy needs its rows and its "
             "output");
  tensor next = f ? hc_post(x, *f, post, comb) : x;
  tensor y = rms_norm(hc_pre(next, fn, base, scale, sinkhorn_iters, hc_eps, norm_eps, post, comb),
                      &norm_weight, norm_eps);
  if (fp8_copy) {
    *fp8_copy = gather_rows(y, *fp8_copy_rows);
    fake_quant_fp8_act(*fp8_copy, 128);
  }
  x_next = next;
  return y;
}

}  // namespace dsv4
