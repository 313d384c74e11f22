// Dense decode linears on tensor cores (see linear_decode.h; fragment mapping in fp4_mma.cuh).
//
// Per format, a lane's 16-byte load of rows g and g + 8 holds E = 32 (fp4), 16 (fp8) or 8 (bf16)
// consecutive k; a quad covers a "round" of 4E k. The activations are prepared in the matching
// order (one u32 = the BF16 pair that meets one A register):
//   fp4  per 8 k:  (x0,x4) (x1,x5) (x2,x6) (x3,x7)   (A: e2m1_pair<i> of a word)
//   fp8  per 4 k:  (x0,x2) (x1,x3)                    (A: bytes 0,2 and 1,3 of a word)
//   bf16 natural:  (x0,x1) (x2,x3) ...                 (A: the weight words as they are)
// A block is rt x ks warps (linear_decode_make_split): rt row tiles of 16 rows, each split into ks
// K parts (summed in K-part order through shared memory, so results do not depend on timing);
// each warp carries NT n-tiles of 8 tokens, so every weight is read once. A warp keeps three
// rounds of weights in flight (loads of round r + 2 issued before round r's MMAs); at one n-tile,
// BF16 matrices of >= 64 MiB and FP8 matrices in one K part stream through a per-warp
// shared-memory ring of 6 / 4 rounds instead (linear_decode_ring_kernel; ring_stages_for). At
// one n-tile with bf16 activations, BF16 and NVFP4 matrices with >= 6 rounds a warp also load a
// round's activation fragments 1 or 2 rounds ahead of its MMAs (x_lead; apply_x_lead_rule); BF16
// matrices with < 48 rounds a warp then leave the ring for the registers.
//
// Both launches use programmatic dependent launch (pdl.cuh): the prepare kernel lets the GEMM
// launch before it waits for its own predecessor, and the GEMM issues its first two rounds of
// weight loads before it waits for the prepared activations, so in a chain of calls (a decode
// graph) the next matrix starts streaming while the previous one drains. H200, plain loads in
// this pattern (bench_read_patterns): a 33 MB matrix per launch reaches 3.1 TB/s back to back and
// 3.7 TB/s chained this way (the streaming read of a large buffer: 4.6 TB/s).
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_tail.cuh"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// Up to 16 warps per block for 1..16 tokens; 8 above (acc and three round buffers then need more
// than the 128 registers a 512-thread bound allows).
template <int NT>
constexpr int max_threads() {
  return (NT <= 2 ? k_linear_decode_max_warps : k_linear_decode_max_warps / 2) * k_warp_size;
}

template <weight_kind K>
__host__ __device__ constexpr int elems_16() {  // k per 16-byte load
  return K == weight_kind::bf16 ? 8 : K == weight_kind::fp8_block ? 16 : 32;
}

// Position (u16 units) of activation k inside its prepared row.
template <weight_kind K>
__device__ __forceinline__ int64_t prepared_index(int64_t k) {
  if constexpr (K == weight_kind::bf16) {
    return k;
  } else if constexpr (K == weight_kind::fp8_block) {
    return (k & ~int64_t(3)) + (((k & 1) << 1) | ((k >> 1) & 1));
  } else {
    return fp4mma::paired_u16_index(k);
  }
}

template <weight_kind K, typename act_t>
__global__ void linear_decode_prepare_kernel(const act_t* x, int64_t count, uint16_t* hi,
                                             uint16_t* lo) {
  // The GEMM may launch now: it waits for this grid before it reads hi / lo. This grid waits for
  // its predecessor before it reads x or overwrites hi / lo (which a previous GEMM may still read).
  pdl_trigger();
  pdl_wait();
  const int64_t grp = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // 8 consecutive k
  if (grp * 8 >= count) return;
  uint16_t h[8], l[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    uint16_t a, b;
    fp4mma::split_bf16(act_to_f32(x[grp * 8 + j]), a, b);
    const int64_t at = prepared_index<K>(j);  // groups of 8 map onto themselves
    h[at] = a;
    l[at] = b;
  }
  uint4 vh, vl;
  vh.x = h[0] | (uint32_t(h[1]) << 16), vh.y = h[2] | (uint32_t(h[3]) << 16);
  vh.z = h[4] | (uint32_t(h[5]) << 16), vh.w = h[6] | (uint32_t(h[7]) << 16);
  vl.x = l[0] | (uint32_t(l[1]) << 16), vl.y = l[2] | (uint32_t(l[3]) << 16);
  vl.z = l[4] | (uint32_t(l[5]) << 16), vl.w = l[6] | (uint32_t(l[7]) << 16);
  reinterpret_cast<uint4*>(hi)[grp] = vh;
  reinterpret_cast<uint4*>(lo)[grp] = vl;
}

struct dense_weight {
  const uint8_t* data;
  const uint8_t* scale;
  const float* global_p;  // nvfp4 global scale (null reads as 1)
  int64_t rows, cols;
  bool scale_f32;  // fp8_block / mxfp4 f32 scales
  // Activations: row t of group g starts at x + t * x_stride + g * cols, g = row / out_g
  // (ungrouped: x_stride = cols, out_g = rows).
  int64_t x_stride, out_g;
};

template <weight_kind K>
struct round_w {
  uint4 v[2];
  uint32_t s[2];
};

// The scale word(s) of row `row` (= row0 + 8 i) at k into s[i] (fp8_block: s[0] only, from i == 0).
template <weight_kind K>
__device__ __forceinline__ void load_scale(uint32_t (&s)[2], const dense_weight& w, int64_t row,
                                           int64_t k, int i) {
  if constexpr (K == weight_kind::mxfp4) {
    const int64_t at = row * (w.cols / 32) + k / 32;
    s[i] = w.scale_f32 ? (__ldg(reinterpret_cast<const uint32_t*>(w.scale) + at) >> 23) & 0xFFu
                       : __ldg(w.scale + at);
  } else if constexpr (K == weight_kind::nvfp4) {
    const int64_t at = row * (w.cols / 16) + k / 16;
    s[i] = __ldg(w.scale + at) | (uint32_t(__ldg(w.scale + at + 1)) << 8);
  } else if constexpr (K == weight_kind::fp8_block) {
    if (i == 0) {  // rows g and g + 8 share a 128-row block
      const int64_t at = (row / 128) * ((w.cols + 127) / 128) + k / 128;
      s[0] = w.scale_f32 ? __ldg(reinterpret_cast<const uint32_t*>(w.scale) + at)
                         : __float_as_uint(detail::e8m0_to_f32(__ldg(w.scale + at)));
    }
  }
}

template <weight_kind K>
__device__ __forceinline__ void load_round(round_w<K>& r, const dense_weight& w, int64_t row0,
                                           int64_t k) {
  constexpr int E = elems_16<K>();
  const int64_t row_bytes = K == weight_kind::bf16        ? w.cols * 2
                            : K == weight_kind::fp8_block ? w.cols
                                                          : w.cols / 2;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t row = row0 + 8 * i;
    r.v[i] = fp4mma::load_stream_16(w.data + row * row_bytes + k * 16 / E);
    load_scale<K>(r.s, w, row, k, i);
  }
}

