// The decode-path MoE's process-wide switches (moe_decode.h), with the measurements behind
// their defaults.
#include <algorithm>

#include "backends/cuda/device_info.h"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_decode_tuning.h"

namespace dsv4::cuda {

namespace {
int g_rt_blocks_per_sm = 0;
// Default (MOE8, H100, official order bf16 MXFP4, speed vs staging off in the same process;
// bench/kernels/results/h100_2026-11-26_s9_moe8_run{1,2}_*): this one (run 2) Flash T = 1 / 4
// 1.003 / 1.019x, Pro 0.988 / 1.067x (NVFP4 1.001 / 1.010x, 1.019 / 1.053x). W2 staged gains
// from T = 2 (~23 pair rows of h no longer fit in L1; W2 alone at T = 4: Pro 0.993 -> 1.067x);
// at T = 1 it is a trade: with W2 also staged (4, 1, 4) Flash T = 1 measured 1.034-1.036x but
// Pro T = 1 0.973-0.978x (three runs). W1/W3 staged alone: 0.99-1.00x official, 1.00-1.03x
// exact order.
//
// MOE9 (bench/kernels/results/h100_2026-11-26_s10_moe9_run3_bench.txt, H100, same process,
// against 4, 2, 4 with 1-pair chunks and 8 scale slots): staging at every T (64, 2, 64) with
// 2-pair W2 chunks and 4 scale slots (4 W1/W3 blocks per SM with the staged row) measured Flash
// T = 1 / 4 / 16 / 64 1.005 / 1.017 / 1.038 / 1.044x, Pro 0.990 / 1.045 / 1.074 / 1.037x; at
// T >= 16 the x loads one round ahead had been the largest stall (ncu, run 2: 38% of the W1/W3
// kernel's samples on the HMMA that waits for them at Flash T = 16). The 4 slots cost Pro T = 1
// 1.3% (every 4-slot configuration, the __syncwarp per round) and gain nothing there (one wave
// either way), so they start at T = 2; T = 1 stays as before. Not measured on an H200.
// NOT the default: the lead's verification (H100, same process, bench/kernels/results/
// h100_2026-11-26_s10_final1_*) measured that configuration (s0x64.2.64q2v2) against 4, 2, 4 at
// Flash T = 4 / 16 / 64 0.966 / 1.025 / 1.008x, Pro 0.951 / 1.031 / 1.019x, and with it
// test_gpu_model's repacked-vs-checkpoint comparison (exact order, bf16) lost its bit equality
// (13 of 27 steps differ: the two layouts' kernels then differ in shared memory, resident blocks
// and so the wave model's row tiles). The session-9 defaults stay; the switches remain for A/B.
moe_decode_stage_x g_stage_x = {4, 2, 4};
}  // namespace

void moe_decode_set_stage_x_tokens(int up_max, int down_min, int down_max) {
  g_stage_x = {std::max(0, up_max), std::max(1, down_min), std::max(0, down_max)};
}
moe_decode_stage_x moe_decode_stage_x_tokens() {
  return g_stage_x;
}

namespace {
// MOE10 (H100, official bf16 MXFP4, same process, vs 0; bench/kernels/results/
// h100_2026-11-26_s11_moe10_run{2,3}_bench.txt): 4 alone Flash T = 1 / 4 / 16 / 64 1.018 /
// 1.008 / 1.011 / 0.995x, Pro 1.010 / 1.005 / 1.003 / 0.999x (run 2); 7 Flash T = 1 1.066x (run
// 2), 1.068x (run 3), Pro T = 1 1.012x, Flash T = 4 1.010x (run 3). The one-warp plan at 24 pairs
// (Pro T = 4) measured 0.976 and 0.991x in two runs (not understood), hence only up to 8 pairs.
// MOE11 (H100, same process, vs 7; bench/kernels/results/h100_2026-11-26_s11_moe11_run{1,2}_
// bench.txt): 15 (no prepare launch at T = 1) Pro T = 1 1.022 / 1.030x (controls 0.998 / 1.004x),
// Flash T = 1 1.019 / 1.005x (controls 1.014 / 1.008x: no gain beyond noise there, where 15 also
// gives up 7's fold); T >= 2 runs 7's launches. Measured slower and removed: the fold by
// thread-block clusters instead of the counters (it would survive without the prepare launch;
// Flash T = 1 0.84x), and W2 quantizing its own pair's h row into its staged row in one-pair
// chunks (no quantize launch; Flash T = 1 1.007x, Pro T = 1 0.916x).
// MOE12 (H100, same process, vs 15; bench/kernels/results/h100_2026-11-26_s12_moe12_run{1,2}_*,
// 2026-11-26_moe12_NOTES.md), measured slower and removed: W1/W3, h's quantization (the fold of 1)
// and W2 as one persistent launch at T <= 4 (resident blocks over a queue of (slot, row block)
// items, W2 items prefetching before they wait on per-slot readiness counters kept in a buffer
// that the last block zeroes; bit-equal to chain 0: 39 parity cases, test_gpu_model 66/66).
// Flash T = 1 0.80-0.95x (best with W2's ring 4 deep and static items), Pro T = 1 0.84-1.02x,
// T = 4 0.80-0.98x; a phase trace (Flash T = 1) put its W1/W3 items' tail at 35-37 us and its W2
// phase 16-19 us past h's readiness. The code: branch wip/moe12 at 2a00904.
// MOE13 (H100, official bf16 MXFP4, same process, vs 15; bench/kernels/results/
// h100_2026-11-26_s12_moe13_run{1,2}_*, 2026-11-26_moe13_NOTES.md): 16 (W2 waits per chunk for its
// h, no quantize launch, the fold at every wave count) with 32 (W2 stages h at T = 1) and 64 (the
// fold's fences as one acq_rel RMW), i.e. 127, run 2: Flash T = 1 / 4 1.040 / 1.108x, Pro 1.069 /
// 1.011x (controls, 15 again: 1.005 / 1.000x, 1.001 / 1.016x: at Pro T = 4 the first
// configuration of each pass measures ~1.5-2.5% slow in both runs, so 127 is 0.995x there
// against the second control). Without 64 (fence.sc around the fold's atomics: MEMBAR.SC.GPU
// delays each W1/W3 block's exit, i.e. every later wave) Pro T = 4 lost: 63 0.924x, 31 0.970x
// against the second control (run 1, fold without 16: 0.936x); 32 gained 0.7-1.8% at T = 1 in
// both pairs. Measured slower and removed: W2's griddepcontrol.wait before its exit (run 1:
// Flash T = 4 1.039x vs 1.102x without), the fold of 16 with W2 waiting for the whole grid
// (Flash T = 1 1.031x, Pro T = 1 / 4 0.946 / 0.936x).
// MOE14: 64 folded into 16 (16 always counts with acq_rel and releases with red.release; the
// fence.sc path is gone, bit 64 is accepted and ignored, so 127 is still the default's mask).
// 16 at T <= 16 (was 4; H100: Flash T = 8 / 16 1.08 / 1.04x, Pro T = 8 1.04x, Pro T = 16
// neutral); 128 (A/B): 16 at every T (T = 64 neutral).
// MOE15: 256 (a one-wave W2 grid capped at ceil(blocks / SMs) blocks per SM); 383 the default.
// MOE25 (H200, same process, vs 383; bench/kernels/results/h200_2026-11-27_s21_moe25_run1_*,
// 2026-11-27_s21_moe25_NOTES.md), measured slower and removed: L2 bulk prefetches of W2 while h
// is not ready, by each W2 warp before its readiness wait (its rounds past the ring: Flash T = 1
// 0.952-0.968x, Pro 0.908-0.914x; at most 8 rounds 0.970-0.985x / 0.952-0.964x) or by each
// W1/W3 warp after its loop (a share of its slot's W2: 0.961-0.967x / 0.892-0.911x); both at
// T <= 4: T = 4 0.85-0.87x (Flash). The trace: the prefetches delay the fold's tail and W2's
// readiness by 1-3 us, and W2's loop after its wait does not shorten (Flash 7.8 -> 7.9-8.3 us).
// The code: branch wip/moe25 at 92186b8.
int g_chain = 383;
}  // namespace
void moe_decode_set_chain(int mask) {
  g_chain = mask & 511;
}
int moe_decode_chain() {
  return g_chain;
}

namespace {
// Session 39 (l39c, H200, official bf16 MXFP4, full clock, same process; against 8 slots): 4
// scale slots from T = 2 ("q2") measured Flash T = 2 / 3 / 4 1.000 / 1.103 / 1.023x (64.9 -> 71.5%,
// 72.8 -> 74.5% of read at T = 3 / 4), Pro 1.052 / 1.057 / 1.024x (75.2 -> 79.1%, 78.0 -> 82.4%,
// 82.6 -> 84.6%); T = 1 1.000-1.001x; T = 8 0.94x (there W1/W3 is not staged, already 4 blocks
// per SM, and the slots took W2 off W2P). The l39b traces (Flash T = 4) showed why: with the
// staged row and 8 slots W1/W3 ran 3 blocks per SM (396 slots for 672 blocks of ~28 us: 1.7 waves,
// W2 mostly after them). Hence the default, -1: 4 slots where W1/W3 stages its activation row
// (2 <= T <= the stage_x up_max), on the H200's class (device_info.h bandwidth_rich; the H100,
// where MOE9 measured mixed results, keeps 8); its W1/W3 at RT 4 (moe_decode.cu, l39f). The
// rule as built, against 8 slots: l39d (MXFP4 / NVFP4) Flash T = 3 1.107 / 1.083x, T = 4 1.025 /
// 1.020x, Pro T = 2 1.060 / 1.035x, T = 3 1.065 / 1.045x, T = 4 1.024 / 1.018x, T = 1 / 5 / 8 and
// Flash T = 2 0.995-1.002x; l39g (final tree) 1.021-1.101x; back to back at 700 W (l39e)
// 1.007-1.048x.
int g_scale_slots_from = -1;
moe_decode_stage_pairs_t g_stage_pairs = {1, 1};  // MOE9 measured {1, 2} (see g_stage_x)

// A "from" switch: N > 0 = from T = N, 0 = never, -1 = the default rule's answer.
bool from_switch(int from, int64_t tokens, bool rule) {
  return from > 0 ? tokens >= from : from == 0 ? false : rule;
}
}  // namespace
void moe_decode_set_stage_pairs(int up, int down) {
  g_stage_pairs = {std::clamp(up, 1, moe_decode_tuning::k_chunk_pairs),
                   std::clamp(down, 1, moe_decode_tuning::k_chunk_pairs)};
}
moe_decode_stage_pairs_t moe_decode_stage_pairs() {
  return g_stage_pairs;
}
void moe_decode_set_scale_slots_from(int tokens) {
  g_scale_slots_from = std::max(-1, tokens);
}
bool moe_decode_scale_slots_4(int64_t tokens, double read_bytes_per_sm_cycle) {
  return from_switch(
      g_scale_slots_from, tokens,
      tokens >= 2 && tokens <= g_stage_x.up_max && bandwidth_rich(read_bytes_per_sm_cycle));
}
int moe_decode_scale_slots_from() {
  return g_scale_slots_from;
}
namespace {
// Session 42 (H200, official bf16, full clock; bench/kernels/results/h200_2026-11-29_s42_l42{a,b,c}
// _logs.tgz): with the K parts' partial sums in the ring (2 KB less static shared memory), W1/W3
// alone on 4 scale slots at T = 1 ("k1") against that tree without it (l42a, two passes): Pro
// MXFP4 1.050 / 1.053x, NVFP4 1.053 / 1.057x; Flash 0.988 / 0.990x, NVFP4 0.918 / 0.918x (a
// one-wave grid: nothing to gain, the ring's scales come later). 4 slots for both kernels ("q1",
// W2 then off W2P): Pro 1.056 / 1.060x, NVFP4 1.030 / 1.033x; Flash 0.957-0.963x. Hence the rule
// (-1; Pro T = 1 only among the model shapes): 1.046-1.057x MXFP4, 1.054-1.058x NVFP4 at Pro,
// Flash 0.999-1.010x against that tree; against main before the partial sums moved (which alone
// measured 0.974x at Pro T = 1, l41g), Pro T = 1 1.008-1.036x MXFP4 and 1.050-1.056x NVFP4 on
// three machines (l42a, l42b, l42c).
int g_up_slots_4_t1 = -1;
}  // namespace
void moe_decode_set_up_scale_slots_4_t1(int mode) {
  g_up_slots_4_t1 = std::clamp(mode, -1, 1);
}
int moe_decode_up_scale_slots_4_t1() {
  return g_up_slots_4_t1;
}

void moe_decode_set_rt_blocks_per_sm(int n) {
  g_rt_blocks_per_sm = std::max(-99, n);  // < 0: MOE15's A/B codes (pick_rt)
}
int moe_decode_rt_blocks_per_sm() {
  return g_rt_blocks_per_sm;
}

namespace {
// Session 38 (l38c, H200, official bf16 MXFP4, same process, alternating; full clock = 80 ms idle
// before each replay): W2P at every T against without, Flash T = 1 / 4 / 16 / 64 0.953 / 0.960 /
// 1.073 / 1.076x, Pro 0.969 / 1.011 / 1.072 / 1.074x (Flash 77.2 -> 82.8%, 78.0 -> 83.9% of read at
// T = 16 / 64; Pro 81.9 -> 87.8%, 82.4 -> 88.5%); back to back at the 700 W limit T =
// 64 1.045-1.075x (MXFP4 and NVFP4), T = 16 1.00-1.05x, T <= 4 0.94-1.07x. l38e (same binary, W2P
// off against on): T = 8 / 12 at the full clock Flash 1.055 / 1.066x (74.4 -> 78.5%, 76.8 -> 81.9%
// of read), Pro 1.064 / 1.065x (81.4 -> 86.6%, 82.4 -> 87.8%); back to back 0.99-1.14x
// (power-capped noise). l38h: T = 5 / 6 / 7 Flash 1.036 / 1.050 / 1.051x, Pro 1.055 / 1.062 /
// 1.062x. At T <= 4 W2's grid is small and the longer tiles leave SMs idle (Flash T = 4 0.96x), so
// W2P starts at 5. T = 1 with W2 at 2 row tiles instead of the model's 4 (forced by the A/B code,
// against the default of the run, H200, full clock, official bf16): l38c 1.006-1.009x, l39a Flash
// 1.024x / Pro 1.012x, l39d 1.007-1.017x (MXFP4 and NVFP4); at T = 2..4 W2P lost at any row tiles
// (l39a). Hence the default since session 40, -1: T >= 5, and T = 1 on the H200's class (the H100
// not measured: T >= 5 there), its W2 at RT 2 (moe_decode_tuning.cpp).
// Session 46 (l46d, H200, full clock, official bf16, two passes, against the default in the same
// process): W2P at T = 2..4 was a no-op until then (the 4 scale slots there took precedence;
// l46c: 0.996-1.002x), and with new 4-slot W2P kernels it runs Pro T = 2 / 3 / 4 at 1.017-1.018 /
// 1.012-1.014 / 1.018x (MXFP4), 1.005-1.006 / 1.019-1.020 / 1.020-1.021x (NVFP4), Flash MXFP4
// 0.983-0.984 / 0.970-0.972 / 0.989x, NVFP4 0.998-1.015x: the default takes it at T = 2..4 on the
// H200's class for W2 of >= 7168 rows (Pro's hidden size; Flash's 4096 keeps the one-tile W2).
int g_w2_pair_from = -1;
constexpr int64_t k_w2_pair_min_rows_2_to_4 = 7168;
}  // namespace
void moe_decode_set_w2_pair_from(int tokens) {
  g_w2_pair_from = std::max(-1, tokens);
}
int moe_decode_w2_pair_from() {
  return g_w2_pair_from;
}
bool moe_decode_w2_pair(int64_t tokens, double read_bytes_per_sm_cycle, int64_t rows) {
  const bool rich = bandwidth_rich(read_bytes_per_sm_cycle);
  return from_switch(g_w2_pair_from, tokens,
                     tokens >= 5 || (tokens == 1 && rich) ||
                         (tokens >= 2 && rich && rows >= k_w2_pair_min_rows_2_to_4));
}

namespace {
// Session 48 (H200, official bf16, full clock; RESULTS.md session 48, bench/kernels/results/
// h200_2026-11-30_s48_l48{a,b,c}_logs.tgz): W2 with two sets against one, l48b in one process
// (chain 16's kernels only): Flash MXFP4 T = 1 / 2 / 3 / 4 / 8 / 16 1.001 / 1.006 / 1.006 / 1.016 /
// 1.004 / 1.003x, NVFP4 1.005 / 1.018 / 1.013 / 1.019 / 0.994 / 0.997x; Pro MXFP4 0.995-1.002x,
// NVFP4 1.045x at T = 1, 0.995-1.002x elsewhere; l48a / l48c across processes: Flash MXFP4 T = 1
// 0.974-0.985x, T = 4 1.011-1.019x, Pro NVFP4 T = 1 1.025-1.029x.
// Session 49 (l49a, every W2 kernel of a call switched at once, in one process, two passes, against
// never): T = 2 / 3 / 4 Flash MXFP4 1.003-1.004 / 1.009-1.012 / 1.012-1.016x, NVFP4 1.017-1.018 /
// 1.017 / 1.020-1.026x; Pro MXFP4 0.987-0.990 / 1.002 / 0.999-1.001x, NVFP4 1.004-1.005 / 1.000-
// 1.001 / 1.000-1.001x; T = 1 NVFP4 Flash 0.998-1.003x, Pro 1.048-1.049x; MXFP4 T = 1 and T = 8
// within 1%. At T = 2..4 Pro's W2 runs W2P (two row tiles a warp-round, i.e. already two
// independent HMMA chains), where a second set adds nothing or loses; Flash's one-tile W2 gains.
// Hence the rule: T = 2..4 for W2 below W2P's row threshold (the rows alone, not the W2P switch),
// and T = 1 for NVFP4, on the H200's class only (the H100 not measured). l49b (this rule against
// never, in one process, two passes, read 4462-4474 GB/s): Flash MXFP4 T = 2 / 3 / 4 1.003 / 1.002-
// 1.005 / 1.015-1.017x (T = 4 88.1 -> 86.8 us, 79.5 -> 80.7-80.9%), NVFP4 1.012-1.014 / 1.016-1.021
// / 1.021-1.030x; Pro NVFP4 T = 1 1.041-1.044x; Flash NVFP4 T = 1 0.995-0.998x; the calls the rule
// leaves alone (the same kernels: T >= 8, Pro T = 2..4, MXFP4 T = 1) 0.997-1.006x.
int g_w2_two_sets_from = -1;
}  // namespace
void moe_decode_set_w2_two_sets_from(int tokens) {
  g_w2_two_sets_from = std::max(-1, tokens);
}
int moe_decode_w2_two_sets_from() {
  return g_w2_two_sets_from;
}
bool moe_decode_w2_two_sets(int64_t tokens, bool nvfp4, double read_bytes_per_sm_cycle,
                            int64_t rows) {
  const bool one_tile_w2 = rows < k_w2_pair_min_rows_2_to_4;
  return from_switch(g_w2_two_sets_from, tokens,
                     bandwidth_rich(read_bytes_per_sm_cycle) &&
                         ((tokens >= 2 && tokens <= 4 && one_tile_w2) || (tokens == 1 && nvfp4)));
}

}  // namespace dsv4::cuda
