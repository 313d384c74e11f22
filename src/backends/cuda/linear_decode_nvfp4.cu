// Dense NVFP4 decode linears on the routed-MoE decode kernel (see linear_decode_nvfp4.h).
//
// The MoE kernel's W2 launch (moe_decode_gemm_kernel<nvfp4, UP = false, ring, repacked>) with one
// expert, one chunk: pairs are the step's tokens (top_k 1), so W2's activation row of pair t is
// x's row t and its output row out[t * rows ..] is y's row t. The chunk comes from chain 8's
// derivation over a constant routing (every token on expert 0), which the kernel reads before its
// grid-dependency wait: no plan launch, and nothing a previous launch writes.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>

#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_decode_nvfp4.h"
#include "backends/cuda/linear_dispatch.h"
#include "backends/cuda/moe_decode_gemm.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// The routing of a dense step: every token's one pair on expert 0 (static storage, zero).
__device__ int32_t g_dense_routing[k_linear_decode_nvfp4_max_tokens];

// g_dense_routing's address on the current device, looked up once per device (not per call).
cudaError_t dense_routing(int32_t*& routing) {
  static std::mutex mu;
  static std::map<int, int32_t*> by_device;
  int device = 0;
  if (const cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const std::lock_guard<std::mutex> lock(mu);
  if (const auto it = by_device.find(device); it != by_device.end()) {
    routing = it->second;
    return cudaSuccess;
  }
  if (const cudaError_t e =
          cudaGetSymbolAddress(reinterpret_cast<void**>(&routing), g_dense_routing);
      e != cudaSuccess)
    return e;
  by_device.emplace(device, routing);
  return cudaSuccess;
}

// x [tokens, cols] bf16 into the decode kernels' paired layout (moe_decode_common.cuh; bf16:
// the hi part is the value, no lo part), 16 bytes a thread. The GEMM waits for this grid before
// it reads the result; this grid waits for its predecessor before it reads x or overwrites the
// workspace (a previous GEMM may still read it).
__global__ void linear_decode_nvfp4_prepare_kernel(const uint4* x, int64_t groups, uint4* xhi) {
  pdl_trigger();
  pdl_wait();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < groups) xhi[act_group_slot(i)] = paired_bf16_group(x[i]);
}

template <int RT, bool W2P, bool Y16, bool XRAW>
constexpr auto gemm_kernel =
    moe_decode_gemm_kernel<weight_kind::nvfp4, false, false, RT, true, 2, 0, false, W2P, Y16, XRAW>;

bool valid_config(const device_weight& w, int64_t tokens, const linear_decode_nvfp4_config& c) {
  return (c.stage_x == 0 || linear_decode_nvfp4_staged_bytes(tokens, w.cols) <=
                                k_linear_decode_nvfp4_max_staged_bytes) &&
         (c.row_tiles == 1 || c.row_tiles == 2 || c.row_tiles == 4) &&
         (c.w2_pair == 0 || (c.w2_pair == 1 && w.rows % 32 == 0)) &&
         (c.stage_x == 0 || c.stage_x == 1) && (c.x_raw == 0 || (c.x_raw == 1 && c.stage_x == 1)) &&
         w.rows % (16 * (c.w2_pair + 1) * c.row_tiles) == 0;
}

// xhi: the prepared rows, or (XRAW) x itself.
template <int RT, bool W2P, bool XRAW, typename out_t>
cudaError_t launch_gemm(const uint16_t* xhi, int64_t tokens, const device_weight& w, out_t* y,
                        size_t smem, cudaStream_t stream) {
  constexpr bool y16 = std::is_same_v<out_t, __nv_bfloat16>;
  const auto kernel = gemm_kernel<RT, W2P, y16, XRAW>;
  if (smem > 0 && allow_dynamic_smem(kernel, smem) != cudaSuccess) return cudaErrorInvalidValue;
  int32_t* routing = nullptr;
  if (const cudaError_t e = dense_routing(routing); e != cudaSuccess) return e;
  // Chain 8's self plan over the constant routing; no fold, no readiness counters.
  const chain_args chain{nullptr, 0, routing, int(tokens), 1, nullptr, 0, 0, 0};
  const fp4_weight f = make_fp4_weight(w);
  const dim3 grid(unsigned(w.rows / ((W2P ? 32 : 16) * RT)), 1);
  return launch_pdl(true, kernel, grid, dim3(k_threads), smem, stream, xhi, xhi, w.cols, w.rows, 1,
                    nullptr, nullptr, nullptr, f, f, 0.0f, nullptr, nullptr, nullptr, nullptr,
                    reinterpret_cast<float*>(y), smem > 0 ? int(tokens) : 0, chain);
}

std::atomic<int> g_mode{-1};

}  // namespace

void linear_decode_nvfp4_set_mode(int mode) {
  g_mode.store(mode < 0 ? -1 : std::min(mode, 2), std::memory_order_relaxed);
}

