// x' for the wgmma prefill cores that read B pre-permuted: the cp.async-staged variant
// (moe_prefill_wgmma.cu) and the warp-specialized core (moe_prefill_wgmma_ws.cu). Its own header
// so that only those two files compile it (moe_prefill_wgmma_kernel.cuh is in five).
#pragma once

#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"

namespace dsv4::cuda::prefill {

namespace {

// dst = src rounded to BF16 with every 128-wide round in the logical k order of the wgmma core
// (what task_store puts in shared memory): task (row, round, w) reads physical k 32 c + 8 w
// (c = 0..3) and writes logical k 32 w + 8 i .. + 7 (i = 0..3) = (X_i of c = 0..3),
// X_i = (v_i, v_{i+4}). Grid-stride.
template <typename in_t>
__global__ void __launch_bounds__(256)
    moe_prefill_permute_kernel(const in_t* src, int64_t rows, int64_t cols, __nv_bfloat16* dst) {
  const int64_t tasks = rows * (cols / k_round) * 4;
  for (int64_t task = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; task < tasks;
       task += int64_t(gridDim.x) * blockDim.x) {
    const int w = int(task & 3);
    const int64_t rr = task >> 2;  // row * rounds + round
    const int64_t rounds = cols / k_round, row = rr / rounds, k0 = (rr % rounds) * k_round;
    task_regs<in_t> t;
    task_load(t, src + row * cols, k0, w);
    uint32_t v[4][4];  // v[c][i] = X_i of physical chunk c
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if constexpr (std::is_same_v<in_t, float>) {
        const float4 a = t.v[c][0], b = t.v[c][1];
        v[c][0] = pack_bf16x2(a.x, b.x);
        v[c][1] = pack_bf16x2(a.y, b.y);
        v[c][2] = pack_bf16x2(a.z, b.z);
        v[c][3] = pack_bf16x2(a.w, b.w);
      } else {
        const uint4 q = t.v[c];
        v[c][0] = __byte_perm(q.x, q.z, 0x5410);
        v[c][1] = __byte_perm(q.x, q.z, 0x7632);
        v[c][2] = __byte_perm(q.y, q.w, 0x5410);
        v[c][3] = __byte_perm(q.y, q.w, 0x7632);
      }
    }
    auto* out = reinterpret_cast<uint4*>(dst + row * cols + k0 + 32 * w);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = make_uint4(v[0][i], v[1][i], v[2][i], v[3][i]);
  }
}

template <typename in_t>
cudaError_t launch_permute(const in_t* src, int64_t rows, int64_t cols, __nv_bfloat16* dst,
                           cudaStream_t stream) {
  const int64_t tasks = rows * (cols / k_round) * 4;
  if (tasks == 0) return cudaSuccess;
  moe_prefill_permute_kernel<in_t>
      <<<grid_stride_blocks(tasks, 256), 256, 0, stream>>>(src, rows, cols, dst);
  return cudaGetLastError();
}

}  // namespace

}  // namespace dsv4::cuda::prefill
