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
