// Indexer top-k in two or three launches after zeroing the per-token state and histograms (a
// memset, or indexer_zero_kernel with plan.zero_kernel): the scores, then the collect with its
// last CTA selecting (select_ctas == 0) or the collect and a split select, or (plan.score_list)
// the scores listing their own candidates and the split select.
//
// 1. indexer_score_kernel, grid (key chunk, token), 4 warps, two CTAs per SM: the token's
//    64 x 128 query in shared memory (bf16), keys streamed 128 rows per pass through a ring of
//    cp.async buffers (16-byte chunk c of row r stored at c ^ (r & 7)). Warp w computes
//    S^T = K Q^T for keys 32 w .. +32 (M = keys, N = heads, K = dims) on mma.sync; lane quads
//    then reduce sum_h w_h relu(s) across the heads they hold. Scores go to scratch and into a
//    4096-bin histogram of their top 12 bits (shared, then added to the token's global one).
//    E4M3 keys (indexer_topk_fast_fp8) are widened to bf16 in registers (see k_fp8_dim).
//    FP4 keys on wgmma with block_size % 128 == 0 (plan.score_bulk): a pass is 128 consecutive
//    pool rows of one block, fetched by thread 0 as two bulk copies completing on the stage's
//    mbarrier; with plan.score_decouple every thread releases the stage on an "empty" mbarrier
//    once its codes are in registers (no CTA barrier per pass). With plan.zero_kernel the state
//    and histograms are zeroed by a kernel the score kernel follows as a programmatic dependent.
//    Those bulk passes on 8 warps run in indexer_score_three_kernel (plan.score_three, default):
//    the same passes with the A fragments widened one k-step ahead of the wgmmas and the weights
//    in shared memory (70 registers), so three CTAs fit an SM. Keys widened into shared memory
//    for SS wgmmas with two accumulators (score_ss, session 10) measured slower and were removed
//    (bench/kernels/results/2026-11-26_s10_idx8_NOTES.md).
// 2. indexer_collect_select_kernel, grid (chunk of plan.collect_keys, token), 1024 threads, a
//    programmatic dependent of 1. Every CTA finds the threshold bin (the bin of the token's k-th
//    key) from the histogram, lists its chunk's keys at or above it (the token's candidates; one
//    atomic per warp) and adds the next 12 bits of the keys inside the bin to a second histogram.
//    With plan.select_ctas == 0 the token's last CTA (atomic ticket) then selects: the second
//    histogram gives the 24-bit threshold prefix; listed keys above it are selected (fewer than
//    k), the best of the few keys with exactly that prefix are ranked in, and only the k selected
//    keys are sorted (bitonic network in registers, shuffles below 32 apart).
// 3. indexer_select_kernel (plan.select_ctas > 0), grid (select_ctas, token), 1024 threads, a
//    programmatic dependent of 2: every CTA resolves the 24-bit prefix and keeps the listed keys at
//    or above it (about k); each CTA ranks a share of them against all (rank = keys greater) and
//    writes rank < k straight to its output position, so no sort and no single-CTA tail.
// With plan.score_list (one-wave grids, FP4 keys on indexer_score_three_kernel) there is no
// collect launch: after its histogram flush each score CTA reads a snapshot of the token's coarse
// (top 8 bits) and fine histograms, whose counts are counts of real keys, so the bin where the
// snapshot's count from the top reaches k is at or below the true threshold bin; the CTA appends
// its keys at or above that bin to the token's list (score_list_keys). The select kernel then ranks
// the whole list when it is short (list_rank), else resolves the threshold from the first
// histogram; an overflowing list or heavy ties rescan the scores in CTA 0.
// Keys are 64-bit (ordered score bits << 32 | ~entry), unique per entry, so "higher score first,
// equal scores lower entry first" is plain descending key order. When the threshold bin holds
// more keys than the candidate buffer (heavy ties), nothing is listed: the selecting CTA resolves
// 8 more bits at a time with histogram passes over all the scores, then collects in one pass.
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cluster.cuh"
#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/paged_rows.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/wgmma_common.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_heads = int(k_indexer_fast_heads);
constexpr int k_dim = int(k_indexer_fast_head_dim);
constexpr int k_row_bytes = k_dim * 2;
constexpr int k_chunks = k_row_bytes / 16;
constexpr int k_pass = 128;  // keys per pass: 4 warps x 32
// Score CTAs have 4 or 8 warps (`warps`; 32 or 16 keys of a pass each); all of them issue the
// pass's copies.
constexpr int k_bins = 4096;  // 12 bits of the key per histogram level
constexpr int k_q_bytes = k_heads * k_row_bytes;
constexpr int k_pass_bytes = k_pass * k_row_bytes;
constexpr int k_fp8_row_bytes = k_dim;  // e4m3 keys: one byte per dim (+ an f32 scale per key)
constexpr int k_fp8_pass_bytes = k_pass * k_fp8_row_bytes;
// E2M1 keys (io/indexer_fp4_key.h): 64 code bytes per row in the order the A fragments are read
// (lane quad t: bytes 16 t .. +15 of its rows), and a u32 of four E8M0 scales per row.
constexpr int k_fp4_row_bytes = k_dim / 2;
constexpr int k_fp4_pass_bytes = k_pass * k_fp4_row_bytes;
// Key formats of the score kernel.
constexpr int k_fmt_bf16 = 0;
constexpr int k_fmt_e4m3 = 1;
constexpr int k_fmt_e2m1 = 2;
// E2M1 keys on warpgroup MMAs (plan.score_wgmma): the same widened A fragments, each warp's 16 key
// rows of a k16 step one quarter of a wgmma m64n64k16 whose B (the query) is read from shared
// memory in the 128-byte-swizzled K-major layout (q_wg_offset).
constexpr int k_fmt_e2m1_wg = 3;
// The same with the pass's wgmmas in two commit groups (k-steps 0..3, then 4..7): the widening of
// k-steps 4..7 overlaps the first group's MMAs (plan.score_split).
constexpr int k_fmt_e2m1_wg2 = 4;
__host__ __device__ constexpr bool fmt_fp4(int fmt) {
  return fmt == k_fmt_e2m1 || fmt == k_fmt_e2m1_wg || fmt == k_fmt_e2m1_wg2;
}
// Score kernel flags (runtime). Bulk: FP4 keys with block_size a multiple of k_pass, each pass
// one run of 128 pool rows, fetched by thread 0 as two bulk copies (codes, scales) that complete
// on the stage's mbarrier, instead of per-thread cp.async of every row (plan.score_bulk).
constexpr int k_score_flag_bulk = 1;
// With bulk passes: every thread releases a stage right after reading it (an arrival on the stage's
// "empty" mbarrier) and thread 0 waits for that before refilling it, instead of a CTA barrier per
// pass: warps drift up to stages - 1 passes apart (plan.score_decouple).
constexpr int k_score_flag_decouple = 2;
// The epilogue's lane-quad reduction of both 8-row halves at once (plan.score_quad): lanes
// exchange the half their partner keeps, so 2 shuffles and adds instead of 4, and lanes t = 0 and
// t = 1 of each quad store rows g and g + 8 (one predicated store block instead of two). The sums
// are the same additions in the same order ((a0 + a1) + (a2 + a3), fp addition commutes), so the
// scores are bit for bit the two-reduction epilogue's.
constexpr int k_score_flag_quad = 4;
// Bulk passes: the copies of pass p + stages - 1 issued by lane 0 of warp p % warps instead of
// thread 0 (plan.score_rotate).
constexpr int k_score_flag_rotate = 8;
constexpr int k_score_flag_pingpong = 16;   // plan.score_pingpong
constexpr int k_score_flag_list_once = 32;  // plan.list_once (score_list: one snapshot, no waits)
constexpr int k_max_range_blocks = 1025;    // block ids of a CTA's range (keys_per_cta <= 1024 bs)
// Pool rows of the keys of passes j .. j + 7 (slot j % 8), computed `stages` passes ahead, one key
// per thread, so the copy loop only reads them (no block division per copied chunk). FP8 keys
// keep their scales in a ring alike.
constexpr int k_row_ring = 8;
// Key ring depth of the score kernel: two passes of bf16 keys or three of e4m3 keys (half the
// bytes each), so that two CTAs fit an SM. Deeper rings with one CTA per SM were slower (H200,
// T=1 x 256K entries, 4 warps: 2 stages 39.5 us, 4 stages 54 us, 5 stages 63 us for the scores):
// the time per pass of a CTA did not shrink with more passes in flight, and e4m3 keys (half the
// bytes) score in about the same time as bf16 ones, so the scan is bound by the CTAs' per-pass
// latency, not by the bytes in flight.
constexpr int k_stages_bf16 = 2;
constexpr int k_stages_fp8 = 3;
// E2M1 keys: a quarter of the bf16 bytes per pass; four passes in flight still fit two CTAs.
// (H200, T=1 x 256K entries: FP4 scores 28-29 us against bf16's 33-34 us with 4x fewer bytes: the
// per-pass latency still bounds them; T=32: 661 vs 783 us.)
constexpr int k_stages_fp4 = 4;
// plan.score_three: three 8-warp CTAs per SM (24 warps to hide the per-pass latency chain instead
// of 16): registers bounded at 85 per thread (ptxas: 80) and three stages so the shared memory
// fits.
constexpr int k_stages_fp4_three = 3;
static_assert(k_row_ring > k_stages_fp8 + 1, "row ring shorter than the key ring");
static_assert(k_row_ring > k_stages_fp4 + 1, "row ring shorter than the key ring");
constexpr int score_smem_bytes(int stages, int fmt) {
  const int pass =
      fmt == k_fmt_e4m3 ? k_fp8_pass_bytes : (fmt_fp4(fmt) ? k_fp4_pass_bytes : k_pass_bytes);
  // ... + the stages' full and empty mbarriers (bulk passes), 8-byte aligned.
  return k_q_bytes + stages * pass + k_bins * 4 +
         k_row_ring * k_pass * 4 * (fmt != k_fmt_bf16 ? 2 : 1) + (k_max_range_blocks + 1) / 2 * 8 +
         stages * 16;
}
static_assert(2 * score_smem_bytes(k_stages_fp4, k_fmt_e2m1) <= 227 * 1024, "two CTAs per SM");

constexpr int k_select_threads = 1024;
constexpr int k_collect_threads = k_select_threads;  // one kernel collects, its last CTA selects
constexpr int k_collect_unroll = 4;                  // score loads in flight per thread
// Keys per collect CTA (plan.collect_keys): short chunks spread a small grid (T=1) over more SMs,
// long ones bound the per-CTA threshold search of a large one.
constexpr int64_t k_collect_keys_short = 4096;
constexpr int64_t k_collect_keys_long = 16384;

constexpr int k_max_candidates = 8192;
constexpr int k_max_select_ctas = 64;  // plan.select_ctas bound (each CTA repeats the list scan)
// Per token, the collect kernel lists the keys at or above the threshold bin: fewer than top_k
// above it plus at most k_max_candidates in it.
constexpr int64_t k_candidate_capacity = k_indexer_fast_max_top_k + k_max_candidates;
// counts [k_bins] | scratch [k_select_threads] | sel [max top_k] | cand [k_max_candidates], the
// final sort's exchange buffer (2 x k_select_threads) aliasing cand (dead by then).
constexpr int k_select_smem =
    k_bins * 4 + k_select_threads * 4 + int(k_indexer_fast_max_top_k) * 8 + k_max_candidates * 8;
static_assert(k_max_candidates >= 2 * k_select_threads, "sort buffer inside cand");

static_assert(k_pass * k_chunks % 256 == 0, "pass load must divide evenly");

// Per-token state, zeroed before the score launch. bin / above / in_bin are written by the token's
// first collect CTA (or, heavy ties, the cluster select's CTA 0) when more entries are visible
// than top_k; plan.score_list leaves them zero (its select resolves the bin itself).
struct token_state {
  uint32_t ticket;      // collect CTAs of the token done
  uint32_t cand_count;  // keys listed (by the collect kernel, or plan.score_list's score CTAs)
  uint32_t bin;         // threshold bin (top 12 bits of the k-th key)
  uint32_t above;       // keys in higher bins (< top_k)
  uint32_t in_bin;      // keys in the threshold bin
  uint32_t pad[3];
};
static_assert(sizeof(token_state) == 32, "token_state keeps 16-byte alignment");

// Benchmarks (indexer_fast_set_trace, bench_attention --indexer-trace): %globaltimer stamps of
// token 0's CTAs, thread 0, at fixed points of the score, collect and select kernels (k_trace_*
// regions, 8 words per CTA); null (the default) records nothing.
__constant__ unsigned long long* g_indexer_trace;
constexpr int k_trace_score = 0;       // CTA c of the score kernel at 8 c
constexpr int k_trace_collect = 8192;  // CTA c of the collect kernel at k_trace_collect + 8 c
constexpr int k_trace_select = 16384;  // CTA c of the select kernel at k_trace_select + 8 c
// A value (not a time) at the slot, alike (the score kernel's passes and SM: slots 5 and 6).
__device__ __forceinline__ void trace_value(int region, int slot, uint64_t value) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || blockIdx.y != 0 || threadIdx.x != 0 || blockIdx.x >= 1024) return;
  tr[region + 8 * int(blockIdx.x) + slot] = value;
}
__device__ __forceinline__ uint32_t smid() {
  uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
__device__ __forceinline__ void trace_stamp(int region, int slot) {
  unsigned long long* tr = g_indexer_trace;
  if (tr == nullptr || blockIdx.y != 0 || threadIdx.x != 0 || blockIdx.x >= 1024) return;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  tr[region + 8 * int(blockIdx.x) + slot] = now;
}

// Programmatic dependent launch (pdl.cuh): the collect-select kernel is launched with
// programmatic stream serialization. Every block waits (the predecessor's grid complete and its
// writes visible) before it reads anything or exits, so a dependent that runs knows every earlier
// launch of the chain has completed.

__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return uint32_t(row * k_row_bytes + ((chunk ^ (row & 7)) << 4));
}

// The query for wgmma (k_fmt_e2m1_wg): two blocks of 64 dims, each 64 heads x 128 bytes with the
// 16-byte chunk c of head r at c ^ (r & 7) (the SW128 atom of 8 rows x 128 bytes; 8-row groups
// 1024 bytes apart), 1024-byte aligned (the dynamic shared memory's start).
__device__ __forceinline__ uint32_t q_wg_offset(int row, int chunk) {
  return uint32_t((chunk / 8) * (k_heads * 128) + row * 128 + (((chunk % 8) ^ (row & 7)) << 4));
}

// d[32] += A (64 x 16, registers: the mma.sync m16n8k16 A fragment of each warp's 16 rows) *
// B (16 x 64, descriptor, K-major), bf16 in, f32 accumulate (d[4 j + e]: the m16n8k16
// accumulator e of n-tile j).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// d[32] = A * B as wgmma_rs_n64, the accumulator's input ignored (scale-d 0).
__device__ __forceinline__ void wgmma_rs_n64_first(float (&d)[32], const uint32_t (&a)[4],
                                                   uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

__device__ __forceinline__ uint4 load8_bf16(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                    pack_bf16x2(b.z, b.w));
}

// E4M3 tiles: 16-byte chunk c (of 8) of row r stored at c ^ (r & 7).
__device__ __forceinline__ uint32_t swizzled_fp8(int row, int chunk) {
  return uint32_t(row * k_fp8_row_bytes + ((chunk ^ (row & 7)) << 4));
}