// Two E4M3 bytes (0 and 2 of `q`) to a BF16 pair, exact: sign and magnitude moved into place
// give value * 2^-120 (E4M3 subnormals land on BF16 subnormals), times 2^120.
__device__ __forceinline__ uint32_t e4m3_pair(uint32_t q) {
  const uint32_t raw = ((q & 0x00800080u) << 8) | ((q & 0x007F007Fu) << 4);
  return fp4mma::mul_bf16x2(raw, 0x7B807B80u);  // 2^120 in both halves
}

// acc[j] += this round's 16 rows x (4E k) times n-tile j's activations; x(j, v, lo) gives the
// v-th uint4 of n-tile j's prepared hi (lo) activations at the round's first k. RP: the words are
// repacked (moe_repack.h); decode_pairs gives the pairs e2m1_pair gives for the checkpoint
// words bit for bit (8 integer instructions a word since session 43, against 15), so every
// product and sum is the checkpoint layout's.
template <weight_kind K, bool SPLIT, int NT, bool RP = false, typename X>
__device__ __forceinline__ void mma_round(float (&acc)[NT][4], const round_w<K>& r, const X& x) {
  constexpr int XV = elems_16<K>() / 8;  // uint4 of activations per part per round
  const uint32_t w0[4] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w};
  const uint32_t w1[4] = {r.v[1].x, r.v[1].y, r.v[1].z, r.v[1].w};
  if constexpr (K == weight_kind::bf16) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint4 h = x(j, 0, false);
      fp4mma::mma_bf16(acc[j], w0[0], w1[0], w0[1], w1[1], h.x, h.y);
      fp4mma::mma_bf16(acc[j], w0[2], w1[2], w0[3], w1[3], h.z, h.w);
      if constexpr (SPLIT) {
        const uint4 l = x(j, 0, true);
        fp4mma::mma_bf16(acc[j], w0[0], w1[0], w0[1], w1[1], l.x, l.y);
        fp4mma::mma_bf16(acc[j], w0[2], w1[2], w0[3], w1[3], l.z, l.w);
      }
    }
  } else if constexpr (K == weight_kind::fp8_block) {
    uint32_t a[4][4];  // per word: P0(g), P0(g+8), P1(g), P1(g+8)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      a[w][0] = e4m3_pair(w0[w]);
      a[w][1] = e4m3_pair(w1[w]);
      a[w][2] = e4m3_pair(w0[w] >> 8);
      a[w][3] = e4m3_pair(w1[w] >> 8);
    }
    const float s = __uint_as_float(r.s[0]);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int v = 0; v < XV; ++v) {
        const uint4 h = x(j, v, false);
        fp4mma::mma_bf16(t, a[2 * v][0], a[2 * v][1], a[2 * v][2], a[2 * v][3], h.x, h.y);
        fp4mma::mma_bf16(t, a[2 * v + 1][0], a[2 * v + 1][1], a[2 * v + 1][2], a[2 * v + 1][3], h.z,
                         h.w);
        if constexpr (SPLIT) {
          const uint4 l = x(j, v, true);
          fp4mma::mma_bf16(t, a[2 * v][0], a[2 * v][1], a[2 * v][2], a[2 * v][3], l.x, l.y);
          fp4mma::mma_bf16(t, a[2 * v + 1][0], a[2 * v + 1][1], a[2 * v + 1][2], a[2 * v + 1][3],
                           l.z, l.w);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[j][i] = fmaf(t[i], s, acc[j][i]);
    }
  } else {
    uint32_t m1[2][2], m2[2];
    bool two = false;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if constexpr (K == weight_kind::mxfp4) {
        const fp4mma::mx_scale sc = fp4mma::mx_scale_of(r.s[i]);
        m1[i][0] = m1[i][1] = sc.m1;
        m2[i] = sc.m2;
        two |= sc.m2 != 0x3F803F80u;
      } else if constexpr (RP) {
        fp4mma::nv_scale2_of(r.s[i], m1[i][0], m1[i][1]);
        m2[i] = 0x3F803F80u;
      } else {
        m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
        m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
        m2[i] = 0x3F803F80u;
      }
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t p0[4], p1[4];
      if constexpr (RP) {
        fp4_repack::decode_pairs(w0[w], p0);
        fp4_repack::decode_pairs(w1[w], p1);
      } else {
        p0[0] = fp4mma::e2m1_pair<0>(w0[w]), p0[1] = fp4mma::e2m1_pair<1>(w0[w]);
        p0[2] = fp4mma::e2m1_pair<2>(w0[w]), p0[3] = fp4mma::e2m1_pair<3>(w0[w]);
        p1[0] = fp4mma::e2m1_pair<0>(w1[w]), p1[1] = fp4mma::e2m1_pair<1>(w1[w]);
        p1[2] = fp4mma::e2m1_pair<2>(w1[w]), p1[3] = fp4mma::e2m1_pair<3>(w1[w]);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        p0[i] = fp4mma::mul_bf16x2(p0[i], m1[0][w >> 1]);
        p1[i] = fp4mma::mul_bf16x2(p1[i], m1[1][w >> 1]);
      }
      if (two) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          p0[i] = fp4mma::mul_bf16x2(p0[i], m2[0]);
          p1[i] = fp4mma::mul_bf16x2(p1[i], m2[1]);
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4 h = x(j, w, false);
        fp4mma::mma_bf16(acc[j], p0[0], p1[0], p0[1], p1[1], h.x, h.y);
        fp4mma::mma_bf16(acc[j], p0[2], p1[2], p0[3], p1[3], h.z, h.w);
        if constexpr (SPLIT) {
          const uint4 l = x(j, w, true);
          fp4mma::mma_bf16(acc[j], p0[0], p1[0], p0[1], p1[1], l.x, l.y);
          fp4mma::mma_bf16(acc[j], p0[2], p1[2], p0[3], p1[3], l.z, l.w);
        }
      }
    }
  }
}

// A lane's loads per row and round: with one n-tile (<= 8 tokens), two adjacent 16-byte loads for
// fp8 and bf16 (a quad then reads 128 contiguous bytes of a row, a whole cache line, and an fp8
// round is one 128-k scale block; measured 1.05-1.25x faster at 1..8 tokens); one for fp4 (whose
// scale groups would split) and with more n-tiles (the registers then spill: 0.6-0.9x).
template <weight_kind K, int NT>
__host__ __device__ constexpr int loads_per_row() {
  return (K == weight_kind::fp8_block || K == weight_kind::bf16) && NT == 1 ? 2 : 1;
}

template <weight_kind K, int NT>
struct round_set {
  round_w<K> part[loads_per_row<K, NT>()];
};

template <weight_kind K, int NT>
__device__ __forceinline__ void load_round_set(round_set<K, NT>& r, const dense_weight& w,
                                               int64_t row0, int64_t k) {
#pragma unroll
  for (int l = 0; l < loads_per_row<K, NT>(); ++l)
    load_round<K>(r.part[l], w, row0, k + l * elems_16<K>());
}

// A lane's rounds of nvfp4 weights in the repacked layout of moe_repack.h (RP kernels), whose
// 16-row x 128-column tiles are exactly a warp's rounds here (4 lanes x 32 k of rows g and g + 8):
// tile (r0 / 16, round) is 1 KB, stored tile-row-major, so a warp's rounds are consecutive KB;
// lane L = 4 g + q finds its 16 bytes of row g (k = 128 round + 32 q .. + 31) at L * 16 and those
// of row g + 8 512 bytes further, and each of the warp's two loads reads a contiguous 512 bytes
// (every 32-byte sector whole). The E4M3 scales stay in the checkpoint layout: the lane's two of
// a row and round are one aligned 16-bit word (cols / 16 is a multiple of 8 and k / 16 even),
// 8 bytes further each round. Pointers set once, so a round costs one offset (the checkpoint
// form recomputes 64-bit row and scale addresses per round).
struct repacked_lane {
  const uint8_t* data;    // round 0 of the lane's tile row, row g
  const uint16_t* scale;  // round 0, row g (row g + 8: + scale_rows8 words)
  int64_t scale_rows8;    // 16-bit words between rows g and g + 8
};

