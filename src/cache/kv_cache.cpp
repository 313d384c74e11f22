#include "cache/kv_cache.h"

#include <algorithm>

#include "core/error.h"
#include "io/indexer_fp4_key.h"
#include "io/kv_record.h"

namespace dsv4 {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::vector<int32_t> all_blocks(int64_t n) {
  std::vector<int32_t> v(n);
  // Handed out lowest id first (taken from the back).
  for (int64_t i = 0; i < n; ++i) v[i] = int32_t(n - 1 - i);
  return v;
}

}  // namespace

kv_cache_dtype parse_kv_cache_dtype(const std::string& name) {
  if (name == "auto") return kv_cache_dtype::activations;
  if (name == "fp8") return kv_cache_dtype::fp8;
  fail("unknown kv cache dtype '{}' (auto or fp8)", name);
}

int64_t kv_cache_row_bytes(kv_cache_dtype kind, dtype activations, int64_t width) {
  return kind == kv_cache_dtype::fp8 ? kv_cache_record_layout(width, 1).row_bytes()
                                     : int64_t(dtype_bytes(activations, width));
}

int32_t kv_cache::block_pool::take(const char* what) {
  DSV4_CHECK(!free_blocks.empty(), "kv cache: out of {} blocks", what);
  const int32_t b = free_blocks.back();
  free_blocks.pop_back();
  return b;
}

kv_cache::kv_cache(const model_config& config, ops& backend, const cache_options& options)
    : config_(config), options_(options) {
  DSV4_CHECK(options.max_sequences > 0 && options.max_context > 0 && options.block_size > 0,
             "kv cache: max_sequences, max_context and block_size must be positive");
  const int64_t bs = options.block_size;
  const int64_t seqs = options.max_sequences;
  const int64_t window_blocks = seqs * (ceil_div(options.max_context, bs) + 1);
  window_pool_.free_blocks = all_blocks(window_blocks);
  sequences_.resize(size_t(seqs));

  int64_t csa_blocks = 0, hca_blocks = 0;
  const int64_t csa_rate = config.compress_rate_csa;
  const int64_t hca_rate = config.compress_rate_hca;
  bool has_csa = false, has_hca = false;
  for (attention_kind k : config.layer_types) {
    has_csa |= k == attention_kind::csa;
    has_hca |= k == attention_kind::hca;
  }
  if (has_csa) csa_blocks = seqs * (ceil_div(options.max_context / csa_rate, bs) + 1);
  if (has_hca) hca_blocks = seqs * (ceil_div(options.max_context / hca_rate, bs) + 1);
  csa_pool_.free_blocks = all_blocks(csa_blocks);
  hca_pool_.free_blocks = all_blocks(hca_blocks);

  const int64_t d = config.head_dim;
  const int64_t id = config.index_head_dim;
  // Pools hold activations (the backend's activation dtype) or, for the window and compressed
  // KV, FP8 records; the compressor state rings stay f32 (they hold score + ape, softmax inputs).
  const dtype act = backend.activation_type();
  const bool records = options.kv_dtype == kv_cache_dtype::fp8;
  if (records) {
    DSV4_CHECK(backend.kv_records(),
               "kv cache: FP8 KV records need a backend that reads them (cuda); {} does not",
               backend.name());
    DSV4_CHECK(config.rope_head_dim == k_kv_cache_record_rope_dims,
               "kv cache: FP8 KV records hold {} RoPE dims; this model has {}",
               k_kv_cache_record_rope_dims, config.rope_head_dim);
  }
  const kv_record_layout record = records ? kv_cache_record_layout(d, bs) : kv_record_layout{};
  auto kv_pool = [&](int64_t blocks) {
    return records ? backend.zeros(dtype::u8, {blocks, record.block_bytes})
                   : backend.zeros(act, {blocks * bs, d});
  };
  for (int i = 0; i < config.num_hidden_layers; ++i) {
    layer_cache lc;
    lc.window_pool = kv_pool(window_blocks);
    const attention_kind kind = config.layer_types[i];
    if (kind == attention_kind::csa) {
      const int64_t ring = 2 * csa_rate;
      lc.comp_pool = kv_pool(csa_blocks);
      lc.comp_state_kv = backend.zeros(dtype::f32, {seqs * ring, 2 * d});
      lc.comp_state_score = backend.zeros(dtype::f32, {seqs * ring, 2 * d});
      lc.index_pool = backend.zeros(act, {csa_blocks * bs, id});
      if (options.indexer_fp4 && backend.indexer_fp4_keys() && id == k_indexer_fp4_dim) {
        lc.index_fp4_codes = backend.zeros(dtype::u8, {csa_blocks * bs, k_indexer_fp4_code_bytes});
        lc.index_fp4_scales = backend.zeros(dtype::i32, {csa_blocks * bs});
      }
      lc.index_state_kv = backend.zeros(dtype::f32, {seqs * ring, 2 * id});
      lc.index_state_score = backend.zeros(dtype::f32, {seqs * ring, 2 * id});
    } else if (kind == attention_kind::hca) {
      lc.comp_pool = kv_pool(hca_blocks);
      lc.comp_state_kv = backend.zeros(dtype::f32, {seqs * hca_rate, d});
      lc.comp_state_score = backend.zeros(dtype::f32, {seqs * hca_rate, d});
    }
    layers_.push_back(std::move(lc));
  }
}

