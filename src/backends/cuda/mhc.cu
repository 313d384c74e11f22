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
//  * hc_collapse_cluster_kernel (decode sizes, where the token groups leave most SMs idle: the
//    block kernel streamed fn through one SM in 64 dependent rounds and ran the Sinkhorn on one
//    thread, ~280 us per call on an H100 (ncu, flash-dims decode), most of a decode step): a
//    cluster of 8 CTAs per token group, CTA w in the role of the block kernel's warp w and its
//    warp s computing sum s for those lanes (see the kernel), so every m_j is the block kernel's
//    bit for bit (test_backend_ops *_kernels_agree).
//
//  * the split path (decode sizes, given a workspace; automatic's choice up to
//    hc_collapse_split_auto_tokens): two launches. hc_split_sums_kernel spreads the inputs over
//    n / 128 CTAs (fn's 1.5 MB read by every SM at once, where the cluster kernel streamed it
//    through 8 SMs: ~8 us of its ~17 us at T = 3, H100 ncu) and stores each CTA's partial sums;
//    then hc_split_finish_kernel (programmatic dependent launch) adds a token's partials in chunk
//    order, forms the gates and writes y, one of its CTAs per token running the Sinkhorn
//    projection. Its sums are added in another order than the block / cluster kernels' (not
//    bit-equal to them; parity against the CPU reference); y, post and comb come from the same
//    gate functions.
//
//    hc_post_pre_norm (the model's hc_post -> hc_pre -> rms_norm chain between sub-layers) runs
//    the split path with hc_post computed inside the sums kernel (each CTA's inputs, stored as
//    x_next) and a finish kernel of one CTA per token that also applies the norm: two launches
//    instead of four. Both split kernels are programmatic dependent launches; the sums kernel
//    loads its fn values before its wait. The finish launch's gates CTA (post, comb: the
//    Sinkhorn projection, needed only by the next residual update) may instead run as
//    hc_split_gates_kernel (hc_post_pre_norm_gates), which cuda_ops puts on another stream beside
//    the next sub-layer.
//
// hc_post: one block per (token, 256 columns); each thread holds the hc stream values of its
// column and writes the hc outputs, summing in the reference's order (post * f first, then j).
#include <algorithm>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cluster.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mhc.h"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"

