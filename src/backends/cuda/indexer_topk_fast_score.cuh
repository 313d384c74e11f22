// The score kernels of the indexer top-k (step 1 of indexer_topk_fast.cu's overview):
// indexer_score_kernel (bf16 / e4m3 / e2m1 keys, mma.sync or wgmma), indexer_score_three_kernel
// (plan.score_three, with plan.score_list's candidate listing, score_list_keys) and the zeroing
// kernel they may follow. Included by indexer_topk_fast.cu only.
#pragma once

#include <cuda_fp8.h>

#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/indexer_topk_fast_common.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/uint4_words.cuh"
#include "backends/cuda/wgmma_common.cuh"
#include "backends/cuda/wgmma_fp8.cuh"
#include "io/indexer_fp4_key.h"

namespace dsv4::cuda {

namespace {

constexpr int k_heads = int(k_indexer_fast_heads);
constexpr int k_dim = int(k_indexer_fast_head_dim);
constexpr int k_row_bytes = k_dim * 2;
constexpr int k_chunks = k_row_bytes / 16;
constexpr int k_pass = 128;  // keys per pass: 4 warps x 32
// Score CTAs have 4 or 8 warps (`warps`; 32 or 16 keys of a pass each); all of them issue the
// pass's copies.
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

static_assert(k_pass * k_chunks % 256 == 0, "pass load must divide evenly");

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

#ifndef DSV4_IDX_DIAG
#define DSV4_IDX_DIAG 0
#endif
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

// Pair p (0..3) of a stored word of E2M1 codes (io/indexer_fp4_key.h: the pair's codes at bits
// [12 - 4 p, 16 - 4 p) and [28 - 4 p, 32 - 4 p) of the logical word, indexer_fp4_stored_pair
// picks them from the stored bit order) as bf16x2 times the block scale, exactly. The
// codes are first placed in bf16's lowest exponent bits (sign -> bit 15, exponent-mantissa -> bits
// 8..6), which is the e2m1 value times 2^-126 (code 1, 0.5, lands on the subnormal 2^-127), then
// multiplied by 2^126 and by the scale 2^(byte - 127) (scale2 = byte << 7 in both halves): powers
// of two, so both products are exact (bf16 FMA keeps subnormal inputs) and equal the bf16 rounding
// of e2m1 * s that a bf16 key pool holds.
template <int p>
__device__ __forceinline__ uint32_t e2m1x2_to_bf16x2(uint32_t word, uint32_t scale2) {
  uint32_t v = indexer_fp4_stored_pair(word, p);
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
  uint32_t v = indexer_fp4_stored_pair(word, p);
  constexpr uint32_t two_126 = 0x7E807E80u;
  constexpr uint32_t minus_zero = 0x80008000u;
  if constexpr (!one)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(two_126), "r"(minus_zero));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(m), "r"(minus_zero));
  return v;
}

// The same with the multiplier taken from half `h` (0: low, 1: high) of m2, a pair of them (see
// fp4_block_multipliers): ptxas reads the half through the HMUL2 operand's .H0_H0 / .H1_H1.
template <int p, bool one, int h>
__device__ __forceinline__ uint32_t e2m1x2_widen_half(uint32_t word, uint32_t m2) {
  uint32_t v = indexer_fp4_stored_pair(word, p);
  constexpr uint32_t two_126 = 0x7E807E80u;
  constexpr uint32_t minus_zero = 0x80008000u;
  if constexpr (!one)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(v) : "r"(v), "r"(two_126), "r"(minus_zero));
  if constexpr (h == 0)
    asm("{\n.reg .b16 l, h;\n.reg .b32 m;\nmov.b32 {l, h}, %2;\nmov.b32 m, {l, l};\n"
        "fma.rn.bf16x2 %0, %1, m, %3;\n}"
        : "=r"(v)
        : "r"(v), "r"(m2), "r"(minus_zero));
  else
    asm("{\n.reg .b16 l, h;\n.reg .b32 m;\nmov.b32 {l, h}, %2;\nmov.b32 m, {h, h};\n"
        "fma.rn.bf16x2 %0, %1, m, %3;\n}"
        : "=r"(v)
        : "r"(v), "r"(m2), "r"(minus_zero));
  return v;
}

// The A fragment of k-step kk (f[0..3]: rows g, g + 8 of the lane's two k-pairs) from the code
// words w0, w1 of rows g, g + 8 (the word of k-steps 2 w and 2 w + 1, w = kk / 2: pairs 0, 1 for
// the even step, 2, 3 for the odd one) and their multipliers m0, m1 (see e2m1x2_widen).
template <bool one>
__device__ __forceinline__ void widen_fp4_fragment(int kk, uint32_t w0, uint32_t w1, uint32_t m0,
                                                   uint32_t m1, uint32_t (&f)[4]) {
  if (kk % 2 == 0) {
    f[0] = e2m1x2_widen<0, one>(w0, m0);
    f[1] = e2m1x2_widen<0, one>(w1, m1);
    f[2] = e2m1x2_widen<1, one>(w0, m0);
    f[3] = e2m1x2_widen<1, one>(w1, m1);
  } else {
    f[0] = e2m1x2_widen<2, one>(w0, m0);
    f[1] = e2m1x2_widen<2, one>(w1, m1);
    f[2] = e2m1x2_widen<3, one>(w0, m0);
    f[3] = e2m1x2_widen<3, one>(w1, m1);
  }
}

// widen_fp4_fragment with each row's multiplier as half kk / 2 % 2 of m0, m1 (a pair: blocks
// 2 (kk / 4) and 2 (kk / 4) + 1, see fp4_block_multipliers).
template <bool one>
__device__ __forceinline__ void widen_fp4_fragment_half(int kk, uint32_t w0, uint32_t w1,
                                                        uint32_t m0, uint32_t m1,
                                                        uint32_t (&f)[4]) {
  const auto widen = [&](auto p_c) {
    constexpr int p = decltype(p_c)::value;
    if ((kk / 2) % 2 == 0) {
      f[(p % 2) * 2] = e2m1x2_widen_half<p, one, 0>(w0, m0);
      f[(p % 2) * 2 + 1] = e2m1x2_widen_half<p, one, 0>(w1, m1);
    } else {
      f[(p % 2) * 2] = e2m1x2_widen_half<p, one, 1>(w0, m0);
      f[(p % 2) * 2 + 1] = e2m1x2_widen_half<p, one, 1>(w1, m1);
    }
  };
  if (kk % 2 == 0) {
    widen(std::integral_constant<int, 0>{});
    widen(std::integral_constant<int, 1>{});
  } else {
    widen(std::integral_constant<int, 2>{});
    widen(std::integral_constant<int, 3>{});
  }
}

