// Sparse attention, first version (f32 or bf16 activations, f32 softmax and accumulation). One CTA
// per (token, head group): the token's key rows are staged in shared memory k_key_tile at a time
// and every warp of the CTA scores them against its heads (a warp owns k_heads_per_warp heads; lane
// l holds channels l, l + 32, ... of q and of the output accumulators), so each key row is read
// from memory once per head group. Online softmax in f32 (running max m, running denominator,
// accumulators rescaled by e^(m_old - m_new)); the sink enters as a key without value at the end:
// den += e^(sink - m). m starts at the sink, so a token without keys ends with o = 0 / (0 + 1) = 0,
// as on the CPU.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/attention.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/paged_rows.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_key_tile = 16;  // keys staged per round (<= 32: lane j holds key j's score)
constexpr int k_max_warps = 16;
constexpr int k_max_head_dim = 512;
constexpr int k_min_warps = 2;
constexpr int64_t k_target_blocks = 2 * 132;  // two CTAs per SM of an H100 SXM

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = k_warp_size / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Slot i < slot_count(src, t) of token t -> pool row pointer, or null (skipped / invalid).
template <typename act_t>
__device__ __forceinline__ int64_t slot_count(const kv_rows<act_t>& src, int64_t t) {
  if (!src.pool) return 0;
  if (src.rows) return src.rows_width;
  const int64_t n = src.n_visible[t];
  return n > 0 ? n : 0;
}

template <typename act_t>
__device__ __forceinline__ const act_t* slot_row(const kv_rows<act_t>& src, int64_t t, int64_t i,
                                                 int64_t d) {
  int64_t row;
  if (src.rows) {
    row = src.rows[t * src.rows_width + i];
  } else {
    row = paged_pool_row(
        paged_table_row(src.block_table, src.table_rows, src.table_width, src.token_seq[t]),
        src.table_width, src.block_size, src.pool_rows, i);
  }
  if (row < 0 || row >= src.pool_rows) return nullptr;
  return src.pool + row * d;
}

// CPL: channels per lane (head_dim <= 32 * CPL); HPW: heads per warp.
// Keys are staged as f32 whatever act_t (converted once per CTA, not once per head).
template <typename act_t, int CPL, int HPW>
__global__ void __launch_bounds__(k_max_warps* k_warp_size)
    sparse_attention_kernel(const act_t* q, int64_t heads, int64_t d, kv_rows<act_t> window,
                            kv_rows<act_t> compressed, const float* sinks, float scale, act_t* out,
                            int64_t groups, bool vec4) {
  extern __shared__ float4 key_smem[];               // float4: 16-byte aligned for the vector loads
  float* keys = reinterpret_cast<float*>(key_smem);  // [k_key_tile, d]
  __shared__ const act_t* tile_ptr[k_key_tile];
  const int64_t t = blockIdx.x / groups;
  const int64_t group = blockIdx.x % groups;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int warps = blockDim.x / k_warp_size;
  const int64_t head0 = (group * warps + warp) * HPW;

  float qr[HPW][CPL], acc[HPW][CPL], m[HPW], den[HPW];
#pragma unroll
  for (int j = 0; j < HPW; ++j) {
    const int64_t h = head0 + j;
    m[j] = h < heads ? sinks[h] : 0.0f;
    den[j] = 0.0f;
#pragma unroll
    for (int i = 0; i < CPL; ++i) {
      const int64_t c = lane + int64_t(i) * k_warp_size;
      qr[j][i] = (h < heads && c < d) ? act_to_f32(q[(t * heads + h) * d + c]) : 0.0f;
      acc[j][i] = 0.0f;
    }
  }

  const int64_t n_window = slot_count(window, t);
  const int64_t total = n_window + slot_count(compressed, t);
  for (int64_t s0 = 0; s0 < total; s0 += k_key_tile) {
    __syncthreads();  // the previous tile is consumed
    if (threadIdx.x < k_key_tile) {
      const int64_t s = s0 + threadIdx.x;
      const act_t* p = nullptr;
      if (s < n_window)
        p = slot_row(window, t, s, d);
      else if (s < total)
        p = slot_row(compressed, t, s - n_window, d);
      tile_ptr[threadIdx.x] = p;
    }
    __syncthreads();
    if (vec4) {
      const int64_t d4 = d / 4;
      for (int64_t x = threadIdx.x; x < k_key_tile * d4; x += blockDim.x) {
        const act_t* p = tile_ptr[x / d4];
        if (p) reinterpret_cast<float4*>(keys)[x] = load_act4(p + (x % d4) * 4);
      }
    } else {
      for (int64_t x = threadIdx.x; x < k_key_tile * d; x += blockDim.x) {
        const act_t* p = tile_ptr[x / d];
        if (p) keys[x] = act_to_f32(p[x % d]);
      }
    }
    __syncthreads();

#pragma unroll
    for (int j = 0; j < HPW; ++j) {
      if (head0 + j >= heads) break;  // warp-uniform
      // Lane kk ends up holding key kk's logit (-inf for a skipped slot).
      float s_lane = -INFINITY;
#pragma unroll
      for (int kk = 0; kk < k_key_tile; ++kk) {
        if (!tile_ptr[kk]) continue;  // block-uniform
        const float* k = keys + kk * d;
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < CPL; ++i) {
          const int64_t c = lane + int64_t(i) * k_warp_size;
          if (c < d) part += qr[j][i] * k[c];
        }
        const float s = warp_sum(part) * scale;
        if (lane == kk) s_lane = s;
      }
      const float m_new = fmaxf(m[j], warp_max(s_lane));
      // Equal maxima (also both -inf): no rescale, and no inf - inf.
      const float corr = m_new == m[j] ? 1.0f : expf(m[j] - m_new);
      const float p_lane = s_lane == -INFINITY ? 0.0f : expf(s_lane - m_new);
      den[j] = den[j] * corr + warp_sum(p_lane);
      m[j] = m_new;
#pragma unroll
      for (int i = 0; i < CPL; ++i) acc[j][i] *= corr;
#pragma unroll
      for (int kk = 0; kk < k_key_tile; ++kk) {
        const float p = __shfl_sync(0xffffffffu, p_lane, kk);
        if (!tile_ptr[kk]) continue;
        const float* k = keys + kk * d;
#pragma unroll
        for (int i = 0; i < CPL; ++i) {
          const int64_t c = lane + int64_t(i) * k_warp_size;
          if (c < d) acc[j][i] += p * k[c];
        }
      }
    }
  }

