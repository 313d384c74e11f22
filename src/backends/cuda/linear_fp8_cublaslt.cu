// W8A8 linear through cuBLASLt's block-scaled FP8 matmul (see linear_fp8_cublaslt.h).
#include <cuda_bf16.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_fp8_cublaslt.h"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_block = 128;     // k per scale block, weights and activations
constexpr size_t k_align = 256;  // workspace sub-buffers start on this boundary

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}
size_t round_up(size_t v, size_t m) {
  return (v + m - 1) / m * m;
}

// A warp per (token, 128-k block) of the padded N = n4 tokens: x8 = e4m3(x / s), sx[b][t] = s
// (ops::fake_quant_fp8_act's rule, as linear_decode_fp8act's quantize). Tokens >= `tokens` get
// zero bytes and scale 1, so the padded columns of D are zero and never read.
template <typename act_t>
__global__ void lt_quantize_kernel(const act_t* x, int64_t tokens, int64_t n4, int64_t cols,
                                   uint8_t* x8, float* sx) {
  // The matmul launches after this grid completes; this grid waits for its predecessor before
  // it reads x or overwrites x8 / sx, which the previous call's matmul may still read.
  pdl_trigger();
  pdl_wait();
  const int lane = threadIdx.x % k_warp_size;
  const int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / k_warp_size;
  const int64_t blocks = cols / k_block;
  if (item >= n4 * blocks) return;  // uniform over the warp
  const int64_t t = item / blocks, b = item % blocks;
  const int64_t at = t * cols + b * k_block + lane * 4;
  if (t >= tokens) {
    reinterpret_cast<uint32_t*>(x8 + at)[0] = 0u;
    if (lane == 0) sx[b * n4 + t] = 1.0f;
    return;
  }
  float s;
  reinterpret_cast<uint32_t*>(x8 + at)[0] = quant::fp8_block_codes_warp(x + at, s);
  if (lane == 0) sx[b * n4 + t] = s;
}

// out[rb][kb] for kb < l4: the weight's block scale (rb, kb) as f32, zero past its l blocks.
__global__ void lt_scales_kernel(const void* scale, bool e8m0, int64_t row_blocks, int64_t l,
                                 int64_t l4, float* out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= row_blocks * l4) return;
  const int64_t rb = i / l4, kb = i % l4;
  out[i] = kb < l ? detail::load_block_scale(scale, rb * l + kb, e8m0) : 0.0f;
}

cudaError_t to_cuda_error(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return cudaSuccess;
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return cudaErrorNotSupported;
    case CUBLAS_STATUS_INVALID_VALUE:
      return cudaErrorInvalidValue;
    case CUBLAS_STATUS_ALLOC_FAILED:
      return cudaErrorMemoryAllocation;
    default:
      return cudaErrorUnknown;
  }
}

// Largest power of two <= 256 dividing both the address and the leading dimension in bytes: the
// alignment cuBLASLt may assume for a matrix (the preference's MIN_ALIGNMENT_*_BYTES).
uint32_t alignment_of(const void* p, int64_t ld_bytes) {
  const uint64_t a = uint64_t(reinterpret_cast<uintptr_t>(p)) | uint64_t(ld_bytes);
  uint32_t r = 256;
  while (r > 1 && a % r != 0) r /= 2;
  return r;
}

// Descriptors of one call; destroyed with the object.
struct lt_descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;

  lt_descriptors(int64_t rows, int64_t cols, int64_t n4, cudaDataType_t out_type,
                 const float* a_scale, const float* b_scale) {
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t n) {
      if (status == CUBLAS_STATUS_SUCCESS) status = cublasLtMatmulDescSetAttribute(op, attr, v, n);
    };
    status = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    set(CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    set(CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof(a_mode));
    set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof(b_mode));
    set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale));
    set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale));
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatrixLayoutCreate(&a, CUDA_R_8F_E4M3, uint64_t(cols), uint64_t(rows), cols);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatrixLayoutCreate(&b, CUDA_R_8F_E4M3, uint64_t(cols), uint64_t(n4), cols);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatrixLayoutCreate(&d, out_type, uint64_t(rows), uint64_t(n4), rows);
  }
  ~lt_descriptors() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  lt_descriptors(const lt_descriptors&) = delete;
  lt_descriptors& operator=(const lt_descriptors&) = delete;
};