// Two e4m3 values (low byte first) as bf16x2, exactly (e4m3 has 3 mantissa bits, and its range and
// subnormals fit both f16 and bf16).
__device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t two_bytes) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two_bytes & 0xffffu), __NV_E4M3);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  return pack_bf16x2(f.x, f.y);
}

// Pair p (0..3) of a word of E2M1 codes (io/indexer_fp4_key.h: the pair's codes at bits
// [12 - 4 p, 16 - 4 p) and [28 - 4 p, 32 - 4 p)) as bf16x2 times the block scale, exactly. The
// codes are first placed in bf16's lowest exponent bits (sign -> bit 15, exponent-mantissa -> bits
// 8..6), which is the e2m1 value times 2^-126 (code 1, 0.5, lands on the subnormal 2^-127), then
// multiplied by 2^126 and by the scale 2^(byte - 127) (scale2 = byte << 7 in both halves): powers
// of two, so both products are exact (bf16 FMA keeps subnormal inputs) and equal the bf16 rounding
// of e2m1 * s that a bf16 key pool holds.
template <int p>
__device__ __forceinline__ uint32_t e2m1x2_to_bf16x2(uint32_t word, uint32_t scale2) {
  const uint32_t x = word << (4 * p);
  uint32_t v = (x & 0x80008000u) | ((x >> 6) & 0x01C001C0u);
  constexpr uint32_t two_126 = 0x7E807E80u;  // bf16 2^126 in both halves
  constexpr uint32_t minus_zero = 0x80008000u;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(two_126), "r"(minus_zero));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(scale2), "r"(minus_zero));
  return v;
}

// The same for the wgmma path, with the scale's two products folded into one where the scale
// allows: `one` (every scale byte b <= 128): m = 2^(b - 1) in both halves (2^126 * 2^(b - 127),
// a bf16 power of two), one exact product; else m = 2^(b - 127) as above, after 2^126.
template <int p, bool one>
__device__ __forceinline__ uint32_t e2m1x2_widen(uint32_t word, uint32_t m) {
  const uint32_t x = word << (4 * p);
  uint32_t v = (x & 0x80008000u) | ((x >> 6) & 0x01C001C0u);
  constexpr uint32_t two_126 = 0x7E807E80u;
  constexpr uint32_t minus_zero = 0x80008000u;
  if constexpr (!one)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(two_126), "r"(minus_zero));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(m), "r"(minus_zero));
  return v;
}

// A fragments of k-steps kk0 .. kk1 - 1 of the wgmma path from a lane's code words (raw4[mt][h]:
// rows g, g + 8 of tile mt; word w holds k-steps 2 w, 2 w + 1) and multipliers m[mt][h][w] of
// block w (see e2m1x2_widen).
template <bool one, int kk0, int kk1, int tiles>
__device__ __forceinline__ void widen_fp4_steps(uint32_t (&a)[8][tiles][4],
                                                const uint4 (&raw4)[tiles][2],
                                                const uint32_t (&m)[tiles][2][4]) {
#pragma unroll
  for (int kk = kk0; kk < kk1; ++kk)
#pragma unroll
    for (int mt = 0; mt < tiles; ++mt) {
      const uint4& r0 = raw4[mt][0];
      const uint4& r1 = raw4[mt][1];
      const int w = kk / 2;
      const uint32_t w0 = w == 0 ? r0.x : w == 1 ? r0.y : w == 2 ? r0.z : r0.w;
      const uint32_t w1 = w == 0 ? r1.x : w == 1 ? r1.y : w == 2 ? r1.z : r1.w;
      if (kk % 2 == 0) {
        a[kk][mt][0] = e2m1x2_widen<0, one>(w0, m[mt][0][w]);
        a[kk][mt][1] = e2m1x2_widen<0, one>(w1, m[mt][1][w]);
        a[kk][mt][2] = e2m1x2_widen<1, one>(w0, m[mt][0][w]);
        a[kk][mt][3] = e2m1x2_widen<1, one>(w1, m[mt][1][w]);
      } else {
        a[kk][mt][0] = e2m1x2_widen<2, one>(w0, m[mt][0][w]);
        a[kk][mt][1] = e2m1x2_widen<2, one>(w1, m[mt][1][w]);
        a[kk][mt][2] = e2m1x2_widen<3, one>(w0, m[mt][0][w]);
        a[kk][mt][3] = e2m1x2_widen<3, one>(w1, m[mt][1][w]);
      }
    }
}

// E4M3 keys feed mma.sync without a shared-memory conversion pass: the reduction dimension is
// permuted so that lane quad t holds key bytes 32 t .. 32 t + 31 of its rows for all eight k-steps
// (two 16-byte loads per row). MMA k index 16 kk + j takes the key's (and the query's) dimension
// k_fp8_dim(kk, j); the query is stored in shared memory in the same order.
__device__ __forceinline__ int k_fp8_dim(int kk, int j) {
  return 32 * ((j % 8) / 2) + 4 * kk + 2 * (j / 8) + (j % 2);
}

struct paged_entries {
  const int32_t* block_table;
  int64_t table_rows, table_width, block_size, pool_rows;
  int64_t seq;

  // Pool row of entry s, or -1 (no block, row outside the pool).
  __device__ __forceinline__ int64_t row(int64_t s) const {
    return paged_pool_row(paged_table_row(block_table, table_rows, table_width, seq), table_width,
                          block_size, pool_rows, s);
  }
};

// Exclusive prefix sum over the block (thread order); `scratch` holds >= 32 values.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t v, uint32_t* scratch) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  uint32_t x = v;
#pragma unroll
  for (int o = 1; o < k_warp_size; o *= 2) {
    const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == k_warp_size - 1) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x / k_warp_size;
    uint32_t s = lane < warps ? scratch[lane] : 0;
#pragma unroll
    for (int o = 1; o < k_warp_size; o *= 2) {
      const uint32_t y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    if (lane < warps) scratch[lane] = s - (lane < warps ? scratch[lane] : 0);  // exclusive
  }
  __syncthreads();
  const uint32_t r = scratch[warp] + x - v;
  __syncthreads();
  return r;
}

// Over counts[0, bins) ordered from the top bin down: the bin b where the count of keys in bins
// above b is < k and that plus counts[b] is >= k (k <= total). Returns (b, above) to all threads.
__device__ __noinline__ uint2 find_threshold(const uint32_t* counts, int bins, uint32_t k,
                                             uint32_t* scratch, uint32_t* result) {
  const int per = (bins + int(blockDim.x) - 1) / int(blockDim.x);
  const int top = bins - 1 - int(threadIdx.x) * per;  // this thread's bins: top, top - 1, ...
  uint32_t sum = 0;
  for (int i = 0; i < per; ++i)
    if (top - i >= 0) sum += counts[top - i];
  const uint32_t before = block_exclusive_scan(sum, scratch);
  if (before < k && before + sum >= k) {
    uint32_t cum = before;
    for (int i = 0; i < per; ++i) {
      const uint32_t c = counts[top - i];
      if (cum + c >= k) {
        result[0] = uint32_t(top - i);
        result[1] = cum;
        break;
      }
      cum += c;
    }
  }
  __syncthreads();
  const uint2 r = make_uint2(result[0], result[1]);
  __syncthreads();
  return r;
}

// Descending bitonic sort of keys[0, n) in shared memory (n a power of two), any block size.
__device__ __noinline__ void bitonic_sort_desc(unsigned long long* keys, int n) {
  for (int k = 2; k <= n; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int ixj = i ^ j;
        if (ixj > i) {
          const unsigned long long a = keys[i], b = keys[ixj];
          if (((i & k) == 0) ? (a < b) : (a > b)) {
            keys[i] = b;
            keys[ixj] = a;
          }
        }
      }
      __syncthreads();
    }
}

// Descending sort of keys[0, n), n <= blockDim.x = k_select_threads, one key per thread in a
// register: the same bitonic network, partners under 32 apart by shuffle, farther ones through
// `buf` (2 x k_select_threads, alternating halves so one barrier per stage suffices). Padding keys
// are 0, below every real key (whose score bits are never 0). Ends with a barrier.
__device__ __noinline__ void sort_desc_in_registers(unsigned long long* keys, int n,
                                                    unsigned long long* buf) {
  int n_pad = k_warp_size;
  while (n_pad < n) n_pad <<= 1;
  const int i = int(threadIdx.x);
  unsigned long long v = i < n ? keys[i] : 0ull;
  int half = 0;
  for (int k = 2; k <= n_pad; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      unsigned long long p;
      if (j >= k_warp_size) {
        unsigned long long* b = buf + half * k_select_threads;
        b[i] = v;
        __syncthreads();
        p = b[i ^ j];
        half ^= 1;
      } else {
        p = __shfl_xor_sync(0xffffffffu, v, j);
      }
      const bool take_max = ((i & j) == 0) == ((i & k) == 0);
      v = take_max ? (v > p ? v : p) : (v < p ? v : p);
    }
  if (i < n) keys[i] = v;  // each thread read only keys[i] above
  __syncthreads();
}

__device__ __forceinline__ int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

__device__ __forceinline__ unsigned long long entry_key(float score, int64_t s) {
  return (static_cast<unsigned long long>(ordered_float_bits(score)) << 32) |
         (0xFFFFFFFFull - static_cast<unsigned long long>(s));
}

// The entry of a key (entry_key's inverse).
__device__ __forceinline__ int64_t key_entry(unsigned long long key) {
  return int64_t(0xFFFFFFFFull - (key & 0xFFFFFFFFull));
}
// The key's histogram bins: its top 12 bits (first level), and its next 12 bits (second level,
// for the keys of the first level's threshold bin).
__device__ __forceinline__ uint32_t key_bin(unsigned long long key) {
  return uint32_t(key >> 52);
}
__device__ __forceinline__ uint32_t key_sub_bin(unsigned long long key) {
  return uint32_t(key >> 40) & (k_bins - 1);
}

// Appends `key` where `take` (warp-uniform call): one shared or global atomic per warp.
template <typename counter_t>
__device__ __forceinline__ void warp_append(bool take, unsigned long long key, counter_t* count,
                                            unsigned long long* list) {
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  const int lane = threadIdx.x % k_warp_size;
  const int leader = __ffs(mask) - 1;
  uint32_t slot = 0;
  if (lane == leader) slot = atomicAdd(count, uint32_t(__popc(mask)));
  slot = __shfl_sync(0xffffffffu, slot, leader);
  if (take) list[slot + __popc(mask & ((1u << lane) - 1u))] = key;
}

// warp_append into a list of `cap` entries: the count still advances past cap (so the reader
// knows the list overflowed) but nothing is written there.
__device__ __forceinline__ void warp_append_bounded(bool take, unsigned long long key,
                                                    uint32_t* count, unsigned long long* list,
                                                    uint32_t cap) {
  const unsigned mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  const int lane = threadIdx.x % k_warp_size;
  const int leader = __ffs(mask) - 1;
  uint32_t slot = 0;
  if (lane == leader) slot = atomicAdd(count, uint32_t(__popc(mask)));
  slot = __shfl_sync(0xffffffffu, slot, leader);
  const uint32_t i = slot + uint32_t(__popc(mask & ((1u << lane) - 1u)));
  if (take && i < cap) list[i] = key;
}

// How many of the nf keys f[0..nf) exceed x, on every lane of the warp (four independent
// counters per lane keep the shared-memory loads in flight).
__device__ __forceinline__ uint32_t warp_count_greater(const unsigned long long* f, int nf,
                                                       unsigned long long x) {
  uint32_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
  int i = threadIdx.x % k_warp_size;
  for (; i + 3 * k_warp_size < nf; i += 4 * k_warp_size) {
    c0 += f[i] > x;
    c1 += f[i + k_warp_size] > x;
    c2 += f[i + 2 * k_warp_size] > x;
    c3 += f[i + 3 * k_warp_size] > x;
  }
  for (; i < nf; i += k_warp_size) c0 += f[i] > x;
  return __reduce_add_sync(0xffffffffu, c0 + c1 + c2 + c3);
}

// ---- pieces shared by indexer_score_kernel and indexer_score_three_kernel ----

// The sequence's block ids of keys [lo, hi) into range_blocks (one round of dependent loads per
// CTA, none in the key loops); returns the range's first block.
template <int threads>
__device__ __forceinline__ int64_t score_range_blocks(const paged_entries& pages, int64_t lo,
                                                      int64_t hi, int32_t* range_blocks) {
  const int64_t block0 = lo / pages.block_size;
  const int n_blocks = int((hi - 1) / pages.block_size - block0 + 1);
  for (int i = threadIdx.x; i < n_blocks; i += threads) {
    const int64_t b = block0 + i;
    int32_t id = -1;
    if (pages.seq >= 0 && pages.seq < pages.table_rows && b < pages.table_width)
      id = pages.block_table[pages.seq * pages.table_width + b];
    range_blocks[i] = id;
  }
  return block0;
}

// One thread: stage s's full barrier (one arrival plus the copies' bytes) and empty barrier
// (every thread's arrival).
template <int threads>
__device__ __forceinline__ void score_init_barriers(uint32_t full_s, uint32_t empty_s, int stages) {
  for (int i = 0; i < stages; ++i) {
    mbar::init(full_s + 8 * i, 1);
    mbar::init(empty_s + 8 * i, threads);
  }
  mbar::fence_init();
}

// Bulk pass j of FP4 keys into `stage` (one thread): the rows of the pass's block inside the pool
// (the codes, and the scales whole 16-byte groups by the copy engine, the pool's last < 4 by this
// thread); pass_rows[j % k_row_ring] = rows of the pass that score (0: no block, or outside the
// pool: -inf).
struct fp4_bulk_source {
  const paged_entries* pages;
  const int32_t* range_blocks;
  int64_t block0, lo, hi;
  uint32_t bs;  // pages->block_size
  const uint8_t* keys8;
  const uint32_t* key_scales4;
};
__device__ __forceinline__ void score_issue_fp4_bulk(const fp4_bulk_source& src, int64_t j,
                                                     int stage, int32_t* pass_rows,
                                                     uint32_t* pass_scales, uint32_t full_s,
                                                     uint32_t k_s) {
  const uint32_t start = uint32_t(src.lo + j * k_pass);
  const uint32_t block = start / src.bs;
  const int32_t id = src.range_blocks[block - uint32_t(src.block0)];
  const int64_t row0 = int64_t(id) * src.bs + (start - block * src.bs);
  int copy = 0, valid = 0;
  if (id >= 0 && row0 < src.pages->pool_rows) {
    copy = int(min(int64_t(k_pass), src.pages->pool_rows - row0));
    valid = min(copy, int(src.hi - int64_t(start)));
  }
  pass_rows[j % k_row_ring] = valid;
  const uint32_t bar = full_s + 8 * stage;
  if (valid == 0) {
    mbar::arrive(bar);
    return;
  }
  const uint32_t* src_scales = src.key_scales4 + row0;
  uint32_t* dst_scales = pass_scales + stage * k_pass;
  const int copy4 = copy & ~3;
  for (int i = copy4; i < copy; ++i) dst_scales[i] = src_scales[i];
  mbar::arrive_expect_tx(bar, uint32_t(copy * k_fp4_row_bytes + copy4 * 4));
  mbar::bulk_g2s(k_s + stage * k_fp4_pass_bytes, src.keys8 + row0 * k_fp4_row_bytes,
                 uint32_t(copy * k_fp4_row_bytes), bar);
  if (copy4 > 0) mbar::bulk_g2s(smem_u32(dst_scales), src_scales, uint32_t(copy4 * 4), bar);
}