namespace dsv4::cuda {

namespace {

constexpr int k_hc_tokens = 4;  // tokens per block of the collapse kernel
constexpr int k_hc_max_mix = (2 + k_hc_max_streams) * k_hc_max_streams;
constexpr int k_hc_threads = 256;
constexpr int k_hc_warps = k_hc_threads / k_warp_size;
constexpr int k_hc_sums = k_hc_max_mix + 1;  // mix dot products + the sum of squares
static_assert(k_hc_tokens <= k_hc_warps && k_hc_max_streams * k_hc_max_streams <= k_warp_size);

__device__ __forceinline__ float sigmoid(float v) {
  return 1.0f / (1.0f + expf(-v));
}

// y[t, i] = sum_j pre_j x[t, j, i] in j order (xt: token t's hc streams of D), stored; every
// collapse kernel writes y through this.
template <typename act_t>
__device__ __forceinline__ float hc_y_value(const float* pre, const act_t* xt, int hc, int64_t D,
                                            int64_t i) {
  float v = 0.0f;
  for (int j = 0; j < hc; ++j) v += pre[j] * act_to_f32(xt[j * D + i]);
  return v;
}
template <typename act_t>
__device__ __forceinline__ void hc_store_y(const float* pre, const act_t* xt, int hc, int64_t D,
                                           int64_t i, act_t* yt) {
  yt[i] = act_from_f32<act_t>(hc_y_value(pre, xt, hc, D, i));
}

// One token's gates from its sums (sums[j] = x . fn_j for j < mix, sums[k_hc_max_mix] = x . x),
// on the 32 lanes of one warp; both collapse kernels call these, so their gates agree bit for bit.
__device__ __forceinline__ float hc_inv_rms(const float* sums, int64_t n, float norm_eps) {
  return 1.0f / sqrtf(sums[k_hc_max_mix] / float(n) + norm_eps);
}

// pre_j = sigmoid(inv * m_j * scale[0] + base_j) + hc_eps (lane j).
__device__ __forceinline__ void hc_token_pre(const float* sums, int64_t n, int hc,
                                             const float* base, const float* scale, float hc_eps,
                                             float norm_eps, float* pre) {
  const int lane = threadIdx.x % k_warp_size;
  const float inv = hc_inv_rms(sums, n, norm_eps);
  if (lane < hc) pre[lane] = sigmoid(inv * sums[lane] * scale[0] + base[lane]) + hc_eps;
}

// post_j = 2 sigmoid(inv * m_{hc+j} * scale[1] + base_{hc+j}) (lane j) and comb, the Sinkhorn
// projection of the remaining logits (lane e = j * hc + k owns comb[j][k]): softmax over k of
// each row j, + eps; then column normalisation; then (iters - 1) rounds of row and column
// normalisation, + eps in each denominator. Row / column values come by shuffles and are summed
// in ascending index order: the reference's sequential values, with one division per lane per
// step (one thread doing all 16 took ~22 us more per call: the IEEE divisions do not overlap).
__device__ __forceinline__ void hc_token_post_comb(const float* sums, int64_t n, int hc,
                                                   const float* base, const float* scale,
                                                   int sinkhorn_iters, float hc_eps, float norm_eps,
                                                   float* post, float* comb) {
  const int lane = threadIdx.x % k_warp_size;
  const float inv = hc_inv_rms(sums, n, norm_eps);
  if (lane < hc) post[lane] = 2.0f * sigmoid(inv * sums[hc + lane] * scale[1] + base[hc + lane]);
  const int e = lane < hc * hc ? lane : 0;
  const int j = e / hc, k = e % hc;
  const int m = 2 * hc + e;
  float ct = inv * sums[m] * scale[2] + base[m];
  // fold(v, first, step, f, init): f over v of lanes first + q * step, q = 0 .. hc - 1 in order.
  // Unrolled to k_hc_max_streams (the shuffles issue together; the folds stay in q order).
  auto fold = [&](float v, int first, int step, auto f, float init) {
    float acc = init;
#pragma unroll
    for (int q = 0; q < k_hc_max_streams; ++q) {
      const float o = __shfl_sync(0xffffffffu, v, (first + q * step) & (k_warp_size - 1));
      if (q < hc) acc = f(acc, o);
    }
    return acc;
  };
  const auto add = [](float a, float b) { return a + b; };
  auto row_sum = [&](float v) { return fold(v, j * hc, 1, add, 0.0f); };
  auto col_sum = [&](float v) { return fold(v, k, hc, add, 0.0f); };
  const float mx = fold(
      ct, j * hc, 1, [](float a, float b) { return fmaxf(a, b); }, -INFINITY);
  ct = expf(ct - mx);
  ct = ct / row_sum(ct) + hc_eps;
  // As the reference: the first column normalisation happens even for sinkhorn_iters 0.
  const int rounds = sinkhorn_iters > 1 ? sinkhorn_iters : 1;
  for (int it = 0; it < rounds; ++it) {
    if (it > 0) ct /= row_sum(ct) + hc_eps;  // rows, from the second round on
    ct /= col_sum(ct) + hc_eps;
  }
  if (lane < hc * hc) comb[lane] = ct;
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

  // Gates and Sinkhorn: warp tt owns token t0 + tt.
  if (warp < k_hc_tokens && t0 + warp < tokens) {
    const int64_t t = t0 + warp;
    hc_token_pre(total[warp], n, hc, base, scale, hc_eps, norm_eps, pre[warp]);
    if (!head)
      hc_token_post_comb(total[warp], n, hc, base, scale, sinkhorn_iters, hc_eps, norm_eps,
                         post + t * hc, comb + t * hc * hc);
  }
  __syncthreads();

  // y[t] = sum_j pre_j x[t, j] (x re-read: the block's tokens were just streamed, mostly cached).
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    const int64_t t = t0 + tt;
    if (t >= tokens) break;
    const act_t* xt = x + t * n;
    for (int64_t i = threadIdx.x; i < D; i += blockDim.x)
      hc_store_y(pre[tt], xt, hc, D, i, y + t * D);
  }
}

// Decode and small prefill sizes: a cluster of k_hc_vwarps CTAs per group of k_hc_tokens
// tokens. CTA w plays the block kernel's warp w: that kernel's thread t = 32 w + lane sums
// i = t, t + 256, ... in ascending order, so lane `lane` of every warp here sums the same i.
// Warp s of CTA w computes sum s (s < mix: x . fn_s; s == mix: x . x) of those lanes in that
// order (the same FFMA chain), reduces it with the same warp_sum, and the CTAs add the 8 warp
// partials of each sum in warp order through distributed shared memory: every m_j and the sum
// of squares are the block kernel's bit for bit. The x values of the CTA's lanes (k_hc_tokens x
// ceil(n / 256) x 32) are staged once in shared memory; each warp streams its own fn row (8 KB of
// the 64 KB for Flash) with two batches of k_hc_batch loads in flight per lane, so a CTA reads
// ~200 KB instead of the block kernel's 1.5 MB + x. Then every CTA forms pre (its share of y
// needs it); in rank 0 the gate warps go on to post and the Sinkhorn projection while the other
// warps write y.
// Measured (H100, clock64 phase stamps, T = 6 hc_pre, cycles): x staging ~7.8K, fn stream
// ~14.8K, cluster barrier + remote sums ~1.8K, Sinkhorn ~7.8K of ~34.5K. Staging fn through
// 4-byte cp.async instead (all in flight) measured 1.6x slower.
constexpr int k_hc_vwarps = k_hc_threads / k_warp_size;  // the block kernel's warps
constexpr int k_hc_cluster_threads = k_hc_sums * k_warp_size;
constexpr int k_hc_batch = 16;
constexpr int k_hc_stage_rows = 4;
static_assert(k_hc_vwarps <= 8, "a portable cluster");

// Shared memory of the cluster kernel for n = hc * D inputs: x of the CTA's lanes as f32.
inline size_t hc_cluster_smem_bytes(int64_t n) {
  return size_t(k_hc_tokens) * size_t(ceil_div(n, int64_t(k_hc_threads))) * k_warp_size * 4;
}

template <typename act_t>
__global__ void __launch_bounds__(k_hc_cluster_threads, 1)
    hc_collapse_cluster_kernel(const act_t* x, const float* fn, const float* base,
                               const float* scale, int64_t tokens, int hc, int64_t D, int mix,
                               bool head, int sinkhorn_iters, float hc_eps, float norm_eps,
                               act_t* y, float* post, float* comb) {
  extern __shared__ float xs[];                   // [k_hc_tokens][rounds][32]
  __shared__ float part[k_hc_tokens][k_hc_sums];  // this CTA's (virtual warp's) partials
  __shared__ float sums[k_hc_tokens][k_hc_sums];  // all of them (sum of squares last)
  __shared__ float pre[k_hc_tokens][k_hc_max_streams];

  const int w = int(blockIdx.x) % k_hc_vwarps;  // == the cluster rank
  const int64_t t0 = int64_t(blockIdx.x / k_hc_vwarps) * k_hc_tokens;
  const int64_t n = int64_t(hc) * D;
  const int rounds = int((n + k_hc_threads - 1) / k_hc_threads);
  const int lane = threadIdx.x % k_warp_size;
  const int s = threadIdx.x / k_warp_size;  // the sum this warp computes (mix: sum of squares)
  const bool sums_one = s <= mix;           // hc_head: warps past mix only stage x and write y
  const int64_t i0 = int64_t(w) * k_warp_size + lane;

  // This warp's first fn batch is independent of the x staging: issue it first.
  const float* f_row = fn + int64_t(s < mix ? s : 0) * n + i0;
  float fb[2][k_hc_batch];
  auto load_batch = [&](float(&f)[k_hc_batch], int m0) {
#pragma unroll
    for (int b = 0; b < k_hc_batch; ++b) {
      const int64_t i = i0 + int64_t(m0 + b) * k_hc_threads;
      f[b] = s < mix && i < n ? __ldg(f_row + int64_t(m0 + b) * k_hc_threads) : 0.0f;
    }
  };
  load_batch(fb[0], 0);
  // Stage x: row r = tt * rounds + m is the 32 values at m * 256 + 32 w of token t0 + tt (one
  // 128-byte load per warp); k_hc_stage_rows rows per warp in flight (a loop that stored each
  // value before loading the next waited one memory latency per row).
  {
    const int valid = int(min(int64_t(k_hc_tokens), tokens - t0));
    const int rows = valid * rounds;
    const int warps = int(blockDim.x) / k_warp_size;
    for (int r0 = s; r0 < rows; r0 += warps * k_hc_stage_rows) {
      float v[k_hc_stage_rows];
#pragma unroll
      for (int u = 0; u < k_hc_stage_rows; ++u) {
        const int r = r0 + u * warps;
        const int tt = r / rounds, m = r % rounds;
        const int64_t i = int64_t(m) * k_hc_threads + i0;
        v[u] = r < rows && i < n ? act_to_f32(x[(t0 + tt) * n + i]) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < k_hc_stage_rows; ++u) {
        const int r = r0 + u * warps;
        if (r < rows) xs[r * k_warp_size + lane] = v[u];
      }
    }
    // Rows of absent tokens (the last group's) are never read (see VT below).
  }
  __syncthreads();

  float acc[k_hc_tokens];
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) acc[tt] = 0.0f;
  // The block kernel's order: i ascending, acc += x * f (ss += x * x), one FFMA per step.
  // VT: the group's tokens present (the last group may have fewer): the other accumulators stay
  // zero, and a T = 1 step does a quarter of the shared-memory reads and FFMAs.
  auto stream = [&]<int VT>() {
    auto consume = [&](const float(&f)[k_hc_batch], int m0) {
#pragma unroll
      for (int b = 0; b < k_hc_batch; ++b) {
        const int m = m0 + b;
        if (i0 + int64_t(m) * k_hc_threads >= n) break;
#pragma unroll
        for (int tt = 0; tt < VT; ++tt) {
          const float xv = xs[(tt * rounds + m) * k_warp_size + lane];
          if (s < mix)
            acc[tt] += xv * f[b];
          else
            acc[tt] += xv * xv;
        }
      }
    };
    for (int m0 = 0; m0 < rounds; m0 += 2 * k_hc_batch) {
      if (m0 + k_hc_batch < rounds) load_batch(fb[1], m0 + k_hc_batch);
      consume(fb[0], m0);
      if (m0 + 2 * k_hc_batch < rounds) load_batch(fb[0], m0 + 2 * k_hc_batch);
      if (m0 + k_hc_batch < rounds) consume(fb[1], m0 + k_hc_batch);
    }
  };
  static_assert(k_hc_tokens == 4, "the dispatch below");
  if (sums_one) {
    const int64_t present = tokens - t0;
    if (present >= 4)
      stream.template operator()<4>();
    else if (present == 3)
      stream.template operator()<3>();
    else if (present == 2)
      stream.template operator()<2>();
    else
      stream.template operator()<1>();
  }
#pragma unroll
  for (int tt = 0; tt < k_hc_tokens; ++tt) {
    const float v = warp_sum(acc[tt]);
    if (lane == 0 && sums_one) part[tt][s == mix ? k_hc_max_mix : s] = v;
  }
  cluster::sync();

