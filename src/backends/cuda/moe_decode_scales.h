// Scale-chunk geometry of moe_decode's cp.async ring (moe_decode_round.cuh, moe_decode_gemm.cuh):
// each of a warp's 16 weight rows copies its scales in chunks of 2^cb_shift bytes (16, 8 or 4: the
// largest that divides the row's scale bytes, so every chunk is aligned), 2^rpc_shift rounds of 128
// k per chunk, into slot chunk % k_scale_slots; the lane of group q reads one 4-byte word of the
// chunk per round. Integer index math only (host and device), so the CPU test checks it against the
// direct address of a lane's scales (tests/cuda_host/test_moe_decode_scales.cpp).
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

// The 4-byte word of the chunk that holds lane q's scales of `round`: E8M0 (group k / 32 =
// 4 round + q) word `round % rounds-per-chunk`, byte q; f32 word q (bits 30:23: the exponent);
// E4M3 (groups 8 round + 2q, + 1) word 2 (round % rounds-per-chunk) + q / 2, bytes 2 (q % 2)
// and + 1.
DSV4_SCALES_HD int word_of(const geometry& g, encoding enc, int64_t round, int q) {
  const int in_chunk = int(round & ((int64_t(1) << g.rpc_shift) - 1));
  return enc == encoding::f32 ? q : enc == encoding::e8m0 ? in_chunk : in_chunk * 2 + (q >> 1);
}

// Shift and mask that take lane q's scale bits out of that word.
DSV4_SCALES_HD int shift_of(encoding enc, int q) {
  return enc == encoding::f32 ? 23 : enc == encoding::e8m0 ? 8 * q : 16 * (q & 1);
}
DSV4_SCALES_HD uint32_t mask_of(encoding enc) {
  return enc == encoding::e4m3 ? 0xFFFFu : 0xFFu;
}

}  // namespace dsv4::cuda::moe_scales
