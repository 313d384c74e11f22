// W8A8 dense decode linear (see linear_decode_fp8act.h).
//
// Fragments of mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32 (lane = 4 g + q): A registers a0 / a2
// hold row g at k = 4q..4q+3 / 16+4q..16+4q+3, a1 / a3 the same for row g + 8; B registers
// b0 / b1 hold token column g at those k. Since the product sums over k, any bijection of the
// 32 k of an MMA onto real columns works if A and B use the same one: lane q takes the 32
// consecutive bytes [q * 32, q * 32 + 32) of a 128-k round (two 16-byte loads per row), and its
// MMA j (0..3) uses bytes 8j..8j+3 as "4q.." and 8j+4..8j+7 as "16+4q..", for the weights and
// for the activations alike (natural layout, one 16-byte load per token and half-round). A round
// is one 128-k block of weights and activations: one weight scale, one activation scale per
// token. C: c0 / c1 row g, token columns 2q / 2q + 1; c2 / c3 row g + 8.
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_decode_tail.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_block = 128;  // k per round: one scale block of weights and activations
// Warps per block: 16 with one n-tile (122 registers), 8 with more (16 would leave them 128
// registers and spill), the limits linear_decode_make_split applies for n_tiles <= 2 / > 2.
template <int NT>
constexpr int max_threads() {
  return (NT == 1 ? 16 : 8) * k_warp_size;
}