__device__ __forceinline__ repacked_lane repacked_lane_of(const dense_weight& w, int64_t r0,
                                                          int lane) {
  namespace rp = fp4_repack;
  const int g = lane / 4, q = lane % 4;
  repacked_lane l;
  l.data =
      w.data + (r0 / rp::k_tile_rows) * (w.cols / rp::k_tile_cols) * rp::k_tile_bytes + lane * 16;
  l.scale = reinterpret_cast<const uint16_t*>(w.scale + (r0 + g) * (w.cols / 16)) + q;
  l.scale_rows8 = 8 * (w.cols / 16) / 2;
  return l;
}

__device__ __forceinline__ void load_round_repacked(round_w<weight_kind::nvfp4>& r,
                                                    const repacked_lane& l, int64_t round) {
  const uint8_t* p = l.data + round * fp4_repack::k_tile_bytes;
  r.v[0] = fp4mma::load_stream_16(p);
  r.v[1] = fp4mma::load_stream_16(p + fp4_repack::k_tile_bytes / 2);
  const uint16_t* s = l.scale + round * 4;  // 128 k = 8 scale bytes a round
  r.s[0] = __ldg(s);
  r.s[1] = __ldg(s + l.scale_rows8);
}

// The repacked lane pointers of an RP kernel (empty otherwise, so the checkpoint kernels compile
// as before), and a round's loads from either layout: the checkpoint one at (row0, k), the
// repacked one at `round`.
template <bool RP>
struct lane_repack {
  __device__ __forceinline__ lane_repack(const dense_weight&, int64_t, int) {}
};
template <>
struct lane_repack<true> {
  repacked_lane l;
  __device__ __forceinline__ lane_repack(const dense_weight& w, int64_t r0, int lane)
      : l(repacked_lane_of(w, r0, lane)) {}
};

template <weight_kind K, int NT, bool RP>
__device__ __forceinline__ void load_at(round_set<K, NT>& r, const dense_weight& w, int64_t row0,
                                        int64_t k, const lane_repack<RP>& lr, int64_t round) {
  if constexpr (RP)
    load_round_repacked(r.part[0], lr.l, round);
  else
    load_round_set<K, NT>(r, w, row0, k);
}

// x(j, kp, v, lo): uint4 v of n-tile j's hi (lo) activations at the round set's first k + kp
// (part l: kp = l * E).
template <weight_kind K, bool SPLIT, int NT, bool RP = false, typename X>
__device__ __forceinline__ void mma_round_set(float (&acc)[NT][4], const round_set<K, NT>& r,
                                              const X& x) {
#pragma unroll
  for (int l = 0; l < loads_per_row<K, NT>(); ++l)
    mma_round<K, SPLIT, NT, RP>(
        acc, r.part[l], [&x, l](int j, int v, bool lo) { return x(j, l * elems_16<K>(), v, lo); });
}

// The activations of a round set at k read when the MMAs need them (x_lead 0): xh / xl as
// activation_rows gives them.
template <int NT>
struct x_at_round {
  const uint4* const (&xh)[NT];
  const uint4* const (&xl)[NT];
  int64_t k;
  __device__ __forceinline__ uint4 operator()(int j, int kp, int v, bool lo) const {
    return __ldg((lo ? xl[j] : xh[j]) + (k + kp) / 8 + v);
  }
};

// One n-tile's hi activations of a round set, loaded ahead of the round's MMAs (x_lead > 0,
// bf16 activations): h[i] = uint4 i at the round's first k.
template <weight_kind K>
struct round_x {
  uint4 h[loads_per_row<K, 1>() * elems_16<K>() / 8];
  __device__ __forceinline__ uint4 operator()(int, int kp, int v, bool) const {
    return h[kp / 8 + v];
  }
};

template <weight_kind K>
__device__ __forceinline__ void load_x(round_x<K>& f, const uint4* xh, int64_t k) {
#pragma unroll
  for (int i = 0; i < int(sizeof(f.h) / sizeof(f.h[0])); ++i) f.h[i] = __ldg(xh + k / 8 + i);
}

// x_lead > 0 register kernels: 8 warps a block at most, so that the fragments held ahead fit
// without spills (up to 255 registers).
constexpr int k_x_lead_max_threads = 8 * k_warp_size;

// The prepared activation rows of a lane's token columns g + 8 j (n-tile j) at the tile's column
// group (out_g % 16 == 0: one group per 16-row tile); columns past `tokens` read the last token's
// row and are never stored.
template <int NT>
__device__ __forceinline__ void activation_rows(const uint16_t* x_hi, const uint16_t* x_lo,
                                                int tokens, const dense_weight& w, int64_t r0,
                                                int g, const uint4* (&xh)[NT],
                                                const uint4* (&xl)[NT]) {
  const int64_t x_group = (r0 / w.out_g) * w.cols;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int64_t t = min(8 * j + g, tokens - 1);
    xh[j] = reinterpret_cast<const uint4*>(x_hi + t * w.x_stride + x_group);
    xl[j] = reinterpret_cast<const uint4*>(x_lo + t * w.x_stride + x_group);
  }
}

