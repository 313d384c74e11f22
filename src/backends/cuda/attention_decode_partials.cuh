// A split CTA's partial outputs (attention_decode.cu): L2 cache policies, the f32 / bf16 partial
// row stores and the loads the combines read them back with.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mma_sm80.cuh"

namespace dsv4::cuda {

namespace {

// A split CTA's result (both kernels): the thread's rows h0, h1 (accumulator n of fragment row
// e / 2 holds channel 256 half + 8 n + 2 (lane % 4) + e % 2), unnormalized, into part_o, and
// once per row (max, sum) into part_ml for the combine.
// plan.partials_l2: the split kernel stores its partial rows with the L2 evict_last priority, so
// that the keys the CTAs still running stream through L2 do not push them out before the combine
// reads them (otherwise from DRAM: ~16 MB at T = 32 with 4 splits); the combine reads them with
// evict_first, so they are not kept past that one read. Cache hints only: the same values.
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ float4 load4_policy(const float* p, uint64_t policy) {
  float4 v;
  asm("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
      : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
      : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ void store2_policy(float* p, float a, float b, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;" ::"l"(p), "f"(a), "f"(b),
               "l"(policy)
               : "memory");
}

// plan.partials_bf16: four bf16 of a partial row (rounded to nearest) in one 8-byte store with
// the L2 policy, and widened back to f32 (exactly) from one 8-byte load with the policy (bf16
// partials always take the L2 hints; load4_cg / load4_plain: the f32 combines' loads without).
__device__ __forceinline__ void store4_bf16_policy(__nv_bfloat16* p, float a, float b, float c,
                                                   float d, uint64_t policy) {
  asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;" ::"l"(p),
               "r"(pack_bf16x2(a, b)), "r"(pack_bf16x2(c, d)), "l"(policy)
               : "memory");
}
__device__ __forceinline__ float4 widen_bf16x4(uint32_t lo, uint32_t hi) {
  return make_float4(__uint_as_float(lo << 16), __uint_as_float(lo & 0xffff0000u),
                     __uint_as_float(hi << 16), __uint_as_float(hi & 0xffff0000u));
}
// The row combine's early loads (volatile: issued where written, ahead of the (m, l) loads).
__device__ __forceinline__ uint2 load_raw4_policy(const __nv_bfloat16* p, uint64_t policy) {
  uint2 v;
  asm volatile("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p), "l"(policy));
  return v;
}
__device__ __forceinline__ float4 load4_policy(const __nv_bfloat16* p, uint64_t policy) {
  uint32_t lo, hi;
  asm("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;"
      : "=r"(lo), "=r"(hi)
      : "l"(p), "l"(policy));
  return widen_bf16x4(lo, hi);
}
__device__ __forceinline__ float4 load4_cg(const float* p) {
  return __ldcg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ float4 load4_plain(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}

// plan.partials_bf16: store_split_partial's rows as bf16 with the evict_last policy, in a layout
// of their own: each thread stores the 4 values of accumulator column pairs n, n + 1 (channels
// c, c + 1, c + 8, c + 9 with c = 16 g + 2 j, g = n / 2, j = lane % 4) as one 8-byte store at
// position 16 g + 4 j of the row, so that a warp's store covers whole 32-byte sectors (8 rows x
// 4 lanes x 8 bytes) with half the f32 rows' store instructions. part_channel maps a position of
// 4 values back to its first channel; the combines read 4 values per load and write the channel
// pairs (c, c + 1) and (c + 8, c + 9).
__device__ __forceinline__ int part_channel(int pos) {
  return (pos & ~15) + ((pos & 15) >> 1);
}
__device__ __forceinline__ void store_split_partial_bf16(const float (&acc)[2][64],
                                                         const float (&m)[2], const float (&l)[2],
                                                         int half, int lane, int64_t h0, int64_t h1,
                                                         int heads, int64_t part,
                                                         __nv_bfloat16* part_o, float2* part_ml) {
  auto acc_at = [&](int n, int e) { return acc[n >> 4][4 * (n & 15) + e]; };
  const uint64_t policy = l2_policy_evict_last();
#pragma unroll
  for (int n = 0; n < 32; n += 2) {
    const int pos = half * 256 + (n >> 1) * 16 + 4 * (lane % 4);
    if (h0 < heads)
      store4_bf16_policy(part_o + (part + h0) * k_d + pos, acc_at(n, 0), acc_at(n, 1),
                         acc_at(n + 1, 0), acc_at(n + 1, 1), policy);
    if (h1 < heads)
      store4_bf16_policy(part_o + (part + h1) * k_d + pos, acc_at(n, 2), acc_at(n, 3),
                         acc_at(n + 1, 2), acc_at(n + 1, 3), policy);
  }
  if (half == 0 && lane % 4 == 0) {
    if (h0 < heads) part_ml[part + h0] = make_float2(m[0], l[0]);
    if (h1 < heads) part_ml[part + h1] = make_float2(m[1], l[1]);
  }
}

template <bool keep_l2 = false>
__device__ __forceinline__ void store_split_partial(const float (&acc)[2][64], const float (&m)[2],
                                                    const float (&l)[2], int half, int lane,
                                                    int64_t h0, int64_t h1, int heads, int64_t part,
                                                    float* part_o, float2* part_ml) {
  auto acc_at = [&](int n, int e) { return acc[n >> 4][4 * (n & 15) + e]; };
  if constexpr (keep_l2) {
    const uint64_t policy = l2_policy_evict_last();
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      const int c = half * 256 + n * 8 + 2 * (lane % 4);
      if (h0 < heads)
        store2_policy(part_o + (part + h0) * k_d + c, acc_at(n, 0), acc_at(n, 1), policy);
      if (h1 < heads)
        store2_policy(part_o + (part + h1) * k_d + c, acc_at(n, 2), acc_at(n, 3), policy);
    }
  } else {
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      const int c = half * 256 + n * 8 + 2 * (lane % 4);
      if (h0 < heads)
        *reinterpret_cast<float2*>(part_o + (part + h0) * k_d + c) =
            make_float2(acc_at(n, 0), acc_at(n, 1));
      if (h1 < heads)
        *reinterpret_cast<float2*>(part_o + (part + h1) * k_d + c) =
            make_float2(acc_at(n, 2), acc_at(n, 3));
    }
  }
  if (half == 0 && lane % 4 == 0) {
    if (h0 < heads) part_ml[part + h0] = make_float2(m[0], l[0]);
    if (h1 < heads) part_ml[part + h1] = make_float2(m[1], l[1]);
  }
}

}  // namespace

}  // namespace dsv4::cuda
