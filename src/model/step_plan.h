// The host-side description of one forward step: which tokens, where their keys and compressor
// state live in the paged caches, and which positions need logits. Built by the cache manager
// (src/cache), consumed by the forward, which uploads it once per step.
#pragma once

#include <cstdint>
#include <vector>

namespace dsv4 {

// Per compression rate (all layers of that rate share the block layout).
struct compressed_plan {
  int64_t rate = 0;                  // 0: the model has no layer of this kind
  std::vector<int32_t> state_base;   // [T] first row of the token's sequence's state ring
  std::vector<int32_t> emit_rows;    // [T] pool row of the entry token t closes, else -1
  std::vector<int32_t> n_visible;    // [T] entries visible to token t: (pos + 1) / rate
  std::vector<int32_t> token_seq;    // [T] row of block_table for token t
  std::vector<int32_t> block_table;  // [sequences, block_table_width]
  int64_t block_table_width = 0;
};

struct step_plan {
  int64_t tokens = 0;
  std::vector<int32_t> ids;                // [T]
  std::vector<int32_t> positions;          // [T]
  std::vector<int32_t> window_write_rows;  // [T] window pool row receiving token t's kv
  std::vector<int32_t> window_rows;        // [T, window_width] rows of positions pos-W+1..pos
  int64_t window_width = 0;
  int64_t block_size = 128;
  compressed_plan csa;
  compressed_plan hca;
  std::vector<int32_t> logit_rows;  // tokens whose logits are returned, in output order
};

}  // namespace dsv4