// XL > 0 (one n-tile, bf16 activations): each round's activation fragments are loaded XL rounds
// ahead into the buffer paired with the round's weight buffer. Loaded at the round's start they
// queue behind the weight stream in L2 and put that latency on every round's MMA chain. XL 1
// issues round r + 1's loads once round r's fragments have landed (an address dependency on them
// through `opaque0`, which ptxas cannot fold): all activation loads share one scoreboard, so
// round r + 1's loads issued before round r's MMAs would make those wait for them too (session
// 24, the W8A8 kernel's x lead 1; session 13, the MoE decode kernel). Not built for fp8_block:
// there x lead 1 / 2 ran at 0.57-0.78x / 0.62-0.90x of the kernel without (H200, session 24
// LIN12, h200_2026-11-27_s24_lin12_lead_ab.txt; 155 registers against 119).
// RP: nvfp4 weights in the repacked layout (repacked_lane).
template <weight_kind K, bool SPLIT, int NT, int XL = 0, bool RP = false>
__global__ void __launch_bounds__(XL == 0 ? max_threads<NT>() : k_x_lead_max_threads)
    linear_decode_kernel(const uint16_t* x_hi, const uint16_t* x_lo, int tokens, dense_weight w,
                         int rt, int ks, void* y, bool y_bf16) {
  static_assert(!RP || K == weight_kind::nvfp4, "repacked dense weights: nvfp4");
  static_assert(XL == 0 || (NT == 1 && !SPLIT && K != weight_kind::fp8_block),
                "x lead: one n-tile, bf16 activations, not fp8_block");
  static_assert(XL >= 0 && XL <= 2, "x lead: 0-2 rounds");
  pdl_trigger();  // the next call's prepare waits for this grid before it touches anything
  constexpr int E = elems_16<K>();
  constexpr int ROUND = 4 * E * loads_per_row<K, NT>();
  extern __shared__ float partial[];  // [ks - 1][rt][NT][4][32]
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % rt, kpart = warp / rt;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * rt + tile) * 16;
  const int64_t rounds = w.cols / ROUND;
  const int64_t rb = rounds * kpart / ks, re = rounds * (kpart + 1) / ks;
  const uint4* xh[NT];
  const uint4* xl[NT];
  activation_rows<NT>(x_hi, x_lo, tokens, w, r0, g, xh, xl);
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  // Three named round buffers (a register array indexed by r % 3 would go to local memory).
  round_set<K, NT> a, b, c;
  const int64_t off = q * E * loads_per_row<K, NT>();
  const lane_repack<RP> lr(w, r0, lane);
  if (rb < re) load_at<K, NT, RP>(a, w, r0 + g, rb * ROUND + off, lr, rb);
  if (rb + 1 < re) load_at<K, NT, RP>(b, w, r0 + g, (rb + 1) * ROUND + off, lr, rb + 1);
  pdl_wait();  // weights never depend on earlier launches; x_hi / x_lo and y do
  if constexpr (XL == 0) {
    for (int64_t r = rb; r < re; r += 3) {
      if (r + 2 < re) load_at<K, NT, RP>(c, w, r0 + g, (r + 2) * ROUND + off, lr, r + 2);
      mma_round_set<K, SPLIT, NT, RP>(acc, a, x_at_round<NT>{xh, xl, r * ROUND + off});
      if (r + 1 >= re) break;
      if (r + 3 < re) load_at<K, NT, RP>(a, w, r0 + g, (r + 3) * ROUND + off, lr, r + 3);
      mma_round_set<K, SPLIT, NT, RP>(acc, b, x_at_round<NT>{xh, xl, (r + 1) * ROUND + off});
      if (r + 2 >= re) break;
      if (r + 4 < re) load_at<K, NT, RP>(b, w, r0 + g, (r + 4) * ROUND + off, lr, r + 4);
      mma_round_set<K, SPLIT, NT, RP>(acc, c, x_at_round<NT>{xh, xl, (r + 2) * ROUND + off});
    }
  } else {
    const uint32_t opaque0 = uint32_t(uint64_t(w.cols) >> 62);  // 0: cols < 2^62
    round_x<K> xa, xb, xc;                                      // pair with a, b, c
    // Round `round`'s fragments into f; z (0) ties the addresses to an earlier round's fragments.
    const auto get = [&](round_x<K>& f, int64_t round, uint32_t z) {
      if (round < re) load_x<K>(f, xh[0] + z, round * ROUND + off);
    };
    // Round r on buffers cur / xcur: refill `fill` with round r + 2's weights, load the
    // activations ahead (XL 2: round r + 2's into x2; XL 1: round r + 1's into x1, tied to this
    // round's fragments), then round r's MMAs.
    const auto step = [&](round_set<K, NT>& cur, round_set<K, NT>& fill, round_x<K>& xcur,
                          round_x<K>& x2, round_x<K>& x1, int64_t r) {
      if (r + 2 < re) load_at<K, NT, RP>(fill, w, r0 + g, (r + 2) * ROUND + off, lr, r + 2);
      if constexpr (XL == 2)
        get(x2, r + 2, 0);
      else
        get(x1, r + 1, xcur.h[0].x & opaque0);
      mma_round_set<K, SPLIT, NT, RP>(acc, cur, xcur);
    };
    get(xa, rb, 0);
    if constexpr (XL == 2) get(xb, rb + 1, 0);
    for (int64_t r = rb; r < re; r += 3) {
      step(a, c, xa, xc, xb, r);
      if (r + 1 >= re) break;
      step(b, a, xb, xa, xc, r + 1);
      if (r + 2 >= re) break;
      step(c, b, xc, xb, xa, r + 2);
    }
  }
  if (!decode_tail::sum_k_parts<NT>(acc, partial, rt, ks, tile, kpart, lane)) return;
  const float post =
      K == weight_kind::nvfp4 ? (w.global_p ? __ldg(w.global_p) : 1.0f) * 256.0f : 1.0f;
  decode_tail::store<NT>(
      acc, [post](float v) { return v * post; }, tokens, w.rows, r0, g, q, y, y_bf16);
}

// ---- The shared-memory ring variant (one n-tile: <= 8 tokens; bf16 and fp8_block). ----
//
// Same per-lane registers and math as linear_decode_kernel<K, SPLIT, 1> (so y is bit-identical for
// the same split), but each warp streams its rounds through its own ring of S stages in shared
// memory with cp.async: S - 1 rounds of 2 KB in flight per warp instead of two in registers. A
// stage is one round of the warp's 16 rows: 8 chunks of 16 bytes per row (128 bytes: 128 k of fp8,
// 64 of bf16).
//
// Copy: instruction i (of 4), lane L copies row 4i + L / 8, chunk L % 8, so an instruction reads
// 4 whole 128-byte row segments (every 32-byte sector by one instruction, where the register
// pipeline's two 16-byte loads at q * 32 and q * 32 + 16 each read half of every sector).
// Layout: 16-byte slots, slot(row, c) = 8 row + (c ^ (row & 1)). Bank groups (slot % 8) per
// quarter warp (8 lanes, one 16-byte access each):
//  * copy: lanes 8m..8m+7 write one row 4i + m, chunks 0..7 -> c ^ (row & 1): 8 distinct;
//  * read: lane (g, q) reads chunk 2q + l of rows g and g + 8 (part l = 0, 1); lanes 8m..8m+7 are
//    g = 2m (even: chunks l, 2 + l, 4 + l, 6 + l) and g = 2m + 1 (odd: those ^ 1): 8 distinct;
//    rows g + 8 have g's parity, the same.
// Not for fp4 (1 KB rounds; bench_linear_gemm --ring-ab, H200: 4-40% slower than the registers on
// every NVFP4 shape but Pro wq_b, so the kernel was narrowed to the formats that use it).
template <weight_kind K>
__host__ __device__ constexpr bool ring_format() {
  return K == weight_kind::bf16 || K == weight_kind::fp8_block;
}

constexpr int k_ring_row_chunks = 8;
constexpr int k_ring_stage_bytes = 16 * k_ring_row_chunks * 16;

__device__ __forceinline__ int ring_slot(int row, int c) {
  return row * k_ring_row_chunks + (c ^ (row & 1));
}

