// mHC kernels.
//
// hc_pre and hc_head share the collapse: per token, m_j = inv_rms * (x . fn_j) over the hc * D
// inputs (16384 for Flash) against a [mix, hc*D] f32 fn (mix = 24: 1.5 MB), the gates, the
// Sinkhorn projection and y = sum_j pre_j x_j. Two kernels, one order of every sum:
//  * hc_collapse_block_kernel (prefill sizes): one 256-thread CTA per k_hc_tokens tokens; thread
//    t accumulates, over i = t, t + 256, ..., the sum of squares and the `mix` raw dot products
//    of every token in registers; warp shuffles and the CTA's in-order sum of the warps reduce
//    them. m_j = inv_rms * (x . fn_j) equals the reference's (x * inv_rms) . fn_j up to rounding.
//    One thread per token does the sigmoids and the Sinkhorn projection (sequential, in the
//    reference's order), and the CTA writes y.
//  * hc_collapse_split_kernel (decode sizes, where the token groups leave most SMs idle: the
//    block kernel streamed fn through one SM in 64 dependent rounds and ran the Sinkhorn on one
//    thread, ~280 us per call on an H100 (ncu, flash-dims decode), most of a decode step): a
//    cluster of 8 CTAs per token group, CTA r computes the dot products j in [3r, 3r + 3) (and
//    each CTA the sum of squares) in the block kernel's per-thread / warp / CTA order, with 8
//    rounds of loads in flight, so every m_j is the block kernel's bit for bit; the CTAs copy
//    each other's m_j through distributed shared memory; rank 0 runs the Sinkhorn on the lanes
//    of a warp per token (lane j * hc + k owns comb[j][k]; each row / column sum is formed from
//    shuffles in index order: the sequential version's values); every CTA writes its share of y.
//
// hc_post: one block per (token, 256 columns); each thread holds the hc stream values of its
// column and writes the hc outputs, summing in the reference's order (post * f first, then j).
#include <algorithm>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cluster.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mhc.h"

namespace dsv4::cuda {

namespace {

constexpr int k_hc_tokens = 4;  // tokens per block of the collapse kernel
constexpr int k_hc_max_mix = (2 + k_hc_max_streams) * k_hc_max_streams;
constexpr int k_hc_threads = 256;
constexpr int k_hc_warps = k_hc_threads / k_warp_size;
constexpr int k_hc_sums = k_hc_max_mix + 1;  // mix dot products + the sum of squares
constexpr int k_hc_max_cluster = 8;  // CTAs sharing a token group at decode sizes (portable)
constexpr int k_hc_split_mix = (k_hc_max_mix + k_hc_max_cluster - 1) / k_hc_max_cluster;
static_assert(k_hc_tokens <= k_hc_warps && k_hc_max_streams * k_hc_max_streams <= k_warp_size);

__device__ __forceinline__ float sigmoid(float v) {
  return 1.0f / (1.0f + expf(-v));
}

// One CTA per group of k_hc_tokens tokens (prefill sizes; the first version, kept as it was:
// 128 registers, two CTAs per SM). head: no post / comb (mix = hc); otherwise mix = (2 + hc) * hc.
template <typename act_t>
__global__ void __launch_bounds__(k_hc_threads)
    hc_collapse_block_kernel(const act_t* x, const float* fn, const float* base, const float* scale,
                             int64_t tokens, int hc, int64_t D, int mix, bool head,
                             int sinkhorn_iters, float hc_eps, float norm_eps, act_t* y,
                             float* post, float* comb) {
  __shared__ float partial[k_hc_warps][k_hc_tokens][k_hc_sums];
  __shared__ float total[k_hc_tokens][k_hc_sums];
  __shared__ float pre[k_hc_tokens][k_hc_max_streams];
  __shared__ float c[k_hc_tokens][k_hc_max_streams * k_hc_max_streams];

  const int64_t t0 = int64_t(blockIdx.x) * k_hc_tokens;
  const int64_t n = int64_t(hc) * D;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;

  float acc[k_hc_tokens][k_hc_max_mix];
  float ss[k_hc_tokens];
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    ss[tt] = 0.0f;
#pragma unroll
    for (int j = 0; j < k_hc_max_mix; ++j) acc[tt][j] = 0.0f;
  }
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float xv[k_hc_tokens];
#pragma unroll
    for (int tt = 0; tt < k_hc_tokens; ++tt) {
      xv[tt] = t0 + tt < tokens ? act_to_f32(x[(t0 + tt) * n + i]) : 0.0f;
      ss[tt] += xv[tt] * xv[tt];
    }
#pragma unroll
    for (int j = 0; j < k_hc_max_mix; ++j) {
      if (j < mix) {
        const float f = fn[j * n + i];
#pragma unroll
        for (int tt = 0; tt < k_hc_tokens; ++tt) acc[tt][j] += xv[tt] * f;
      }
    }
  }

