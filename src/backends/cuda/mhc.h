// Manifold-constrained hyper-connection kernels (f32 throughout). hc streams of width D; the
// kernels support hc <= k_hc_max_streams (DeepSeek-V4 uses 4) and return cudaErrorInvalidValue
// beyond.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dsv4::cuda {

constexpr int k_hc_max_streams = 4;

// Which kernel computes hc_pre / hc_head's collapse: automatic picks by size (split where it is
// allowed, then cluster, then block); the others are for tests and benchmarks. block and cluster
// give the same values bit for bit; split adds the sums in another order. cluster fails with
// cudaErrorInvalidValue where its shared memory, 4 x hc * D floats of 8 x 8 lanes, does not fit;
// split where tokens > hc_collapse_split_max_tokens or the workspace is missing, short or not
// 4-byte aligned.
enum class hc_collapse_path { automatic, block, cluster, split };

// The split path (two launches over all SMs; mhc.cu) takes up to hc_collapse_split_max_tokens
// tokens and needs a workspace of hc_collapse_workspace_bytes (the per-chunk partial sums; 0 for
// empty calls); automatic takes it up to hc_collapse_split_auto_tokens(head) tokens (head: for
// hc_head; measured: mhc.cu).
constexpr int64_t hc_collapse_split_max_tokens = 64;
constexpr int64_t hc_collapse_split_auto_tokens(bool head) {
  return head ? 32 : 24;
}
size_t hc_collapse_workspace_bytes(int64_t tokens, int64_t hc, int64_t D);

// Per token t of x [tokens, hc, D]: m = (x_t / rms(x_t)) . fn^T with fn [(2+hc)*hc, hc*D];
// pre_j = sigmoid(m_j * scale[0] + base_j) + hc_eps, post[t, j] = 2 sigmoid(m_{hc+j} * scale[1] +
// base_{hc+j}), comb[t] = Sinkhorn(m_{2hc..} * scale[2] + base_{2hc..}) with sinkhorn_iters
// rounds (row softmax + eps, column normalisation, then iters - 1 row/column rounds), and
// y[t] = sum_j pre_j x[t, j] [tokens, D].
// x and y are activations (act_t: float or __nv_bfloat16); fn, base, scale, post and comb f32;
// every sum, gate and the Sinkhorn projection in f32.
template <typename act_t>
cudaError_t hc_pre(const act_t* x, const float* fn, const float* base, const float* scale,
                   int64_t tokens, int64_t hc, int64_t D, int64_t sinkhorn_iters, float hc_eps,
                   float norm_eps, act_t* y, float* post, float* comb, cudaStream_t stream,
                   hc_collapse_path path = hc_collapse_path::automatic, void* workspace = nullptr,
                   size_t workspace_bytes = 0);
// out[t, k] = post[t, k] * f[t] + sum_j comb[t, j, k] * x[t, j] for x [tokens, hc, D], f
// [tokens, D], post [tokens, hc], comb [tokens, hc, hc]; out [tokens, hc, D].
// x, f and out are activations; post and comb f32.
template <typename act_t>
cudaError_t hc_post(const act_t* x, const act_t* f, const float* post, const float* comb,
                    int64_t tokens, int64_t hc, int64_t D, act_t* out, cudaStream_t stream);
// One sub-layer's residual update, the next collapse and its RMS norm, in two launches (the split
// path's, decode sizes): with f non-null, x_next = hc_post(x, f, post, comb) [tokens, hc, D] (post
// and comb read as the old gates) and c = x_next, else c = x; then hc_pre(c, fn, base, scale, ...)
// writes the new post and comb and y (kept in registers, rounded to act_t as hc_pre stores it),
// and out[t] = rms_norm(y[t], norm_weight, norm_eps) [tokens, D] (norm_eps also the collapse's).
// The same values as hc_post, hc_pre's split path and rms_norm in turn, except for the order of
// the norm's sum of squares. out_fp8 (may be null) also receives fake_quant_fp8_act(out, 128) (the
// official mode's FP8 copy of a linear input; needs hc_post_pre_norm_fp8_copy_supported and a
// 16-byte aligned norm_weight). Needs
// hc_post_pre_norm_supported and a workspace of hc_collapse_workspace_bytes;
// cudaErrorInvalidValue otherwise.
bool hc_post_pre_norm_supported(int64_t tokens, int64_t hc, int64_t D);
// D % 128 == 0 and the act_t arrays (x_next null when there is no residual update) 16-byte aligned.
template <typename act_t>
bool hc_post_pre_norm_fp8_copy_supported(int64_t D, const act_t* x, const act_t* x_next,
                                         const act_t* out, const act_t* out_fp8);
// gates false: post and comb are left for hc_post_pre_norm_gates (neither read nor written after
// the residual update), and the second launch forms y and out only.
template <typename act_t>
cudaError_t hc_post_pre_norm(const act_t* x, const act_t* f, const float* fn, const float* base,
                             const float* scale, const float* norm_weight, int64_t tokens,
                             int64_t hc, int64_t D, int64_t sinkhorn_iters, float hc_eps,
                             float norm_eps, act_t* x_next, act_t* out, act_t* out_fp8, float* post,
                             float* comb, cudaStream_t stream, void* workspace,
                             size_t workspace_bytes, bool gates = true);
// The new post and comb of a hc_post_pre_norm(..., gates = false) call of the same tokens, hc, D
// and workspace, from the partial sums it left there (the values its gates = true form writes,
// bit for bit). Must be ordered after that call's launches and before the workspace is reused;
// post and comb must not be read in between (the caller may run this beside later work: the
// gates are needed only by the next residual update, so the Sinkhorn projection need not delay
// the sub-layer that reads out).
cudaError_t hc_post_pre_norm_gates(const void* workspace, size_t workspace_bytes, const float* base,
                                   const float* scale, int64_t tokens, int64_t hc, int64_t D,
                                   int64_t sinkhorn_iters, float hc_eps, float norm_eps,
                                   float* post, float* comb, cudaStream_t stream);
// Final collapse: m = (x_t / rms(x_t)) . fn^T with fn [hc, hc*D], pre_j = sigmoid(m_j * scale[0]
// + base_j) + hc_eps, y[t] = sum_j pre_j x[t, j] [tokens, D].
template <typename act_t>
cudaError_t hc_head(const act_t* x, const float* fn, const float* base, const float* scale,
                    int64_t tokens, int64_t hc, int64_t D, float hc_eps, float norm_eps, act_t* y,
                    cudaStream_t stream, hc_collapse_path path = hc_collapse_path::automatic,
                    void* workspace = nullptr, size_t workspace_bytes = 0);

}  // namespace dsv4::cuda