  // The sums this CTA needs (rank 0: all; the others: pre's and the sum of squares), each the
  // block kernel's in-order sum of the 8 warp partials.
  for (int e = threadIdx.x; e < k_hc_tokens * k_hc_sums; e += blockDim.x) {
    const int tt = e / k_hc_sums;
    const int j = e % k_hc_sums;
    if (j == k_hc_max_mix || j < (w == 0 ? mix : hc)) {
      const uint32_t local = uint32_t(__cvta_generic_to_shared(&part[tt][j]));
      float v = 0.0f;
      for (int r = 0; r < k_hc_vwarps; ++r)
        v += r == w ? part[tt][j] : cluster::load_f(cluster::map(local, uint32_t(r)));
      sums[tt][j] = v;
    }
  }
  __syncthreads();

  // Gates: warp tt for token t0 + tt; in rank 0 the same warps then compute post and the
  // Sinkhorn projection (a serial chain of ~40 divisions) while the other warps write y.
  const bool gate_warp = s < k_hc_tokens && t0 + s < tokens;
  if (gate_warp) hc_token_pre(sums[s], n, hc, base, scale, hc_eps, norm_eps, pre[s]);
  __syncthreads();
  if (!head && w == 0 && s < k_hc_tokens) {
    if (gate_warp) {
      const int64_t t = t0 + s;
      hc_token_post_comb(sums[s], n, hc, base, scale, sinkhorn_iters, hc_eps, norm_eps,
                         post + t * hc, comb + t * hc * hc);
    }
  } else {
    // This CTA's share of y[t] = sum_j pre_j x[t, j] (x re-read: mostly cached), on the threads
    // that are not computing a Sinkhorn projection.
    const int workers = int(blockDim.x) - (!head && w == 0 ? k_hc_tokens * k_warp_size : 0);
    const int me = int(threadIdx.x) - (!head && w == 0 ? k_hc_tokens * k_warp_size : 0);
    const int64_t dchunk = (D + k_hc_vwarps - 1) / k_hc_vwarps;
    const int64_t d0 = w * dchunk, d1 = min(D, d0 + dchunk);
    for (int tt = 0; tt < k_hc_tokens; ++tt) {
      const int64_t t = t0 + tt;
      if (t >= tokens) break;
      const act_t* xt = x + t * n;
      for (int64_t i = d0 + me; i < d1; i += workers) hc_store_y(pre[tt], xt, hc, D, i, y + t * D);
    }
  }
  // No CTA leaves while another may still read its `part`.
  cluster::sync();
}

