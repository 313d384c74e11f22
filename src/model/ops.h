// The op interface the DeepSeek-V4 forward is written against, once, for every backend.
//
// Conventions (all backends):
//  * Activations are row-major [tokens, features]; a "token" is one entry of the flattened step
//    (tokens of several sequences, each sequence's tokens in increasing position order).
//  * Float activations are f32 on the CPU backend; other backends may use bf16 storage but keep
//    f32 accumulation, softmax, norms and mHC.
//  * Index tensors are i32. A row index of -1 means "skip" (no key, no write).
//  * Ops return freshly allocated outputs unless they say "in place". They never synchronise with
//    the host except upload/download.
//  * Pools are the paged per-layer caches: [rows, width], row = block * block_size + offset.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/linear_weight.h"

namespace dsv4 {

// A linear weight in the backend's preferred layout (CPU: dequantized f32 [out, in]).
class prepared_linear {
 public:
  virtual ~prepared_linear() = default;
  int64_t out = 0;
  int64_t in = 0;
  std::string name;
  // The checkpoint format of the weight (set by every backend's prepare_linear): the official
  // precision mode quantizes the input of FP8/FP4-weight linears only (docs/dsv4-model.md §3.7).
  weight_format source_format = weight_format::dense;
};

// The routed experts of one MoE layer: w1 (gate), w3 (up) [inter, hidden], w2 (down) [hidden,
// inter].
class prepared_experts {
 public:
  virtual ~prepared_experts() = default;
  int64_t count = 0;
  int64_t hidden = 0;
  int64_t inter = 0;
  // The checkpoint format of the expert weights (set by every backend's prepare_experts), as
  // prepared_linear::source_format.
  weight_format source_format = weight_format::dense;
};

enum class router_score : uint8_t { sqrtsoftplus, softmax, sigmoid };

struct compressor_params {
  int64_t rate = 4;        // tokens per compressed entry
  bool overlap = false;    // CSA: entry w pools Ca of window w-1 and Cb of window w
  int64_t head_dim = 512;  // entry width; the projections are (overlap ? 2 : 1) * head_dim wide
  int64_t rope_dim = 64;   // trailing dims rotated at the window's first position
  float norm_eps = 1e-6f;
};

// Where a token's keys are: explicit pool rows [T, K] (-1 skipped), or the first n_visible[t]
// entries of sequence token_seq[t] through a block table (the HCA "all visible entries" case,
// which would otherwise need T x entries indices).
struct kv_source {
  const tensor* pool = nullptr;
  const tensor* rows = nullptr;
  const tensor* block_table = nullptr;  // [sequences, max_blocks] i32
  const tensor* token_seq = nullptr;    // [T] i32: row of block_table
  const tensor* n_visible = nullptr;    // [T] i32
  int64_t block_size = 128;
  // rows / block_table / token_seq / n_visible were uploaded by the host before the step's device
  // work and are written by none of its kernels (the step plan's tables): a backend may read them
  // before its kernel's wait on the previous kernel (CUDA: programmatic dependent launch).
  bool host_tables = false;
};

// A recorded sequence of a backend's device work (a CUDA graph): replay() enqueues it again, with
// the same buffers, shapes and launch configurations as when it was captured.
class captured_graph {
 public:
  virtual ~captured_graph() = default;
  virtual void replay() = 0;
  virtual size_t node_count() const = 0;  // recorded operations (kernels, copies, memsets)
};

class ops {
 public:
  virtual ~ops() = default;
  virtual std::string name() const = 0;
  // The dtype of the activations the ops take and produce (the cache pools use it too); f32
  // unless a backend stores them narrower (the CUDA backend's bf16). Accumulation, softmax,
  // norms and mHC stay f32 in every backend.
  virtual dtype activation_type() const { return dtype::f32; }
  // Whether the KV ops (scatter_rows, compressor, fake_quant_kv_fp8, sparse_attention) accept
  // window and compressed pools of FP8 records (u8, layer_cache.h) as well as activation pools.
  virtual bool kv_records() const { return false; }
  // Whether the backend keeps FP4 copies of the indexer keys (io/indexer_fp4_key.h) and reads
  // them (pack_indexer_fp4_rows, indexer_topk_fp4); the cache allocates them in the official
  // precision mode, where the keys are exactly FP4 (hadamard_fp4).
  virtual bool indexer_fp4_keys() const { return false; }

