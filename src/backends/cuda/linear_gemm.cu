#include <algorithm>
#include <climits>
#include <type_traits>

#include "backends/cuda/linear_gemm.h"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

namespace {

using detail::weight_args;

constexpr int k_expand_threads = 256;
constexpr int64_t k_expand_max_blocks = 8192;
// alpha and beta (f32) at the workspace head; the expanded matrix starts 256 bytes in.
constexpr size_t k_scalar_bytes = 256;

template <typename act_t>
constexpr bool is_bf16 = std::is_same_v<act_t, __nv_bfloat16>;

// The expansion target: BF16 for bf16 activations, f32 for f32 activations.
template <typename act_t>
using target_t = std::conditional_t<is_bf16<act_t>, __nv_bfloat16, float>;

template <typename act_t>
bool needs_expansion(const device_weight& w) {
  return is_bf16<act_t> ? w.kind != weight_kind::bf16 : w.kind != weight_kind::f32;
}

// BF16 targets leave the nvfp4 global scale to the GEMM's alpha (w * global is not exact in
// BF16); f32 targets fold it in, as dequantize_to_f32 does.
template <typename act_t>
bool global_in_alpha(const device_weight& w) {
  return is_bf16<act_t> && w.kind == weight_kind::nvfp4;
}

__device__ __forceinline__ void store_values(float* out, const float* v, int n) {
  for (int i = 0; i < n; i += 4)
    *reinterpret_cast<float4*>(out + i) = make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
}

__device__ __forceinline__ void store_values(__nv_bfloat16* out, const float* v, int n) {
  for (int i = 0; i < n; i += 8) {
    uint4 q;
    uint32_t* words = &q.x;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const __nv_bfloat162 p = __floats2bfloat162_rn(v[i + 2 * j], v[i + 2 * j + 1]);
      words[j] = *reinterpret_cast<const uint32_t*>(&p);
    }
    *reinterpret_cast<uint4*>(out + i) = q;
  }
}

__device__ __forceinline__ void store_one(float* out, float v) {
  *out = v;
}
__device__ __forceinline__ void store_one(__nv_bfloat16* out, float v) {
  *out = __float2bfloat16_rn(v);
}

// One thread per 16-byte vector of the packed matrix (cols % elems_per_vec == 0, 16-byte
// aligned data). Writes alpha/beta for the GEMM when `scalars` is set. RP (nvfp4 in the
// repacked layout of moe_repack.h): the 32 values of row `row` at k .. k + 31 are the 16 bytes
// at repacked_word_offset(row, k), each word turned back into its checkpoint word, so the
// expansion writes the checkpoint layout's values bit for bit.
template <weight_kind K, typename out_t, bool RP = false>
__global__ void __launch_bounds__(k_expand_threads)
    linear_gemm_expand_vector_kernel(weight_args w, bool with_global, out_t* out, float* scalars) {
  static_assert(!RP || K == weight_kind::nvfp4, "repacked dense weights: nvfp4");
  using fmt = detail::format<K>;
  constexpr int per_vec = fmt::elems_per_vec;
  constexpr int per_word = fmt::elems_per_word;
  if (scalars && blockIdx.x == 0 && threadIdx.x == 0) {
    scalars[0] = w.global_scale ? __ldg(w.global_scale) : 1.0f;
    scalars[1] = 0.0f;
  }
  const int64_t vecs_per_row = w.cols / per_vec;
  const int64_t total = w.rows * vecs_per_row;
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < total;
       v += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = v / vecs_per_row;
    const int64_t k = (v - row * vecs_per_row) * per_vec;
    detail::row_ref r = detail::locate_row<K>(w, 0, row);
    if (!with_global) r.global = 1.0f;
    const uint4 q =
        detail::load_weight_16(RP ? w.data + fp4_repack::repacked_word_offset(row, k, w.cols)
                                  : r.data + fmt::row_bytes(k));
    float s[2];
    detail::vector_scales<K>(r, k, w.scale_e8m0, s);
    uint32_t words[4] = {q.x, q.y, q.z, q.w};
    if constexpr (RP)
      for (uint32_t& word : words) word = fp4_repack::checkpoint_word_of(word);
    float vals[per_vec];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      detail::decode_word<K>(words[j], j, s, r.global, vals + j * per_word);
    store_values(out + row * w.cols + k, vals, per_vec);
  }
}

