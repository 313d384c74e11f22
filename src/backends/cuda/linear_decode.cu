// Dense decode linears on tensor cores (see linear_decode.h; fragment mapping in fp4_mma.cuh).
//
// Per format, a lane's 16-byte load of rows g and g + 8 holds E = 32 (fp4), 16 (fp8) or 8 (bf16)
// consecutive k; a quad covers a "round" of 4E k. The activations are prepared in the matching
// order (one u32 = the BF16 pair that meets one A register):
//   fp4  per 8 k:  (x0,x4) (x1,x5) (x2,x6) (x3,x7)   (A: e2m1_pair<i> of a word)
//   fp8  per 4 k:  (x0,x2) (x1,x3)                    (A: bytes 0,2 and 1,3 of a word)
//   bf16 natural:  (x0,x1) (x2,x3) ...                 (A: the weight words as they are)
// A block is 4 warps over RT row tiles of 16 and 4 / RT K parts (summed in warp order through
// shared memory); each warp carries NT n-tiles of 8 tokens, so every weight is read once.
#include <cuda_bf16.h>

#include <algorithm>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/fp4_mma.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_decode.h"

namespace dsv4::cuda {

namespace {

constexpr int k_warps = 4;
constexpr int k_threads = k_warps * k_warp_size;

template <weight_kind K>
__host__ __device__ constexpr int elems_16() {  // k per 16-byte load
  return K == weight_kind::bf16 ? 8 : K == weight_kind::fp8_block ? 16 : 32;
}

// Position (u16 units) of activation k inside its prepared row.
template <weight_kind K>
__device__ __forceinline__ int64_t prepared_index(int64_t k) {
  if constexpr (K == weight_kind::bf16) {
    return k;
  } else if constexpr (K == weight_kind::fp8_block) {
    return (k & ~int64_t(3)) + (((k & 1) << 1) | ((k >> 1) & 1));
  } else {
    return fp4mma::paired_u16_index(k);
  }
}

template <weight_kind K, typename act_t>
__global__ void linear_decode_prepare_kernel(const act_t* x, int64_t count, uint16_t* hi,
                                             uint16_t* lo) {
  const int64_t grp = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // 8 consecutive k
  if (grp * 8 >= count) return;
  uint16_t h[8], l[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    uint16_t a, b;
    fp4mma::split_bf16(act_to_f32(x[grp * 8 + j]), a, b);
    const int64_t at = prepared_index<K>(j);  // groups of 8 map onto themselves
    h[at] = a;
    l[at] = b;
  }
  uint4 vh, vl;
  vh.x = h[0] | (uint32_t(h[1]) << 16), vh.y = h[2] | (uint32_t(h[3]) << 16);
  vh.z = h[4] | (uint32_t(h[5]) << 16), vh.w = h[6] | (uint32_t(h[7]) << 16);
  vl.x = l[0] | (uint32_t(l[1]) << 16), vl.y = l[2] | (uint32_t(l[3]) << 16);
  vl.z = l[4] | (uint32_t(l[5]) << 16), vl.w = l[6] | (uint32_t(l[7]) << 16);
  reinterpret_cast<uint4*>(hi)[grp] = vh;
  reinterpret_cast<uint4*>(lo)[grp] = vl;
}

struct dense_weight {
  const uint8_t* data;
  const uint8_t* scale;
  const float* global_p;  // nvfp4 global scale (null reads as 1)
  int64_t rows, cols;
  bool scale_f32;  // fp8_block / mxfp4 f32 scales
};

template <weight_kind K>
struct round_w {
  uint4 v[2];
  uint32_t s[2];
};

template <weight_kind K>
__device__ __forceinline__ void load_round(round_w<K>& r, const dense_weight& w, int64_t row0,
                                           int64_t k) {
  constexpr int E = elems_16<K>();
  const int64_t row_bytes = K == weight_kind::bf16        ? w.cols * 2
                            : K == weight_kind::fp8_block ? w.cols
                                                          : w.cols / 2;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int64_t row = row0 + 8 * i;
    r.v[i] = fp4mma::load_stream_16(w.data + row * row_bytes + k * 16 / E);
    if constexpr (K == weight_kind::mxfp4) {
      const int64_t at = row * (w.cols / 32) + k / 32;
      r.s[i] = w.scale_f32 ? (__ldg(reinterpret_cast<const uint32_t*>(w.scale) + at) >> 23) & 0xFFu
                           : __ldg(w.scale + at);
    } else if constexpr (K == weight_kind::nvfp4) {
      const int64_t at = row * (w.cols / 16) + k / 16;
      r.s[i] = __ldg(w.scale + at) | (uint32_t(__ldg(w.scale + at + 1)) << 8);
    } else if constexpr (K == weight_kind::fp8_block) {
      if (i == 0) {  // rows g and g + 8 share a 128-row block
        const int64_t at = (row / 128) * ((w.cols + 127) / 128) + k / 128;
        r.s[0] = w.scale_f32 ? __ldg(reinterpret_cast<const uint32_t*>(w.scale) + at)
                             : __float_as_uint(detail::e8m0_to_f32(__ldg(w.scale + at)));
      }
    }
  }
}

// Two E4M3 bytes (0 and 2 of `q`) to a BF16 pair, exact: sign and magnitude moved into place
// give value * 2^-120 (E4M3 subnormals land on BF16 subnormals), times 2^120.
__device__ __forceinline__ uint32_t e4m3_pair(uint32_t q) {
  const uint32_t raw = ((q & 0x00800080u) << 8) | ((q & 0x007F007Fu) << 4);
  return fp4mma::mul_bf16x2(raw, 0x7B807B80u);  // 2^120 in both halves
}

// acc[j] += this round's 16 rows x (4E k) times n-tile j's activations.
template <weight_kind K, bool SPLIT, int NT>
__device__ __forceinline__ void mma_round(float (&acc)[NT][4], const round_w<K>& r,
                                          const uint4* const (&xh)[NT],
                                          const uint4* const (&xl)[NT], int64_t k) {
  constexpr int XV = elems_16<K>() / 8;  // uint4 of activations per part per round
  const uint32_t w0[4] = {r.v[0].x, r.v[0].y, r.v[0].z, r.v[0].w};
  const uint32_t w1[4] = {r.v[1].x, r.v[1].y, r.v[1].z, r.v[1].w};
  if constexpr (K == weight_kind::bf16) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint4 h = __ldg(xh[j] + k / 8);
      fp4mma::mma_bf16(acc[j], w0[0], w1[0], w0[1], w1[1], h.x, h.y);
      fp4mma::mma_bf16(acc[j], w0[2], w1[2], w0[3], w1[3], h.z, h.w);
      if constexpr (SPLIT) {
        const uint4 l = __ldg(xl[j] + k / 8);
        fp4mma::mma_bf16(acc[j], w0[0], w1[0], w0[1], w1[1], l.x, l.y);
        fp4mma::mma_bf16(acc[j], w0[2], w1[2], w0[3], w1[3], l.z, l.w);
      }
    }
  } else if constexpr (K == weight_kind::fp8_block) {
    uint32_t a[4][4];  // per word: P0(g), P0(g+8), P1(g), P1(g+8)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      a[w][0] = e4m3_pair(w0[w]);
      a[w][1] = e4m3_pair(w1[w]);
      a[w][2] = e4m3_pair(w0[w] >> 8);
      a[w][3] = e4m3_pair(w1[w] >> 8);
    }
    const float s = __uint_as_float(r.s[0]);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int v = 0; v < XV; ++v) {
        const uint4 h = __ldg(xh[j] + k / 8 + v);
        fp4mma::mma_bf16(t, a[2 * v][0], a[2 * v][1], a[2 * v][2], a[2 * v][3], h.x, h.y);
        fp4mma::mma_bf16(t, a[2 * v + 1][0], a[2 * v + 1][1], a[2 * v + 1][2], a[2 * v + 1][3], h.z,
                         h.w);
        if constexpr (SPLIT) {
          const uint4 l = __ldg(xl[j] + k / 8 + v);
          fp4mma::mma_bf16(t, a[2 * v][0], a[2 * v][1], a[2 * v][2], a[2 * v][3], l.x, l.y);
          fp4mma::mma_bf16(t, a[2 * v + 1][0], a[2 * v + 1][1], a[2 * v + 1][2], a[2 * v + 1][3],
                           l.z, l.w);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[j][i] = fmaf(t[i], s, acc[j][i]);
    }
  } else {
    uint32_t m1[2][2], m2[2];
    bool two = false;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if constexpr (K == weight_kind::mxfp4) {
        const fp4mma::mx_scale sc = fp4mma::mx_scale_of(r.s[i]);
        m1[i][0] = m1[i][1] = sc.m1;
        m2[i] = sc.m2;
        two |= sc.m2 != 0x3F803F80u;
      } else {
        m1[i][0] = fp4mma::nv_scale_of(r.s[i] & 0xFFu);
        m1[i][1] = fp4mma::nv_scale_of(r.s[i] >> 8);
        m2[i] = 0x3F803F80u;
      }
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t p0[4] = {fp4mma::e2m1_pair<0>(w0[w]), fp4mma::e2m1_pair<1>(w0[w]),
                        fp4mma::e2m1_pair<2>(w0[w]), fp4mma::e2m1_pair<3>(w0[w])};
      uint32_t p1[4] = {fp4mma::e2m1_pair<0>(w1[w]), fp4mma::e2m1_pair<1>(w1[w]),
                        fp4mma::e2m1_pair<2>(w1[w]), fp4mma::e2m1_pair<3>(w1[w])};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        p0[i] = fp4mma::mul_bf16x2(p0[i], m1[0][w >> 1]);
        p1[i] = fp4mma::mul_bf16x2(p1[i], m1[1][w >> 1]);
      }
      if (two) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          p0[i] = fp4mma::mul_bf16x2(p0[i], m2[0]);
          p1[i] = fp4mma::mul_bf16x2(p1[i], m2[1]);
        }
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const uint4 h = __ldg(xh[j] + k / 8 + w);
        fp4mma::mma_bf16(acc[j], p0[0], p1[0], p0[1], p1[1], h.x, h.y);
        fp4mma::mma_bf16(acc[j], p0[2], p1[2], p0[3], p1[3], h.z, h.w);
        if constexpr (SPLIT) {
          const uint4 l = __ldg(xl[j] + k / 8 + w);
          fp4mma::mma_bf16(acc[j], p0[0], p1[0], p0[1], p1[1], l.x, l.y);
          fp4mma::mma_bf16(acc[j], p0[2], p1[2], p0[3], p1[3], l.z, l.w);
        }
      }
    }
  }
}