  // ---- memory ----
  virtual tensor alloc(dtype type, const dims& shape) = 0;  // contents undefined
  virtual tensor zeros(dtype type, const dims& shape) = 0;
  virtual tensor upload(const tensor_view& host) = 0;      // same dtype, contiguous copy
  virtual tensor upload_f32(const tensor_view& host) = 0;  // converted to f32
  virtual tensor download(const tensor& device) = 0;       // host copy, same dtype
  // Copies host into the existing device tensor of the same dtype and element count, ordered with
  // the backend's device work (the host buffer may be reused on return). Not capturable: it
  // refreshes the inputs of a captured graph before its replay.
  virtual void upload_to(tensor& device, const tensor_view& host) = 0;

  // ---- graph capture ----
  // Backends with graphs (CUDA): runs body once eagerly (its effects are real; it may
  // synchronise and read results), then again under capture (nothing executes), and returns the
  // graph of the second run. Both runs allocate from a pool private to the graph, so the capture
  // reuses the blocks the eager run left and its buffers are never handed to anyone else while the
  // graph lives. body must issue the same work in both runs and, in the captured run, only
  // device work on the backend (no upload, download or host read). Backends without graphs (CPU)
  // return null without running body.
  virtual std::unique_ptr<captured_graph> capture(const std::function<void()>& body) {
    (void)body;
    return nullptr;
  }
  // ---- a side branch (optional concurrency) ----
  // begin_side_branch: the ops issued until end_side_branch may run beside the ops issued after it
  // until join_side_branch, on backends that can (CUDA: a second stream, forked from and joined
  // to the main one, captured into graphs as a fork and a join). The branch's ops read only
  // tensors complete before begin_side_branch and tensors the branch made itself; the main ops
  // issued before the join must not read the branch's results (the caller uses them after the
  // join). Returns false (and the three calls do nothing) where the backend runs everything in
  // order: the caller's ops then run serially, with the same results.
  // `use` names the caller (a backend may enable the uses separately).
  // Several branches may be open at once (side_branches() of them): a begin_side_branch after an
  // end_side_branch and before the join starts another branch, forked from the main ops at that
  // point, which runs beside the main ops and the open branches (it must not read their results
  // either); one join_side_branch joins them all. With every slot taken, begin_side_branch joins
  // the open branches first.
  enum class side_branch_use : uint8_t { shared_expert = 1, compressors = 2, kv_path = 4 };
  virtual bool begin_side_branch(int64_t tokens, side_branch_use use) {
    (void)tokens;
    (void)use;
    return false;
  }
  // Whether a branch may also carry `use`'s ops (inside a branch begun for another use).
  virtual bool side_branch_takes(side_branch_use use) const {
    (void)use;
    return false;
  }
  virtual void end_side_branch() {}
  virtual void join_side_branch() {}
  // How many side branches may be open at once (>= 1).
  virtual int side_branches() const { return 1; }

  virtual std::unique_ptr<prepared_linear> prepare_linear(const linear_weight& w) = 0;
  virtual std::unique_ptr<prepared_experts> prepare_experts(
      const std::vector<linear_weight>& w1, const std::vector<linear_weight>& w3,
      const std::vector<linear_weight>& w2) = 0;

