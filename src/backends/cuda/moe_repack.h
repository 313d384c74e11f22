// Repacked 4-bit expert weights for the decode kernels (moe_decode.h, *_repacked entry points).
// Tested on the CPU (tests/cuda_host/test_moe_repack.cpp) and on an H200 (MOE5 run 1, this
// half-major layout): parity case moe_repack, device repacking == host reference (2/2). The
// decode kernels that read it give outputs bit-identical to the checkpoint layout's
// (bench_moe_linear check, MOE5 run 2); their own parity run is partial (moe_decode.h).
//
// What changes against the checkpoint layout (linear.h: row-major, value j of a byte pair in
// nibble j, E2M1 = sign | e1 e0 | m): only the weight bytes; the scales (E8M0 / f32 / E4M3) and
// the NVFP4 global scales stay as they are. Two permutations, both bijections:
//
//  1. Fragment order. A matrix [rows, cols] (rows % 16 == 0, cols % 128 == 0) is cut into
//     tiles of 16 rows x 128 columns, stored tile-row-major ((row / 16) * (cols / 128) +
//     col / 128), 1024 bytes each. Inside a tile, lane L = 4 g + q (g = L / 4, q = L % 4) has
//     16 bytes of row g at L * 16 and 16 bytes of row g + 8 at 512 + L * 16, each the 32
//     values of columns 32 q .. 32 q + 31 of the tile. These are exactly the bytes lane L of a
//     decode warp consumes per round (fp4_mma.cuh fragment mapping), and each of the warp's two
//     16-byte loads (or cp.async copies) of a round covers one contiguous 512-byte half: every
//     32-byte sector is read whole by one instruction. (MOE4's first version put a lane's 32
//     bytes together, so each instruction read half of every sector and the L2 -> SM traffic
//     doubled: 0.79-0.92x the checkpoint layout on an H200 with the cp.async ring.)
//
//  2. Bit order inside each 32-bit word (8 values v_0..v_7, value i in bits 4i..4i+3 of the
//     checkpoint word). The decode needs the four BF16x2 pairs P_i = (v_i, v_{i + 4}) with each
//     half's sign at bit 15 and its magnitude bits e1 e0 m at bits 8:6 (code * 2^-126, see
//     fp4_mma.cuh). With u the repacked word and rotl a 32-bit rotation (session 43's map):
//        P_0 = u & M,   P_1 = rotl(u, 10) & M,   P_2 = rotl(u, 13) & M,      M = 0x81C081C0
//        P_3 = ((u & X) * F) & M,        X = 0x001B001B (bits 0, 1, 3, 4, 16, 17, 19, 20),
//                                        F = 2^2 + 2^7 + 2^12 = 0x1084
//     The multiplication adds three shifted copies of u & X (by 2, 7 and 12) whose set bits never
//     meet (X + 2, X + 7 and X + 12 are disjoint within 32 bits), so it is their OR without a
//     carry, and each of M's 8 bits receives exactly one of them (the other 16 land outside M).
//     5 LOP3 + 2 SHF + 1 IMAD = 8 instructions per 8 weights (session 25's map took 11: 6 LOP3 + 5
//     rotations, 4 of them as IMAD shifts; the checkpoint order 15). repack_word is the inverse of
//     this map (every bit of u is used exactly once; moe_repack.cpp derives it from decode_pairs).
//     Why not fewer: with one mask per LOP3 a pair extracted by one LOP3 must sit at the 8
//     positions {6,7,8,15} + {0,16} - r of one rotated copy; the 4 pairs of a word would have to
//     tile Z_32 with translates of that set, which is impossible (exhaustive search, also over
//     64- and 128-bit funnel windows), so at least one pair gathers bits from several copies. The
//     masked multiplication gathers three in 3 instructions. An exhaustive search (session 43,
//     scripts/e2m1_pair_map_search.py; u & M plus two rotations for three pairs) found no fourth
//     pair from those copies alone (7 instructions) or with one more rotation (8), while the masked
//     multiplication completes it in 8 variants (r1, r2 from {10, 13, 26, 29}, shifts {2, 7, 12} or
//     {3, 8, 14}).
//
// Exactness: the decode yields bit for bit the BF16x2 pairs that fp4mma::e2m1_pair gives for
// the checkpoint word, so every product, scale step and sum of the kernel is unchanged.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define DSV4_REPACK_HD __host__ __device__ __forceinline__
#else
#define DSV4_REPACK_HD inline
#endif

namespace dsv4::cuda::fp4_repack {

constexpr int64_t k_tile_rows = 16;
constexpr int64_t k_tile_cols = 128;
constexpr int64_t k_tile_bytes = k_tile_rows * k_tile_cols / 2;  // 1024

constexpr uint32_t k_pair_mask = 0x81C081C0u;  // sign 15/31, magnitude 8:6 / 24:22
constexpr uint32_t k_gather_mask = 0x001B001Bu;  // the bits P_3 gathers by one multiplication
constexpr uint32_t k_gather_factor = 0x1084u;    // 2^2 + 2^7 + 2^12: three carry-free copies

DSV4_REPACK_HD uint32_t rotl(uint32_t x, int r) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_l(x, x, unsigned(r));
#else
  return r == 0 ? x : (x << r) | (x >> (32 - r));
#endif
}