__device__ __forceinline__ void mma_e4m3(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A warp per (token, 128-k block): x8 = e4m3(x / s), sx = s (ops::fake_quant_fp8_act's rule).
template <typename act_t>
__global__ void fp8act_quantize_kernel(const act_t* x, int64_t tokens, int64_t cols, uint8_t* x8,
                                       float* sx) {
  // The GEMM may launch now (it waits for this grid before reading x8 / sx); this grid waits for
  // its predecessor before it reads x or overwrites x8 / sx, which a previous GEMM may still read.
  pdl_trigger();
  pdl_wait();
  const int lane = threadIdx.x % k_warp_size;
  const int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / k_warp_size;
  const int64_t blocks = cols / k_block;
  if (item >= tokens * blocks) return;  // uniform over the warp
  const int64_t at = (item / blocks) * cols + (item % blocks) * k_block + lane * 4;
  float s;
  reinterpret_cast<uint32_t*>(x8 + at)[0] = quant::fp8_block_codes_warp(x + at, s);
  if (lane == 0) sx[item] = s;
}

struct fp8_matrix {
  const uint8_t* data;
  const void* scale;
  int64_t rows, cols;
  bool scale_e8m0;
};

struct round_w {
  uint4 v[2][2];  // [row g, row g + 8][first, second 16 bytes of the lane's 32]
  uint32_t s;     // weight block scale (rows g and g + 8 share a 128-row block): f32 bits, or
                  // with LS the stored bits (an E8M0 byte, or f32 bits), converted at the MMAs
};

// E8M0 byte -> f32 (e8m0_to_f32's values) by selects: no branch on the loaded byte, so the load
// can stay in flight until the round's MMAs need it.
__device__ __forceinline__ float e8m0_to_f32_select(uint32_t b) {
  uint32_t v = b == 0 ? 0x00400000u : b << 23;
  v = b == 0xffu ? 0x7fc00000u : v;
  return __uint_as_float(v);
}

// One n-tile's activation fragments of a round (x_t::warp_view::get), loaded 2 rounds ahead of the
// round's MMAs when a kernel runs with XA.
struct round_x {
  uint4 a, b;
  float s0, s1;
};
template <int NT>
struct round_xs {  // a round's fragments of all n-tiles
  round_x t[NT];
};

// Round `round` of the lane's rows: w0 / w1 point at rows g / g + 8 at the lane's byte offset;
// scale_row at the weight scales of the tile's 128-row block.
template <bool LS>
__device__ __forceinline__ void load_round(round_w& r, const uint8_t* w0, const uint8_t* w1,
                                           const void* scale_row, bool e8m0, int64_t round) {
  const int64_t k = round * k_block;
  r.v[0][0] = fp4mma::load_stream_16(w0 + k);
  r.v[0][1] = fp4mma::load_stream_16(w0 + k + 16);
  r.v[1][0] = fp4mma::load_stream_16(w1 + k);
  r.v[1][1] = fp4mma::load_stream_16(w1 + k + 16);
  if constexpr (LS)
    r.s = e8m0 ? uint32_t(__ldg(static_cast<const uint8_t*>(scale_row) + round))
               : __float_as_uint(__ldg(static_cast<const float*>(scale_row) + round));
  else
    r.s = __float_as_uint(detail::load_block_scale(scale_row, round, e8m0));
}

// Activations in FP8 blocks, written by fp8act_quantize_kernel into the workspace.
struct x_blocks {
  const uint8_t* x8;
  const float* sx;  // [tokens][rounds]

  template <int NT>
  struct warp_view {
    const uint8_t* xr[NT];
    const float* sx[NT][2];
    __device__ __forceinline__ warp_view(const x_blocks& p, int tokens, int64_t cols,
                                         int64_t rounds, int g, int q) {
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        // Clamped token rows and columns are computed but never stored.
        xr[j] = p.x8 + int64_t(min(8 * j + g, tokens - 1)) * cols + q * 32;
        sx[j][0] = p.sx + int64_t(min(8 * j + 2 * q, tokens - 1)) * rounds;
        sx[j][1] = p.sx + int64_t(min(8 * j + 2 * q + 1, tokens - 1)) * rounds;
      }
    }
    // B fragments of n-tile j for round `round` (bytes [q * 32, q * 32 + 32) of token g) and the
    // activation scales of token columns 2q / 2q + 1.
    __device__ __forceinline__ void get(int j, int64_t round, uint4& xa, uint4& xb, float& s0,
                                        float& s1) const {
      xa = __ldg(reinterpret_cast<const uint4*>(xr[j] + round * k_block));
      xb = __ldg(reinterpret_cast<const uint4*>(xr[j] + round * k_block + 16));
      s0 = __ldg(sx[j][0] + round);
      s1 = __ldg(sx[j][1] + round);
    }
  };
};

// Activations quantized inside the GEMM (one n-tile: <= 8 tokens), with fp8act_quantize_kernel's
// rule: the four lanes of quad g hold token g's 128-k block of a round (32 values each), so the
// block's amax is two shuffles away, and the lane's 32 bytes are exactly its B fragments. Every
// warp of a K range quantizes the same blocks again, on each round's critical path: slower than
// the quantize launch unless K parts are long (linear_decode_fp8act_default_plan).
template <typename act_t>
struct x_in_warp {
  const act_t* x;

  template <int NT>
  struct warp_view {
    static_assert(NT == 1, "in-warp quantization covers one n-tile");
    const act_t* xr;
    int q;
    __device__ __forceinline__ warp_view(const x_in_warp& p, int tokens, int64_t cols, int64_t,
                                         int g, int q_)
        : xr(p.x + int64_t(min(g, tokens - 1)) * cols + q_ * 32), q(q_) {}
    __device__ __forceinline__ void get(int, int64_t round, uint4& xa, uint4& xb, float& s0,
                                        float& s1) const {
      // Raw loads first (bf16: 16 registers, f32: 32), converted twice (amax, then scaling).
      constexpr int per16 = 16 / sizeof(act_t);
      uint4 raw[32 / per16];
#pragma unroll
      for (int i = 0; i < 32 / per16; ++i)
        raw[i] = __ldg(reinterpret_cast<const uint4*>(xr + round * k_block) + i);
      auto value = [&](int i) {
        const uint32_t word = reinterpret_cast<const uint32_t*>(raw)[i * sizeof(act_t) / 4];
        if constexpr (std::is_same_v<act_t, float>)
          return __uint_as_float(word);
        else
          return __uint_as_float((i & 1) ? (word & 0xffff0000u) : (word << 16));
      };
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < 32; ++i) amax = fmaxf(amax, fabsf(value(i)));  // NaN ignored
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      const float s = quant::fp8_block_scale(amax);
      // v * (1 / s) == v / s: s is a power of two, 1 / s exact (2^-127 a subnormal), one rounding.
      const float inv = __frcp_rn(s);
      uint32_t u[8];
#pragma unroll
      for (int i = 0; i < 8; ++i)
        u[i] =
            quant::e4m3x2_bits(__fmul_rn(value(4 * i), inv), __fmul_rn(value(4 * i + 1), inv)) |
            (quant::e4m3x2_bits(__fmul_rn(value(4 * i + 2), inv), __fmul_rn(value(4 * i + 3), inv))
             << 16);
      xa = make_uint4(u[0], u[1], u[2], u[3]);
      xb = make_uint4(u[4], u[5], u[6], u[7]);
      s0 = __shfl_sync(0xffffffffu, s, 8 * q);  // token 2q lives in quad 2q
      s1 = __shfl_sync(0xffffffffu, s, 8 * q + 4);
    }
  };
};