  // ---- dense ops ----
  // out[t] = table[ids[t]] for table [vocab, dim] f32.
  virtual tensor embed(const tensor& table, const tensor& ids) = 0;
  // y = x W^T: x [T, in] -> [T, out].
  virtual tensor linear(const tensor& x, const prepared_linear& w) = 0;
  // linear with an f32 output whatever activation_type() is (the LM head: logits are never
  // rounded to bf16). Backends with f32 activations need not override it.
  virtual tensor linear_f32out(const tensor& x, const prepared_linear& w) { return linear(x, w); }
  // linear whose input holds FP8 blocks (official precision mode: fake_quant_fp8_act(x, 128)
  // leaves it unchanged, every 128 values are e4m3 times a power of two): the same y, and a
  // backend may compute it on FP8 tensor cores (exact products; f32 sums in its own order).
  virtual tensor linear_fp8_input(const tensor& x, const prepared_linear& w) {
    return linear(x, w);
  }
  // True when linear_fp8_input(x, w) would itself quantize x to FP8 blocks of 128 with
  // fake_quant_fp8_act's rounding (e4m3(x / s), s = 2^ceil(log2(max(amax, 1e-4) / 448))): it may
  // then be given x unquantized, with the same result bit for bit (re-quantizing fake-quantized
  // values returns them with the same or a halved power-of-two scale, and such a scale factor
  // passes exactly through the exact FP8 products and their f32 sums), so the caller can skip
  // its quantized copy of x.
  virtual bool linear_fp8_input_quantizes(const tensor& x, const prepared_linear& w) const {
    (void)x;
    (void)w;
    return false;
  }
  // Block-diagonal: x [T, G*in_g], w [G*out_g, in_g]; group g maps x[:, g*in_g:] to y[:, g*out_g:].
  virtual tensor grouped_linear(const tensor& x, const prepared_linear& w, int64_t groups) = 0;
  // y = x * rsqrt(mean(x^2) + eps) * weight over the last dim of x [T, n]; weight may be null
  // (unweighted). `groups` > 1 normalises each of `groups` equal slices of a row separately.
  virtual tensor rms_norm(const tensor& x, const tensor* weight, float eps, int64_t groups = 1) = 0;
  // In place: interleaved-pair RoPE on the trailing rope_dim dims of each of `heads` slices of x
  // [T, heads*head_dim], angle positions[t] * inv_freq[i] for pair i; inverse rotates by -angle.
  virtual void rope(tensor& x, int64_t heads, int64_t head_dim, int64_t rope_dim,
                    const tensor& positions, const tensor& inv_freq, bool inverse) = 0;
  // In place: x += y.
  virtual void add(tensor& x, const tensor& y) = 0;
  // In place: x *= s.
  virtual void scale(tensor& x, float s) = 0;
  // SwiGLU with the V4 clamps: silu(min(g, limit)) * clamp(u, -limit, limit); g, u [T, n].
  virtual tensor swiglu(const tensor& gate, const tensor& up, float limit) = 0;
  // out[i] = x[rows[i]].
  virtual tensor gather_rows(const tensor& x, const tensor& rows) = 0;
  // pool[rows[t]] = src[t] for rows[t] >= 0 (in place on pool).
  virtual void scatter_rows(const tensor& src, tensor& pool, const tensor& rows) = 0;

  // ---- manifold-constrained hyper-connections (hc streams of width D) ----
  // x [T, hc, D]; fn [(2+hc)*hc, hc*D], base [(2+hc)*hc], scale [3]. Returns the collapsed input
  // y [T, D] and fills post [T, hc], comb [T, hc, hc] (Sinkhorn-projected, comb[j][k] mixes
  // input stream j into output stream k).
  virtual tensor hc_pre(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                        int64_t sinkhorn_iters, float hc_eps, float norm_eps, tensor& post,
                        tensor& comb) = 0;
  // out[t, k] = post[t, k] * f[t] + sum_j comb[t, j, k] * x[t, j].
  virtual tensor hc_post(const tensor& x, const tensor& f, const tensor& post,
                         const tensor& comb) = 0;
  // Between two sub-layers: a residual update, the next collapse and that sub-layer's input norm.
  //   x_next = f ? hc_post(x, *f, post, comb) : x   (post / comb read as the finished sub-layer's)
  //   y = rms_norm(hc_pre(x_next, fn, base, scale, sinkhorn_iters, hc_eps, norm_eps, post, comb),
  //                &norm_weight, norm_eps)          (post / comb overwritten with the new gates)
  // Returns y and sets x_next (which may be x itself: it is assigned last). With fp8_copy_rows
  // (the step's identity rows [T]) it also sets *fp8_copy = fake_quant_fp8_act(gather_rows(y,
  // rows), 128): the official mode's FP8 copy of a linear input, made here so that a backend can
  // write it in the same pass. The default runs the ops; a backend may fuse them (the same values
  // up to the order of its f32 sums).
  virtual tensor hc_post_pre_norm(const tensor& x, const tensor* f, const tensor& fn,
                                  const tensor& base, const tensor& scale, int64_t sinkhorn_iters,
                                  float hc_eps, float norm_eps, const tensor& norm_weight,
                                  tensor& post, tensor& comb, tensor& x_next,
                                  const tensor* fp8_copy_rows = nullptr,
                                  tensor* fp8_copy = nullptr);
  // Final collapse: pre = sigmoid(mix * scale + base) + eps (no Sinkhorn); y = sum_j pre_j x_j.
  virtual tensor hc_head(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                         float hc_eps, float norm_eps) = 0;