// The token's query (bf16 or f32 activations) into shared memory for wgmma: the wgmma layout
// (wg) or the swizzled mma.sync one. bf16: cp.async copies the caller commits.
template <bool wg, int threads, typename act_t>
__device__ __forceinline__ void score_stage_query(uint32_t q_s, const act_t* q, int64_t t) {
  if constexpr (sizeof(act_t) == 2) {
#pragma unroll
    for (int i = 0; i < k_heads * k_chunks / threads; ++i) {
      const int x = int(threadIdx.x) + i * threads;
      const int r = x / k_chunks, c = x % k_chunks;
      cp_async_16(q_s + (wg ? q_wg_offset(r, c) : swizzled(r, c)),
                  q + (t * k_heads + r) * k_dim + c * 8, true);
    }
  } else {
#pragma unroll
    for (int i = 0; i < k_heads * k_chunks / threads; ++i) {
      const int x = int(threadIdx.x) + i * threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const uint4 v = load8_bf16(q + (t * k_heads + r) * k_dim + c * 8);
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(
                       q_s + (wg ? q_wg_offset(r, c) : swizzled(r, c))),
                   "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
    }
  }
}

// fmt e4m3: key_pool holds e4m3 bytes [pool_rows, 128] and key_scales one positive f32 per row;
// e2m1: key_pool codes [pool_rows, 64] bytes and key_scales one u32 of E8M0 bytes per row
// (io/indexer_fp4_key.h); bf16: key_pool bf16 [pool_rows, 128] (key_scales unused).
template <typename act_t, int stages, int fmt, int warps>
__global__ void __launch_bounds__(warps* k_warp_size, 2)
    indexer_score_kernel(const act_t* q, const act_t* weights, const void* key_pool,
                         const void* key_scales_raw, paged_entries pages, const int32_t* token_seq,
                         const int32_t* n_visible, int64_t capacity, int64_t keys_per_cta,
                         float q_scale, float* scores, int64_t score_stride, uint32_t* hist,
                         int flags) {
  constexpr bool fp8 = fmt == k_fmt_e4m3;
  constexpr bool wg = fmt == k_fmt_e2m1_wg || fmt == k_fmt_e2m1_wg2;
  constexpr bool split = fmt == k_fmt_e2m1_wg2;
  constexpr bool fp4 = fmt_fp4(fmt);
  // Bulk passes (k_score_flag_bulk; the host sets it only for FP4 keys, block_size % k_pass == 0
  // and 16-byte aligned scales): pass j is pool rows row0 .. row0 + 127 of one block.
  const bool bulk = fp4 && (flags & k_score_flag_bulk) != 0;
  const bool decouple = bulk && (flags & k_score_flag_decouple) != 0;
  const bool quad = (flags & k_score_flag_quad) != 0;
  const bool rotate = bulk && (flags & k_score_flag_rotate) != 0;
  // Warpgroups take turns at the tensor cores (plan.score_pingpong, 8-warp wgmma CTAs): one
  // issues a pass's MMAs while the other widens or runs its epilogue. Named barriers 1 and 2.
  const bool pingpong = wg && !split && warps == 8 && (flags & k_score_flag_pingpong);
  const int wgi = int(threadIdx.x) / (4 * k_warp_size);  // warpgroup
  constexpr int k_score_threads = warps * k_warp_size;
  constexpr int tiles = k_pass / 16 / warps;  // 16-key MMA tiles per warp
  const float* key_scales = static_cast<const float*>(key_scales_raw);
  const uint32_t* key_scales4 = static_cast<const uint32_t*>(key_scales_raw);
  extern __shared__ __align__(1024) unsigned char smem[];  // wgmma: the query's SW128 atoms
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_q_bytes;
  constexpr int pass_bytes = fp8 ? k_fp8_pass_bytes : (fp4 ? k_fp4_pass_bytes : k_pass_bytes);
  uint32_t* hist_s = reinterpret_cast<uint32_t*>(smem + k_q_bytes + stages * pass_bytes);
  int32_t* pass_rows = reinterpret_cast<int32_t*>(hist_s + k_bins);  // [k_row_ring][k_pass]
  // fp8: f32 scales; fp4: u32 of 4 E8M0 bytes.
  float* pass_scales = reinterpret_cast<float*>(pass_rows + k_row_ring * k_pass);
  int32_t* range_blocks = reinterpret_cast<int32_t*>(pass_scales) +
                          (fmt != k_fmt_bf16 ? k_row_ring * k_pass : 0);  // block ids of [lo, hi)
  // Bulk passes: stage s's mbarrier (one arrival, thread 0's, plus the copies' bytes); pass j's
  // count of valid rows in pass_rows[j % k_row_ring]; its scales in pass_scales[stage].
  const uint32_t full_s = smem_u32(range_blocks) + (k_max_range_blocks + 1) / 2 * 8;
  const uint32_t empty_s = full_s + 8 * stages;  // decouple: every thread's arrival per use
  const __nv_bfloat16* keys = static_cast<const __nv_bfloat16*>(key_pool);
  const uint8_t* keys8 = static_cast<const uint8_t*>(key_pool);

  // The collect kernel may be scheduled now: it waits for this grid's completion itself.
  pdl_trigger();
  const int64_t t = blockIdx.y;
  // Both loads in flight together (the block table needs the sequence, not the count).
  const int32_t visible = n_visible[t];
  const int32_t seq = token_seq[t];
  const int64_t n = clamp_visible(visible, capacity);
  const int64_t lo = int64_t(blockIdx.x) * keys_per_cta;
  if (lo >= n) return;
  const int64_t hi = min(lo + keys_per_cta, n);
  const int64_t passes = (hi - lo + k_pass - 1) / k_pass;
  pages.seq = seq;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int64_t block0 = score_range_blocks<k_score_threads>(pages, lo, hi, range_blocks);
  if (bulk && threadIdx.x == 0) score_init_barriers<k_score_threads>(full_s, empty_s, stages);
  __syncthreads();
  // Entry numbers and block sizes are 32-bit here (the host checks the capacity).
  const uint32_t bs = uint32_t(pages.block_size);
  auto compute_rows = [&](int64_t j) {  // thread x: the pool row of key x of pass j, or -1
    const int64_t s = lo + j * k_pass + threadIdx.x;
    int32_t row = -1;
    if (s < hi) {
      const uint32_t block = uint32_t(s) / bs;
      const int32_t id = range_blocks[block - uint32_t(block0)];
      const int64_t r = int64_t(id) * bs + (uint32_t(s) - block * bs);
      if (id >= 0 && r < pages.pool_rows) row = int32_t(r);
    }
    if (threadIdx.x < k_pass) pass_rows[(j % k_row_ring) * k_pass + threadIdx.x] = row;
  };

  auto load_pass = [&](int64_t p, int stage) {
    const int32_t* rows = pass_rows + (p % k_row_ring) * k_pass;
    if constexpr (fp4) {
      // Rows are 64 bytes, unswizzled: a quarter-warp's 16-byte reads (rows g, g + 1, chunks
      // 0..3) cover 128 contiguous bytes.
      constexpr int chunks = k_fp4_row_bytes / 16;
      const int chunk = threadIdx.x % chunks;
      const uint32_t dst = k_s + stage * k_fp4_pass_bytes;
#pragma unroll
      for (int i = 0; i < k_pass * chunks / k_score_threads; ++i) {
        const int r = threadIdx.x / chunks + (k_score_threads / chunks) * i;
        const int32_t row = rows[r];
        cp_async_16(dst + r * k_fp4_row_bytes + chunk * 16,
                    row >= 0 ? keys8 + int64_t(row) * k_fp4_row_bytes + chunk * 16 : keys8,
                    row >= 0);
      }
      const int32_t row = threadIdx.x < k_pass ? rows[threadIdx.x] : -1;
      if (threadIdx.x < k_pass)
        cp_async_4(smem_u32(pass_scales + (p % k_row_ring) * k_pass + threadIdx.x),
                   row >= 0 ? key_scales4 + row : key_scales4, row >= 0);
    } else if constexpr (fp8) {
      constexpr int chunks = k_fp8_row_bytes / 16;
      const int chunk = threadIdx.x % chunks;
      const uint32_t dst = k_s + stage * k_fp8_pass_bytes;
#pragma unroll
      for (int i = 0; i < k_pass * chunks / k_score_threads; ++i) {
        const int r = threadIdx.x / chunks + (k_score_threads / chunks) * i;
        const int32_t row = rows[r];
        cp_async_16(dst + swizzled_fp8(r, chunk),
                    row >= 0 ? keys8 + int64_t(row) * k_dim + chunk * 16 : keys8, row >= 0);
      }
      const int32_t row = threadIdx.x < k_pass ? rows[threadIdx.x] : -1;
      if (threadIdx.x < k_pass)
        cp_async_4(smem_u32(pass_scales + (p % k_row_ring) * k_pass + threadIdx.x),
                   row >= 0 ? key_scales + row : key_scales, row >= 0);
    } else {
      const int chunk = threadIdx.x % k_chunks;
      const uint32_t dst = k_s + stage * k_pass_bytes;
#pragma unroll
      for (int i = 0; i < k_pass * k_chunks / k_score_threads; ++i) {
        const int r = threadIdx.x / k_chunks + (k_score_threads / k_chunks) * i;
        const int32_t row = rows[r];
        cp_async_16(dst + swizzled(r, chunk),
                    row >= 0 ? keys + int64_t(row) * k_dim + chunk * 8 : keys, row >= 0);
      }
    }
  };

  // Bulk pass j into `stage` (thread 0; score_issue_fp4_bulk).
  const fp4_bulk_source bulk_src{&pages, range_blocks, block0, lo, hi, bs, keys8, key_scales4};
  auto issue_bulk = [&](int64_t j, int stage) {
    score_issue_fp4_bulk(bulk_src, j, stage, pass_rows, reinterpret_cast<uint32_t*>(pass_scales),
                         full_s, k_s);
  };

  if (!bulk)
    for (int j = 0; j < stages; ++j)
      if (j < passes) compute_rows(j);
  // The query (the bf16 cp.async copy joins the first commit group below).
  if constexpr (fp8) {
    // 16-byte chunk c of head r holds MMA k indices 8 c .. 8 c + 7 (k-step c / 2): four pairs of
    // adjacent dimensions in the permuted order.
#pragma unroll 2
    for (int i = 0; i < k_heads * k_chunks / k_score_threads; ++i) {
      const int x = int(threadIdx.x) + i * k_score_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const act_t* src = q + (t * k_heads + r) * k_dim;
      uint32_t v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int dim = k_fp8_dim(c / 2, (c % 2) * 8 + 2 * u);
        if constexpr (sizeof(act_t) == 2)
          v[u] = *reinterpret_cast<const uint32_t*>(src + dim);
        else
          v[u] = pack_bf16x2(float(src[dim]), float(src[dim + 1]));
      }
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(q_s + swizzled(r, c)),
                   "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]));
    }
  } else {
    score_stage_query<wg, k_score_threads>(q_s, q, t);
  }
  if (bulk) {
    // Passes 0 .. stages - 2 in flight while the query lands (one group); wgmma reads it through
    // the async proxy.
    if (threadIdx.x == 0)
      for (int j = 0; j < stages - 1; ++j)
        if (j < passes) issue_bulk(j, j);
    cp_async_commit();
    cp_async_wait<0>();
    wgmma::fence_async_smem();
  } else {
    __syncthreads();  // rows of passes 0 .. stages - 1, the f32 path's query
    // Passes 0 .. stages - 2 in flight, one commit group each (the q copy joins group 0); empty
    // groups keep the count uniform.
#pragma unroll
    for (int j = 0; j < stages - 1; ++j) {
      if (j < passes) load_pass(j, j);
      cp_async_commit();
    }
  }
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads) hist_s[b] = 0;
  float w[8][2];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      w[nt][e] = act_to_f32(weights[t * k_heads + nt * 8 + 2 * (lane % 4) + e]);

  if (pingpong && wgi == 1) mbar::named_arrive(1, 2 * 128);  // warpgroup 0 goes first
  for (int64_t p = 0; p < passes; ++p) {
    const int stage = int(p % stages);
    const uint32_t kb = k_s + stage * pass_bytes;
    if (bulk) {
      // Pass p - 1 consumed by all (its stage free); the query and hist_s's zeros visible.
      if (!decouple || p == 0) __syncthreads();
      // Pass p + stages - 1 goes into the stage of pass p - 1 (pass_rows slot (p + stages - 1) %
      // 8, last read by the epilogue of pass p + stages - 9, which every thread finished before
      // it released pass p - 1's stage). The issuing thread: thread 0, or (plan.score_rotate)
      // lane 0 of warp p % warps, so the issue work (block lookup, division, copies, the wait for
      // the stage's release) does not make one warp the CTA's straggler.
      const int issuer = rotate ? int(p % warps) * k_warp_size : 0;
      if (int(threadIdx.x) == issuer && p + stages - 1 < passes) {
        if (decouple && p > 0)
          mbar::wait(empty_s + 8 * uint32_t((p - 1) % stages), uint32_t((p - 1) / stages) & 1u);
        issue_bulk(p + stages - 1, int((p + stages - 1) % stages));
      }
      mbar::wait(full_s + 8 * stage, uint32_t(p / stages) & 1u);  // pass p landed
    } else {
      cp_async_wait<stages - 2>();  // groups 0 .. p complete (p + stages - 1 committed)
      // wgmma reads the query through the async proxy: this thread's copies (group 0) visible.
      if constexpr (wg)
        if (p == 0) wgmma::fence_async_smem();
      __syncthreads();  // pass p landed for all; pass p - 1 consumed by all
      // Pass p + stages - 1 goes into the stage of pass p - 1.
      if (p + stages - 1 < passes) load_pass(p + stages - 1, int((p + stages - 1) % stages));
      cp_async_commit();
      // Slot (p + stages) % 8 was last read by pass p + stages - 8 <= p - 4 (its load and its
      // epilogue), before the barrier above.
      if (p + stages < passes) compute_rows(p + stages);
    }

    float acc[tiles][8][4];
#pragma unroll
    for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
        acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
    // FP8: lane (g, t) = (lane / 4, lane % 4) holds bytes 32 t .. +31 of rows g
    // and g + 8 of each 16-row tile: 8 k-steps x 4 bytes (see k_fp8_dim).
    uint4 raw[tiles][2][2];  // [mt][row g / g + 8][16-byte half]
    // FP4: lane (g, t) reads bytes 16 t .. +15 of rows g and g + 8 (word w: k-steps 2 w, 2 w + 1)
    // and the rows' scales as bf16x2 multipliers per 32-dim block w.
    uint4 raw4[tiles][2];
    uint32_t scale2[tiles][2][4];
    uint32_t sbytes[tiles][2];  // the rows' four E8M0 bytes
    if constexpr (fp4) {
      const uint32_t* ring = reinterpret_cast<const uint32_t*>(pass_scales) +
                             (bulk ? stage : int(p % k_row_ring)) * k_pass;
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = (warp * tiles + mt) * 16 + h * 8 + lane / 4;
          uint4 v;
          asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                       : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                       : "r"(kb + r * k_fp4_row_bytes + (lane % 4) * 16));
          raw4[mt][h] = v;
          const uint32_t bytes = ring[r];
          sbytes[mt][h] = bytes;
          if constexpr (!wg) {
#pragma unroll
            for (int w = 0; w < 4; ++w)
              scale2[mt][h][w] = ((bytes >> (8 * w)) & 0xffu) * 0x00800080u;
          }
        }
      // The stage's codes and scales are in registers: release it (its refill may start).
      if (decouple) mbar::arrive(empty_s + 8 * stage);
    }
    if constexpr (fp8) {
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = (warp * tiles + mt) * 16 + h * 8 + lane / 4;
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(kb + swizzled_fp8(r, 2 * (lane % 4) + half)));
            raw[mt][h][half] = v;
          }
        }
    }
    if constexpr (!wg) {
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk) {
        uint32_t a[tiles][4];
        if constexpr (fp4) {
#pragma unroll
          for (int mt = 0; mt < tiles; ++mt) {
            const uint4& r0 = raw4[mt][0];
            const uint4& r1 = raw4[mt][1];
            const int w = kk / 2;
            const uint32_t w0 = w == 0 ? r0.x : w == 1 ? r0.y : w == 2 ? r0.z : r0.w;
            const uint32_t w1 = w == 0 ? r1.x : w == 1 ? r1.y : w == 2 ? r1.z : r1.w;
            // Pairs 2 (kk % 2) (dims 16 kk + 2 t, + 1) and 2 (kk % 2) + 1 (dims + 8, + 9).
            if (kk % 2 == 0) {
              a[mt][0] = e2m1x2_to_bf16x2<0>(w0, scale2[mt][0][w]);
              a[mt][1] = e2m1x2_to_bf16x2<0>(w1, scale2[mt][1][w]);
              a[mt][2] = e2m1x2_to_bf16x2<1>(w0, scale2[mt][0][w]);
              a[mt][3] = e2m1x2_to_bf16x2<1>(w1, scale2[mt][1][w]);
            } else {
              a[mt][0] = e2m1x2_to_bf16x2<2>(w0, scale2[mt][0][w]);
              a[mt][1] = e2m1x2_to_bf16x2<2>(w1, scale2[mt][1][w]);
              a[mt][2] = e2m1x2_to_bf16x2<3>(w0, scale2[mt][0][w]);
              a[mt][3] = e2m1x2_to_bf16x2<3>(w1, scale2[mt][1][w]);
            }
          }
        } else if constexpr (fp8) {
#pragma unroll
          for (int mt = 0; mt < tiles; ++mt) {
            const uint4& r0 = raw[mt][0][kk / 4];
            const uint4& r1 = raw[mt][1][kk / 4];
            const uint32_t w0 = kk % 4 == 0 ? r0.x : kk % 4 == 1 ? r0.y : kk % 4 == 2 ? r0.z : r0.w;
            const uint32_t w1 = kk % 4 == 0 ? r1.x : kk % 4 == 1 ? r1.y : kk % 4 == 2 ? r1.z : r1.w;
            a[mt][0] = e4m3x2_to_bf16x2(w0);        // row g, k 2t, 2t + 1
            a[mt][1] = e4m3x2_to_bf16x2(w1);        // row g + 8
            a[mt][2] = e4m3x2_to_bf16x2(w0 >> 16);  // row g, k 2t + 8, 2t + 9
            a[mt][3] = e4m3x2_to_bf16x2(w1 >> 16);  // row g + 8
          }
        } else {
#pragma unroll
          for (int mt = 0; mt < tiles; ++mt)
            ldmatrix_x4(a[mt],
                        kb + swizzled((warp * tiles + mt) * 16 + (lane % 8) + ((lane / 8) & 1) * 8,
                                      kk * 2 + lane / 16));
        }
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          uint32_t b[4];
          ldmatrix_x4(
              b, q_s + swizzled(np * 16 + (lane / 16) * 8 + lane % 8, kk * 2 + ((lane / 8) & 1)));
#pragma unroll
          for (int mt = 0; mt < tiles; ++mt) {
            mma_bf16_16816(acc[mt][2 * np], a[mt], b[0], b[1]);
            mma_bf16_16816(acc[mt][2 * np + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
    // wgmma: the A fragments of every k-step (kept live until the wgmmas complete), one fence,
    // the 8 wgmmas (one commit group) and a wait; split: k-steps 0..3 issued before 4..7 are
    // widened.
    uint32_t a_wg[wg ? k_dim / 16 : 1][tiles][4];
    if constexpr (wg) {
      // Scale bytes b <= 128 in all the warp's rows: one product per widened pair (b >= 129 is a
      // block amax of 12 or more; uniform per warp).
      uint32_t big = 0;
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t b = sbytes[mt][h];  // byte >= 129: bit 7 and a nonzero low 7 bits
          big |= b & ((b & 0x7f7f7f7fu) + 0x7f7f7f7fu) & 0x80808080u;
        }
      const bool one = __all_sync(0xffffffffu, big == 0);
      uint32_t m[tiles][2][4];
      const auto multipliers = [&](bool one_product) {
#pragma unroll
        for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int w = 0; w < 4; ++w) {
              const uint32_t b = (sbytes[mt][h] >> (8 * w)) & 0xffu;
              // 2^(b - 1): exponent field b + 126; else 2^(b - 127): field b.
              m[mt][h][w] = b * 0x00800080u + (one_product ? 0x3F003F00u : 0u);
            }
      };
      multipliers(one);
      const auto issue = [&](auto kk0_c) {
        constexpr int kk0 = decltype(kk0_c)::value;
        constexpr int kk1 = split ? kk0 + 4 : k_dim / 16;
#pragma unroll
        for (int kk = kk0; kk < kk1; ++kk)
#pragma unroll
          for (int mt = 0; mt < tiles; ++mt)
            // k-step kk: dims 16 kk .., 32 bytes into the rows of the query's block kk / 4.
            wgmma_rs_n64(reinterpret_cast<float(&)[32]>(acc[mt]), a_wg[kk][mt],
                         wgmma::sw128_desc(
                             q_s + uint32_t((kk / 4) * (k_heads * 128) + (kk % 4) * 32), 16, 1024));
        wgmma::commit();
      };
      constexpr int first_end = split ? 4 : k_dim / 16;
      if (one)
        widen_fp4_steps<true, 0, first_end>(a_wg, raw4, m);
      else
        widen_fp4_steps<false, 0, first_end>(a_wg, raw4, m);
      // pingpong: wait for this warpgroup's turn (the other one has issued its MMAs of the
      // previous pass, or, for warpgroup 0's first pass, arrived once up front).
      if (pingpong) mbar::named_sync(1 + wgi, 2 * 128);
      wgmma::fence();  // acc zeroed and the A fragments written by this thread
      issue(std::integral_constant<int, 0>{});
      // pingpong: the other warpgroup's turn (warpgroup 1 leaves its last turn unpassed, so
      // every barrier completes as often as it is waited on).
      if (pingpong && (wgi == 0 || p + 1 < passes)) mbar::named_arrive(2 - wgi, 2 * 128);
      if constexpr (split) {
        if (one)
          widen_fp4_steps<true, 4, 8>(a_wg, raw4, m);
        else
          widen_fp4_steps<false, 4, 8>(a_wg, raw4, m);
        wgmma::fence();  // the second half's A fragments
        issue(std::integral_constant<int, 4>{});
      }
      wgmma::wait<0>();
      // The A registers stay untouched until the wgmmas have read them; the accumulators are
      // not read before the wait.
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk)
#pragma unroll
        for (int mt = 0; mt < tiles; ++mt)
          asm volatile("" ::"r"(a_wg[kk][mt][0]), "r"(a_wg[kk][mt][1]), "r"(a_wg[kk][mt][2]),
                       "r"(a_wg[kk][mt][3])
                       : "memory");
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) wgmma::reg_fence(acc[mt][nt][e]);
    }
    // Stores pass p's score of tile mt, half `half` (row g + 8 half of the lane's quad): scales,
    // -inf for rows without a key, the histogram.
    const auto store_score = [&](int mt, int half, float sc) {
      const int r = (warp * tiles + mt) * 16 + half * 8 + lane / 4;
      const int64_t s = lo + p * k_pass + r;
      if (s < hi) {
        // + 0.0f: a sum of -0 terms is +0 on the CPU (its accumulator starts at +0).
        float v = -INFINITY;
        if (bulk ? r < pass_rows[p % k_row_ring] : pass_rows[(p % k_row_ring) * k_pass + r] >= 0) {
          // The key's scale after the ReLU: relu(s x) = s relu(x) for s > 0.
          if constexpr (fp8) sc *= pass_scales[(p % k_row_ring) * k_pass + r];
          v = sc * q_scale + 0.0f;
        }
        scores[t * score_stride + s] = v;
        atomicAdd(&hist_s[ordered_float_bits(v) >> 20], 1u);
      }
    };
    if (quad) {
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt) {
        float h0 = 0.0f, h1 = 0.0f;  // the lane's partial sums of rows g and g + 8
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            h0 += w[nt][e] * fmaxf(acc[mt][nt][e], 0.0f);
            h1 += w[nt][e] * fmaxf(acc[mt][nt][2 + e], 0.0f);
          }
        const bool odd = (lane & 1) != 0;  // keeps half 1, hands half 0 to its even partner
        float mine = odd ? h1 : h0;
        mine += __shfl_xor_sync(0xffffffffu, odd ? h0 : h1, 1);
        mine += __shfl_xor_sync(0xffffffffu, mine, 2);
        if ((lane & 2) == 0) store_score(mt, lane & 1, mine);
      }
    } else {
#pragma unroll
      for (int mt = 0; mt < tiles; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float sc = 0.0f;
#pragma unroll
          for (int nt = 0; nt < 8; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) sc += w[nt][e] * fmaxf(acc[mt][nt][2 * half + e], 0.0f);
          sc += __shfl_xor_sync(0xffffffffu, sc, 1);
          sc += __shfl_xor_sync(0xffffffffu, sc, 2);
          if (lane % 4 == 0) store_score(mt, half, sc);
        }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // Launched as a programmatic dependent of the zeroing kernel (plan.zero_kernel): its zeros of
  // the histogram first (a no-op otherwise).
  pdl_wait();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads)
    if (hist_s[b]) atomicAdd(&hist[t * k_bins + b], hist_s[b]);
}