  // Block reduction: warp shuffles, then one thread per (token, sum) adds the warps' partials.
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
#pragma unroll
    for (int j = 0; j < k_hc_max_mix; ++j) {
      if (j < mix) {
        const float v = warp_sum(acc[tt][j]);
        if (lane == 0) partial[warp][tt][j] = v;
      }
    }
    const float v = warp_sum(ss[tt]);
    if (lane == 0) partial[warp][tt][k_hc_max_mix] = v;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < k_hc_tokens * k_hc_sums; s += blockDim.x) {
    const int tt = s / k_hc_sums;
    const int j = s % k_hc_sums;
    if (j < mix || j == k_hc_max_mix) {
      float v = 0.0f;
      for (int w = 0; w < k_hc_warps; ++w) v += partial[w][tt][j];
      total[tt][j] = v;
    }
  }
  __syncthreads();

  // Gates and Sinkhorn: thread tt owns token t0 + tt.
  if (threadIdx.x < k_hc_tokens && t0 + threadIdx.x < tokens) {
    const int tt = threadIdx.x;
    const int64_t t = t0 + tt;
    const float inv = 1.0f / sqrtf(total[tt][k_hc_max_mix] / float(n) + norm_eps);
    for (int j = 0; j < hc; ++j)
      pre[tt][j] = sigmoid(inv * total[tt][j] * scale[0] + base[j]) + hc_eps;
    if (!head) {
      for (int j = 0; j < hc; ++j)
        post[t * hc + j] = 2.0f * sigmoid(inv * total[tt][hc + j] * scale[1] + base[hc + j]);
      float* ct = c[tt];
      // comb[j][k]: softmax over k of each row j, + eps; then column normalisation; then
      // (iters - 1) rounds of row and column normalisation, + eps in each denominator.
      for (int j = 0; j < hc; ++j) {
        float mx = -INFINITY;
        for (int k = 0; k < hc; ++k) {
          const int m = 2 * hc + j * hc + k;
          ct[j * hc + k] = inv * total[tt][m] * scale[2] + base[m];
          mx = fmaxf(mx, ct[j * hc + k]);
        }
        float sum = 0.0f;
        for (int k = 0; k < hc; ++k) sum += (ct[j * hc + k] = expf(ct[j * hc + k] - mx));
        for (int k = 0; k < hc; ++k) ct[j * hc + k] = ct[j * hc + k] / sum + hc_eps;
      }
      // As the reference: the first column normalisation happens even for sinkhorn_iters 0.
      const int rounds = sinkhorn_iters > 1 ? sinkhorn_iters : 1;
      for (int it = 0; it < rounds; ++it) {
        if (it > 0) {  // rows, from the second round on
          for (int j = 0; j < hc; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < hc; ++k) sum += ct[j * hc + k];
            for (int k = 0; k < hc; ++k) ct[j * hc + k] /= sum + hc_eps;
          }
        }
        for (int k = 0; k < hc; ++k) {
          float sum = 0.0f;
          for (int j = 0; j < hc; ++j) sum += ct[j * hc + k];
          for (int j = 0; j < hc; ++j) ct[j * hc + k] /= sum + hc_eps;
        }
      }
      for (int e = 0; e < hc * hc; ++e) comb[t * hc * hc + e] = ct[e];
    }
  }
  __syncthreads();

  // y[t] = sum_j pre_j x[t, j] (x re-read: the block's tokens were just streamed, mostly cached).
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    const int64_t t = t0 + tt;
    if (t >= tokens) break;
    const act_t* xt = x + t * n;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x) {
      float v = 0.0f;
      for (int j = 0; j < hc; ++j) v += pre[tt][j] * act_to_f32(xt[j * D + i]);
      y[t * D + i] = act_from_f32<act_t>(v);
    }
  }
}

