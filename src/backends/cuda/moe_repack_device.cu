// Device repacking of 4-bit expert weights (moe_repack.h): one thread per checkpoint word.
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/moe_repack.h"

namespace dsv4::cuda::fp4_repack {

namespace {

__global__ void repack_kernel(const uint32_t* src, uint32_t* dst, int64_t words, int64_t rows,
                              int64_t cols, bit_map map) {
  const int64_t per_matrix = rows * cols / 8;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < words;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = i / per_matrix, w = i % per_matrix;
    const int64_t row = w / (cols / 8), col = (w % (cols / 8)) * 8;
    const uint32_t x = src[i];
    uint32_t u = 0;
#pragma unroll
    for (int k = 0; k < 32; ++k) u |= ((x >> k) & 1u) << map.bits[k];
    dst[m * per_matrix + repacked_word_offset(row, col, cols) / 4] = u;
  }
}

}  // namespace

cudaError_t repack_matrices_device(const uint8_t* src, uint8_t* dst, int64_t count, int64_t rows,
                                   int64_t cols, cudaStream_t stream) {
  if (count < 0 || !repack_supported(rows, cols) || (count > 0 && (!src || !dst)))
    return cudaErrorInvalidValue;
  if (!aligned_16(src) || !aligned_16(dst)) return cudaErrorInvalidValue;
  const int64_t words = count * rows * cols / 8;
  if (words == 0) return cudaSuccess;
  static const bit_map map = repack_bit_map();
  const int threads = 256;
  repack_kernel<<<grid_stride_blocks(words, threads), threads, 0, stream>>>(
      reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst), words, rows, cols,
      map);
  return cudaGetLastError();
}

}  // namespace dsv4::cuda::fp4_repack
