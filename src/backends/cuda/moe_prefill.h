// Prefill-path routed experts on tensor cores: 4-bit (MXFP4 / NVFP4) expert weights expanded
// exactly to BF16 in registers, activations staged as BF16, f32 accumulation. Two GEMM cores:
// mma.sync m16n8k16 (moe_prefill.cu) and sm_90a wgmma with the weights as the register operand
// (moe_prefill_wgmma_kernel.cuh), same results bit for bit.
// Same semantics, arguments and error behaviour as moe_experts / moe_experts_official (moe.h);
// meant for prefill-sized steps (hundreds of tokens and more), where each expert sees tens of
// tokens and a weight tile is reused across up to 64 (mma.sync) or 128 (wgmma) of them.
// Measured (H200, bench_moe_linear --prefill-quick, random top-6 routing, bf16 x), wgmma core:
// Flash T = 1024 2.7-2.9 ms (1.2-1.35x mma.sync), T = 4096 4.2-4.4 ms (281-297 TFLOP/s,
// 1.8-1.95x mma.sync, 1.7x a per-expert cuBLAS BF16 loop, 0.36-0.37x one dense cuBLAS BF16
// GEMM of the same size); Pro T = 4096 13.2-13.5 ms (0.31-0.32x dense). Parity-tested for
// T = 3..2048.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

// The GEMM core: mma.sync m16n8k16 (64-pair tiles, moe_prefill.cu) or sm_90a wgmma with the
// expanded weights as the register operand (up to 128-pair tiles, moe_prefill_wgmma*.cu);
// automatic asks moe_prefill_use_wgmma. Both sum every output over k in the same order (their
// outputs compared bit for bit equal at Flash and Pro sizes).
// wgmma_cp: the wgmma core with the activations pre-permuted to BF16 and staged by cp.async
// (moe_prefill_wgmma_kernel.cuh), never chosen automatically; GPU-verified by its parity cases
// moe_prefill[_official]_wgmma_cp (H200, session 4 final: 24/24).
// w4a8 (official order and MXFP4 weights only, compute capability 9.0; moe_prefill_w4a8.cu):
// x and h quantized to E4M3 per 128 values (the official values), weights expanded to E4M3 with
// the group exponent folded in, FP8 wgmma with f32 promotion per 128 k; never chosen
// automatically; anything else returns cudaErrorInvalidValue. w4a8_serial: that core without
// the overlap of the next round's weight expansion with the current round's wgmmas, with 4
// instead of 8 rounds in flight and one round's weights per request (identical results), kept
// for A/B measurements. Measured (H100, GPU-verified: parity of both, Flash and Pro sizes):
// w4a8_serial 281 / 294 TFLOP/s at Flash T = 4096 / 8192 and 279 at Pro T = 4096 (1.10 /
// 1.02 / 1.22x the W4A16 wgmma core, 21-25% of a cuBLASLt FP8 dense GEMM of the same FLOPs);
// w4a8 272 / 276 / 231, the slower of the two (moe_prefill_w4a8.cu).
// w4a8_ws: the same W4A8 arithmetic (identical results) in a warp-specialized persistent kernel:
// a producer warpgroup stages every round (activations, weight bytes, scale bytes) into an
// mbarrier ring by cp.async, two consumer warpgroups expand and multiply without CTA-wide
// barriers (moe_prefill_w4a8.cu); never chosen automatically. Measured (H200, session 7:
// parity, y bit for bit the w4a8 kernel's at Flash T = 1024 / 4096 / 8192 and Pro T = 4096):
// 293 / 299 TFLOP/s at Flash T = 4096 / 8192 and 294 at Pro T = 4096 (1.04-1.07x w4a8_serial),
// 122 at Flash T = 1024 (0.93x w4a8_serial) with that lag-6 scheme, since session 16 selected by
// DSV4_W4A8_WS_LEAD=6 only (A/B); default: the cp.async.mbarrier.arrive.noinc scheme (1.03-1.08x).
// wgmma_ws: the wgmma core's arithmetic (identical results, exact and official order, checkpoint
// and repacked layouts) in a warp-specialized persistent kernel: a producer warpgroup stages every
// round (B pre-permuted to BF16 in the core's logical k order, weight bytes, scale rows) into an
// mbarrier ring by cp.async, two consumer warpgroups expand and multiply without CTA-wide barriers
// (moe_prefill_wgmma_ws.cu); weights and scales 16-byte aligned, else cudaErrorInvalidValue.
// The automatic choice on compute capability 9.0. Measured (H200; parity, and every output bit
// for bit the wgmma core's): on repacked weights 1.25-1.40x the wgmma core at Flash T = 256 and
// 1024, 1.01-1.11x at T = 4096 (322 TFLOP/s MXFP4 exact, 43% of cuBLAS BF16 dense), 0.96-0.97x
// exact and 1.04x official at T = 8192, 1.08-1.13x at Pro T = 4096; checkpoint layout 1.02-1.23x.
enum class moe_prefill_core {
  automatic,
  mma_sync,
  wgmma,
  wgmma_cp,
  w4a8,
  w4a8_serial,
  w4a8_ws,
  wgmma_ws
};