// The split path. Chunk c of the n = hc * D inputs is [128 c, 128 c + 128); lane l of a warp sums
// inputs 128 c + l + 32 u, u = 0..3 in order, then warp_sum. Warp w computes sums s = w + 8 q (s <
// mix: x . fn_s, s == mix: x . x) for the k_hc_split_cta_tokens tokens of its CTA (grid (chunks,
// token groups): each group of 4 tokens is one dependent x load and reduction round, so more
// tokens per CTA lengthened the kernel: H100, 16 -> 32 tokens in one CTA, 20.6 -> 28.1 us). part[(t
// * k_hc_sums + j) * chunks + c]: chunk c's sum j of token t (the sum of squares at j =
// k_hc_max_mix), chunks fastest so that the finish kernel's warps read a sum's partials coalesced.
constexpr int k_hc_split_threads = 256;
constexpr int k_hc_split_inputs = 128;  // per chunk (CTA) of the sums kernel
constexpr int k_hc_split_per_lane = k_hc_split_inputs / k_warp_size;
constexpr int k_hc_split_slots = (k_hc_max_mix + 1 + 7) / 8;  // sums per warp (8 warps)
constexpr int k_hc_split_columns = 512;   // y columns per CTA of the finish kernel
constexpr int k_hc_split_cta_tokens = 8;  // tokens per CTA of the sums kernel
static_assert(k_hc_split_threads == 8 * k_warp_size && k_hc_split_slots * 8 >= k_hc_sums);

// The residual update fused ahead of the sums (hc_post_pre_norm): x_next = hc_post(x, f, post,
// comb) for this CTA's inputs, stored and summed as the act_t values stored.
template <typename act_t>
struct hc_split_post_args {
  const act_t* f = nullptr;  // [tokens, D]
  const float* post = nullptr;
  const float* comb = nullptr;
  int hc = 0;
  int64_t D = 0;
  act_t* x_next = nullptr;  // [tokens, hc, D]
};

// x_next[t, k, d] (i = k * D + d < hc * D) in hc_post_kernel's order (post * f first, then j),
// as the act_t value stored (the caller stores it after all its loads: a store between them would
// order every later load after it). Branch-free: streams j >= hc load stream 0 and are selected
// away, so that all loads of a CTA's inputs are in flight together (guarded loads consumed inside
// their branch were issued one branch at a time).
template <typename act_t>
__device__ __forceinline__ float hc_post_value(const act_t* x, const hc_split_post_args<act_t>& a,
                                               int64_t t, int64_t i) {
  int k = 0;  // i / D for i < hc * D <= 4 D, without a 64-bit division
#pragma unroll
  for (int q = 1; q < k_hc_max_streams; ++q) k += i >= q * a.D ? 1 : 0;
  const int64_t d = i - k * a.D;
  const act_t* xt = x + t * a.hc * a.D;
  const float* ct = a.comb + t * a.hc * a.hc;
  float xv[k_hc_max_streams], cv[k_hc_max_streams];
#pragma unroll
  for (int j = 0; j < k_hc_max_streams; ++j) {
    const int js = j < a.hc ? j : 0;
    xv[j] = act_to_f32(xt[js * a.D + d]);
    cv[j] = ct[js * a.hc + k];
  }
  float v = a.post[t * a.hc + k] * act_to_f32(a.f[t * a.D + d]);
#pragma unroll
  for (int j = 0; j < k_hc_max_streams; ++j) v = j < a.hc ? v + cv[j] * xv[j] : v;
  return act_to_f32(act_from_f32<act_t>(v));
}

// Launched as a programmatic dependent launch: fn (independent of every earlier launch) is loaded
// before pdl_wait.
template <typename act_t, bool Post>
__global__ void __launch_bounds__(k_hc_split_threads)
    hc_split_sums_kernel(const act_t* x, const float* fn, int64_t tokens, int64_t n, int mix,
                         float* part, hc_split_post_args<act_t> post) {
  pdl_trigger();  // the finish kernel waits for this grid before it reads part
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
  const int64_t chunks = gridDim.x, c = blockIdx.x;
  const int64_t i0 = c * k_hc_split_inputs + lane;
  const int64_t t_first = int64_t(blockIdx.y) * k_hc_split_cta_tokens;
  const int64_t t_end = min(tokens, t_first + k_hc_split_cta_tokens);
  // This warp's fn values: independent of x, issued first.
  float f[k_hc_split_slots][k_hc_split_per_lane];
#pragma unroll
  for (int q = 0; q < k_hc_split_slots; ++q) {
    const int s = warp + 8 * q;
#pragma unroll
    for (int u = 0; u < k_hc_split_per_lane; ++u) {
      const int64_t i = i0 + k_warp_size * u;
      f[q][u] = s < mix && i < n ? __ldg(fn + int64_t(s) * n + i) : 0.0f;
    }
  }
  pdl_wait();
  constexpr int k_tokens_in_flight = 4;
  // Post: the group's updated inputs, each computed once by one thread (every warp reads all of
  // them: computed per warp, the update's loads and stores ran 8 times, 9.3 us a call at T = 3).
  constexpr int k_post_per_thread = k_tokens_in_flight * k_hc_split_inputs / k_hc_split_threads;
  static_assert(k_post_per_thread * k_hc_split_threads == k_tokens_in_flight * k_hc_split_inputs);
  __shared__ float updated[Post ? k_tokens_in_flight : 1][k_hc_split_inputs];
  for (int64_t t0 = t_first; t0 < t_end; t0 += k_tokens_in_flight) {
    float xv[k_tokens_in_flight][k_hc_split_per_lane];
    if constexpr (Post) {
      float v[k_post_per_thread];
#pragma unroll
      for (int r = 0; r < k_post_per_thread; ++r) {  // computed for a valid input, selected away
        const int e = threadIdx.x + r * k_hc_split_threads;
        const int64_t t = t0 + e / k_hc_split_inputs;
        const int64_t i = c * k_hc_split_inputs + e % k_hc_split_inputs;
        v[r] = hc_post_value(x, post, min(t, t_end - 1), min(i, n - 1));
      }
#pragma unroll
      for (int r = 0; r < k_post_per_thread; ++r) {
        const int e = threadIdx.x + r * k_hc_split_threads;
        const int64_t t = t0 + e / k_hc_split_inputs;
        const int64_t i = c * k_hc_split_inputs + e % k_hc_split_inputs;
        const bool in = t < t_end && i < n;
        updated[e / k_hc_split_inputs][e % k_hc_split_inputs] = in ? v[r] : 0.0f;
        if (in) post.x_next[t * n + i] = act_from_f32<act_t>(v[r]);
      }
      __syncthreads();
#pragma unroll
      for (int tt = 0; tt < k_tokens_in_flight; ++tt)
#pragma unroll
        for (int u = 0; u < k_hc_split_per_lane; ++u)
          xv[tt][u] = updated[tt][lane + k_warp_size * u];
      __syncthreads();  // read before the next group overwrites them
    } else {
#pragma unroll
      for (int tt = 0; tt < k_tokens_in_flight; ++tt)
#pragma unroll
        for (int u = 0; u < k_hc_split_per_lane; ++u) {
          const int64_t i = i0 + k_warp_size * u;
          xv[tt][u] = t0 + tt < t_end && i < n ? act_to_f32(x[(t0 + tt) * n + i]) : 0.0f;
        }
    }
#pragma unroll
    for (int tt = 0; tt < k_tokens_in_flight; ++tt) {
      if (t0 + tt >= t_end) break;
#pragma unroll
      for (int q = 0; q < k_hc_split_slots; ++q) {
        const int s = warp + 8 * q;
        if (s > mix) break;
        float acc = 0.0f;
#pragma unroll
        for (int u = 0; u < k_hc_split_per_lane; ++u)
          acc += xv[tt][u] * (s < mix ? f[q][u] : xv[tt][u]);
        acc = warp_sum(acc);
        if (lane == 0)
          part[((t0 + tt) * k_hc_sums + (s == mix ? k_hc_max_mix : s)) * chunks + c] = acc;
      }
    }
  }
}

