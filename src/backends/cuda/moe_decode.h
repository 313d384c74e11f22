// Decode-path routed experts (1..64 tokens) for 4-bit weights (MXFP4, NVFP4): same semantics as
// moe_experts_f32 (moe.h) and ops::moe_experts,
//   y[t] = sum_k weights[t, k] * W2_e(silu(min(W1_e x[t], L)) * clamp(W3_e x[t], -L, L)),
// e = indices[t, k], summed in k order; activations x and y in act_t (float or __nv_bfloat16),
// routing weights f32, all arithmetic f32 except the tensor-core products (see below).
//
// How: one plan+prepare launch (groups the (token, k) pairs by expert into chunks of up to 8
// pairs on the device and converts x to BF16 hi/lo "paired" fragments), one launch for L1 (W1, W3,
// clamp and SwiGLU fused; every (chunk, 16-row tile) item streams its rows once for the chunk's
// tokens, all touched experts at once), one for L2 (W2), one combine. Launch configuration depends
// only on tokens, top_k, the shapes and the SM count (graph-capturable), never on the routing.
// The weights are read in their checkpoint layout (linear.h), expanded exactly to BF16 in
// registers and multiplied on tensor cores (mma.sync m16n8k16, f32 accumulation). f32
// activations (x, and the f32 SwiGLU output h) enter as hi + lo BF16 parts, so the products are
// those of f32 x within ~2^-17 relative; bf16 activations are exact. Deterministic: no atomics
// on values; each output is one fixed-order sum.
//
// Where it stands (bench/RESULTS.md, bench/TARGETS.md; official order, bf16, the repacked layout
// the engine reads): H200 at the full SM clock (session 44, l44a, MXFP4) Flash T = 1 / 4 / 16 / 64
// at 58.1 / 78.9 / 89.2 / 90.5% of the HBM read ceiling, Pro 74.0 / 90.2 / 95.6 / 95.7%;
// Pro T = 2 / 3 / 4 since session 46's W2P on the 4 scale slots (l46e): 82.9 / 90.3 / 92.5%;
// Sustained at the H200's 700 W limit (session 45, l45g; SM clock ~1.6 GHz): Flash MXFP4 T = 4 / 16
// / 64 at 77.4 / 77.6 / 81.3%, Pro 84.3 / 84.9 / 81.9%. Code not cached in the SMs or the L2 (as
// between the engine's layers; bench_moe_linear --icache-cold, l45d): +0.2 us at Flash T = 1,
// <= 1.6 us at T <= 16. H100 (session 21, older kernels) Flash 68.8 / 86.8 / 90.5 / 87.0%, Pro 77.5
// / 91.8 / 91.5 / 90.4%. Earlier: H200 (session 10, MOE9 run 1, the MOE8 defaults) Flash 42.9
// / 62.2 / 66.8 / 65.0%. Issue-bound on the H200 (~2.9 instructions per weight at 43-60% issue
// efficiency); deeper rings, L2 bulk prefetches of W2 during L1 or of each block's own weights
// measured slower. First version (2026-11-22): 29-34% at T = 1, 1.3-5.2x faster than
// moe_experts_f32 and 1.9-4.0x faster than a per-expert cuBLAS BF16 loop. Official order
// (moe_decode_experts_official; one run with the exact order, bench/kernels/results/
// h200_2026-11-22_moe2_bench_moe_linear.txt): 0.5-10% faster than the exact order (W2 reads no
// lo part), 1.36-1.51x faster than moe_experts_official at T = 1, 4.7-5.6x at T = 64.
// Weight pipeline (MOE3, bench/kernels/results/h200_2026-11-22_moe3_*): a per-warp cp.async
// ring of 4 rounds plus programmatic dependent launch between the launches, except MXFP4 with
// f32 activations, which keeps the first version's register double buffer.
// MOE5 (bench/kernels/results/2026-11-22_moe5_NOTES.md): ncu on the H200 put the ring kernels at
// T = 64 at 85-90% of L1/TEX throughput with DRAM at 48% and 0.5-0.7 instructions issued per
// scheduler cycle, so the ring now copies each row's scales once per 16 bytes (not 4 bytes per
// round over 8 rows), the activations are stored with each lane's 16-byte groups transposed per
// 128-k round (whole sectors per warp load), and the ring's round builds MXFP4 multipliers with
// one IMAD and takes the E8M0 > 128 step as a warp-wide variant: the same products, scale steps
// and sums in the same order as before (by construction; not compared against the previous
// build on a GPU). Same run, H200, against 6132761, Flash MXFP4 official bf16: T = 1 56.3 ->
// 49.6 us, T = 64 1180 -> 1023 us (56.3% of read); the repacked layout 43.2 / 933 us. MXFP4 with
// f32 activations (register pipeline) measured 1.09-1.12x slower with the new round, so it keeps
// the first version's round (that combination had no GPU run after the change).
//
// Dispatch (for the lead): when tokens <= k_moe_decode_max_tokens and
// moe_decode_supported(w1, w3, w2) is true, call moe_decode_experts instead of moe_experts_f32
// with a workspace of moe_decode_workspace_bytes(...); otherwise keep moe_experts_f32. Likewise
// moe_decode_experts_official for moe_experts_official.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

