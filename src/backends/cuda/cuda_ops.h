// The CUDA backend behind the op interface (model/ops.h). Device memory comes from a caching
// allocator over cudaMalloc (device_allocator.h; no managed memory); every op is enqueued on the
// backend's stream and returns without waiting, except upload/download, which copy synchronously
// at the step's edges (upload_to is stream-ordered, from pinned staging). Activations are stored in
// the backend's activation dtype (f32: the CPU reference's semantics op by op; bf16: one rounding
// per op output, f32 arithmetic inside every op), checked op by op in tests/cuda; weights stay in
// their checkpoint formats on the device (the routed experts' 4-bit bytes repacked at load where
// set_repack_experts says). Outputs that are not activations keep their types: mHC
// post / comb and router weights f32, indices i32, linear_f32out (the LM head) f32.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>

#include "backends/cuda/device_allocator.h"
#include "model/ops.h"

namespace dsv4::cuda {

class cuda_ops final : public ops {
 public:
  // activations: dtype::f32 or dtype::bf16.
  explicit cuda_ops(int device = 0, dtype activations = dtype::f32);
  ~cuda_ops() override;
  std::string name() const override { return "cuda"; }
  dtype activation_type() const override { return act_; }
  // Window and compressed KV pools may be FP8 records (layer_cache.h): scatter_rows and the
  // compressor pack them, sparse_attention reads them with attention_decode.
  bool kv_records() const override { return true; }
  cudaStream_t stream() const { return stream_; }
  int sm_count() const { return sm_count_; }
  // device_info.h peak_read_bytes_per_sm_cycle of this device (0: unknown); routing rules use it.
  double read_bytes_per_sm_cycle() const { return read_bytes_per_sm_cycle_; }
  // The fast kernels where they apply: moe_decode for MXFP4/NVFP4 routed experts in steps of
  // <= 64 tokens (exact and official order), linear_decode for the dense linears that
  // linear_dispatch.h gives it, and with bf16 activations attention_decode and indexer_topk_fast
  // (bf16 tensor-core products) for every step, longer ones in chunks of 64 tokens. Off: the
  // general kernels everywhere (the f32 path then matches the CPU reference op by op). On by
  // default. Dense linears take linear_gemm (exact expansion + cuBLAS) where linear_dispatch.h
  // says so either way.
  void set_decode_kernels(bool enabled) { decode_kernels_ = enabled; }
  bool decode_kernels() const { return decode_kernels_; }
  // Routed-expert weights repacked once at load (prepare_experts) into the layout of
  // moe_repack.h where every step kernel that reads them takes it (expert_layout.h: bf16
  // activations, decode kernels on, compute capability 9.0, MXFP4/NVFP4 with dims % 128). On by
  // default; the environment variable DSV4_CUDA_REPACK=0 also switches it off. Both this and
  // set_decode_kernels apply to weights prepared afterwards: set them before loading.
  void set_repack_experts(bool enabled) { repack_experts_ = enabled; }
  bool repack_experts() const;
  // Expert sets (one per MoE layer) prepared so far, and those of them in the repacked layout.
  int64_t expert_sets() const { return expert_sets_; }
  int64_t repacked_expert_sets() const { return repacked_expert_sets_; }
  // Dense NVFP4 linears repacked once at load (prepare_linear) into the same layout where
  // dense_layout.h allows (decode kernels on, dims % 16 / 128, >= 8 MiB): linear_decode and
  // linear_gemm read it. On by default; DSV4_CUDA_REPACK_DENSE=0 in the environment also switches
  // it off. Set before loading, like set_repack_experts.
  void set_repack_dense(bool enabled) { repack_dense_ = enabled; }
  bool repack_dense() const;
  // Dense linears prepared so far, and those of them in the repacked layout.
  int64_t dense_linears() const { return dense_linears_; }
  int64_t repacked_dense_linears() const { return repacked_dense_linears_; }
  // Device memory in use by live allocations of this backend, in bytes.
  size_t allocated_bytes() const;
  // Device memory held from cudaMalloc: live allocations plus the allocator's caches.
  size_t reserved_bytes() const;
  device_allocator& allocator() const { return *allocator_; }
  // The backend's cuBLAS handle (dense linears on linear_gemm.h, cuBLASLt), shared by the streams:
  // each call sets its stream and, for linear_gemm, the workspace below.
  cublasHandle_t cublas() const { return cublas_; }
  // cuBLAS's workspace for linear_gemm calls issued on stream()
  // (k_linear_gemm_cublas_workspace_bytes): one per stream, allocated on the stream's first call
  // and kept for the backend's life, so that calls on concurrent streams never share one
  // (linear_gemm.h) and every captured graph reuses the same few blocks. Safe to reuse: a stream's
  // calls, captured or eager, are ordered on it.
  void* cublas_workspace();

