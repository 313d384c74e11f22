// Sparse attention over window rows + compressed rows with a per-head sink (f32 or bf16 storage).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// Pool element tag of FP8 KV records (io/kv_record.h: 448 e4m3 values with an E8M0 scale per 64
// and 64 BF16 RoPE values, 584 bytes per row): a kv_rows<kv_fp8_record> points at the bytes.
struct kv_fp8_record {
  uint8_t byte;
};

// Where a token's keys are, on the device (the kernel-level twin of dsv4::kv_source). Either
// explicit pool rows [tokens, rows_width] (-1 skipped), or, when rows is null, the first
// n_visible[t] entries of block-table row token_seq[t]: entry s at pool row
// block_table[token_seq[t] * table_width + s / block_size] * block_size + s % block_size.
// Every index is bounds-checked on the device: a row outside [0, pool_rows), an entry whose
// block is missing (-1 or past table_width) or a token_seq outside [0, table_rows) is skipped
// (the CPU backend throws on those instead).
// act_t: float or __nv_bfloat16, the activation (and pool) storage type; or kv_fp8_record (only
// sparse_attention_decode reads those).
template <typename act_t>
struct kv_rows {
  const act_t* pool = nullptr;  // [pool_rows, head_dim], or the record bytes
  int64_t pool_rows = 0;
  const int32_t* rows = nullptr;  // explicit rows, or null for the paged form
  int64_t rows_width = 0;
  const int32_t* block_table = nullptr;  // [table_rows, table_width]
  int64_t table_rows = 0;
  int64_t table_width = 0;
  const int32_t* token_seq = nullptr;  // [tokens]
  const int32_t* n_visible = nullptr;  // [tokens]
  int64_t block_size = 128;
  // Record pools only (kv_rows<kv_fp8_record>): the layout's rows_per_block and block_bytes
  // (dsv4::kv_record_layout; pool_rows counts records).
  int64_t record_rows_per_block = 0;
  int64_t record_block_bytes = 0;
};

// out[t, h*d : (h+1)*d] = sum_i e^(s_i - m) k_i / (sum_i e^(s_i - m) + e^(sinks[h] - m)) with
// s_i = scale * q[t, h] . k_i over the keys of `window` then of `compressed` (may be null); K = V.
// q and out are [tokens, heads * head_dim], head_dim <= 512. A token with no keys gets 0.
// q, pools and out are act_t; sinks f32; scores, softmax and accumulation f32.
template <typename act_t>
cudaError_t sparse_attention(const act_t* q, int64_t tokens, int64_t heads, int64_t head_dim,
                             const kv_rows<act_t>& window, const kv_rows<act_t>* compressed,
                             const float* sinks, float scale, act_t* out, cudaStream_t stream);

}  // namespace dsv4::cuda
