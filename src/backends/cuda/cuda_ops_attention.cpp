// cuda_ops: row copies, compressor, lightning indexer and sparse attention.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "backends/cuda/act_dispatch.h"
#include "backends/cuda/attention.h"
#include "backends/cuda/attention_decode.h"
#include "backends/cuda/compressor.h"
#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/indexer.h"
#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kv_record.h"
#include "backends/cuda/rows.h"
#include "core/error.h"
#include "io/indexer_fp4_key.h"
#include "io/kv_record.h"

namespace dsv4::cuda {

namespace {

// Scratch for the indexer's scores is capped; the kernel walks the step in token chunks that fit.
constexpr size_t k_indexer_scratch_cap = size_t(256) << 20;
// indexer_topk_fast runs at most this many tokens per launch: its scratch grows with tokens x
// capacity, sized for decode batches. Longer steps (prefill) go through it in chunks of this many
// tokens (every query token is independent). attention_decode chunks by
// attention_decode_chunk_tokens (the same 64 unless a chunk runs one split per CTA and folds).
constexpr int64_t k_fast_kernel_chunk_tokens = 64;

// The source seen from token t0 on: per-token arrays start t0 tokens later.
template <typename T>
kv_rows<T> from_token(kv_rows<T> k, int64_t t0) {
  if (!k.pool) return k;
  if (k.rows) {
    k.rows += t0 * k.rows_width;
  } else {
    k.token_seq += t0;
    k.n_visible += t0;
  }
  return k;
}

int64_t row_bytes_of(const tensor& t) {
  return int64_t(dtype_bytes(t.type(), t.numel() / t.size(0)));
}

// KV pools of FP8 records (layer_cache.h): u8 [blocks, block_bytes] whose layout follows from
// the row width (io/kv_record.h, kv_cache_record_layout_of).
bool is_record_pool(const tensor& pool) {
  return pool.type() == dtype::u8;
}

kv_record_layout record_layout(const tensor& pool, int64_t width, const char* what) {
  check_device_type(pool, dtype::u8, what);
  DSV4_CHECK(pool.shape().rank() == 2, "{}: record pool {} is not [blocks, block_bytes]", what,
             pool.shape().str());
  return kv_cache_record_layout_of(width, pool.size(1));
}

template <typename pool_t>
void set_indices(kv_rows<pool_t>& k, const kv_source& s) {
  k.block_size = s.block_size;
  if (s.rows) {
    k.rows = s.rows->data<int32_t>();
    k.rows_width = s.rows->size(1);
  } else {
    k.block_table = s.block_table->data<int32_t>();
    k.table_rows = s.block_table->size(0);
    k.table_width = s.block_table->size(1);
    k.token_seq = s.token_seq->data<int32_t>();
    k.n_visible = s.n_visible->data<int32_t>();
  }
}

kv_rows<kv_fp8_record> to_record_kernel(const kv_source& s, int64_t width) {
  const kv_record_layout l = record_layout(*s.pool, width, "attention record pool");
  kv_rows<kv_fp8_record> k;
  k.pool = reinterpret_cast<const kv_fp8_record*>(s.pool->data<uint8_t>());
  k.pool_rows = s.pool->size(0) * l.rows_per_block;
  k.record_rows_per_block = l.rows_per_block;
  k.record_block_bytes = l.block_bytes;
  set_indices(k, s);
  return k;
}

template <typename act_t>
kv_rows<act_t> to_kernel(const kv_source& s, dtype act) {
  check_device_type(*s.pool, act, "attention pool");
  kv_rows<act_t> k;
  k.pool = s.pool->view().ptr<act_t>();
  k.pool_rows = s.pool->size(0);
  set_indices(k, s);
  return k;
}

}  // namespace

tensor cuda_ops::gather_rows(const tensor& x, const tensor& rows) {
  dims shape = x.shape();
  shape[0] = rows.numel();
  tensor y = alloc(x.type(), shape);
  check_cuda(cuda::gather_rows(x.data<void>(), x.size(0), row_bytes_of(x), rows.data<int32_t>(),
                               rows.numel(), y.data<void>(), stream_),
             "gather_rows");
  return y;
}

void cuda_ops::scatter_rows(const tensor& src, tensor& pool, const tensor& rows) {
  if (is_record_pool(pool)) {  // the cache write of a record cache: encode, then scatter
    check_device_type(src, act_, "scatter_rows src");
    DSV4_CHECK(src.shape().rank() == 2 && src.size(0) == rows.numel(),
               "scatter_rows: src {} for {} rows", src.shape().str(), rows.numel());
    const kv_record_layout l = record_layout(pool, src.size(1), "scatter_rows pool");
    check_cuda(with_act(act_,
                        [&](auto* a) {
                          return cuda::kv_record_pack(
                              act_ptr(src, a), src.size(1), rows.data<int32_t>(),
                              pool.size(0) * l.rows_per_block, rows.numel(), pool.data<uint8_t>(),
                              l.nope_dims, l.rope_dims, l.rows_per_block, l.block_bytes, stream_);
                        }),
               "scatter_rows (kv_record_pack)");
    return;
  }
  DSV4_CHECK(src.type() == pool.type() && row_bytes_of(src) == row_bytes_of(pool),
             "scatter_rows: src {} into pool {}", src.shape().str(), pool.shape().str());
  check_cuda(cuda::scatter_rows(src.data<void>(), rows.numel(), row_bytes_of(pool),
                                rows.data<int32_t>(), pool.data<void>(), pool.size(0), stream_),
             "scatter_rows");
}

void cuda_ops::compressor(const tensor& kv, const tensor& score, const tensor& positions,
                          const tensor& state_base, const tensor& emit_rows, const tensor& ape,
                          const tensor& norm_weight, const tensor& inv_freq,
                          const compressor_params& p, tensor& state_kv, tensor& state_score,
                          tensor& out_pool) {
  check_device_type(kv, act_, "compressor kv");
  check_device_type(score, act_, "compressor score");
  check_device_type(state_kv, dtype::f32, "compressor state kv");
  check_device_type(state_score, dtype::f32, "compressor state score");
  const bool records = is_record_pool(out_pool);
  if (!records) check_device_type(out_pool, act_, "compressor pool");
  const int64_t width = (p.overlap ? 2 : 1) * p.head_dim;
  const int64_t T = kv.size(0);
  DSV4_CHECK(emit_rows.numel() == T && positions.numel() == T && state_base.numel() == T,
             "compressor: {} emit rows, {} positions, {} state bases for {} tokens",
             emit_rows.numel(), positions.numel(), state_base.numel(), T);
  DSV4_CHECK(kv.size(1) == width && score.size(1) == width && ape.size(0) == p.rate &&
                 ape.size(1) == width && state_kv.size(1) == width &&
                 (records || out_pool.size(1) == p.head_dim),
             "compressor: kv {} score {} ape {} state {} pool {} for rate {} head_dim {}",
             kv.shape().str(), score.shape().str(), ape.shape().str(), state_kv.shape().str(),
             out_pool.shape().str(), p.rate, p.head_dim);
  cuda::compressor_shape s;
  s.rate = p.rate;
  s.overlap = p.overlap;
  s.head_dim = p.head_dim;
  s.rope_dim = p.rope_dim;
  s.norm_eps = p.norm_eps;
  if (records) {
    // A record cache: the emit kernel encodes each entry into its record (one pass).
    const kv_record_layout l = record_layout(out_pool, p.head_dim, "compressor pool");
    DSV4_CHECK(l.rope_dims == p.rope_dim, "compressor: records hold {} RoPE dims, entries have {}",
               l.rope_dims, p.rope_dim);
    cuda::compressor_record_pool r;
    r.pool = out_pool.data<uint8_t>();
    r.nope_dims = l.nope_dims;
    r.rope_dims = l.rope_dims;
    r.rows_per_block = l.rows_per_block;
    r.block_bytes = l.block_bytes;
    r.rows = out_pool.size(0) * l.rows_per_block;
    check_cuda(with_act(act_,
                        [&](auto* a) {
                          return cuda::compressor_records(
                              act_ptr(kv, a), act_ptr(score, a), T, positions.data<int32_t>(),
                              state_base.data<int32_t>(), emit_rows.data<int32_t>(),
                              ape.data<float>(), norm_weight.data<float>(), inv_freq.data<float>(),
                              s, state_kv.data<float>(), state_score.data<float>(),
                              state_kv.size(0), r, stream_);
                        }),
               "compressor (records)");
    return;
  }
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::compressor(
                            act_ptr(kv, a), act_ptr(score, a), T, positions.data<int32_t>(),
                            state_base.data<int32_t>(), emit_rows.data<int32_t>(),
                            ape.data<float>(), norm_weight.data<float>(), inv_freq.data<float>(), s,
                            state_kv.data<float>(), state_score.data<float>(), state_kv.size(0),
                            act_ptr(out_pool, a), out_pool.size(0), stream_);
                      }),
             "compressor");
}

