// Device pieces of the routed-expert prefill GEMMs shared by the mma.sync core (moe_prefill.cu)
// and the wgmma core (moe_prefill_wgmma.cu): the stacked 4-bit weight as the kernels see it and a
// lane's weight loads for one 128-wide k round with their exact BF16 scale multipliers
// (fp4_mma.cuh).
//
// Lane (g, c) of a warp owning 16 rows reads 16 bytes (32 e2m1 values, k = 32 c .. 32 c + 31 of
// the round) of rows g and g + 8, and the scales of those 32 k.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/linear.h"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/uint4_words.cuh"

namespace dsv4::cuda::prefill {

// One stacked 4-bit weight as the kernels see it.
struct fp4_weight {
  const uint8_t* data;
  const uint8_t* scale;
  const float* global;  // nvfp4 (null reads as 1)
  int64_t rows, cols;
  int64_t matrix_bytes;   // rows * cols / 2
  int64_t matrix_scales;  // scale elements per matrix
  bool scale_f32;         // mxfp4 with f32 (power-of-two) scales
};

inline fp4_weight make_fp4_weight(const device_weight& w) {
  return fp4_weight{static_cast<const uint8_t*>(w.data),
                    static_cast<const uint8_t*>(w.scale),
                    w.global_scale,
                    w.rows,
                    w.cols,
                    weight_matrix_bytes(w.kind, w.rows, w.cols),
                    scale_matrix_count(w.kind, w.rows, w.cols),
                    w.kind == weight_kind::mxfp4 && !w.scale_e8m0};
}

// A 16-row tile's loads for one round: 16 weight bytes of rows g and g + 8 and their scales.
struct tile_round {
  uint4 v[2];
  uint32_t s[2];  // mxfp4: E8M0 byte; nvfp4: two E4M3 bytes (low = first 16 k)
};

// Where a lane's two rows of a 16-row tile start (weights and scales).
struct tile_rows {
  const uint8_t* w[2];
  const uint8_t* s[2];
};

// RP: the weight data is in the repacked layout (moe_repack.h), where the lane's 16 bytes of row
// `row` and round 0 sit in tile row / 16 of the first tile column, half (row % 16) / 8, slot
// (row % 8) * 4 + c: t.w[i] points at slot c = 0, as the checkpoint row pointer does at k = 0.
template <weight_kind K, bool RP = false>
__device__ __forceinline__ tile_rows locate_tile(const fp4_weight& w, int64_t e, int64_t row0) {
  tile_rows t;
  const int64_t spr = K == weight_kind::mxfp4 ? w.cols / 32 : w.cols / 16;  // scales per row
  const int64_t sbytes = w.scale_f32 ? 4 : 1;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t row = min(row0 + 8 * i, w.rows - 1);  // rows past the end: loaded, not stored
    if constexpr (RP)
      t.w[i] = w.data + e * w.matrix_bytes +
               (row / fp4_repack::k_tile_rows) * (w.cols / fp4_repack::k_tile_cols) *
                   fp4_repack::k_tile_bytes +
               ((row % fp4_repack::k_tile_rows) / 8) * (fp4_repack::k_tile_bytes / 2) +
               (row % 8) * 64;
    else
      t.w[i] = w.data + e * w.matrix_bytes + row * (w.cols / 2);
    t.s[i] = w.scale + (e * w.matrix_scales + row * spr) * sbytes;
  }
  return t;
}

// Where lane c's 16 weight bytes of 128-wide round `round` start, from locate_tile's pointer:
// 64 bytes per round along a checkpoint row (k / 2), one 1024-byte tile per round in the
// repacked layout (tiles of a tile row are consecutive); 16 bytes per lane either way.
template <bool RP>
__device__ __forceinline__ const uint8_t* lane_round_ptr(const uint8_t* row_ptr, int64_t round,
                                                         int c) {
  constexpr int64_t round_bytes = RP ? fp4_repack::k_tile_bytes : 64;
  return row_ptr + round * round_bytes + c * 16;
}

// The BF16 pair P_i = (v_i, v_{i+4}) of a weight word (fp4_mma.cuh), from the checkpoint bit
// order or the repacked one (RP; bit for bit the same pair, moe_repack.h).
template <int i, bool RP>
__device__ __forceinline__ uint32_t weight_pair(uint32_t word) {
  if constexpr (RP)
    return fp4_repack::decode_pair<i>(word);
  else
    return fp4mma::e2m1_pair<i>(word);
}

// The scales of a lane's 32 k starting at k (r.s).
template <weight_kind K>
__device__ __forceinline__ void load_tile_scales(tile_round& r, const tile_rows& t, bool scale_f32,
                                                 int64_t k) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (K == weight_kind::mxfp4) {
      r.s[i] = scale_f32 ? (__ldg(reinterpret_cast<const uint32_t*>(t.s[i]) + k / 32) >> 23) & 0xFFu
                         : __ldg(t.s[i] + k / 32);
    } else {
      r.s[i] = __ldg(t.s[i] + k / 16) | (uint32_t(__ldg(t.s[i] + k / 16 + 1)) << 8);
    }
  }
}

// A lane's 16 weight bytes of both rows and their scales for the 32 k starting at k.
template <weight_kind K>
__device__ __forceinline__ void load_tile_round(tile_round& r, const tile_rows& t, bool scale_f32,
                                                int64_t k) {
#pragma unroll
  for (int i = 0; i < 2; ++i) r.v[i] = fp4mma::load_stream_16(t.w[i] + k / 2);
  load_tile_scales<K>(r, t, scale_f32, k);
}

// Per-round multipliers of a tile: m1[row][half] (nvfp4: the E4M3 scale of k 0-15 / 16-31;
// mxfp4: both halves the same power of two) and the second MXFP4 step m2[row].
struct tile_scale {
  uint32_t m1[2][2], m2[2];
  bool two;
};

template <weight_kind K>
__device__ __forceinline__ tile_scale scale_of(const tile_round& r) {
  tile_scale s;
  s.two = false;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    if constexpr (K == weight_kind::mxfp4) {
      const fp4mma::mx_scale m = fp4mma::mx_scale_of(r.s[i]);
      s.m1[i][0] = s.m1[i][1] = m.m1;
      s.m2[i] = m.m2;
      s.two |= m.m2 != 0x3F803F80u;
    } else {
      s.m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
      s.m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
      s.m2[i] = 0x3F803F80u;
    }
  }
  return s;
}

// ---- Shared-memory helpers of the sm_90 prefill cores (wgmma, wgmma_cp, wgmma_ws, w4a8); their
// cp.async wrappers are cp_async.cuh's. ----

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ uint4 lds_16(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
}  // namespace dsv4::cuda::prefill
