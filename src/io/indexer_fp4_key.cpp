#include "io/indexer_fp4_key.h"

#include <cmath>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace dsv4 {

indexer_fp4_position indexer_fp4_code_position(int dim) {
  DSV4_CHECK(dim >= 0 && dim < k_indexer_fp4_dim, "indexer fp4 key: dim {} out of range", dim);
  const int kk = dim / 16, t = (dim % 8) / 2, high = (dim % 16) / 8, second = dim % 2;
  const int w = kk / 2, p = 2 * (kk % 2) + high;
  const int bit = (second ? 28 : 12) - 4 * p;  // inside the little-endian word
  return {16 * t + 4 * w + bit / 8, bit % 8};
}

void indexer_fp4_key_encode(const float* key, uint8_t* codes, uint32_t* scales) {
  for (int64_t i = 0; i < k_indexer_fp4_code_bytes; ++i) codes[i] = 0;
  uint32_t word = 0;
  for (int b = 0; b < k_indexer_fp4_dim / k_indexer_fp4_block; ++b) {
    float amax = 0.0f;
    for (int i = 0; i < k_indexer_fp4_block; ++i)
      amax = std::fmax(amax, std::fabs(key[b * k_indexer_fp4_block + i]));  // NaN ignored
    const uint8_t byte = f32_to_e8m0_ceil(std::fmax(amax, 6.0f * 0x1p-126f) / 6.0f);
    const float s = e8m0_to_f32(byte);
    word |= uint32_t(byte) << (8 * b);
    for (int i = 0; i < k_indexer_fp4_block; ++i) {
      const int dim = b * k_indexer_fp4_block + i;
      const indexer_fp4_position pos = indexer_fp4_code_position(dim);
      codes[pos.byte] |= uint8_t((f32_to_e2m1(key[dim] / s) & 0xf) << pos.shift);
    }
  }
  *scales = word;
  for (int64_t i = 0; i < k_indexer_fp4_code_bytes; i += 4) {
    uint32_t w;
    std::memcpy(&w, codes + i, 4);
    w = indexer_fp4_store_word(w);
    std::memcpy(codes + i, &w, 4);
  }
}

void indexer_fp4_key_decode(const uint8_t* codes, uint32_t scales, float* key) {
  uint8_t logical[k_indexer_fp4_code_bytes];
  for (int64_t i = 0; i < k_indexer_fp4_code_bytes; i += 4) {
    uint32_t u;
    std::memcpy(&u, codes + i, 4);
    u = indexer_fp4_load_word(u);
    std::memcpy(logical + i, &u, 4);
  }
  for (int dim = 0; dim < k_indexer_fp4_dim; ++dim) {
    const indexer_fp4_position pos = indexer_fp4_code_position(dim);
    const float s = e8m0_to_f32(uint8_t(scales >> (8 * (dim / k_indexer_fp4_block))));
    key[dim] = e2m1_to_f32(uint8_t(logical[pos.byte] >> pos.shift)) * s;
  }
}

}  // namespace dsv4