tensor cuda_ops::indexer_topk(const tensor& q, const tensor& weights, const tensor& key_pool,
                              const tensor& block_table, const tensor& token_seq,
                              const tensor& n_visible, int64_t heads, int64_t block_size,
                              int64_t top_k, float q_scale) {
  return indexer_topk_keys(q, weights, key_pool, nullptr, nullptr, block_table, token_seq,
                           n_visible, heads, block_size, top_k, q_scale);
}

tensor cuda_ops::indexer_topk_fp4(const tensor& q, const tensor& weights, const tensor& key_pool,
                                  const tensor& codes, const tensor& scales,
                                  const tensor& block_table, const tensor& token_seq,
                                  const tensor& n_visible, int64_t heads, int64_t block_size,
                                  int64_t top_k, float q_scale) {
  check_device_type(codes, dtype::u8, "indexer fp4 key codes");
  check_device_type(scales, dtype::i32, "indexer fp4 key scales");
  DSV4_CHECK(codes.shape().rank() == 2 && codes.size(0) == key_pool.size(0) &&
                 codes.size(1) == k_indexer_fp4_code_bytes && scales.numel() == key_pool.size(0),
             "indexer fp4 keys: codes {} scales {} for key pool {}", codes.shape().str(),
             scales.shape().str(), key_pool.shape().str());
  return indexer_topk_keys(q, weights, key_pool, &codes, &scales, block_table, token_seq, n_visible,
                           heads, block_size, top_k, q_scale);
}