// The explicit minimum of one block per SM stops ptxas (CUDA 13) from capping this kernel at 64
// registers (it spilled the f32-activation forms there); with it: 64-112 registers, no spills.
// XL 1 (bf16 weights and activations): round r + 1's activation fragments loaded in round r,
// after round r's have landed (linear_decode_kernel's XL 1; fp8_block lost with it, 0.95-0.96x).
template <weight_kind K, bool SPLIT, int S, int XL = 0>
__global__ void __launch_bounds__(max_threads<1>(), 1)
    linear_decode_ring_kernel(const uint16_t* x_hi, const uint16_t* x_lo, int tokens,
                              dense_weight w, int rt, int ks, void* y, bool y_bf16) {
  static_assert(S >= 2 && ring_format<K>() && 4 * loads_per_row<K, 1>() == k_ring_row_chunks);
  static_assert(XL == 0 || (XL == 1 && !SPLIT && K == weight_kind::bf16), "ring x lead: bf16");
  pdl_trigger();  // the next call's prepare waits for this grid before it touches anything
  constexpr int NT = 1;
  constexpr int E = elems_16<K>();
  constexpr int LPR = loads_per_row<K, NT>();
  constexpr int ROUND = 4 * E * LPR;           // k per round
  constexpr int C = k_ring_row_chunks;         // 16-byte chunks of a row per round
  constexpr int SLOTS = 16 * C;                // per stage
  constexpr int COPIES = SLOTS / k_warp_size;  // copy instructions per lane and round
  constexpr int ROWS_PER_COPY = k_warp_size / C;
  extern __shared__ uint4 ring_smem[];  // [warps][S][SLOTS], then [ks - 1][rt][NT][4][32] f32
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % rt, kpart = warp / rt;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * rt + tile) * 16;
  const int64_t rounds = w.cols / ROUND;
  const int64_t rb = rounds * kpart / ks, re = rounds * (kpart + 1) / ks;
  uint4* const ring = ring_smem + size_t(warp) * S * SLOTS;
  float* const partial = reinterpret_cast<float*>(ring_smem + size_t(rt) * ks * S * SLOTS);
  const uint4* xh[NT];
  const uint4* xl[NT];
  activation_rows<NT>(x_hi, x_lo, tokens, w, r0, g, xh, xl);
  float acc[NT][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};

  const int64_t row_bytes = K == weight_kind::bf16 ? w.cols * 2 : w.cols;
  const int crow = lane / C, cchunk = lane % C;
  const uint8_t* const src = w.data + (r0 + crow) * row_bytes + cchunk * 16;
  const uint32_t dst = smem_u32(ring + ring_slot(crow, cchunk));  // rows + 4 i keep the parity
  const auto copy_round = [&](int64_t r, int stage) {
#pragma unroll
    for (int i = 0; i < COPIES; ++i)
      cp_async_cg_16(dst + uint32_t((stage * SLOTS + i * k_warp_size) * 16),
                     src + i * ROWS_PER_COPY * row_bytes + r * (C * 16));
  };
  // Rounds rb .. rb + S - 2 into stages 0 .. S - 2 (one commit group per round, empty past re).
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (rb + s < re) copy_round(rb + s, s);
    cp_async_commit();
  }
  const int64_t off = q * E * LPR;
  uint32_t scale[2] = {0u, 0u};  // the next round's (rows g, g + 8)
  if (rb < re) {
    load_scale<K>(scale, w, r0 + g, rb * ROUND + off, 0);
    load_scale<K>(scale, w, r0 + g + 8, rb * ROUND + off, 1);
  }
  pdl_wait();  // weights never depend on earlier launches; x_hi / x_lo and y do
  const uint32_t opaque0 = uint32_t(uint64_t(w.cols) >> 62);  // 0: cols < 2^62
  round_x<K> xn;  // XL 1: the fragments of round r (at the top of iteration r)
  if constexpr (XL == 1)
    if (rb < re) load_x<K>(xn, xh[0], rb * ROUND + off);
  int stage = 0;
  for (int64_t r = rb; r < re; ++r) {
    cp_async_wait<S - 2>();  // round r (group r - rb) has landed: mine ...
    __syncwarp();            // ... and the other lanes' (whose chunks I read)
    round_set<K, NT> cur;
    const uint4* const st = ring + stage * SLOTS;
#pragma unroll
    for (int l = 0; l < LPR; ++l) {
      cur.part[l].v[0] = st[ring_slot(g, q * LPR + l)];
      cur.part[l].v[1] = st[ring_slot(g + 8, q * LPR + l)];
      cur.part[l].s[0] = scale[0];
      cur.part[l].s[1] = scale[1];
    }
    if (r + 1 < re) {
      load_scale<K>(scale, w, r0 + g, (r + 1) * ROUND + off, 0);
      load_scale<K>(scale, w, r0 + g + 8, (r + 1) * ROUND + off, 1);
    }
    // Refill round r - 1's stage (every lane read it before this iteration's __syncwarp) with
    // round r + S - 1; an empty group past re keeps one group per round for the wait above.
    const int refill = stage == 0 ? S - 1 : stage - 1;
    if (r + S - 1 < re) copy_round(r + S - 1, refill);
    cp_async_commit();
    if constexpr (XL == 1) {
      const round_x<K> xc = xn;
      if (r + 1 < re) load_x<K>(xn, xh[0] + (xc.h[0].x & opaque0), (r + 1) * ROUND + off);
      mma_round_set<K, SPLIT, NT>(acc, cur, xc);
    } else {
      mma_round_set<K, SPLIT, NT>(acc, cur, x_at_round<NT>{xh, xl, r * ROUND + off});
    }
    stage = stage + 1 == S ? 0 : stage + 1;
  }
  if (!decode_tail::sum_k_parts<NT>(acc, partial, rt, ks, tile, kpart, lane)) return;
  decode_tail::store<NT>(
      acc, [](float v) { return v; }, tokens, w.rows, r0, g, q, y, y_bf16);
}

int n_tiles_of(int64_t tokens) {
  const int used = int(ceil_div(tokens, 8));
  return used <= 2 ? used : used <= 4 ? 4 : 8;
}

template <weight_kind K>
int64_t rounds_of(int64_t cols, int nt) {
  const int per_row = nt == 1 ? loads_per_row<K, 1>() : loads_per_row<K, 2>();
  return cols / (4 * elems_16<K>() * per_row);
}