// head: no post / comb (mix = hc); otherwise mix = (2 + hc) * hc. Grid: cs CTAs (a cluster of
// cs, rank = blockIdx.x % cs) per group of k_hc_tokens tokens; CTA r computes the dot products
// j in [r * JPC, (r + 1) * JPC) (and, every CTA, the sum of squares) over all hc*D inputs, in
// the one-CTA kernel's order: thread t sums i = t, t + 256, ... in ascending order (UNROLL rounds'
// loads issued together), the warps reduce by shuffles, the CTA adds the warps in order. So every
// m_j is the one-CTA kernel's bit for bit, whatever cs.
template <typename act_t, int JPC, int UNROLL>
__global__ void __launch_bounds__(k_hc_threads)
    hc_collapse_split_kernel(const act_t* x, const float* fn, const float* base, const float* scale,
                             int64_t tokens, int hc, int64_t D, int mix, bool head,
                             int sinkhorn_iters, float hc_eps, float norm_eps, act_t* y,
                             float* post, float* comb, int cs) {
  __shared__ float partial[k_hc_warps][k_hc_tokens][JPC + 1];
  __shared__ float total[k_hc_tokens][JPC + 1];   // this CTA's sums, read by the cluster
  __shared__ float sums[k_hc_tokens][k_hc_sums];  // all of them (sum of squares last)
  __shared__ float pre[k_hc_tokens][k_hc_max_streams];

  const int rank = int(blockIdx.x) % cs;
  const int64_t t0 = int64_t(blockIdx.x / cs) * k_hc_tokens;
  const int64_t n = int64_t(hc) * D;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int j0 = rank * JPC;

  float acc[k_hc_tokens][JPC];
  float ss[k_hc_tokens];
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    ss[tt] = 0.0f;
#pragma unroll
    for (int j = 0; j < JPC; ++j) acc[tt][j] = 0.0f;
  }
  const int64_t step = int64_t(blockDim.x);
  for (int64_t i = threadIdx.x; i < n; i += step * UNROLL) {
    float xv[UNROLL][k_hc_tokens], fv[UNROLL][JPC];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t iu = i + u * step;
#pragma unroll
      for (int tt = 0; tt < k_hc_tokens; ++tt)
        xv[u][tt] = iu < n && t0 + tt < tokens ? act_to_f32(x[(t0 + tt) * n + iu]) : 0.0f;
#pragma unroll
      for (int j = 0; j < JPC; ++j)
        fv[u][j] = iu < n && j0 + j < mix ? fn[(j0 + j) * n + iu] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (i + u * step >= n) break;
#pragma unroll
      for (int tt = 0; tt < k_hc_tokens; ++tt) ss[tt] += xv[u][tt] * xv[u][tt];
#pragma unroll
      for (int j = 0; j < JPC; ++j) {
        if (j0 + j < mix) {
#pragma unroll
          for (int tt = 0; tt < k_hc_tokens; ++tt) acc[tt][j] += xv[u][tt] * fv[u][j];
        }
      }
    }
  }

  // Block reduction: warp shuffles, then one thread per (token, sum) adds the warps' partials.
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
#pragma unroll
    for (int j = 0; j < JPC; ++j) {
      if (j0 + j < mix) {
        const float v = warp_sum(acc[tt][j]);
        if (lane == 0) partial[warp][tt][j] = v;
      }
    }
    const float v = warp_sum(ss[tt]);
    if (lane == 0) partial[warp][tt][JPC] = v;
  }
  __syncthreads();
  for (int s = threadIdx.x; s < k_hc_tokens * (JPC + 1); s += blockDim.x) {
    const int tt = s / (JPC + 1);
    const int j = s % (JPC + 1);
    if (j0 + j < mix || j == JPC) {
      float v = 0.0f;
      for (int w = 0; w < k_hc_warps; ++w) v += partial[w][tt][j];
      total[tt][j] = v;
    }
  }
  if (cs > 1)
    cluster::sync();
  else
    __syncthreads();
  // Every m_j from the CTA that computed it (a copy: no arithmetic), the sum of squares from this
  // CTA (every CTA computed the same one).
  for (int s = threadIdx.x; s < k_hc_tokens * k_hc_sums; s += blockDim.x) {
    const int tt = s / k_hc_sums;
    const int j = s % k_hc_sums;
    if (j == k_hc_max_mix) {
      sums[tt][j] = total[tt][JPC];
    } else if (j < mix) {
      const int owner = j / JPC;
      if (owner == rank) {
        sums[tt][j] = total[tt][j - j0];
      } else {
        const uint32_t local = uint32_t(__cvta_generic_to_shared(&total[tt][j - owner * JPC]));
        sums[tt][j] = cluster::load_f(cluster::map(local, uint32_t(owner)));
      }
    }
  }
  __syncthreads();

  // Gates (every CTA: its share of y needs pre) and, in rank 0, post and the Sinkhorn projection:
  // warp tt owns token t0 + tt.
  if (warp < k_hc_tokens && t0 + warp < tokens) {
    const int tt = warp;
    const int64_t t = t0 + tt;
    const float inv = 1.0f / sqrtf(sums[tt][k_hc_max_mix] / float(n) + norm_eps);
    if (lane < hc) pre[tt][lane] = sigmoid(inv * sums[tt][lane] * scale[0] + base[lane]) + hc_eps;
    if (!head && rank == 0) {
      if (lane < hc)
        post[t * hc + lane] =
            2.0f * sigmoid(inv * sums[tt][hc + lane] * scale[1] + base[hc + lane]);
      // comb[j][k] (lane e = j * hc + k): softmax over k of each row j, + eps; then column
      // normalisation; then (iters - 1) rounds of row and column normalisation, + eps in each
      // denominator. Row / column values come by shuffles and are summed in index order.
      const int e = lane < hc * hc ? lane : 0;
      const int j = e / hc, k = e % hc;
      const int m = 2 * hc + e;
      float ct = inv * sums[tt][m] * scale[2] + base[m];
      auto row_sum = [&](float v) {
        float sum = 0.0f;
        for (int q = 0; q < hc; ++q) sum += __shfl_sync(0xffffffffu, v, j * hc + q);
        return sum;
      };
      auto col_sum = [&](float v) {
        float sum = 0.0f;
        for (int q = 0; q < hc; ++q) sum += __shfl_sync(0xffffffffu, v, q * hc + k);
        return sum;
      };
      float mx = -INFINITY;
      for (int q = 0; q < hc; ++q) mx = fmaxf(mx, __shfl_sync(0xffffffffu, ct, j * hc + q));
      ct = expf(ct - mx);
      ct = ct / row_sum(ct) + hc_eps;
      // As the reference: the first column normalisation happens even for sinkhorn_iters 0.
      const int rounds = sinkhorn_iters > 1 ? sinkhorn_iters : 1;
      for (int it = 0; it < rounds; ++it) {
        if (it > 0) ct /= row_sum(ct) + hc_eps;  // rows, from the second round on
        ct /= col_sum(ct) + hc_eps;
      }
      if (lane < hc * hc) comb[t * hc * hc + lane] = ct;
    }
  }
  __syncthreads();

  // This CTA's share of y[t] = sum_j pre_j x[t, j] (x re-read: mostly cached).
  const int64_t dchunk = (D + cs - 1) / cs;
  const int64_t d0 = rank * dchunk, d1 = min(D, d0 + dchunk);
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    const int64_t t = t0 + tt;
    if (t >= tokens) break;
    const act_t* xt = x + t * n;
    for (int64_t i = d0 + threadIdx.x; i < d1; i += blockDim.x) {
      float v = 0.0f;
      for (int j = 0; j < hc; ++j) v += pre[tt][j] * act_to_f32(xt[j * D + i]);
      y[t * D + i] = act_from_f32<act_t>(v);
    }
  }
  // No CTA leaves while another may still read its `total`.
  if (cs > 1) cluster::sync();
}