// plan.score_list: snapshot reads of the coarse histogram before the listing proceeds with a thin
// one (plan.list_once: one), k_list_sleep_ns apart.
constexpr int k_list_tries = 24;
constexpr unsigned k_list_sleep_ns = 256;
// plan.list_direct: the select ranks the listed keys in or above the threshold bin directly when
// there are at most this many (each CTA's share against all of them), else resolves 12 more bits.
constexpr int k_list_direct_max = 4096;
// plan.list_rank: the select ranks the whole list (no histogram) when it holds at most this many.
constexpr int k_list_rank_max = 4096;
// plan.score_list: the score CTA lists its own keys (entries [lo, hi) of the token's scores, this
// CTA's writes) that may be among the token's top k, so that no collect launch is needed. After
// the CTA's histogram flush it adds its 256 coarse bins (top 8 key bits: 16 fine bins each) to the
// token's coarse histogram and reads back a snapshot of the coarse histogram, then the 16 fine
// bins of the coarse bin where the snapshot's count from the top reaches k. Every snapshot count is
// a count of real keys (other CTAs' flushes land in any order, so each bin may miss some, never
// over-count), hence the bin found, L, is at or below the token's true threshold bin, and the keys
// with top 12 bits >= L include every key of this CTA at or above the threshold. They are appended
// to the token's candidate list (bounded: the count runs on past the capacity so the select sees
// an overflow and rescans the scores). A snapshot holding fewer than half the token's keys gives a
// loose L (the first CTAs to finish would list ~k keys each), so the CTA re-reads it after a short
// sleep while it is that thin (bounded tries: the CTA never depends on others making progress,
// only the list's length does). `scratch` >= 36 words of shared memory.
template <int threads>
__device__ __noinline__ void score_list_keys(const uint32_t* hist_s, uint32_t* scratch,
                                             const float* sc, int64_t lo, int64_t hi, int64_t n,
                                             uint32_t k, const uint32_t* hist, uint32_t* coarse,
                                             uint32_t* count, unsigned long long* list,
                                             int tries_max) {
  static_assert(threads == k_bins / 16, "one coarse bin per thread");
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  // This CTA's coarse bin threadIdx.x (rotated reads: 2-way bank conflicts instead of 16).
  uint32_t mine = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) mine += hist_s[16 * threadIdx.x + ((j + threadIdx.x) & 15)];
  if (mine) atomicAdd(&coarse[threadIdx.x], mine);
  // The CTA's first scores requested now (the rest, if any, in the listing loop).
  constexpr int pre = 4;
  float v[pre];
#pragma unroll
  for (int u = 0; u < pre; ++u) {
    const int64_t e = lo + threadIdx.x + u * threads;
    v[u] = e < hi ? sc[e] : -INFINITY;
  }
  uint32_t* res = scratch + 32;  // [0] total, [1] coarse bin, [2] keys above it, [3] fine bin L
  const uint32_t target = uint32_t((n + 1) / 2);
  for (int tries = 0;; ++tries) {
    if (threadIdx.x == 0) res[1] = res[2] = 0;
    // Thread i holds coarse bin 255 - i: the exclusive scan counts the keys in higher bins.
    uint32_t c;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                 : "=r"(c)
                 : "l"(coarse + (threads - 1 - threadIdx.x)));
    const uint32_t before = block_exclusive_scan(c, scratch);
    if (threadIdx.x == threads - 1) res[0] = before + c;
    if (before < k && before + c >= k) {
      res[1] = uint32_t(threads - 1 - threadIdx.x);
      res[2] = before;
    }
    __syncthreads();
    if (res[0] >= target || tries + 1 >= tries_max) break;
    __nanosleep(k_list_sleep_ns);
  }
  trace_stamp(k_trace_score, 3);
  if (warp == 0) {
    const uint32_t total = res[0], cb = res[1], above = res[2];
    uint32_t fine = 16 * cb;  // fewer than k keys in the snapshot: cb = 0, every key listed
    if (total >= k) {
      uint32_t f = 0;
      if (lane < 16)
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                     : "=r"(f)
                     : "l"(hist + 16 * cb + 15 - lane));
#pragma unroll
      for (int o = 1; o < 16; o *= 2) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, f, o);
        if (lane >= o) f += y;
      }
      // (The fine bins were read after the coarse ones: if they hold fewer keys, cb's lowest.)
      const unsigned hit = __ballot_sync(0xffffffffu, lane < 16 && above + f >= k);
      if (hit) fine = 16 * cb + 15 - uint32_t(__ffs(hit) - 1);
    }
    if (lane == 0) res[3] = fine;
  }
  __syncthreads();
  const uint32_t fine = res[3];
  for (int64_t base = lo; base < hi; base += pre * threads) {
#pragma unroll
    for (int u = 0; u < pre; ++u) {
      const int64_t e = base + threadIdx.x + u * threads;
      const float x = base == lo ? v[u] : (e < hi ? sc[e] : -INFINITY);
      const unsigned long long key = entry_key(x, e);
      warp_append_bounded(e < hi && key_bin(key) >= fine, key, count, list,
                          uint32_t(k_candidate_capacity));
    }
  }
  trace_stamp(k_trace_score, 4);
}

// plan.score_three: FP4 bulk decoupled passes, 8 warps, three CTAs per SM (24 warps per SM to
// hide the per-pass latency chain; 16 with two). The register-A wgmma path with its A fragments
// widened one k-step ahead of the MMAs (8 live A registers instead of 32) so that the kernel fits
// 80 registers, and three key stages so that three CTAs fit the shared memory.
// With `list` (plan.score_list) each CTA then lists its candidates (score_list_keys).
constexpr int score_three_smem_bytes(int stages) {
  return k_q_bytes + stages * k_fp4_pass_bytes + k_bins * 4 + k_row_ring * 4 + stages * k_pass * 4 +
         (k_max_range_blocks + 1) / 2 * 8 + stages * 16 + 8 * 4 * 8;
}
static_assert(3 * (score_three_smem_bytes(k_stages_fp4_three) + 1024) <= 228 * 1024,
              "three CTAs per SM");