void cuda_ops::pack_indexer_fp4_rows(const tensor& key_pool, const tensor& rows, tensor& codes,
                                     tensor& scales) {
  check_device_type(key_pool, act_, "indexer fp4 pack key pool");
  check_device_type(codes, dtype::u8, "indexer fp4 pack codes");
  check_device_type(scales, dtype::i32, "indexer fp4 pack scales");
  check_device_type(rows, dtype::i32, "indexer fp4 pack rows");
  DSV4_CHECK(key_pool.shape().rank() == 2 && key_pool.size(1) == k_indexer_fp4_dim &&
                 codes.shape().rank() == 2 && codes.size(0) == key_pool.size(0) &&
                 codes.size(1) == k_indexer_fp4_code_bytes && scales.numel() == key_pool.size(0),
             "indexer fp4 pack: key pool {} codes {} scales {}", key_pool.shape().str(),
             codes.shape().str(), scales.shape().str());
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::indexer_fp4_pack_rows(
                            act_ptr(key_pool, a), key_pool.size(1), rows.data<int32_t>(),
                            key_pool.size(0), rows.numel(), codes.data<uint8_t>(),
                            reinterpret_cast<uint32_t*>(scales.data<int32_t>()), stream_);
                      }),
             "indexer_fp4_pack_rows");
}

