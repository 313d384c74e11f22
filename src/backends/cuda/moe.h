// Mixture-of-experts kernels: router and routed experts (f32 activations, f32 accumulation,
// weights in checkpoint formats, see linear.h). Semantics are those of ops::moe_route and
// ops::moe_experts (model/ops.h); the CPU backend is the reference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

// Same order as dsv4::router_score.
enum class moe_score : uint8_t { sqrtsoftplus, softmax, sigmoid };

// Largest top_k the router supports.
constexpr int64_t k_moe_max_top_k = 32;

// Router for x [tokens, D]: logits = x gate^T (gate [E, D], any format, written to the workspace
// `logits` [tokens, E]); s = score(logits) (sqrt(softplus), softplus threshold 20 as torch;
// softmax; sigmoid); selection = top-k of s + bias (bias [E] or null; ties to the lower expert)
// or, when tid2eid [vocab, top_k] is given, tid2eid[ids[t]]; weights = s at the selection,
// divided by (sum + 1e-20) when `normalize`, times route_scale. Fills indices [tokens, top_k] i32
// and weights [tokens, top_k] f32. A token id outside [0, vocab) (the CPU backend throws) gives
// indices -1 and NaN weights; a tid2eid entry outside [0, E) is copied with a NaN weight.
// Two launches (the linear, then moe_route_select), no host synchronisation.
// x is an activation (act_t: float or __nv_bfloat16); logits, weights and all scoring f32.
template <typename act_t>
cudaError_t moe_route(const act_t* x, int64_t tokens, const device_weight& gate, const float* bias,
                      const int32_t* tid2eid, int64_t vocab, const int32_t* ids, moe_score score,
                      int64_t top_k, bool normalize, float route_scale, float* logits,
                      int32_t* indices, float* weights, cudaStream_t stream);

// The selection half of moe_route from logits [tokens, experts] f32 the caller computed (the
// engine runs the gate through its dense-linear dispatch): one block per token, experts <= 9900.
cudaError_t moe_route_select(const float* logits, int64_t tokens, int64_t experts,
                             const float* bias, const int32_t* tid2eid, int64_t vocab,
                             const int32_t* ids, moe_score score, int64_t top_k, bool normalize,
                             float route_scale, int32_t* indices, float* weights,
                             cudaStream_t stream);

// Device workspace moe_experts needs (bytes) for `tokens` x `top_k` routed pairs.
size_t moe_experts_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                   int64_t inter);

// y[t] = sum_k weights[t, k] * W2_e(silu(min(W1_e x[t], L)) * clamp(W3_e x[t], -L, L)),
// e = indices[t, k], for x [tokens, hidden], indices/weights [tokens, top_k]; w1, w3: `experts`
// stacked [inter, hidden] matrices of one format, w2: `experts` stacked [hidden, inter].
// Pairs are grouped by expert on the GPU (a plan kernel), then one launch computes L1 with the
// SwiGLU fused for every (expert, up to 16 pairs) chunk, one computes L2 into per-pair rows, and
// a combine sums each token's pairs in k order: deterministic, no atomics on outputs. An expert
// index outside [0, experts) makes that token's output row NaN (the CPU backend throws).
// `workspace` holds moe_experts_workspace_bytes(...) bytes (256-byte aligned). x and y are
// activations (act_t: float or __nv_bfloat16); the intermediate h and the per-pair outputs stay
// f32 in the workspace, so only y is rounded.
template <typename act_t>
cudaError_t moe_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                        const float* weights, int64_t top_k, const device_weight& w1,
                        const device_weight& w3, const device_weight& w2, float swiglu_limit,
                        void* workspace, size_t workspace_bytes, act_t* y, cudaStream_t stream);

// The official order (ops::moe_experts_official): h = swiglu(...) * weights[t, k], FP8
// quantize-dequantized per 128 values of each pair's row (quantize.h), then
// y[t] = sum_k W2_e h in k order. Same arguments, workspace and error behaviour as
// moe_experts, which is unchanged by this variant.
template <typename act_t>
cudaError_t moe_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                 const float* weights, int64_t top_k, const device_weight& w1,
                                 const device_weight& w3, const device_weight& w2,
                                 float swiglu_limit, void* workspace, size_t workspace_bytes,
                                 act_t* y, cudaStream_t stream);

}  // namespace dsv4::cuda