template <weight_kind K, bool SPLIT, int NT>
__global__ void __launch_bounds__(k_threads)
    linear_decode_kernel(const uint16_t* x_hi, const uint16_t* x_lo, int tokens, dense_weight w,
                         int rt, void* y, bool y_bf16) {
  constexpr int E = elems_16<K>();
  constexpr int ROUND = 4 * E;
  __shared__ float partial[k_warps - 1][NT][4][k_warp_size];
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int ks = k_warps / rt;
  const int tile = warp % rt, kpart = warp / rt;
  const int g = lane / 4, q = lane % 4;
  const int64_t r0 = (int64_t(blockIdx.x) * rt + tile) * 16;
  const int64_t rounds = w.cols / ROUND;
  const int64_t rb = rounds * kpart / ks, re = rounds * (kpart + 1) / ks;
  const uint4* xh[NT];
  const uint4* xl[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int64_t t = min(8 * j + g, tokens - 1);  // clamped columns are never stored
    xh[j] = reinterpret_cast<const uint4*>(x_hi + t * w.cols);
    xl[j] = reinterpret_cast<const uint4*>(x_lo + t * w.cols);
  }
  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[j][i] = 0.0f;

  round_w<K> cur, nxt;
  if (rb < re) load_round<K>(cur, w, r0 + g, rb * ROUND + q * E);
  for (int64_t r = rb; r < re; ++r) {
    if (r + 1 < re) load_round<K>(nxt, w, r0 + g, (r + 1) * ROUND + q * E);
    mma_round<K, SPLIT, NT>(acc, cur, xh, xl, r * ROUND + q * E);
    cur = nxt;
  }
  if (ks > 1) {
    if (kpart > 0)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[kpart - 1][j][i][lane] = acc[j][i];
    __syncthreads();
    if (kpart > 0) return;
    for (int p = 1; p < ks; ++p)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[j][i] += partial[p - 1][j][i][lane];
  }
  const float post =
      K == weight_kind::nvfp4 ? (w.global_p ? __ldg(w.global_p) : 1.0f) * 256.0f : 1.0f;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int col = 8 * j + 2 * q + (i & 1);
      if (col >= tokens) continue;
      const int64_t at = int64_t(col) * w.rows + r0 + g + 8 * (i >> 1);
      if (y_bf16)
        static_cast<__nv_bfloat16*>(y)[at] = __float2bfloat16_rn(acc[j][i] * post);
      else
        static_cast<float*>(y)[at] = acc[j][i] * post;
    }
}