template <typename act_t, int stages, bool list = false>
__global__ void __launch_bounds__(256, 3)
    indexer_score_three_kernel(const act_t* q, const act_t* weights, const void* key_pool,
                               const void* key_scales_raw, paged_entries pages,
                               const int32_t* token_seq, const int32_t* n_visible, int64_t capacity,
                               int64_t keys_per_cta, float q_scale, float* scores,
                               int64_t score_stride, uint32_t* hist, int flags, token_state* state,
                               uint32_t* coarse, unsigned long long* cand_list, int top_k) {
  constexpr int warps = 8;
  constexpr bool w_smem = true;  // the weights in shared memory (16 registers)
  constexpr int k_score_threads = warps * k_warp_size;
  const bool rotate = (flags & k_score_flag_rotate) != 0;
  const uint32_t* key_scales4 = static_cast<const uint32_t*>(key_scales_raw);
  const uint8_t* keys8 = static_cast<const uint8_t*>(key_pool);
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_q_bytes;
  uint32_t* hist_s = reinterpret_cast<uint32_t*>(smem + k_q_bytes + stages * k_fp4_pass_bytes);
  int32_t* pass_rows = reinterpret_cast<int32_t*>(hist_s + k_bins);  // [k_row_ring] counts
  uint32_t* pass_scales = reinterpret_cast<uint32_t*>(pass_rows + k_row_ring);  // [stages][k_pass]
  int32_t* range_blocks = reinterpret_cast<int32_t*>(pass_scales + stages * k_pass);
  const uint32_t full_s = smem_u32(range_blocks) + (k_max_range_blocks + 1) / 2 * 8;
  const uint32_t empty_s = full_s + 8 * stages;
  // w_smem: lane quad t's weight pair of n-tile nt at w_pairs[nt * 4 + t].
  float2* w_pairs =
      reinterpret_cast<float2*>(range_blocks + (k_max_range_blocks + 1) / 2 * 2 + 4 * stages);

  pdl_trigger();
  trace_stamp(k_trace_score, 0);
  const int64_t t = blockIdx.y;
  const int32_t visible = n_visible[t];
  const int32_t seq = token_seq[t];
  const int64_t n = clamp_visible(visible, capacity);
  const int64_t lo = int64_t(blockIdx.x) * keys_per_cta;
  if (lo >= n) return;
  const int64_t hi = min(lo + keys_per_cta, n);
  const int64_t passes = (hi - lo + k_pass - 1) / k_pass;
  pages.seq = seq;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int64_t block0 = score_range_blocks<k_score_threads>(pages, lo, hi, range_blocks);
  if (threadIdx.x == 0) score_init_barriers<k_score_threads>(full_s, empty_s, stages);
  __syncthreads();
  const uint32_t bs = uint32_t(pages.block_size);
  const fp4_bulk_source bulk_src{&pages, range_blocks, block0, lo, hi, bs, keys8, key_scales4};
  auto issue_bulk = [&](int64_t j, int stage) {
    score_issue_fp4_bulk(bulk_src, j, stage, pass_rows, pass_scales, full_s, k_s);
  };
  score_stage_query<true, k_score_threads>(q_s, q, t);
  if (threadIdx.x == 0)
    for (int j = 0; j < stages - 1; ++j)
      if (j < passes) issue_bulk(j, j);
  cp_async_commit();
  cp_async_wait<0>();
  wgmma::fence_async_smem();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads) hist_s[b] = 0;
  float w[8][2];
  if constexpr (w_smem) {
    if (threadIdx.x < 32) {
      const int nt = int(threadIdx.x) / 4, tq = int(threadIdx.x) % 4;
      w_pairs[threadIdx.x] = make_float2(act_to_f32(weights[t * k_heads + nt * 8 + 2 * tq]),
                                         act_to_f32(weights[t * k_heads + nt * 8 + 2 * tq + 1]));
    }
  } else {
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        w[nt][e] = act_to_f32(weights[t * k_heads + nt * 8 + 2 * (lane % 4) + e]);
  }
  __syncthreads();  // the query, hist_s's zeros (and w_pairs)

  // Pass j's codes: issue pass j + stages - 1 (into the stage of pass j - 1, once every thread
  // released it; its count slot was last read by the epilogue of pass j + stages - 9, which every
  // thread finished before releasing pass j - 1), wait for pass j, read this lane's rows g, g + 8
  // of its warp (16 code bytes each) and their scale words, release the stage.
  uint4 raw4[2];
  uint32_t sbytes[2];
  uint32_t wg_big = 0;  // scale bytes >= 129 among the 64 rows of this warp's warpgroup
  auto load_pass = [&](int64_t j) {
    const int issuer = rotate ? int(j % warps) * k_warp_size : 0;
    if (int(threadIdx.x) == issuer && j + stages - 1 < passes) {
      if (j > 0)
        mbar::wait(empty_s + 8 * uint32_t((j - 1) % stages), uint32_t((j - 1) / stages) & 1u);
      issue_bulk(j + stages - 1, int((j + stages - 1) % stages));
    }
    const int stage = int(j % stages);
    mbar::wait(full_s + 8 * stage, uint32_t(j / stages) & 1u);
    const uint32_t kb = k_s + stage * k_fp4_pass_bytes;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + h * 8 + lane / 4;
      uint4 v;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                   : "r"(kb + r * k_fp4_row_bytes + (lane % 4) * 16));
      raw4[h] = v;
      sbytes[h] = pass_scales[stage * k_pass + r];
    }
    wg_big = 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t b = pass_scales[stage * k_pass + (warp / 4) * 64 + h * 32 + lane];
      wg_big |= b & ((b & 0x7f7f7f7fu) + 0x7f7f7f7fu) & 0x80808080u;
    }
    mbar::arrive(empty_s + 8 * stage);
  };
  // Pass p's MMAs, one k-step per commit group: k-step kk's A fragment widened into a[kk % 2]
  // once k-step kk - 2's wgmma completed (wait<1>), so 8 A registers are live instead of 32 and
  // the widening of kk + 1 overlaps the MMA of kk. The same fragments, products and K order as
  // k_fmt_e2m1_wg, so the same scores bit for bit.
  auto mma_pass = [&](float(&acc)[32]) {
    // Uniform over the warpgroup, not only the warp (every warp of it votes on the same 64 scale
    // words): the two branches below are separate wgmma instruction sites, each with its own A
    // registers, and the four warps of a warpgroup must issue the same wgmma (.sync.aligned). A
    // per-warp vote let the warps of one warpgroup diverge when only some of their rows had scale
    // bytes >= 129; the scores were right only while ptxas gave both branches the same A
    // registers (session 11: a 72-register build did not; the wide-scale parity cases failed).
    const bool one = !__any_sync(0xffffffffu, wg_big != 0);
    const uint32_t add = one ? 0x3F003F00u : 0u;
    const auto run = [&](auto one_c) {
      constexpr bool o = decltype(one_c)::value;
      uint32_t a[2][4];
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk) {
        const int k = kk / 2;
        const uint32_t w0 = k == 0   ? raw4[0].x
                            : k == 1 ? raw4[0].y
                            : k == 2 ? raw4[0].z
                                     : raw4[0].w;
        const uint32_t w1 = k == 0   ? raw4[1].x
                            : k == 1 ? raw4[1].y
                            : k == 2 ? raw4[1].z
                                     : raw4[1].w;
        const uint32_t m0 = ((sbytes[0] >> (8 * k)) & 0xffu) * 0x00800080u + add;
        const uint32_t m1 = ((sbytes[1] >> (8 * k)) & 0xffu) * 0x00800080u + add;
        if (kk >= 2) wgmma::wait<1>();  // k-step kk - 2 done: a[kk % 2] free
        uint32_t(&f)[4] = a[kk % 2];
        if (kk % 2 == 0) {
          f[0] = e2m1x2_widen<0, o>(w0, m0);
          f[1] = e2m1x2_widen<0, o>(w1, m1);
          f[2] = e2m1x2_widen<1, o>(w0, m0);
          f[3] = e2m1x2_widen<1, o>(w1, m1);
        } else {
          f[0] = e2m1x2_widen<2, o>(w0, m0);
          f[1] = e2m1x2_widen<2, o>(w1, m1);
          f[2] = e2m1x2_widen<3, o>(w0, m0);
          f[3] = e2m1x2_widen<3, o>(w1, m1);
        }
        wgmma::fence();
        const uint64_t db =
            wgmma::sw128_desc(q_s + uint32_t((kk / 4) * (k_heads * 128) + (kk % 4) * 32), 16, 1024);
        if (kk == 0)
          wgmma_rs_n64_first(acc, f, db);
        else
          wgmma_rs_n64(acc, f, db);
        wgmma::commit();
      }
      wgmma::wait<0>();
#pragma unroll
      for (int i = 0; i < 2; ++i)
        asm volatile("" ::"r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]) : "memory");
    };
    if (one)
      run(std::true_type{});
    else
      run(std::false_type{});
#pragma unroll
    for (int i = 0; i < 32; ++i) wgmma::reg_fence(acc[i]);
  };
  // indexer_score_kernel's quad epilogue of pass pp (the same sums in the same order).
  auto epilogue = [&](const float(&acc)[32], int64_t pp) {
    float h0 = 0.0f, h1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      float wt[2];
      if constexpr (w_smem) {
        const float2 v = w_pairs[nt * 4 + lane % 4];
        wt[0] = v.x;
        wt[1] = v.y;
      } else {
        wt[0] = w[nt][0];
        wt[1] = w[nt][1];
      }
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        h0 += wt[e] * fmaxf(acc[4 * nt + e], 0.0f);
        h1 += wt[e] * fmaxf(acc[4 * nt + 2 + e], 0.0f);
      }
    }
    const bool odd = (lane & 1) != 0;
    float mine = odd ? h1 : h0;
    mine += __shfl_xor_sync(0xffffffffu, odd ? h0 : h1, 1);
    mine += __shfl_xor_sync(0xffffffffu, mine, 2);
    if ((lane & 2) == 0) {
      const int r = warp * 16 + (lane & 1) * 8 + lane / 4;
      const int64_t s = lo + pp * k_pass + r;
      if (s < hi) {
        float v = -INFINITY;
        if (r < pass_rows[pp % k_row_ring]) v = mine * q_scale + 0.0f;
        scores[t * score_stride + s] = v;
        atomicAdd(&hist_s[ordered_float_bits(v) >> 20], 1u);
      }
    }
  };
  float acc[32];
  for (int64_t p = 0; p < passes; ++p) {
    load_pass(p);
    mma_pass(acc);
    epilogue(acc, p);
  }
  trace_stamp(k_trace_score, 1);
  trace_value(k_trace_score, 5, uint64_t(passes));
  trace_value(k_trace_score, 6, smid());
  __syncthreads();
  pdl_wait();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads)
    if (hist_s[b]) atomicAdd(&hist[t * k_bins + b], hist_s[b]);
  if constexpr (list) {
    if (n > top_k)  // (n <= top_k: the select takes every entry)
      score_list_keys<k_score_threads>(hist_s, pass_scales, scores + t * score_stride, lo, hi, n,
                                       uint32_t(top_k), hist + t * k_bins, coarse + t * k_bins,
                                       &state[t].cand_count, cand_list + t * k_candidate_capacity,
                                       (flags & k_score_flag_list_once) != 0 ? 1 : k_list_tries);
  }
  trace_stamp(k_trace_score, 2);
}

// Zeroes n16 16-byte words (the per-token state and histograms) and lets its programmatic
// dependent (the score kernel) start at once: the scores overlap it, and only their histogram
// flush waits for it.
__global__ void __launch_bounds__(256) indexer_zero_kernel(uint4* p, int64_t n16) {
  pdl_trigger();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n16;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = make_uint4(0, 0, 0, 0);
}

// The chunk blockIdx.x of token blockIdx.y (n > top_k visible entries): finds the token's
// threshold bin from its histogram, lists the chunk's keys at or above it (warp-aggregated
// atomics) and histograms the next 12 bits of the keys inside the bin (`sub`: k_bins words of
// shared memory, scan_*: 32 and 2). Nothing is listed when the bin is too full: the select then
// resolves more bits itself. The first chunk's CTA records the threshold in `state`.
__device__ __forceinline__ void collect_chunk(uint32_t* sub, uint32_t* scan_scratch,
                                              uint32_t* scan_result, const float* scores,
                                              int64_t score_stride, const uint32_t* hist, int64_t n,
                                              int top_k, int64_t collect_keys, token_state* state,
                                              uint32_t* hist2, unsigned long long* cand_list,
                                              bool lean) {
  const int64_t t = blockIdx.y;
  const int64_t lo = int64_t(blockIdx.x) * collect_keys;
  const int64_t hi = min(lo + collect_keys, n);
  const float* sc = scores + t * score_stride;
  float v[k_collect_unroll];
  const auto load_scores = [&](int64_t base) {
#pragma unroll
    for (int u = 0; u < k_collect_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_collect_threads;
      v[u] = s < hi ? __ldcg(sc + s) : -INFINITY;
    }
  };
  // plan.lean_select: the first round's scores requested with the histogram (one round trip
  // instead of two before the first keys are listed).
  if (lean) load_scores(lo);
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads)
    sub[b] = __ldcg(&hist[t * k_bins + b]);
  __syncthreads();
  const uint2 th = find_threshold(sub, k_bins, uint32_t(top_k), scan_scratch, scan_result);
  trace_stamp(k_trace_collect, 2);
  const uint32_t bin = th.x, in_bin = sub[th.x];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    state[t].bin = bin;
    state[t].above = th.y;
    state[t].in_bin = in_bin;
  }
  if (in_bin > k_max_candidates) return;  // (uniform over the token)
  __syncthreads();                        // every thread has read sub[th.x]
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads) sub[b] = 0;
  __syncthreads();
  unsigned long long* list = cand_list + t * k_candidate_capacity;
  for (int64_t base = lo; base < hi; base += k_collect_threads * k_collect_unroll) {
    if (!lean || base != lo) load_scores(base);
#pragma unroll
    for (int u = 0; u < k_collect_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_collect_threads;
      const unsigned long long key = entry_key(v[u], s);
      const uint32_t top = key_bin(key);
      const bool take = s < hi && top >= bin;
      if (s < hi && top == bin) atomicAdd(&sub[key_sub_bin(key)], 1u);
      warp_append(take, key, &state[t].cand_count, list);
    }
  }
  trace_stamp(k_trace_collect, 3);
  __syncthreads();
  for (int b = threadIdx.x; b < k_bins; b += k_collect_threads)
    if (sub[b]) atomicAdd(&hist2[t * k_bins + b], sub[b]);
  trace_stamp(k_trace_collect, 4);
}