// n-tile j of a round: weights r, activation fragments xa / xb, activation scales sx0 / sx1.
template <int NT, bool LS = false>
__device__ __forceinline__ void mma_tile(float (&acc)[NT][4], int j, const round_w& r,
                                         const uint4& xa, const uint4& xb, float sx0, float sx1,
                                         bool e8m0 = false) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_e4m3(t, r.v[0][0].x, r.v[1][0].x, r.v[0][0].y, r.v[1][0].y, xa.x, xa.y);
  mma_e4m3(t, r.v[0][0].z, r.v[1][0].z, r.v[0][0].w, r.v[1][0].w, xa.z, xa.w);
  mma_e4m3(t, r.v[0][1].x, r.v[1][1].x, r.v[0][1].y, r.v[1][1].y, xb.x, xb.y);
  mma_e4m3(t, r.v[0][1].z, r.v[1][1].z, r.v[0][1].w, r.v[1][1].w, xb.z, xb.w);
  const float ws = LS && e8m0 ? e8m0_to_f32_select(r.s) : __uint_as_float(r.s);
  const float s0 = __fmul_rn(ws, sx0);
  const float s1 = __fmul_rn(ws, sx1);
  acc[j][0] = fmaf(t[0], s0, acc[j][0]);
  acc[j][1] = fmaf(t[1], s1, acc[j][1]);
  acc[j][2] = fmaf(t[2], s0, acc[j][2]);
  acc[j][3] = fmaf(t[3], s1, acc[j][3]);
}

template <int NT, typename view_t>
__device__ __forceinline__ void mma_round(float (&acc)[NT][4], const round_w& r, const view_t& xv,
                                          int64_t round) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    uint4 xa, xb;
    float sx0, sx1;
    xv.get(j, round, xa, xb, sx0, sx1);
    mma_tile<NT>(acc, j, r, xa, xb, sx0, sx1);
  }
}

// Asks the TMA unit to bring [p, p + bytes) into L2 (no data returned; bytes % 16 == 0).
__device__ __forceinline__ void prefetch_l2_bulk(const void* p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}

