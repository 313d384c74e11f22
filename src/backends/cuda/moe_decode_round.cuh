// One round (128 k) of the decode-path MoE GEMM (moe_decode_gemm.cuh): the per-warp cp.async
// ring and scale slots that stream the weights, the register pipeline's loads, the exact E2M1 ->
// BF16 expansion with its scale steps and the mma.sync products, and the activation fragment
// loads.
#pragma once

#include <cstdint>

#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/moe_decode_scales.h"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/uint4_words.cuh"

namespace dsv4::cuda {

namespace {

// Weight stream: each lane copies its own fragment of a round (16 bytes of rows g and g + 8 per
// matrix, and the 4-byte scale word holding its scales) into a per-warp shared-memory ring of
// k_stages rounds with cp.async, and reads back only what it copied itself, so
// cp.async.wait_group alone orders the copy and the read (no warp or block barrier). k_stages
// rounds per warp stay in flight while the tensor cores work (the register double buffer of the
// first version kept one, which left T = 1 latency-bound).
// DSV4_MOE_RING_STAGES (experiment builds only, scripts/build_moe_variant_bench.sh): another depth.
#ifdef DSV4_MOE_RING_STAGES
constexpr int k_stages = DSV4_MOE_RING_STAGES;
#else
constexpr int k_stages = 4;
#endif

// One stage of one warp's ring: per matrix m and row half i (rows g, g + 8), lane-major.
template <int NM>
struct stage_buf {
  uint4 w[NM][2][k_warp_size];
};

// A warp's scales: a chunk of up to 16 bytes of each of its 16 rows per matrix (16 bytes: 4 rounds
// of E8M0, 2 of NVFP4 E4M3, 1 of MXFP4 as f32), copied once by the lanes q == 0, instead of four
// 4-byte copies per round that each touched 8 rows (as many L1 wavefronts as the weights).
// Geometry and slots: moe_decode_scales.h; k_scale_slots is enough that no chunk is overwritten
// before its last round is read (k_stages rounds in flight, >= 1 round per chunk).
using moe_scales::k_scale_slots;
template <int NM, int SS = k_scale_slots>
struct scale_buf {
  uint4 s[SS][NM][2][8];  // [slot][matrix][row half][g]
};
// The few-slot scale ring (moe_decode_set_scale_slots_from; SSO == k_scale_slots_few): 4 slots.
constexpr int k_scale_slots_few = 4;
static_assert(k_stages <= k_scale_slots_few, "the few-slot ring holds every round in flight");
// k_scale_slots_few slots (= k_stages in the default build; moe_decode_set_scale_slots_from) hold
// the chunks of k_stages rounds in flight for every geometry: the refill after round j writes the
// chunk of round j + k_stages, at most k_stages - 1 past that of round j + 1 (one round per chunk);
// it may take round j's slot, hence the __syncwarp before the refill whenever k_stages >= slots.
// Frees 8 KB of a W1/W3 block (4 KB of W2): with a staged row, 4 W1/W3 blocks per SM instead of 3.

// f32 MXFP4 scales (powers of two, as the kernels read them: bits 30:23) of one round's 4 groups
// as the E8M0 bytes of a chunk word (group q in byte q).
__device__ __forceinline__ uint32_t f32_scales_as_e8m0(uint4 v) {
  return ((v.x >> 23) & 0xFFu) | (((v.y >> 23) & 0xFFu) << 8) | (((v.z >> 23) & 0xFFu) << 16) |
         (((v.w >> 23) & 0xFFu) << 24);
}

// One round's weights of one matrix for rows g and g + 8 as mma_round takes them.
template <weight_kind K>
struct round_w {
  uint4 v[2];
  uint32_t s[2];  // mxfp4: E8M0 byte; nvfp4: two E4M3 bytes (low = first 16)
};

// The register pipeline's loads of one round (RING = false): 16 weight bytes of rows g and
// g + 8 and their scales, straight into registers. RP: the weight bytes come from the repacked
// layout instead, `rp_lane` = this lane's 16 bytes of row g in the tile's round 0 (row g + 8 at
// +512, rounds 1 KB apart).
template <weight_kind K, int RP = 0>
__device__ __forceinline__ void load_round(round_w<K>& r, const uint8_t* row0, const uint8_t* srow0,
                                           int64_t row_bytes, int64_t srow, bool scale_f32,
                                           int64_t k, const uint8_t* rp_lane = nullptr) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (RP)
      r.v[i] = fp4mma::load_stream_16(rp_lane + (k / k_round) * fp4_repack::k_tile_bytes +
                                      i * (fp4_repack::k_tile_bytes / 2));
    else
      r.v[i] = fp4mma::load_stream_16(row0 + i * 8 * row_bytes + k / 2);
    const uint8_t* s = srow0 + i * 8 * srow * (scale_f32 ? 4 : 1);
    if constexpr (K == weight_kind::mxfp4) {
      r.s[i] = scale_f32 ? (__ldg(reinterpret_cast<const uint32_t*>(s) + k / 32) >> 23) & 0xFFu
                         : __ldg(s + k / 32);
    } else {
      r.s[i] = __ldg(s + k / 16) | (uint32_t(__ldg(s + k / 16 + 1)) << 8);
    }
  }
}