// The selection of token t by one CTA of k_select_threads over its k_select_smem bytes of shared
// memory, after every collect CTA of the token is done.
// `given` (plan.score_list, no collect launch): the threshold bin, the keys above it and in it
// (given[0..2]) come from the caller, and the keys are collected by a scan of the scores (the
// candidate list is not the collect's).
__device__ __forceinline__ void select_token(unsigned char* smem, const float* scores,
                                             int64_t score_stride, const token_state* state,
                                             const uint32_t* hist2, paged_entries pages,
                                             const int32_t* token_seq, const int32_t* n_visible,
                                             int64_t capacity, int top_k,
                                             const unsigned long long* cand_list, int32_t* out,
                                             int64_t t, const uint32_t* given = nullptr) {
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);  // k_bins
  uint32_t* scratch = counts + k_bins;                   // k_select_threads
  unsigned long long* sel = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* cand = sel + k_indexer_fast_max_top_k;  // k_max_candidates
  unsigned long long* sort_buf = cand;  // 2 x k_select_threads, once cand is consumed
  __shared__ uint32_t n_sel, n_cand, result[2];

  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int keep = int(top_k < n ? int64_t(top_k) : n);
  pages.seq = token_seq[t];
  const float* sc = scores + t * score_stride;
  if (threadIdx.x == 0) n_sel = n_cand = 0;
  __syncthreads();

  if (keep > 0 && n <= top_k) {  // every visible entry is selected
    for (int64_t s = threadIdx.x; s < n; s += k_select_threads) sel[s] = entry_key(sc[s], s);
  } else if (keep > 0) {
    const uint32_t bin = given ? given[0] : __ldcg(&state[t].bin);
    uint32_t above = given ? given[1] : __ldcg(&state[t].above);
    uint32_t in_bin = given ? given[2] : __ldcg(&state[t].in_bin);
    if (in_bin <= k_max_candidates && !given) {
      // The collect kernel listed the keys at or above the bin and histogrammed
      // the bin's keys on their next 12 bits: the 24-bit threshold prefix, then
      // one pass over the list.
      for (int b = threadIdx.x; b < k_bins; b += k_select_threads)
        counts[b] = __ldcg(&hist2[t * k_bins + b]);
      __syncthreads();
      const uint2 th = find_threshold(counts, k_bins, uint32_t(keep) - above, scratch, result);
      const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th.x;
      const uint32_t listed = __ldcg(&state[t].cand_count);
      const unsigned long long* list = cand_list + t * k_candidate_capacity;
      for (uint32_t base = 0; base < listed; base += k_select_threads) {
        const uint32_t i = base + threadIdx.x;
        const unsigned long long key = i < listed ? __ldcg(list + i) : 0ull;
        const unsigned long long pre = key >> 40;
        warp_append(i < listed && pre > prefix, key, &n_sel, sel);
        warp_append(i < listed && pre == prefix, key, &n_cand, cand);
      }
    } else {
      // Heavy ties (or `given`): resolve up to 8 more bits at a time with passes over the scores
      // while the bin holds too many keys, then collect the keys above the prefix (selected) and at
      // it (candidates) in one pass.
      unsigned long long prefix = bin;
      int bits = 12;  // resolved leading bits of the key
      while (in_bin > k_max_candidates) {
        const int width = min(8, 64 - bits);
        const int shift = 64 - bits - width;
        for (int b = threadIdx.x; b < 256; b += k_select_threads) counts[b] = 0;
        __syncthreads();
        for (int64_t s = threadIdx.x; s < n; s += k_select_threads) {
          const unsigned long long key = entry_key(sc[s], s);
          if ((key >> (64 - bits)) == prefix)
            atomicAdd(&counts[int(key >> shift) & ((1 << width) - 1)], 1u);
        }
        __syncthreads();
        const uint2 th =
            find_threshold(counts, 1 << width, uint32_t(keep) - above, scratch, result);
        prefix = (prefix << width) | th.x;
        bits += width;
        above += th.y;
        in_bin = counts[th.x];
        __syncthreads();
      }
      const int shift = 64 - bits;
      for (int64_t base = 0; base < n; base += k_select_threads) {
        const int64_t s = base + threadIdx.x;
        const unsigned long long key = s < n ? entry_key(sc[s], s) : 0ull;
        const unsigned long long pre = shift == 64 ? 0 : key >> shift;
        warp_append(s < n && pre > prefix, key, &n_sel, sel);
        warp_append(s < n && pre == prefix, key, &n_cand, cand);
      }
    }
    __syncthreads();
    // sel: the keys above the threshold prefix (ns < keep, all selected); cand: the nc >= need keys
    // at it, of which the best `need` complete the selection.
    const int ns = int(n_sel), nc = int(n_cand), need = keep - ns;
    if (nc <= k_select_threads) {
      // Rank among the candidates (distinct keys): the best `need` land at ns +
      // rank.
      if (int(threadIdx.x) < nc) {
        const unsigned long long key = cand[threadIdx.x];
        int rank = 0;
        for (int j = 0; j < nc; ++j) rank += cand[j] > key;
        if (rank < need) sel[ns + rank] = key;
      }
    } else {
      const int padded = pow2_at_least(nc);
      for (int i = nc + int(threadIdx.x); i < padded; i += k_select_threads) cand[i] = 0;
      __syncthreads();
      bitonic_sort_desc(cand, padded);
      for (int i = threadIdx.x; i < need; i += k_select_threads) sel[ns + i] = cand[i];
    }
  }
  __syncthreads();
  // Only the selection is sorted.
  if (keep <= k_select_threads) {
    sort_desc_in_registers(sel, keep, sort_buf);
  } else {
    const int padded = pow2_at_least(keep);
    for (int i = keep + int(threadIdx.x); i < padded; i += k_select_threads) sel[i] = 0;
    __syncthreads();
    bitonic_sort_desc(sel, padded);
  }
  for (int i = threadIdx.x; i < top_k; i += k_select_threads) {
    int32_t row = -1;
    if (i < keep) {
      const int64_t s = key_entry(sel[i]);
      row = int32_t(pages.row(s));
    }
    out[t * top_k + i] = row;
  }
}

// Grid (chunk of plan.collect_keys keys, token), a programmatic dependent of the score kernel:
// every CTA collects its chunk (collect_chunk). With select_ctas == 0 the token's last CTA to
// finish (atomic ticket after a fence, so every other CTA's list, counts and histogram are visible
// to it) selects; otherwise indexer_select_kernel does, a programmatic dependent of this grid.
__global__ void __launch_bounds__(k_select_threads)
    indexer_collect_select_kernel(const float* scores, int64_t score_stride, const uint32_t* hist,
                                  token_state* state, uint32_t* hist2,
                                  unsigned long long* cand_list, paged_entries pages,
                                  const int32_t* token_seq, const int32_t* n_visible,
                                  int64_t capacity, int top_k, int64_t collect_keys,
                                  bool fused_select, bool lean, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ bool last_cta;
  const int64_t t = blockIdx.y;
  // No launch of the chain writes n_visible: read before the wait.
  trace_stamp(k_trace_collect, 0);
  const int64_t n = clamp_visible(n_visible[t], capacity);
  pdl_wait();
  trace_stamp(k_trace_collect, 1);
  // The separate select kernel may be scheduled now: it waits for this grid's completion.
  pdl_trigger();
  // n <= top_k: the select takes every entry; past n: nothing to collect.
  if (n > top_k && int64_t(blockIdx.x) * collect_keys < n)
    collect_chunk(reinterpret_cast<uint32_t*>(smem), reinterpret_cast<uint32_t*>(smem) + k_bins,
                  reinterpret_cast<uint32_t*>(smem) + k_bins + 32, scores, score_stride, hist, n,
                  top_k, collect_keys, state, hist2, cand_list, lean);
  if (!fused_select) return;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_cta = atomicAdd(&state[t].ticket, 1u) + 1 == gridDim.x;
  __syncthreads();
  if (!last_cta) return;
  __threadfence();
  select_token(smem, scores, score_stride, state, hist2, pages, token_seq, n_visible, capacity,
               top_k, cand_list, out, t);
}

// The select of token blockIdx.y over gridDim.x CTAs, after the collect grid (programmatic
// dependent): every CTA reads the second histogram, resolves the 24-bit threshold prefix and
// copies the listed keys at or above it (F, about top_k of them: every key above the threshold
// prefix and the few at it) into shared memory, and, into a short list O, those of them whose list
// position i has i % gridDim.x == blockIdx.x (the list is the same for every CTA, so the shares
// partition F). Each warp then ranks keys of O against all of F (rank = number of keys of F
// greater than it; four independent partial counts per lane) and writes the keys whose rank is
// below keep straight to out[rank]. A key greater than one of F is in F itself, so the rank in F
// is the rank among all the token's keys; keys are distinct, so ranks are too, and no sort is
// needed. Tokens with n <= top_k (everything selected) or a threshold bin too full to list (heavy
// ties) take the single-CTA select_token in CTA 0.
// plan.lean_select: the token's block-table row (up to k_select_prefetch_blocks ids) is copied
// into shared memory (after O) before the wait, so the output rows need no global round trip;
// the token state and the second histogram are requested together right after the wait.
// from_list (plan.score_list, lean): the list is the score CTAs' (every key in or above the
// threshold bin, or an overflowing count) and `hist2` is the token's first histogram. A list of at
// most rank_max keys is ranked whole, each CTA its share of list positions (plan.list_rank, no
// histogram); else the CTAs resolve the threshold bin from the histogram, and with at most
// direct_max keys in or above it F is those keys (plan.list_direct, no second histogram), else the
// second histogram is built from the list as the collect would have. An overflowing list goes to
// select_token's scan of the scores.
constexpr int k_select_kernel_smem = k_select_smem + int(k_candidate_capacity) * 8;  // + O
constexpr int k_select_prefetch_blocks = 8192;
constexpr int k_select_kernel_smem_lean = k_select_kernel_smem + k_select_prefetch_blocks * 4;
static_assert(k_bins % k_select_threads == 0, "histogram words per select thread");
__global__ void __launch_bounds__(k_select_threads)
    indexer_select_kernel(const float* scores, int64_t score_stride, const token_state* state,
                          const uint32_t* hist2, const unsigned long long* cand_list,
                          paged_entries pages, const int32_t* token_seq, const int32_t* n_visible,
                          int64_t capacity, int top_k, bool lean, bool from_list,
                          uint32_t direct_max, uint32_t rank_max, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint32_t n_f, n_own, result[2], given[3];
  trace_stamp(k_trace_select, 0);
  const int64_t t = blockIdx.y;
  // No launch of the chain writes these: read before the wait.
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int32_t seq = token_seq[t];
  int32_t* blocks_s = reinterpret_cast<int32_t*>(smem + k_select_kernel_smem);
  const bool blocks_in_smem = lean && pages.table_width <= k_select_prefetch_blocks;
  if (blocks_in_smem) {
    const int32_t* row =
        paged_table_row(pages.block_table, pages.table_rows, pages.table_width, seq);
    for (int i = threadIdx.x; i < pages.table_width; i += k_select_threads)
      blocks_s[i] = row ? row[i] : -1;
  }
  pdl_wait();
  trace_stamp(k_trace_select, 1);
  uint32_t in_bin = 0, bin = 0, above = 0, listed = 0;
  uint32_t hist_words[k_bins / k_select_threads];
  // lean: the list's first k_select_threads entries requested with the state (entries past the
  // count are stale scratch, never used), so the usual list of < 1024 keys needs no third trip.
  unsigned long long first_key = 0;
  if (lean && n > top_k) {
    if (!from_list) {
      in_bin = __ldcg(&state[t].in_bin);
      bin = __ldcg(&state[t].bin);
      above = __ldcg(&state[t].above);
    }
    listed = __ldcg(&state[t].cand_count);
    first_key = __ldcg(cand_list + t * k_candidate_capacity + threadIdx.x);
    // (plan.list_rank with a short list needs no histogram.)
    if (!from_list || listed > rank_max) {
#pragma unroll
      for (int u = 0; u < k_bins / k_select_threads; ++u)
        hist_words[u] = __ldcg(&hist2[t * k_bins + threadIdx.x + u * k_select_threads]);
    }
  } else if (n > top_k) {
    in_bin = __ldcg(&state[t].in_bin);
  }
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);  // k_bins
  uint32_t* scratch = counts + k_bins;                   // k_select_threads
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  pages.seq = seq;
  // (lean) The histogram words read with the state, into counts.
  const auto counts_from_hist_words = [&] {
#pragma unroll
    for (int u = 0; u < k_bins / k_select_threads; ++u)
      counts[threadIdx.x + u * k_select_threads] = hist_words[u];
  };
  // Output row of entry s: pages.row(s), from the copied block ids where they fit.
  const auto row_of = [&](int64_t s) {
    if (!blocks_in_smem) return pages.row(s);
    const int64_t block = s / pages.block_size;
    const int64_t b = block < pages.table_width ? int64_t(blocks_s[block]) : -1;
    const int64_t row = b < 0 ? -1 : b * pages.block_size + s % pages.block_size;
    return row >= pages.pool_rows ? int64_t(-1) : row;
  };
  // Key x of the nf keys f (a set closed upwards within the token's first top_k keys): its rank is
  // the number of keys of f greater than it; lane 0 writes its row there when below top_k.
  const auto rank_and_write = [&](unsigned long long x, const unsigned long long* f, int nf) {
    const uint32_t greater = warp_count_greater(f, nf, x);
    if (lane == 0 && greater < uint32_t(top_k))
      out[t * top_k + greater] = int32_t(row_of(key_entry(x)));
  };
  if (from_list && n > top_k && listed <= rank_max) {  // (uniform over the token's CTAs)
    // plan.list_rank: every key at or above the threshold is listed, and a listed key x with a
    // greater key y unlisted is not selected (y below the threshold bin), so the number of listed
    // keys greater than x is x's rank wherever that rank is below top_k: each CTA ranks its share
    // (list positions i % gridDim.x == blockIdx.x) against the whole list, no histogram.
    unsigned long long* f = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
    const unsigned long long* list = cand_list + t * k_candidate_capacity;
    for (uint32_t base = 0; base < listed; base += k_select_threads) {
      const uint32_t i = base + threadIdx.x;
      if (i < listed) f[i] = base == 0 ? first_key : __ldcg(list + i);
    }
    __syncthreads();
    trace_stamp(k_trace_select, 3);
    const uint32_t ctas = gridDim.x;
    for (uint32_t j = blockIdx.x + ctas * uint32_t(warp); j < listed;
         j += ctas * uint32_t(k_select_threads / k_warp_size)) {
      rank_and_write(f[j], f, int(listed));
    }
    trace_stamp(k_trace_select, 4);
    return;
  }
  if (from_list && n > top_k) {
    // plan.score_list (`hist2` is the token's first histogram; the list holds every key in or
    // above the threshold bin, or overflowed): the threshold bin first.
    counts_from_hist_words();
    __syncthreads();
    const uint2 th = find_threshold(counts, k_bins, uint32_t(top_k), scratch, result);
    bin = th.x;
    above = th.y;
    in_bin = counts[th.x];
    if (listed > uint32_t(k_candidate_capacity) && in_bin <= k_max_candidates)
      in_bin = k_max_candidates + 1;  // (the select_token scan below)
    if (threadIdx.x == 0) {
      given[0] = bin;
      given[1] = above;
      given[2] = counts[th.x];
    }
    __syncthreads();  // every thread read counts[th.x]
  }
  if (n <= top_k || in_bin > k_max_candidates) {  // uniform over the token's CTAs
    if (blockIdx.x == 0)
      select_token(smem, scores, score_stride, state, hist2, pages, token_seq, n_visible, capacity,
                   top_k, cand_list, out, t, from_list && n > top_k ? given : nullptr);
    return;
  }
  const int keep = top_k;  // n > top_k
  // F: up to k_candidate_capacity keys (the list's capacity), over select_token's sel and cand;
  // O after it (this CTA's share of F, as many at most).
  unsigned long long* f = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* own = f + k_candidate_capacity;
  if (threadIdx.x == 0) n_f = n_own = 0;
  // plan.list_direct: F = the listed keys in or above the threshold bin (at most direct_max of
  // them), ranked without the second histogram (F is closed upwards, so ranks in F are exact).
  const bool direct = from_list && above + in_bin <= direct_max;  // (uniform)
  if (direct) {
  } else if (from_list) {
    // The second histogram (next 12 bits of the bin's keys) from the list.
#pragma unroll
    for (int u = 0; u < k_bins / k_select_threads; ++u)
      counts[threadIdx.x + u * k_select_threads] = 0;
    __syncthreads();
    for (uint32_t base = 0; base < listed; base += k_select_threads) {
      const uint32_t i = base + threadIdx.x;
      const unsigned long long key =
          i < listed ? (base == 0 ? first_key : __ldcg(cand_list + t * k_candidate_capacity + i))
                     : 0ull;
      if (i < listed && uint32_t(key >> 52) == bin) atomicAdd(&counts[key_sub_bin(key)], 1u);
    }
  } else if (lean) {
    counts_from_hist_words();
  } else {
    for (int b = threadIdx.x; b < k_bins; b += k_select_threads)
      counts[b] = __ldcg(&hist2[t * k_bins + b]);
  }
  __syncthreads();
  if (!lean) {
    bin = __ldcg(&state[t].bin);
    above = __ldcg(&state[t].above);
  }
  const uint2 th = direct ? make_uint2(0u, 0u)
                          : find_threshold(counts, k_bins, uint32_t(keep) - above, scratch, result);
  trace_stamp(k_trace_select, 2);
  const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th.x;
  if (!lean) listed = __ldcg(&state[t].cand_count);
  const unsigned long long* list = cand_list + t * k_candidate_capacity;
  const uint32_t ctas = gridDim.x;
  for (uint32_t base = 0; base < listed; base += k_select_threads) {
    const uint32_t i = base + threadIdx.x;
    const unsigned long long key =
        i < listed ? (lean && base == 0 ? first_key : __ldcg(list + i)) : 0ull;
    const bool in_f = i < listed && (key >> 40) >= prefix;
    warp_append(in_f, key, &n_f, f);
    warp_append(in_f && i % ctas == blockIdx.x, key, &n_own, own);
  }
  __syncthreads();
  trace_stamp(k_trace_select, 3);
  const int nf = int(n_f), no = int(n_own);
  for (int j = warp; j < no; j += k_select_threads / k_warp_size) rank_and_write(own[j], f, nf);
  trace_stamp(k_trace_select, 4);
}

