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
//    (the repack tiles; linear_decode's rounds).
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
  const bool dims = f.rows > 0 && f.cols > 0 && f.rows % 16 == 0 && f.cols % 128 == 0;
  return f.repack_enabled && f.decode_kernels && f.kind == weight_kind::nvfp4 && dims
             ? weight_layout::repacked
             : weight_layout::checkpoint;
}

}  // namespace dsv4::cuda