template <weight_kind K, bool SPLIT>
cudaError_t launch(const uint16_t* hi, const uint16_t* lo, int64_t tokens, const dense_weight& w,
                   void* y, bool y_bf16, cudaStream_t stream) {
  // Row tiles per block: 4 (K whole per warp) when that still gives >= 4 blocks per SM, else
  // 1 tile with K split over the 4 warps.
  const int rt = (w.rows % 64 == 0 && w.rows / 64 >= 4 * current_device_sm_count()) ? 4 : 1;
  const dim3 grid(unsigned(w.rows / (16 * rt)));
  const int nt = int(ceil_div(tokens, 8));
#define DSV4_LD(NT)                  \
  linear_decode_kernel<K, SPLIT, NT> \
      <<<grid, k_threads, 0, stream>>>(hi, lo, int(tokens), w, rt, y, y_bf16)
  if (nt == 1)
    DSV4_LD(1);
  else if (nt == 2)
    DSV4_LD(2);
  else if (nt <= 4)
    DSV4_LD(4);
  else
    DSV4_LD(8);
#undef DSV4_LD
  return cudaGetLastError();
}

int64_t round_k(weight_kind k) {
  return k == weight_kind::bf16 ? 32 : k == weight_kind::fp8_block ? 64 : 128;
}

}  // namespace

