// Softmax steps both split-KV decode kernels share (attention_decode.cu): P rounded to bf16 A
// fragments, the row sums' final reduction. (The per-tile online softmax itself stays spelled out
// in each kernel: one shared helper changed the SASS of 30 of the 54 kernels, session 17.)
#pragma once

#include <cstdint>

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/mma_sm80.cuh"

namespace dsv4::cuda {

namespace {

// P (f32 C fragments of a 32-key tile: row lane / 4 for e = 0, 1, lane / 4 + 8 for e = 2, 3;
// key j * 8 + 2 (lane % 4) + (e & 1) of s[j][e]) rounded to bf16 as the A fragments of the
// tile's two k16 steps.
__device__ __forceinline__ void pack_probs(const float (&s)[4][4], uint32_t (&pas)[2][4]) {
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    pas[ks][0] = pack_bf16x2(s[2 * ks][0], s[2 * ks][1]);
    pas[ks][1] = pack_bf16x2(s[2 * ks][2], s[2 * ks][3]);
    pas[ks][2] = pack_bf16x2(s[2 * ks + 1][0], s[2 * ks + 1][1]);
    pas[ks][3] = pack_bf16x2(s[2 * ks + 1][2], s[2 * ks + 1][3]);
  }
}

// 2^x by one MUFU.EX2 (ex2.approx.ftz.f32): the per-tile softmax of the warp-specialized kernel's
// alternate tiles (attention_decode_ws.cuh exp2_alt). exp2f is the same instruction plus a range
// fix-up for results below 2^-126 (a compare, a halving of x before and a squaring after: 3 more
// instructions and 2 more dependent steps per value); for every x >= -126 both give the same value.
// The decode softmax's probabilities and factors below 2^-126 (a key 126 log2 units under the row's
// reference maximum) become 0 instead of a subnormal: nothing at the bf16 P's precision next to the
// row's largest probability (>= 1 at the reference maximum).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// After the key loop: each row's sum over the 4 lanes of its quad (each lane summed its columns).
__device__ __forceinline__ void sum_row_quads(float (&l)[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
}

}  // namespace

}  // namespace dsv4::cuda