constexpr int k_hc_post_threads = 256;

// Grid (column blocks, tokens), both grid-strided; the first version's one block per token left
// a decode step's 1-4 blocks looping over D (H100, test_backend_ops --perf: T=1 14.0 -> 6.2 us).
template <typename act_t>
__global__ void __launch_bounds__(k_hc_post_threads)
    hc_post_kernel(const act_t* x, const act_t* f, const float* post, const float* comb,
                   int64_t tokens, int hc, int64_t D, act_t* out) {
  for (int64_t t = blockIdx.y; t < tokens; t += gridDim.y) {
    const act_t* xt = x + t * hc * D;
    const act_t* ft = f + t * D;
    const float* pt = post + t * hc;
    const float* ct = comb + t * hc * hc;
    act_t* ot = out + t * hc * D;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < D;
         i += int64_t(gridDim.x) * blockDim.x) {
      float xv[k_hc_max_streams];
#pragma unroll
      for (int j = 0; j < k_hc_max_streams; ++j) xv[j] = j < hc ? act_to_f32(xt[j * D + i]) : 0.0f;
      const float fv = act_to_f32(ft[i]);
      for (int k = 0; k < hc; ++k) {
        float v = pt[k] * fv;
#pragma unroll
        for (int j = 0; j < k_hc_max_streams; ++j)
          if (j < hc) v += ct[j * hc + k] * xv[j];
        ot[k * D + i] = act_from_f32<act_t>(v);
      }
    }
  }
}

