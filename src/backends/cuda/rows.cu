// Row gather / scatter: one block per row index (grid-stride over rows), the row copied in the
// widest unit (16, 4 or 1 bytes) that the row size and both base pointers allow.
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rows.h"

namespace dsv4::cuda {

namespace {

constexpr int k_rows_threads = 128;

// Copy unit: U is uint4, uint32_t or uint8_t; `units` U per row.
template <typename U>
__device__ __forceinline__ U fill_ones();
template <>
__device__ __forceinline__ uint4 fill_ones<uint4>() {
  return make_uint4(~0u, ~0u, ~0u, ~0u);
}
template <>
__device__ __forceinline__ uint32_t fill_ones<uint32_t>() {
  return ~0u;
}
template <>
__device__ __forceinline__ uint8_t fill_ones<uint8_t>() {
  return 0xFF;
}

template <typename U>
__global__ void gather_rows_kernel(const U* x, int64_t x_rows, int64_t units, const int32_t* rows,
                                   int64_t n, U* y) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t r = rows[i];
    U* dst = y + i * units;
    if (r < 0 || r >= x_rows) {
      for (int64_t u = threadIdx.x; u < units; u += blockDim.x) dst[u] = fill_ones<U>();
      continue;
    }
    const U* src = x + r * units;
    for (int64_t u = threadIdx.x; u < units; u += blockDim.x) dst[u] = src[u];
  }
}

template <typename U>
__global__ void scatter_rows_kernel(const U* src, int64_t n, int64_t units, const int32_t* rows,
                                    U* pool, int64_t pool_rows) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int64_t r = rows[i];
    if (r < 0 || r >= pool_rows) continue;  // -1: no write; beyond the pool: never written
    const U* s = src + i * units;
    U* dst = pool + r * units;
    for (int64_t u = threadIdx.x; u < units; u += blockDim.x) dst[u] = s[u];
  }
}

// The widest unit dividing row_bytes with both pointers aligned to it.
int copy_unit(const void* a, const void* b, int64_t row_bytes) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  if (row_bytes % 16 == 0 && (mis & 15u) == 0) return 16;
  if (row_bytes % 4 == 0 && (mis & 3u) == 0) return 4;
  return 1;
}

unsigned row_blocks(int64_t n) {
  return unsigned(n > (1 << 20) ? (1 << 20) : n);
}

}  // namespace

cudaError_t gather_rows(const void* x, int64_t x_rows, int64_t row_bytes, const int32_t* rows,
                        int64_t n, void* y, cudaStream_t stream) {
  if (x_rows < 0 || row_bytes < 0 || n < 0) return cudaErrorInvalidValue;
  if (n == 0 || row_bytes == 0) return cudaSuccess;
  const unsigned blocks = row_blocks(n);
  switch (copy_unit(x, y, row_bytes)) {
    case 16:
      return launch_small(gather_rows_kernel<uint4>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint4*>(x), x_rows, row_bytes / 16, rows, n,
                          static_cast<uint4*>(y));
    case 4:
      return launch_small(gather_rows_kernel<uint32_t>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint32_t*>(x), x_rows, row_bytes / 4, rows, n,
                          static_cast<uint32_t*>(y));
    default:
      return launch_small(gather_rows_kernel<uint8_t>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint8_t*>(x), x_rows, row_bytes, rows, n,
                          static_cast<uint8_t*>(y));
  }
}

cudaError_t scatter_rows(const void* src, int64_t n, int64_t row_bytes, const int32_t* rows,
                         void* pool, int64_t pool_rows, cudaStream_t stream) {
  if (pool_rows < 0 || row_bytes < 0 || n < 0) return cudaErrorInvalidValue;
  if (n == 0 || row_bytes == 0) return cudaSuccess;
  const unsigned blocks = row_blocks(n);
  switch (copy_unit(src, pool, row_bytes)) {
    case 16:
      return launch_small(scatter_rows_kernel<uint4>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint4*>(src), n, row_bytes / 16, rows,
                          static_cast<uint4*>(pool), pool_rows);
    case 4:
      return launch_small(scatter_rows_kernel<uint32_t>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint32_t*>(src), n, row_bytes / 4, rows,
                          static_cast<uint32_t*>(pool), pool_rows);
    default:
      return launch_small(scatter_rows_kernel<uint8_t>, blocks, k_rows_threads, 0, stream,
                          static_cast<const uint8_t*>(src), n, row_bytes, rows,
                          static_cast<uint8_t*>(pool), pool_rows);
  }
}

}  // namespace dsv4::cuda
