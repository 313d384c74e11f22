// Scale-chunk geometry of moe_decode's cp.async ring (moe_decode_round.cuh, moe_decode_gemm.cuh):
// each of a warp's 16 weight rows copies its scales in chunks of 2^cb_shift bytes (16, 8 or 4: the
// largest that divides the row's scale bytes, so every chunk is aligned), 2^rpc_shift rounds of 128
// k per chunk, into slot chunk % k_scale_slots; the lane of group q reads its one or two bytes of
// the chunk per round. Integer index math only (host and device), so the CPU test checks it against
// the direct address of a lane's scales (tests/cuda_host/test_moe_decode_scales.cpp).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DSV4_SCALES_HD __host__ __device__ __forceinline__
#else
#define DSV4_SCALES_HD inline
#endif

namespace dsv4::cuda::moe_scales {

constexpr int k_scale_slots = 8;

// Scale bytes per 128-k round of one row: E8M0 4 (2^2), f32 (MXFP4 widened) 16 (2^4), NVFP4
// E4M3 8 (2^3).
enum class encoding { e8m0, f32, e4m3 };
DSV4_SCALES_HD int round_bytes_shift(encoding enc) {
  return enc == encoding::e8m0 ? 2 : enc == encoding::f32 ? 4 : 3;
}

struct geometry {
  int cb_shift;   // chunk bytes 2^cb_shift
  int rpc_shift;  // rounds per chunk 2^rpc_shift
};

// row_bytes: one row's scale bytes (a multiple of the round bytes: cols % 128 == 0).
DSV4_SCALES_HD geometry make_geometry(int64_t row_bytes, encoding enc) {
  const int cb = row_bytes % 16 == 0 ? 4 : row_bytes % 8 == 0 ? 3 : 2;
  return geometry{cb, cb - round_bytes_shift(enc)};
}

DSV4_SCALES_HD int64_t chunk_of(const geometry& g, int64_t round) {
  return round >> g.rpc_shift;
}

// Whether the issue of `round` copies its chunk: the warp's first round (its K part may start
// inside a chunk) or a chunk's first round.
DSV4_SCALES_HD bool copies_chunk(const geometry& g, int64_t round, bool first_of_warp) {
  return first_of_warp || (round & ((int64_t(1) << g.rpc_shift) - 1)) == 0;
}

// Where the ring holds lane q's scale bits of a round inside its row's chunk: byte
// round_stride_of(enc) * (round % rounds-per-chunk) + lane_byte_of(enc, q). E8M0: group
// 4 round + q, one byte; E4M3: groups 8 round + 2q and + 1, two bytes; f32 (one round a chunk):
// converted to the E8M0 bytes of the 4 exponents when the chunk is copied, then read as E8M0.
DSV4_SCALES_HD int round_stride_of(encoding enc) {
  return enc == encoding::e4m3 ? 8 : 4;
}
DSV4_SCALES_HD int lane_byte_of(encoding enc, int q) {
  return enc == encoding::e4m3 ? 2 * q : q;
}

}  // namespace dsv4::cuda::moe_scales