// A block is rt x ks warps: rt 16-row tiles, each split into ks K parts (linear_decode_make_split);
// a warp carries NT n-tiles of 8 tokens and three rounds of weights in flight. x_t: x_blocks or
// x_in_warp<act_t> (NT == 1). l2_rounds > 0: before waiting on the launch before, the warp asks
// for that many more rounds of its rows (after the two it loads) to be brought into L2, so that
// HBM keeps streaming this call's weights while the dependency resolves.
//
// XA (x_blocks, one n-tile): a round's activation fragments are loaded 2 rounds ahead, with the
// weights of that round, into the x buffer paired with its weight buffer. Issued at the round's
// start instead, they wait behind the weight stream in L2 (x8 is a fresh write of the quantize
// launch) and that latency sits on every round's MMA chain (H200, session 24 l24a: the MMAs on
// constant x fragments ran 1.06-1.10x faster than the kernel). One round ahead was slower than
// none (l24b): the round's MMAs then also wait for the next round's just-issued loads, which share
// their scoreboard. LS: late scales (load_round).
template <int NT, typename x_t, bool XA = false, bool LS = false>
__global__ void __launch_bounds__(max_threads<NT>())
    fp8act_gemm_kernel(x_t xp, int tokens, fp8_matrix w, int rt, int ks, int l2_rounds, void* y,
                       bool y_bf16) {
  static_assert(!XA || (NT <= 2 && std::is_same_v<x_t, x_blocks>), "x ahead: <= 2 n-tiles");
  static_assert(!LS || XA, "late scales: with x ahead");
  pdl_trigger();  // the next call's first launch waits for this grid before it touches anything
  extern __shared__ float partial[];  // [ks - 1][rt][NT][4][32]
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % rt, kpart = warp / rt;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * rt + tile) * 16;
  const int64_t rounds = w.cols / k_block;
  const int64_t rb = rounds * kpart / ks, re = rounds * (kpart + 1) / ks;
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  const uint8_t* w0 = w.data + (r0 + g) * w.cols + q * 32;
  const uint8_t* w1 = w0 + 8 * w.cols;
  const void* scale_row =
      static_cast<const uint8_t*>(w.scale) + (r0 / 128) * rounds * (w.scale_e8m0 ? 1 : 4);
  const bool e8m0 = w.scale_e8m0;
  round_w a, b, c;  // three named buffers (an array indexed by r % 3 would go to local memory)
  if (rb < re) load_round<LS>(a, w0, w1, scale_row, e8m0, rb);
  if (rb + 1 < re) load_round<LS>(b, w0, w1, scale_row, e8m0, rb + 1);
  if (l2_rounds > 0 && lane < 16) {
    const int64_t pb = rb + 2, pe = min(re, pb + int64_t(l2_rounds));
    if (pb < pe)
      prefetch_l2_bulk(w.data + (r0 + lane) * w.cols + pb * k_block, uint32_t((pe - pb) * k_block));
  }
  pdl_wait();  // weights never depend on earlier launches; x, x8, sx and y do
  const typename x_t::template warp_view<NT> xv(xp, tokens, w.cols, rounds, g, q);
  if constexpr (!XA) {
    for (int64_t r = rb; r < re; r += 3) {
      if (r + 2 < re) load_round<LS>(c, w0, w1, scale_row, e8m0, r + 2);
      mma_round<NT>(acc, a, xv, r);
      if (r + 1 >= re) break;
      if (r + 3 < re) load_round<LS>(a, w0, w1, scale_row, e8m0, r + 3);
      mma_round<NT>(acc, b, xv, r + 1);
      if (r + 2 >= re) break;
      if (r + 4 < re) load_round<LS>(b, w0, w1, scale_row, e8m0, r + 4);
      mma_round<NT>(acc, c, xv, r + 2);
    }
  } else {
    round_xs<NT> xa, xb, xc;  // pair with a, b, c
    auto get = [&](round_xs<NT>& f, int64_t round) {
      if (round < re)
#pragma unroll
        for (int j = 0; j < NT; ++j) xv.get(j, round, f.t[j].a, f.t[j].b, f.t[j].s0, f.t[j].s1);
    };
    auto mma = [&](const round_w& w, const round_xs<NT>& f) {
#pragma unroll
      for (int j = 0; j < NT; ++j)
        mma_tile<NT, LS>(acc, j, w, f.t[j].a, f.t[j].b, f.t[j].s0, f.t[j].s1, e8m0);
    };
    // Round r on cur / xcur: round r + 2's weights into fill and activations into xfill, then
    // round r's MMAs.
    const auto step = [&](round_w& cur, round_w& fill, round_xs<NT>& xcur, round_xs<NT>& xfill,
                          int64_t r) {
      if (r + 2 < re) load_round<LS>(fill, w0, w1, scale_row, e8m0, r + 2);
      get(xfill, r + 2);
      mma(cur, xcur);
    };
    get(xa, rb);
    get(xb, rb + 1);
    for (int64_t r = rb; r < re; r += 3) {
      step(a, c, xa, xc, r);
      if (r + 1 >= re) break;
      step(b, a, xb, xa, r + 1);
      if (r + 2 >= re) break;
      step(c, b, xc, xb, r + 2);
    }
  }
  if (!decode_tail::sum_k_parts<NT>(acc, partial, rt, ks, tile, kpart, lane)) return;
  decode_tail::store<NT>(
      acc, [](float v) { return v; }, tokens, w.rows, r0, g, q, y, y_bf16);
}

size_t x8_bytes(int64_t tokens, int64_t cols) {
  return (size_t(std::max<int64_t>(tokens, 1) * cols) + 255) / 256 * 256;
}

}  // namespace

bool linear_decode_fp8act_supported(const device_weight& w) {
  if (w.kind != weight_kind::fp8_block || validate_weight(w) != cudaSuccess) return false;
  return w.rows % 16 == 0 && w.cols % k_block == 0 && aligned_16(w.data) &&
         w.rows / 16 <= int64_t(std::numeric_limits<int32_t>::max());
}

size_t linear_decode_fp8act_workspace_bytes(int64_t tokens, int64_t cols) {
  return x8_bytes(tokens, cols) + size_t(std::max<int64_t>(tokens, 1) * (cols / k_block)) * 4;
}