// codes / scales: FP4 copies of key_pool's keys (indexer_topk_fp4), read by the fast kernel; the
// general kernel reads key_pool.
tensor cuda_ops::indexer_topk_keys(const tensor& q, const tensor& weights, const tensor& key_pool,
                                   const tensor* codes, const tensor* scales,
                                   const tensor& block_table, const tensor& token_seq,
                                   const tensor& n_visible, int64_t heads, int64_t block_size,
                                   int64_t top_k, float q_scale) {
  check_device_type(q, act_, "indexer q");
  check_device_type(weights, act_, "indexer weights");
  check_device_type(key_pool, act_, "indexer key pool");
  const int64_t T = q.size(0);
  const int64_t d = key_pool.size(1);
  DSV4_CHECK(q.size(1) == heads * d && weights.size(1) == heads,
             "indexer: q {} weights {} for {} heads of {}", q.shape().str(), weights.shape().str(),
             heads, d);
  tensor out = alloc(dtype::i32, {T, top_k});
  if (decode_kernels_ && act_ == dtype::bf16 && heads == k_indexer_fast_heads &&
      d == k_indexer_fast_head_dim && top_k <= k_indexer_fast_max_top_k) {
    using bf16 = __nv_bfloat16;
    const int64_t chunk = std::min(T, k_fast_kernel_chunk_tokens);
    auto make_plan = [&](int64_t n) {
      return indexer_topk_fast_make_plan(n, block_table.size(1), block_size, sm_count_);
    };
    const indexer_fast_plan full = make_plan(chunk),
                            tail = make_plan(T % chunk ? T % chunk : chunk);
    tensor scratch =
        alloc(dtype::u8, {int64_t(std::max({full.scratch_bytes, tail.scratch_bytes, size_t(16)}))});
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
      const int64_t n = std::min(chunk, T - t0);
      const indexer_fast_plan& plan = n == chunk ? full : tail;
      const bf16* qt = q.view().ptr<bf16>() + t0 * heads * d;
      const bf16* wt = weights.view().ptr<bf16>() + t0 * heads;
      if (codes)
        check_cuda(cuda::indexer_topk_fast_fp4(
                       qt, wt, n, heads, d, codes->data<uint8_t>(),
                       reinterpret_cast<const uint32_t*>(scales->data<int32_t>()), key_pool.size(0),
                       block_table.data<int32_t>(), block_table.size(0), block_table.size(1),
                       token_seq.data<int32_t>() + t0, n_visible.data<int32_t>() + t0, block_size,
                       top_k, q_scale, plan, scratch.data<void>(), scratch.bytes(),
                       out.data<int32_t>() + t0 * top_k, stream_),
                   "indexer_topk_fast_fp4");
      else
        check_cuda(cuda::indexer_topk_fast(
                       qt, wt, n, heads, d, key_pool.view().ptr<bf16>(), key_pool.size(0),
                       block_table.data<int32_t>(), block_table.size(0), block_table.size(1),
                       token_seq.data<int32_t>() + t0, n_visible.data<int32_t>() + t0, block_size,
                       top_k, q_scale, plan, scratch.data<void>(), scratch.bytes(),
                       out.data<int32_t>() + t0 * top_k, stream_),
                   "indexer_topk_fast");
    }
    return out;
  }
  const int64_t max_entries = block_table.size(1) * block_size;
  const size_t one = indexer_scratch_bytes(1, max_entries);
  const size_t want = indexer_scratch_bytes(T, max_entries);
  const size_t bytes = std::max(one, std::min(want, k_indexer_scratch_cap));
  tensor scratch = alloc(dtype::u8, {int64_t(bytes)});
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        return cuda::indexer_topk(
                            act_ptr(q, a), act_ptr(weights, a), T, heads, d, act_ptr(key_pool, a),
                            key_pool.size(0), block_table.data<int32_t>(), block_table.size(0),
                            block_table.size(1), token_seq.data<int32_t>(),
                            n_visible.data<int32_t>(), block_size, top_k, q_scale,
                            scratch.data<float>(), bytes, out.data<int32_t>(), stream_);
                      }),
             "indexer_topk");
  return out;
}

