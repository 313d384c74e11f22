// Chain 512 (MOE23): W1/W3 of the engine's T = 1 path as one wave of equal per-warp work
// ("stream-K"), instead of (chunk, row tile) items of RT tiles.
//
// Why: at Pro T = 1 the RT 2 grid is 576 blocks on 3 x 132 resident slots (1.45 waves); the
// second wave's ~180 blocks run at 1-2 blocks per SM for as long as the first wave did, because a
// W1/W3 warp's round costs ~0.9-1.0 us whatever its scheduler's warp count (MOE22's trace). Here
// the grid is exactly the resident slots (blocks per SM x SMs) and the flattened work, units =
// (slot, 16-row tile, 128-k round) in that order, is cut into one contiguous range per warp
// (warp w: units [w N / W, (w + 1) N / W)). A range crosses tile boundaries: each piece of a tile
// (a warp's units inside it) is summed over its rounds in order, as the RT kernel's K parts are;
// the pieces of a tile meet in global memory (part, per tile and piece index) and the last warp to
// count on the tile's counter adds them in piece (K) order, so the sum is deterministic but not
// the RT kernel's order (RT 2: rounds 0..R/2-1 + R/2..R-1). That warp then applies SwiGLU and the
// pair weight (hf), counts on the (slot, 128-row group) fold counter, and the group's last
// quantizes h and releases it to W2 (chain 16's protocol, per warp instead of per block).
// Preconditions (launch_gemm_ss): chain 8's self plan (one token: every pair of a slot reads the
// one staged x row, so the 8 mma columns are equal and column 0 is every pair's value), chain 16's
// counters (ready, qcnt and the tile counters, all zeroed by the previous call's combine), the
// official order (pair_weights, hf), the repacked layout with the shift decode, the ring.
#pragma once

#include <cstdint>

#include "backends/cuda/moe_decode_chain.cuh"
#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/moe_decode_plan.cuh"
#include "backends/cuda/moe_decode_quantize.cuh"
#include "backends/cuda/moe_decode_round.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// The warp owning unit u of n units cut over w warps (start(v) = v n / w).
__device__ __forceinline__ int64_t streamk_warp_of(int64_t u, int64_t n, int64_t w) {
  int64_t v = u * w / n;
  while (v + 1 < w && (v + 1) * n / w <= u) ++v;
  while (v > 0 && v * n / w > u) --v;
  return v;
}