// Token t's sums j < `needed` and the sum of squares from their chunk partials, in chunk order c =
// lane, lane + 32, ... then warp_sum (warp w: sums w + 8 q), into sums[] (shared); every CTA that
// needs a sum gets the same value.
__device__ __forceinline__ void hc_split_token_sums(const float* part, int chunks, int64_t t,
                                                    int needed, float* sums) {
  const int lane = threadIdx.x % k_warp_size, warp = threadIdx.x / k_warp_size;
#pragma unroll
  for (int q = 0; q < k_hc_split_slots; ++q) {
    const int j = warp + 8 * q;
    if (j == k_hc_max_mix || j < needed) {
      const float* pj = part + (t * k_hc_sums + j) * chunks;
      float v = 0.0f;
      for (int c = lane; c < chunks; c += k_warp_size) v += pj[c];
      v = warp_sum(v);
      if (lane == 0) sums[j] = v;
    }
  }
}

// Grid (ceil(D / k_hc_split_columns) + (head ? 0 : 1), tokens): CTA (bx, t) adds token t's
// partials of the sums it needs (the gates' pre: sums 0..hc-1 and the sum of squares; the last
// CTA of a row, present only for hc_pre, all of them) in chunk order c = lane, lane + 32, ...
// then warp_sum, so every CTA of a token gets the same values; then pre, and y's columns [512 bx,
// +512) (the block kernel's y order), or post and the Sinkhorn projection in the last CTA.
template <typename act_t>
__global__ void __launch_bounds__(k_hc_split_threads)
    hc_split_finish_kernel(const act_t* x, const float* part, int chunks, const float* base,
                           const float* scale, int64_t tokens, int hc, int64_t D, int mix,
                           bool head, int sinkhorn_iters, float hc_eps, float norm_eps, act_t* y,
                           float* post, float* comb) {
  __shared__ float sums[k_hc_sums];
  __shared__ float pre[k_hc_max_streams];
  const int warp = threadIdx.x / k_warp_size;
  const int64_t t = blockIdx.y;
  const int64_t n = int64_t(hc) * D;
  const bool gates = !head && blockIdx.x == gridDim.x - 1;  // post and comb
  pdl_wait();
  hc_split_token_sums(part, chunks, t, gates ? mix : hc, sums);
  __syncthreads();
  if (gates) {
    if (warp == 0)
      hc_token_post_comb(sums, n, hc, base, scale, sinkhorn_iters, hc_eps, norm_eps, post + t * hc,
                         comb + t * hc * hc);
    return;
  }
  if (warp == 0) hc_token_pre(sums, n, hc, base, scale, hc_eps, norm_eps, pre);
  __syncthreads();
  const act_t* xt = x + t * n;
  const int64_t i1 = min(D, int64_t(blockIdx.x + 1) * k_hc_split_columns);
  for (int64_t i = int64_t(blockIdx.x) * k_hc_split_columns + threadIdx.x; i < i1; i += blockDim.x)
    hc_store_y(pre, xt, hc, D, i, y + t * D);
}

// hc_post_pre_norm's finish: grid (2, tokens), or (1, tokens) without the gates CTA (1, t)
// (hc_split_gates_kernel then). CTA (0, t) forms token t's pre and y, thread c
// columns [8 c, 8 c + 8) (its x loads issued at once, before the partial sums are added: 256
// threads looping over the columns serialized their loads, ~23 us a call on an H100), held as
// the act_t values hc_pre would store, then y's RMS norm with the weight w as rms_norm_kernel
// computes it (the sum of squares in another order): out[t, i] = w[i] * (y[t, i] * inv). CTA
// (1, t) forms post and comb. One CTA per token: the norm needs the whole row. Vec: D % 8 == 0
// and x, w, out 16-byte aligned (vector loads and stores).
constexpr int k_hc_norm_per_thread = 8;
constexpr int k_hc_norm_max_threads = 1024;
constexpr int64_t k_hc_norm_max_columns = int64_t(k_hc_norm_per_thread) * k_hc_norm_max_threads;

// v[e] = p[e] for e < min(8, left) (0 beyond); Vec: all 8 by two vector loads.
template <bool Vec, typename act_t>
__device__ __forceinline__ void hc_norm_load8(const act_t* p, int64_t left, float (&v)[8]) {
  if constexpr (Vec) {
    const float4 a = load_act4(p), b = load_act4(p + 4);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = e < left ? act_to_f32(p[e]) : 0.0f;
  }
}