// One 32-bit word of eight E2M1 codes to four unscaled BF16 pairs, in the checkpoint's nibble
// order (RP = 0) or the repacked one (RP = 2, fp4_repack::decode_pairs: 5 LOP3, 2 SHF, 1 IMAD a
// word since session 43's map). RP = 1 (the rotation expansion) was retired in session 44; every
// use of RP as a flag means "repacked layout".
template <int RP>
__device__ __forceinline__ void expand_word(uint32_t word, uint32_t (&p)[4]) {
  static_assert(RP == 0 || RP == 2, "RP: 0 checkpoint order, 2 repacked");
  if constexpr (RP) {
    fp4_repack::decode_pairs(word, p);
  } else {
    p[0] = fp4mma::e2m1_pair<0>(word), p[1] = fp4mma::e2m1_pair<1>(word);
    p[2] = fp4mma::e2m1_pair<2>(word), p[3] = fp4mma::e2m1_pair<3>(word);
  }
}

// after_word0: called once, after word 0's HMMAs (the ring's next-round activation loads, see
// round_math; a no-op elsewhere).
struct no_hook {
  __device__ __forceinline__ void operator()() const {}
};

// The scale multipliers of a round's rows g, g + 8: m1[i][h] for words 2 h, 2 h + 1 (NVFP4: one
// per 16 k; MXFP4: one per row), m2[i] the MXFP4 second step (1.0 unless E8M0 > 128). FAST: the
// MXFP4 m1 by one IMAD, exact for E8M0 <= 128, m2 left 1.0 (the caller has ruled out the rest).
template <weight_kind K, bool FAST>
__device__ __forceinline__ void round_scales(const round_w<K>& r, uint32_t (&m1)[2][2],
                                             uint32_t (&m2)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    m2[i] = 0x3F803F80u;
    if constexpr (K == weight_kind::mxfp4) {
      if constexpr (FAST) {
        m1[i][0] = m1[i][1] = r.s[i] * 0x00800080u + 0x3F003F00u;
      } else {
        const fp4mma::mx_scale s = fp4mma::mx_scale_of(r.s[i]);
        m1[i][0] = m1[i][1] = s.m1;
        m2[i] = s.m2;
      }
    } else {
      m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
      m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
    }
  }
}