// slots: chunk slots (the chunk bound); tile_cnt: slots * rows / 16 counters; part: per tile,
// `pieces` pieces of 2 x 16 floats (W1 and W3 sums of the tile's 16 rows).
// SS: scale slots (k_scale_slots, or k_stages: 10 KB less static shared memory, so that 4 blocks
// with Pro's 14 KB staged row fit an SM instead of 3).
template <weight_kind K, int SS>
__global__ void __launch_bounds__(k_threads, K == weight_kind::mxfp4 ? 4 : 1)
    moe_decode_up_streamk_kernel(const uint16_t* x_bf16, int64_t kdim, int64_t rows, int slots,
                                 fp4_weight wa, fp4_weight wb, float limit,
                                 const float* pair_weights, uint16_t* h_hi, float* hf,
                                 int* tile_cnt, float* part, int pieces, chain_args chain) {
  constexpr int NM = 2, RP = 2;
  static_assert(k_stages <= SS && (SS & (SS - 1)) == 0, "scale slots");
  static_assert(fp4_repack::k_tile_rows == 16, "a repacked tile is the mma's 16 rows");
  __shared__ alignas(128) stage_buf<NM> ring[k_warps][k_stages];
  __shared__ alignas(128) scale_buf<NM, SS> scale_ring[k_warps];
  extern __shared__ uint4 dyn_smem[];
  pdl_wait();  // the routing and x come from launches before the call
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int g = lane / 4, q = lane % 4;
  const int64_t R = kdim / k_round, tiles = rows / 16;
  const int64_t n_units = int64_t(slots) * tiles * R, n_warps = int64_t(gridDim.x) * k_warps;
  const int64_t gw = int64_t(blockIdx.x) * k_warps + warp;
  const int64_t u_end = (gw + 1) * n_units / n_warps;
  int64_t u = gw * n_units / n_warps;

  const bool scale_f32 = wa.scale_f32;
  const moe_scales::encoding enc = K == weight_kind::nvfp4 ? moe_scales::encoding::e4m3
                                   : scale_f32             ? moe_scales::encoding::f32
                                                           : moe_scales::encoding::e8m0;
  const int64_t srow = K == weight_kind::mxfp4 ? kdim / 32 : kdim / 16;
  const moe_scales::geometry geo = moe_scales::make_geometry(srow * (scale_f32 ? 4 : 1), enc);
  const int rpc_shift = geo.rpc_shift, rpc_mask = (1 << geo.rpc_shift) - 1;
  const fp4_weight ws[2] = {wa, wb};
  stage_buf<NM>* const my_ring = &ring[warp][0];
  scale_buf<NM, SS>& my_scales = scale_ring[warp];

  // A piece: tile `tg` (slot * tiles + tile), rounds [ra, ra + nr), the slot's expert and pairs.
  struct piece_t {
    int64_t tg;
    int ra, nr;
    int slot, e;
    unsigned mask;
  };
  int cached_slot = -1, cached_e = 0;
  unsigned cached_mask = 0;
  // The next piece at or after unit u with a valid slot (nr = 0: none left). Warp-uniform.
  const auto next_piece = [&](int64_t& at) {
    piece_t p{0, 0, 0, 0, 0, 0u};
    while (at < u_end) {
      const int64_t tg = at / R;
      const int ra = int(at - tg * R);
      const int64_t left = u_end - at;
      const int nr = int(R - ra < left ? R - ra : left);
      const int slot = int(tg / tiles);
      if (slot != cached_slot) {
        int e = 0;
        unsigned mask = 0;
        if (!moe_decode_self_chunk(chain.self_indices, chain.self_pairs, chain.self_experts, slot,
                                   e, mask))
          mask = 0;
        cached_slot = slot, cached_e = e, cached_mask = mask;
      }
      at += nr;
      if (cached_mask) {
        p = piece_t{tg, ra, nr, slot, cached_e, cached_mask};
        break;
      }
    }
    return p;
  };

  const uint8_t* src_w[NM][2];
  const uint8_t* src_s[NM][2];
  const auto setup = [&](const piece_t& p) {
    const int64_t r0 = (p.tg % tiles) * 16;
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        src_w[m][i] = ws[m].data + p.e * ws[m].matrix_bytes +
                      ((r0 / 16) * R + p.ra) * fp4_repack::k_tile_bytes +
                      i * (fp4_repack::k_tile_bytes / 2) + lane * 16;
        src_s[m][i] = ws[m].scale +
                      (p.e * ws[m].matrix_scales + (r0 + g + 8 * i) * srow) * (scale_f32 ? 4 : 1);
      }
  };
  // Round j of piece p (its round p.ra + j) into stage `stage`, then commit (an empty group past
  // the end keeps one group per round for wait_group); scales as moe_decode_gemm_kernel's ring.
  const auto issue = [&](const piece_t& p, int j, int stage) {
    if (j < p.nr) {
      stage_buf<NM>& b = my_ring[stage];
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          cp_async_16(&b.w[m][i][lane], src_w[m][i]);
          src_w[m][i] += fp4_repack::k_tile_bytes;
        }
      const int r = p.ra + j;
      if (q == 0 && (j == 0 || (r & rpc_mask) == 0)) {
        const int chunk = r >> rpc_shift;
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            void* dst = &my_scales.s[chunk & (SS - 1)][m][i][g];
            const uint8_t* src = src_s[m][i] + (uint32_t(chunk) << geo.cb_shift);
            if (geo.cb_shift == 4)
              cp_async_16(dst, src);
            else if (geo.cb_shift == 3)
              cp_async_small<8>(dst, src);
            else
              cp_async_small<4>(dst, src);
          }
      }
    }
    cp_async_commit();
  };
  const auto prologue = [&](const piece_t& p) {
    setup(p);
#pragma unroll
    for (int j = 0; j < k_stages; ++j) issue(p, j, j);
  };

  piece_t cur = next_piece(u);
  if (cur.nr) prologue(cur);
  // x (bf16) into the staged row, converted as the prepare launch would (the hi part only).
  uint4* const xs_row = dyn_smem;
  {
    const uint4* src = reinterpret_cast<const uint4*>(x_bf16);
    for (int i = threadIdx.x; i < int(kdim / 8); i += k_threads) {
      const uint4 v = __ldg(src + i);
      const uint32_t wv[4] = {v.x, v.y, v.z, v.w};
      uint4 h, unused_lo;
      split_group8(
          [&](int j) {
            return __bfloat162float(
                __ushort_as_bfloat16(uint16_t(j & 1 ? wv[j >> 1] >> 16 : wv[j >> 1] & 0xFFFFu)));
          },
          h, unused_lo);
      xs_row[act_group_slot(i)] = h;
    }
  }
  __syncthreads();
  pdl_trigger();
  const uint4* const xs_lane = xs_row + q;
  const int scale_shift = moe_scales::shift_of(enc, q);
  const uint32_t scale_mask = moe_scales::mask_of(enc);

  while (cur.nr) {
    float acc[NM][4];
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f;
    for (int j = 0; j < cur.nr; ++j) {
      const int u_st = j % k_stages;
      const int r = cur.ra + j;
      uint4 cx[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) cx[i] = xs_lane[r * 16 + 4 * i];
      cp_async_wait<k_stages - 1>();
      __syncwarp();
      const stage_buf<NM>& b = my_ring[u_st];
      const int in_chunk = r & rpc_mask;
      const int word = K == weight_kind::nvfp4 ? in_chunk * 2 + (q >> 1) : scale_f32 ? q : in_chunk;
      const auto& sc = my_scales.s[(r >> rpc_shift) & (SS - 1)];
      round_w<K> w[NM];
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          w[m].v[i] = b.w[m][i][lane];
          w[m].s[i] =
              (reinterpret_cast<const uint32_t*>(&sc[m][i][g])[word] >> scale_shift) & scale_mask;
        }
      mma_rounds<K, false, RP, NM>(acc, w, cx, cx);
      if constexpr (k_stages >= SS) __syncwarp();
      issue(cur, j + k_stages, u_st);
    }
    cp_async_wait<0>();
    __syncwarp();  // every lane's reads of the ring and scale slots are done
    // Accumulator i: row g + 8 (i / 2), column 2q + i % 2; column 0 (lanes q == 0) is the value.
    float v[NM][2];
