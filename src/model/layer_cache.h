// Per-layer cache storage, allocated by the cache manager through the backend. Row layout of
// every pool: row = block * block_size + offset; block ids come from the sequence's block tables
// (shared by all layers of the same kind).
#pragma once

#include "core/tensor.h"

namespace dsv4 {

// window_pool and comp_pool are [rows, head_dim] activations, or (cache_options::kv_dtype fp8)
// u8 [blocks, block_bytes] pools of FP8 records with the cache's block size as rows_per_block
// (io/kv_record.h, kv_cache_record_layout): the same rows, 584 instead of 1024 bytes each at
// V4's 512 dims.
struct layer_cache {
  tensor window_pool;       // [rows, head_dim]: kv (after norm and RoPE) of recent positions
  tensor comp_pool;         // [rows, head_dim]: compressed entries (CSA/HCA layers)
  tensor comp_state_kv;     // [sequences * ring, width]: compressor inputs of open windows
  tensor comp_state_score;  // same shape: gate scores (+ ape)
  tensor index_pool;        // [rows, index_head_dim]: indexer keys (CSA layers)
  tensor index_state_kv;    // [sequences * ring, 2 * index_head_dim]
  tensor index_state_score;
  // FP4 copies of index_pool's rows (io/indexer_fp4_key.h; cache_options::indexer_fp4): codes
  // u8 [rows, 64] and scales i32 [rows] (four E8M0 bytes), 68 instead of 256 bytes per key read
  // by the indexer. Undefined when off.
  tensor index_fp4_codes;
  tensor index_fp4_scales;
};

}  // namespace dsv4