constexpr int64_t k_moe_decode_max_tokens = 64;

// Whether the decode kernels take these weights: mxfp4 (E8M0 bytes, or f32 scales that are
// powers of two, as widened E8M0 values are) or nvfp4, all three of one kind, scale encoding and
// layout (device_weight::layout: checkpoint or repacked), hidden and inter multiples of 128,
// 16-byte aligned data and scales, <= 2048 experts.
bool moe_decode_supported(const device_weight& w1, const device_weight& w3,
                          const device_weight& w2);

// Row tiles per block (RT = 4, 2, 1; 4 / RT warps split K). n = 0 (default): the RT of least
// modelled time from the expected chunk count, resident blocks and rounds per warp, and for a
// one-wave choice the least work on the busiest SM (moe_decode_tuning.cpp pick_rt); n > 0: the rule
// before MOE7, the largest RT whose grid has n blocks per SM for the chunk upper bound (n = 4 was
// the default); A/B codes (MOE15): n = -99 the model without the one-wave balance (before
// MOE15), n = -(10 u + d) RT u for W1/W3 and d for W2 (1, 2 or 4; 0 = the model). Process-wide,
// for benches and A/B runs. RT sets the K split and with it the f32 summation order: outputs
// within the parity tolerances, not bit-equal across n.
void moe_decode_set_rt_blocks_per_sm(int n);
int moe_decode_rt_blocks_per_sm();
// Staged activations (MOE8): the cp.async-ring GEMM launches without a lo part (bf16 x into
// W1/W3, "up"; the official order's quantized h into W2, "down") get kdim * 2 bytes of dynamic
// shared memory when tokens <= up_max (up) or down_min <= tokens <= down_max (down), and a
// block whose chunk holds one pair copies that pair's activation row there once and reads its
// fragments with shared loads instead of global loads one round ahead. Same products and sums
// in the same order: outputs bit-equal for the same RT (the extra shared memory may change the
// resident blocks, hence the wave model's RT). Process-wide, for benches and A/B runs; default
// 4, 2, 4 (up at T <= 4, down at T = 2..4; MOE9's 64, 2, 64 measured mixed,
// moe_decode_switches.cpp); 0, 1, 0 = never.
void moe_decode_set_stage_x_tokens(int up_max, int down_min, int down_max);
struct moe_decode_stage_x {
  int up_max, down_min, down_max;
};
moe_decode_stage_x moe_decode_stage_x_tokens();
// Ring depths 6 / 8, an early W2 launch and W1/W3 streaming from a plan predicted from the
// routing (MOE9 switches, removed) measured 0.77-0.98x, 0.95-1.02x and 0.90-1.01x of these kernels
// on an H200 (bench/RESULTS.md, session 10 MOE9 helper; bench/kernels/results/
// h200_2026-11-26_s10_moe9_run1_*).
// Scale slots (MOE9) of the depth-4 ring on the engine's path: 4 (one per round in flight; 8 KB
// less shared memory per W1/W3 block, so that a staged activation row keeps 4 blocks per SM) at
// T >= tokens, 8 below; 0 = never (8, as before MOE9); -1 (the default since session 39) = 4
// where W1/W3 stages its activation row (2 <= T <= moe_decode_stage_x_tokens().up_max) on a
// device of the H200's class, 8 elsewhere (moe_decode_switches.cpp has the measurements).
// Changes no value. Process-wide, for benches and A/B runs.
void moe_decode_set_scale_slots_from(int tokens);
int moe_decode_scale_slots_from();
// Whether a call of `tokens` tokens takes the 4 slots, on a device reading
// read_bytes_per_sm_cycle (device_info.h).
bool moe_decode_scale_slots_4(int64_t tokens, double read_bytes_per_sm_cycle);
// W1/W3 alone on the 4 slots at T = 1 (W2 keeps its choice: W2P on the H200 class): 0 = never,
// 1 = always, -1 (the default since session 42) = the rule of moe_decode_tuning::
// up_four_slots_at_one_token (H200 class; the 4-slot kernel holds more resident blocks per SM
// than the 8-slot one and the 8-slot grid is more than one wave: Pro T = 1 among the model
// shapes; measurements in moe_decode_switches.cpp). Changes no value.
void moe_decode_set_up_scale_slots_4_t1(int mode);
int moe_decode_up_scale_slots_4_t1();
// Staged chunks of several pairs (MOE9): where moe_decode_set_stage_x_tokens stages a launch,
// chunks of up to `up` (W1/W3) / `down` (W2) pairs (1..8; 1, 1 as before MOE9) stage one
// row per pair (up * (kdim * 2 + 64) bytes of dynamic shared memory). Same sums. Default 1, 1
// (MOE9: 2-pair W2 chunks staged; W1/W3 rows of 2 pairs would cost a resident block).
void moe_decode_set_stage_pairs(int up, int down);
struct moe_decode_stage_pairs_t {
  int up, down;
};
moe_decode_stage_pairs_t moe_decode_stage_pairs();
// The launch chain around the two GEMMs (MOE10), a mask: 1 = the official order's FP8
// quantization of h in the W1/W3 launch where its grid is one wave (the last block of each
// (chunk, 128-row group) quantizes it; a counter region of the workspace, zeroed by the prepare
// launch, says which block is last): one launch fewer; 2 = the plan by one warp instead of the
// prepare launch's whole block when tokens * top_k <= 8 (the same chunks; pairs of one expert in
// increasing order); 4 = shorter dependent-load chains at T <= 4 (the GEMM launches read their
// chunk together with the chunk count, the quantize and combine launches issue their loads
// before the index checks). The same arithmetic in every combination (outputs bit-equal).
// 7 (H100, official bf16 MXFP4, vs 0: Flash T = 1 1.068x, Pro T = 1 1.012x, Flash T = 4
// 1.010x; T >= 16 runs chain 0's launches; moe_decode_switches.cpp); 0 = the chain before MOE10.
// MOE11: 8 = no prepare launch at T = 1 with bf16 x and <= 8 pairs (the GEMM blocks derive their
// chunk from the routing, W1/W3 stages x itself and is the call's first launch, with PDL; the
// fold of 1 is then off at T = 1). Default 15 (H100, vs 7, two runs: Pro T = 1 1.022 / 1.030x,
// Flash T = 1 1.019 / 1.005x with controls at 1.014 / 1.008x; T >= 2 unchanged).
// MOE13: 16 = at T <= 4 (T <= 16 since MOE14; official order, bf16 x, the repacked layout with the
// shift decode) the fold of 1 at every wave count and at T = 1, its counters in a buffer per
// (device, stream) allocated on the first call outside stream capture and zeroed by the combine
// launch; the W2 blocks wait for their own chunk's h (a readiness counter per chunk that the fold
// releases group by group) instead of for the whole W1/W3 grid. 32 = with 16, W2 stages h at T = 1
// too. 64 = with 16, the fold's count as one acq_rel RMW and the release as a release reduction
// (instead of fence.sc around plain atomics); since MOE14 16 always does so and 64 is ignored.
// Default 127 (H100: Flash T = 1 / 4 1.040 / 1.108x, Pro 1.069 / ~1.00x vs 15; see
// moe_decode_switches.cpp's g_chain). MOE14: 16 applies up to T = 16; 128 (A/B) = 16 at every T.
// MOE15: 256 = with 16, a one-wave W2 grid at most ceil(blocks / SMs) blocks per SM (padded
// dynamic shared memory; same kernels and sums). Default 383 (H200: Flash T = 1 1.043-1.047x vs
// 127; not active where W2 is several waves).
// Process-wide, for benches and A/B runs.
void moe_decode_set_chain(int mask);
int moe_decode_chain();