  // The side branch (ops.h) on a second stream, for decode sizes (tokens <= 8; its GEMMs take
  // that stream's cuBLAS workspace). DSV4_SIDE_BRANCH: a mask of the uses taken (1 shared expert,
  // 2 compressors, 4 the attention's KV path; default 7, 0 none).
  bool begin_side_branch(int64_t tokens, side_branch_use use) override;
  bool side_branch_takes(side_branch_use use) const override;
  void end_side_branch() override;
  void join_side_branch() override;
  int side_branches() const override;

  tensor alloc(dtype type, const dims& shape) override;
  tensor zeros(dtype type, const dims& shape) override;
  tensor upload(const tensor_view& host) override;
  void upload_to(tensor& device, const tensor_view& host) override;
  std::unique_ptr<captured_graph> capture(const std::function<void()>& body) override;
  tensor upload_f32(const tensor_view& host) override;
  tensor download(const tensor& device) override;
  std::unique_ptr<prepared_linear> prepare_linear(const linear_weight& w) override;
  std::unique_ptr<prepared_experts> prepare_experts(const std::vector<linear_weight>& w1,
                                                    const std::vector<linear_weight>& w3,
                                                    const std::vector<linear_weight>& w2) override;

  tensor embed(const tensor& table, const tensor& ids) override;
  tensor linear(const tensor& x, const prepared_linear& w) override;
  tensor linear_f32out(const tensor& x, const prepared_linear& w) override;
  // FP8-block weights at <= 8 tokens: linear_decode_fp8act (W8A8 on FP8 tensor cores); else
  // linear.
  tensor linear_fp8_input(const tensor& x, const prepared_linear& w) override;
  bool linear_fp8_input_quantizes(const tensor& x, const prepared_linear& w) const override;
  tensor grouped_linear(const tensor& x, const prepared_linear& w, int64_t groups) override;
  tensor rms_norm(const tensor& x, const tensor* weight, float eps, int64_t groups) override;
  void rope(tensor& x, int64_t heads, int64_t head_dim, int64_t rope_dim, const tensor& positions,
            const tensor& inv_freq, bool inverse) override;
  void add(tensor& x, const tensor& y) override;
  void scale(tensor& x, float s) override;
  tensor swiglu(const tensor& gate, const tensor& up, float limit) override;
  tensor gather_rows(const tensor& x, const tensor& rows) override;
  void scatter_rows(const tensor& src, tensor& pool, const tensor& rows) override;

  tensor hc_pre(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                int64_t sinkhorn_iters, float hc_eps, float norm_eps, tensor& post,
                tensor& comb) override;
  tensor hc_post(const tensor& x, const tensor& f, const tensor& post, const tensor& comb) override;
  tensor hc_post_pre_norm(const tensor& x, const tensor* f, const tensor& fn, const tensor& base,
                          const tensor& scale, int64_t sinkhorn_iters, float hc_eps, float norm_eps,
                          const tensor& norm_weight, tensor& post, tensor& comb, tensor& x_next,
                          const tensor* fp8_copy_rows = nullptr,
                          tensor* fp8_copy = nullptr) override;
  tensor hc_head(const tensor& x, const tensor& fn, const tensor& base, const tensor& scale,
                 float hc_eps, float norm_eps) override;

  void compressor(const tensor& kv, const tensor& score, const tensor& positions,
                  const tensor& state_base, const tensor& emit_rows, const tensor& ape,
                  const tensor& norm_weight, const tensor& inv_freq,
                  const compressor_params& params, tensor& state_kv, tensor& state_score,
                  tensor& out_pool) override;
  tensor indexer_topk(const tensor& q, const tensor& weights, const tensor& key_pool,
                      const tensor& block_table, const tensor& token_seq, const tensor& n_visible,
                      int64_t heads, int64_t block_size, int64_t top_k, float q_scale) override;
  // FP4 indexer keys: read by indexer_topk_fast_fp4 where the fast kernel applies (decode
  // kernels on, bf16 activations, 64 x 128 heads), else the general kernel reads key_pool.
  bool indexer_fp4_keys() const override { return true; }
  void pack_indexer_fp4_rows(const tensor& key_pool, const tensor& rows, tensor& codes,
                             tensor& scales) override;
  tensor indexer_topk_fp4(const tensor& q, const tensor& weights, const tensor& key_pool,
                          const tensor& codes, const tensor& scales, const tensor& block_table,
                          const tensor& token_seq, const tensor& n_visible, int64_t heads,
                          int64_t block_size, int64_t top_k, float q_scale) override;
  tensor sparse_attention(const tensor& q, int64_t heads, const kv_source& window,
                          const kv_source* compressed, const tensor& sinks, float scale) override;