// Any shape: one thread per element.
template <weight_kind K, typename out_t>
__global__ void __launch_bounds__(k_expand_threads)
    linear_gemm_expand_scalar_kernel(weight_args w, bool with_global, out_t* out, float* scalars) {
  if (scalars && blockIdx.x == 0 && threadIdx.x == 0) {
    scalars[0] = w.global_scale ? __ldg(w.global_scale) : 1.0f;
    scalars[1] = 0.0f;
  }
  const int64_t total = w.rows * w.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / w.cols;
    const int64_t k = i - row * w.cols;
    detail::row_ref r = detail::locate_row<K>(w, 0, row);
    if (!with_global) r.global = 1.0f;
    store_one(out + i, detail::decode_one<K>(r, k, w.scale_e8m0));
  }
}

template <weight_kind K, typename out_t>
cudaError_t launch_expand(const device_weight& w, bool with_global, out_t* out, float* scalars,
                          cudaStream_t stream) {
  const weight_args args = detail::make_weight_args(w);
  const int64_t per_vec = detail::format<K>::elems_per_vec;
  const bool vector = w.cols % per_vec == 0 && reinterpret_cast<uintptr_t>(w.data) % 16 == 0;
  const int64_t items = vector ? w.rows * (w.cols / per_vec) : w.rows * w.cols;
  const unsigned blocks = unsigned(
      std::min(k_expand_max_blocks, std::max<int64_t>(1, ceil_div(items, k_expand_threads))));
  if (w.layout == weight_layout::repacked) {  // nvfp4 (linear_gemm_supported), the vector path
    if constexpr (K == weight_kind::nvfp4) {
      if (!vector) return cudaErrorNotSupported;
      linear_gemm_expand_vector_kernel<K, out_t, true>
          <<<blocks, k_expand_threads, 0, stream>>>(args, with_global, out, scalars);
      return cudaGetLastError();
    }
    return cudaErrorNotSupported;
  }
  if (vector)
    linear_gemm_expand_vector_kernel<K, out_t>
        <<<blocks, k_expand_threads, 0, stream>>>(args, with_global, out, scalars);
  else
    linear_gemm_expand_scalar_kernel<K, out_t>
        <<<blocks, k_expand_threads, 0, stream>>>(args, with_global, out, scalars);
  return cudaGetLastError();
}

