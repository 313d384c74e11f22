// Default implementations of the optional ops (backends without FP4 indexer keys).
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

}  // namespace dsv4
