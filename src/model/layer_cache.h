// Per-layer cache storage, allocated by the cache manager through the backend. Row layout of
// every pool: row = block * block_size + offset; block ids come from the sequence's block tables
// (shared by all layers of the same kind).
#pragma once

#include "core/tensor.h"

namespace dsv4 {

struct layer_cache {
  tensor window_pool;       // [rows, head_dim]: kv (after norm and RoPE) of recent positions
  tensor comp_pool;         // [rows, head_dim]: compressed entries (CSA/HCA layers)
  tensor comp_state_kv;     // [sequences * ring, width]: compressor inputs of open windows
  tensor comp_state_score;  // same shape: gate scores (+ ape)
  tensor index_pool;        // [rows, index_head_dim]: indexer keys (CSA layers)
  tensor index_state_kv;    // [sequences * ring, 2 * index_head_dim]
  tensor index_state_score;
};

}  // namespace dsv4