template <typename out_t>
cudaError_t expand(const device_weight& w, bool with_global, out_t* out, float* scalars,
                   cudaStream_t stream) {
  switch (w.kind) {
    case weight_kind::f32:
      return launch_expand<weight_kind::f32>(w, with_global, out, scalars, stream);
    case weight_kind::bf16:
      return launch_expand<weight_kind::bf16>(w, with_global, out, scalars, stream);
    case weight_kind::fp8_block:
      return launch_expand<weight_kind::fp8_block>(w, with_global, out, scalars, stream);
    case weight_kind::mxfp4:
      return launch_expand<weight_kind::mxfp4>(w, with_global, out, scalars, stream);
    case weight_kind::nvfp4:
      return launch_expand<weight_kind::nvfp4>(w, with_global, out, scalars, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
constexpr cudaDataType_t cuda_type() {
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

bool fits_int(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

}  // namespace

template <typename act_t>
bool linear_gemm_supported(const device_weight& w) {
  // The repacked layout (linear.h): nvfp4 only, through the vector expansion (16-byte aligned
  // data; cols % 128 == 0 holds for every repacked matrix).
  if (validate_weight(w, /*accept_repacked=*/true) != cudaSuccess) return false;
  if (w.layout == weight_layout::repacked &&
      (w.kind != weight_kind::nvfp4 || reinterpret_cast<uintptr_t>(w.data) % 16 != 0))
    return false;
  if constexpr (is_bf16<act_t>) {
    switch (w.kind) {
      case weight_kind::bf16:
      case weight_kind::mxfp4:
      case weight_kind::nvfp4:
        return true;
      case weight_kind::fp8_block:
        return w.scale_e8m0;
      case weight_kind::f32:
        return false;
    }
    return false;
  } else {
    return true;
  }
}

template <typename act_t>
size_t linear_gemm_workspace_bytes(const device_weight& w) {
  const size_t matrix =
      needs_expansion<act_t>(w) ? size_t(w.rows) * size_t(w.cols) * sizeof(target_t<act_t>) : 0;
  return k_scalar_bytes + matrix;
}

template <typename act_t, typename out_t>
cudaError_t linear_gemm(cublasHandle_t cublas, const act_t* x, int64_t tokens,
                        const device_weight& w, int64_t groups, out_t* y, void* workspace,
                        size_t workspace_bytes, void* cublas_workspace,
                        size_t cublas_workspace_bytes, cudaStream_t stream) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, act_t>);
  if (!linear_gemm_supported<act_t>(w)) return cudaErrorNotSupported;
  if (!cublas || !x || !y || tokens < 0 || groups <= 0 || w.rows % groups != 0)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t out_g = w.rows / groups;
  if (!fits_int(tokens) || !fits_int(out_g) || !fits_int(w.cols) || !fits_int(groups * w.cols) ||
      !fits_int(w.rows) || !fits_int(groups))
    return cudaErrorInvalidValue;
  if (!workspace || reinterpret_cast<uintptr_t>(workspace) % 256 != 0 ||
      workspace_bytes < linear_gemm_workspace_bytes<act_t>(w))
    return cudaErrorInvalidValue;
  if (!cublas_workspace || reinterpret_cast<uintptr_t>(cublas_workspace) % 256 != 0 ||
      cublas_workspace_bytes == 0)
    return cudaErrorInvalidValue;

  using weight_t = target_t<act_t>;
  float* scalars = static_cast<float*>(workspace);
  const void* a = w.data;
  const bool device_alpha = global_in_alpha<act_t>(w);
  if (needs_expansion<act_t>(w)) {
    weight_t* expanded =
        reinterpret_cast<weight_t*>(static_cast<uint8_t*>(workspace) + k_scalar_bytes);
    if (const cudaError_t e = expand(w, /*with_global=*/!device_alpha, expanded,
                                     device_alpha ? scalars : nullptr, stream);
        e != cudaSuccess)
      return e;
    a = expanded;
  }

  // In this order: cublasSetStream resets the workspace (linear_gemm.h).
  if (cublasSetStream(cublas, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(cublas, cublas_workspace, cublas_workspace_bytes) != CUBLAS_STATUS_SUCCESS)
    return cudaErrorUnknown;
  cublasPointerMode_t saved_mode;
  if (cublasGetPointerMode(cublas, &saved_mode) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  const float one = 1.0f, zero = 0.0f;
  const float* alpha = device_alpha ? scalars : &one;
  const float* beta = device_alpha ? scalars + 1 : &zero;
  if (cublasSetPointerMode(cublas,
                           device_alpha ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST) !=
      CUBLAS_STATUS_SUCCESS)
    return cudaErrorUnknown;

  // Row-major y [tokens, rows] = x [tokens, groups*cols] W^T is, column-major,
  // y^T (out_g x tokens, ld rows) = op_T(W_g as cols x out_g, ld cols) * x_g^T (cols x tokens,
  // ld groups*cols), one batch entry per group.
  const cudaDataType_t ab_type = cuda_type<weight_t>();
  const cublasComputeType_t compute =
      is_bf16<act_t> ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_PEDANTIC;
  const int m = int(out_g), n = int(tokens), k = int(w.cols);
  cublasStatus_t status;
  if (groups == 1) {
    status =
        cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, a, ab_type, k, x, ab_type, k,
                     beta, y, cuda_type<out_t>(), int(w.rows), compute, CUBLAS_GEMM_DEFAULT);
  } else {
    status = cublasGemmStridedBatchedEx(
        cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, alpha, a, ab_type, k, (long long)out_g * k, x,
        ab_type, int(groups * w.cols), (long long)w.cols, beta, y, cuda_type<out_t>(), int(w.rows),
        (long long)out_g, int(groups), compute, CUBLAS_GEMM_DEFAULT);
  }
  cublasSetPointerMode(cublas, saved_mode);
  if (status != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  return cudaGetLastError();
}

#define DSV4_LINEAR_GEMM_INSTANTIATE(A, O)                                                        \
  template cudaError_t linear_gemm<A, O>(cublasHandle_t, const A*, int64_t, const device_weight&, \
                                         int64_t, O*, void*, size_t, void*, size_t, cudaStream_t);
template bool linear_gemm_supported<float>(const device_weight&);
template bool linear_gemm_supported<__nv_bfloat16>(const device_weight&);
template size_t linear_gemm_workspace_bytes<float>(const device_weight&);
template size_t linear_gemm_workspace_bytes<__nv_bfloat16>(const device_weight&);
DSV4_LINEAR_GEMM_INSTANTIATE(float, float)
DSV4_LINEAR_GEMM_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
DSV4_LINEAR_GEMM_INSTANTIATE(__nv_bfloat16, float)
#undef DSV4_LINEAR_GEMM_INSTANTIATE

}  // namespace dsv4::cuda