// Two 16-row tiles of W2 per warp-round (session 38, the kernel's W2P): at T >= tokens on the
// engine's path (official order, ring, repacked with the shift decode; with the 4 scale slots
// where those apply, T = 2..4 on the H200 class, since session 46), each W2 warp streams 32 rows
// per round through the two-matrix machinery of W1/W3, so that the round's bookkeeping serves
// twice the weights; 0 = never. Default -1 (session 40): T >= 5, and T = 1 on a device of the
// H200's class, where it runs at 2 row tiles (pick_rt), and (session 46) T = 2..4 there for W2 of
// >= 7168 rows. H200 measurements: session 38 1.036-1.076x at T = 5 .. 64 at the full clock,
// 78.5-88.5% of read at T >= 8; 0.95-0.97x at T = 1 and Flash T = 4 at the model's row tiles; at
// T = 1 with 2 row tiles 1.006-1.024x; at T = 2..4 on the 4 scale slots (session 46) Pro
// 1.012-1.023x, Flash MXFP4 0.97-0.99x (moe_decode_switches.cpp). Same sums per output row for the
// same K split (the row-tile choice sees half as many, twice as long tiles). Process-wide, for
// benches and A/B runs.
void moe_decode_set_w2_pair_from(int tokens);
int moe_decode_w2_pair_from();
// Whether W2 of a call of `tokens` tokens takes W2P, on a device reading read_bytes_per_sm_cycle
// (device_info.h), for W2 of `rows` rows (the hidden size; the default rule takes W2P at T = 2..4
// only from Pro's 7168, session 46; 0 = unknown: not there).
bool moe_decode_w2_pair(int64_t tokens, double read_bytes_per_sm_cycle, int64_t rows = 0);