// The four words of a round, shared by both round variants: expansion, the scale steps (the
// second, MXFP4 only, where `two`: a compile-time constant in mma_round, a per-lane value in
// mma_round_per_word) and the mma.sync products; after_word0 once, after word 0's.
template <weight_kind K, bool SPLIT, int RP, typename H>
__device__ __forceinline__ void round_words(float (&acc)[4], float (&acc_b)[4], const round_w<K>& r,
                                            const uint32_t (&m1)[2][2], const uint32_t (&m2)[2],
                                            bool two, const uint4 (&xh)[4], const uint4 (&xl)[4],
                                            const H& after_word0) {
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    uint32_t p0[4], p1[4];
    expand_word<RP>(word_of(r.v[0], w), p0);
    expand_word<RP>(word_of(r.v[1], w), p1);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      p0[j] = fp4mma::mul_bf16x2(p0[j], m1[0][w >> 1]);
      p1[j] = fp4mma::mul_bf16x2(p1[j], m1[1][w >> 1]);
    }
    if constexpr (K == weight_kind::mxfp4) {
      if (two) {  // E8M0 > 128 (scale > 2): a second exact power-of-two step
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          p0[j] = fp4mma::mul_bf16x2(p0[j], m2[0]);
          p1[j] = fp4mma::mul_bf16x2(p1[j], m2[1]);
        }
      }
    }
    fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xh[w].x, xh[w].y);
    fp4mma::mma_bf16(acc_b, p0[2], p1[2], p0[3], p1[3], xh[w].z, xh[w].w);
    if constexpr (SPLIT) {
      fp4mma::mma_bf16(acc, p0[0], p1[0], p0[1], p1[1], xl[w].x, xl[w].y);
      fp4mma::mma_bf16(acc_b, p0[2], p1[2], p0[3], p1[3], xl[w].z, xl[w].w);
    }
    if (w == 0) after_word0();
  }
}

// The first version's round (the register pipeline keeps it): the same values as mma_round, with
// the MXFP4 multipliers from mx_scale_of and the second step as a per-lane branch per word.
// Measured on an H200 (MOE5 run 2): the register pipeline with mma_round instead took 1.09-1.12x
// longer (MXFP4 f32, Flash T = 1 and 64); the cp.async ring gained with it.
template <weight_kind K, bool SPLIT, int RP>
__device__ __forceinline__ void mma_round_per_word(float (&acc)[4], float (&acc_b)[4],
                                                   const round_w<K>& r, const uint4 (&xh)[4],
                                                   const uint4 (&xl)[4]) {
  uint32_t m1[2][2], m2[2];
  round_scales<K, false>(r, m1, m2);
  bool two = false;  // a per-lane branch per word
#pragma unroll
  for (int i = 0; i < 2; ++i) two |= m2[i] != 0x3F803F80u;
  round_words<K, SPLIT, RP>(acc, acc_b, r, m1, m2, two, xh, xl, no_hook{});
}

// acc += the round's 16 rows x 32 k per lane (128 per quad) times the token fragments xh / xl.
// RP: the weight words are in the repacked bit order (moe_repack.h), which decodes to the same
// pairs with fewer instructions. An MXFP4 scale becomes its BF16x2 multiplier m1 = 2^(e - 1)
// with one IMAD (e * 0x00800080 + 0x3F003F00; exact for e <= 128, no carry between the halves);
// the second exact step for E8M0 > 128 (scale > 2, never in the checkpoints) is a separate
// whole-round variant (TWO) that the warp enters only when one of its lanes needs it (MOE4's
// loop branched per word and built m1 / m2 with ~30 SEL / ISETP per round). In the TWO variant
// every lane takes mx_scale_of, whose m2 is 1.0 for e <= 128, so lanes without a large scale
// compute the same values as in the fast variant: every product, scale step and sum is the
// first version's (bit-identical outputs).
template <weight_kind K, bool SPLIT, bool TWO, int RP, typename H = no_hook>
__device__ __forceinline__ void mma_round(float (&acc)[4], float (&acc_b)[4], const round_w<K>& r,
                                          const uint4 (&xh)[4], const uint4 (&xl)[4],
                                          const H& after_word0 = H{}) {
  uint32_t m1[2][2], m2[2];
  round_scales<K, !TWO>(r, m1, m2);
  round_words<K, SPLIT, RP>(acc, acc_b, r, m1, m2, TWO, xh, xl, after_word0);
}