bool split_fits(const linear_decode_split& sp, weight_kind kind, int64_t rows, int nt) {
  const int64_t max_warps = nt <= 2 ? k_linear_decode_max_warps : k_linear_decode_max_warps / 2;
  const auto pow2 = [](int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
  const bool ring_ok = kind == weight_kind::bf16 || kind == weight_kind::fp8_block;
  // x_lead (one n-tile): registers 0-2 with <= 8 warps a block when > 0, the ring 0-1.
  const bool lead_ok =
      nt > 1 || sp.x_lead == 0 ||
      (sp.ring_stages == 0 ? sp.x_lead > 0 && sp.x_lead <= 2 &&
                                 sp.row_tiles * sp.k_parts * k_warp_size <= k_x_lead_max_threads
                           : sp.x_lead == 1);
  return pow2(sp.row_tiles) && pow2(sp.k_parts) && sp.row_tiles * sp.k_parts <= max_warps &&
         (rows / 16) % sp.row_tiles == 0 && lead_ok &&
         (sp.ring_stages == 0 || (ring_ok && (sp.ring_stages == 4 || sp.ring_stages == 6)));
}

using decode_kernel_t = void (*)(const uint16_t*, const uint16_t*, int, dense_weight, int, int,
                                 void*, bool);

// The one-n-tile kernels of a split: x_lead 1 / 2 on bf16, mxfp4 and nvfp4 weights with bf16
// activations (the ring: 1, bf16 weights); ignored elsewhere.
template <weight_kind K, bool SPLIT, bool RP>
decode_kernel_t register_kernel(const linear_decode_split& sp) {
  if constexpr (!SPLIT && K != weight_kind::fp8_block) {
    if (sp.x_lead == 1) return linear_decode_kernel<K, SPLIT, 1, 1, RP>;
    if (sp.x_lead == 2) return linear_decode_kernel<K, SPLIT, 1, 2, RP>;
  }
  return linear_decode_kernel<K, SPLIT, 1, 0, RP>;
}

template <weight_kind K, bool SPLIT, int S>
decode_kernel_t ring_kernel(const linear_decode_split& sp) {
  if constexpr (!SPLIT && K == weight_kind::bf16)
    if (sp.x_lead == 1) return linear_decode_ring_kernel<K, SPLIT, S, 1>;
  return linear_decode_ring_kernel<K, SPLIT, S>;
}

// The weight pipeline at one n-tile (<= 8 tokens) for a split the planner made: 4 / 6 ring stages
// or the registers (0). Measured with bench_linear_gemm --ring-ab (H200, graphs of 16 PDL-chained
// calls, bf16 x; us, registers -> ring; h200_2026-11-27_s23_lin10_ring_ab.txt in
// bench/kernels/results):
//  * BF16 matrices of >= 64 MiB, ring 6: Flash wq_b 32768 x 1024 T = 1 / 8 21.2 -> 18.6 / 20.6 ->
//    20.0; Pro wo_b 7168 x 16384 77.1 -> 70.2 / 79.2 -> 71.0 (T = 4: 78.9 -> 64.4); Flash wo_b
//    4096 x 8192 19.9 -> 19.6 / 20.8 -> 21.2 (the one loss, 1.7%).
//  * FP8 with one K part (the planner's choice for >= ~17K rows: the wq_b shapes), ring 4: Pro wq_b
//    65536 x 1536 T = 1 / 2 / 4 / 8 31.4 -> 29.0 / 31.8 -> 30.9 / 32.4 -> 31.7 / 33.6 -> 33.1;
//    Flash wq_b 11.55 -> 11.40 / 11.97 -> 11.70 / 12.09 -> 11.98 / 12.59 -> 12.60.
//  * Registers elsewhere: FP8 split over K parts loses 0-10% on the ring (Flash wo_b T = 1 12.1 vs
//    12.8, wq_a 3.9 vs 4.3), NVFP4 up to 40% (Flash wq_b 11.2 vs 14.4, Pro wo_b 38.3 vs 53.2).
// The same A/B on an H100 (session 23, call l23e, two processes; h100_2026-11-27_s23_lead_l23e_*):
// FP8 Flash wq_b (8 rounds a warp) loses 5-8% there (T = 1 13.4 -> 14.1, T = 8 14.1 -> 15.2),
// Pro wq_b (12 rounds) is within -2.4..+1.7%; BF16 Pro wo_b gains 2-6% (94.3 -> 91.5 at T = 1),
// Flash wq_b 3-5% at T <= 2, but the 64 MiB Flash shapes lose 2-5% at T = 8 (wo_b 26.5 -> 27.9;
// on the H200 wo_b T = 8 lost 1.7% too); in that call's --decode-only, FP8 Pro wq_b with the
// ring 38.4 / 40.5 / 42.1 us at T = 1 / 4 / 8 against main's registers 39.1 / 39.1 / 40.0. So: FP8
// one-part rings need >= 12 rounds a warp and <= 2 tokens, and the 64 MiB BF16 matrices take the
// ring up to 4 tokens (>= 128 MiB at every T).
int ring_stages_for(weight_kind kind, int64_t rows, int64_t cols, int64_t k_parts, int64_t tokens) {
  const int64_t bf16_bytes = rows * cols * 2;
  if (kind == weight_kind::bf16 && bf16_bytes >= (int64_t(64) << 20) &&
      (tokens <= 4 || bf16_bytes >= (int64_t(128) << 20)))
    return 6;
  if (kind == weight_kind::fp8_block && k_parts == 1 && cols / 128 >= 12 && tokens <= 2) return 4;
  return 0;
}

// The activation lead of the planner's split at one n-tile with bf16 activations (after
// ring_stages_for; `rounds` per K part of rounds_of). Measured with bench_linear_gemm --lead-ab
// (H200, graphs of 16 PDL-chained calls, bf16 x, two processes;
// h200_2026-11-27_s24_lin12_lead_ab.txt in bench/kernels/results), planner's split -> variant:
//  * NVFP4 with >= 6 rounds a warp, x_lead 2 up to 4 tokens: Flash wq_b T = 1 11.2 -> 9.1 us,
//    Pro wq_b 29.1 -> 24.2, Pro wo_b 38.2 -> 32.2, Pro sh_w2 9.1 -> 7.7 (1.14-1.22x at T <= 2; Pro
//    sh_w13 1.00-1.07x, where x_lead 1 gives 1.07-1.11x); x_lead 1 above, where it holds up
//    better (T = 8: 1.08-1.20x; x_lead 2 0.97-1.18x).
//  * BF16 with >= 6 rounds a warp, registers with x_lead 2 (the ring off): Flash wq_b T = 1 / 8
//    18.3 (ring) -> 17.3 / 20.5 -> 17.9, Flash wo_b 19.1 (ring) -> 17.6, Pro wq_b 51.3 / 55.3
//    (ring) -> 48.4 / 49.6, Pro sh_w2 15.7 -> 13.8, Pro sh_w13 15.5 -> 15.1 (1.03-1.15x); the
//    ring with x_lead 1 where a warp has >= 48 rounds (Pro wo_b, 64): T = 1 / 2 / 4 / 8 68.6 /
//    65.5 / 62.2 / 69.0 -> 59.9 / 59.5 / 62.6 / 65.4 (registers with x_lead 2 there: 1.05 /
//    1.00 / 0.96 / 1.07x).
//  * Neither below 6 rounds a warp (Flash sh_w2, 2 NVFP4 / 4 BF16 rounds: x_lead 1 0.92-1.00x,
//    x_lead 2 0.93-0.99x), nor above 8 warps a block (x_lead needs <= 8; halving the K parts of
//    Flash wq_a / sh_w13 and Pro wq_a to use it: 0.73-1.01x).
void apply_x_lead_rule(linear_decode_split& sp, weight_kind kind, int64_t rounds, int64_t tokens) {
  const int64_t per_warp = rounds / sp.k_parts;
  if (tokens > 8 || sp.row_tiles * sp.k_parts > 8 || per_warp < 6) return;
  if (kind == weight_kind::nvfp4) {
    sp.x_lead = tokens <= 4 ? 2 : 1;
  } else if (kind == weight_kind::bf16) {
    if (sp.ring_stages != 0 && per_warp >= 48) {
      sp.x_lead = 1;
    } else {
      sp.ring_stages = 0;
      sp.x_lead = 2;
    }
  }
}

// Grouped FP8-block matrices (the official wo_a) at one n-tile with bf16 activations: 4 row tiles
// a block on the registers. bench_linear_gemm --fp8-grouped-sweep (H200, call l28c, every split
// rt 1 / 2 / 4 x ks 1..16 x ring 0 / 4 / 6, two processes; us, planner's rt 1 -> rt 4): Flash wo_a
// (8 x 1024 x 4096) T = 1 / 2 / 4 / 8 12.41-12.43 -> 12.05-12.06 / 12.80-12.81 -> 12.82-12.84 /
// 14.68-14.71 -> 13.35-13.38 / 15.21 -> 14.02-14.04; Pro (16 x 1024) 22.17-22.46 -> 21.01-21.07 /
// 24.10-24.27 -> 22.52-22.61 / 24.58-24.84 -> 23.02-23.13 / 26.13 -> 23.48-23.66 (the best split
// found within 2-4% of it everywhere; the K parts the planner's in every best row). The row tiles
// of a block then share their group's activation rows (one 16-row tile per group otherwise).
void apply_grouped_fp8_rule(linear_decode_split& sp, weight_kind kind, int64_t rows,
                            int64_t group_rows, int64_t tokens) {
  if (kind != weight_kind::fp8_block || group_rows >= rows || tokens > 8 || sp.ring_stages != 0)
    return;
  constexpr int64_t rt = 4;
  if ((rows / 16) % rt == 0 && rt * sp.k_parts <= k_linear_decode_max_warps) sp.row_tiles = rt;
}

template <weight_kind K, bool SPLIT, int S>
cudaError_t launch_ring(const uint16_t* hi, const uint16_t* lo, int64_t tokens,
                        const dense_weight& w, void* y, bool y_bf16, const linear_decode_split& sp,
                        size_t partial_bytes, cudaStream_t stream, bool pdl) {
  // 16 warps of S stages and the K-part partials fit the 227 KB a block may have.
  static_assert(k_linear_decode_max_warps * (S * k_ring_stage_bytes + 4 * k_warp_size * 4) <=
                227 * 1024);
  const size_t smem = size_t(sp.row_tiles * sp.k_parts) * S * k_ring_stage_bytes + partial_bytes;
  const decode_kernel_t kernel = ring_kernel<K, SPLIT, S>(sp);
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  return launch_pdl(pdl, kernel, dim3(unsigned(w.rows / (16 * sp.row_tiles))),
                    dim3(unsigned(sp.row_tiles * sp.k_parts * k_warp_size)), smem, stream, hi, lo,
                    int(tokens), w, int(sp.row_tiles), int(sp.k_parts), y, y_bf16);
}

template <weight_kind K, bool SPLIT, bool RP = false>
cudaError_t launch(const uint16_t* hi, const uint16_t* lo, int64_t tokens, const dense_weight& w,
                   void* y, bool y_bf16, const linear_decode_split* forced, cudaStream_t stream,
                   bool pdl) {
  const int nt = n_tiles_of(tokens);
  linear_decode_split sp = forced ? *forced
                                  : linear_decode_make_split(w.rows, rounds_of<K>(w.cols, nt), nt,
                                                             current_device_sm_count());
  if (!forced) {
    sp.ring_stages = ring_stages_for(K, w.rows, w.cols, sp.k_parts, tokens);
    // Grouped calls (wo_a) too: H200 session 24 (call l24g, --grouped-lead-ab, one process), the
    // rule's pick against x_lead 0, T = 1 / 2 / 4 / 8: BF16 Flash wo_a 20.6 / 20.8 / 21.4 / 21.9 ->
    // 18.3 / 18.6 / 18.9 / 19.8 us (81.9% of read at T = 1), Pro 38.9 / 39.1 / 39.8 / 40.4 -> 34.5
    // / 34.9 / 35.4 / 38.0; NVFP4 Flash 13.2 / 13.6 / 14.1 / 14.9 -> 9.4 / 9.8 / 11.6 / 12.7,
    // Pro 23.3 / 23.9 / 24.6 / 26.0 -> 17.8 / 19.3 / 20.0 / 21.3 (1.06-1.40x; the best variant in
    // every row).
    if (!SPLIT) {
      apply_x_lead_rule(sp, K, rounds_of<K>(w.cols, nt), tokens);
      apply_grouped_fp8_rule(sp, K, w.rows, w.out_g, tokens);
    }
  }
  if (!split_fits(sp, K, w.rows, nt)) return cudaErrorInvalidValue;
  const dim3 grid(unsigned(w.rows / (16 * sp.row_tiles)));
  const unsigned threads = unsigned(sp.row_tiles * sp.k_parts * k_warp_size);
  const size_t smem = size_t(sp.k_parts - 1) * sp.row_tiles * nt * 4 * k_warp_size * sizeof(float);
  if constexpr (ring_format<K>() && !RP) {
    if (nt == 1 && sp.ring_stages == 4)
      return launch_ring<K, SPLIT, 4>(hi, lo, tokens, w, y, y_bf16, sp, smem, stream, pdl);
    if (nt == 1 && sp.ring_stages == 6)
      return launch_ring<K, SPLIT, 6>(hi, lo, tokens, w, y, y_bf16, sp, smem, stream, pdl);
  }
#define DSV4_LD(NT)                                                                             \
  launch_pdl(pdl, linear_decode_kernel<K, SPLIT, NT, 0, RP>, grid, dim3(threads), smem, stream, \
             hi, lo, int(tokens), w, int(sp.row_tiles), int(sp.k_parts), y, y_bf16)
  if (nt == 1) {
    return launch_pdl(pdl, register_kernel<K, SPLIT, RP>(sp), grid, dim3(threads), smem, stream, hi,
                      lo, int(tokens), w, int(sp.row_tiles), int(sp.k_parts), y, y_bf16);
  }
  if (nt == 2) return DSV4_LD(2);
  if (nt == 4) return DSV4_LD(4);
  return DSV4_LD(8);
#undef DSV4_LD
}

int64_t round_k(weight_kind k) {
  return k == weight_kind::bf16 ? 64 : 128;  // a round: 4 lanes x loads_per_row x 16 bytes
}

}  // namespace