// Pair i of a repacked word (see above): decode_pair<i>(u) == fp4mma::e2m1_pair<i>(w) for the
// checkpoint word w with u == repack_word(w). Pairs 1 and 2 rotate (SHF on the integer pipe);
// pair 3's multiplication issues as one IMAD on the FMA pipe.
template <int i>
DSV4_REPACK_HD uint32_t decode_pair(uint32_t u) {
  static_assert(i >= 0 && i < 4, "four pairs per word");
  if constexpr (i == 0)
    return u & k_pair_mask;
  else if constexpr (i == 1)
    return rotl(u, 10) & k_pair_mask;
  else if constexpr (i == 2)
    return rotl(u, 13) & k_pair_mask;
  else
    return ((u & k_gather_mask) * k_gather_factor) & k_pair_mask;
}

// The four pairs of a repacked word.
DSV4_REPACK_HD void decode_pairs(uint32_t u, uint32_t (&p)[4]) {
  p[0] = decode_pair<0>(u);
  p[1] = decode_pair<1>(u);
  p[2] = decode_pair<2>(u);
  p[3] = decode_pair<3>(u);
}

// The checkpoint-order pairs (same formula as fp4mma::e2m1_pair, host side): the oracle of the
// CPU test.
DSV4_REPACK_HD uint32_t checkpoint_pair(uint32_t w, int i) {
  const uint32_t q = w << (12 - 4 * i);
  return (q & 0x80008000u) | ((q >> 6) & 0x01C001C0u);
}

// The checkpoint word of repacked word u (== unpack_word(u)), from the pairs decode_pairs gives:
// value i (nibble i) is pair i's low half (sign bit 15, magnitude bits 8:6), value i + 4 its high
// half (bits 31, 24:22). For kernels that need the checkpoint nibbles of a repacked word
// (linear_gemm's expansion of repacked dense weights).
DSV4_REPACK_HD uint32_t checkpoint_word_of(uint32_t u) {
  uint32_t p[4];
  decode_pairs(u, p);
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = ((p[i] >> 12) & 8u) | ((p[i] >> 6) & 7u);
    const uint32_t hi = ((p[i] >> 28) & 8u) | ((p[i] >> 22) & 7u);
    w |= (lo << (4 * i)) | (hi << (4 * i + 16));
  }
  return w;
}

// Checkpoint word -> repacked word and back (bijections; repack_word(unpack_word(u)) == u).
uint32_t repack_word(uint32_t w);
uint32_t unpack_word(uint32_t u);

// Byte offset, inside one repacked matrix of `cols` columns, of the repacked word that holds
// the checkpoint word of row `row`, columns [col, col + 8) (col % 8 == 0; bits move between the
// bytes of a word, never between words).
DSV4_REPACK_HD int64_t repacked_word_offset(int64_t row, int64_t col, int64_t cols) {
  const int64_t tile = (row / k_tile_rows) * (cols / k_tile_cols) + col / k_tile_cols;
  const int64_t g = row % 8, half = (row % k_tile_rows) / 8;
  const int64_t q = (col % k_tile_cols) / 32, word = (col % 32) / 8;
  return tile * k_tile_bytes + half * (k_tile_bytes / 2) + (g * 4 + q) * 16 + word * 4;
}

// Whether a matrix of these dims can be repacked (rows % 16 == 0, cols % 128 == 0, both > 0).
bool repack_supported(int64_t rows, int64_t cols);

// Repacks `count` stacked matrices [rows, cols] of checkpoint-order E2M1 bytes (`src`,
// count * rows * cols / 2 bytes) into `dst` (same size, not overlapping). Throws
// std::invalid_argument with the dims when !repack_supported. Host memory; the loader repacks
// once and uploads (or repacks on the device with the same map).
void repack_matrices(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows, int64_t cols);
// The inverse: repacked bytes back to checkpoint order.
void unpack_matrices(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows, int64_t cols);

// Destination bit of checkpoint bit k under repack_word (repack_word(1 << k) == 1 << bits[k]):
// the table the device repacking takes.
struct bit_map {
  uint8_t bits[32];
};
bit_map repack_bit_map();

// The same as repack_matrices on the device (src and dst device pointers, not overlapping),
// one thread per 32-bit word; no host synchronisation. cudaErrorInvalidValue for dims that
// !repack_supported, a negative count or null pointers. Parity case moe_repack in
// tests/cuda/cases_moe_decode.inc (H200, MOE5 run 1: 2/2 byte-identical to the host reference).
cudaError_t repack_matrices_device(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows,
                                   int64_t cols, cudaStream_t stream);

}  // namespace dsv4::cuda::fp4_repack