linear_decode_fp8act_plan linear_decode_fp8act_default_plan(const device_weight& w,
                                                            int64_t tokens) {
  // Measured on the H100 (bench_linear_gemm --w8a8-ab, two runs, bench/RESULTS.md session 9
  // LIN8), against the two-launch plan without prefetch:
  //  * in-GEMM quantization loses on K parts of <= 8 rounds (+4-16%: Flash wq_b T=1 12.85 ->
  //    13.69 us, Pro wq_a 7.01 -> 8.09) and wins on long ones: with 4 rounds of L2 prefetch,
  //    Pro wo_b (32 rounds a part) T=1-8 45.72 -> 44.90, 46.88 -> 44.71, 46.94 -> 44.97,
  //    45.74 -> 45.54 us (the per-round quantization hides behind the long weight stream);
  //  * 2 rounds of L2 prefetch (rounds 3-4 of a part, requested before the PDL wait) win on K
  //    parts of 3-8 rounds: Pro sh_w13 (7) 10.17 -> 9.79 us, Pro sh_w2 (6) 9.38 -> 9.15, Pro
  //    wq_a (3.5) 6.94 -> 6.47, Flash wo_b (8) 13.39 -> 13.22 at T=1 (T=8 14.26 -> 14.36), Flash
  //    wq_b (8) 12.79 -> 12.76; at 12 rounds (Pro wq_b) it was mixed (+1.2% at T=1, -1.4% at
  //    T=8), and deeper prefetches (4-16 rounds) lose wherever the grid fills the GPU (Flash wo_b
  //    pf8 +14%): the extra requests compete with the demand loads.
  // Re-measured on an H200 (session 23, call l23a, two processes): the in-GEMM rule loses there
  // at every T on Pro wo_b (T = 1 / 2 / 4 / 8: 37.1 / 37.8 / 39.7 / 41.0 us) where 2 prefetched
  // rounds with the quantize launch take 34.1 / 34.4 / 35.1 / 34.2 us (1.09-1.20x; the plain
  // two-launch plan 34.7-35.6); on the H100 that plan was within -2.5..+1.5% of in-GEMM's (the
  // run above: 44.74 / 45.85 / 45.93 / 44.87 us). So long parts take 2 prefetched rounds too;
  // in-GEMM quantization stays a plan option (benchmarks, tests). The 3-8-round rule holds on the
  // H200 (Pro wq_a T = 1 6.46 -> 6.06 us, Pro sh_w13 9.16 -> 8.89, Flash wq_b 10.7 -> 10.5); at 12
  // rounds (Pro wq_b) 2 rounds stay 1-1.3% slower, as on the H100.
  linear_decode_fp8act_plan p;
  if (tokens > 16 || !linear_decode_fp8act_supported(w)) return p;
  const int64_t rounds = w.cols / k_block;
  if (tokens > 8) {
    // Two n-tiles: activations 2 rounds ahead where a K part has >= 3 rounds, E8M0 scales at the
    // MMAs from 7168 rows. H200, session 24 (call l24l, --w8a8-xlead, one process, T = 9 / 16,
    // us, x_lead 0 -> the lead -> with late scales): Flash wq_b 16.7 / 17.0 -> 14.6 / 14.9 -> 13.7
    // / 13.9, Flash wo_b 19.2 / 19.6 -> 16.6 / 17.2 (late 16.8 / 17.9), Flash wq_a 5.9 / 6.0 -> 5.4
    // / 5.4 (late 5.1 / 5.3), Flash shared w13 6.5 / 6.6 -> 5.9 / 6.2 (late 6.0 / 6.3), Pro
    // wq_a 8.6 / 9.1 -> 7.3 / 7.5 (late 7.4 / 7.8), Pro wo_b 58-63 / 59 -> 44-45 / 45 -> 42.4-43.3
    // / 43.0, Pro shared w13 16.0 / 16.4 -> 13.5 / 13.8 (late 13.5 / 13.6), Pro shared w2 14.3
    // / 14.4 -> 12.5 / 12.8 -> 11.7 / 12.0; Pro wq_b 35-36 / 38-39 -> 38 / 41-45 -> 34.5-35.5
    // / 36.6-40.7 (noisy); Flash shared w2 (2 rounds a part at one n-tile) 7.9 / 8.2 -> 7.8 / 8.3.
    const linear_decode_split sp2 =
        linear_decode_make_split(w.rows, rounds, 4, current_device_sm_count());
    p.x_lead = rounds / sp2.k_parts >= 3 ? 2 : 0;
    p.late_scale = p.x_lead > 0 && w.rows >= 7168 ? 1 : 0;
    return p;
  }
  const linear_decode_split sp =
      linear_decode_make_split(w.rows, rounds, 1, current_device_sm_count());
  const int64_t per_part = rounds / sp.k_parts;
  if (per_part >= 16 || (per_part >= 3 && per_part <= 8)) p.l2_prefetch_rounds = 2;
  // Activations 2 rounds ahead where a K part has >= 3 rounds, and E8M0 scales converted at the
  // MMAs for matrices of >= 64 MiB. H200, session 24 (call l24b, bench_linear_gemm --w8a8-xlead,
  // one process, T = 1 / 2 / 4 / 8, us): Pro wq_b x_lead 0 28.8 / 29.2 / 29.6 / 30.2 -> lead 2
  // 27.1 / 27.6 / 28.0 / 28.2 -> with late scales 26.2 / 26.5 / 26.7 / 27.2 (84.9-82.0% of read);
  // Pro wo_b 35.1 / 35.0 / 35.4 / 35.0 -> 34.0 / 32.7 / 32.3 / 32.9 -> 32.6 / 32.0 / 31.6 / 32.5;
  // Flash wq_b 10.4 / 10.6 / 10.9 / 11.3 -> 9.9 / 10.0 / 10.1 / 10.3 (late scales: 10.1-10.7);
  // Flash wo_b 11.3 / 11.5 / 11.7 / 12.3 -> 10.6 / 10.8 / 11.3 / 12.1 (late: 11.2-12.1); Pro sh_w13
  // 8.9-9.5 -> 8.6-8.9 (late 8.5-9.1). K parts of 2 rounds lose up to 4% with the lead (Flash
  // sh_w13 T = 8 5.41 -> 5.62) and a lead of 1 round is slower than none everywhere (its loads
  // share the scoreboard the round's own activation loads are waited on with).
  p.x_lead = per_part >= 3 ? 2 : 0;
  p.late_scale = p.x_lead > 0 && w.rows * w.cols >= (int64_t(64) << 20) ? 1 : 0;
  return p;
}

