#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "io/rope_frequencies.h"

namespace dsv4 {

namespace {

tensor upload_f32_vector(ops& o, const std::vector<float>& v) {
  tensor host = tensor::empty(dtype::f32, {int64_t(v.size())});
  std::copy(v.begin(), v.end(), host.data<float>());
  return o.upload(host.view());
}

router_score parse_router_score(const std::string& name) {
  if (name == "sqrtsoftplus") return router_score::sqrtsoftplus;
  if (name == "softmax") return router_score::softmax;
  if (name == "sigmoid") return router_score::sigmoid;
  fail("config: unsupported scoring_func '{}'", name);
}

}  // namespace

precision_mode parse_precision_mode(std::string_view name) {
  if (name == "exact") return precision_mode::exact;
  if (name == "official") return precision_mode::official;
  fail("unknown precision mode '{}' (exact or official)", name);
}

std::string_view precision_mode_name(precision_mode mode) {
  return mode == precision_mode::official ? "official" : "exact";
}

model_forward::model_forward(const model_config& config, const model_weights& weights, ops& backend,
                             precision_mode precision)
    : cfg_(config), w_(weights), ops_(backend), precision_(precision) {
  router_score_ = parse_router_score(cfg_.scoring_func);
  // transformers scales cos/sin by a YaRN attention factor when a config sets one; V4 (official
  // and transformers' default) uses 1.0, and the rope op has no such scale.
  for (const rope_config* r : {&cfg_.rope_main, &cfg_.rope_compress})
    DSV4_CHECK(r->attention_factor == 1.0,
               "config: rope attention_factor {} is not supported (DeepSeek-V4 uses 1.0)",
               r->attention_factor);
  inv_freq_main_ =
      upload_f32_vector(ops_, rope_inverse_frequencies(cfg_.rope_main, cfg_.rope_head_dim));
  inv_freq_compress_ =
      upload_f32_vector(ops_, rope_inverse_frequencies(cfg_.rope_compress, cfg_.rope_head_dim));
}

tensor model_forward::run(const step_plan& plan, std::vector<layer_cache>& caches) {
  step_tensors st;
  upload_plan(plan, st);
  return compute(st, caches);
}

void model_forward::upload_plan(const step_plan& plan, step_tensors& st) {
  const int64_t T = plan.tokens;
  const int64_t hc = cfg_.hc_mult;
  DSV4_CHECK(T > 0, "empty step");
  for (int32_t id : plan.ids)
    DSV4_CHECK(id >= 0 && id < cfg_.vocab_size, "token id {} out of range [0, {})", id,
               cfg_.vocab_size);
  const int64_t L = int64_t(plan.logit_rows.size());
  DSV4_CHECK(L > 0, "step asks for no logits");
  for (int32_t r : plan.logit_rows)
    DSV4_CHECK(r >= 0 && r < T, "logit row {} outside the step's {} tokens", r, T);
  auto table_rows = [](const compressed_plan& cp) {
    return cp.block_table_width ? int64_t(cp.block_table.size()) / cp.block_table_width : 0;
  };
  const std::vector<int64_t> layout{T,
                                    plan.window_width,
                                    hc,
                                    L,
                                    plan.csa.rate,
                                    table_rows(plan.csa),
                                    plan.csa.block_table_width,
                                    plan.hca.rate,
                                    table_rows(plan.hca),
                                    plan.hca.block_table_width};

  // Every array in order, with its shape; the layout is the same for every plan of the same key.
  struct piece {
    tensor* dst;
    const int32_t* src;
    size_t count;
    dims shape;
  };
  std::vector<piece> pieces;
  auto add = [&](tensor& dst, const std::vector<int32_t>& v, const dims& shape) {
    DSV4_CHECK(int64_t(v.size()) == shape.numel(), "step plan: {} values for shape {}", v.size(),
               shape.str());
    pieces.push_back({&dst, v.data(), v.size(), shape});
  };
  std::vector<int32_t> identity(static_cast<size_t>(T)), hc_rows, logit_rows;
  for (int64_t t = 0; t < T; ++t) {
    identity[size_t(t)] = int32_t(t);
    for (int64_t j = 0; j < hc; ++j) hc_rows.push_back(int32_t(t));
  }
  for (int32_t r : plan.logit_rows)
    for (int64_t j = 0; j < hc; ++j) logit_rows.push_back(int32_t(r * hc + j));
  add(st.ids, plan.ids, {T});
  add(st.positions, plan.positions, {T});
  add(st.window_write_rows, plan.window_write_rows, {T});
  add(st.window_rows, plan.window_rows, {T, plan.window_width});
  add(st.identity_rows, identity, {T});
  add(st.hc_rows, hc_rows, {T * hc});
  add(st.logit_rows, logit_rows, {L * hc});
  auto add_compressed = [&](const compressed_plan& cp, step_tensors::compressed& out) {
    if (cp.rate == 0) return;
    add(out.state_base, cp.state_base, {T});
    add(out.emit_rows, cp.emit_rows, {T});
    add(out.n_visible, cp.n_visible, {T});
    add(out.token_seq, cp.token_seq, {T});
    add(out.block_table, cp.block_table, {table_rows(cp), cp.block_table_width});
  };
  add_compressed(plan.csa, st.csa);
  add_compressed(plan.hca, st.hca);

  // Each array starts 16 bytes into the buffer (kernels may take vector paths on aligned data).
  auto aligned = [](int64_t n) { return (n + 3) / 4 * 4; };
  int64_t total = 0;
  for (const piece& p : pieces) total += aligned(int64_t(p.count));
  if (st.layout != layout || !st.buffer.defined()) {
    st = step_tensors{};
    st.layout = layout;
    st.buffer = ops_.alloc(dtype::i32, {std::max<int64_t>(total, 1)});
    st.host = tensor::zeros(dtype::i32, {std::max<int64_t>(total, 1)});
    // The views share the buffer's storage through a copy of its handle.
    const auto keep = std::make_shared<tensor>(st.buffer);
    int64_t offset = 0;
    for (const piece& p : pieces) {
      tensor_view v = st.buffer.view();
      v.data = st.buffer.data<int32_t>() + offset;
      v.shape = p.shape;
      v.strides = contiguous_strides(p.shape);
      *p.dst = tensor::wrap(keep, v);
      offset += aligned(int64_t(p.count));
    }
  }
  st.tokens = T;
  st.logits = L;
  st.block_size = plan.block_size;
  int64_t offset = 0;
  for (const piece& p : pieces) {
    std::copy(p.src, p.src + p.count, st.host.data<int32_t>() + offset);
    offset += aligned(int64_t(p.count));
  }
  ops_.upload_to(st.buffer, st.host.view());
}

tensor model_forward::compute(const step_tensors& st, std::vector<layer_cache>& caches) {
  const int64_t T = st.tokens;
  DSV4_CHECK(T > 0 && st.buffer.defined(), "compute: no step uploaded");
  DSV4_CHECK(int64_t(caches.size()) == cfg_.num_hidden_layers, "{} layer caches for {} layers",
             caches.size(), cfg_.num_hidden_layers);

  // Residual streams: the embedding replicated to hc_mult streams [T, hc, D].
  const int64_t hc = cfg_.hc_mult;
  const int64_t D = cfg_.hidden_size;
  tensor h = ops_.gather_rows(ops_.embed(w_.embed, st.ids), st.hc_rows).reshaped({T, hc, D});

  const float hc_eps = float(cfg_.hc_eps);
  const float eps = float(cfg_.rms_norm_eps);
  // Each sub-layer's output f enters the residual streams in the op that also collapses them for
  // the next sub-layer and norms its input (hc_post_pre_norm); the last one's by hc_post.
  tensor post = ops_.alloc(dtype::f32, {T, hc});
  tensor comb = ops_.alloc(dtype::f32, {T, hc, hc});
  tensor f;  // the previous sub-layer's output, not yet added to h
  for (int i = 0; i < cfg_.num_hidden_layers; ++i) {
    const layer_weights& lw = w_.layers[i];
    tensor x = ops_.hc_post_pre_norm(h, f.defined() ? &f : nullptr, lw.hc_attn_fn, lw.hc_attn_base,
                                     lw.hc_attn_scale, cfg_.hc_sinkhorn_iters, hc_eps, eps,
                                     lw.attn_norm, post, comb, h);
    f = attention(i, x, st, caches[i]);
    // Official mode: the experts' FP8 copy of x comes with x.
    tensor xq;
    const bool q = quantizes_input(lw.ffn.experts->source_format);
    x = ops_.hc_post_pre_norm(h, &f, lw.hc_ffn_fn, lw.hc_ffn_base, lw.hc_ffn_scale,
                              cfg_.hc_sinkhorn_iters, hc_eps, eps, lw.ffn_norm, post, comb, h,
                              q ? &st.identity_rows : nullptr, q ? &xq : nullptr);
    f = ffn(i, x, xq, st);
  }
  if (f.defined()) h = ops_.hc_post(h, f, post, comb);

  // Only the requested rows go through the final collapse, norm and head.
  const int64_t L = st.logits;
  tensor last = ops_.gather_rows(h.reshaped({T * hc, D}), st.logit_rows);
  tensor x = ops_.hc_head(last.reshaped({L, hc, D}), w_.hc_head_fn, w_.hc_head_base,
                          w_.hc_head_scale, hc_eps, eps);
  x = ops_.rms_norm(x, &w_.norm, eps);
  return ops_.linear_f32out(x, *w_.head);  // logits f32 whatever the activation dtype
}

bool model_forward::quantizes_input(weight_format f) const {
  return precision_ == precision_mode::official && f != weight_format::dense;
}

const tensor& model_forward::linear_input(const tensor& x, weight_format f, tensor& quantized,
                                          const step_tensors& st) {
  if (!quantizes_input(f)) return x;
  if (!quantized.defined()) {
    DSV4_CHECK(x.shape().rank() == 2 && x.size(0) == st.tokens,
               "official precision: linear input {} is not one row per token", x.shape().str());
    quantized = ops_.gather_rows(x, st.identity_rows);
    ops_.fake_quant_fp8_act(quantized, 128);
  }
  return quantized;
}

tensor model_forward::project(const tensor& x, const prepared_linear& w, tensor& quantized,
                              const step_tensors& st) {
  if (!quantizes_input(w.source_format)) return ops_.linear(x, w);
  // A backend that quantizes x itself gives the same y from x as from its quantized copy; the
  // copy (gather + fake quantization) is then made only if another consumer needs it.
  if (!quantized.defined() && ops_.linear_fp8_input_quantizes(x, w))
    return ops_.linear_fp8_input(x, w);
  return ops_.linear_fp8_input(linear_input(x, w.source_format, quantized, st), w);
}

tensor model_forward::attention(int layer, const tensor& x, const step_tensors& st,
                                layer_cache& cache) {
  const attention_weights& aw = w_.layers[layer].attn;
  const int64_t H = cfg_.num_attention_heads;
  const int64_t d = cfg_.head_dim;
  const int64_t rd = cfg_.rope_head_dim;
  const float eps = float(cfg_.rms_norm_eps);
  const bool compressed = aw.kind != attention_kind::sliding;
  const tensor& inv_freq = compressed ? inv_freq_compress_ : inv_freq_main_;

  const bool official = precision_ == precision_mode::official;
  // Official mode: FP8 copies of x and qr for the FP8/FP4 linears that read them (the
  // compressor and weights_proj read x unquantized).
  tensor xq, qrq;

  // The compressors read x and write only their own state and pools, which nothing below reads
  // before the indexer: they run on the side branch (ops.h) beside the query path, with the
  // indexer's head weights (x only as well). The KV path (x in, window rows out, read only by the
  // attention after the join) joins them where that keeps the branches balanced: HCA and
  // sliding layers (a sliding layer's branch is the KV path alone); CSA layers' branch is the
  // longer one already (with two branches open at once, split_branch below).
  const bool csa = aw.kind == attention_kind::csa;
  const step_tensors::compressed* sc = compressed ? (csa ? &st.csa : &st.hca) : nullptr;
  compressor_params params;
  const bool fp4_keys = csa && official && cache.index_fp4_codes.defined();
  tensor iweights;
  const bool side = ops_.begin_side_branch(
      st.tokens, compressed ? ops::side_branch_use::compressors : ops::side_branch_use::kv_path);
  const bool kv_on_side = side && !csa && ops_.side_branch_takes(ops::side_branch_use::kv_path);
  // Where the backend runs several branches at once (ops.h), the work beside the query path is
  // split into independent branches, so that none is longer than the query path: 2 branches: HCA
  // the KV path | the compressor, CSA the main compressor | the indexer's compressor and head
  // weights; 3: CSA also the KV path on its own branch; 4: CSA also the indexer's queries (from
  // qr, below).
  const int branches = side ? ops_.side_branches() : 1;
  bool issuing = side;
  const auto split_branch = [&](ops::side_branch_use use) {
    if (!issuing) return false;
    ops_.end_side_branch();
    issuing = ops_.begin_side_branch(st.tokens, use);
    return issuing;
  };
  bool kv_done = false;
  // The single shared K = V head, written to the window cache before attention so that a chunk
  // sees its own earlier tokens. Official mode: the non-RoPE dims of the rows just written are
  // rounded to FP8 (block 64), as the official Attention does to kv before caching and using it.
  // On the side branch it keeps its own FP8 copy of x if it needs one.
  tensor xq_kv;
  const auto kv_path = [&](tensor& xq_for_kv) {
    tensor kv = ops_.rms_norm(project(x, *aw.wkv, xq_for_kv, st), &aw.kv_norm, eps);
    ops_.rope(kv, 1, d, rd, st.positions, inv_freq, false);
    ops_.scatter_rows(kv, cache.window_pool, st.window_write_rows);
    if (official) ops_.fake_quant_kv_fp8(cache.window_pool, st.window_write_rows, d - rd, 64);
  };
  if (kv_on_side) {
    kv_path(xq_kv);
    kv_done = true;
    if (compressed && branches >= 2) split_branch(ops::side_branch_use::compressors);
  }
  if (compressed) {
    params.rate = cfg_.compress_rate(layer);
    params.overlap = csa;
    params.head_dim = d;
    params.rope_dim = rd;
    params.norm_eps = eps;
    const compressor_weights& cw = aw.compressor;
    ops_.compressor(ops_.linear(x, *cw.wkv), ops_.linear(x, *cw.wgate), st.positions,
                    sc->state_base, sc->emit_rows, cw.ape, cw.norm, inv_freq, params,
                    cache.comp_state_kv, cache.comp_state_score, cache.comp_pool);
    // Official mode: the main compressor's entries get the window KV's FP8 rounding.
    if (official) ops_.fake_quant_kv_fp8(cache.comp_pool, sc->emit_rows, d - rd, 64);
    if (csa) {
      if (branches >= 2) split_branch(ops::side_branch_use::compressors);
      const int64_t id = cfg_.index_head_dim;
      const compressor_weights& iw = aw.index_compressor;
      compressor_params ip = params;
      ip.head_dim = id;
      ops_.compressor(ops_.linear(x, *iw.wkv), ops_.linear(x, *iw.wgate), st.positions,
                      sc->state_base, sc->emit_rows, iw.ape, iw.norm, inv_freq, ip,
                      cache.index_state_kv, cache.index_state_score, cache.index_pool);
      // Official mode: indexer keys and queries are Hadamard-rotated and rounded to FP4 after
      // RoPE.
      if (official) ops_.hadamard_fp4_rows(cache.index_pool, sc->emit_rows, 1, id);
      // FP4 key cache (official mode only): the rounded keys, stored exactly; the indexer reads
      // these copies.
      if (fp4_keys)
        ops_.pack_indexer_fp4_rows(cache.index_pool, sc->emit_rows, cache.index_fp4_codes,
                                   cache.index_fp4_scales);
      iweights = ops_.linear(x, *aw.index_weights_proj);
      ops_.scale(iweights, float(1.0 / std::sqrt(double(cfg_.index_n_heads))));
      if (branches >= 3 && ops_.side_branch_takes(ops::side_branch_use::kv_path) &&
          split_branch(ops::side_branch_use::kv_path)) {
        kv_path(xq_kv);
        kv_done = true;
      }
    }
  }
  if (issuing) ops_.end_side_branch();

  // Queries: low-rank path, weighted norm, per-head unweighted norm, RoPE on the trailing dims.
  tensor qr = ops_.rms_norm(project(x, *aw.wq_a, xq, st), &aw.q_norm, eps);
  // The indexer's queries (CSA): from qr, on a branch of their own where one is free.
  const int64_t ih = cfg_.index_n_heads;
  const int64_t id = cfg_.index_head_dim;
  tensor iq;
  const auto index_queries = [&](tensor& qr_quantized) {
    iq = project(qr, *aw.index_wq_b, qr_quantized, st);
    ops_.rope(iq, ih, id, rd, st.positions, inv_freq, false);
    if (official) ops_.hadamard_fp4(iq, ih, id);
  };
  if (csa && branches >= 4 &&
      ops_.begin_side_branch(st.tokens, ops::side_branch_use::compressors)) {
    tensor qrq_index;  // the branch's own FP8 copy of qr, if it makes one
    index_queries(qrq_index);
    ops_.end_side_branch();
  }
  tensor q = ops_.rms_norm(project(qr, *aw.wq_b, qrq, st), nullptr, eps, H);
  ops_.rope(q, H, d, rd, st.positions, inv_freq, false);

  if (!kv_done) kv_path(xq);
  if (side && !compressed) ops_.join_side_branch();  // the attention reads the window rows

  kv_source window{&cache.window_pool, &st.window_rows};
  window.host_tables = true;  // (upload_plan)
  kv_source comp;
  tensor top_rows;
  if (compressed) {
    comp.pool = &cache.comp_pool;
    comp.block_size = st.block_size;
    if (csa) {
      if (!iq.defined()) index_queries(qrq);
      const float iq_scale = float(1.0 / std::sqrt(double(id)));
      if (side) ops_.join_side_branch();  // the indexer reads the side branch's keys and weights
      top_rows =
          fp4_keys
              ? ops_.indexer_topk_fp4(iq, iweights, cache.index_pool, cache.index_fp4_codes,
                                      cache.index_fp4_scales, sc->block_table, sc->token_seq,
                                      sc->n_visible, ih, st.block_size, cfg_.index_topk, iq_scale)
              : ops_.indexer_topk(iq, iweights, cache.index_pool, sc->block_table, sc->token_seq,
                                  sc->n_visible, ih, st.block_size, cfg_.index_topk, iq_scale);
      comp.rows = &top_rows;
    } else {
      if (side) ops_.join_side_branch();  // attention reads the compressed pool
      comp.block_table = &sc->block_table;
      comp.token_seq = &sc->token_seq;
      comp.n_visible = &sc->n_visible;
      comp.host_tables = true;  // (upload_plan)
    }
  }

  tensor o = ops_.sparse_attention(q, H, window, compressed ? &comp : nullptr, aw.sinks,
                                   float(1.0 / std::sqrt(double(d))));
  // K = V carried RoPE into the output: rotate back by the query position.
  ops_.rope(o, H, d, rd, st.positions, inv_freq, true);
  // wo_a stays unquantized in both modes (the official convert.py dequantizes it to BF16).
  tensor z = ops_.grouped_linear(o, *aw.wo_a, cfg_.o_groups);
  if (!quantizes_input(aw.wo_b->source_format)) return ops_.linear(z, *aw.wo_b);
  // z feeds wo_b only: quantized in place, unless wo_b's path quantizes it itself (ops.h).
  if (!ops_.linear_fp8_input_quantizes(z, *aw.wo_b)) ops_.fake_quant_fp8_act(z, 128);
  return ops_.linear_fp8_input(z, *aw.wo_b);
}

tensor model_forward::ffn(int layer, const tensor& x, tensor xq, const step_tensors& st) {
  const ffn_weights& fw = w_.layers[layer].ffn;
  const int64_t T = st.tokens;
  const int64_t k = cfg_.num_experts_per_tok;
  const float limit = float(cfg_.swiglu_limit);
  tensor indices = ops_.alloc(dtype::i32, {T, k});
  tensor weights = ops_.alloc(dtype::f32, {T, k});
  const bool hash = fw.router == router_kind::hash;
  const router_score score = router_score_;
  // transformers and the official Gate normalise the selected scores for every non-softmax
  // scoring function; softmax follows norm_topk_prob.
  const bool normalize = score != router_score::softmax || cfg_.norm_topk_prob;
  // Official mode: the experts read the FP8 copy of x (the router reads x itself), and the
  // routed experts apply their weight before the quantized w2 (moe_experts_official). The copy
  // (given, or made here) exists before the side branch, so that both branches only read it.
  const bool official_experts = quantizes_input(fw.experts->source_format);
  if (official_experts && !xq.defined()) linear_input(x, fw.experts->source_format, xq, st);
  // The shared expert on the side branch, beside the router and the routed experts (a decode
  // step's shared expert is a chain of small launches that their kernels leave room for).
  const bool side = ops_.begin_side_branch(T, ops::side_branch_use::shared_expert);
  tensor h =
      ops_.swiglu(project(x, *fw.shared_w1, xq, st), project(x, *fw.shared_w3, xq, st), limit);
  tensor shared;
  if (quantizes_input(fw.shared_w2->source_format)) {
    // h feeds shared_w2 only (as z above).
    if (!ops_.linear_fp8_input_quantizes(h, *fw.shared_w2)) ops_.fake_quant_fp8_act(h, 128);
    shared = ops_.linear_fp8_input(h, *fw.shared_w2);
  } else {
    shared = ops_.linear(h, *fw.shared_w2);
  }
  if (side) ops_.end_side_branch();
  ops_.moe_route(x, *fw.gate, hash ? nullptr : &fw.bias, hash ? &fw.tid2eid : nullptr, st.ids,
                 score, k, normalize, float(cfg_.routed_scaling_factor), indices, weights);
  tensor y = official_experts ? ops_.moe_experts_official(xq, indices, weights, *fw.experts, limit)
                              : ops_.moe_experts(x, indices, weights, *fw.experts, limit);
  if (side) ops_.join_side_branch();
  ops_.add(y, shared);
  return y;
}

}  // namespace dsv4