  // ---- attention ----
  // Compressor step (one layer, one compressor). kv, score: [T, width] projections of the step's
  // tokens (score without ape). For token t: ape[pos % rate] is added to its score and (kv,
  // score) is stored in the state ring at row state_base[t] + pos % ring (ring = rate, or 2*rate
  // with overlap). If emit_rows[t] >= 0, token t closes window w = pos / rate: the entry is the
  // per-channel softmax-weighted sum over the window's slots (with overlap: Ca of window w-1,
  // absent for w = 0, and Cb of window w), RMS-normed with norm_weight, rotated at position
  // w * rate, and written to out_pool[emit_rows[t]]. Tokens are processed in step order, so a
  // sequence's chunk may span many windows.
  virtual void compressor(const tensor& kv, const tensor& score, const tensor& positions,
                          const tensor& state_base, const tensor& emit_rows, const tensor& ape,
                          const tensor& norm_weight, const tensor& inv_freq,
                          const compressor_params& params, tensor& state_kv, tensor& state_score,
                          tensor& out_pool) = 0;
  // Lightning indexer: score(t, s) = sum_h weights[t, h] * relu(q[t, h] . key[s]) * q_scale over
  // the first n_visible[t] entries of sequence token_seq[t] (entry s at pool row
  // block_table[seq, s / block_size] * block_size + s % block_size). Returns [T, top_k] pool rows
  // of the best min(top_k, n_visible) entries, highest score first (ties: lower entry first), -1
  // padded.
  virtual tensor indexer_topk(const tensor& q, const tensor& weights, const tensor& key_pool,
                              const tensor& block_table, const tensor& token_seq,
                              const tensor& n_visible, int64_t heads, int64_t block_size,
                              int64_t top_k, float q_scale) = 0;
  // FP4 indexer keys (backends with indexer_fp4_keys()): for i < rows.numel(), rows[i] >= 0, the
  // key at key_pool row rows[i] encoded (indexer_fp4_key_encode) into codes [R, 64] u8 and scales
  // [R] i32 (four E8M0 bytes) at the same row; exact for keys hadamard_fp4 rounded.
  virtual void pack_indexer_fp4_rows(const tensor& key_pool, const tensor& rows, tensor& codes,
                                     tensor& scales);
  // indexer_topk reading the FP4 copies (codes, scales) of key_pool's keys where the backend can;
  // the result is indexer_topk's on key_pool when every visible key is the decode of its copy.
  virtual tensor indexer_topk_fp4(const tensor& q, const tensor& weights, const tensor& key_pool,
                                  const tensor& codes, const tensor& scales,
                                  const tensor& block_table, const tensor& token_seq,
                                  const tensor& n_visible, int64_t heads, int64_t block_size,
                                  int64_t top_k, float q_scale);
  // One softmax per (token, head) over the window keys and the compressed keys (K = V) plus the
  // head's sink logit in the denominator:
  //   o = sum_i e^(s_i - m) k_i / (sum_i e^(s_i - m) + e^(sink - m)),  s_i = scale * q . k_i.
  // q [T, H*d] -> [T, H*d]. A token with no keys at all gets o = 0.
  virtual tensor sparse_attention(const tensor& q, int64_t heads, const kv_source& window,
                                  const kv_source* compressed, const tensor& sinks,
                                  float scale) = 0;

  // ---- mixture of experts ----
  // Router: logits = x W^T, s = score(logits); selection = top-k of s + bias (score layers) or
  // tid2eid[ids] (hash layers, tid2eid i32 [vocab, k]); weights = s at the selection, normalised
  // to sum 1 when `normalize`, times route_scale. Fills indices [T, k] i32, weights [T, k] f32.
  virtual void moe_route(const tensor& x, const prepared_linear& gate, const tensor* bias,
                         const tensor* tid2eid, const tensor& ids, router_score score,
                         int64_t top_k, bool normalize, float route_scale, tensor& indices,
                         tensor& weights) = 0;
  // y[t] = sum_k weights[t, k] * w2_e(swiglu(w1_e x[t], w3_e x[t])), e = indices[t, k].
  virtual tensor moe_experts(const tensor& x, const tensor& indices, const tensor& weights,
                             const prepared_experts& experts, float swiglu_limit) = 0;