linear_decode_split linear_decode_make_split(int64_t rows, int64_t rounds, int n_tiles,
                                             int sm_count) {
  // One wave of warps: split K until the warps would pass ~16 per SM (what fits at 75-190
  // registers per thread), keeping >= 2 rounds per K part. Row tiles per block do not matter
  // (within 3%). Measured (bench_linear_gemm --split-sweep, H200, bench/RESULTS.md): fewer, longer
  // K parts beat more warps, e.g. Flash wq_b T = 8 14.7 us with 1 part vs 19.5 us with 4, Pro
  // wo_b T = 8 40.9 us with 4 parts vs 56.2 us with 16. Fit to that sweep (6 FP8 shapes x
  // T = 2, 8, 16, 32): within 1.1% of the sweep's best on all 24 points.
  const int64_t tiles = rows / 16;
  const int64_t one_wave = int64_t(std::max(sm_count, 1)) * 16;
  const int max_parts = n_tiles <= 2 ? k_linear_decode_max_warps : k_linear_decode_max_warps / 2;
  int k_parts = 1;
  while (k_parts < max_parts && tiles * 2 * k_parts <= one_wave && rounds / (2 * k_parts) >= 2)
    k_parts *= 2;
  return {1, k_parts};
}

namespace {

int64_t rounds_for(weight_kind kind, int64_t cols, int nt) {
  switch (kind) {
    case weight_kind::bf16:
      return rounds_of<weight_kind::bf16>(cols, nt);
    case weight_kind::fp8_block:
      return rounds_of<weight_kind::fp8_block>(cols, nt);
    default:  // mxfp4 and nvfp4 share the round geometry
      return rounds_of<weight_kind::nvfp4>(cols, nt);
  }
}

}  // namespace

linear_decode_split linear_decode_default_split(const device_weight& w, int64_t tokens,
                                                bool bf16_act) {
  const int nt = n_tiles_of(tokens);
  const int64_t rounds = rounds_for(w.kind, w.cols, nt);
  linear_decode_split sp = linear_decode_make_split(w.rows, rounds, nt, current_device_sm_count());
  sp.ring_stages = ring_stages_for(w.kind, w.rows, w.cols, sp.k_parts, tokens);
  if (bf16_act) apply_x_lead_rule(sp, w.kind, rounds, tokens);
  return sp;
}