tensor cuda_ops::sparse_attention(const tensor& q, int64_t heads, const kv_source& window,
                                  const kv_source* compressed, const tensor& sinks, float scale) {
  check_device_type(q, act_, "attention q");
  check_device_type(sinks, dtype::f32, "attention sinks");
  const bool records = is_record_pool(*window.pool);
  DSV4_CHECK(!compressed || is_record_pool(*compressed->pool) == records,
             "attention: the window and compressed pools must both be records or both activations");
  DSV4_CHECK(heads > 0 && q.shape().rank() == 2, "attention: q {} for {} heads", q.shape().str(),
             heads);
  const int64_t T = q.size(0);
  const int64_t d = records ? q.size(1) / heads : window.pool->size(1);
  DSV4_CHECK(q.size(1) == heads * d && sinks.numel() == heads,
             "attention: q {} for {} heads of {} and {} sinks", q.shape().str(), heads, d,
             sinks.numel());
  if (records && !(decode_kernels_ && d == k_attention_decode_head_dim)) {
    // Only attention_decode reads records: the general kernel gets the pools decoded to
    // activations (every record, so this path costs a full pool of scratch; it serves the
    // decode-kernels-off runs and head dims other than 512).
    auto decoded = [&](const kv_source& s) {
      const kv_record_layout l = record_layout(*s.pool, d, "attention record pool");
      const int64_t rows = s.pool->size(0) * l.rows_per_block;
      tensor out = alloc(act_, {rows, d});
      check_cuda(with_act(act_,
                          [&](auto* a) {
                            return cuda::kv_record_gather(
                                s.pool->data<uint8_t>(), l.nope_dims, l.rope_dims, l.rows_per_block,
                                l.block_bytes, nullptr, rows, rows, act_ptr(out, a), d, stream_);
                          }),
                 "attention (kv_record_gather)");
      return out;
    };
    const tensor wpool = decoded(window);
    kv_source w = window;
    w.pool = &wpool;
    tensor cpool;
    kv_source c;
    if (compressed) {
      cpool = decoded(*compressed);
      c = *compressed;
      c.pool = &cpool;
    }
    return sparse_attention(q, heads, w, compressed ? &c : nullptr, sinks, scale);
  }
  tensor out = alloc(act_, {T, heads * d});
  // attention_decode over kernel sources w / c (pool_t: bf16 rows or FP8 records).
  auto run_decode = [&](auto* a, const auto& w, const auto* c) {
    using act_t = std::remove_pointer_t<decltype(a)>;
    using pool_t = std::remove_cv_t<std::remove_pointer_t<decltype(w.pool)>>;
    // The plan's own rules (attention_decode_plan.cpp): tiles per split from the step's size.
    // DSV4_ATTENTION_ALT=0: the in-turn arithmetic on both pool types (records: the synchronous
    // kernel; read per call, so a test can compare both cache types bit for bit in one process).
    const char* alt_env = std::getenv("DSV4_ATTENTION_ALT");
    const bool alt_off = alt_env && std::strcmp(alt_env, "0") == 0;
    // DSV4_ATTENTION_TABLES_EARLY=0: the tables read after griddepcontrol.wait (A/B in one
    // process; the same output bit for bit).
    const char* early_env = std::getenv("DSV4_ATTENTION_TABLES_EARLY");
    const bool early_off = early_env && std::strcmp(early_env, "0") == 0;
    auto make_plan = [&](int64_t n) {
      attention_decode_plan p = attention_decode_make_plan(n, heads, d, kv_rows_capacity(w),
                                                           c ? kv_rows_capacity(*c) : 0, sm_count_);
      if (alt_off) p.alt = false;
      // The kernel never reads explicit compressed rows early (attention_decode.h).
      p.tables_early = !early_off && window.host_tables &&
                       (!compressed || compressed->rows != nullptr || compressed->host_tables);
      return p;
    };
    // One-split plans on the warp-specialized kernel write their rows themselves (fold: bf16
    // pools; records with alternate tiles) and read no scratch.
    auto folds = [&](const attention_decode_plan& p) {
      return p.wgmma && p.producer && p.fold && p.splits == 1 &&
             (std::is_same_v<pool_t, __nv_bfloat16> || p.alt);
    };
    // make_plan's plans run the warp-specialized kernel with alternate tiles unless alt_off; both
    // pool types fold there. alt_off keeps 64-token chunks on both (the records' synchronous
    // kernel needs scratch, and the two pool types must keep the same plans: the tests compare
    // them bit for bit).
    const bool fold_kernel = !alt_off;
    const int64_t chunk = attention_decode_chunk_tokens(
        T, heads, d, kv_rows_capacity(w), c ? kv_rows_capacity(*c) : 0, sm_count_, fold_kernel);
    auto scratch_of = [&](const attention_decode_plan& p) {
      return folds(p) ? size_t(0) : p.scratch_bytes;
    };
    attention_decode_plan full = make_plan(chunk), tail = make_plan(T % chunk ? T % chunk : chunk);
    tensor scratch =
        alloc(dtype::u8, {int64_t(std::max({scratch_of(full), scratch_of(tail), size_t(16)}))});
    for (attention_decode_plan* p : {&full, &tail})
      if (folds(*p)) p->scratch_bytes = 0;
    for (int64_t t0 = 0; t0 < T; t0 += chunk) {
      const int64_t n = std::min(chunk, T - t0);
      const attention_decode_plan& plan = n == chunk ? full : tail;
      const kv_rows<pool_t> wc = from_token(w, t0);
      kv_rows<pool_t> cc;
      if (c) cc = from_token(*c, t0);
      check_cuda(sparse_attention_decode<act_t, pool_t>(
                     q.view().ptr<act_t>() + t0 * heads * d, n, heads, d, wc, c ? &cc : nullptr,
                     sinks.data<float>(), scale, out.view().ptr<act_t>() + t0 * heads * d, plan,
                     scratch.data<void>(), scratch.bytes(), stream_),
                 "sparse_attention_decode");
    }
  };
  if (records) {
    const kv_rows<kv_fp8_record> w = to_record_kernel(window, d);
    kv_rows<kv_fp8_record> c;
    if (compressed) c = to_record_kernel(*compressed, d);
    with_act(act_, [&](auto* a) { run_decode(a, w, compressed ? &c : nullptr); });
    return out;
  }
  if (decode_kernels_ && act_ == dtype::bf16 && d == k_attention_decode_head_dim) {
    using bf16 = __nv_bfloat16;
    const kv_rows<bf16> w = to_kernel<bf16>(window, act_);
    kv_rows<bf16> c;
    if (compressed) c = to_kernel<bf16>(*compressed, act_);
    run_decode(static_cast<bf16*>(nullptr), w, compressed ? &c : nullptr);
    return out;
  }
  check_cuda(with_act(act_,
                      [&](auto* a) {
                        using act_t = std::remove_pointer_t<decltype(a)>;
                        const kv_rows<act_t> w = to_kernel<act_t>(window, act_);
                        kv_rows<act_t> c;
                        if (compressed) c = to_kernel<act_t>(*compressed, act_);
                        return cuda::sparse_attention(
                            act_ptr(q, a), T, heads, d, w, compressed ? &c : nullptr,
                            sinks.data<float>(), scale, act_ptr(out, a), stream_);
                      }),
             "sparse_attention");
  return out;
}

}  // namespace dsv4::cuda
