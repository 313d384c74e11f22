// The FP4 indexer key: one 128-dim lightning-indexer key (DeepSeek-V4, official precision mode:
// Hadamard-rotated, then FP4 e2m1 quantized per 32 dims with a power-of-two scale; see
// docs/dsv4-model.md §3.7 and ops::hadamard_fp4) stored exactly as 64 bytes of e2m1 codes plus
// 4 E8M0 scale bytes (68 bytes instead of 256 as BF16).
//
// Why here (io): a byte format like kv_record.h, needed by both backends and the cache.
//
// Pool layout: codes [rows, 64] bytes (row r at 64 r, 16-byte aligned with the pool), scales
// [rows] little-endian u32 (byte j of row r's word = E8M0 scale of dims [32 j, 32 j + 32)).
//
// Code order inside a row (the order the tensor-core indexer reads, so that one 16-byte load per
// row and lane quad feeds its mma.sync fragments with no shuffles): bytes [16 t, 16 t + 16) belong
// to lane quad t (0..3); their u32 word w (0..3, little-endian) holds the eight dims of pairs
// p = 0..3, with kk = 2 w + p / 2 and first dim d = 16 kk + 2 t + 8 (p % 2):
//   dim d     -> bits [12 - 4 p, 16 - 4 p)
//   dim d + 1 -> bits [28 - 4 p, 32 - 4 p)
// (each pair's two codes sit at the top nibble of the word's two 16-bit halves once the word is
// shifted left by 4 p). Every dim of word w lies in scale block w. These are the bits of the
// *logical* word (indexer_fp4_code_position); the pool stores each word with its 32 bits permuted
// (indexer_fp4_store_word; only bits inside a word move, so the byte ranges above, the lane quads
// and the scale blocks stay as they are):
//
// Stored bit order (IDX24). A reader widens pair p of a word to bf16x2 with each half's sign at
// bit 15 and its magnitude bits e1 e0 m at bits 8:6 (code * 2^-126; see the score kernels). In
// the logical word that is two shifts and two masks per pair; the stored word u gives the pairs as
//   pair 0 = rotl(u, 6) & M,  pair 3 = u & M,                          M = 0x81C081C0
//   pair 1 = (rotl(u, 2) & S) | (rotl(u, 12) & G),                     S = 0x80008000
//   pair 2 = (rotl(u, 1) & S) | (rotl(u, 3) & G),                      G = 0x01C001C0
// (11 integer instructions per word instead of 15; the rotations by 1, 2, 3 and 6 drop their
// wrapped bits and may be issued as IMAD.SHL). The 8 masked positions of the six terms tile the
// word's 32 bits, so the store is a bijection (indexer_fp4_load_word inverts it). Fewer is not
// possible with one mask per LOP3 (the four pairs would have to tile Z_32 with rotations of
// {6, 7, 8, 15, 22, 23, 24, 31}: no such tiling; the same map as the MoE weight repack,
// backends/cuda/moe_repack.h, whose pair i is this pair 3 - i).
//
// Value rules (encode): per block of 32 dims, amax = max |x| (NaN ignored), scale byte =
// f32_to_e8m0_ceil(max(amax, 6 * 2^-126) / 6) (1..254 for finite keys), s = 2^(byte - 127),
// code = f32_to_e2m1(x / s) (round to nearest even, saturating at 6, NaN -> +6, sign of zero
// kept): exactly ops::hadamard_fp4's quantizer, so decode(encode(x)) is bit for bit what
// hadamard_fp4 leaves in a row (without the rotation), and values are a fixed point:
// decode(encode(y)) == y for y = decode(c). The bytes may differ (a block whose largest code is 3
// re-encodes at half the scale with doubled codes); the values do not.
#pragma once

#include <cstdint>