bool linear_decode_nvfp4_supported(const device_weight& w) {
  return w.kind == weight_kind::nvfp4 && w.layout == weight_layout::repacked &&
         validate_weight(w, true) == cudaSuccess && w.count >= 1 && w.rows % 16 == 0 &&
         w.cols % k_round == 0 && aligned_16(w.data) && aligned_16(w.scale);
}

bool linear_decode_nvfp4_preferred(const device_weight& w, int64_t tokens) {
  static const bool env_on = [] {
    const char* env = std::getenv("DSV4_LINEAR_NVFP4");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  const int mode = g_mode.load(std::memory_order_relaxed);
  if (mode == 0 || (mode < 0 && !env_on) || tokens > k_linear_decode_nvfp4_max_tokens ||
      !linear_decode_nvfp4_supported(w))
    return false;
  return mode == 2 ||
         choose_linear_decode_nvfp4(w.rows, w.cols, tokens, current_device_sm_count()).take;
}

// Fields the request leaves open: choose_linear_decode_nvfp4 (linear_dispatch.h) on this device.
linear_decode_nvfp4_config linear_decode_nvfp4_plan(const device_weight& w, int64_t tokens,
                                                    const linear_decode_nvfp4_config& request) {
  const linear_decode_nvfp4_choice rule =
      choose_linear_decode_nvfp4(w.rows, w.cols, tokens, current_device_sm_count());
  linear_decode_nvfp4_config c = request;
  if (c.row_tiles == 0) c.row_tiles = rule.row_tiles;
  if (c.w2_pair < 0) c.w2_pair = rule.w2_pair;
  if (c.stage_x < 0) c.stage_x = rule.stage_x;
  if (c.x_raw < 0) c.x_raw = c.stage_x;
  return c;
}

size_t linear_decode_nvfp4_workspace_bytes(int64_t tokens, int64_t cols) {
  return size_t(std::max<int64_t>(tokens, 1) * cols) * 2;
}

template <typename out_t>
cudaError_t linear_decode_nvfp4(const __nv_bfloat16* x, int64_t tokens, const device_weight& w,
                                out_t* y, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream, const linear_decode_nvfp4_config* config) {
  if (tokens < 0 || !x || !y || !workspace || !aligned_16(workspace) || !aligned_16(x))
    return cudaErrorInvalidValue;
  if (tokens > k_linear_decode_nvfp4_max_tokens || !linear_decode_nvfp4_supported(w))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  if (workspace_bytes < linear_decode_nvfp4_workspace_bytes(tokens, w.cols))
    return cudaErrorInvalidValue;
  const linear_decode_nvfp4_config c =
      linear_decode_nvfp4_plan(w, tokens, config ? *config : linear_decode_nvfp4_config{});
  if (!valid_config(w, tokens, c)) return cudaErrorInvalidValue;
  const size_t smem = c.stage_x ? size_t(linear_decode_nvfp4_staged_bytes(tokens, w.cols)) : 0;
  const uint16_t* rows = reinterpret_cast<const uint16_t*>(x);
  if (!c.x_raw) {
    auto* xhi = static_cast<uint16_t*>(workspace);
    const int64_t groups = tokens * w.cols / 8;
    if (const cudaError_t e =
            launch_pdl(true, linear_decode_nvfp4_prepare_kernel,
                       dim3(unsigned(ceil_div(groups, int64_t(256)))), dim3(256), 0, stream,
                       reinterpret_cast<const uint4*>(x), groups, reinterpret_cast<uint4*>(xhi));
        e != cudaSuccess)
      return e;
    rows = xhi;
  }
#define DSV4_LAUNCH(RT, W2P)                                              \
  (c.x_raw ? launch_gemm<RT, W2P, true>(rows, tokens, w, y, smem, stream) \
           : launch_gemm<RT, W2P, false>(rows, tokens, w, y, smem, stream))
  if (c.w2_pair)
    return c.row_tiles == 4   ? DSV4_LAUNCH(4, true)
           : c.row_tiles == 2 ? DSV4_LAUNCH(2, true)
                              : DSV4_LAUNCH(1, true);
  return c.row_tiles == 4   ? DSV4_LAUNCH(4, false)
         : c.row_tiles == 2 ? DSV4_LAUNCH(2, false)
                            : DSV4_LAUNCH(1, false);
#undef DSV4_LAUNCH
}

template cudaError_t linear_decode_nvfp4<float>(const __nv_bfloat16*, int64_t, const device_weight&,
                                                float*, void*, size_t, cudaStream_t,
                                                const linear_decode_nvfp4_config*);
template cudaError_t linear_decode_nvfp4<__nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                        const device_weight&, __nv_bfloat16*, void*,
                                                        size_t, cudaStream_t,
                                                        const linear_decode_nvfp4_config*);

}  // namespace dsv4::cuda
