// Linear layers on checkpoint-format weights (see linear.h). Two paths, one launch each:
//  * GEMV (tokens <= k_gemv_max_tokens): a warp owns k_gemv_rows output rows and streams them
//    16 bytes per lane per step; every weight vector read is applied to up to 16 tokens held in
//    a tile (grid z walks the token tiles), so weights are read ceil(T / 16) times.
//  * Tiled GEMM (larger steps): 64 tokens x 64 rows per block, k tiles of 32 expanded to f32 in
//    shared memory. Correct, not yet fast (wgmma is a later issue).
// Grouped (block-diagonal) linears put the group in grid y; the group's x columns and output
// rows are pointer offsets, so both paths serve linear and grouped_linear.
#include <algorithm>
#include <type_traits>

#include "backends/cuda/linear.h"
#include "backends/cuda/weight_decode.cuh"

namespace dsv4::cuda {

int64_t weight_matrix_bytes(weight_kind kind, int64_t rows, int64_t cols) {
  switch (kind) {
    case weight_kind::f32:
      return rows * cols * 4;
    case weight_kind::bf16:
      return rows * cols * 2;
    case weight_kind::fp8_block:
      return rows * cols;
    case weight_kind::mxfp4:
    case weight_kind::nvfp4:
      return rows * (cols / 2);
  }
  return 0;
}

int64_t scale_matrix_count(weight_kind kind, int64_t rows, int64_t cols) {
  switch (kind) {
    case weight_kind::fp8_block:
      return ceil_div(rows, 128) * ceil_div(cols, 128);
    case weight_kind::mxfp4:
      return rows * (cols / 32);
    case weight_kind::nvfp4:
      return rows * (cols / 16);
    default:
      return 0;
  }
}

cudaError_t validate_weight(const device_weight& w, bool accept_repacked) {
  if (w.rows <= 0 || w.cols <= 0 || w.count <= 0 || !w.data) return cudaErrorInvalidValue;
  if (w.rows > INT32_MAX || w.cols > INT32_MAX) return cudaErrorInvalidValue;
  switch (w.layout) {
    case weight_layout::checkpoint:
      break;
    case weight_layout::repacked:
      // The tiles of moe_repack.h: 16 rows x 128 columns of a 4-bit kind.
      if (!accept_repacked || (w.kind != weight_kind::mxfp4 && w.kind != weight_kind::nvfp4) ||
          w.rows % 16 != 0 || w.cols % 128 != 0)
        return cudaErrorInvalidValue;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  switch (w.kind) {
    case weight_kind::f32:
    case weight_kind::bf16:
      return cudaSuccess;
    case weight_kind::fp8_block:
      return w.scale ? cudaSuccess : cudaErrorInvalidValue;
    case weight_kind::mxfp4:
      return w.scale && w.cols % 32 == 0 ? cudaSuccess : cudaErrorInvalidValue;
    case weight_kind::nvfp4:
      return w.scale && w.cols % 16 == 0 ? cudaSuccess : cudaErrorInvalidValue;
  }
  return cudaErrorInvalidValue;
}

namespace {

using detail::format;
using detail::row_ref;
using detail::weight_args;

constexpr int k_gemv_warps = 4;
constexpr int k_gemv_rows = 4;  // rows per warp
constexpr int k_gemv_threads = k_gemv_warps * k_warp_size;
constexpr int64_t k_gemv_max_tokens = 64;

// y[i] = v, y holding f32 (y_f32) or act_t: the output dtype is a launch argument rather than a
// template parameter (one instantiation per activation type).
template <typename act_t>
__device__ __forceinline__ void store_y(void* y, int64_t i, float v, bool y_f32) {
  if (y_f32)
    static_cast<float*>(y)[i] = v;
  else
    static_cast<act_t*>(y)[i] = act_from_f32<act_t>(v);
}

// Grid: x = row blocks of a group, y = group, z = token tile of NT tokens.
template <typename act_t, weight_kind K, int NT>
__global__ void __launch_bounds__(k_gemv_threads)
    linear_gemv_kernel(const act_t* x, int64_t x_stride, int64_t tokens, weight_args w,
                       int64_t out_g, void* y, bool y_f32, int64_t y_stride, bool vector_path) {
  __shared__ const act_t* xrow[NT];
  const int64_t g = blockIdx.y;
  const int64_t t0 = int64_t(blockIdx.z) * NT;
  const int ntok = int(min(int64_t(NT), tokens - t0));
  // Rows past the tile's tokens point at its last token: valid memory, never accumulated.
  if (threadIdx.x < NT)
    xrow[threadIdx.x] = x + (t0 + min(int(threadIdx.x), ntok - 1)) * x_stride + g * w.cols;
  __syncthreads();
  const int warp = threadIdx.x / k_warp_size;
  const int lane = threadIdx.x % k_warp_size;
  const int64_t local0 = (int64_t(blockIdx.x) * k_gemv_warps + warp) * k_gemv_rows;
  if (local0 >= out_g) return;
  row_ref rows[k_gemv_rows];
#pragma unroll
  for (int r = 0; r < k_gemv_rows; ++r)
    if (local0 + r < out_g) rows[r] = detail::locate_row<K>(w, 0, g * out_g + local0 + r);
  float acc[k_gemv_rows][NT];
  detail::warp_rows_dot<K, k_gemv_rows, NT>(rows, w.cols, xrow, ntok, w.scale_e8m0, vector_path,
                                            acc);
  // Every lane holds every sum; spread the stores over the lanes.
#pragma unroll
  for (int r = 0; r < k_gemv_rows; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (lane == (r * NT + t) % k_warp_size && t < ntok && local0 + r < out_g)
        store_y<act_t>(y, (t0 + t) * y_stride + g * out_g + local0 + r, acc[r][t], y_f32);
}

// Matrices with few rows give the GEMV above too few warps to keep HBM busy (Flash wq_a: 64
// blocks of 4 warps on 132 SMs, 9.5% of the read ceiling at one token). This variant puts the
// block's 4 warps on the same k_gemv_rows rows, each over a quarter of the columns, and sums the
// four partials in shared memory in warp order (deterministic). Grid as linear_gemv_kernel with
// k_gemv_rows rows per block.
template <typename act_t, weight_kind K, int NT>
__global__ void __launch_bounds__(k_gemv_threads)
    linear_gemv_split_kernel(const act_t* x, int64_t x_stride, int64_t tokens, weight_args w,
                             int64_t out_g, void* y, bool y_f32, int64_t y_stride,
                             bool vector_path) {
  __shared__ const act_t* xrow[NT];
  __shared__ float partial[k_gemv_warps - 1][k_gemv_rows][NT];
  const int64_t g = blockIdx.y;
  const int64_t t0 = int64_t(blockIdx.z) * NT;
  const int ntok = int(min(int64_t(NT), tokens - t0));
  if (threadIdx.x < NT)
    xrow[threadIdx.x] = x + (t0 + min(int(threadIdx.x), ntok - 1)) * x_stride + g * w.cols;
  __syncthreads();
  const int warp = threadIdx.x / k_warp_size;
  const int lane = threadIdx.x % k_warp_size;
  const int64_t local0 = int64_t(blockIdx.x) * k_gemv_rows;
  row_ref rows[k_gemv_rows];
#pragma unroll
  for (int r = 0; r < k_gemv_rows; ++r)
    if (local0 + r < out_g) rows[r] = detail::locate_row<K>(w, 0, g * out_g + local0 + r);
  // Quarter boundaries on whole 16-byte vectors (or elements on the scalar path).
  const int64_t unit = vector_path ? format<K>::elems_per_vec : 1;
  const int64_t units = (w.cols + unit - 1) / unit;
  const int64_t kb = units * warp / k_gemv_warps * unit;
  const int64_t ke = min(w.cols, units * (warp + 1) / k_gemv_warps * unit);
  float acc[k_gemv_rows][NT];
  detail::warp_rows_dot<K, k_gemv_rows, NT>(rows, ke, xrow, ntok, w.scale_e8m0, vector_path, acc,
                                            kb);
  if (warp > 0 && lane == 0)
#pragma unroll
    for (int r = 0; r < k_gemv_rows; ++r)
#pragma unroll
      for (int t = 0; t < NT; ++t) partial[warp - 1][r][t] = acc[r][t];
  __syncthreads();
  if (warp > 0) return;
#pragma unroll
  for (int r = 0; r < k_gemv_rows; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      float v = acc[r][t];
#pragma unroll
      for (int p = 0; p < k_gemv_warps - 1; ++p) v += partial[p][r][t];
      if (lane == (r * NT + t) % k_warp_size && t < ntok && local0 + r < out_g)
        store_y<act_t>(y, (t0 + t) * y_stride + g * out_g + local0 + r, v, y_f32);
    }
}

constexpr int k_tile_tokens = 64, k_tile_rows = 64, k_tile_k = 32;
constexpr int k_tile_threads = 256;  // 16 x 16 threads, 4 x 4 outputs each

// Grid: x = row tiles of a group, y = token tiles, z = group.
template <typename act_t, weight_kind K, bool Vector>
__global__ void __launch_bounds__(k_tile_threads)
    linear_tiled_kernel(const act_t* x, int64_t x_stride, int64_t tokens, weight_args w,
                        int64_t out_g, void* y, bool y_f32, int64_t y_stride) {
  // Transposed tiles ([k][token], [k][row]) so the inner loop reads 4 consecutive floats; rows
  // padded by 4 floats (keeps float4 alignment, staggers banks).
  __shared__ __align__(16) float xs[k_tile_k][k_tile_tokens + 4];
  __shared__ __align__(16) float ws[k_tile_k][k_tile_rows + 4];
  using F = format<K>;
  const int64_t g = blockIdx.z;
  const int64_t row0 = int64_t(blockIdx.x) * k_tile_rows;
  const int64_t t0 = int64_t(blockIdx.y) * k_tile_tokens;
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int64_t cols = w.cols;
  const act_t* xg = x + g * cols;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < cols; k0 += k_tile_k) {
    for (int i = tid; i < k_tile_tokens * k_tile_k; i += k_tile_threads) {
      const int t = i / k_tile_k, kk = i % k_tile_k;
      const int64_t tok = t0 + t, k = k0 + kk;
      xs[kk][t] = tok < tokens && k < cols ? act_to_f32(xg[tok * x_stride + k]) : 0.0f;
    }
    if constexpr (Vector) {
      constexpr int EV = F::elems_per_vec, EW = F::elems_per_word;
      constexpr int vecs_per_row = k_tile_k / EV;
      for (int i = tid; i < k_tile_rows * vecs_per_row; i += k_tile_threads) {
        const int n = i / vecs_per_row, kk = (i % vecs_per_row) * EV;
        const int64_t row = row0 + n, k = k0 + kk;
        // cols % EV == 0 on this path: a vector is wholly inside the row or wholly outside.
        if (row < out_g && k < cols) {
          const row_ref r = detail::locate_row<K>(w, 0, g * out_g + row);
          const uint4 raw = detail::load_weight_16(r.data + F::row_bytes(k));
          float s[2];
          detail::vector_scales<K>(r, k, w.scale_e8m0, s);
          const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            float v[EW];
            detail::decode_word<K>(words[j], j, s, r.global, v);
#pragma unroll
            for (int e = 0; e < EW; ++e) ws[kk + j * EW + e][n] = v[e];
          }
        } else {
#pragma unroll
          for (int e = 0; e < EV; ++e) ws[kk + e][n] = 0.0f;
        }
      }
    } else {
      for (int i = tid; i < k_tile_rows * k_tile_k; i += k_tile_threads) {
        const int n = i / k_tile_k, kk = i % k_tile_k;
        const int64_t row = row0 + n, k = k0 + kk;
        float v = 0.0f;
        if (row < out_g && k < cols) {
          const row_ref r = detail::locate_row<K>(w, 0, g * out_g + row);
          v = detail::decode_one<K>(r, k, w.scale_e8m0);
        }
        ws[kk][n] = v;
      }
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < k_tile_k; ++kk) {
      const float4 a = *reinterpret_cast<const float4*>(&xs[kk][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&ws[kk][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t tok = t0 + ty * 4 + i;
    if (tok >= tokens) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t row = row0 + tx * 4 + j;
      if (row < out_g) store_y<act_t>(y, tok * y_stride + g * out_g + row, acc[i][j], y_f32);
    }
  }
}

template <typename act_t, weight_kind K>
cudaError_t launch_linear(const act_t* x, int64_t tokens, const device_weight& w, int64_t groups,
                          void* y, bool y_f32, cudaStream_t stream) {
  const int64_t out_g = w.rows / groups;
  const int64_t x_stride = groups * w.cols;
  const weight_args args = detail::make_weight_args(w);
  const bool vector_path = detail::vector_path_ok(w, x, x_stride);
  if (tokens <= k_gemv_max_tokens) {
    const int64_t rows_per_block = int64_t(k_gemv_warps) * k_gemv_rows;
    const int nt = tokens <= 1 ? 1 : tokens <= 4 ? 4 : 16;
    const int64_t token_tiles = ceil_div(tokens, nt);
    // Split K over the warps when whole-row warps would leave SMs without 2 blocks (<= 4 tokens;
    // the 16-token tile keeps its own layout).
    const bool split = nt <= 4 && ceil_div(out_g, rows_per_block) * groups * token_tiles <
                                      2 * int64_t(current_device_sm_count());
    if (split) {
      const dim3 grid(unsigned(ceil_div(out_g, int64_t(k_gemv_rows))), unsigned(groups),
                      unsigned(token_tiles));
      if (nt == 1)
        linear_gemv_split_kernel<act_t, K, 1><<<grid, k_gemv_threads, 0, stream>>>(
            x, x_stride, tokens, args, out_g, y, y_f32, w.rows, vector_path);
      else
        linear_gemv_split_kernel<act_t, K, 4><<<grid, k_gemv_threads, 0, stream>>>(
            x, x_stride, tokens, args, out_g, y, y_f32, w.rows, vector_path);
      return cudaGetLastError();
    }
    const dim3 grid(unsigned(ceil_div(out_g, rows_per_block)), unsigned(groups),
                    unsigned(token_tiles));
    if (nt == 1)
      linear_gemv_kernel<act_t, K, 1><<<grid, k_gemv_threads, 0, stream>>>(
          x, x_stride, tokens, args, out_g, y, y_f32, w.rows, vector_path);
    else if (nt == 4)
      linear_gemv_kernel<act_t, K, 4><<<grid, k_gemv_threads, 0, stream>>>(
          x, x_stride, tokens, args, out_g, y, y_f32, w.rows, vector_path);
    else
      linear_gemv_kernel<act_t, K, 16><<<grid, k_gemv_threads, 0, stream>>>(
          x, x_stride, tokens, args, out_g, y, y_f32, w.rows, vector_path);
  } else {
    const int64_t token_tiles = ceil_div(tokens, k_tile_tokens);
    if (token_tiles > 65535) return cudaErrorInvalidValue;
    const dim3 grid(unsigned(ceil_div(out_g, k_tile_rows)), unsigned(token_tiles),
                    unsigned(groups));
    // The tile's k step (32) is a multiple of every format's vector, so the vector condition is
    // the GEMV's minus the activation alignment (activations are read one float at a time).
    const bool vector_tiles = detail::vector_path_ok(w, w.data, 0);
    if (vector_tiles)
      linear_tiled_kernel<act_t, K, true>
          <<<grid, k_tile_threads, 0, stream>>>(x, x_stride, tokens, args, out_g, y, y_f32, w.rows);
    else
      linear_tiled_kernel<act_t, K, false>
          <<<grid, k_tile_threads, 0, stream>>>(x, x_stride, tokens, args, out_g, y, y_f32, w.rows);
  }
  return cudaGetLastError();
}

}  // namespace

template <typename act_t, typename out_t>
cudaError_t grouped_linear(const act_t* x, int64_t tokens, const device_weight& w, int64_t groups,
                           out_t* y, cudaStream_t stream) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, act_t>);
  if (const cudaError_t e = validate_weight(w); e != cudaSuccess) return e;
  if (tokens < 0 || groups <= 0 || groups > 65535 || w.rows % groups != 0 || !x || !y)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const bool y_f32 = std::is_same_v<out_t, float>;
  switch (w.kind) {
    case weight_kind::f32:
      return launch_linear<act_t, weight_kind::f32>(x, tokens, w, groups, y, y_f32, stream);
    case weight_kind::bf16:
      return launch_linear<act_t, weight_kind::bf16>(x, tokens, w, groups, y, y_f32, stream);
    case weight_kind::fp8_block:
      return launch_linear<act_t, weight_kind::fp8_block>(x, tokens, w, groups, y, y_f32, stream);
    case weight_kind::mxfp4:
      return launch_linear<act_t, weight_kind::mxfp4>(x, tokens, w, groups, y, y_f32, stream);
    case weight_kind::nvfp4:
      return launch_linear<act_t, weight_kind::nvfp4>(x, tokens, w, groups, y, y_f32, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename act_t, typename out_t>
cudaError_t linear(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                   cudaStream_t stream) {
  return grouped_linear(x, tokens, w, 1, y, stream);
}

#define DSV4_LINEAR_INSTANTIATE(A, O)                                                             \
  template cudaError_t grouped_linear<A, O>(const A*, int64_t, const device_weight&, int64_t, O*, \
                                            cudaStream_t);                                        \
  template cudaError_t linear<A, O>(const A*, int64_t, const device_weight&, O*, cudaStream_t);
DSV4_LINEAR_INSTANTIATE(float, float)
DSV4_LINEAR_INSTANTIATE(__nv_bfloat16, __nv_bfloat16)
DSV4_LINEAR_INSTANTIATE(__nv_bfloat16, float)
#undef DSV4_LINEAR_INSTANTIATE

}  // namespace dsv4::cuda
