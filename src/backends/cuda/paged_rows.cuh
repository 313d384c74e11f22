// Device helpers for the paged cache layout (row = block * block_size + offset, block ids from a
// sequence's block-table row), shared by the attention and indexer kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// Pool row of entry s of a sequence whose block-table row is `table` (table_width blocks), or -1
// when there is no such row: no table (invalid sequence), a block past the table, a missing block
// (-1) or a row outside [0, pool_rows).
__device__ __forceinline__ int64_t paged_pool_row(const int32_t* table, int64_t table_width,
                                                  int64_t block_size, int64_t pool_rows,
                                                  int64_t s) {
  if (!table) return -1;
  const int64_t block = s / block_size;
  if (block >= table_width) return -1;
  const int64_t b = table[block];
  if (b < 0) return -1;
  const int64_t row = b * block_size + s % block_size;
  return row < pool_rows ? row : -1;
}

// The block-table row of sequence `seq`, or null when seq is outside [0, table_rows).
__device__ __forceinline__ const int32_t* paged_table_row(const int32_t* block_table,
                                                          int64_t table_rows, int64_t table_width,
                                                          int64_t seq) {
  return seq >= 0 && seq < table_rows ? block_table + seq * table_width : nullptr;
}

// A token's visible entry count n_visible clamped to [0, capacity].
__device__ __forceinline__ int64_t clamp_visible(int64_t n, int64_t capacity) {
  return n < 0 ? 0 : (n > capacity ? capacity : n);
}

}  // namespace dsv4::cuda
