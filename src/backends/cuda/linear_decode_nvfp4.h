// Dense NVFP4 decode linears (1..8 tokens, bf16 activations) on the routed-MoE decode kernel:
// y[t, :] = x[t, :] . W^T for one NVFP4 matrix in the repacked layout (moe_repack.h, what
// cuda_ops gives dense NVFP4 matrices of >= 8 MiB, dense_layout.h), run as the W2 launch of
// moe_decode_gemm_kernel over a single "expert" whose one chunk holds the step's tokens. That
// kernel streams its weights through the per-warp cp.async ring with the scale slots, the 8-op
// E2M1 pair map and, where rows allow, two 16-row tiles per warp-round (W2P): the work of sessions
// 41-44 on the MoE's loop, which linear_decode's register pipeline does not have.
//
// Launches (programmatic dependent launch, as linear_decode): a prepare kernel converts x into the
// decode kernels' paired activation layout in the workspace, except where the GEMM stages x's
// rows in shared memory and converts them itself (x_raw); the GEMM streams its first ring rounds
// before it waits for its predecessor, takes its chunk from a constant routing (no plan launch)
// and writes y (f32, or bf16 rounded once from the f32 sum) directly. Same products as
// linear_decode's repacked kernels (the same BF16 pairs, exact); the K split, and with it the f32
// summation order, is the MoE kernel's: y within the parity tolerances, not bit-equal to
// linear_decode's (where neither splits K the products are summed in the same order: session
// 46's test_gpu_model run with only the flash-dims wq_b taken gave linear_decode's logits bit for
// bit).
//
// Where it stands (H200, session 46, l46b; % of the HBM read ceiling on the packed bytes, graphs
// of 16 calls on rotated copies, T = 1 / 2 / 4 / 8, linear_decode in the same process in
// brackets): Pro wq_b 73.6 / 70.6 / 67.8 / 65.7% (64.6 / 62.8 / 59.8 / 51.0), Pro wo_b 67.4 / 63.5
// / 59.1 / 58.1% (60.9 / 57.1 / 53.2 / 47.6), Flash wq_b 55.6 / 49.5 / 44.9 / 44.8% (50.0 / 47.0
// / 44.7 / 39.8). Without the prepare launch where x is staged (x_raw, l46g, a machine reading
// 2.5% more): T = 1 Pro wq_b 75.1% (1.035x over the prepare launch), Pro wo_b 68.0% (1.028x),
// Flash wq_b 54.6% (0.988x). Issue-bound like the MoE's loop; matrices of few row tiles stay on
// linear_decode (choose_linear_decode_nvfp4 in linear_dispatch.h has the rule and its
// measurements).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

constexpr int64_t k_linear_decode_nvfp4_max_tokens = 8;  // one chunk: the mma's N
// Staged x rows (linear_decode_nvfp4_config::stage_x): their shared memory
// (moe_decode_gemm_kernel's xs_stride: rows 64 bytes apart modulo 128 when several), at most the
// cap below.
constexpr int64_t k_linear_decode_nvfp4_max_staged_bytes = 128 * 1024;
constexpr int64_t linear_decode_nvfp4_staged_bytes(int64_t tokens, int64_t cols) {
  return tokens * (cols * 2 + (tokens > 1 ? 64 : 0));
}

// The launch's shape: row tiles per block (4, 2 or 1; 4 / row_tiles warps split K), W2P (two
// 16-row tiles per warp-round; rows a multiple of 32), whether the block stages the step's x
// rows in shared memory, and whether staged rows come from x itself, converted by the GEMM's
// blocks (x_raw 1: no prepare launch; staged only) or from the prepare launch (0). Fields < 0
// (row_tiles 0): the rule's choice (linear_decode_nvfp4_plan; x_raw: 1 where staged).
struct linear_decode_nvfp4_config {
  int row_tiles = 0;
  int w2_pair = -1;
  int stage_x = -1;
  int x_raw = -1;
};

// Whether cuda_ops sends repacked NVFP4 matrices at 1..8 tokens with bf16 activations here
// instead of to linear_decode: mode -1 (the default) = where the rule prefers it unless the
// environment has DSV4_LINEAR_NVFP4=0; 0 = never; 1 = where the rule prefers it; 2 = every matrix
// it supports (tests: the matrices the rule leaves to linear_decode too). Process-wide, for tests
// and A/B runs.
void linear_decode_nvfp4_set_mode(int mode);

// What cuda_ops asks for a repacked NVFP4 matrix that linear_decode would take at `tokens` tokens
// (bf16 activations): under the mode above, linear_decode_nvfp4_supported(w) and the rule of
// choose_linear_decode_nvfp4 (linear_dispatch.h) on the current device.
bool linear_decode_nvfp4_preferred(const device_weight& w, int64_t tokens);

// nvfp4 in the repacked layout (matrix 0 of w is the one multiplied), rows % 16 == 0,
// cols % 128 == 0, data and scales 16-byte aligned.
bool linear_decode_nvfp4_supported(const device_weight& w);

// The configuration a call of `tokens` tokens takes on the current device: `request`'s fields
// where set, the rule's elsewhere (linear_decode_nvfp4.cu).
linear_decode_nvfp4_config linear_decode_nvfp4_plan(const device_weight& w, int64_t tokens,
                                                    const linear_decode_nvfp4_config& request = {});

size_t linear_decode_nvfp4_workspace_bytes(int64_t tokens, int64_t cols);

// x [tokens, cols] bf16, y [tokens, rows] out_t (float or __nv_bfloat16), 1 <= tokens <= 8.
// cudaErrorNotSupported when !linear_decode_nvfp4_supported(w) or tokens > 8;
// cudaErrorInvalidValue for bad arguments (a config outside the rules above included). No host
// synchronisation; graph-capturable.
template <typename out_t>
cudaError_t linear_decode_nvfp4(const __nv_bfloat16* x, int64_t tokens, const device_weight& w,
                                out_t* y, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream,
                                const linear_decode_nvfp4_config* config = nullptr);

}  // namespace dsv4::cuda
