// Paged per-sequence state for DeepSeek-V4: block tables (128 rows per block) for the sliding
// window keys and for each compression rate's entries, a state slot per sequence for the
// compressors' open windows, and the per-layer pools (allocated through the backend).
//
// Invariants: a sequence appears at most once per step, with its tokens in position order;
// window blocks that no future query can see (all positions < length - window + 1) are freed
// after each step; compressed entries are kept for the sequence's lifetime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "model/layer_cache.h"
#include "model/ops.h"
#include "model/step_plan.h"

namespace dsv4 {

// Storage of the window and compressed KV pools: the backend's activation dtype, or FP8 records
// (io/kv_record.h: 584 instead of 1024 bytes per 512-dim row; backends with ops::kv_records()).
// Records hold the rows rounded as the official precision mode rounds them
// (fake_quant_kv_fp8), whatever the precision mode; the indexer's keys stay activations.
enum class kv_cache_dtype : uint8_t { activations, fp8 };

struct cache_options {
  int64_t max_sequences = 4;
  int64_t max_context = 4096;  // tokens per sequence
  int64_t block_size = 128;
  kv_cache_dtype kv_dtype = kv_cache_dtype::activations;
  // FP4 copies of the indexer keys (layer_cache::index_fp4_codes / scales) that the indexer reads,
  // on backends with ops::indexer_fp4_keys(). Only exact where the keys are FP4 values: the runner
  // keeps this on in the official precision mode only.
  bool indexer_fp4 = true;
};

// "auto" (the activation dtype) or "fp8"; throws on anything else.
kv_cache_dtype parse_kv_cache_dtype(const std::string& name);
// KV bytes per cached row of one pool of `width` values (1024 for bf16 at 512, 584 for records).
int64_t kv_cache_row_bytes(kv_cache_dtype kind, dtype activations, int64_t width);

// The tokens one sequence contributes to a step.
struct sequence_chunk {
  int seq = -1;
  std::vector<int32_t> ids;
  bool all_logits = false;  // logits for every token, else only for the last one
};

class kv_cache {
 public:
  kv_cache(const model_config& config, ops& backend, const cache_options& options);

  int add_sequence();  // returns the sequence handle; throws when all slots are taken
  void release_sequence(int seq);
  int64_t length(int seq) const;
  const cache_options& options() const { return options_; }

  // Allocates blocks for the chunks and describes the step. Call commit() after the forward.
  // pad_block_tables: the compressed block tables are as wide as a sequence can ever need
  // (max_context / rate entries), -1 padded, instead of as wide as the step's longest, so that
  // the plan's shapes depend only on the chunk sizes (a captured decode graph replays them).
  step_plan plan(const std::vector<sequence_chunk>& chunks, bool pad_block_tables = false);
  void commit(const std::vector<sequence_chunk>& chunks);

  std::vector<layer_cache>& layers() { return layers_; }

 private:
  struct block_pool {
    std::vector<int32_t> free_blocks;
    int32_t take(const char* what);
    void give(int32_t block) { free_blocks.push_back(block); }
  };
  struct sequence {
    bool active = false;
    int64_t length = 0;
    std::vector<int32_t> window_blocks;  // logical block -> block id, -1 when freed
    std::vector<int32_t> csa_blocks;
    std::vector<int32_t> hca_blocks;
  };
  void ensure_blocks(std::vector<int32_t>& table, int64_t rows, block_pool& pool, const char* what);
  void fill_compressed(const std::vector<sequence_chunk>& chunks, int64_t rate, bool csa, bool pad,
                       compressed_plan& out);
  void check_sequence(int seq) const;

  const model_config& config_;
  cache_options options_;
  std::vector<sequence> sequences_;
  block_pool window_pool_, csa_pool_, hca_pool_;
  std::vector<layer_cache> layers_;
};

}  // namespace dsv4
