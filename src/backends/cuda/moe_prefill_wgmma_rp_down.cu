// The wgmma core's L2 on repacked weights (moe_repack.h; kernel in
// moe_prefill_wgmma_kernel.cuh with RP set): h (BF16 in the exact order, f32 in the official
// one) times W2 into per-pair rows of out (f32).
#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"

namespace dsv4::cuda::prefill {

template <typename in_t, weight_kind K>
cudaError_t launch_wgmma_down_rp(dim3 grid, const in_t* h, int top_k, const int* tile_count,
                                 const int4* tiles, const int* sorted, const fp4_weight& w2,
                                 float* out, cudaStream_t stream) {
  return launch_one<in_t, float, K, false, true>(grid, h, top_k, tile_count, tiles, sorted, w2, w2,
                                                 0.0f, nullptr, out, stream);
}

#define DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE(I, K)                                            \
  template cudaError_t launch_wgmma_down_rp<I, K>(dim3, const I*, int, const int*, const int4*, \
                                                  const int*, const fp4_weight&, float*,        \
                                                  cudaStream_t);
DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE(float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE(float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4)
#undef DSV4_PREFILL_WGMMA_RP_DOWN_INSTANTIATE

}  // namespace dsv4::cuda::prefill
