// The CPU backend: the fp32 reference every other backend is checked against. Weights are
// dequantized to f32 at load; all arithmetic is f32 (accumulations too), written for clarity
// first and parallelised over independent outputs so results do not depend on the thread count.
// One file per op family: linear.cpp, norm.cpp, rope.cpp, mhc.cpp, compressor.cpp, indexer.cpp,
// attention.cpp, moe.cpp, elementwise.cpp, memory.cpp.
#pragma once

#include "model/ops.h"

namespace dsv4::cpu {

class cpu_linear : public prepared_linear {
 public:
  tensor weight;  // f32 [out, in]
};

class cpu_experts : public prepared_experts {
 public:
  std::vector<tensor> w1, w3, w2;  // f32, per expert
};

class cpu_ops final : public ops {
 public:
  std::string name() const override { return "cpu"; }

  tensor alloc(dtype type, const dims& shape) override;
  tensor zeros(dtype type, const dims& shape) override;
  tensor upload(const tensor_view& host) override;
  tensor upload_f32(const tensor_view& host) override;
  tensor download(const tensor& device) override;
  void upload_to(tensor& device, const tensor_view& host) override;
  std::unique_ptr<prepared_linear> prepare_linear(const linear_weight& w) override;
  std::unique_ptr<prepared_experts> prepare_experts(const std::vector<linear_weight>& w1,
                                                    const std::vector<linear_weight>& w3,
                                                    const std::vector<linear_weight>& w2) override;

  tensor embed(const tensor& table, const tensor& ids) override;
  tensor linear(const tensor& x, const prepared_linear& w) override;
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
  tensor sparse_attention(const tensor& q, int64_t heads, const kv_source& window,
                          const kv_source* compressed, const tensor& sinks, float scale) override;

  void moe_route(const tensor& x, const prepared_linear& gate, const tensor* bias,
                 const tensor* tid2eid, const tensor& ids, router_score score, int64_t top_k,
                 bool normalize, float route_scale, tensor& indices, tensor& weights) override;
  tensor moe_experts(const tensor& x, const tensor& indices, const tensor& weights,
                     const prepared_experts& experts, float swiglu_limit) override;

  // Official precision mode (quantize.cpp; moe_experts_official in moe.cpp).
  void fake_quant_fp8_act(tensor& x, int64_t block) override;
  void fake_quant_kv_fp8(tensor& pool, const tensor& rows, int64_t nope_dims,
                         int64_t block) override;
  void hadamard_fp4(tensor& x, int64_t heads, int64_t head_dim) override;
  void hadamard_fp4_rows(tensor& pool, const tensor& rows, int64_t heads,
                         int64_t head_dim) override;
  tensor moe_experts_official(const tensor& x, const tensor& indices, const tensor& weights,
                              const prepared_experts& experts, float swiglu_limit) override;
};

// Shared helpers of the CPU op files.
void check_f32(const tensor& t, const char* what);
// Dot product of two f32 vectors (fixed summation order: 8 interleaved partial sums).
float dot(const float* a, const float* b, int64_t n);
// Rotates the interleaved pairs of v[0:rope_dim] by angle position * inv_freq[i] (negated if
// inverse). Angles and trigonometry in f32, as the oracle computes them.
void rope_rotate(float* v, int64_t rope_dim, int32_t position, const float* inv_freq, bool inverse);

// Power-of-two (E8M0) block scales of the official quantizers: 2^ceil(log2(max(amax, 1e-4) /
// 448)) for FP8 e4m3, 2^ceil(log2(max(amax, 6 * 2^-126) / 6)) for FP4 e2m1.
float fp8_block_scale(float amax);
float fp4_block_scale(float amax);
// FP8 e4m3 quantize-dequantize of v[0:n] in place, one scale per `block` values (last block may
// be shorter); NaN elements are ignored by the amax and stay NaN.
void fake_quant_fp8_values(float* v, int64_t n, int64_t block);
// Walsh-Hadamard transform of v[0:n] in place (n a power of two), scaled by n^-0.5.
void hadamard_values(float* v, int64_t n);
// FP4 e2m1 quantize-dequantize of v[0:n] in place, one scale per 32 values (last may be shorter).
void fake_quant_fp4_values(float* v, int64_t n);
// hadamard_values then fake_quant_fp4_values.
void hadamard_fp4_values(float* v, int64_t n);

}  // namespace dsv4::cpu
