// The wgmma core's launch sequences and its checkpoint-layout L2 instantiations
// (moe_prefill_wgmma.h); the kernel and its design notes are in moe_prefill_wgmma_kernel.cuh,
// the L1 instantiations in moe_prefill_wgmma_up.cu, the repacked-layout kernels in
// moe_prefill_wgmma_rp_up.cu / moe_prefill_wgmma_rp_down.cu. With xp set it runs the
// cp.async-staged variant (wgmma_cp, not the default): x pre-permuted here, kernels at the end of
// moe_prefill_wgmma_kernel.cuh.
#include "backends/cuda/moe_prefill_wgmma_kernel.cuh"
#include "backends/cuda/moe_prefill_wgmma_permute.cuh"

namespace dsv4::cuda::prefill {

template <typename act_t, weight_kind K>
cudaError_t launch_wgmma_gemms(const act_t* x, int64_t top_k, const device_weight& w1,
                               const device_weight& w3, const device_weight& w2, float limit,
                               const int* tile_count, const int4* tiles, const int* sorted,
                               int64_t tile_slots, const float* pair_weights,
                               const int32_t* indices, int64_t pairs, float* h, float* out,
                               __nv_bfloat16* xp, cudaStream_t stream) {
  const int64_t hidden = w1.cols, inter = w1.rows;
  const dim3 grid1(unsigned(ceil_div(inter, k_up_rows)), unsigned(tile_slots));
  const dim3 grid2(unsigned(ceil_div(hidden, k_down_rows)), unsigned(tile_slots));
  const fp4_weight f1 = make_fp4_weight(w1), f3 = make_fp4_weight(w3), f2 = make_fp4_weight(w2);
  if (xp) {  // the cp.async-staged variant
    const int64_t tokens = pairs / top_k;
    if (const cudaError_t e = launch_permute<act_t>(x, tokens, hidden, xp, stream);
        e != cudaSuccess)
      return e;
    if (!pair_weights) {  // h' in BF16, permuted by L1's epilogue
      auto* hb = reinterpret_cast<__nv_bfloat16*>(h);
      if (const cudaError_t e = launch_wgmma_cp_up<__nv_bfloat16, K>(
              grid1, xp, int(top_k), tile_count, tiles, sorted, f1, f3, limit, nullptr, hb, stream);
          e != cudaSuccess)
        return e;
      return launch_one_cp<float, K, false>(grid2, hb, int(top_k), tile_count, tiles, sorted, f2,
                                            f2, limit, nullptr, out, stream);
    }
    if (const cudaError_t e =
            launch_wgmma_cp_up<float, K>(grid1, xp, int(top_k), tile_count, tiles, sorted, f1, f3,
                                         limit, pair_weights, h, stream);
        e != cudaSuccess)
      return e;
    const int64_t items = pairs * ceil_div(inter, 128);
    moe_quantize_h_kernel<128><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
        h, indices, pairs, w1.count, inter);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    return launch_one<float, float, K, false>(grid2, h, int(top_k), tile_count, tiles, sorted, f2,
                                              f2, limit, nullptr, out, stream);
  }
  if (!pair_weights) {
    // Exact order: h goes to L2 as BF16 either way (staging rounds it); stored as BF16 here
    // (same rounding, in the f32 h region), L2 stages half the bytes.
    auto* hb = reinterpret_cast<__nv_bfloat16*>(h);
    if (const cudaError_t e = launch_wgmma_up<act_t, __nv_bfloat16, K>(
            grid1, x, int(top_k), tile_count, tiles, sorted, f1, f3, limit, nullptr, hb, stream);
        e != cudaSuccess)
      return e;
    return launch_one<__nv_bfloat16, float, K, false>(grid2, hb, int(top_k), tile_count, tiles,
                                                      sorted, f2, f2, limit, nullptr, out, stream);
  }
  // Official order: h in f32 for the FP8 rounding of each 128 values, then L2.
  if (const cudaError_t e = launch_wgmma_up<act_t, float, K>(
          grid1, x, int(top_k), tile_count, tiles, sorted, f1, f3, limit, pair_weights, h, stream);
      e != cudaSuccess)
    return e;
  const int64_t items = pairs * ceil_div(inter, 128);
  moe_quantize_h_kernel<128><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
      h, indices, pairs, w1.count, inter);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return launch_one<float, float, K, false>(grid2, h, int(top_k), tile_count, tiles, sorted, f2, f2,
                                            limit, nullptr, out, stream);
}