// The multipliers of scale blocks 2 j and 2 j + 1 of a row in the low and high halves (bytes
// 2 j, 2 j + 1 of its scale word, << 7, each plus `add`'s half; see fp4_block_multiplier).
__device__ __forceinline__ uint32_t fp4_block_multipliers(uint32_t sbytes, int j, uint32_t add) {
  const uint32_t sel = 0x4040u | uint32_t(2 * j + 1) << 8 | uint32_t(2 * j);
  return (__byte_perm(sbytes, 0u, sel) << 7) + add;
}

// The multiplier of scale block k of a row (byte k of its scale word in both halves, << 7:
// b * 0x00800080) plus `add` (see e2m1x2_widen).
__device__ __forceinline__ uint32_t fp4_block_multiplier(uint32_t sbytes, int k, uint32_t add) {
  const uint32_t sel = 0x4040u | uint32_t(k) << 8 | uint32_t(k);
  return (__byte_perm(sbytes, 0u, sel) << 7) + add;
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
      widen_fp4_fragment<one>(kk, w0, w1, m[mt][0][w], m[mt][1][w], a[kk][mt]);
    }
}

// ordered_float_bits(v) >> 20, the histogram bin of a score, in integer ops: with t = the top 12
// bits sign-extended, a negative v's bin is ~t = (~bits) >> 20 and any other t | 0x800. v + 0.0f
// maps -0 to +0 as ordered_float_bits does (a product that underflows to -0 is possible); NaN
// results of the GPU's arithmetic are the canonical 0x7fffffff, which the add keeps. Checked
// against ordered_float_bits(v) >> 20 for every other bit pattern (IDX26, on the host).
__device__ __forceinline__ uint32_t score_bin(float v) {
  const int32_t b = __float_as_int(v + 0.0f);
  return uint32_t((b >> 20) ^ ((b >> 31) | 0x800));
}

// E4M3 keys feed mma.sync without a shared-memory conversion pass: the reduction dimension is
// permuted so that lane quad t holds key bytes 32 t .. 32 t + 31 of its rows for all eight k-steps
// (two 16-byte loads per row). MMA k index 16 kk + j takes the key's (and the query's) dimension
// k_fp8_dim(kk, j); the query is stored in shared memory in the same order.
__device__ __forceinline__ int k_fp8_dim(int kk, int j) {
  return 32 * ((j % 8) / 2) + 4 * kk + 2 * (j / 8) + (j % 2);
}

// ---- pieces shared by indexer_score_kernel and indexer_score_three_kernel ----

// The score CTA's keys: token t = blockIdx.y, its visible entries n (clamped to the capacity),
// keys [lo, hi) of this CTA in `passes` passes of k_pass; pages.seq set. False: no keys here.
struct score_cta_keys {
  int64_t t, n, lo, hi, passes;
};
template <bool early_seq = false>
__device__ __forceinline__ bool score_cta_keys_of(const int32_t* n_visible,
                                                  const int32_t* token_seq, int64_t capacity,
                                                  int64_t keys_per_cta, paged_entries& pages,
                                                  score_cta_keys& k) {
  k.t = blockIdx.y;
  // A plain load of token_seq[t] is issued after the return below, where it is first used (ptxas
  // sinks it), so the prologue waits for n_visible, token_seq, the block ids and the keys in turn
  // (IDX27, session 21). early_seq (the `fast` list kernel; IDX29, session 21): token_seq[t] by a
  // volatile load issued before n_visible[t]'s (ptxas may not sink a volatile load below the
  // return), both trips in flight together; 121 registers and the score loop's SASS as before.
  // H200, same call, T=1 x 256K FP4 keys, medians of 8: top-512 in all 24.06 -> 23.46 us, top-1024
  // 24.77 -> 24.16, first loop end 9.68 -> 9.00 us after the first CTA's entry
  // (bench/kernels/results/2026-11-27_s21_idx29_NOTES.md).
  int32_t seq, visible;
  if constexpr (early_seq) {
    asm volatile("ld.volatile.global.b32 %0, [%1];" : "=r"(seq) : "l"(token_seq + k.t));
    visible = n_visible[k.t];
  } else {
    visible = n_visible[k.t];
    seq = token_seq[k.t];
  }
  k.n = clamp_visible(visible, capacity);
  k.lo = int64_t(blockIdx.x) * keys_per_cta;
  if (k.lo >= k.n) return false;
  k.hi = min(k.lo + keys_per_cta, k.n);
  k.passes = (k.hi - k.lo + k_pass - 1) / k_pass;
  pages.seq = seq;
  return true;
}