#pragma unroll
    for (int m = 0; m < NM; ++m) v[m][0] = acc[m][0], v[m][1] = acc[m][2];
    const piece_t done = cur;
    cur = next_piece(u);
    if (cur.nr) prologue(cur);  // the next piece's first rounds stream during the hand-off

    // The tile's pieces: the warps owning its first and last units.
    const int64_t fw = streamk_warp_of(done.tg * R, n_units, n_warps);
    const int64_t lw = streamk_warp_of(done.tg * R + R - 1, n_units, n_warps);
    const int np = int(lw - fw + 1), me = int(gw - fw);
    if (np > 1) {
      float* const pt = part + done.tg * pieces * (NM * 16);
      if (q == 0)
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) pt[me * (NM * 16) + m * 16 + g + 8 * h] = v[m][h];
      __syncwarp();
      int before = 0;
      if (lane == 0)
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                     : "=r"(before)
                     : "l"(tile_cnt + done.tg)
                     : "memory");
      before = __shfl_sync(0xffffffffu, before, 0);
      if (before != np - 1) continue;
      __syncwarp();
      if (q == 0)
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const auto piece_v = [&](int i) {
              return i == me ? v[m][h] : __ldcg(pt + i * (NM * 16) + m * 16 + g + 8 * h);
            };
            float s = piece_v(0);
            for (int i = 1; i < np; ++i) s += piece_v(i);
            v[m][h] = s;
          }
    }
    // SwiGLU and the pair weights: hf of every pair of the slot (lanes q == 0, rows g, g + 8).
    const int64_t r0 = (done.tg % tiles) * 16;
    float post[NM];
#pragma unroll
    for (int m = 0; m < NM; ++m)
      post[m] = K == weight_kind::nvfp4
                    ? (ws[m].global ? __ldg(ws[m].global + done.e) : 1.0f) * 256.0f
                    : 1.0f;
    const int n_pairs = __popc(done.mask);
    if (q == 0)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = r0 + g + 8 * h;
        const float val = moe_swiglu_value(v[0][h] * post[0], v[1][h] * post[1], limit);
        for (int i = 0; i < n_pairs; ++i) {
          const int p = self_chunk_pair(done.mask, i);
          hf[int64_t(p) * rows + row] = __fmul_rn(val, pair_weights[p]);
        }
      }
    // The fold: the last tile of the (slot, 128-row group) quantizes the group and releases it.
    __syncwarp();
    const int64_t grp = r0 / 128;
    int before = 0;
    if (lane == 0)
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                   : "=r"(before)
                   : "l"(chain.qcnt + int64_t(done.slot) * (rows / 128) + grp)
                   : "memory");
    before = __shfl_sync(0xffffffffu, before, 0);
    if (before != 128 / 16 - 1) continue;
    __syncwarp();
    for (int i = 0; i < n_pairs; ++i) {
      const int p = self_chunk_pair(done.mask, i);
      quantize_h_block(load_h_block<true>(hf + int64_t(p) * rows + grp * 128, lane),
                       h_hi + int64_t(p) * rows, grp * 128, lane);
    }
    __syncwarp();
    if (lane == 0) {
      int* const rd = chain.ready + int64_t(done.slot) * k_ready_stride;
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(rd) : "memory");
    }
  }
}

}  // namespace

}  // namespace dsv4::cuda