namespace dsv4 {

constexpr int64_t k_indexer_fp4_dim = 128;
constexpr int64_t k_indexer_fp4_code_bytes = 64;
constexpr int64_t k_indexer_fp4_block = 32;

// Byte of the row and shift inside it (0 or 4) of dim `dim`'s code in the logical words (before
// indexer_fp4_store_word).
struct indexer_fp4_position {
  int byte;
  int shift;
};
indexer_fp4_position indexer_fp4_code_position(int dim);

// key[0, 128) -> codes[0, 64) (stored words), *scales (the row's four scale bytes, byte j =
// block j).
void indexer_fp4_key_encode(const float* key, uint8_t* codes, uint32_t* scales);
// codes (stored words), scales -> key[0, 128): e2m1_to_f32(code) * 2^(byte - 127), exact in f32
// and bf16.
void indexer_fp4_key_decode(const uint8_t* codes, uint32_t scales, float* key);

#if defined(__CUDACC__)
#define DSV4_FP4_KEY_HD __host__ __device__ __forceinline__
#else
#define DSV4_FP4_KEY_HD inline
#endif

constexpr uint32_t k_indexer_fp4_pair_mask = 0x81C081C0u;  // sign 15 / 31, magnitude 8:6 / 24:22
constexpr uint32_t k_indexer_fp4_sign_mask = 0x80008000u;
constexpr uint32_t k_indexer_fp4_mag_mask = 0x01C001C0u;

DSV4_FP4_KEY_HD uint32_t indexer_fp4_rotl(uint32_t x, int r) {
  return r == 0 ? x : (x << r) | (x >> (32 - r));
}

// Pair p (0..3) of a logical word: its two codes (bits [12 - 4 p, 16 - 4 p) and [28 - 4 p,
// 32 - 4 p)) with each sign at bit 15 / 31 and each magnitude at bits 8:6 / 24:22.
DSV4_FP4_KEY_HD uint32_t indexer_fp4_logical_pair(uint32_t w, int p) {
  const uint32_t x = w << (4 * p);
  return (x & k_indexer_fp4_sign_mask) | ((x >> 6) & k_indexer_fp4_mag_mask);
}

// Pair p of a stored word u: indexer_fp4_logical_pair(w, p) for u = indexer_fp4_store_word(w).
// The products are the left rotations whose wrapped-around bits the mask drops (IMAD.SHL).
DSV4_FP4_KEY_HD uint32_t indexer_fp4_stored_pair(uint32_t u, int p) {
  if (p == 0) return (u * 64u) & k_indexer_fp4_pair_mask;
  if (p == 1)
    return ((u * 4u) & k_indexer_fp4_sign_mask) |
           (indexer_fp4_rotl(u, 12) & k_indexer_fp4_mag_mask);
  if (p == 2) return ((u * 2u) & k_indexer_fp4_sign_mask) | ((u * 8u) & k_indexer_fp4_mag_mask);
  return u & k_indexer_fp4_pair_mask;
}

// Logical word -> stored word (the inverse of the six terms of indexer_fp4_stored_pair).
DSV4_FP4_KEY_HD uint32_t indexer_fp4_store_word(uint32_t w) {
  const auto rotr = [](uint32_t x, int r) { return indexer_fp4_rotl(x, (32 - r) % 32); };
  const uint32_t p0 = indexer_fp4_logical_pair(w, 0), p1 = indexer_fp4_logical_pair(w, 1);
  const uint32_t p2 = indexer_fp4_logical_pair(w, 2), p3 = indexer_fp4_logical_pair(w, 3);
  return rotr(p0, 6) | rotr(p1 & k_indexer_fp4_sign_mask, 2) |
         rotr(p1 & k_indexer_fp4_mag_mask, 12) | rotr(p2 & k_indexer_fp4_sign_mask, 1) |
         rotr(p2 & k_indexer_fp4_mag_mask, 3) | p3;
}

// Stored word -> logical word.
DSV4_FP4_KEY_HD uint32_t indexer_fp4_load_word(uint32_t u) {
  uint32_t w = 0;
  for (int p = 0; p < 4; ++p) {
    const uint32_t v = indexer_fp4_stored_pair(u, p);
    const uint32_t lo = ((v >> 6) & 7u) | ((v >> 12) & 8u);
    const uint32_t hi = ((v >> 22) & 7u) | ((v >> 28) & 8u);
    w |= (lo << (12 - 4 * p)) | (hi << (28 - 4 * p));
  }
  return w;
}

}  // namespace dsv4