// The sequence's block ids of keys [lo, hi) into range_blocks (one round of dependent loads per
// CTA, none in the key loops); returns the range's first block.
// narrow (the fast list kernel; IDX33, session 21): by 32-bit divisions, as 0 <= lo < hi < 2^31
// (n_visible is int32), instead of two CALLs of the 64-bit division subroutine; 118 registers
// instead of 121, the score loop rescheduled by ptxas. H200, same call, T=1 x 256K FP4 keys,
// medians of 8: top-512 in all 23.39 -> 23.10 us, top-1024 24.03 -> 23.74, chained per call
// 20.42-20.51 -> 20.33-20.34 (bench/kernels/results/2026-11-27_s21_idx33_NOTES.md). The other
// score kernels keep the 64-bit form (the narrow one changes their SASS: not measured).
template <int threads, bool narrow = false>
__device__ __forceinline__ int64_t score_range_blocks(const paged_entries& pages, int64_t lo,
                                                      int64_t hi, int32_t* range_blocks) {
  int64_t block0;
  int n_blocks;
  if constexpr (narrow) {
    const uint32_t bs = uint32_t(pages.block_size);
    const uint32_t b0 = uint32_t(lo) / bs;
    block0 = b0;
    n_blocks = int(uint32_t(hi - 1) / bs - b0 + 1);
  } else {
    block0 = lo / pages.block_size;
    n_blocks = int((hi - 1) / pages.block_size - block0 + 1);
  }
  prologue_stamp<narrow>(11, uint32_t(n_blocks));  // divisions done
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
// The two halves of score_issue_fp4_bulk for indexer_score_three_kernel's pass table (`fast`;
// score_issue_fp4_bulk itself stays written out: as these two, the mma.sync kernels' SASS changed).
// Pass j's first pool row, rows to copy and rows that score.
__device__ __forceinline__ void score_fp4_bulk_pass(const fp4_bulk_source& src, int64_t j,
                                                    int64_t& row0, int& copy, int& valid) {
  const uint32_t start = uint32_t(src.lo + j * k_pass);
  const uint32_t block = start / src.bs;
  const int32_t id = src.range_blocks[block - uint32_t(src.block0)];
  row0 = int64_t(id) * src.bs + (start - block * src.bs);
  copy = 0;
  valid = 0;
  if (id >= 0 && row0 < src.pages->pool_rows) {
    copy = int(min(int64_t(k_pass), src.pages->pool_rows - row0));
    valid = min(copy, int(src.hi - int64_t(start)));
  }
}
// The copies of pass j (rows row0 .. row0 + copy - 1, `valid` of them scoring) into `stage`.
__device__ __forceinline__ void score_issue_fp4_bulk_rows(const fp4_bulk_source& src, int64_t j,
                                                          int stage, int64_t row0, int copy,
                                                          int valid, int32_t* pass_rows,
                                                          uint32_t* pass_scales, uint32_t full_s,
                                                          uint32_t k_s) {
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
      cp_async_cg_16_zfill_noclobber(q_s + (wg ? q_wg_offset(r, c) : swizzled(r, c)),
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
  score_cta_keys ck;
  if (!score_cta_keys_of(n_visible, token_seq, capacity, keys_per_cta, pages, ck)) return;
  const int64_t t = ck.t, lo = ck.lo, hi = ck.hi, passes = ck.passes;
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
        cp_async_cg_16_zfill_noclobber(
            dst + r * k_fp4_row_bytes + chunk * 16,
            row >= 0 ? keys8 + int64_t(row) * k_fp4_row_bytes + chunk * 16 : keys8, row >= 0);
      }
      const int32_t row = threadIdx.x < k_pass ? rows[threadIdx.x] : -1;
      if (threadIdx.x < k_pass)
        cp_async_ca_zfill_noclobber<4>(
            smem_u32(pass_scales + (p % k_row_ring) * k_pass + threadIdx.x),
            row >= 0 ? key_scales4 + row : key_scales4, row >= 0);
    } else if constexpr (fp8) {
      constexpr int chunks = k_fp8_row_bytes / 16;
      const int chunk = threadIdx.x % chunks;
      const uint32_t dst = k_s + stage * k_fp8_pass_bytes;
#pragma unroll
      for (int i = 0; i < k_pass * chunks / k_score_threads; ++i) {
        const int r = threadIdx.x / chunks + (k_score_threads / chunks) * i;
        const int32_t row = rows[r];
        cp_async_cg_16_zfill_noclobber(dst + swizzled_fp8(r, chunk),
                                       row >= 0 ? keys8 + int64_t(row) * k_dim + chunk * 16 : keys8,
                                       row >= 0);
      }
      const int32_t row = threadIdx.x < k_pass ? rows[threadIdx.x] : -1;
      if (threadIdx.x < k_pass)
        cp_async_ca_zfill_noclobber<4>(
            smem_u32(pass_scales + (p % k_row_ring) * k_pass + threadIdx.x),
            row >= 0 ? key_scales + row : key_scales, row >= 0);
    } else {
      const int chunk = threadIdx.x % k_chunks;
      const uint32_t dst = k_s + stage * k_pass_bytes;
#pragma unroll
      for (int i = 0; i < k_pass * k_chunks / k_score_threads; ++i) {
        const int r = threadIdx.x / k_chunks + (k_score_threads / k_chunks) * i;
        const int32_t row = rows[r];
        cp_async_cg_16_zfill_noclobber(dst + swizzled(r, chunk),
                                       row >= 0 ? keys + int64_t(row) * k_dim + chunk * 8 : keys,
                                       row >= 0);
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
    cp_async_commit_noclobber();
    cp_async_wait_noclobber<0>();
    wgmma::fence_async_smem();
  } else {
    __syncthreads();  // rows of passes 0 .. stages - 1, the f32 path's query
    // Passes 0 .. stages - 2 in flight, one commit group each (the q copy joins group 0); empty
    // groups keep the count uniform.
#pragma unroll
    for (int j = 0; j < stages - 1; ++j) {
      if (j < passes) load_pass(j, j);
      cp_async_commit_noclobber();
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
      cp_async_wait_noclobber<stages - 2>();  // groups 0 .. p complete (p + stages - 1 committed)
      // wgmma reads the query through the async proxy: this thread's copies (group 0) visible.
      if constexpr (wg)
        if (p == 0) wgmma::fence_async_smem();
      __syncthreads();  // pass p landed for all; pass p - 1 consumed by all
      // Pass p + stages - 1 goes into the stage of pass p - 1.
      if (p + stages - 1 < passes) load_pass(p + stages - 1, int((p + stages - 1) % stages));
      cp_async_commit_noclobber();
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
  cp_async_wait_noclobber<0>();
  __syncthreads();
  // Launched as a programmatic dependent of the zeroing kernel (plan.zero_kernel): its zeros of
  // the histogram first (a no-op otherwise).
  pdl_wait();
  for (int b = threadIdx.x; b < k_bins; b += k_score_threads)
    if (hist_s[b]) atomicAdd(&hist[t * k_bins + b], hist_s[b]);
}

// One relaxed GPU-scope add of v at p + off_bytes when v is nonzero (what atomicAdd without a used
// result compiles to, REDG.E.ADD.STRONG.GPU); the offset is the instruction's immediate, so the
// unrolled REDs of flush_hist_unrolled share one address register pair (no address rebuilt per
// RED).
template <int off_bytes>
__device__ __forceinline__ void red_add_nz(uint32_t* p, uint32_t v) {
  asm volatile(
      "{\n .reg .pred nz;\n setp.ne.u32 nz, %1, 0;\n"
      " @nz red.relaxed.gpu.global.add.u32 [%0+%2], %1;\n}\n" ::"l"(p),
      "r"(v), "n"(off_bytes)
      : "memory");
}
template <int threads, int j = 0>
__device__ __forceinline__ void red_bins_strided(uint32_t* p,
                                                 const uint32_t (&v)[k_bins / threads]) {
  if constexpr (j < k_bins / threads) {
    red_add_nz<j * threads * 4>(p, v[j]);
    red_bins_strided<threads, j + 1>(p, v);
  }
}
// The CTA's histogram flush (hist_s's k_bins bins added to the token's hist, bin b by thread
// b % threads as the loop form does): the thread's k_bins / threads loads first, then its REDs of
// the nonzero ones, off one base. The loop form compiled to 4 bins per iteration with each RED's
// address moved into one register pair after the previous RED had read it. IDX17 (session 17,
// H200, same binary, T=1 x 256K top-512): pdl_wait -> thread 0's flush issued 0.99 -> 0.77 us
// median per CTA (0.77 -> 0.51-0.58 for the CTA that flushed last); ~148 of the 4096 bins are
// nonzero per CTA there, in 6 of the 8 warps, up to ~48 in one (bench/kernels/results/
// 2026-11-27_s17_idx17_NOTES.md). plan.score_list only (the other score kernels keep the loop).
template <int threads>
__device__ __forceinline__ void flush_hist_unrolled(const uint32_t* hist_s, uint32_t* hist) {
  uint32_t v[k_bins / threads];
#pragma unroll
  for (int j = 0; j < k_bins / threads; ++j) v[j] = hist_s[threadIdx.x + j * threads];
  red_bins_strided<threads>(hist + threadIdx.x, v);
}

// score_list_keys' snapshot of the token's coarse histogram (256 words), read by one warp: lane l
// holds coarse bins 8 (31 - l) .. 8 (31 - l) + 7 (two 16-byte relaxed loads; lane 0 the top bins).
__device__ __forceinline__ void load_coarse_snapshot(const uint32_t* coarse, int lane,
                                                     uint32_t (&w)[8]) {
  const uint32_t* p = coarse + 8 * (31 - lane);
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
               : "l"(p)
               : "memory");
  asm volatile("ld.relaxed.gpu.global.v4.u32 {%0, %1, %2, %3}, [%4+16];"
               : "=r"(w[4]), "=r"(w[5]), "=r"(w[6]), "=r"(w[7])
               : "l"(p)
               : "memory");
}
// Over a warp's snapshot (load_coarse_snapshot), to every lane: x the total, y the coarse bin cb
// where the count from the top bin down reaches k, z the keys in the bins above cb; cb = z = 0
// when the total is below k. (The lanes' sums scanned from lane 0, the top; the one lane whose
// range holds the k-th key walks its 8 bins down.)
__device__ __forceinline__ uint3 scan_coarse_snapshot(const uint32_t (&w)[8], int lane,
                                                      uint32_t k) {
  uint32_t s = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += w[j];
  const uint32_t incl = warp_inclusive_sum(s, lane);
  const uint32_t total = __shfl_sync(0xffffffffu, incl, k_warp_size - 1);
  const uint32_t before = incl - s;  // keys in the lanes' bins above this lane's
  const bool here = before < k && before + s >= k;
  uint32_t cb = 0, above = 0, acc = before;
  bool found = false;
#pragma unroll
  for (int j = 7; j >= 0; --j) {
    if (here && !found && acc + w[j] >= k) {
      cb = uint32_t(8 * (31 - lane) + j);
      above = acc;
      found = true;
    }
    acc += w[j];
  }
  const unsigned who = __ballot_sync(0xffffffffu, here);
  if (who == 0) return make_uint3(total, 0u, 0u);
  const int src = __ffs(who) - 1;
  return make_uint3(total, __shfl_sync(0xffffffffu, cb, src), __shfl_sync(0xffffffffu, above, src));
}

// plan.score_list: snapshot reads of the coarse histogram before the listing proceeds with a thin
// one (plan.list_once: one), k_list_sleep_ns apart.
constexpr int k_list_tries = 24;
constexpr unsigned k_list_sleep_ns = 64;
// plan.list_direct: the select ranks the listed keys in or above the threshold bin directly when
// there are at most this many (each CTA's share against all of them), else resolves 12 more bits.
constexpr int k_list_direct_max = 4096;
// plan.list_rank: the select ranks the whole list (no histogram) when it holds at most this many.
constexpr int k_list_rank_max = 4096;
// plan.score_list: the score CTA lists its own keys (entries [lo, hi) of the token's scores, this
// CTA's writes) that may be among the token's top k, so that no collect launch is needed. It adds
// its 256 coarse bins (top 8 key bits: 16 fine bins each) to the token's coarse histogram, then
// flushes its fine histogram (hist) while warp 0 reads back a snapshot of the coarse histogram,
// then the 16 fine bins of the coarse bin where the snapshot's count from the top reaches k. Every
// snapshot count is a count of real keys (other CTAs' adds land in any order, so each bin may miss
// some, never over-count), hence the bin found, L, is at or below the token's true threshold bin,
// and the keys with top 12 bits >= L include every key of this CTA at or above the threshold. They
// are appended to the token's candidate list (bounded: the count runs on past the capacity so the
// select sees an overflow and rescans the scores). A snapshot holding fewer than half the token's
// keys gives a loose L (the first CTAs to finish would list ~k keys each), so warp 0 re-reads it
// after a short sleep while it is that thin (bounded tries: the CTA never depends on others making
// progress, only the list's length does). `scratch`: one word of shared memory (free by then).
template <int threads>
__device__ __noinline__ void score_list_keys(const uint32_t* hist_s, uint32_t* scratch,
                                             const float* sc, int64_t lo, int64_t hi, int64_t n,
                                             uint32_t k, uint32_t* hist, uint32_t* coarse,
                                             uint32_t* count, unsigned long long* list,
                                             int tries_max) {
  static_assert(threads == k_bins / 16, "one coarse bin per thread");
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  // This CTA's coarse bin threadIdx.x (rotated reads: 2-way bank conflicts instead of 16), added
  // before the fine flush, and warp 0's first snapshot read right after its own adds (the other
  // warps' adds of this CTA may land after it: an undercount, as any other CTA's).
  uint32_t mine = 0;
#pragma unroll
  for (int j = 0; j < 16; ++j) mine += hist_s[16 * threadIdx.x + ((j + threadIdx.x) & 15)];
  if (mine) atomicAdd(&coarse[threadIdx.x], mine);
  uint32_t w[8];
  if (warp == 0) load_coarse_snapshot(coarse, lane, w);
  flush_hist_unrolled<threads>(hist_s, hist);
  trace_stamp(k_trace_score, 7);  // (thread 0's share of the fine flush issued)
  // The CTA's first scores requested now (the rest, if any, in the listing loop).
  constexpr int pre = 4;
  float v[pre];
#pragma unroll
  for (int u = 0; u < pre; ++u) {
    const int64_t e = lo + threadIdx.x + u * threads;
    v[u] = e < hi ? sc[e] : -INFINITY;
  }
  // Warp 0 alone scans the snapshot (and re-reads it while thin), then reads cb's fine bins and
  // publishes the bound L with one barrier: no block scan (3 barriers a try) and no barrier
  // between the snapshot and the fine load.
  if (warp == 0) {
    const uint32_t target = uint32_t((n + 1) / 2);
    uint3 snap;
    for (int tries = 0;; ++tries) {
      if (tries > 0) load_coarse_snapshot(coarse, lane, w);
      snap = scan_coarse_snapshot(w, lane, k);
      if (snap.x >= target || tries + 1 >= tries_max) break;
      __nanosleep(k_list_sleep_ns);
    }
    trace_stamp(k_trace_score, 3);
    const uint32_t total = snap.x, cb = snap.y, above = snap.z;
    uint32_t fine = 16 * cb;  // fewer than k keys in the snapshot: cb = 0, every key listed
    if (total >= k) {
      uint32_t f = 0;
      if (lane < 16)
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                     : "=r"(f)
                     : "l"(hist + 16 * cb + 15 - lane));
      f = warp_inclusive_sum<16>(f, lane);
      // (The fine bins were read after the coarse ones: if they hold fewer keys, cb's lowest.)
      const unsigned hit = __ballot_sync(0xffffffffu, lane < 16 && above + f >= k);
      if (hit) fine = 16 * cb + 15 - uint32_t(__ffs(hit) - 1);
    }
    if (lane == 0) scratch[0] = fine;
  }
  __syncthreads();
  const uint32_t fine = scratch[0];
  // The listing: each warp appends its keys of all `pre` rounds with one atomicAdd on the list's
  // count (one add per round chained up to `pre` dependent round trips on that one word; IDX32,
  // H200 T=1 x 256K top-512: the last CTA listed ~0.7 us after the last CTA knew its bound, the
  // loop-last CTA ~0.3 us after). The list's order is free (the select ranks keys); the count
  // still runs on past the capacity, nothing written there (the select's overflow rescan).
  // Lead run of IDX32's build (H200, same call as main 887a1c9): last listing 16.35-16.42 ->
  // 16.13-16.22 us, per call in a graph of 8 20.73-20.77 -> 20.56-20.60 us (top-1024 21.76-21.84
  // -> 21.45-21.46), single-call medians 23.30 -> 23.33 (top-512), 24.10 -> 23.94 (top-1024).
  const unsigned below = (1u << lane) - 1u;
  for (int64_t base = lo; base < hi; base += pre * threads) {
    unsigned long long key[pre];
    unsigned m[pre];
    uint32_t total = 0;
#pragma unroll
    for (int u = 0; u < pre; ++u) {
      const int64_t e = base + threadIdx.x + u * threads;
      const float x = base == lo ? v[u] : (e < hi ? sc[e] : -INFINITY);
      key[u] = entry_key(x, e);
      m[u] = __ballot_sync(0xffffffffu, e < hi && key_bin(key[u]) >= fine);
      total += uint32_t(__popc(m[u]));
    }
    if (total == 0) continue;  // (warp-uniform)
    uint32_t slot = 0;
    if (lane == 0) slot = atomicAdd(count, total);
    slot = __shfl_sync(0xffffffffu, slot, 0);
#pragma unroll
    for (int u = 0; u < pre; ++u) {
      const uint32_t i = slot + uint32_t(__popc(m[u] & below));
      if (((m[u] >> lane) & 1u) && i < uint32_t(k_candidate_capacity)) list[i] = key[u];
      slot += uint32_t(__popc(m[u]));
    }
  }
  trace_stamp(k_trace_score, 4);
}

// plan.score_three: FP4 bulk decoupled passes, 8 warps, three CTAs per SM (24 warps per SM to
// hide the per-pass latency chain; 16 with two). The register-A wgmma path with its A fragments
// widened one k-step ahead of the MMAs (8 live A registers instead of 32) so that the kernel fits
// 80 registers, and three key stages so that three CTAs fit the shared memory.
// With `list` (plan.score_list) each CTA then lists its candidates (score_list_keys).
// With `fast` (plan.score_fast, list only: the grid has at most two CTAs per SM) the kernel is
// built for two CTAs per SM (__launch_bounds__(256, 2): 122 registers), with the weights in
// registers, all 8 A fragments of a pass widened before its 8 wgmmas (one fence, one commit group,
// one wait), and the next pass's copies issued between that commit and the wait from a table of the
// passes' copy parameters (pass_tab, k_pass_tab entries: first pool row, rows to copy | rows that
// score << 16), computed in the prologue by the CTA's threads: the issuing lane reads one word
// instead of dividing by the block size, looking the block up and bounding the rows, and that work
// and its wait for the stage's release overlap the pass's MMAs instead of delaying its warpgroup's
// first wgmma. The same products, K order and epilogue, so the same scores bit for bit. IDX23
// (session 19, H200, T=1 x 256K FP4 keys, same call, medians of 6 rows): top-512 in all 27.39
// (main) -> 25.06 us, scores 24.4 -> 22.3; top-1024 27.84-28.13 -> 25.60-25.79
// (bench/kernels/results/ 2026-11-27_s19_idx23_NOTES.md: the parts one at a time).
constexpr int k_pass_tab = 64;
constexpr int score_three_smem_bytes(int stages, bool tab = false) {
  return k_q_bytes + stages * k_fp4_pass_bytes + k_bins * 4 + k_row_ring * 4 + stages * k_pass * 4 +
         (k_max_range_blocks + 1) / 2 * 8 + stages * 16 + 8 * 4 * 8 + (tab ? k_pass_tab * 8 : 0);
}
static_assert(3 * (score_three_smem_bytes(k_stages_fp4_three) + 1024) <= 228 * 1024,
              "three CTAs per SM");
// `fast` (plan.score_fast; IDX23, session 19): the list kernel built for two CTAs per SM
// (__launch_bounds__(256, 2): the list grid has at most two CTAs per SM) with the weights in
// registers, every k-step's A fragment widened before the pass's 8 wgmmas (one fence, one commit
// group, one wait), the pass table (k_pass_tab), and the next pass's copies issued after the pass's
// last wgmma commit, before its wait (the issuing lane's work and its wait for the stage's release
// overlap the MMAs). The same scores bit for bit. H200, same call, T=1 x 256K FP4 keys, top-512 in
// all: 27.39 -> 25.06 us (scores 24.4 -> 22.3); the parts alone, four stages and three CTAs per SM
// (slower) in bench/kernels/results/2026-11-27_s19_idx23_NOTES.md. IDX26 (session 20): the scale
// multipliers of two blocks in one register (widen_fp4_fragment_half: HMUL2 reads a half), each
// lane's score row as a loop-invariant pointer and bound, the histogram bin by score_bin: 308 ->
// 295 SASS instructions per warp-pass on the common path, the same scores and bins; H200, same
// call, T=1 x 256K FP4 keys, medians of 10 rows: top-512 in all 24.80 -> 24.26 us, scores 21.79 ->
// 21.12 (bench/kernels/results/2026-11-27_s20_idx26_NOTES.md; software pipelining across passes
// was slower there).
template <typename act_t, int stages, bool list = false, bool fast = false>
__global__ void __launch_bounds__(256, fast ? 2 : 3)
    indexer_score_three_kernel(const act_t* q, const act_t* weights, const void* key_pool,
                               const void* key_scales_raw, paged_entries pages,
                               const int32_t* token_seq, const int32_t* n_visible, int64_t capacity,
                               int64_t keys_per_cta, float q_scale, float* scores,
                               int64_t score_stride, uint32_t* hist, int flags, token_state* state,
                               uint32_t* coarse, unsigned long long* cand_list, int top_k) {
  constexpr int warps = 8;
  constexpr bool w_smem = !fast;  // the weights in shared memory (16 registers)
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
  int2* pass_tab = reinterpret_cast<int2*>(w_pairs + 32);  // fast: [k_pass_tab]

  pdl_trigger();
  trace_stamp(k_trace_score, 0);
  prologue_stamp<fast>(12, uint32_t(reinterpret_cast<uintptr_t>(n_visible)));  // parameters
  score_cta_keys ck;
  if (!score_cta_keys_of<fast>(n_visible, token_seq, capacity, keys_per_cta, pages, ck)) return;
  prologue_stamp<fast>(0, ck.n);  // n_visible[t] landed (run 1: ptxas put it after token_seq[t])
  prologue_stamp<fast>(1, pages.seq);  // token_seq[t] landed
  const int64_t t = ck.t, n = ck.n, lo = ck.lo, hi = ck.hi, passes = ck.passes;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int64_t block0 = score_range_blocks<k_score_threads, fast>(pages, lo, hi, range_blocks);
  prologue_stamp<fast>(2, range_blocks[0]);  // thread 0's block id landed
  if (threadIdx.x == 0) score_init_barriers<k_score_threads>(full_s, empty_s, stages);
  __syncthreads();
  prologue_stamp<fast>(3, 0);  // every block id stored
  const uint32_t bs = uint32_t(pages.block_size);
  const fp4_bulk_source bulk_src{&pages, range_blocks, block0, lo, hi, bs, keys8, key_scales4};
  auto issue_bulk = [&](int64_t j, int stage) {
    score_issue_fp4_bulk(bulk_src, j, stage, pass_rows, pass_scales, full_s, k_s);
  };
  if constexpr (fast) {
    for (int j = int(threadIdx.x); j < min(passes, int64_t(k_pass_tab)); j += k_score_threads) {
      int64_t row0;
      int copy, valid;
      score_fp4_bulk_pass(bulk_src, j, row0, copy, valid);
      pass_tab[j] = make_int2(int(row0), copy | valid << 16);  // (pool rows are 32-bit)
    }
  }
  prologue_stamp<fast>(4, pass_tab[0].x);  // thread 0's pass table entries
  // Pass j's copies from the table into `stage` (the host launches `fast` only where every pass has
  // an entry: keys_per_cta <= k_pass_tab * k_pass).
  auto issue_tab = [&](int j, int stage) {
    const int2 e = pass_tab[j];
    score_issue_fp4_bulk_rows(bulk_src, j, stage, int64_t(e.x), e.y & 0xffff, e.y >> 16, pass_rows,
                              pass_scales, full_s, k_s);
  };
  score_stage_query<true, k_score_threads>(q_s, q, t);
  prologue_stamp<fast>(5, 0);  // query copies issued
  // The query's wgmma descriptor at k-step 0 (the k-steps add their offsets to its start field).
  const uint64_t q_desc = wgmma::sw128_desc(q_s, 16, 1024);
  if (threadIdx.x == 0)
    for (int j = 0; j < stages - 1; ++j)
      if (j < passes) issue_bulk(j, j);
  prologue_stamp<fast>(6, 0);  // passes 0-1 issued
  cp_async_commit_noclobber();
  cp_async_wait_noclobber<0>();
  prologue_stamp<fast>(7, 0);  // thread 0's query copies landed
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
    prologue_stamp<fast>(8, __float_as_uint(w[7][1]));  // the weights landed
  }
  __syncthreads();  // the query, hist_s's zeros (and w_pairs, pass_tab)
  if constexpr (fast && DSV4_IDX_PROLOGUE_STAMPS) {
    prologue_stamp<fast>(9, 0);  // the barrier
    if (threadIdx.x == 0 && passes > 0) mbar::wait(full_s, 0);
    prologue_stamp<fast>(10, 0);  // pass 0's keys landed
  }

  // Pass j's codes: issue pass j + stages - 1 (into the stage of pass j - 1, once every thread
  // released it; its count slot was last read by the epilogue of pass j + stages - 9, which every
  // thread finished before releasing pass j - 1), wait for pass j, read this lane's rows g, g + 8
  // of its warp (16 code bytes each) and their scale words, release the stage.
  uint4 raw4[2];
  uint32_t sbytes[2];
  uint32_t wg_big = 0;  // scale bytes >= 129 among the 64 rows of this warp's warpgroup
  // Pass j (32-bit: passes <= keys_per_cta / k_pass) in `stage` = j % stages with mbarrier parity
  // `phase` = (j / stages) & 1; the previous pass's stage is `prev` (= the stage that pass
  // j + stages - 1 refills) with parity `prev_phase`. Tracked by the loop, no 64-bit divisions.
  const int npasses = int(passes);
  // Pass j + stages - 1's copies into `prev` (the stage of pass j - 1) once every thread released
  // it: at the start of pass j, or (fast) after pass j's wgmmas are committed.
  auto issue_next = [&](int j, int prev, uint32_t prev_phase) {
    const int issuer = rotate ? (j % warps) * k_warp_size : 0;
    if (int(threadIdx.x) == issuer && j + stages - 1 < npasses) {
      if (j > 0) mbar::wait(empty_s + 8 * uint32_t(prev), prev_phase);
      if constexpr (fast)
        issue_tab(j + stages - 1, prev);
      else
        issue_bulk(j + stages - 1, prev);
    }
  };
  auto load_pass = [&](int j, int stage, uint32_t phase, int prev, uint32_t prev_phase) {
    if constexpr (!fast) issue_next(j, prev, prev_phase);
    mbar::wait(full_s + 8 * stage, phase);
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
  auto mma_pass = [&](float(&acc)[32], auto&& mid) {
  // Uniform over the warpgroup, not only the warp (every warp of it votes on the same 64 scale
  // words): the two branches below are separate wgmma instruction sites, each with its own A
  // registers, and the four warps of a warpgroup must issue the same wgmma (.sync.aligned). A
  // per-warp vote let the warps of one warpgroup diverge when only some of their rows had scale
  // bytes >= 129; the scores were right only while ptxas gave both branches the same A
  // registers (session 11: a 72-register build did not; the wide-scale parity cases failed).
#if DSV4_IDX_DIAG == 2 || DSV4_IDX_DIAG == 3 || DSV4_IDX_DIAG == 5
    // Diagnostic: the FP8 path's tensor and widening work (wrong scores). 2: one accumulator
    // (scale-d 1 across blocks); 3: a fresh accumulator per 32-dim block, then
    // acc += blk * scale (one FFMA per element and block).
    {
      uint32_t a[2][4];
#if DSV4_IDX_DIAG == 3
      float blk[32];
#endif
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const uint32_t w0 = word_of(raw4[0], k), w1 = word_of(raw4[1], k);
        if (k >= 2) wgmma::wait<1>();
        uint32_t(&f)[4] = a[k % 2];
#if DSV4_IDX_DIAG == 5
        // The instruction mix of an exact FP8 widening for per-(row, block) scales (values
        // wrong): a byte LUT of the 8 magnitudes x 2^s per row and block, PRMT for 4 codes at a
        // time, the signs spread to bit 7 of each byte by a byte-doubling PRMT and a shift.
        const auto widen4 = [](uint32_t w, uint32_t lo, uint32_t hi, int half) {
          const uint32_t sel = (half ? (w >> 16) : w) & 0x7777u;
          uint32_t mag, tt;
          asm("prmt.b32 %0, %1, %2, %3;" : "=r"(mag) : "r"(lo), "r"(hi), "r"(sel));
          asm("prmt.b32 %0, %1, %2, %3;"
              : "=r"(tt)
              : "r"(w), "r"(0u), "r"(half ? 0x3322u : 0x1100u));
          return mag | ((tt << 4) & 0x00800080u) | (tt & 0x80008000u);
        };
        const uint32_t s0 = (((sbytes[0] >> (8 * k)) & 7u) << 3) * 0x01010100u;
        const uint32_t s1 = (((sbytes[1] >> (8 * k)) & 7u) << 3) * 0x01010100u;
        f[0] = widen4(w0, 0x0C080400u + s0, 0x1C181410u + s0, 0);
        f[1] = widen4(w1, 0x0C080400u + s1, 0x1C181410u + s1, 0);
        f[2] = widen4(w0, 0x0C080400u + s0, 0x1C181410u + s0, 1);
        f[3] = widen4(w1, 0x0C080400u + s1, 0x1C181410u + s1, 1);
#else
        f[0] = w0 & 0x9C9C9C9Cu;
        f[1] = w1 & 0x9C9C9C9Cu;
        f[2] = ((w0 << 1) & 0x80808080u) | ((w0 << 2) & 0x1C1C1C1Cu);
        f[3] = ((w1 << 1) & 0x80808080u) | ((w1 << 2) & 0x1C1C1C1Cu);
#endif
        wgmma::fence();
        const uint64_t db = wgmma::sw128_desc(q_s + uint32_t(k * 32), 16, 1024);
#if DSV4_IDX_DIAG == 2 || DSV4_IDX_DIAG == 5
        if (k == 0)
          wgmma::fp8_rs<64>::run(acc, f, db, 0);
        else
          wgmma::fp8_rs<64>::run(acc, f, db, 1);
        wgmma::commit();
#else
        wgmma::fp8_rs<64>::run(blk, f, db, 0);
        wgmma::commit();
        wgmma::wait<0>();
        const float s0 = __uint_as_float(((sbytes[0] >> (8 * k)) & 0xffu) << 23);
        const float s1 = __uint_as_float(((sbytes[1] >> (8 * k)) & 0xffu) << 23);
#pragma unroll
        for (int i = 0; i < 32; ++i) {
          wgmma::reg_fence(blk[i]);
          const float sc = (i & 2) ? s1 : s0;
          acc[i] = k == 0 ? blk[i] * sc : fmaf(blk[i], sc, acc[i]);
        }
#endif
      }
      wgmma::wait<0>();
#pragma unroll
      for (int i = 0; i < 2; ++i)
        asm volatile("" ::"r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]) : "memory");
#pragma unroll
      for (int i = 0; i < 32; ++i) wgmma::reg_fence(acc[i]);
#if DSV4_IDX_DIAG == 5
      {  // the row's base scale (one FMUL per accumulator)
        const float r0 = __uint_as_float((sbytes[0] & 0xffu) << 23);
        const float r1 = __uint_as_float((sbytes[1] & 0xffu) << 23);
#pragma unroll
        for (int i = 0; i < 32; ++i) acc[i] *= (i & 2) ? r1 : r0;
      }
#endif
      return;
    }
#endif
    const bool one = !__any_sync(0xffffffffu, wg_big != 0);
    const uint32_t add = one ? 0x3F003F00u : 0u;
    const auto run = [&](auto one_c) {
      constexpr bool o = decltype(one_c)::value;
      uint32_t a[2][4];
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk) {
        const int k = kk / 2;
        const uint32_t w0 = word_of(raw4[0], k), w1 = word_of(raw4[1], k);
        const uint32_t m0 = fp4_block_multiplier(sbytes[0], k, add);
        const uint32_t m1 = fp4_block_multiplier(sbytes[1], k, add);
        if (kk >= 2) wgmma::wait<1>();  // k-step kk - 2 done: a[kk % 2] free
        uint32_t(&f)[4] = a[kk % 2];
#if DSV4_IDX_DIAG == 1
        // Diagnostic: no widening (the raw code words as bf16 pairs; wrong scores).
        f[0] = w0 ^ uint32_t(kk);
        f[1] = w1 ^ uint32_t(kk);
        f[2] = w0 + m0;
        f[3] = w1 + m1;
#else
        widen_fp4_fragment<o>(kk, w0, w1, m0, m1, f);
#endif
        wgmma::fence();
        // wgmma::sw128_desc(q_s + (kk / 4) * (k_heads * 128) + (kk % 4) * 32, 16, 1024): the
        // offset (a multiple of 16) added to the loop-invariant start field (no carry: shared
        // addresses + 8 KB stay below 2^18).
        const uint64_t db = q_desc + uint32_t(((kk / 4) * (k_heads * 128) + (kk % 4) * 32) >> 4);
#if DSV4_IDX_DIAG == 4
        // Diagnostic: the widening without the MMAs (wrong scores).
        (void)db;
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[4 * kk + e] = (kk < 4 ? 0.0f : acc[4 * kk + e - 16]) + __uint_as_float(f[e]);
#else
        if (kk == 0)
          wgmma_rs_n64_first(acc, f, db);
        else
          wgmma_rs_n64(acc, f, db);
#endif
        wgmma::commit();
      }
      mid();
      wgmma::wait<0>();
#pragma unroll
      for (int i = 0; i < 2; ++i)
        asm volatile("" ::"r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]) : "memory");
    };
    // fast: all 8 A fragments first, one fence, the 8 wgmmas in one group, `mid`, one wait.
    const auto run_all = [&](auto one_c) {
      constexpr bool o = decltype(one_c)::value;
      uint32_t a[k_dim / 16][4];
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk) {
        const int k = kk / 2;
        const uint32_t w0 = word_of(raw4[0], k), w1 = word_of(raw4[1], k);
        widen_fp4_fragment_half<o>(kk, w0, w1, fp4_block_multipliers(sbytes[0], k / 2, add),
                                   fp4_block_multipliers(sbytes[1], k / 2, add), a[kk]);
      }
      wgmma::fence();
#pragma unroll
      for (int kk = 0; kk < k_dim / 16; ++kk) {
        const uint64_t db = q_desc + uint32_t(((kk / 4) * (k_heads * 128) + (kk % 4) * 32) >> 4);
        if (kk == 0)
          wgmma_rs_n64_first(acc, a[kk], db);
        else
          wgmma_rs_n64(acc, a[kk], db);
      }
      wgmma::commit();
      mid();
      wgmma::wait<0>();
#pragma unroll
      for (int i = 0; i < k_dim / 16; ++i)
        asm volatile("" ::"r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]) : "memory");
    };
    if constexpr (fast) {
      if (one)
        run_all(std::true_type{});
      else
        run_all(std::false_type{});
    } else {
      if (one)
        run(std::true_type{});
      else
        run(std::false_type{});
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) wgmma::reg_fence(acc[i]);
  };
  // indexer_score_kernel's quad epilogue of pass pp (the same sums in the same order).
  auto epilogue = [&](const float(&acc)[32], int pp) {
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
    if constexpr (fast) {
      // (IDX26) This lane's score row of every pass: lanes with lane & 2 == 0 store row lane_r of
      // pass pp at lane_scores[pp * k_pass] while pp * k_pass < lane_left (loop-invariant, 32-bit:
      // hi - lo <= keys_per_cta); the bin by score_bin.
      const int lane_r = warp * 16 + (lane & 1) * 8 + lane / 4;
      float* const lane_scores = scores + t * score_stride + lo + lane_r;
      const int lane_left = int(hi - lo) - lane_r;
      if ((lane & 2) == 0 && pp * k_pass < lane_left) {
        float v = -INFINITY;
        if (lane_r < pass_rows[pp % k_row_ring]) v = mine * q_scale + 0.0f;
        lane_scores[pp * k_pass] = v;
        atomicAdd(&hist_s[score_bin(v)], 1u);
      }
    } else if ((lane & 2) == 0) {
      const int r = warp * 16 + (lane & 1) * 8 + lane / 4;
      const int64_t s = lo + int64_t(pp) * k_pass + r;
      if (s < hi) {
        float v = -INFINITY;
        if (r < pass_rows[pp % k_row_ring]) v = mine * q_scale + 0.0f;
        scores[t * score_stride + s] = v;
        atomicAdd(&hist_s[ordered_float_bits(v) >> 20], 1u);
      }
    }
  };
  float acc[32];
  {
    int stage = 0, prev = stages - 1;
    uint32_t phase = 0, prev_phase = 1;  // (pass -1's parity: unused, pass 0 waits on no release)
    for (int p = 0; p < npasses; ++p) {
      load_pass(p, stage, phase, prev, prev_phase);
      mma_pass(acc, [&] {
        if constexpr (fast) issue_next(p, prev, prev_phase);
      });
      epilogue(acc, p);
      prev = stage;
      prev_phase = phase;
      if (++stage == stages) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
  trace_stamp(k_trace_score, 1);
  trace_value(k_trace_score, 5, uint64_t(passes));
  trace_value(k_trace_score, 6, smid());
  __syncthreads();
  pdl_wait();
  if constexpr (list) {
    if (n > top_k) {  // (score_list_keys flushes the histogram after its coarse adds)
      score_list_keys<k_score_threads>(hist_s, pass_scales, scores + t * score_stride, lo, hi, n,
                                       uint32_t(top_k), hist + t * k_bins, coarse + t * k_bins,
                                       &state[t].cand_count, cand_list + t * k_candidate_capacity,
                                       (flags & k_score_flag_list_once) != 0 ? 1 : k_list_tries);
    } else {  // (n <= top_k: the select takes every entry)
      flush_hist_unrolled<k_score_threads>(hist_s, hist + t * k_bins);
      trace_stamp(k_trace_score, 7);
    }
  } else {
    for (int b = threadIdx.x; b < k_bins; b += k_score_threads)
      if (hist_s[b]) atomicAdd(&hist[t * k_bins + b], hist_s[b]);
    trace_stamp(k_trace_score, 7);  // (thread 0's share of the flush issued)
  }
  trace_stamp(k_trace_score, 2);
}

// Zeroes n16 16-byte words (the per-token state and histograms) and lets its programmatic
// dependent (the score kernel) start at once: the scores overlap it, and only their histogram
// flush waits for it.
__global__ void __launch_bounds__(256) indexer_zero_kernel(uint4* p, int64_t n16) {
  pdl_trigger();
  if (blockIdx.x == 0) trace_stamp_word(k_trace_zero + 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n16;
       i += int64_t(gridDim.x) * blockDim.x)
    p[i] = make_uint4(0, 0, 0, 0);
  if (blockIdx.x == 0) trace_stamp_word(k_trace_zero + 1);
  if (blockIdx.x == gridDim.x - 1) trace_stamp_word(k_trace_zero + 2);
}

}  // namespace

}  // namespace dsv4::cuda
