// Which layout the CUDA backend gives the routed-expert weights at load (cuda_ops::
// prepare_experts), from host-known facts only. The repacked layout (moe_repack.h) is read by
// moe_decode (any step of <= 64 tokens) and by moe_prefill's wgmma core with BF16 activations;
// moe_experts (the general kernels), the mma.sync prefill core and every dense kernel read only
// the checkpoint layout. So the experts are repacked only when every step kernel that will see
// them reads it:
//  * repacking not switched off (cuda_ops::set_repack_experts, runner_options::repack_experts,
//    environment DSV4_CUDA_REPACK=0);
//  * BF16 activations (moe_prefill takes repacked weights with BF16 x only; with f32 activations
//    prefill-sized steps take it too, so f32 keeps the checkpoint layout);
//  * the decode kernels on (off: moe_experts everywhere, the CPU-parity configuration);
//  * a compute capability 9.0 device (moe_prefill_use_wgmma: the wgmma core runs);
//  * W1, W3, W2 all MXFP4 or all NVFP4 with one scale encoding, hidden and inter multiples of 128
//    (repack tiles of 16 x 128; the kernels' own condition), at most 2048 experts.
// Anything else keeps the checkpoint layout. Measured on an H100 (session 6, MOEWIRE,
// bench/kernels/results/h100_2026-11-24_s6_moewire_*): moe_decode official bf16 at 54-59% (T = 1)
// and 86-90% (T = 16, 64) of HBM read on the repacked layout against 44-69% on the checkpoint
// one, moe_prefill 1.06x faster at T = 4096, outputs and engine logits bit for bit the same.
#pragma once

#include <cstdint>

#include "backends/cuda/linear.h"

namespace dsv4::cuda {

struct expert_layout_facts {
  bool repack_enabled = true;
  bool bf16_activations = false;
  bool decode_kernels = false;
  bool wgmma_device = false;  // moe_prefill_use_wgmma(): compute capability 9.0
  weight_kind kind = weight_kind::f32;
  bool same_format = false;  // W1, W3, W2 share kind and scale encoding
  int64_t hidden = 0, inter = 0, experts = 0;
};

inline weight_layout choose_expert_layout(const expert_layout_facts& f) {
  constexpr int64_t k_max_experts = 2048;  // moe_decode / moe_prefill
  const bool four_bit = f.kind == weight_kind::mxfp4 || f.kind == weight_kind::nvfp4;
  const bool dims = f.hidden > 0 && f.inter > 0 && f.hidden % 128 == 0 && f.inter % 128 == 0 &&
                    f.experts > 0 && f.experts <= k_max_experts;
  return f.repack_enabled && f.bf16_activations && f.decode_kernels && f.wgmma_device && four_bit &&
                 f.same_format && dims
             ? weight_layout::repacked
             : weight_layout::checkpoint;
}

}  // namespace dsv4::cuda
