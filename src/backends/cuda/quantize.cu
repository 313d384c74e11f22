// Official precision mode kernels (see quantize.h): FP8 blocks with one warp per (row, block),
// Hadamard + FP4 with one warp per head vector staged in shared memory.
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

namespace {

constexpr int k_quant_warps = 8;  // warps per block of both kernels
constexpr int k_quant_threads = k_quant_warps * k_warp_size;

// Warp w of the grid handles item w = (i, b): entry i of the row list, block b of that row.
template <typename act_t>
__global__ void __launch_bounds__(k_quant_threads)
    fake_quant_fp8_rows_kernel(act_t* base, int64_t row_stride, const int32_t* rows,
                               int64_t row_limit, int64_t count, int64_t n, int64_t block,
                               int64_t blocks_per_row) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  const int64_t item = (int64_t(blockIdx.x) * k_quant_warps + threadIdx.x / k_warp_size);
  if (item >= count * blocks_per_row) return;  // uniform over the warp
  const int64_t i = item / blocks_per_row, b = item % blocks_per_row;
  const int64_t r = rows ? int64_t(rows[i]) : i;
  if (r < 0 || r >= row_limit) return;
  const int64_t begin = b * block;
  const int64_t len = (n - begin) < block ? (n - begin) : block;
  quant::fp8_block_warp(base + r * row_stride + begin, len);
}

// Dynamic shared memory: k_quant_warps * head_dim floats.
template <typename act_t>
__global__ void __launch_bounds__(k_quant_threads)
    hadamard_fp4_rows_kernel(act_t* base, int64_t row_stride, const int32_t* rows,
                             int64_t row_limit, int64_t count, int64_t heads, int64_t n,
                             float norm) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  extern __shared__ float stage[];
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int64_t item = int64_t(blockIdx.x) * k_quant_warps + warp;
  if (item >= count * heads) return;  // uniform over the warp; no block-wide barrier below
  const int64_t i = item / heads, h = item % heads;
  const int64_t r = rows ? int64_t(rows[i]) : i;
  if (r < 0 || r >= row_limit) return;
  act_t* g = base + r * row_stride + h * n;
  float* v = stage + int64_t(warp) * n;
  for (int64_t j = lane; j < n; j += k_warp_size) v[j] = act_to_f32(g[j]);
  __syncwarp();
  // The CPU's stages: pair p of the stage of half-width w is (j, j + w), j = (p / w) * 2w + p % w.
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t p = lane; p < n / 2; p += k_warp_size) {
      const int64_t j = (p / w) * 2 * w + p % w;
      const float a = v[j], c = v[j + w];
      v[j] = __fadd_rn(a, c);
      v[j + w] = __fsub_rn(a, c);
    }
    __syncwarp();
  }
  for (int64_t j = lane; j < n; j += k_warp_size) v[j] = __fmul_rn(v[j], norm);
  __syncwarp();
  // FP4 blocks of 32: lane l owns element l of each block.
  for (int64_t b = 0; b < n; b += 32) {
    const int64_t j = b + lane;
    const float x = j < n ? v[j] : 0.0f;
    const float amax = quant::warp_max(fabsf(x));
    const float s = quant::pow2_ceil(__fdiv_rn(fmaxf(amax, 6.0f * 0x1p-126f), 6.0f));
    if (j < n) g[j] = act_from_f32<act_t>(__fmul_rn(quant::e2m1_round(__fdiv_rn(x, s)), s));
  }
}

}  // namespace

template <typename act_t>
cudaError_t fake_quant_fp8_rows(act_t* base, int64_t row_stride, const int32_t* rows,
                                int64_t row_limit, int64_t count, int64_t n, int64_t block,
                                cudaStream_t stream) {
  if (count < 0 || n < 0 || block <= 0 || n > row_stride || (count > 0 && !base))
    return cudaErrorInvalidValue;
  if (count == 0 || n == 0) return cudaSuccess;
  const int64_t blocks_per_row = ceil_div(n, block);
  const int64_t grid = ceil_div(count * blocks_per_row, k_quant_warps);
  if (grid > INT32_MAX) return cudaErrorInvalidValue;
  return launch_small(fake_quant_fp8_rows_kernel<act_t>, unsigned(grid), k_quant_threads, 0, stream,
                      base, row_stride, rows, rows ? row_limit : count, count, n, block,
                      blocks_per_row);
}

template <typename act_t>
cudaError_t hadamard_fp4_rows(act_t* base, int64_t row_stride, const int32_t* rows,
                              int64_t row_limit, int64_t count, int64_t heads, int64_t head_dim,
                              float norm, cudaStream_t stream) {
  if (count < 0 || heads <= 0 || head_dim <= 0 || (head_dim & (head_dim - 1)) != 0 ||
      head_dim > k_hadamard_max_dim || heads * head_dim > row_stride || (count > 0 && !base))
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int64_t grid = ceil_div(count * heads, k_quant_warps);
  if (grid > INT32_MAX) return cudaErrorInvalidValue;
  const size_t shared = size_t(k_quant_warps) * size_t(head_dim) * sizeof(float);
  if (shared > 48 * 1024) {
    if (const cudaError_t e =
            cudaFuncSetAttribute(hadamard_fp4_rows_kernel<act_t>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared));
        e != cudaSuccess)
      return e;
  }
  return launch_small(hadamard_fp4_rows_kernel<act_t>, unsigned(grid), k_quant_threads, shared,
                      stream, base, row_stride, rows, rows ? row_limit : count, count, heads,
                      head_dim, norm);
}

#define DSV4_QUANTIZE_INSTANTIATE(T)                                                         \
  template cudaError_t fake_quant_fp8_rows<T>(T*, int64_t, const int32_t*, int64_t, int64_t, \
                                              int64_t, int64_t, cudaStream_t);               \
  template cudaError_t hadamard_fp4_rows<T>(T*, int64_t, const int32_t*, int64_t, int64_t,   \
                                            int64_t, int64_t, float, cudaStream_t);
DSV4_QUANTIZE_INSTANTIATE(float)
DSV4_QUANTIZE_INSTANTIATE(__nv_bfloat16)
#undef DSV4_QUANTIZE_INSTANTIATE

}  // namespace dsv4::cuda
