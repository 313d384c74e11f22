// The wgmma core's L1 on repacked weights (moe_repack.h; kernel in
// moe_prefill_wgmma_kernel.cuh with RP set): BF16 x times W1 and W3, clamped SwiGLU into h (BF16
// in the exact order, f32 in the official one). Its own translation unit so that the checkpoint
// and repacked kernels compile in parallel.
#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"

namespace dsv4::cuda::prefill {

template <typename out_t, weight_kind K>
cudaError_t launch_wgmma_up_rp(dim3 grid, const __nv_bfloat16* x, int top_k, const int* tile_count,
                               const int4* tiles, const int* sorted, const fp4_weight& w1,
                               const fp4_weight& w3, float limit, const float* pair_weights,
                               out_t* h, cudaStream_t stream) {
  return launch_one<__nv_bfloat16, out_t, K, true, true>(grid, x, top_k, tile_count, tiles, sorted,
                                                         w1, w3, limit, pair_weights, h, stream);
}

#define DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE(O, K)                                             \
  template cudaError_t launch_wgmma_up_rp<O, K>(                                               \
      dim3, const __nv_bfloat16*, int, const int*, const int4*, const int*, const fp4_weight&, \
      const fp4_weight&, float, const float*, O*, cudaStream_t);
DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE(float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE(float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4)
#undef DSV4_PREFILL_WGMMA_RP_UP_INSTANTIATE

}  // namespace dsv4::cuda::prefill
