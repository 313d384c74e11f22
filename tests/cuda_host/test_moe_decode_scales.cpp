// Scale-chunk geometry of moe_decode's cp.async ring (src/backends/cuda/moe_decode_scales.h).
// Oracles, written out here independently of the code under test: the scale bytes lane q needs
// in round r (k = 128 r + 32 q .. + 31: E8M0 group 4 r + q, f32 group 4 r + q, E4M3 groups
// 8 r + 2 q and + 1), and a simulation of the ring (issue of round j + k_stages after the math of
// round j; a slot may only be overwritten after the last round that reads it).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "backends/cuda/moe_decode_scales.h"

namespace dsv4::cuda::moe_scales {
namespace {

constexpr int k_stages = 4;  // moe_decode_round.cuh

struct lane_bytes {
  int64_t first;  // byte offset of the first scale byte in the row
  int count;      // bytes (1 E8M0, 4 f32, 2 E4M3)
};

lane_bytes expected(encoding enc, int64_t r, int q) {
  switch (enc) {
    case encoding::e8m0:
      return {4 * r + q, 1};
    case encoding::f32:
      return {4 * (4 * r + q), 4};
    case encoding::e4m3:
      return {8 * r + 2 * q, 2};
  }
  return {0, 0};
}

int64_t row_bytes_of(encoding enc, int64_t cols) {
  return enc == encoding::e8m0 ? cols / 32 : enc == encoding::f32 ? cols / 8 : cols / 16;
}

TEST(moe_decode_scales, chunks_are_aligned_and_hold_the_lane_bytes) {
  for (encoding enc : {encoding::e8m0, encoding::f32, encoding::e4m3})
    for (int64_t cols : {128, 256, 384, 512, 2048, 3072, 4096, 7168}) {
      const int64_t row = row_bytes_of(enc, cols);
      const geometry g = make_geometry(row, enc);
      const int64_t cb = int64_t(1) << g.cb_shift;
      ASSERT_GE(g.rpc_shift, 0) << cols;
      ASSERT_EQ(row % cb, 0) << "chunk must divide the row (alignment), cols " << cols;
      ASSERT_LE(cb, 16);
      if (row % 16 == 0) {
        EXPECT_EQ(cb, 16) << cols;
      }
      const int64_t rounds = cols / 128;
      for (int64_t r = 0; r < rounds; ++r)
        for (int q = 0; q < 4; ++q) {
          const lane_bytes want = expected(enc, r, q);
          const int64_t chunk = chunk_of(g, r);
          ASSERT_LE((chunk + 1) * cb, row) << "chunk past the row end";
          const int in_chunk = int(r & ((int64_t(1) << g.rpc_shift) - 1));
          if (enc == encoding::f32) {
            // One round a chunk, converted at copy: byte q of word 0 is the exponent of the f32
            // scale at chunk * 16 + 4 q.
            ASSERT_EQ(g.rpc_shift, 0) << cols;
            ASSERT_EQ(chunk * cb + 4 * lane_byte_of(encoding::e8m0, q), want.first)
                << "cols " << cols << " r " << r << " q " << q;
            continue;
          }
          ASSERT_LE(round_stride_of(enc) * (in_chunk + 1), cb) << "round outside the chunk";
          const int64_t at = chunk * cb + round_stride_of(enc) * in_chunk;  // the round's bytes
          ASSERT_EQ(at + lane_byte_of(enc, q), want.first)
              << "enc " << int(enc) << " cols " << cols << " r " << r << " q " << q;
        }
    }
}

// Every round a warp processes reads a slot that holds its chunk: copied at or before that
// round's issue and not overwritten until after the round's math.
TEST(moe_decode_scales, ring_slots_live_long_enough) {
  for (encoding enc : {encoding::e8m0, encoding::f32, encoding::e4m3})
    for (int64_t cols : {128, 256, 384, 2048, 3072, 4096, 7168})
      for (int parts : {1, 2, 4}) {
        const geometry g = make_geometry(row_bytes_of(enc, cols), enc);
        const int64_t rounds = cols / 128;
        for (int part = 0; part < parts; ++part) {
          const int64_t rb = rounds * part / parts, re = rounds * (part + 1) / parts;
          const int nr = int(re - rb);
          std::map<int, int64_t> slot;  // slot -> chunk it holds
          const auto issue = [&](int j) {
            if (j >= nr) return;
            const int64_t r = rb + j;
            if (copies_chunk(g, r, j == 0))
              slot[int(chunk_of(g, r) % k_scale_slots)] = chunk_of(g, r);
          };
          for (int j = 0; j < k_stages; ++j) issue(j);
          for (int j = 0; j < nr; ++j) {
            const int64_t r = rb + j;
            const int s = int(chunk_of(g, r) % k_scale_slots);
            ASSERT_TRUE(slot.count(s)) << "slot never filled: r " << r;
            ASSERT_EQ(slot[s], chunk_of(g, r))
                << "enc " << int(enc) << " cols " << cols << " part " << part << " r " << r;
            issue(j + k_stages);  // after the math of round j
          }
        }
      }
}

}  // namespace
}  // namespace dsv4::cuda::moe_scales
