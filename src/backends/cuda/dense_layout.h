// Which layout the CUDA backend gives a dense linear's weights at load (cuda_ops::prepare_linear),
// from host-known facts only. NVFP4 matrices (the quantizer's --scope all-linear output: attention
// projections, shared experts, wo_a) may take the repacked layout of moe_repack.h, which only
// linear_decode (any step of <= 64 tokens, grouped too) and linear_gemm (the expansion for larger
// steps) read; the GEMV / tiled kernels of linear.h refuse it. So a matrix is repacked only where
// linear_dispatch.h sends every step to those two:
//  * repacking not switched off (cuda_ops::set_repack_dense, runner_options::repack_dense,
//    environment DSV4_CUDA_REPACK_DENSE=0);
//  * the decode kernels on (off: the GEMV up to 64 tokens, the CPU-parity configuration);
//  * NVFP4 (linear_decode's repacked kernels are NVFP4 only), rows % 16 == 0, cols % 128 == 0
//    (the repack tiles; linear_decode's rounds);
//  * at least 8 MiB of weight bytes (rows * cols / 2), where the repacked kernels were measured
//    faster: H100 (session 25 NVFP4R, bench_linear_gemm --nvfp4-repack-ab, planner's split, bf16
//    x / y, graphs of 16 calls, two processes that agreed within 1%; us checkpoint -> repacked,
//    h100_2026-11-28_s25_nvfp4r_repack_ab.txt): Pro wo_b (56 MiB) T = 1 / 8 / 16 33.9 -> 28.0 /
//    38.6 -> 32.1 / 54.3 -> 48.3 (1.12-1.22x, 77% of read at T = 1), Pro wq_b (48 MiB) 25.9 ->
//    23.3 / 30.8 -> 27.1 (1.07-1.14x), Pro wo_a (32 MiB, 16 groups) 18.7 -> 17.1 (1.07-1.13x),
//    Pro shared w13 / w2 (10.5 MiB) 1.01-1.19x / 1.00-1.06x, Flash wo_b (16 MiB) 1.04-1.07x,
//    Flash wo_a 1.00-1.04x, Flash wq_b 0.99-1.02x; the matrices of 2-5 MiB lost at every
//    T = 1..16 (4-8 rounds a warp: the planner splits their K over 4-8 warps): Flash wq_a T = 1
//    4.45 -> 5.02 us (0.88-0.93x), Flash shared w13 0.88-0.93x, w2 0.84-0.90x, Pro wq_a
//    0.93-0.97x. Not measured on an H200.
// Anything else keeps the checkpoint layout. Outputs are the same bit for bit either way (the
// kernels decode the same values and keep every sum's order).
#pragma once

#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

struct dense_layout_facts {
  bool repack_enabled = true;
  bool decode_kernels = false;
  weight_kind kind = weight_kind::f32;
  int64_t rows = 0, cols = 0;
};

inline weight_layout choose_dense_layout(const dense_layout_facts& f) {
  constexpr int64_t k_min_bytes = int64_t(8) << 20;
  const bool dims = f.rows > 0 && f.cols > 0 && f.rows % 16 == 0 && f.cols % 128 == 0;
  const bool large = dims && f.rows * (f.cols / 2) >= k_min_bytes;
  return f.repack_enabled && f.decode_kernels && f.kind == weight_kind::nvfp4 && dims && large
             ? weight_layout::repacked
             : weight_layout::checkpoint;
}

}  // namespace dsv4::cuda