template <typename act_t, bool Vec, bool Q>
__global__ void __launch_bounds__(k_hc_norm_max_threads)
    hc_split_finish_norm_kernel(const act_t* x, const float* part, int chunks, const float* base,
                                const float* scale, int hc, int64_t D, int mix, int sinkhorn_iters,
                                float hc_eps, float norm_eps, const float* w, act_t* out,
                                act_t* out_fp8, float* post, float* comb) {
  static_assert(!Q || Vec, "the FP8 copy takes the vector form");
  __shared__ float sums[k_hc_sums];
  __shared__ float pre[k_hc_max_streams];
  __shared__ float scratch[k_warp_size];
  const int warp = threadIdx.x / k_warp_size;
  const int64_t t = blockIdx.y;
  const int64_t n = int64_t(hc) * D;
  const bool gates = blockIdx.x == 1;
  const int64_t c0 = int64_t(threadIdx.x) * k_hc_norm_per_thread;
  const bool cols = !gates && c0 < D;
  // The norm's weights depend on no earlier launch: loaded before the wait.
  float wv[8] = {};
  if (cols) hc_norm_load8<Vec>(w + c0, D - c0, wv);
  pdl_wait();
  float xv[k_hc_max_streams][8] = {};
  if (cols) {
#pragma unroll
    for (int j = 0; j < k_hc_max_streams; ++j)
      if (j < hc) hc_norm_load8<Vec>(x + t * n + j * D + c0, D - c0, xv[j]);
  }
  if (warp < 8) hc_split_token_sums(part, chunks, t, gates ? mix : hc, sums);  // >= 8 warps
  __syncthreads();
  if (gates) {
    if (warp == 0)
      hc_token_post_comb(sums, n, hc, base, scale, sinkhorn_iters, hc_eps, norm_eps, post + t * hc,
                         comb + t * hc * hc);
    return;
  }
  if (warp == 0) hc_token_pre(sums, n, hc, base, scale, hc_eps, norm_eps, pre);
  __syncthreads();
  float yv[8];
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    float v = 0.0f;  // hc_y_value's sum, in j order
#pragma unroll
    for (int j = 0; j < k_hc_max_streams; ++j)
      if (j < hc) v += pre[j] * xv[j][e];
    yv[e] = act_to_f32(act_from_f32<act_t>(v));
    ss += yv[e] * yv[e];
  }
  ss = block_sum(ss, scratch);
  // 1 / sqrt rather than rsqrtf: the correctly rounded form the CPU reference uses.
  const float inv = 1.0f / sqrtf(ss / float(D) + norm_eps);
  if constexpr (Q) {
    // out_fp8 = fake_quant_fp8_act(out, 128) (quant::fp8_block_warp's values): a block is the 16
    // lanes of a half warp (8 columns each; D % 128 == 0), whose amax comes by shuffles that every
    // lane of the warp joins (lanes past D hold zeros).
    float ov[8];
    float amax = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      ov[e] = act_to_f32(act_from_f32<act_t>(wv[e] * (yv[e] * inv)));
      amax = fmaxf(amax, fabsf(ov[e]));  // NaN ignored
    }
#pragma unroll
    for (int offset = 8; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    const float s = quant::fp8_block_scale(amax);
    if (!cols) return;
    act_t* qt = out_fp8 + t * D + c0;
    float qv[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) qv[e] = __fmul_rn(quant::e4m3_round(__fdiv_rn(ov[e], s)), s);
    store_act4(qt, make_float4(qv[0], qv[1], qv[2], qv[3]));
    store_act4(qt + 4, make_float4(qv[4], qv[5], qv[6], qv[7]));
  }
  if (!cols) return;
  act_t* ot = out + t * D + c0;
  if constexpr (Vec) {
    store_act4(ot, make_float4(wv[0] * (yv[0] * inv), wv[1] * (yv[1] * inv), wv[2] * (yv[2] * inv),
                               wv[3] * (yv[3] * inv)));
    store_act4(ot + 4, make_float4(wv[4] * (yv[4] * inv), wv[5] * (yv[5] * inv),
                                   wv[6] * (yv[6] * inv), wv[7] * (yv[7] * inv)));
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (c0 + e < D) ot[e] = act_from_f32<act_t>(wv[e] * (yv[e] * inv));
  }
}

// hc_post_pre_norm_gates: grid (tokens), k_hc_split_threads. CTA t is hc_split_finish_norm_kernel's
// CTA (1, t) (the same sums by the same 8 warps, the same gate functions): post and comb bit for
// bit. Not a programmatic dependent launch: it runs beside later work, ordered after the finish
// kernel by the caller.
__global__ void __launch_bounds__(k_hc_split_threads)
    hc_split_gates_kernel(const float* part, int chunks, const float* base, const float* scale,
                          int hc, int64_t D, int mix, int sinkhorn_iters, float hc_eps,
                          float norm_eps, float* post, float* comb) {
  __shared__ float sums[k_hc_sums];
  const int64_t t = blockIdx.x;
  hc_split_token_sums(part, chunks, t, mix, sums);
  __syncthreads();
  if (threadIdx.x / k_warp_size == 0)
    hc_token_post_comb(sums, int64_t(hc) * D, hc, base, scale, sinkhorn_iters, hc_eps, norm_eps,
                       post + t * hc, comb + t * hc * hc);
}

int64_t hc_split_chunks(int64_t hc, int64_t D) {
  return ceil_div(hc * D, int64_t(k_hc_split_inputs));
}

