// FP8 KV record pack / gather (see kv_record.h; layout in io/kv_record.h).
// One warp per listed row: lane l owns values 2l and 2l + 1 of each 64-value scale block (one
// 2-byte code store, one shuffle max per block), then lanes stride over the RoPE values.
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/kv_record.h"
#include "backends/cuda/quantize.h"
#include "io/kv_record.h"

namespace dsv4::cuda {

namespace {

constexpr int k_record_warps = 8;  // warps (listed rows) per block of both kernels
constexpr int k_record_threads = k_record_warps * k_warp_size;
constexpr int64_t k_block = 64;  // values per scale: two per lane
static_assert(k_block == dsv4::k_kv_record_quant_block && k_block == 2 * k_warp_size);

using record_dims = kv_record::dims;
using kv_record::bf16_bits;
using kv_record::e4m3_value;
using kv_record::e8m0_value;

template <typename act_t>
__global__ void __launch_bounds__(k_record_threads)
    kv_record_pack_kernel(const act_t* x, int64_t x_stride, const int32_t* rows, int64_t row_limit,
                          int64_t count, uint8_t* pool, record_dims d) {
  const int lane = threadIdx.x % k_warp_size;
  const int64_t i = int64_t(blockIdx.x) * k_record_warps + threadIdx.x / k_warp_size;
  if (i >= count) return;  // uniform over the warp
  const int64_t r = rows ? int64_t(rows[i]) : i;
  if (r < 0 || r >= row_limit) return;
  const act_t* src = x + i * x_stride;
  uint8_t* data = pool + d.data_offset(r);
  uint8_t* scales = pool + d.scale_offset(r);
  const int64_t blocks = d.scale_count();
  for (int64_t j = 0; j < blocks; ++j) {
    const int64_t k = j * k_block + 2 * lane;  // k even, nope even: k < nope => k + 1 < nope
    const bool valid = k < d.nope;
    const float a = valid ? act_to_f32(src[k]) : 0.0f;
    const float b = valid ? act_to_f32(src[k + 1]) : 0.0f;
    kv_record::encode_block_warp(a, b, valid, data + j * k_block, scales + j, lane);
  }
  if (lane < d.scale_bytes() - blocks) scales[blocks + lane] = 0;
  uint16_t* rope = reinterpret_cast<uint16_t*>(data + d.nope);
  for (int64_t k = lane; k < d.rope; k += k_warp_size)
    rope[k] = bf16_bits(act_to_f32(src[d.nope + k]));
}

template <typename act_t>
__global__ void __launch_bounds__(k_record_threads)
    kv_record_gather_kernel(const uint8_t* pool, record_dims d, const int32_t* rows,
                            int64_t row_limit, int64_t count, act_t* out, int64_t out_stride) {
  const int lane = threadIdx.x % k_warp_size;
  const int64_t i = int64_t(blockIdx.x) * k_record_warps + threadIdx.x / k_warp_size;
  if (i >= count) return;
  const int64_t r = rows ? int64_t(rows[i]) : i;
  act_t* dst = out + i * out_stride;
  if (r < 0 || r >= row_limit) {
    for (int64_t k = lane; k < d.nope + d.rope; k += k_warp_size)
      dst[k] = act_from_f32<act_t>(0.0f);
    return;
  }
  const uint8_t* data = pool + d.data_offset(r);
  const uint8_t* scales = pool + d.scale_offset(r);
  for (int64_t k = 2 * lane; k < d.nope; k += 2 * k_warp_size) {
    const uint32_t pair = *reinterpret_cast<const uint16_t*>(data + k);
    const float s = e8m0_value(scales[k / k_block]);
    dst[k] = act_from_f32<act_t>(__fmul_rn(e4m3_value(pair & 0xffu), s));
    dst[k + 1] = act_from_f32<act_t>(__fmul_rn(e4m3_value(pair >> 8), s));
  }
  const uint16_t* rope = reinterpret_cast<const uint16_t*>(data + d.nope);
  for (int64_t k = lane; k < d.rope; k += k_warp_size)
    dst[d.nope + k] = act_from_f32<act_t>(__uint_as_float(uint32_t(rope[k]) << 16));
}

}  // namespace

template <typename act_t>
cudaError_t kv_record_pack(const act_t* x, int64_t x_stride, const int32_t* rows, int64_t row_limit,
                           int64_t count, uint8_t* pool, int64_t nope_dims, int64_t rope_dims,
                           int64_t rows_per_block, int64_t block_bytes, cudaStream_t stream) {
  if (count < 0 || !record_dims{nope_dims, rope_dims, rows_per_block, block_bytes}.valid() ||
      x_stride < nope_dims + rope_dims || (count > 0 && (!x || !pool || !aligned_16(pool))))
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int64_t grid = ceil_div(count, k_record_warps);
  if (grid > INT32_MAX) return cudaErrorInvalidValue;
  kv_record_pack_kernel<<<unsigned(grid), k_record_threads, 0, stream>>>(
      x, x_stride, rows, rows ? row_limit : count, count, pool,
      record_dims{nope_dims, rope_dims, rows_per_block, block_bytes});
  return cudaGetLastError();
}

template <typename act_t>
cudaError_t kv_record_gather(const uint8_t* pool, int64_t nope_dims, int64_t rope_dims,
                             int64_t rows_per_block, int64_t block_bytes, const int32_t* rows,
                             int64_t row_limit, int64_t count, act_t* out, int64_t out_stride,
                             cudaStream_t stream) {
  if (count < 0 || !record_dims{nope_dims, rope_dims, rows_per_block, block_bytes}.valid() ||
      out_stride < nope_dims + rope_dims || (count > 0 && (!out || !pool || !aligned_16(pool))))
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int64_t grid = ceil_div(count, k_record_warps);
  if (grid > INT32_MAX) return cudaErrorInvalidValue;
  kv_record_gather_kernel<<<unsigned(grid), k_record_threads, 0, stream>>>(
      pool, record_dims{nope_dims, rope_dims, rows_per_block, block_bytes}, rows,
      rows ? row_limit : count, count, out, out_stride);
  return cudaGetLastError();
}

#define DSV4_KV_RECORD_INSTANTIATE(T)                                                          \
  template cudaError_t kv_record_pack<T>(const T*, int64_t, const int32_t*, int64_t, int64_t,  \
                                         uint8_t*, int64_t, int64_t, int64_t, int64_t,         \
                                         cudaStream_t);                                        \
  template cudaError_t kv_record_gather<T>(const uint8_t*, int64_t, int64_t, int64_t, int64_t, \
                                           const int32_t*, int64_t, int64_t, T*, int64_t,      \
                                           cudaStream_t);
DSV4_KV_RECORD_INSTANTIATE(float)
DSV4_KV_RECORD_INSTANTIATE(__nv_bfloat16)
#undef DSV4_KV_RECORD_INSTANTIATE

}  // namespace dsv4::cuda
