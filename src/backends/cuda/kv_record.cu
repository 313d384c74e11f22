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
using kv_record::e4m3_value;
using kv_record::e8m0_value;

// f32_to_e4m3 of a value already on the e4m3 grid (quant::e4m3_round's output) or NaN: the code
// from the exponent and the top 3 mantissa bits; NaN -> 0x7f, the sign of zero kept.
__device__ __forceinline__ uint32_t e4m3_code(float y) {
  if (isnan(y)) return 0x7fu;
  const uint32_t sign = (__float_as_uint(y) >> 24) & 0x80u;
  const float a = fabsf(y);
  uint32_t mag;
  if (a < 0x1p-6f) {
    mag = uint32_t(__fmul_rn(a, 512.0f));  // subnormal: m * 2^-9, m in 0..7
  } else {
    const uint32_t b = __float_as_uint(a);
    mag = ((((b >> 23) & 0xffu) - 127u + 7u) << 3) | ((b >> 20) & 0x7u);
  }
  return sign | mag;
}

// f32_to_bf16 bit for bit (RNE; a NaN keeps its top bits and is made quiet).
__device__ __forceinline__ uint16_t bf16_bits(float v) {
  const uint32_t u = __float_as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

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
    const float amax = quant::warp_max(fmaxf(0.0f, fmaxf(fabsf(a), fabsf(b))));  // NaN ignored
    const float s = quant::pow2_ceil(__fdiv_rn(fmaxf(amax, 1e-4f), 448.0f));
    if (valid) {
      const uint32_t lo = e4m3_code(quant::e4m3_round(__fdiv_rn(a, s)));
      const uint32_t hi = e4m3_code(quant::e4m3_round(__fdiv_rn(b, s)));
      *reinterpret_cast<uint16_t*>(data + k) = uint16_t(lo | (hi << 8));
    }
    if (lane == 0) scales[j] = uint8_t(__float_as_uint(s) >> 23);
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

__global__ void listed_rows_kernel(const int32_t* rows, int64_t count, int32_t* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = rows[i] >= 0 ? int32_t(i) : -1;
}

bool valid_dims(int64_t nope, int64_t rope, int64_t rows_per_block, int64_t block_bytes) {
  if (nope < 0 || nope % 16 != 0 || rope < 0 || rope % 8 != 0 || nope + rope == 0 ||
      rows_per_block <= 0 || block_bytes % 8 != 0)
    return false;
  const int64_t scale_bytes = (ceil_div(nope, k_block) + 7) / 8 * 8;
  return block_bytes >= rows_per_block * (nope + 2 * rope + scale_bytes);
}

}  // namespace

template <typename act_t>
cudaError_t kv_record_pack(const act_t* x, int64_t x_stride, const int32_t* rows, int64_t row_limit,
                           int64_t count, uint8_t* pool, int64_t nope_dims, int64_t rope_dims,
                           int64_t rows_per_block, int64_t block_bytes, cudaStream_t stream) {
  if (count < 0 || !valid_dims(nope_dims, rope_dims, rows_per_block, block_bytes) ||
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
  if (count < 0 || !valid_dims(nope_dims, rope_dims, rows_per_block, block_bytes) ||
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

cudaError_t kv_record_listed_rows(const int32_t* rows, int64_t count, int32_t* out,
                                  cudaStream_t stream) {
  if (count < 0 || count > INT32_MAX || (count > 0 && (!rows || !out)))
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  listed_rows_kernel<<<unsigned(ceil_div(count, 256)), 256, 0, stream>>>(rows, count, out);
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