int kv_cache::add_sequence() {
  for (size_t i = 0; i < sequences_.size(); ++i)
    if (!sequences_[i].active) {
      sequences_[i] = sequence{};
      sequences_[i].active = true;
      return int(i);
    }
  fail("kv cache: all {} sequence slots are in use", sequences_.size());
}

void kv_cache::check_sequence(int seq) const {
  DSV4_CHECK(seq >= 0 && size_t(seq) < sequences_.size() && sequences_[seq].active,
             "kv cache: no active sequence {}", seq);
}

void kv_cache::release_sequence(int seq) {
  check_sequence(seq);
  sequence& s = sequences_[seq];
  for (int32_t b : s.window_blocks)
    if (b >= 0) window_pool_.give(b);
  for (int32_t b : s.csa_blocks) csa_pool_.give(b);
  for (int32_t b : s.hca_blocks) hca_pool_.give(b);
  s = sequence{};
}

int64_t kv_cache::length(int seq) const {
  check_sequence(seq);
  return sequences_[seq].length;
}

void kv_cache::ensure_blocks(std::vector<int32_t>& table, int64_t rows, block_pool& pool,
                             const char* what) {
  const int64_t needed = ceil_div(rows, options_.block_size);
  while (int64_t(table.size()) < needed) table.push_back(pool.take(what));
}

void kv_cache::fill_compressed(const std::vector<sequence_chunk>& chunks, int64_t rate, bool csa,
                               bool pad, compressed_plan& out) {
  const int64_t bs = options_.block_size;
  const int64_t ring = (csa ? 2 : 1) * rate;
  out.rate = rate;
  size_t width = 0;
  for (const auto& c : chunks) {
    sequence& s = sequences_[c.seq];
    auto& table = csa ? s.csa_blocks : s.hca_blocks;
    ensure_blocks(table, (s.length + int64_t(c.ids.size())) / rate, csa ? csa_pool_ : hca_pool_,
                  csa ? "CSA entry" : "HCA entry");
    width = std::max(width, table.size());
  }
  if (pad) {
    const size_t capacity = size_t(ceil_div(options_.max_context / rate, bs));
    DSV4_CHECK(width <= capacity, "kv cache: {} entry blocks exceed the capacity of {}", width,
               capacity);
    width = capacity;
  }
  out.block_table_width = int64_t(std::max<size_t>(width, 1));
  out.block_table.assign(chunks.size() * size_t(out.block_table_width), -1);
  for (size_t ci = 0; ci < chunks.size(); ++ci) {
    const sequence& s = sequences_[chunks[ci].seq];
    const auto& table = csa ? s.csa_blocks : s.hca_blocks;
    std::copy(table.begin(), table.end(), out.block_table.begin() + ci * out.block_table_width);
    for (size_t i = 0; i < chunks[ci].ids.size(); ++i) {
      const int64_t pos = s.length + int64_t(i);
      out.state_base.push_back(int32_t(chunks[ci].seq * ring));
      out.token_seq.push_back(int32_t(ci));
      out.n_visible.push_back(int32_t((pos + 1) / rate));
      if ((pos + 1) % rate == 0) {
        const int64_t entry = pos / rate;
        out.emit_rows.push_back(int32_t(table[entry / bs] * bs + entry % bs));
      } else {
        out.emit_rows.push_back(-1);
      }
    }
  }
}