bool linear_decode_supported(const device_weight& w) {
  if (w.kind == weight_kind::f32 || validate_weight(w) != cudaSuccess) return false;
  return w.rows % 16 == 0 && w.cols % round_k(w.kind) == 0 && aligned_16(w.data) &&
         w.rows <= int64_t(65535) * 16 * 4;
}

size_t linear_decode_workspace_bytes(int64_t tokens, int64_t cols) {
  return size_t(2) * ((size_t(std::max<int64_t>(tokens, 1) * cols) * 2 + 255) / 256 * 256);
}

template <typename act_t, typename out_t>
cudaError_t linear_decode(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                          void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, __nv_bfloat16>);
  constexpr bool y_bf16 = std::is_same_v<out_t, __nv_bfloat16>;
  if (tokens < 0 || !x || !y || !workspace) return cudaErrorInvalidValue;
  if (tokens > k_linear_decode_max_tokens || !linear_decode_supported(w))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  if (workspace_bytes < linear_decode_workspace_bytes(tokens, w.cols) || !aligned_16(workspace))
    return cudaErrorInvalidValue;
  auto* hi = static_cast<uint16_t*>(workspace);
  auto* lo = hi + (size_t(tokens * w.cols) * 2 + 255) / 256 * 256 / 2;
  const dense_weight dw{
      static_cast<const uint8_t*>(w.data),
      static_cast<const uint8_t*>(w.scale),
      w.global_scale,
      w.rows,
      w.cols,
      (w.kind == weight_kind::fp8_block || w.kind == weight_kind::mxfp4) && !w.scale_e8m0};
  constexpr bool split = std::is_same_v<act_t, float>;
  const int64_t groups = tokens * w.cols / 8;
  const int threads = 256;
#define DSV4_LD_CASE(KIND)                                                                         \
  case weight_kind::KIND:                                                                          \
    linear_decode_prepare_kernel<weight_kind::KIND, act_t>                                         \
        <<<unsigned(ceil_div(groups, threads)), threads, 0, stream>>>(x, tokens * w.cols, hi, lo); \
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;                      \
    return launch<weight_kind::KIND, split>(hi, lo, tokens, dw, y, y_bf16, stream);
  switch (w.kind) {
    DSV4_LD_CASE(bf16)
    DSV4_LD_CASE(fp8_block)
    DSV4_LD_CASE(mxfp4)
    DSV4_LD_CASE(nvfp4)
    default:
      return cudaErrorNotSupported;
  }
#undef DSV4_LD_CASE
}

template cudaError_t linear_decode<float, float>(const float*, int64_t, const device_weight&,
                                                 float*, void*, size_t, cudaStream_t);
template cudaError_t linear_decode<__nv_bfloat16, float>(const __nv_bfloat16*, int64_t,
                                                         const device_weight&, float*, void*,
                                                         size_t, cudaStream_t);
template cudaError_t linear_decode<__nv_bfloat16, __nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                                 const device_weight&,
                                                                 __nv_bfloat16*, void*, size_t,
                                                                 cudaStream_t);

}  // namespace dsv4::cuda