#pragma unroll
  for (int j = 0; j < HPW; ++j) {
    const int64_t h = head0 + j;
    if (h >= heads) break;
    const float total_den = den[j] + expf(sinks[h] - m[j]);
#pragma unroll
    for (int i = 0; i < CPL; ++i) {
      const int64_t c = lane + int64_t(i) * k_warp_size;
      if (c < d) out[(t * heads + h) * d + c] = act_from_f32<act_t>(acc[j][i] / total_den);
    }
  }
}

template <typename act_t, int CPL>
cudaError_t launch_cpl(const act_t* q, int64_t tokens, int64_t heads, int64_t d,
                       const kv_rows<act_t>& window, const kv_rows<act_t>& compressed,
                       const float* sinks, float scale, act_t* out, bool vec4,
                       cudaStream_t stream) {
  // Two heads per warp when there are enough heads to fill the CTA that way and their state fits
  // the registers (at 16 channels per lane, 2 x (16 q + 16 accumulators) spills at 512 threads).
  const bool two = heads >= 2 * 4 && CPL <= 8;
  const int hpw = two ? 2 : 1;
  int64_t warps = ceil_div(heads, hpw);
  if (warps > k_max_warps) warps = k_max_warps;
  // Decode-sized steps: fewer heads per CTA until the grid covers the GPU (the per-warp work is
  // the same; the token's keys are then re-read by each CTA, mostly from L2).
  while (warps > k_min_warps && tokens * ceil_div(heads, warps * hpw) < k_target_blocks) warps /= 2;
  const int64_t groups = ceil_div(heads, warps * hpw);
  const int64_t blocks = tokens * groups;
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  const size_t smem = size_t(k_key_tile) * size_t(d) * sizeof(float);
  const dim3 threads(unsigned(warps * k_warp_size));
  if constexpr (CPL <= 8) {
    if (two) {
      sparse_attention_kernel<act_t, CPL, 2><<<unsigned(blocks), threads, smem, stream>>>(
          q, heads, d, window, compressed, sinks, scale, out, groups, vec4);
      return cudaGetLastError();
    }
  }
  sparse_attention_kernel<act_t, CPL, 1><<<unsigned(blocks), threads, smem, stream>>>(
      q, heads, d, window, compressed, sinks, scale, out, groups, vec4);
  return cudaGetLastError();
}

template <typename act_t>
bool valid_source(const kv_rows<act_t>& s) {
  if (!s.pool || s.pool_rows < 0) return false;
  if (s.rows) return s.rows_width >= 0;
  return s.block_table && s.token_seq && s.n_visible && s.block_size > 0 && s.table_rows >= 0 &&
         s.table_width >= 0;
}

}  // namespace

template <typename act_t>
cudaError_t sparse_attention(const act_t* q, int64_t tokens, int64_t heads, int64_t head_dim,
                             const kv_rows<act_t>& window, const kv_rows<act_t>* compressed,
                             const float* sinks, float scale, act_t* out, cudaStream_t stream) {
  if (tokens < 0 || heads <= 0 || head_dim <= 0 || head_dim > k_max_head_dim ||
      !valid_source(window) || (compressed && !valid_source(*compressed)))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const kv_rows<act_t> none{};  // pool null: no slots
  const kv_rows<act_t>& comp = compressed ? *compressed : none;
  const bool vec4 = head_dim % 4 == 0 && act4_aligned<act_t>(window.pool) &&
                    (!comp.pool || act4_aligned<act_t>(comp.pool));
  const int64_t d = head_dim;
  if (d <= 32)
    return launch_cpl<act_t, 1>(q, tokens, heads, d, window, comp, sinks, scale, out, vec4, stream);
  if (d <= 64)
    return launch_cpl<act_t, 2>(q, tokens, heads, d, window, comp, sinks, scale, out, vec4, stream);
  if (d <= 128)
    return launch_cpl<act_t, 4>(q, tokens, heads, d, window, comp, sinks, scale, out, vec4, stream);
  if (d <= 256)
    return launch_cpl<act_t, 8>(q, tokens, heads, d, window, comp, sinks, scale, out, vec4, stream);
  return launch_cpl<act_t, 16>(q, tokens, heads, d, window, comp, sinks, scale, out, vec4, stream);
}

#define DSV4_ATTENTION_INSTANTIATE(T)                                                              \
  template cudaError_t sparse_attention<T>(const T*, int64_t, int64_t, int64_t, const kv_rows<T>&, \
                                           const kv_rows<T>*, const float*, float, T*,             \
                                           cudaStream_t);
DSV4_ATTENTION_INSTANTIATE(float)
DSV4_ATTENTION_INSTANTIATE(__nv_bfloat16)
#undef DSV4_ATTENTION_INSTANTIATE

}  // namespace dsv4::cuda