step_plan kv_cache::plan(const std::vector<sequence_chunk>& chunks, bool pad_block_tables) {
  DSV4_CHECK(!chunks.empty(), "empty step: no sequences");
  std::vector<int> seen;
  step_plan p;
  p.block_size = options_.block_size;
  for (const auto& c : chunks) {
    check_sequence(c.seq);
    DSV4_CHECK(!c.ids.empty(), "sequence {}: empty chunk", c.seq);
    DSV4_CHECK(std::find(seen.begin(), seen.end(), c.seq) == seen.end(),
               "sequence {} appears twice in one step", c.seq);
    seen.push_back(c.seq);
    const int64_t end = sequences_[c.seq].length + int64_t(c.ids.size());
    DSV4_CHECK(end <= options_.max_context,
               "sequence {}: {} tokens exceed the cache's context of {} tokens", c.seq, end,
               options_.max_context);
  }
  const int64_t bs = options_.block_size;
  const int64_t W = config_.sliding_window;
  p.window_width = W;
  for (const auto& c : chunks) {
    sequence& s = sequences_[c.seq];
    ensure_blocks(s.window_blocks, s.length + int64_t(c.ids.size()), window_pool_, "window");
    const int64_t first = int64_t(p.ids.size());
    for (size_t i = 0; i < c.ids.size(); ++i) {
      const int64_t pos = s.length + int64_t(i);
      p.ids.push_back(c.ids[i]);
      p.positions.push_back(int32_t(pos));
      auto row_of = [&](int64_t q) {
        const int32_t b = s.window_blocks[q / bs];
        DSV4_CHECK(b >= 0, "kv cache: window position {} of sequence {} was freed", q, c.seq);
        return int32_t(b * bs + q % bs);
      };
      p.window_write_rows.push_back(row_of(pos));
      for (int64_t j = 0; j < W; ++j) {
        const int64_t q = pos - W + 1 + j;
        p.window_rows.push_back(q >= 0 ? row_of(q) : -1);
      }
      if (c.all_logits || i + 1 == c.ids.size()) p.logit_rows.push_back(int32_t(first + i));
    }
  }
  p.tokens = int64_t(p.ids.size());
  bool has_csa = false, has_hca = false;
  for (attention_kind k : config_.layer_types) {
    has_csa |= k == attention_kind::csa;
    has_hca |= k == attention_kind::hca;
  }
  if (has_csa) fill_compressed(chunks, config_.compress_rate_csa, true, pad_block_tables, p.csa);
  if (has_hca) fill_compressed(chunks, config_.compress_rate_hca, false, pad_block_tables, p.hca);
  return p;
}

void kv_cache::commit(const std::vector<sequence_chunk>& chunks) {
  const int64_t bs = options_.block_size;
  const int64_t W = config_.sliding_window;
  for (const auto& c : chunks) {
    sequence& s = sequences_[c.seq];
    s.length += int64_t(c.ids.size());
    // The next query (at position length) sees positions >= length - W + 1.
    const int64_t oldest_needed = s.length - W + 1;
    for (int64_t b = 0; b < int64_t(s.window_blocks.size()); ++b)
      if ((b + 1) * bs <= oldest_needed && s.window_blocks[b] >= 0) {
        window_pool_.give(s.window_blocks[b]);
        s.window_blocks[b] = -1;
      }
  }
}

}  // namespace dsv4