template <weight_kind K>
cudaError_t launch_wgmma_gemms_repacked(const __nv_bfloat16* x, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float limit, const int* tile_count,
                                        const int4* tiles, const int* sorted, int64_t tile_slots,
                                        const float* pair_weights, const int32_t* indices,
                                        int64_t pairs, float* h, float* out, cudaStream_t stream) {
  const int64_t hidden = w1.cols, inter = w1.rows;
  const dim3 grid1(unsigned(ceil_div(inter, k_up_rows)), unsigned(tile_slots));
  const dim3 grid2(unsigned(ceil_div(hidden, k_down_rows)), unsigned(tile_slots));
  const fp4_weight f1 = make_fp4_weight(w1), f3 = make_fp4_weight(w3), f2 = make_fp4_weight(w2);
  if (!pair_weights) {  // exact order: BF16 h, as the checkpoint sequence above
    auto* hb = reinterpret_cast<__nv_bfloat16*>(h);
    if (const cudaError_t e = launch_wgmma_up_rp<__nv_bfloat16, K>(
            grid1, x, int(top_k), tile_count, tiles, sorted, f1, f3, limit, nullptr, hb, stream);
        e != cudaSuccess)
      return e;
    return launch_wgmma_down_rp<__nv_bfloat16, K>(grid2, hb, int(top_k), tile_count, tiles, sorted,
                                                  f2, out, stream);
  }
  if (const cudaError_t e = launch_wgmma_up_rp<float, K>(
          grid1, x, int(top_k), tile_count, tiles, sorted, f1, f3, limit, pair_weights, h, stream);
      e != cudaSuccess)
    return e;
  const int64_t items = pairs * ceil_div(inter, 128);
  moe_quantize_h_kernel<128><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
      h, indices, pairs, w1.count, inter);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  return launch_wgmma_down_rp<float, K>(grid2, h, int(top_k), tile_count, tiles, sorted, f2, out,
                                        stream);
}

template cudaError_t launch_wgmma_gemms_repacked<weight_kind::mxfp4>(
    const __nv_bfloat16*, int64_t, const device_weight&, const device_weight&, const device_weight&,
    float, const int*, const int4*, const int*, int64_t, const float*, const int32_t*, int64_t,
    float*, float*, cudaStream_t);
template cudaError_t launch_wgmma_gemms_repacked<weight_kind::nvfp4>(
    const __nv_bfloat16*, int64_t, const device_weight&, const device_weight&, const device_weight&,
    float, const int*, const int4*, const int*, int64_t, const float*, const int32_t*, int64_t,
    float*, float*, cudaStream_t);

#define DSV4_PREFILL_WGMMA_INSTANTIATE(T, K)                                                       \
  template cudaError_t launch_wgmma_gemms<T, K>(                                                   \
      const T*, int64_t, const device_weight&, const device_weight&, const device_weight&, float,  \
      const int*, const int4*, const int*, int64_t, const float*, const int32_t*, int64_t, float*, \
      float*, __nv_bfloat16*, cudaStream_t);
DSV4_PREFILL_WGMMA_INSTANTIATE(float, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_INSTANTIATE(float, weight_kind::nvfp4)
DSV4_PREFILL_WGMMA_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4)
DSV4_PREFILL_WGMMA_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4)
#undef DSV4_PREFILL_WGMMA_INSTANTIATE

}  // namespace dsv4::cuda::prefill