// All NM matrices of one round: the ring's mma_round (with the warp-wide choice of its TWO variant
// for MXFP4) or the register pipeline's mma_round_per_word. All lanes of the warp.
// H (the ring): after_word0 of matrix 0's round. two_possible (MXFP4, the ring): false where every
// scale of the matrices is known to be <= 2 (fp4_weight::scales_at_most_2, the same for the whole
// grid): the fast variant without the per-round vote (its values for such scales are the TWO
// variant's, see mma_round).
template <weight_kind K, bool SPLIT, int RP, int NM, bool RING = true, typename H = no_hook>
__device__ __forceinline__ void mma_rounds(float (&acc)[NM][4], float (&acc_b)[NM][4],
                                           const round_w<K> (&cur)[NM], const uint4 (&xh)[4],
                                           const uint4 (&xl)[4], const H& after_word0 = H{},
                                           bool two_possible = true) {
  if constexpr (!RING) {
#pragma unroll
    for (int m = 0; m < NM; ++m) mma_round_per_word<K, SPLIT, RP>(acc[m], acc_b[m], cur[m], xh, xl);
  } else if constexpr (K == weight_kind::mxfp4) {
    bool two = false;
    if (two_possible) {
      uint32_t emax = 0;
#pragma unroll
      for (int m = 0; m < NM; ++m) emax = max(emax, max(cur[m].s[0], cur[m].s[1]));
      two = __any_sync(0xffffffffu, emax > 128u);
    }
    if (two) {
      mma_round<K, SPLIT, true, RP>(acc[0], acc_b[0], cur[0], xh, xl, after_word0);
#pragma unroll
      for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, true, RP>(acc[m], acc_b[m], cur[m], xh, xl);
    } else {
      mma_round<K, SPLIT, false, RP>(acc[0], acc_b[0], cur[0], xh, xl, after_word0);
#pragma unroll
      for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, false, RP>(acc[m], acc_b[m], cur[m], xh, xl);
    }
  } else {
    mma_round<K, SPLIT, false, RP>(acc[0], acc_b[0], cur[0], xh, xl, after_word0);
#pragma unroll
    for (int m = 1; m < NM; ++m) mma_round<K, SPLIT, false, RP>(acc[m], acc_b[m], cur[m], xh, xl);
  }
}

// A lane's 32 activations of round `round` (act_u16_index layout): 4 groups of 8 = 4 x 16 bytes
// per part; hi / lo point at the lane's group 0 of round 0 (row start + q).
// COH: plain (weak, coherent) loads instead of the non-coherent path, which is for data
// read-only over the kernel's lifetime: chain 16's W2 reads h that the W1/W3 grid, still
// running, released after the kernel started. wait_counter's acquire (CCTL.IVALL in the SASS;
// MEMBAR.SC.GPU too before MOE24) orders them after the release; they still hit L1 (the block's 4
// warps read the same h row), which ld.global.cg would bypass.
template <bool COH = false>
__device__ __forceinline__ uint4 load_act16(const uint4* p) {
  if constexpr (COH)
    return *p;
  else
    return __ldg(p);
}
template <bool COH = false>
__device__ __forceinline__ void load_x(uint4 (&xh)[4], uint4 (&xl)[4], const uint4* hi,
                                       const uint4* lo, int64_t round, bool split) {
#pragma unroll
  for (int i = 0; i < 4; ++i) xh[i] = load_act16<COH>(hi + round * 16 + 4 * i);
  if (split) {
#pragma unroll
    for (int i = 0; i < 4; ++i) xl[i] = load_act16<COH>(lo + round * 16 + 4 * i);
  }
}

}  // namespace

}  // namespace dsv4::cuda
