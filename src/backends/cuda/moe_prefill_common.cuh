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

template <weight_kind K>
__device__ __forceinline__ tile_rows locate_tile(const fp4_weight& w, int64_t e, int64_t row0) {
  tile_rows t;
  const int64_t spr = K == weight_kind::mxfp4 ? w.cols / 32 : w.cols / 16;  // scales per row
  const int64_t sbytes = w.scale_f32 ? 4 : 1;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t row = min(row0 + 8 * i, w.rows - 1);  // rows past the end: loaded, not stored
    t.w[i] = w.data + e * w.matrix_bytes + row * (w.cols / 2);
    t.s[i] = w.scale + (e * w.matrix_scales + row * spr) * sbytes;
  }
  return t;
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

__device__ __forceinline__ uint32_t word_of(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

}  // namespace dsv4::cuda::prefill