template <typename act_t>
cudaError_t hc_collapse(const act_t* x, const float* fn, const float* base, const float* scale,
                        int64_t tokens, int64_t hc, int64_t D, bool head, int64_t sinkhorn_iters,
                        float hc_eps, float norm_eps, act_t* y, float* post, float* comb,
                        cudaStream_t stream) {
  if (tokens < 0 || hc <= 0 || hc > k_hc_max_streams || D <= 0 || sinkhorn_iters < 0 ||
      sinkhorn_iters > INT32_MAX)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t blocks = ceil_div(tokens, k_hc_tokens);
  if (blocks > INT32_MAX) return cudaErrorInvalidValue;
  const int mix = head ? int(hc) : int((2 + hc) * hc);
  // Decode sizes (the token groups leave most SMs idle): a cluster of 8 CTAs per group, 3 of the
  // <= 24 dot products each, 8 rounds of loads in flight; else one CTA computes all of them.
  const bool split = blocks * k_hc_max_cluster * 2 <= int64_t(current_device_sm_count());
  const int cs = split ? k_hc_max_cluster : 1;
  if (blocks * cs > INT32_MAX) return cudaErrorInvalidValue;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = unsigned(cs);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks * cs));
  config.blockDim = dim3(k_hc_threads);
  config.stream = stream;
  config.attrs = &cluster;
  config.numAttrs = cs > 1 ? 1 : 0;
  const cudaError_t e =
      split ? cudaLaunchKernelEx(&config, hc_collapse_split_kernel<act_t, k_hc_split_mix, 8>, x, fn,
                                 base, scale, tokens, int(hc), D, mix, head, int(sinkhorn_iters),
                                 hc_eps, norm_eps, y, post, comb, cs)
            : cudaLaunchKernelEx(&config, hc_collapse_block_kernel<act_t>, x, fn, base, scale,
                                 tokens, int(hc), D, mix, head, int(sinkhorn_iters), hc_eps,
                                 norm_eps, y, post, comb);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

}  // namespace

template <typename act_t>
cudaError_t hc_pre(const act_t* x, const float* fn, const float* base, const float* scale,
                   int64_t tokens, int64_t hc, int64_t D, int64_t sinkhorn_iters, float hc_eps,
                   float norm_eps, act_t* y, float* post, float* comb, cudaStream_t stream) {
  return hc_collapse(x, fn, base, scale, tokens, hc, D, false, sinkhorn_iters, hc_eps, norm_eps, y,
                     post, comb, stream);
}

template <typename act_t>
cudaError_t hc_head(const act_t* x, const float* fn, const float* base, const float* scale,
                    int64_t tokens, int64_t hc, int64_t D, float hc_eps, float norm_eps, act_t* y,
                    cudaStream_t stream) {
  return hc_collapse(x, fn, base, scale, tokens, hc, D, true, 0, hc_eps, norm_eps, y, nullptr,
                     nullptr, stream);
}

template <typename act_t>
cudaError_t hc_post(const act_t* x, const act_t* f, const float* post, const float* comb,
                    int64_t tokens, int64_t hc, int64_t D, act_t* out, cudaStream_t stream) {
  if (tokens < 0 || hc <= 0 || hc > k_hc_max_streams || D <= 0) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const dim3 grid(unsigned(std::min<int64_t>(ceil_div(D, k_hc_post_threads), 1024)),
                  unsigned(std::min<int64_t>(tokens, 65535)));
  hc_post_kernel<<<grid, k_hc_post_threads, 0, stream>>>(x, f, post, comb, tokens, int(hc), D, out);
  return cudaGetLastError();
}

#define DSV4_MHC_INSTANTIATE(T)                                                                \
  template cudaError_t hc_pre<T>(const T*, const float*, const float*, const float*, int64_t,  \
                                 int64_t, int64_t, int64_t, float, float, T*, float*, float*,  \
                                 cudaStream_t);                                                \
  template cudaError_t hc_head<T>(const T*, const float*, const float*, const float*, int64_t, \
                                  int64_t, int64_t, float, float, T*, cudaStream_t);           \
  template cudaError_t hc_post<T>(const T*, const T*, const float*, const float*, int64_t,     \
                                  int64_t, int64_t, T*, cudaStream_t);
DSV4_MHC_INSTANTIATE(float)
DSV4_MHC_INSTANTIATE(__nv_bfloat16)
#undef DSV4_MHC_INSTANTIATE

}  // namespace dsv4::cuda