// The split path's workspace (its partial sums): present, large enough, 4-byte aligned.
bool hc_split_workspace_ok(int64_t tokens, int64_t hc, int64_t D, const void* workspace,
                           size_t workspace_bytes) {
  return workspace != nullptr && workspace_bytes >= hc_collapse_workspace_bytes(tokens, hc, D) &&
         (reinterpret_cast<uintptr_t>(workspace) & 3) == 0;
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

template <typename act_t, bool Post = false>
cudaError_t launch_hc_split_sums(const act_t* x, const float* fn, int64_t tokens, int64_t hc,
                                 int64_t D, int mix, float* part,
                                 const hc_split_post_args<act_t>& post, cudaStream_t stream) {
  const dim3 grid(unsigned(hc_split_chunks(hc, D)),
                  unsigned(ceil_div(tokens, k_hc_split_cta_tokens)));
  return launch_pdl(true, hc_split_sums_kernel<act_t, Post>, grid, dim3(k_hc_split_threads), 0,
                    stream, x, fn, tokens, hc * D, mix, part, post);
}

template <typename act_t>
cudaError_t hc_collapse(const act_t* x, const float* fn, const float* base, const float* scale,
                        int64_t tokens, int64_t hc, int64_t D, bool head, int64_t sinkhorn_iters,
                        float hc_eps, float norm_eps, act_t* y, float* post, float* comb,
                        hc_collapse_path path, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream) {
  if (tokens < 0 || hc <= 0 || hc > k_hc_max_streams || D <= 0 || sinkhorn_iters < 0 ||
      sinkhorn_iters > INT32_MAX)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t groups = ceil_div(tokens, k_hc_tokens);
  const int mix = head ? int(hc) : int((2 + hc) * hc);
  const bool split_fits = tokens <= hc_collapse_split_max_tokens &&
                          hc_split_workspace_ok(tokens, hc, D, workspace, workspace_bytes);
  if (path == hc_collapse_path::split && !split_fits) return cudaErrorInvalidValue;
  // Automatic: split up to hc_collapse_split_auto_tokens(head). H100, session 25
  // (test_backend_ops --perf, event-timed single calls, Flash widths, us, cluster -> split). Call
  // l25d (8 tokens a CTA of the sums kernel): hc_pre T = 1 / 4 / 16 / 24 / 32 / 48 / 64 18.2 / 23.0
  // / 23.6 / 23.8 / 24.0 / 24.2 / 41.7 -> 14.1 / 14.7 / 18.1 / 22.3 / 24.1 / 29.3 / 34.4, hc_head
  // 12.9 / 17.1 / 18.4 / 17.6 / 18.1 / 17.9 / 29.5 -> 11.7 / 11.8 / 13.2 / 14.6 / 17.0 / 19.3 /
  // 21.8; Pro hc_pre T = 4 31.4 -> 16.3. Call l25c (all tokens in one CTA) lost from 24 tokens
  // (hc_pre T = 32 23.9 -> 28.1). The flash-dims decode step (batch 2-3, graphs): 0.93-1.01 ->
  // 0.86-0.95 ms (l25c, with rms_norm's early weights).
  if (path == hc_collapse_path::split || (path == hc_collapse_path::automatic && split_fits &&
                                          tokens <= hc_collapse_split_auto_tokens(head))) {
    const int64_t chunks = hc_split_chunks(hc, D);
    const int64_t columns = ceil_div(D, int64_t(k_hc_split_columns)) + (head ? 0 : 1);
    if (chunks > INT32_MAX || columns > INT32_MAX) return cudaErrorInvalidValue;
    float* part = static_cast<float*>(workspace);
    if (const cudaError_t e = launch_hc_split_sums(x, fn, tokens, hc, D, mix, part,
                                                   hc_split_post_args<act_t>{}, stream);
        e != cudaSuccess)
      return e;
    return launch_pdl(true, hc_split_finish_kernel<act_t>,
                      dim3(unsigned(columns), unsigned(tokens)), dim3(k_hc_split_threads), 0,
                      stream, x, static_cast<const float*>(part), int(chunks), base, scale, tokens,
                      int(hc), D, mix, head, int(sinkhorn_iters), hc_eps, norm_eps, y, post, comb);
  }
  const size_t smem = hc_cluster_smem_bytes(hc * D);
  const bool cluster_fits = smem <= size_t(200) << 10;
  if (path == hc_collapse_path::cluster && !cluster_fits) return cudaErrorInvalidValue;
  // The cluster kernel up to one token group per SM (8 waves of its one-per-SM CTAs): H100, ncu
  // device times, hc_pre T = 512 166 us vs the block kernel's 215, T = 2048 637 vs 459.
  const bool use_cluster =
      path == hc_collapse_path::cluster || (path == hc_collapse_path::automatic && cluster_fits &&
                                            groups <= int64_t(current_device_sm_count()));
  if (!use_cluster) {
    if (groups > INT32_MAX) return cudaErrorInvalidValue;
    hc_collapse_block_kernel<act_t><<<unsigned(groups), k_hc_threads, 0, stream>>>(
        x, fn, base, scale, tokens, int(hc), D, mix, head, int(sinkhorn_iters), hc_eps, norm_eps, y,
        post, comb);
    return cudaGetLastError();
  }
  if (groups * k_hc_vwarps > INT32_MAX) return cudaErrorInvalidValue;
  if (smem > (size_t(48) << 10)) {
    const cudaError_t e = cudaFuncSetAttribute(
        hc_collapse_cluster_kernel<act_t>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
  }
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = unsigned(k_hc_vwarps);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(groups * k_hc_vwarps));
  // Always k_hc_sums warps (also for hc_head's mix + 1 = 5 sums): the others stage x.
  config.blockDim = dim3(unsigned(k_hc_cluster_threads));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, hc_collapse_cluster_kernel<act_t>, x, fn, base,
                                           scale, tokens, int(hc), D, mix, head,
                                           int(sinkhorn_iters), hc_eps, norm_eps, y, post, comb);
  if (e != cudaSuccess) return e;
  return cudaGetLastError();
}

}  // namespace

size_t hc_collapse_workspace_bytes(int64_t tokens, int64_t hc, int64_t D) {
  if (tokens <= 0 || hc <= 0 || D <= 0) return 0;
  return size_t(tokens) * k_hc_sums * size_t(hc_split_chunks(hc, D)) * sizeof(float);
}

template <typename act_t>
cudaError_t hc_pre(const act_t* x, const float* fn, const float* base, const float* scale,
                   int64_t tokens, int64_t hc, int64_t D, int64_t sinkhorn_iters, float hc_eps,
                   float norm_eps, act_t* y, float* post, float* comb, cudaStream_t stream,
                   hc_collapse_path path, void* workspace, size_t workspace_bytes) {
  return hc_collapse(x, fn, base, scale, tokens, hc, D, false, sinkhorn_iters, hc_eps, norm_eps, y,
                     post, comb, path, workspace, workspace_bytes, stream);
}

