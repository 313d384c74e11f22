// Prefill-sized dense linears on cuBLAS tensor-core GEMMs: the matrix is expanded into a
// workspace (a transient per-call copy, never a resident one) and one cuBLAS call computes
// y = x W^T with f32 accumulation; grouped (block-diagonal) linears are one strided-batched call.
//
// Exactness of the expansion (every expanded weight equals dequantize_to_f32's value):
//  * bf16 activations expand to BF16. bf16 weights need no copy; fp8_block with E8M0 scales
//    (e4m3 * 2^k: 4 significant bits), mxfp4 (e2m1 * power-of-two scale; f32 scales must be
//    widened E8M0, as the loader makes them) and nvfp4 (e2m1 * e4m3: <= 6 significant bits) are
//    exact in BF16. The nvfp4 global scale is the GEMM's alpha (read from device memory), applied
//    to the f32 sums instead of to each weight: a rounding-order difference only.
//  * f32 activations expand to f32 (every format; f32 weights need no copy) and run an f32
//    GEMM with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32).
//  * nvfp4 in the repacked layout (linear.h weight_layout::repacked): the expansion reads it
//    and writes the same values as for the checkpoint layout (mxfp4 repacked: refused).
//  Unsupported here (linear_gemm_supported false; use linear() in linear.h): bf16 activations with
//  f32 weights or fp8_block with f32 scales (not exact in BF16).
//
// Cost: the expansion reads the packed matrix and writes 2 (bf16) or 4 (f32) bytes per weight
// once per call, so this path pays from a few dozen tokens up (bench/kernels/bench_linear_gemm);
// the decode GEMV in linear.h reads the packed bytes only. No host synchronisation; alpha/beta
// live in the workspace, so the call is stream-ordered and graph-capturable.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

// Whether linear_gemm handles matrix w for activations of type act_t (see above).
template <typename act_t>
bool linear_gemm_supported(const device_weight& w);

// Workspace bytes linear_gemm needs for matrix w with activations act_t.
template <typename act_t>
size_t linear_gemm_workspace_bytes(const device_weight& w);

// The size of cuBLAS's own workspace for linear_gemm (NVIDIA's recommended size for Hopper). The
// call binds it to the handle after setting the stream: cublasSetStream resets a handle's
// workspace to cuBLAS's internal pool, and with that pool the library may pick other
// implementations (other bits) while GEMMs run on several streams at once (cuBLAS guide,
// "Results reproducibility"), as the engine's eager decode steps do (side branches beside the
// main stream) when linear_decode is off. Measured on an H200 (session 30, l30c-l30e): decode
// shapes through one handle on three streams differ from the same calls alone with that pool and
// never with a workspace per stream (parity case linear_gemm_streams). A workspace that only one
// stream's calls use (cuda_ops keeps one per stream) keeps the results independent of the others.
inline constexpr size_t k_linear_gemm_cublas_workspace_bytes = size_t(32) << 20;

// y [tokens, rows] = x [tokens, groups * cols] through the block-diagonal W (group g maps
// x[:, g*cols:(g+1)*cols] to y[:, g*rows/groups:(g+1)*rows/groups]); groups == 1 is a plain
// linear. out_t: act_t, or float (bf16 activations with f32 logits). `cublas` must be a handle
// the caller owns (its stream is set to `stream` and its workspace to `cublas_workspace` here;
// pointer mode is restored). Both workspaces are the call's until its work on `stream` is done
// (256-byte aligned; cublas_workspace_bytes: k_linear_gemm_cublas_workspace_bytes, or less at
// the cost of cuBLAS's choice of kernels). Returns cudaErrorNotSupported when
// !linear_gemm_supported, cudaErrorInvalidValue on bad dims or a short or missing workspace,
// cudaErrorUnknown when cuBLAS fails.
template <typename act_t, typename out_t>
cudaError_t linear_gemm(cublasHandle_t cublas, const act_t* x, int64_t tokens,
                        const device_weight& w, int64_t groups, out_t* y, void* workspace,
                        size_t workspace_bytes, void* cublas_workspace,
                        size_t cublas_workspace_bytes, cudaStream_t stream);

}  // namespace dsv4::cuda
