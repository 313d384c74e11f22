// Lightning indexer (f32 storage): per query token, score every visible compressed entry and
// keep the top k.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dsv4::cuda {

constexpr int64_t k_indexer_max_top_k = 2048;

// Scratch needed to score `tokens` tokens at once when sequences have up to max_entries =
// table_width * block_size entries (one f32 per (token, entry)). indexer_topk works through
// the step in token chunks that fit the scratch it is given; at least one token's worth is needed.
size_t indexer_scratch_bytes(int64_t tokens, int64_t max_entries);

// The semantics of dsv4::ops::indexer_topk: score(t, s) = sum_h weights[t, h] *
// relu(q[t, h] . key[s]) * q_scale over the first n_visible[t] entries of block-table row
// token_seq[t] (entry s at pool row block_table[seq, s / block_size] * block_size + s %
// block_size); out[t, 0 : top_k] = pool rows of the best min(top_k, n_visible[t]) entries,
// highest score first, equal scores lower entry first, -1 padded. q [tokens, heads * head_dim],
// weights [tokens, heads], key_pool [pool_rows, head_dim], block_table [table_rows, table_width],
// out [tokens, top_k] i32. head_dim % 4 == 0, top_k <= k_indexer_max_top_k. n_visible is clamped
// to [0, table_width * block_size]; an entry without a block (or whose row is outside the pool)
// scores -inf and, if selected, is written as -1 (the CPU backend throws on those).
// q, weights and key_pool are activations (act_t: float or __nv_bfloat16, pointers aligned to 4
// of them); scores f32.
template <typename act_t>
cudaError_t indexer_topk(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                         int64_t head_dim, const act_t* key_pool, int64_t pool_rows,
                         const int32_t* block_table, int64_t table_rows, int64_t table_width,
                         const int32_t* token_seq, const int32_t* n_visible, int64_t block_size,
                         int64_t top_k, float q_scale, float* scratch, size_t scratch_bytes,
                         int32_t* out, cudaStream_t stream);

}  // namespace dsv4::cuda