// plan.cluster_select: collect and select of token blockIdx.y in one launch, a cluster of
// k_csel_ctas CTAs (a programmatic dependent of the score kernel). CTA r scans entries
// [r chunk, (r + 1) chunk): every CTA finds the threshold bin from the token's histogram, lists
// its keys at or above it in its own shared memory (L) and histograms the next 12 bits of the
// bin's keys (sub). After a cluster barrier, CTA r adds bins [512 r, 512 r + 512) of every CTA's
// sub (red), and after a second barrier every CTA reads the summed histogram from the 8 CTAs,
// resolves the 24-bit threshold prefix and copies the listed keys at or above it from every CTA's
// L into its F (about top_k keys). Each CTA ranks its own listed keys of F against all of F (as
// indexer_select_kernel) and writes rank < top_k to out[rank]. No global list, second histogram,
// atomic ticket or third launch. Tokens with n <= top_k or a threshold bin too full to list (heavy
// ties) take the single-CTA select_token in CTA 0 (the state's bin, above and in_bin written by
// it first). Every CTA passes a final cluster barrier (its L and red are read by the others).
constexpr int k_csel_ctas = 8;     // a portable cluster size
constexpr int k_csel_unroll = 16;  // score loads in flight per thread
constexpr int k_csel_share = k_bins / k_csel_ctas;
static_assert(k_csel_share <= k_select_threads, "one summed bin per thread");
// counts [k_bins] | sub [k_bins] | red [k_csel_share] | scratch [k_select_threads] | L | F.
constexpr int k_csel_smem =
    (2 * k_bins + k_csel_share + k_select_threads) * 4 + 2 * int(k_candidate_capacity) * 8;
static_assert(k_csel_smem >= k_select_smem, "select_token's shared memory inside");
__global__ void __launch_bounds__(k_select_threads)
    indexer_cluster_select_kernel(const float* scores, int64_t score_stride, const uint32_t* hist,
                                  token_state* state, paged_entries pages, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t capacity, int top_k,
                                  int64_t chunk, int probe, int32_t* out) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint32_t n_list, n_f, list_counts[k_csel_ctas], result[2];
  const int64_t t = blockIdx.y;
  const uint32_t rank = cluster::rank();
  // No launch of the chain writes these: read before the wait.
  const int64_t n = clamp_visible(n_visible[t], capacity);
  const int32_t seq = token_seq[t];
  pdl_wait();
  if (probe == 1) return;  // (benchmark probes, plan.cluster_probe: results wrong)
  if (n <= top_k) {        // uniform over the cluster (no shared memory of another CTA is read)
    if (rank == 0)
      select_token(smem, scores, score_stride, state, nullptr, pages, token_seq, n_visible,
                   capacity, top_k, nullptr, out, t);
    return;
  }
  uint32_t* counts = reinterpret_cast<uint32_t*>(smem);
  uint32_t* sub = counts + k_bins;
  uint32_t* red = sub + k_bins;
  uint32_t* scratch = red + k_csel_share;
  unsigned long long* list = reinterpret_cast<unsigned long long*>(scratch + k_select_threads);
  unsigned long long* f = list + k_candidate_capacity;
  const int64_t lo = int64_t(rank) * chunk;
  const int64_t hi = min(lo + chunk, n);
  const float* sc = scores + t * score_stride;
  float v[k_csel_unroll];
  const auto load_scores = [&](int64_t base) {
#pragma unroll
    for (int u = 0; u < k_csel_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_select_threads;
      v[u] = s < hi ? __ldcg(sc + s) : -INFINITY;
    }
  };
  load_scores(lo);  // with the histogram
  for (int b = threadIdx.x; b < k_bins; b += k_select_threads) {
    counts[b] = __ldcg(&hist[t * k_bins + b]);
    sub[b] = 0;
  }
  if (threadIdx.x == 0) n_list = n_f = 0;
  __syncthreads();
  const uint2 th = find_threshold(counts, k_bins, uint32_t(top_k), scratch, result);
  const uint32_t bin = th.x, above = th.y, in_bin = counts[th.x];
  if (in_bin > k_max_candidates) {  // heavy ties (uniform over the cluster)
    if (rank == 0) {
      if (threadIdx.x == 0) {
        state[t].bin = bin;
        state[t].above = above;
        state[t].in_bin = in_bin;
      }
      __syncthreads();  // select_token reads them back
      select_token(smem, scores, score_stride, state, nullptr, pages, token_seq, n_visible,
                   capacity, top_k, nullptr, out, t);
    }
    return;
  }
  for (int64_t base = lo; base < hi; base += int64_t(k_select_threads) * k_csel_unroll) {
    if (base != lo) load_scores(base);
#pragma unroll
    for (int u = 0; u < k_csel_unroll; ++u) {
      const int64_t s = base + threadIdx.x + u * k_select_threads;
      const unsigned long long key = entry_key(v[u], s);
      const uint32_t top = key_bin(key);
      if (s < hi && top == bin) atomicAdd(&sub[key_sub_bin(key)], 1u);
      warp_append(s < hi && top >= bin, key, &n_list, list);
    }
  }
  __syncthreads();
  if (probe == 2) return;
  cluster::sync();  // every CTA's sub, list and n_list complete
  if (threadIdx.x < k_csel_share) {
    const uint32_t addr = smem_u32(sub + rank * k_csel_share + threadIdx.x);
    uint32_t sum = 0;
#pragma unroll
    for (uint32_t r = 0; r < k_csel_ctas; ++r) sum += cluster::load_u32(cluster::map(addr, r));
    red[threadIdx.x] = sum;
  }
  if (threadIdx.x < k_csel_ctas)
    list_counts[threadIdx.x] = cluster::load_u32(cluster::map(smem_u32(&n_list), threadIdx.x));
  cluster::sync();  // every CTA's red complete
  for (int b = threadIdx.x; b < k_bins; b += k_select_threads)
    counts[b] = cluster::load_u32(
        cluster::map(smem_u32(red + b % k_csel_share), uint32_t(b / k_csel_share)));
  __syncthreads();
  const uint2 th2 = find_threshold(counts, k_bins, uint32_t(top_k) - above, scratch, result);
  const unsigned long long prefix = (static_cast<unsigned long long>(bin) << 12) | th2.x;
  if (probe == 3) {
    cluster::sync();
    return;
  }
  // F: the listed keys at or above the prefix of every CTA, one flat index over the lists.
  uint32_t starts[k_csel_ctas + 1];
  starts[0] = 0;
#pragma unroll
  for (int r = 0; r < k_csel_ctas; ++r) starts[r + 1] = starts[r] + list_counts[r];
  const uint32_t total = starts[k_csel_ctas];
  for (uint32_t base = 0; base < total; base += k_select_threads) {
    const uint32_t i = base + threadIdx.x;
    unsigned long long key = 0;
    if (i < total) {
      uint32_t r = 0, start = 0;  // the list holding flat index i (empty lists skipped)
#pragma unroll
      for (int q = 1; q < k_csel_ctas; ++q)
        if (i >= starts[q]) {
          r = uint32_t(q);
          start = starts[q];
        }
      key = cluster::load_u64(cluster::map(smem_u32(list + (i - start)), r));
    }
    warp_append(i < total && (key >> 40) >= prefix, key, &n_f, f);
  }
  __syncthreads();
  const int nf = int(n_f), own = probe == 4 ? 0 : int(list_counts[rank]);
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  pages.seq = seq;
  for (int j = warp; j < own; j += k_select_threads / k_warp_size) {
    const unsigned long long x = list[j];
    if ((x >> 40) < prefix) continue;  // (uniform over the warp)
    const uint32_t greater = warp_count_greater(f, nf, x);
    if (lane == 0 && greater < uint32_t(top_k)) {
      const int64_t s = key_entry(x);
      out[t * top_k + greater] = int32_t(pages.row(s));
    }
  }
  cluster::sync();  // no CTA exits while another may still read its list, red or n_list
}

int64_t score_stride_of(int64_t capacity) {
  return ceil_div(capacity, 4) * 4;
}

}  // namespace

void indexer_fast_plan_set_ctas_per_sm(indexer_fast_plan& p, int ctas_per_sm, int sm_count,
                                       int64_t block_size) {
  if (p.tokens <= 0 || p.capacity <= 0) return;
  const int64_t tokens = p.tokens;
  const int64_t sms = std::max(sm_count, 1);
  const int64_t per_sm = std::max(ctas_per_sm, 1);
  // The CTA's block ids must fit its shared list (k_max_range_blocks).
  const int64_t range_cap = std::max<int64_t>(k_pass, (1024 * block_size) / k_pass * k_pass);
  // Two CTAs per SM (see k_stages_bf16; three with plan.score_three): CTAs of the whole grid in
  // one wave when that suffices.
  const int64_t want = std::max<int64_t>(1, ceil_div(per_sm * sms, tokens));
  p.keys_per_cta = std::max<int64_t>(k_pass, ceil_div(ceil_div(p.capacity, want), k_pass) * k_pass);
  // When the grid spans several waves anyway, short CTAs (512 keys) score faster: one CTA's
  // prologue overlaps the others' loads (H200, T=32 x 256K entries: 813 us at 512 keys per CTA,
  // 1105 us at 29184).
  if (tokens * ceil_div(p.capacity, std::min<int64_t>(p.keys_per_cta, 1024)) > per_sm * sms)
    p.keys_per_cta = std::min<int64_t>(p.keys_per_cta, 512);
  p.keys_per_cta = std::min(p.keys_per_cta, range_cap);
  p.ctas_per_token = ceil_div(p.capacity, p.keys_per_cta);
}

cudaError_t indexer_fast_set_trace(unsigned long long* buffer) {
  return cudaMemcpyToSymbol(g_indexer_trace, &buffer, sizeof(buffer));
}

indexer_fast_plan indexer_topk_fast_make_plan(int64_t tokens, int64_t table_width,
                                              int64_t block_size, int sm_count) {
  indexer_fast_plan p;
  p.tokens = tokens;
  p.capacity = table_width * block_size;
  if (tokens <= 0 || p.capacity <= 0) return p;
  const int64_t sms = std::max(sm_count, 1);
  indexer_fast_plan_set_ctas_per_sm(p, 2, sm_count, block_size);
  // H200, T=1 x 256K entries: see bench_attention's collect rows.
  p.collect_keys = tokens * ceil_div(p.capacity, k_collect_keys_short) <= 8 * sms
                       ? k_collect_keys_short
                       : k_collect_keys_long;
  p.collect_ctas_per_token = ceil_div(p.capacity, p.collect_keys);
  // Select CTAs per token (H100, 256K entries, FP4 keys, same run, us, select 0 / 8 / 16 / 32
  // CTAs): T=1 top-512 43.2 / 41.8 / 40.9 / 40.2, top-1024 48.0 / 52.2 / 48.9 / 48.5; T=32
  // top-512 628.9 / 632.9 / 642.6 / 667.4, top-1024 645.5 / 662.6 / 677.3 / 712.4. So 16 CTAs for
  // a few tokens (each CTA repeats the threshold search and the list scan; only the ranking is
  // split), the single-CTA select after the collect for larger batches.
  // H200 (session 7, shares by list position): T=1 top-512 / top-1024 in all, us, select 16 / 32
  // CTAs: 35.2 / 34.4, 37.6 / 35.8; so 32 CTAs up to 4 tokens.
  p.select_ctas =
      tokens <= 8 ? int(std::clamp<int64_t>(2 * sms / tokens, 1, tokens <= 4 ? 32 : 16)) : 0;
  // cluster_select stays off: slower (H100, session 9: T=1 top-512 39.6 vs 33.7 us in all).
  // score_list where the score grid is resident at once (two CTAs per SM: the CTAs that wait for
  // a fuller histogram snapshot never hold back a later wave) and the select is split.
  p.score_list = tokens * p.ctas_per_token <= 2 * sms && p.select_ctas > 0;
  const size_t score_bytes = size_t(tokens * score_stride_of(p.capacity)) * 4;
  p.scratch_bytes = score_bytes + size_t(tokens) * (sizeof(token_state) + 2 * k_bins * 4) +
                    size_t(tokens) * size_t(k_candidate_capacity) * 8;
  return p;
}