template <typename act_t, typename out_t>
cudaError_t linear_decode_fp8act_with_plan(const act_t* x, int64_t tokens, const device_weight& w,
                                           out_t* y, void* workspace, size_t workspace_bytes,
                                           const linear_decode_fp8act_plan* plan,
                                           cudaStream_t stream, bool pdl) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, __nv_bfloat16>);
  if (tokens < 0 || !x || !y || !workspace) return cudaErrorInvalidValue;
  if (tokens > k_linear_decode_fp8act_max_tokens || !linear_decode_fp8act_supported(w))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  if (workspace_bytes < linear_decode_fp8act_workspace_bytes(tokens, w.cols) ||
      !aligned_16(workspace))
    return cudaErrorInvalidValue;
  const linear_decode_fp8act_plan def = linear_decode_fp8act_default_plan(w, tokens);
  linear_decode_fp8act_plan pl = plan ? *plan : def;
  if (pl.x_lead < 0) pl.x_lead = def.x_lead;
  if (pl.late_scale < 0) pl.late_scale = def.late_scale;
  if (pl.l2_prefetch_rounds < 0 || pl.x_lead == 1 || pl.x_lead > 2) return cudaErrorInvalidValue;
  const int nt = tokens <= 8 ? 1 : tokens <= 16 ? 2 : 4;
  const bool in_warp = pl.quantize_in_gemm && nt == 1 && aligned_16(x);
  auto* x8 = static_cast<uint8_t*>(workspace);
  auto* sx = reinterpret_cast<float*>(x8 + x8_bytes(tokens, w.cols));
  if (!in_warp) {
    const int64_t items = tokens * (w.cols / k_block);
    const int threads = 256;
    if (const cudaError_t e = launch_pdl(pdl, fp8act_quantize_kernel<act_t>,
                                         dim3(unsigned(ceil_div(items * k_warp_size, threads))),
                                         dim3(threads), 0, stream, x, tokens, w.cols, x8, sx);
        e != cudaSuccess)
      return e;
  }
  const fp8_matrix m{static_cast<const uint8_t*>(w.data), w.scale, w.rows, w.cols, w.scale_e8m0};
  // One wave of up to 16 warps per SM; at most 8 K parts from two n-tiles on (max_threads).
  linear_decode_split sp = linear_decode_make_split(w.rows, w.cols / k_block, nt == 1 ? 1 : 4,
                                                    current_device_sm_count());
  if (pl.k_parts > 0) {
    const int max_parts = nt == 1 ? k_linear_decode_max_warps : k_linear_decode_max_warps / 2;
    if ((pl.k_parts & (pl.k_parts - 1)) != 0 || pl.k_parts > max_parts ||
        pl.k_parts > w.cols / k_block)
      return cudaErrorInvalidValue;
    sp = {1, pl.k_parts};
  }
  const dim3 grid(unsigned(w.rows / (16 * sp.row_tiles)));
  const dim3 block(unsigned(sp.row_tiles * sp.k_parts * k_warp_size));
  const size_t smem = size_t(sp.k_parts - 1) * sp.row_tiles * nt * 4 * k_warp_size * sizeof(float);
  constexpr bool y_bf16 = std::is_same_v<out_t, __nv_bfloat16>;
  auto run = [&](auto kernel, auto xp) {
    return launch_pdl(pdl, kernel, grid, block, smem, stream, xp, int(tokens), m, int(sp.row_tiles),
                      int(sp.k_parts), pl.l2_prefetch_rounds, static_cast<void*>(y), y_bf16);
  };
  if (in_warp) return run(fp8act_gemm_kernel<1, x_in_warp<act_t>>, x_in_warp<act_t>{x});
  const x_blocks xb{x8, sx};
  if (nt == 1) {
    const int lead = pl.x_lead;
    const bool late = pl.late_scale > 0;
    if (lead == 2 && late) return run(fp8act_gemm_kernel<1, x_blocks, true, true>, xb);
    if (lead == 2) return run(fp8act_gemm_kernel<1, x_blocks, true>, xb);
    return run(fp8act_gemm_kernel<1, x_blocks>, xb);
  }
  if (nt == 2) {
    if (pl.x_lead == 2 && pl.late_scale > 0)
      return run(fp8act_gemm_kernel<2, x_blocks, true, true>, xb);
    if (pl.x_lead == 2) return run(fp8act_gemm_kernel<2, x_blocks, true>, xb);
    return run(fp8act_gemm_kernel<2, x_blocks>, xb);
  }
  return run(fp8act_gemm_kernel<4, x_blocks>, xb);
}