  // ---- official precision mode (docs/dsv4-model.md §3.7; off in the exact mode) ----
  // The official reference simulates its deployment quantization (QAT) with quantize-dequantize
  // steps; these ops reproduce them on activations (quantized in f32; the dequantized values
  // are exact in bf16 storage too). Scales are powers of two (E8M0), so
  // x / s and q * s are exact and only the element casts round. The casts are round to nearest,
  // ties to even, saturating; [UNCONFIRMED] that the tilelang FP8/FP4 casts of the official
  // kernels round this way (docs §9 item 2). The official kernels compute the scale as
  // 2^ceil(log2(amax * (1/max))); amax / max gives the same power of two for every normal f32
  // amax (checked exhaustively for max = 448 and 6).
  //
  // In place: every row of x [rows, n] in blocks of `block` consecutive values (the last block
  // of a row may be shorter): s = 2^ceil(log2(max(amax, 1e-4) / 448)), x = e4m3(x / s) * s.
  // Official: act_quant (kernel.py) on the input of every Linear with an FP8 or FP4 weight
  // (wq_a, wq_b, wkv, wo_b, indexer.wq_b, shared and routed experts), block 128; not wo_a
  // (convert.py dequantizes it to BF16), nor the compressor, gate, weights_proj or head.
  virtual void fake_quant_fp8_act(tensor& x, int64_t block = 128) = 0;
  // In place on pool rows rows[i] of pool [R, W] (-1 skipped; listed rows must be distinct, as
  // a step's window and emit rows are, since backends quantize rows concurrently): the first
  // nope_dims values of each row quantized like fake_quant_fp8_act in blocks of `block` (the last
  // may be shorter); the remaining (RoPE) dims untouched. Official: Attention.forward rounds
  // the window kv (kv[..., :-rd], block 64) and Compressor.forward its emitted entries (main
  // compressor only), after RoPE; the initial official revision cast to BF16 here (no
  // rounding), the current one to FP8 (docs §3.7).
  virtual void fake_quant_kv_fp8(tensor& pool, const tensor& rows, int64_t nope_dims,
                                 int64_t block = 64) = 0;
  // In place on each of the `heads` vectors of head_dim values in every row of x
  // [rows, heads * head_dim] (head_dim a power of two): v = H v * head_dim^-0.5 (Walsh-Hadamard
  // in Sylvester order, H[i][j] = (-1)^popcount(i & j), computed by log2(head_dim) butterfly
  // stages in f32), then FP4 e2m1 quantize-dequantize per block of 32: s = 2^ceil(log2(amax /
  // 6)) with amax floored at 6 * 2^-126, v = e2m1(v / s) * s (saturating at 6). Official:
  // Indexer.forward on q after RoPE (rotate_activation = fast_hadamard_transform, then
  // fp4_act_quant) and on the indexer compressor's keys (Compressor with rotate=True).
  virtual void hadamard_fp4(tensor& x, int64_t heads, int64_t head_dim) = 0;
  // hadamard_fp4 on pool rows rows[i] (-1 skipped, distinct) of pool [R, heads * head_dim].
  virtual void hadamard_fp4_rows(tensor& pool, const tensor& rows, int64_t heads,
                                 int64_t head_dim) = 0;
  // Routed experts in the official order (docs §4 Expert with weights, §3.7): for each pair,
  // h = swiglu(w1_e x, w3_e x) * weights[t, k]; h is fake-quantized to FP8 (fake_quant_fp8_act,
  // block 128, per pair row) as the input of the FP8/FP4 w2; y[t] = sum_k w2_e h. x is used as
  // given (the caller quantizes it, as it is shared with the shared expert). The official
  // reference also rounds h to BF16 before the quantization; activations stay f32 here.
  virtual tensor moe_experts_official(const tensor& x, const tensor& indices, const tensor& weights,
                                      const prepared_experts& experts, float swiglu_limit) = 0;
};

}  // namespace dsv4
