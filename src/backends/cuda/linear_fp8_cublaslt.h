// Dense W8A8 linear for FP8-block weights (128 x 128 blocks, E8M0 or f32 scales) through
// cuBLASLt's block-scaled FP8 matmul (CUDA >= 12.9, sm_90): the library route for official
// precision mode's linears above linear_decode_fp8act's token range.
//
//   y[t, r] = sum_b s_w(r / 128, b) * s_x(t, b) * sum_{k in block b} w8[r, k] * x8[t, k],
//   s_x(t, b) = 2^ceil(log2(max(amax_b, 1e-4) / 448)),  x8 = e4m3(x / s_x) (nearest even,
//   saturating): ops::fake_quant_fp8_act's rule, as linear_decode_fp8act quantizes.
//
// cuBLASLt's view (column-major): D[rows, N] = op(A) op(B) with A = W stored [cols, rows]
// (TRANSA = T, the checkpoint's row-major bytes), B = x8 stored [cols, N] (TRANSB = N, the
// tokens' row-major bytes), D = y stored [rows, N] (y's row-major [N, rows]). Scale modes
// (cuBLAS docs 3.1.4.5 "128-element 1D and 128x128 2D block scaling"): A BLK128x128_32F,
// K-major, [ceil(rows / 128)][L4] f32 with L4 = ceil(cols / 128) rounded up to 4 (the padding
// is zero); B VEC128_32F, N-major, [L][N] f32. The library requires M and N to be multiples
// of 4: tokens are padded to N = round_up(T, 4) with zero rows (scale 1) in the workspace, and
// D then goes to the workspace and its first T columns are copied to y.
//
// Launches: one quantize of x (a warp per token and 128-k block; PDL: it waits for its
// predecessor before touching x or the workspace), the cuBLASLt matmul (its own kernels, plain
// launches), and at T % 4 != 0 one device-to-device copy. The algorithm is chosen by
// cuBLASLt's heuristic once per (shape, output type, pointer alignment, device) and cached; the
// matmul gets k_linear_fp8_cublaslt_lt_workspace bytes of the caller's workspace, so the call
// allocates nothing and can be captured in a graph.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

// The workspace cuBLASLt's matmul may use (split-K partials and the like).
constexpr size_t k_linear_fp8_cublaslt_lt_workspace = size_t(32) << 20;

// fp8_block weights in the checkpoint layout, rows % 4 == 0 (cuBLASLt's M), cols % 128 == 0,
// 16-byte aligned data, one matrix (count 1).
bool linear_fp8_cublaslt_supported(const device_weight& w);

// f32 elements of the weight scales in cuBLASLt's layout: ceil(rows / 128) * L4.
int64_t linear_fp8_cublaslt_scale_count(const device_weight& w);

// Writes w's block scales (E8M0 bytes or f32) as f32 in cuBLASLt's layout (zero padding) into
// `scales` (linear_fp8_cublaslt_scale_count elements, 16-byte aligned). Once per weight.
cudaError_t linear_fp8_cublaslt_prepare_scales(const device_weight& w, float* scales,
                                               cudaStream_t stream);

// Workspace for up to `tokens` tokens (any output type).
size_t linear_fp8_cublaslt_workspace_bytes(int64_t tokens, int64_t rows, int64_t cols);

// x [tokens, cols] act_t (f32 or bf16), y [tokens, rows] out_t (act_t; or f32 for bf16 x), matrix
// 0 of w with its scales from linear_fp8_cublaslt_prepare_scales. `lt`: a cuBLASLt handle (a
// cublasHandle_t cast to it works). cudaErrorNotSupported when !linear_fp8_cublaslt_supported(w)
// or cuBLASLt offers no algorithm; cudaErrorInvalidValue for a short workspace or tokens < 1.
// pdl false: the quantize launch without PDL (benchmarks compare).
template <typename act_t, typename out_t>
cudaError_t linear_fp8_cublaslt(cublasLtHandle_t lt, const act_t* x, int64_t tokens,
                                const device_weight& w, const float* lt_scales, out_t* y,
                                void* workspace, size_t workspace_bytes, cudaStream_t stream,
                                bool pdl = true);

// linear_fp8_cublaslt with the heuristic's algo_index-th algorithm (0 <= algo_index < 8; 0 is
// linear_fp8_cublaslt's): benchmarks measure what the heuristic's first choice leaves.
// cudaErrorNotSupported past the heuristic's list.
template <typename act_t, typename out_t>
cudaError_t linear_fp8_cublaslt_with_algo(cublasLtHandle_t lt, const act_t* x, int64_t tokens,
                                          const device_weight& w, const float* lt_scales, out_t* y,
                                          void* workspace, size_t workspace_bytes, int algo_index,
                                          cudaStream_t stream, bool pdl = true);

}  // namespace dsv4::cuda