// Two accumulator sets in the routed experts' W2 (session 48, the kernel's ACC2): each word's
// second HMMA accumulates into a second set, added to the first after the loop (two dependent
// HMMA chains per matrix instead of one). The same products, another order of the f32 sums; one
// choice per call for all of its W2 kernels. From T = tokens; 0 = never; default -1: the rule of
// moe_decode_switches.cpp (format- and shape-dependent). Process-wide, for benches and A/B runs.
void moe_decode_set_w2_two_sets_from(int tokens);
int moe_decode_w2_two_sets_from();
// On a device reading read_bytes_per_sm_cycle (device_info.h), for W2 of `rows` output rows (the
// hidden size).
bool moe_decode_w2_two_sets(int64_t tokens, bool nvfp4, double read_bytes_per_sm_cycle,
                            int64_t rows);

// Device workspace (bytes) for `tokens` x `top_k` pairs; 256-byte aligned pointer expected.
size_t moe_decode_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                  int64_t inter);

// x [tokens, hidden], indices / weights [tokens, top_k], y [tokens, hidden]. An expert index
// outside [0, experts) makes that token's row NaN. The weights are read in their layout
// (w.layout; repacked: the kernels below, same results). cudaErrorNotSupported when
// !moe_decode_supported or tokens > k_moe_decode_max_tokens; cudaErrorInvalidValue for bad
// arguments. No host synchronisation.
template <typename act_t>
cudaError_t moe_decode_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                               const float* weights, int64_t top_k, const device_weight& w1,
                               const device_weight& w3, const device_weight& w2, float swiglu_limit,
                               void* workspace, size_t workspace_bytes, act_t* y,
                               cudaStream_t stream);

// The official order (ops::moe_experts_official, moe.h moe_experts_official), same arguments,
// errors and workspace: h = SwiGLU(...) * weights[t, k] (f32), FP8-quantized per 128 values of
// each pair row exactly as fake_quant_fp8_values (power-of-two scale from the block maximum,
// e4m3 round to nearest even, saturating), then y[t] = sum_k W2_e h in k order. The quantized h
// is exact in BF16, so W2 takes it without a lo part; the quantization decisions are those of
// the CPU for the same f32 h (h itself differs from the CPU's by summation order).
template <typename act_t>
cudaError_t moe_decode_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream);

// The same two entry points for weights whose data (w.data of w1, w3, w2) holds the repacked
// layout of moe_repack.h (fp4_repack::repack_matrices of the checkpoint bytes, or
// repack_matrices_device; scales and global scales unchanged) and whose layout field says so
// (cudaErrorInvalidValue for checkpoint-layout weights; the plain entries above take both
// layouts and run these kernels for repacked weights). Same support rule, workspace,
// errors and results bit for bit (the decode yields the same BF16 pairs and every sum keeps its
// order; bench_moe_linear checks 0 differing outputs at T <= 16, every shape and format), and
// the same weight pipeline per format and activation type. Measured on an H200 (MOE5 run 2),
// against the checkpoint layout in the same run: 1.10-1.33x (official bf16: Flash MXFP4 T = 1
// 43.2 us = 40.0% of read, T = 16 65.3%, T = 64 61.7%; Pro MXFP4 T = 4 64.0%, T = 64 64.9%).
// The engine repacks its routed experts at load where expert_layout.h allows (bf16 activations,
// compute capability 9.0, ...) and then runs these kernels through the plain entries. H100
// (MOEWIRE run 2, official bf16, % of HBM read, checkpoint -> repacked): Flash MXFP4 T = 1
// 44.3 -> 54.4%, T = 16 66.4 -> 85.9%, T = 64 69.4 -> 86.9%; Pro NVFP4 T = 64 67.6 -> 89.6%.
template <typename act_t>
cudaError_t moe_decode_experts_repacked(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream);
template <typename act_t>
cudaError_t moe_decode_experts_official_repacked(
    const act_t* x, int64_t tokens, const int32_t* indices, const float* weights, int64_t top_k,
    const device_weight& w1, const device_weight& w3, const device_weight& w2, float swiglu_limit,
    void* workspace, size_t workspace_bytes, act_t* y, cudaStream_t stream);

}  // namespace dsv4::cuda
