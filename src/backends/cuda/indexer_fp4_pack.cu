// The FP4 indexer key cache write (indexer_fp4_pack_rows, indexer_topk_fast.h): one warp per row,
// lane l quantizes dims 4 l .. 4 l + 3 (block l / 8) with the rules of quant::e2m1_round and the
// block scale of hadamard_fp4_rows, then lanes 0..15 assemble the row's code words in the order of
// io/indexer_fp4_key.h (logical words, stored with indexer_fp4_store_word's bit order).
#include "backends/cuda/activation.cuh"
#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"
#include "io/indexer_fp4_key.h"

namespace dsv4::cuda {

namespace {

constexpr int k_pack_warps = 8;
constexpr int k_key_dim = int(k_indexer_fast_head_dim);

// The e2m1 code of a value e2m1_round produced (sign bit 3).
__device__ __forceinline__ uint32_t e2m1_code(float r) {
  const float a = fabsf(r);
  const uint32_t mag = a <= 2.0f ? uint32_t(a * 2.0f) : (a == 3.0f ? 5u : (a == 4.0f ? 6u : 7u));
  return mag | (signbit(r) ? 8u : 0u);
}

template <typename act_t>
__global__ void __launch_bounds__(k_pack_warps* k_warp_size)
    indexer_fp4_pack_kernel(const act_t* src, int64_t src_stride, const int32_t* rows,
                            int64_t row_limit, int64_t count, uint8_t* codes, uint32_t* scales) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  __shared__ uint8_t code_s[k_pack_warps][k_key_dim];
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  const int64_t i = int64_t(blockIdx.x) * k_pack_warps + warp;
  if (i >= count) return;
  const int64_t r = rows ? int64_t(rows[i]) : i;
  if (r < 0 || (rows && r >= row_limit)) return;
  const act_t* x = src + r * src_stride + 4 * lane;
  float v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = act_to_f32(x[j]);
  float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
#pragma unroll
  for (int o = 1; o < 8; o *= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float s = quant::pow2_ceil(__fdiv_rn(fmaxf(amax, 6.0f * 0x1p-126f), 6.0f));
#pragma unroll
  for (int j = 0; j < 4; ++j)
    code_s[warp][4 * lane + j] = uint8_t(e2m1_code(quant::e2m1_round(__fdiv_rn(v[j], s))));
  const uint32_t byte = __float_as_uint(s) >> 23;
  const uint32_t b0 = __shfl_sync(0xffffffffu, byte, 0), b1 = __shfl_sync(0xffffffffu, byte, 8),
                 b2 = __shfl_sync(0xffffffffu, byte, 16), b3 = __shfl_sync(0xffffffffu, byte, 24);
  __syncwarp();
  if (lane < 16) {
    const int t = lane / 4, w = lane % 4;
    uint32_t word = 0;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      const int d = 16 * (2 * w + p / 2) + 2 * t + 8 * (p % 2);
      word |= uint32_t(code_s[warp][d]) << (12 - 4 * p);
      word |= uint32_t(code_s[warp][d + 1]) << (28 - 4 * p);
    }
    // 16 t + 4 w bytes, in the stored bit order.
    reinterpret_cast<uint32_t*>(codes + r * (k_key_dim / 2))[lane] = indexer_fp4_store_word(word);
  }
  if (lane == 0) scales[r] = b0 | (b1 << 8) | (b2 << 16) | (b3 << 24);
}

}  // namespace

template <typename act_t>
cudaError_t indexer_fp4_pack_rows(const act_t* src, int64_t src_stride, const int32_t* rows,
                                  int64_t row_limit, int64_t count, uint8_t* codes,
                                  uint32_t* scales, cudaStream_t stream) {
  if (count < 0 || !src || !codes || !scales || src_stride < k_key_dim || !aligned_16(codes) ||
      reinterpret_cast<uintptr_t>(scales) % 4 != 0)
    return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int64_t blocks = ceil_div(count, int64_t(k_pack_warps));
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  return launch_small(indexer_fp4_pack_kernel<act_t>, unsigned(blocks), k_pack_warps * k_warp_size,
                      0, stream, src, src_stride, rows, row_limit, count, codes, scales);
}

template cudaError_t indexer_fp4_pack_rows<float>(const float*, int64_t, const int32_t*, int64_t,
                                                  int64_t, uint8_t*, uint32_t*, cudaStream_t);
template cudaError_t indexer_fp4_pack_rows<__nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                          const int32_t*, int64_t, int64_t,
                                                          uint8_t*, uint32_t*, cudaStream_t);

}  // namespace dsv4::cuda