namespace {

// Every key format (fmt): key_scales null for bf16 keys.
template <typename act_t>
cudaError_t indexer_topk_fast_impl(const act_t* q, const act_t* weights, int64_t tokens,
                                   int64_t heads, int64_t head_dim, const void* key_pool,
                                   const void* key_scales, int fmt, int64_t pool_rows,
                                   const int32_t* block_table, int64_t table_rows,
                                   int64_t table_width, const int32_t* token_seq,
                                   const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                   float q_scale, const indexer_fast_plan& plan, void* scratch,
                                   size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  if (tokens < 0 || heads != k_heads || head_dim != k_dim || top_k <= 0 ||
      top_k > k_indexer_fast_max_top_k || block_size <= 0 || table_width < 0 || table_rows < 0 ||
      pool_rows < 0 || !q || !weights || !key_pool || (fmt != k_fmt_bf16 && !key_scales) ||
      !block_table || !token_seq || !n_visible || !out || !aligned_16(q) || !aligned_16(key_pool) ||
      !aligned_16(scratch))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (plan.tokens != tokens || plan.capacity != table_width * block_size ||
      scratch_bytes < plan.scratch_bytes || plan.ctas_per_token > INT32_MAX || tokens > 65535 ||
      (plan.capacity > 0 && (plan.collect_keys <= 0 || plan.collect_keys % k_collect_threads != 0 ||
                             plan.collect_ctas_per_token * plan.collect_keys < plan.capacity ||
                             plan.collect_ctas_per_token > INT32_MAX)) ||
      (plan.score_warps != 4 && plan.score_warps != 8) || plan.select_ctas < 0 ||
      plan.select_ctas > k_max_select_ctas)
    return cudaErrorInvalidValue;
  // The score kernel keeps entry numbers and pool rows in 32 bits.
  if (plan.capacity > INT32_MAX || pool_rows > INT32_MAX || block_size > INT32_MAX)
    return cudaErrorInvalidValue;
  // The score CTA's block list (k_max_range_blocks) bounds its key range.
  if (plan.capacity > 0 && (plan.keys_per_cta <= 0 || plan.keys_per_cta % k_pass != 0 ||
                            ceil_div(plan.keys_per_cta, block_size) + 1 > k_max_range_blocks ||
                            plan.ctas_per_token * plan.keys_per_cta < plan.capacity))
    return cudaErrorInvalidValue;
  // Attributes per (kernel, device) (kernel_attributes.h), keyed on this instantiation's
  // score_three kernel; the lambda sets them on every kernel of the instantiation (all key
  // formats) at once.
  if (const cudaError_t e = configure_kernel_once(
          reinterpret_cast<const void*>(indexer_score_three_kernel<act_t, k_stages_fp4_three>),
          [] {
            const auto set = [](auto kernel, int smem) {
              return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          smem);
            };
            cudaError_t e = cudaSuccess;
            const auto score_kernels = {indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 4>,
                                        indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 8>};
            const auto score_kernels_fp8 = {
                indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 4>,
                indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 8>};
            const auto score_kernels_fp4 = {
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 8>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 8>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 4>,
                indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 8>};
            for (auto kernel : score_kernels)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_bf16, k_fmt_bf16));
            for (auto kernel : score_kernels_fp8)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_fp8, k_fmt_e4m3));
            for (auto kernel : score_kernels_fp4)
              if (e == cudaSuccess) e = set(kernel, score_smem_bytes(k_stages_fp4, k_fmt_e2m1));
            if (e == cudaSuccess)
              e = set(indexer_score_three_kernel<act_t, k_stages_fp4_three>,
                      score_three_smem_bytes(k_stages_fp4_three));
            if (e == cudaSuccess)
              e = set(indexer_score_three_kernel<act_t, k_stages_fp4_three, true>,
                      score_three_smem_bytes(k_stages_fp4_three));
            if (e == cudaSuccess) e = set(indexer_collect_select_kernel, k_select_smem);
            if (e == cudaSuccess) e = set(indexer_select_kernel, k_select_kernel_smem_lean);
            if (e == cudaSuccess) e = set(indexer_cluster_select_kernel, k_csel_smem);
            // One shared-memory carveout (the largest) for the three kernels: an SM need not drain
            // to reconfigure between them.
            const auto carveout = [](auto kernel) {
              return cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          int(cudaSharedmemCarveoutMaxShared));
            };
            for (auto kernel : score_kernels)
              if (e == cudaSuccess) e = carveout(kernel);
            for (auto kernel : score_kernels_fp8)
              if (e == cudaSuccess) e = carveout(kernel);
            for (auto kernel : score_kernels_fp4)
              if (e == cudaSuccess) e = carveout(kernel);
            if (e == cudaSuccess)
              e = carveout(indexer_score_three_kernel<act_t, k_stages_fp4_three>);
            if (e == cudaSuccess)
              e = carveout(indexer_score_three_kernel<act_t, k_stages_fp4_three, true>);
            if (e == cudaSuccess) e = carveout(indexer_collect_select_kernel);
            if (e == cudaSuccess) e = carveout(indexer_select_kernel);
            if (e == cudaSuccess) e = carveout(indexer_cluster_select_kernel);
            return e;
          });
      e != cudaSuccess)
    return e;
  const int64_t stride = score_stride_of(plan.capacity);
  unsigned char* base = static_cast<unsigned char*>(scratch);
  float* scores = reinterpret_cast<float*>(base);
  base += size_t(tokens * stride) * 4;
  token_state* state = reinterpret_cast<token_state*>(base);
  uint32_t* hist = reinterpret_cast<uint32_t*>(state + tokens);  // [tokens, k_bins]
  uint32_t* hist2 = hist + tokens * k_bins;                      // [tokens, k_bins]
  unsigned long long* cand_list = reinterpret_cast<unsigned long long*>(hist2 + tokens * k_bins);
  // No entries: no scratch, every position is -1 padding (all bits set).
  if (plan.capacity == 0) return cudaMemsetAsync(out, 0xff, size_t(tokens * top_k) * 4, stream);
  const paged_entries pages{block_table, table_rows, table_width, block_size, pool_rows, 0};
  const size_t zero_bytes = size_t(tokens) * (sizeof(token_state) + 2 * k_bins * 4);
  cudaError_t e = cudaSuccess;
  if (plan.zero_kernel) {
    static_assert((sizeof(token_state) + 2 * k_bins * 4) % 16 == 0, "16-byte words");
    const int64_t n16 = int64_t(zero_bytes / 16);
    indexer_zero_kernel<<<unsigned(std::min<int64_t>(ceil_div(n16, 256), 256)), 256, 0, stream>>>(
        reinterpret_cast<uint4*>(state), n16);
    e = cudaGetLastError();
  } else {
    e = cudaMemsetAsync(state, 0, zero_bytes, stream);
  }
  if (e != cudaSuccess) return e;
  const dim3 grid(unsigned(plan.ctas_per_token), unsigned(tokens));
  // Bulk passes: FP4 keys on wgmma, each pass inside one block, 16-byte aligned scale rows.
  const bool bulk = fmt == k_fmt_e2m1 && plan.score_wgmma && plan.score_bulk &&
                    block_size % k_pass == 0 && aligned_16(key_scales);
  const int flags =
      (bulk ? k_score_flag_bulk | (plan.score_decouple ? k_score_flag_decouple : 0) : 0) |
      (plan.score_quad ? k_score_flag_quad : 0) | (plan.score_rotate ? k_score_flag_rotate : 0) |
      (plan.score_pingpong ? k_score_flag_pingpong : 0) |
      (plan.list_once ? k_score_flag_list_once : 0);
  // A programmatic dependent of the zeroing kernel (plan.zero_kernel), else a plain launch.
  const auto launch_score = [&](auto kernel, int threads, int smem) {
    e = launch_pdl(plan.zero_kernel, kernel, grid, dim3(unsigned(threads)), size_t(smem), stream, q,
                   weights, key_pool, key_scales, pages, token_seq, n_visible, plan.capacity,
                   plan.keys_per_cta, q_scale, scores, stride, hist, flags);
  };
  const bool eight = plan.score_warps == 8;
  const bool three = bulk && plan.score_three && plan.score_decouple && plan.score_quad &&
                     !plan.score_pingpong && eight && !plan.score_split;
  // plan.score_list: the three-CTA score kernel lists the candidates itself (no collect launch);
  // the select kernel (lean, over select_ctas CTAs) resolves both threshold levels.
  const bool list_mode =
      three && plan.score_list && plan.select_ctas > 0 && plan.lean_select && !plan.cluster_select;
  if (fmt == k_fmt_e4m3) {
    const int smem = score_smem_bytes(k_stages_fp8, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp8, k_fmt_e4m3, 4>, 128, smem);
  } else if (three) {
    // (The token's coarse histogram of plan.score_list in its second histogram's first 256 words:
    // zeroed with it, otherwise unused on that path.)
    e = launch_pdl(plan.zero_kernel,
                   list_mode ? indexer_score_three_kernel<act_t, k_stages_fp4_three, true>
                             : indexer_score_three_kernel<act_t, k_stages_fp4_three, false>,
                   grid, dim3(256), size_t(score_three_smem_bytes(k_stages_fp4_three)), stream, q,
                   weights, key_pool, key_scales, pages, token_seq, n_visible, plan.capacity,
                   plan.keys_per_cta, q_scale, scores, stride, hist, flags, state, hist2, cand_list,
                   int(top_k));
  } else if (fmt == k_fmt_e2m1 && plan.score_wgmma && plan.score_split) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg2, 4>, 128, smem);
  } else if (fmt == k_fmt_e2m1 && plan.score_wgmma) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1_wg, 4>, 128, smem);
  } else if (fmt == k_fmt_e2m1) {
    const int smem = score_smem_bytes(k_stages_fp4, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_fp4, k_fmt_e2m1, 4>, 128, smem);
  } else {
    const int smem = score_smem_bytes(k_stages_bf16, fmt);
    if (eight)
      launch_score(indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 8>, 256, smem);
    else
      launch_score(indexer_score_kernel<act_t, k_stages_bf16, k_fmt_bf16, 4>, 128, smem);
  }
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess || plan.score_only) return e;
  if (list_mode) {
    // Benchmarks: collect_only stops after the scores here (the score kernel collects).
    if (plan.collect_only) return e;
    return launch_pdl(
        true, indexer_select_kernel, dim3(unsigned(plan.select_ctas), unsigned(tokens)),
        dim3(k_select_threads), size_t(k_select_kernel_smem_lean), stream,
        static_cast<const float*>(scores), stride, static_cast<const token_state*>(state),
        static_cast<const uint32_t*>(hist), static_cast<const unsigned long long*>(cand_list),
        pages, token_seq, n_visible, plan.capacity, int(top_k), true, true,
        plan.list_direct ? uint32_t(k_list_direct_max) : 0u,
        plan.list_rank ? uint32_t(k_list_rank_max) : 0u, out);
  }
  if (plan.cluster_select) {
    // Benchmarks: collect_only stops after the scores here (collect and select are one launch).
    if (plan.collect_only) return e;
    cudaLaunchAttribute attributes[2]{};
    attributes[0].id = cudaLaunchAttributeClusterDimension;
    attributes[0].val.clusterDim.x = unsigned(k_csel_ctas);
    attributes[0].val.clusterDim.y = 1;
    attributes[0].val.clusterDim.z = 1;
    attributes[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[1].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(unsigned(k_csel_ctas), unsigned(tokens));
    config.blockDim = dim3(k_select_threads);
    config.dynamicSmemBytes = size_t(k_csel_smem);
    config.stream = stream;
    config.attrs = attributes;
    config.numAttrs = plan.cluster_probe == 5 ? 1 : 2;  // probe 5: a plain (non-PDL) launch
    return cudaLaunchKernelEx(
        &config, indexer_cluster_select_kernel, static_cast<const float*>(scores), stride,
        static_cast<const uint32_t*>(hist), state, pages, token_seq, n_visible, plan.capacity,
        int(top_k), ceil_div(plan.capacity, int64_t(k_csel_ctas)), plan.cluster_probe, out);
  }
  const bool fused_select = plan.select_ctas == 0 && !plan.collect_only;
  e = launch_pdl(true, indexer_collect_select_kernel,
                 dim3(unsigned(plan.collect_ctas_per_token), unsigned(tokens)),
                 dim3(k_select_threads), size_t(k_select_smem), stream,
                 static_cast<const float*>(scores), stride, static_cast<const uint32_t*>(hist),
                 state, hist2, cand_list, pages, token_seq, n_visible, plan.capacity, int(top_k),
                 plan.collect_keys, fused_select, plan.lean_select, out);
  if (e != cudaSuccess || plan.collect_only || plan.select_ctas == 0) return e;
  return launch_pdl(true, indexer_select_kernel, dim3(unsigned(plan.select_ctas), unsigned(tokens)),
                    dim3(k_select_threads),
                    size_t(plan.lean_select ? k_select_kernel_smem_lean : k_select_kernel_smem),
                    stream, static_cast<const float*>(scores), stride,
                    static_cast<const token_state*>(state), static_cast<const uint32_t*>(hist2),
                    static_cast<const unsigned long long*>(cand_list), pages, token_seq, n_visible,
                    plan.capacity, int(top_k), plan.lean_select, false, 0u, 0u, out);
}

}  // namespace

template <typename act_t>
cudaError_t indexer_topk_fast(const act_t* q, const act_t* weights, int64_t tokens, int64_t heads,
                              int64_t head_dim, const __nv_bfloat16* key_pool, int64_t pool_rows,
                              const int32_t* block_table, int64_t table_rows, int64_t table_width,
                              const int32_t* token_seq, const int32_t* n_visible,
                              int64_t block_size, int64_t top_k, float q_scale,
                              const indexer_fast_plan& plan, void* scratch, size_t scratch_bytes,
                              int32_t* out, cudaStream_t stream) {
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_pool, nullptr, k_fmt_bf16,
                                pool_rows, block_table, table_rows, table_width, token_seq,
                                n_visible, block_size, top_k, q_scale, plan, scratch, scratch_bytes,
                                out, stream);
}

template <typename act_t>
cudaError_t indexer_topk_fast_fp8(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_pool,
                                  const float* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_pool, key_scales,
                                k_fmt_e4m3, pool_rows, block_table, table_rows, table_width,
                                token_seq, n_visible, block_size, top_k, q_scale, plan, scratch,
                                scratch_bytes, out, stream);
}

template <typename act_t>
cudaError_t indexer_topk_fast_fp4(const act_t* q, const act_t* weights, int64_t tokens,
                                  int64_t heads, int64_t head_dim, const uint8_t* key_codes,
                                  const uint32_t* key_scales, int64_t pool_rows,
                                  const int32_t* block_table, int64_t table_rows,
                                  int64_t table_width, const int32_t* token_seq,
                                  const int32_t* n_visible, int64_t block_size, int64_t top_k,
                                  float q_scale, const indexer_fast_plan& plan, void* scratch,
                                  size_t scratch_bytes, int32_t* out, cudaStream_t stream) {
  if (key_scales && reinterpret_cast<uintptr_t>(key_scales) % 4 != 0) return cudaErrorInvalidValue;
  return indexer_topk_fast_impl(q, weights, tokens, heads, head_dim, key_codes, key_scales,
                                k_fmt_e2m1, pool_rows, block_table, table_rows, table_width,
                                token_seq, n_visible, block_size, top_k, q_scale, plan, scratch,
                                scratch_bytes, out, stream);
}

#define DSV4_INDEXER_FAST_INSTANTIATE(act_t)                                                       \
  template cudaError_t indexer_topk_fast<act_t>(                                                   \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const __nv_bfloat16*, int64_t,        \
      const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, float,   \
      const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);                            \
  template cudaError_t indexer_topk_fast_fp8<act_t>(                                               \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const uint8_t*, const float*,         \
      int64_t, const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, \
      float, const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);                     \
  template cudaError_t indexer_topk_fast_fp4<act_t>(                                               \
      const act_t*, const act_t*, int64_t, int64_t, int64_t, const uint8_t*, const uint32_t*,      \
      int64_t, const int32_t*, int64_t, int64_t, const int32_t*, const int32_t*, int64_t, int64_t, \
      float, const indexer_fast_plan&, void*, size_t, int32_t*, cudaStream_t);
DSV4_INDEXER_FAST_INSTANTIATE(float)
DSV4_INDEXER_FAST_INSTANTIATE(__nv_bfloat16)
#undef DSV4_INDEXER_FAST_INSTANTIATE

}  // namespace dsv4::cuda