template <typename act_t, typename out_t>
cudaError_t linear_decode_fp8act(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                                 void* workspace, size_t workspace_bytes, cudaStream_t stream,
                                 bool pdl) {
  return linear_decode_fp8act_with_plan(x, tokens, w, y, workspace, workspace_bytes, nullptr,
                                        stream, pdl);
}

template cudaError_t linear_decode_fp8act<float, float>(const float*, int64_t, const device_weight&,
                                                        float*, void*, size_t, cudaStream_t, bool);
template cudaError_t linear_decode_fp8act<__nv_bfloat16, float>(const __nv_bfloat16*, int64_t,
                                                                const device_weight&, float*, void*,
                                                                size_t, cudaStream_t, bool);
template cudaError_t linear_decode_fp8act<__nv_bfloat16, __nv_bfloat16>(const __nv_bfloat16*,
                                                                        int64_t,
                                                                        const device_weight&,
                                                                        __nv_bfloat16*, void*,
                                                                        size_t, cudaStream_t, bool);

#define DSV4_FP8ACT_PLAN_INST(act_t, out_t)                               \
  template cudaError_t linear_decode_fp8act_with_plan<act_t, out_t>(      \
      const act_t*, int64_t, const device_weight&, out_t*, void*, size_t, \
      const linear_decode_fp8act_plan*, cudaStream_t, bool);
DSV4_FP8ACT_PLAN_INST(float, float)
DSV4_FP8ACT_PLAN_INST(__nv_bfloat16, float)
DSV4_FP8ACT_PLAN_INST(__nv_bfloat16, __nv_bfloat16)
#undef DSV4_FP8ACT_PLAN_INST

}  // namespace dsv4::cuda
