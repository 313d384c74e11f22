// Launch 4 of the decode-path MoE (moe_decode.cu): y[t] = sum_k weights[t, k] * out[t * top_k + k]
// in k order (the official order: the weights already in h).
#pragma once

#include <cstdint>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/moe_decode_trace.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// One term of the combine, y[t] += weight * out[p] (exact order) or out[p] (official order,
// weighted false): the FFMA / FADD the combine kernel compiled to before MOE10 (SASS of
// 023a8fe), spelled out so that both combine variants round alike.
__device__ __forceinline__ float combine_term(float acc, bool weighted, float weight, float v) {
  return weighted ? __fmaf_rn(weight, v, acc) : __fadd_rn(acc, v);
}

// weights null: the official order (already applied to h). EARLY (moe_decode_set_chain 4): the
// top_k indices, weights and out values of an element are loaded in groups of 8 before they are
// used (one L2 latency per group instead of one per k); the same sum in the same order.
// zero / n_zero (chain 16): block 0 zeroes the call's counters in the per-stream buffer
// after its wait, i.e. once W2 has completed; every counter update of the call precedes W2's
// completion (W2's blocks waited on the slots' last releases, each after every fold count of its
// slot), and the next call touches the counters only after its own waits (pdl.cuh).
template <typename act_t, bool EARLY, bool ZERO = false>
__global__ void moe_decode_combine_kernel(const float* out, const int32_t* indices,
                                          const float* weights, int64_t tokens, int top_k,
                                          int64_t experts, int64_t hidden, act_t* y, int* zero,
                                          int n_zero) {
  DSV4_TRACE(trace_block tr; tr.stamp(0));
  pdl_wait();
  DSV4_TRACE(tr.stamp(1));
  pdl_trigger();
  if constexpr (ZERO)
    if (blockIdx.x == 0)
      for (int i = threadIdx.x; i < n_zero; i += blockDim.x) zero[i] = 0;
  const int64_t n = tokens * hidden;
  const bool weighted = weights != nullptr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / hidden, o = i % hidden;
    float acc = 0.0f;
    bool bad = false;
    if constexpr (EARLY) {
      for (int k0 = 0; k0 < top_k; k0 += 8) {
        int32_t e[8];
        float w[8], v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int64_t p = t * top_k + k0 + j;
          if (k0 + j < top_k) {
            e[j] = indices[p];
            w[j] = weighted ? weights[p] : 0.0f;
            v[j] = out[p * hidden + o];
          }
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (k0 + j >= top_k) break;
          if (e[j] < 0 || e[j] >= experts) {
            bad = true;
            continue;
          }
          acc = combine_term(acc, weighted, w[j], v[j]);
        }
      }
    } else {
      for (int k = 0; k < top_k; ++k) {
        const int64_t p = t * top_k + k;
        const int32_t e = indices[p];
        if (e < 0 || e >= experts) {
          bad = true;
          continue;
        }
        acc = combine_term(acc, weighted, weighted ? weights[p] : 0.0f, out[p * hidden + o]);
      }
    }
    y[i] = act_from_f32<act_t>(bad ? __uint_as_float(0x7fc00000u) : acc);
  }
  DSV4_TRACE(tr.stamp(2); tr.flush(2, 0));
}

}  // namespace

}  // namespace dsv4::cuda