bool linear_decode_split_fits(const device_weight& w, int64_t tokens,
                              const linear_decode_split& split) {
  return split_fits(split, w.kind, w.rows, n_tiles_of(tokens));
}

bool linear_decode_supported(const device_weight& w) {
  // The repacked layout (linear.h): nvfp4 only (launch<nvfp4, SPLIT, true>), scales read as
  // 16-bit words (repacked_lane).
  if (w.kind == weight_kind::f32 || validate_weight(w, /*accept_repacked=*/true) != cudaSuccess ||
      (w.layout == weight_layout::repacked &&
       (w.kind != weight_kind::nvfp4 || reinterpret_cast<uintptr_t>(w.scale) % 2 != 0)))
    return false;
  return w.rows % 16 == 0 && w.cols % round_k(w.kind) == 0 && aligned_16(w.data) &&
         w.rows / 16 <= int64_t(std::numeric_limits<int32_t>::max());
}

size_t linear_decode_workspace_bytes(int64_t tokens, int64_t cols) {
  return size_t(2) * ((size_t(std::max<int64_t>(tokens, 1) * cols) * 2 + 255) / 256 * 256);
}

bool linear_decode_grouped_supported(const device_weight& w, int64_t groups) {
  return groups >= 1 && linear_decode_supported(w) && w.rows % groups == 0 &&
         (w.rows / groups) % 16 == 0;
}

namespace {

template <typename act_t, typename out_t>
cudaError_t run_linear_decode(const act_t* x, int64_t tokens, const device_weight& w,
                              int64_t groups, out_t* y, void* workspace, size_t workspace_bytes,
                              const linear_decode_split* forced_split, cudaStream_t stream,
                              bool pdl) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, __nv_bfloat16>);
  constexpr bool y_bf16 = std::is_same_v<out_t, __nv_bfloat16>;
  if (tokens < 0 || !x || !y || !workspace) return cudaErrorInvalidValue;
  if (tokens > k_linear_decode_max_tokens || !linear_decode_grouped_supported(w, groups))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  const int64_t x_cols = groups * w.cols;  // one token's activations
  if (workspace_bytes < linear_decode_workspace_bytes(tokens, x_cols) || !aligned_16(workspace))
    return cudaErrorInvalidValue;
  auto* hi = static_cast<uint16_t*>(workspace);
  auto* lo = hi + (size_t(tokens * x_cols) * 2 + 255) / 256 * 256 / 2;
  const dense_weight dw{
      static_cast<const uint8_t*>(w.data),
      static_cast<const uint8_t*>(w.scale),
      w.global_scale,
      w.rows,
      w.cols,
      (w.kind == weight_kind::fp8_block || w.kind == weight_kind::mxfp4) && !w.scale_e8m0,
      x_cols,
      w.rows / groups};
  constexpr bool split = std::is_same_v<act_t, float>;
  // The prepare kernel's permutation acts on runs of 8 k, which never straddle two groups.
  const int64_t runs = tokens * x_cols / 8;
  const int threads = 256;
#define DSV4_LD_CASE(KIND)                                                                       \
  case weight_kind::KIND:                                                                        \
    if (const cudaError_t e =                                                                    \
            launch_pdl(pdl, linear_decode_prepare_kernel<weight_kind::KIND, act_t>,              \
                       dim3(unsigned(ceil_div(runs, threads))), dim3(threads), 0, stream, x,     \
                       tokens * x_cols, hi, lo);                                                 \
        e != cudaSuccess)                                                                        \
      return e;                                                                                  \
    return launch<weight_kind::KIND, split>(hi, lo, tokens, dw, y, y_bf16, forced_split, stream, \
                                            pdl);
  switch (w.kind) {
    DSV4_LD_CASE(bf16)
    DSV4_LD_CASE(fp8_block)
    DSV4_LD_CASE(mxfp4)
    case weight_kind::nvfp4:
      if (const cudaError_t e =
              launch_pdl(pdl, linear_decode_prepare_kernel<weight_kind::nvfp4, act_t>,
                         dim3(unsigned(ceil_div(runs, threads))), dim3(threads), 0, stream, x,
                         tokens * x_cols, hi, lo);
          e != cudaSuccess)
        return e;
      // The repacked layout changes only the weight bytes' order (the same activation order).
      if (w.layout == weight_layout::repacked)
        return launch<weight_kind::nvfp4, split, true>(hi, lo, tokens, dw, y, y_bf16, forced_split,
                                                       stream, pdl);
      return launch<weight_kind::nvfp4, split>(hi, lo, tokens, dw, y, y_bf16, forced_split, stream,
                                               pdl);
    default:
      return cudaErrorNotSupported;
  }
#undef DSV4_LD_CASE
}

}  // namespace

template <typename act_t, typename out_t>
cudaError_t linear_decode_with_split(const act_t* x, int64_t tokens, const device_weight& w,
                                     out_t* y, void* workspace, size_t workspace_bytes,
                                     const linear_decode_split* split, cudaStream_t stream,
                                     bool pdl) {
  return run_linear_decode(x, tokens, w, 1, y, workspace, workspace_bytes, split, stream, pdl);
}

template <typename act_t, typename out_t>
cudaError_t linear_decode_grouped_with_split(const act_t* x, int64_t tokens, const device_weight& w,
                                             int64_t groups, out_t* y, void* workspace,
                                             size_t workspace_bytes,
                                             const linear_decode_split* split, cudaStream_t stream,
                                             bool pdl) {
  return run_linear_decode(x, tokens, w, groups, y, workspace, workspace_bytes, split, stream, pdl);
}

template <typename act_t, typename out_t>
cudaError_t linear_decode(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                          void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return run_linear_decode(x, tokens, w, 1, y, workspace, workspace_bytes, nullptr, stream, true);
}

template <typename act_t, typename out_t>
cudaError_t linear_decode_grouped(const act_t* x, int64_t tokens, const device_weight& w,
                                  int64_t groups, out_t* y, void* workspace, size_t workspace_bytes,
                                  cudaStream_t stream) {
  return run_linear_decode(x, tokens, w, groups, y, workspace, workspace_bytes, nullptr, stream,
                           true);
}

#define DSV4_LD_INSTANTIATE(ACT, OUT)                                                             \
  template cudaError_t linear_decode<ACT, OUT>(const ACT*, int64_t, const device_weight&, OUT*,   \
                                               void*, size_t, cudaStream_t);                      \
  template cudaError_t linear_decode_grouped<ACT, OUT>(                                           \
      const ACT*, int64_t, const device_weight&, int64_t, OUT*, void*, size_t, cudaStream_t);     \
  template cudaError_t linear_decode_with_split<ACT, OUT>(                                        \
      const ACT*, int64_t, const device_weight&, OUT*, void*, size_t, const linear_decode_split*, \
      cudaStream_t, bool);                                                                        \
  template cudaError_t linear_decode_grouped_with_split<ACT, OUT>(                                \
      const ACT*, int64_t, const device_weight&, int64_t, OUT*, void*, size_t,                    \
      const linear_decode_split*, cudaStream_t, bool);
DSV4_LD_INSTANTIATE(float, float)
DSV4_LD_INSTANTIATE(__nv_bfloat16, float)
DSV4_LD_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
#undef DSV4_LD_INSTANTIATE

}  // namespace dsv4::cuda