// The heuristic's first algorithm per problem, cached: cuBLASLt's heuristic costs tens of
// microseconds of host time per query (cuBLAS docs 3.1.2).
using algo_key =
    std::tuple<int, int64_t, int64_t, int64_t, int, uint32_t, uint32_t, uint32_t, uint32_t, int>;

constexpr int k_max_algos = 8;  // heuristic results asked for (linear_fp8_cublaslt_with_algo)

cublasStatus_t cached_algo(cublasLtHandle_t lt, const lt_descriptors& desc, const algo_key& key,
                           const uint32_t (&align)[4], int index, cublasLtMatmulAlgo_t& algo) {
  static std::mutex mutex;
  static std::map<algo_key, cublasLtMatmulAlgo_t> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) {
    algo = it->second;
    return CUBLAS_STATUS_SUCCESS;
  }
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  const size_t ws = k_linear_fp8_cublaslt_lt_workspace;
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof(ws));
  for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; ++i)
    s = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof(align[i]));
  cublasLtMatmulHeuristicResult_t results[k_max_algos]{};
  int returned = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(lt, desc.op, desc.a, desc.b, desc.d, desc.d, pref,
                                       index == 0 ? 1 : k_max_algos, results, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  if (returned <= index) return CUBLAS_STATUS_NOT_SUPPORTED;
  cache.emplace(key, results[index].algo);
  algo = results[index].algo;
  return CUBLAS_STATUS_SUCCESS;
}

struct workspace_layout {
  size_t x8 = 0, sx = 0, d = 0, lt = 0, total = 0;
  workspace_layout(int64_t n4, int64_t rows, int64_t cols) {
    sx = round_up(size_t(n4 * cols), k_align);
    d = sx + round_up(size_t(n4 * (cols / k_block)) * 4, k_align);
    lt = d + round_up(size_t(n4 * rows) * 4, k_align);
    total = lt + k_linear_fp8_cublaslt_lt_workspace;
  }
};

}  // namespace

bool linear_fp8_cublaslt_supported(const device_weight& w) {
  if (w.kind != weight_kind::fp8_block || validate_weight(w) != cudaSuccess) return false;
  return w.count == 1 && w.rows % 4 == 0 && w.cols % k_block == 0 && aligned_16(w.data);
}

int64_t linear_fp8_cublaslt_scale_count(const device_weight& w) {
  return (w.rows + k_block - 1) / k_block * round_up((w.cols + k_block - 1) / k_block, int64_t(4));
}

cudaError_t linear_fp8_cublaslt_prepare_scales(const device_weight& w, float* scales,
                                               cudaStream_t stream) {
  if (!linear_fp8_cublaslt_supported(w) || !aligned_16(scales)) return cudaErrorInvalidValue;
  const int64_t row_blocks = (w.rows + k_block - 1) / k_block, l = w.cols / k_block;
  const int64_t l4 = round_up(l, int64_t(4)), n = row_blocks * l4;
  constexpr int threads = 256;
  lt_scales_kernel<<<unsigned((n + threads - 1) / threads), threads, 0, stream>>>(
      w.scale, w.scale_e8m0, row_blocks, l, l4, scales);
  return cudaGetLastError();
}

size_t linear_fp8_cublaslt_workspace_bytes(int64_t tokens, int64_t rows, int64_t cols) {
  return workspace_layout(round_up(std::max<int64_t>(tokens, 1), int64_t(4)), rows, cols).total;
}

