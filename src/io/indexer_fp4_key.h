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
// shifted left by 4 p). Every dim of word w lies in scale block w.
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

// Byte of the row and shift inside it (0 or 4) of dim `dim`'s code.
struct indexer_fp4_position {
  int byte;
  int shift;
};
indexer_fp4_position indexer_fp4_code_position(int dim);

// key[0, 128) -> codes[0, 64), *scales (the row's four scale bytes, byte j = block j).
void indexer_fp4_key_encode(const float* key, uint8_t* codes, uint32_t* scales);
// codes, scales -> key[0, 128): e2m1_to_f32(code) * 2^(byte - 127), exact in f32 and bf16.
void indexer_fp4_key_decode(const uint8_t* codes, uint32_t scales, float* key);

}  // namespace dsv4