  void moe_route(const tensor& x, const prepared_linear& gate, const tensor* bias,
                 const tensor* tid2eid, const tensor& ids, router_score score, int64_t top_k,
                 bool normalize, float route_scale, tensor& indices, tensor& weights) override;
  tensor moe_experts(const tensor& x, const tensor& indices, const tensor& weights,
                     const prepared_experts& experts, float swiglu_limit) override;

  // Official precision mode (cuda_ops_quantize.cpp; moe_experts_official in cuda_ops_linear.cpp).
  void fake_quant_fp8_act(tensor& x, int64_t block) override;
  void fake_quant_kv_fp8(tensor& pool, const tensor& rows, int64_t nope_dims,
                         int64_t block) override;
  void hadamard_fp4(tensor& x, int64_t heads, int64_t head_dim) override;
  void hadamard_fp4_rows(tensor& pool, const tensor& rows, int64_t heads,
                         int64_t head_dim) override;
  tensor moe_experts_official(const tensor& x, const tensor& indices, const tensor& weights,
                              const prepared_experts& experts, float swiglu_limit) override;

 private:
  // indexer_topk (codes null) and indexer_topk_fp4.
  tensor indexer_topk_keys(const tensor& q, const tensor& weights, const tensor& key_pool,
                           const tensor* codes, const tensor* scales, const tensor& block_table,
                           const tensor& token_seq, const tensor& n_visible, int64_t heads,
                           int64_t block_size, int64_t top_k, float q_scale);

  int device_ = 0;
  dtype act_ = dtype::f32;
  int sm_count_ = 0;
  double read_bytes_per_sm_cycle_ = 0;
  bool decode_kernels_ = true;
  bool repack_experts_ = true;
  int64_t expert_sets_ = 0, repacked_expert_sets_ = 0;
  bool repack_dense_ = true;
  int64_t dense_linears_ = 0, repacked_dense_linears_ = 0;
  // stream_: where ops issue work (main_stream_, or a side stream inside a side branch).
  // Up to k_side_branches branches may be open at once (begun and not joined), branch i on
  // side_streams_[i]; side_open_ counts them, side_issuing_ is true between begin and end.
  static constexpr int k_side_branches = 4;
  cudaStream_t stream_ = nullptr;
  cudaStream_t main_stream_ = nullptr;
  cudaStream_t side_streams_[k_side_branches] = {};
  cudaEvent_t fork_event_ = nullptr;
  cudaEvent_t join_events_[k_side_branches] = {};
  int side_open_ = 0;
  bool side_issuing_ = false;
  int side_branches_ = 1;  // branches allowed open at once (DSV4_SIDE_BRANCHES at construction)
  // hc_post_pre_norm's gates (post, comb: the Sinkhorn projection) on gates_stream_, forked after
  // its launches and joined to the main stream before post / comb are next read or written
  // (join_gates: hc_post, hc_pre, hc_post_pre_norm, download, the end of a capture). gates_ws_
  // keeps the partial sums the gates kernel reads until the join. DSV4_HC_GATES_APART (read at
  // construction): 0 the gates in hc_post_pre_norm's finish launch; 1 apart; 2 (default) apart and
  // also joined at the next join_side_branch (a node that already has a full dependency, rather
  // than the next collapse's programmatic dependent launch). l28b (H200, flash-dims decode step,
  // 3 rounds x 2 processes, batch 2 / 3): 0 0.592-0.597 / 0.637 ms, 1 0.584-0.588 / 0.628-0.632,
  // 2 0.583 / 0.626-0.629 (logits bitwise-equal).
  void join_gates();
  int gates_apart_ = 2;
  cudaStream_t gates_stream_ = nullptr;
  cudaEvent_t gates_fork_event_ = nullptr, gates_done_event_ = nullptr;
  bool gates_pending_ = false;
  tensor gates_ws_;
  std::unique_ptr<device_allocator> allocator_;
  // upload_to's pinned staging buffer; `staging_done_` marks the end of the last copy out of it.
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  cudaEvent_t staging_done_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  // cublas_workspace(): [0] the main stream's, [1 + i] side_streams_[i]'s.
  std::shared_ptr<void> cublas_workspaces_[1 + k_side_branches];
};

// Throws dsv4::error "<what>: <cuda error string>" unless status is cudaSuccess.
void check_cuda(cudaError_t status, const char* what);

// Throws unless t is a device tensor of dtype `type` ("cuda op: <what> must be ...").
void check_device_type(const tensor& t, dtype type, const char* what);

}  // namespace dsv4::cuda
