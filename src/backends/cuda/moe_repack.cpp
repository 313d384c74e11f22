// Host reference of the repacked 4-bit expert layout (moe_repack.h).
#include "backends/cuda/moe_repack.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <stdexcept>

namespace dsv4::cuda::fp4_repack {

namespace {

// The bit permutation as four byte tables (it is a permutation of bits, so the image of a word
// is the OR of the images of its bytes). Derived from the two decode formulas, not written by
// hand: checkpoint bit k lands at (pair i, pair bit o) through checkpoint_pair, repacked bit j
// through decode_pairs; the word map sends k to the j with the same (i, o).
struct bit_tables {
  std::array<std::array<uint32_t, 256>, 4> fwd{}, inv{};
};

bit_tables make_tables() {
  std::array<int, 128> slot_of_u{};  // (pair * 32 + bit) -> repacked bit, -1 if none
  slot_of_u.fill(-1);
  for (int j = 0; j < 32; ++j) {
    uint32_t p[4];
    decode_pairs(uint32_t{1} << j, p);
    int hits = 0;
    for (int i = 0; i < 4; ++i)
      for (int o = 0; o < 32; ++o)
        if ((p[i] >> o) & 1u) {
          slot_of_u[size_t(i * 32 + o)] = j;
          ++hits;
        }
    if (hits != 1) throw std::logic_error("fp4_repack: decode_pairs is not a bit permutation");
  }
  std::array<int, 32> fwd_bit{};  // checkpoint bit -> repacked bit
  for (int k = 0; k < 32; ++k) {
    int target = -1, hits = 0;
    for (int i = 0; i < 4; ++i) {
      const uint32_t c = checkpoint_pair(uint32_t{1} << k, i);
      for (int o = 0; o < 32; ++o)
        if ((c >> o) & 1u) {
          target = slot_of_u[size_t(i * 32 + o)];
          ++hits;
        }
    }
    if (hits != 1 || target < 0)
      throw std::logic_error("fp4_repack: checkpoint bit without a repacked slot");
    fwd_bit[size_t(k)] = target;
  }
  bit_tables t;
  for (int b = 0; b < 4; ++b)
    for (uint32_t v = 0; v < 256; ++v)
      for (int x = 0; x < 8; ++x)
        if ((v >> x) & 1u) {
          const int k = 8 * b + x;
          t.fwd[size_t(b)][v] |= uint32_t{1} << fwd_bit[size_t(k)];
        }
  // Inverse: repacked bit j -> checkpoint bit k.
  std::array<int, 32> inv_bit{};
  inv_bit.fill(-1);
  for (int k = 0; k < 32; ++k) inv_bit[size_t(fwd_bit[size_t(k)])] = k;
  for (int j = 0; j < 32; ++j)
    if (inv_bit[size_t(j)] < 0) throw std::logic_error("fp4_repack: map is not a bijection");
  for (int b = 0; b < 4; ++b)
    for (uint32_t v = 0; v < 256; ++v)
      for (int x = 0; x < 8; ++x)
        if ((v >> x) & 1u) t.inv[size_t(b)][v] |= uint32_t{1} << inv_bit[size_t(8 * b + x)];
  return t;
}

const bit_tables& tables() {
  static const bit_tables t = make_tables();
  return t;
}

uint32_t apply(const std::array<std::array<uint32_t, 256>, 4>& t, uint32_t w) {
  return t[0][w & 0xFFu] | t[1][(w >> 8) & 0xFFu] | t[2][(w >> 16) & 0xFFu] | t[3][w >> 24];
}

uint32_t load_word(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
void store_word(uint8_t* p, uint32_t w) {
  for (int b = 0; b < 4; ++b) p[b] = uint8_t(w >> (8 * b));
}

void check_dims(int64_t count, int64_t rows, int64_t cols) {
  if (count < 0 || !repack_supported(rows, cols))
    throw std::invalid_argument(fmt::format(
        "fp4_repack: cannot repack {} matrices of {} x {} (rows % 16, cols % 128 must be 0)", count,
        rows, cols));
}

// Visits every checkpoint word of one matrix with its repacked offset (both in bytes).
template <typename F>
void for_each_word(int64_t rows, int64_t cols, F&& f) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += 8)
      f(r * (cols / 2) + c / 2, repacked_word_offset(r, c, cols));
}

}  // namespace

uint32_t repack_word(uint32_t w) {
  return apply(tables().fwd, w);
}
uint32_t unpack_word(uint32_t u) {
  return apply(tables().inv, u);
}

bool repack_supported(int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && rows % k_tile_rows == 0 && cols % k_tile_cols == 0;
}

bit_map repack_bit_map() {
  bit_map m{};
  for (int k = 0; k < 32; ++k) m.bits[k] = uint8_t(std::countr_zero(repack_word(uint32_t{1} << k)));
  return m;
}

void repack_matrices(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows, int64_t cols) {
  check_dims(count, rows, cols);
  const int64_t bytes = rows * cols / 2;
  for (int64_t m = 0; m < count; ++m)
    for_each_word(rows, cols, [&](int64_t from, int64_t to) {
      store_word(dst + m * bytes + to, repack_word(load_word(src + m * bytes + from)));
    });
}

void unpack_matrices(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows, int64_t cols) {
  check_dims(count, rows, cols);
  const int64_t bytes = rows * cols / 2;
  for (int64_t m = 0; m < count; ++m)
    for_each_word(rows, cols, [&](int64_t to, int64_t from) {
      store_word(dst + m * bytes + to, unpack_word(load_word(src + m * bytes + from)));
    });
}

}  // namespace dsv4::cuda::fp4_repack