template <typename act_t>
cudaError_t hc_head(const act_t* x, const float* fn, const float* base, const float* scale,
                    int64_t tokens, int64_t hc, int64_t D, float hc_eps, float norm_eps, act_t* y,
                    cudaStream_t stream, hc_collapse_path path, void* workspace,
                    size_t workspace_bytes) {
  return hc_collapse(x, fn, base, scale, tokens, hc, D, true, 0, hc_eps, norm_eps, y, nullptr,
                     nullptr, path, workspace, workspace_bytes, stream);
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

bool hc_post_pre_norm_supported(int64_t tokens, int64_t hc, int64_t D) {
  return tokens >= 0 && tokens <= hc_collapse_split_max_tokens && hc > 0 &&
         hc <= k_hc_max_streams && D > 0 && D <= k_hc_norm_max_columns &&
         hc_split_chunks(hc, D) <= INT32_MAX;
}

template <typename act_t>
bool hc_post_pre_norm_fp8_copy_supported(int64_t D, const act_t* x, const act_t* x_next,
                                         const act_t* out, const act_t* out_fp8) {
  return D % 128 == 0 && aligned_16(x) && aligned_16(x_next) && aligned_16(out) &&
         aligned_16(out_fp8);
}

template <typename act_t>
cudaError_t hc_post_pre_norm(const act_t* x, const act_t* f, const float* fn, const float* base,
                             const float* scale, const float* norm_weight, int64_t tokens,
                             int64_t hc, int64_t D, int64_t sinkhorn_iters, float hc_eps,
                             float norm_eps, act_t* x_next, act_t* out, act_t* out_fp8, float* post,
                             float* comb, cudaStream_t stream, void* workspace,
                             size_t workspace_bytes, bool gates) {
  if (!hc_post_pre_norm_supported(tokens, hc, D) || sinkhorn_iters < 0 ||
      sinkhorn_iters > INT32_MAX || (f != nullptr && x_next == nullptr) ||
      (out_fp8 != nullptr && (!hc_post_pre_norm_fp8_copy_supported(D, x, x_next, out, out_fp8) ||
                              !aligned_16(norm_weight))))
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (!hc_split_workspace_ok(tokens, hc, D, workspace, workspace_bytes))
    return cudaErrorInvalidValue;
  const int mix = int((2 + hc) * hc);
  float* part = static_cast<float*>(workspace);
  cudaError_t e;
  if (f != nullptr) {
    hc_split_post_args<act_t> a;
    a.f = f;
    a.post = post;
    a.comb = comb;
    a.hc = int(hc);
    a.D = D;
    a.x_next = x_next;
    e = launch_hc_split_sums<act_t, true>(x, fn, tokens, hc, D, mix, part, a, stream);
  } else {
    e = launch_hc_split_sums(x, fn, tokens, hc, D, mix, part, hc_split_post_args<act_t>{}, stream);
  }
  if (e != cudaSuccess) return e;
  // The finish kernel reads the collapse's input: x_next when the residual update ran.
  const act_t* collapsed = f != nullptr ? x_next : x;
  const bool vec =
      D % 8 == 0 && aligned_16(collapsed) && aligned_16(norm_weight) && aligned_16(out);
  // At least the 8 warps hc_split_token_sums spreads the sums over.
  const int threads =
      std::max(k_hc_split_threads,
               int(ceil_div(ceil_div(D, int64_t(k_hc_norm_per_thread)), int64_t(k_warp_size))) *
                   k_warp_size);
  const auto kernel = out_fp8 ? hc_split_finish_norm_kernel<act_t, true, true>
                      : vec   ? hc_split_finish_norm_kernel<act_t, true, false>
                              : hc_split_finish_norm_kernel<act_t, false, false>;
  // CTA (1, t), the gates, only with `gates` (otherwise hc_post_pre_norm_gates).
  return launch_pdl(true, kernel, dim3(gates ? 2u : 1u, unsigned(tokens)), dim3(unsigned(threads)),
                    0, stream, collapsed, static_cast<const float*>(part),
                    int(hc_split_chunks(hc, D)), base, scale, int(hc), D, mix, int(sinkhorn_iters),
                    hc_eps, norm_eps, norm_weight, out, out_fp8, post, comb);
}

cudaError_t hc_post_pre_norm_gates(const void* workspace, size_t workspace_bytes, const float* base,
                                   const float* scale, int64_t tokens, int64_t hc, int64_t D,
                                   int64_t sinkhorn_iters, float hc_eps, float norm_eps,
                                   float* post, float* comb, cudaStream_t stream) {
  if (!hc_post_pre_norm_supported(tokens, hc, D) || sinkhorn_iters < 0 ||
      sinkhorn_iters > INT32_MAX || post == nullptr || comb == nullptr)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  if (!hc_split_workspace_ok(tokens, hc, D, workspace, workspace_bytes))
    return cudaErrorInvalidValue;
  return launch_pdl(
      false, hc_split_gates_kernel, dim3(unsigned(tokens)), dim3(unsigned(k_hc_split_threads)), 0,
      stream, static_cast<const float*>(workspace), int(hc_split_chunks(hc, D)), base, scale,
      int(hc), D, int((2 + hc) * hc), int(sinkhorn_iters), hc_eps, norm_eps, post, comb);
}

#define DSV4_MHC_INSTANTIATE(T)                                                                   \
  template cudaError_t hc_pre<T>(const T*, const float*, const float*, const float*, int64_t,     \
                                 int64_t, int64_t, int64_t, float, float, T*, float*, float*,     \
                                 cudaStream_t, hc_collapse_path, void*, size_t);                  \
  template cudaError_t hc_head<T>(const T*, const float*, const float*, const float*, int64_t,    \
                                  int64_t, int64_t, float, float, T*, cudaStream_t,               \
                                  hc_collapse_path, void*, size_t);                               \
  template cudaError_t hc_post<T>(const T*, const T*, const float*, const float*, int64_t,        \
                                  int64_t, int64_t, T*, cudaStream_t);                            \
  template cudaError_t hc_post_pre_norm<T>(const T*, const T*, const float*, const float*,        \
                                           const float*, const float*, int64_t, int64_t, int64_t, \
                                           int64_t, float, float, T*, T*, T*, float*, float*,     \
                                           cudaStream_t, void*, size_t, bool);                    \
  template bool hc_post_pre_norm_fp8_copy_supported<T>(int64_t, const T*, const T*, const T*,     \
                                                       const T*);
DSV4_MHC_INSTANTIATE(float)
DSV4_MHC_INSTANTIATE(__nv_bfloat16)
#undef DSV4_MHC_INSTANTIATE

}  // namespace dsv4::cuda