template <typename act_t, typename out_t>
cudaError_t linear_fp8_cublaslt_with_algo(cublasLtHandle_t lt, const act_t* x, int64_t tokens,
                                          const device_weight& w, const float* lt_scales, out_t* y,
                                          void* workspace, size_t workspace_bytes, int algo_index,
                                          cudaStream_t stream, bool pdl) {
  if (algo_index < 0 || algo_index >= k_max_algos) return cudaErrorInvalidValue;
  static_assert(std::is_same_v<out_t, act_t> || std::is_same_v<out_t, float>);
  if (!linear_fp8_cublaslt_supported(w)) return cudaErrorNotSupported;
  if (tokens < 1 || !lt_scales || !aligned_16(lt_scales) || !x || !y) return cudaErrorInvalidValue;
  const int64_t rows = w.rows, cols = w.cols, n4 = round_up(tokens, int64_t(4));
  const workspace_layout lay(n4, rows, cols);
  if (!workspace || workspace_bytes < lay.total || reinterpret_cast<uintptr_t>(workspace) % 16)
    return cudaErrorInvalidValue;
  auto* base = static_cast<uint8_t*>(workspace);
  uint8_t* x8 = base + lay.x8;
  float* sx = reinterpret_cast<float*>(base + lay.sx);
  out_t* d = tokens == n4 ? y : reinterpret_cast<out_t*>(base + lay.d);
  void* lt_ws = base + lay.lt;

  const int64_t items = n4 * (cols / k_block);
  constexpr int threads = 256;
  const unsigned grid = unsigned((items * k_warp_size + threads - 1) / threads);
  cudaError_t e = launch_pdl(pdl, lt_quantize_kernel<act_t>, dim3(grid), dim3(threads), 0, stream,
                             x, tokens, n4, cols, x8, sx);
  if (e != cudaSuccess) return e;

  const cudaDataType_t out_type = std::is_same_v<out_t, float> ? CUDA_R_32F : CUDA_R_16BF;
  lt_descriptors desc(rows, cols, n4, out_type, lt_scales, sx);
  if (desc.status != CUBLAS_STATUS_SUCCESS) return to_cuda_error(desc.status);
  int device = 0;
  if ((e = cudaGetDevice(&device)) != cudaSuccess) return e;
  const int64_t d_ld_bytes = rows * int64_t(sizeof(out_t));
  const uint32_t align[4] = {alignment_of(w.data, cols), alignment_of(x8, cols),
                             alignment_of(d, d_ld_bytes), alignment_of(d, d_ld_bytes)};
  const algo_key key{device,   rows,     cols,     n4,       int(out_type),
                     align[0], align[1], align[2], align[3], algo_index};
  cublasLtMatmulAlgo_t algo{};
  cublasStatus_t s = cached_algo(lt, desc, key, align, algo_index, algo);
  if (s != CUBLAS_STATUS_SUCCESS) return to_cuda_error(s);
  const float one = 1.0f, zero = 0.0f;
  s = cublasLtMatmul(lt, desc.op, &one, w.data, desc.a, x8, desc.b, &zero, d, desc.d, d, desc.d,
                     &algo, lt_ws, k_linear_fp8_cublaslt_lt_workspace, stream);
  if (s != CUBLAS_STATUS_SUCCESS) return to_cuda_error(s);
  if (d != y)  // D [n4][rows] row-major: its first `tokens` rows are y
    return cudaMemcpyAsync(y, d, size_t(tokens * rows) * sizeof(out_t), cudaMemcpyDeviceToDevice,
                           stream);
  return cudaSuccess;
}

template <typename act_t, typename out_t>
cudaError_t linear_fp8_cublaslt(cublasLtHandle_t lt, const act_t* x, int64_t tokens,
                                const device_weight& w, const float* lt_scales, out_t* y,
                                void* workspace, size_t workspace_bytes, cudaStream_t stream,
                                bool pdl) {
  return linear_fp8_cublaslt_with_algo(lt, x, tokens, w, lt_scales, y, workspace, workspace_bytes,
                                       0, stream, pdl);
}

#define DSV4_LINEAR_FP8_CUBLASLT(A, O)                                                            \
  template cudaError_t linear_fp8_cublaslt<A, O>(cublasLtHandle_t, const A*, int64_t,             \
                                                 const device_weight&, const float*, O*, void*,   \
                                                 size_t, cudaStream_t, bool);                     \
  template cudaError_t linear_fp8_cublaslt_with_algo<A, O>(                                       \
      cublasLtHandle_t, const A*, int64_t, const device_weight&, const float*, O*, void*, size_t, \
      int, cudaStream_t, bool);
DSV4_LINEAR_FP8_CUBLASLT(float, float)
DSV4_LINEAR_FP8_CUBLASLT(__nv_bfloat16, __nv_bfloat16)
DSV4_LINEAR_FP8_CUBLASLT(__nv_bfloat16, float)
#undef DSV4_LINEAR_FP8_CUBLASLT

}  // namespace dsv4::cuda
