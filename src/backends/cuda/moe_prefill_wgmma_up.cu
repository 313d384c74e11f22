// The wgmma core's L1 instantiations (moe_prefill_wgmma.h; kernel in
// moe_prefill_wgmma_kernel.cuh): x (f32 or BF16) times W1 and W3, clamped SwiGLU into h (f32 or
// BF16).
#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"

namespace dsv4::cuda::prefill {

template <typename in_t, typename out_t, weight_kind K>
cudaError_t launch_wgmma_up(dim3 grid, const in_t* x, int top_k, const int* tile_count,
                            const int4* tiles, const int* sorted, const fp4_weight& w1,
                            const fp4_weight& w3, float limit, const float* pair_weights, out_t* h,
                            cudaStream_t stream) {
  return launch_one<in_t, out_t, K, true>(grid, x, top_k, tile_count, tiles, sorted, w1, w3, limit,
                                          pair_weights, h, stream);
}

#define DSV4_PREFILL_WGMMA_UP_INSTANTIATE(I, O, K)                                                \
  template cudaError_t launch_wgmma_up<I, O, K>(dim3, const I*, int, const int*, const int4*,     \
                                                const int*, const fp4_weight&, const fp4_weight&, \
                                                float, const float*, O*, cudaStream_t);
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(float, float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(float, float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(float, __nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(float, __nv_bfloat16, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(__nv_bfloat16, float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(__nv_bfloat16, float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(__nv_bfloat16, __nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_UP_INSTANTIATE(__nv_bfloat16, __nv_bfloat16, weight_kind::nvfp4)
#undef DSV4_PREFILL_WGMMA_UP_INSTANTIATE

}  // namespace dsv4::cuda::prefill

namespace dsv4::cuda::prefill {

template <typename out_t, weight_kind K>
cudaError_t launch_wgmma_cp_up(dim3 grid, const __nv_bfloat16* xp, int top_k, const int* tile_count,
                               const int4* tiles, const int* sorted, const fp4_weight& w1,
                               const fp4_weight& w3, float limit, const float* pair_weights,
                               out_t* h, cudaStream_t stream) {
  return launch_one_cp<out_t, K, true>(grid, xp, top_k, tile_count, tiles, sorted, w1, w3, limit,
                                       pair_weights, h, stream);
}

#define DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE(O, K)                                             \
  template cudaError_t launch_wgmma_cp_up<O, K>(                                               \
      dim3, const __nv_bfloat16*, int, const int*, const int4*, const int*, const fp4_weight&, \
      const fp4_weight&, float, const float*, O*, cudaStream_t);
DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE(float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE(float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4)
#undef DSV4_PREFILL_WGMMA_CP_UP_INSTANTIATE

}  // namespace dsv4::cuda::prefill