// The automatic choice for a step of `tokens` x `top_k` pairs over `experts` experts: the wgmma
// core on a compute capability 9.0 device (it was faster in every measured case), else
// mma.sync. moe_prefill_experts then runs its wgmma_ws variant when the weight bytes and scales
// are 16-byte aligned (moe_prefill_wgmma_ws.cu has the measurements), else wgmma.
bool moe_prefill_use_wgmma(int64_t tokens, int64_t top_k, int64_t experts);

// The wgmma_ws core's producer (bench A/B; process-wide, not for concurrent use): -1 the automatic
// choice (moe_prefill_wgmma_ws.cu, ws_use_pr), 0 session 13's producer, 1 B rows in registers.
void moe_prefill_set_ws_producer(int mode);
// The wgmma_ws consumers' epilogue on repacked weights (bench A/B; process-wide): 2 or 4 the phased
// one (moe_prefill_wgmma_ws.cu, ws_store_tile) with chunks of that many token blocks, 0 the wgmma
// core's store_tile.
void moe_prefill_set_ws_epilogue(int mode);
// The wgmma_ws core's wide kernel on repacked weights (bench A/B, parity; process-wide): tiles of
// up to 256 pairs, one m64nNk16 (N <= 256) per warpgroup and step (moe_prefill_wgmma_ws_wide.cu).
// -1 the automatic choice (prefill::ws_use_wide), 0 never, 1 always.
void moe_prefill_set_ws_wide(int mode);
// The non-GEMM kernels (parity references, bench A/B; process-wide): bits of session 19's kernels
// to run instead of PREFILL20's (the same bytes out): 1 the combine as moe_combine_kernel, 2 W4A8 h
// in f32 (not BF16 rounded to odd), 4 the W4A8 quantize of one block per warp with
// quant::e4m3_round, 8 the W4A16 h' quantize with quant::e4m3_round. 0 (default): none.
void moe_prefill_set_nongemm_old(int bits);
int moe_prefill_nongemm_old();

// Whether moe_prefill_experts takes these weights for a step of `tokens` x `top_k` pairs (the
// weight and size conditions below; x alignment and pointers are the caller's). Repacked weights:
// only on a compute capability 9.0 device, and the entry point then also needs BF16 x.
bool moe_prefill_supported(const device_weight& w1, const device_weight& w3,
                           const device_weight& w2, int64_t tokens, int64_t top_k);

// Device workspace moe_prefill_experts needs (bytes) for `tokens` x `top_k` routed pairs.
size_t moe_prefill_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                   int64_t inter);

// y[t] = sum_k weights[t, k] * W2_e(silu(min(W1_e x[t], L)) * clamp(W3_e x[t], -L, L)), as
// moe_experts. w1, w3 [inter, hidden] and w2 [hidden, inter] stacked over `experts`, all of one
// 4-bit kind (mxfp4 with E8M0 or power-of-two f32 scales, or nvfp4) and one layout; hidden and
// inter multiples of 128; x 16-byte aligned; core wgmma only on a compute capability 9.0 device.
// Weights in the repacked layout (moe_repack.h, device_weight::layout) only with BF16 x and the
// wgmma core (automatic or wgmma on compute capability 9.0): same results bit for bit as the
// checkpoint bytes (the expansion yields the same BF16 pairs, every sum keeps its order; parity
// moe_prefill[_official]_wgmma_repacked, and 0 of 16.8M outputs differing in bench_moe_linear),
// 1.06x faster (H100, Flash T = 4096: MXFP4 4258 -> 4000 us exact, 4890 -> 4614 us official;
// NVFP4 4405 -> 4169 / 4975 -> 4670 us; bench/kernels/results/h100_2026-11-24_s6_moewire_*).
// Anything else returns cudaErrorInvalidValue.
// Launches (no host synchronisation; the grids depend only on tokens, top_k, experts and the
// dims): a plan groups the pairs by expert into tiles of up to 64 pairs (moe_plan.cuh); L1 computes
// each (tile, 128 rows of W1 and W3) with the clamped SwiGLU fused into the epilogue, h in f32;
// L2 each (tile, 256 rows of W2) into per-pair rows; a combine sums each token's pairs in k order
// (deterministic). x (f32 or bf16) and h are rounded to BF16 as they are staged, so results
// carry BF16 input rounding (NMSE ~1e-6 against the f32 reference), unlike moe_experts.
// An expert index outside [0, experts) makes that token's row NaN.
template <typename act_t>
cudaError_t moe_prefill_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                                const float* weights, int64_t top_k, const device_weight& w1,
                                const device_weight& w3, const device_weight& w2,
                                float swiglu_limit, void* workspace, size_t workspace_bytes,
                                act_t* y, cudaStream_t stream,
                                moe_prefill_core core = moe_prefill_core::automatic);

// The official order (moe_experts_official): h = swiglu(...) * weights[t, k], FP8
// quantize-dequantized per 128 values of each pair's row (exact in BF16), then y[t] = sum_k W2_e h.
template <typename act_t>
cudaError_t moe_prefill_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                         const float* weights, int64_t top_k,
                                         const device_weight& w1, const device_weight& w3,
                                         const device_weight& w2, float swiglu_limit,
                                         void* workspace, size_t workspace_bytes, act_t* y,
                                         cudaStream_t stream,
                                         moe_prefill_core core = moe_prefill_core::automatic);

}  // namespace dsv4::cuda
