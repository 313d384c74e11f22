// Compressor, parallel over the step's tokens. The CPU reference walks the tokens in order,
// writing each token's (kv, score + ape) into its sequence's ring and pooling the ring when a
// window closes. Here:
//
//   1. compressor_emit_kernel: clusters of 1 CTA (short windows) or of CTAs splitting the
//      channels (long windows), each scanning a range of the step's tokens and pooling, one after
//      another, those that close a window (see compressor_emit_tokens_per_cluster). Each slot of
//      the window (position p) is read from the step's own kv / score rows (+ ape) when position p
//      is in this step, and from the ring only when p belongs to an earlier step. Position p of the
//      emitting token t's sequence is in this step iff token i = t - (pos[t] - p) exists, has the
//      same state_base and position p (a sequence's tokens are contiguous, at consecutive
//      positions). A ring row read here always still holds position p: p >= pos[t] - ring + 1,
//      so the only positions that map to the same row are >= p + ring > pos[t], and those are
//      not from an earlier step.
//   2. compressor_ring_kernel: writes this step's tokens into the ring, each row once: token t
//      writes unless token t + ring (same sequence, position pos[t] + ring) overwrites the same
//      row later in step order, so the final ring equals the CPU's after its sequential walk.
//
// FP8 record caches (compressor_records): kernel 1 writes each entry straight into its record
// (RECORD): the CTA rounds its channels to act_t (the values the activation-typed pool would
// hold), then its warps encode the 64-value scale blocks inside its channel range, so the split
// keeps every block inside one CTA (compressor_emit_split with `block` 64). The bytes are those
// of the two-pass path (entries into an act_t scratch, then kv_record_pack) by construction:
// same values, kv_record::encode_block_warp.
//
// Ordering invariant: kernel 2 runs after kernel 1 on the same stream, so every ring row that
// kernel 1 reads (an earlier step's token) is read before kernel 2 can overwrite it. The
// arithmetic of the pooling follows the CPU operation by operation (max, then sum of e and of
// e * kv in slot order, explicit roundings); only the RMS sum of squares is reduced in another
// order.
#include <algorithm>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cluster.cuh"
#include "backends/cuda/compressor.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_emit_max_threads = 512;
constexpr int k_ring_threads = 256;

// CTAs (a cluster) per emitting token. Long windows (HCA, rate 128: up to 128 slots of
// dependent-free loads per channel) split the channels over 4 CTAs of 128 threads, each range
// even-sized so that RoPE pairs stay inside one CTA; short windows (CSA, rate 4) keep one CTA
// per token, one thread per channel, where the per-CTA barriers would outweigh the pooling.
// Record pools need every 64-value scale block of the nope dims inside one CTA: `block` 64
// makes each CTA's range a multiple of it (the last range may hold the RoPE dims too).
constexpr int64_t k_long_window = 16;  // rate from which windows count as long

int compressor_emit_split(int64_t head_dim, int64_t rate, int64_t block = 2) {
  if (rate < k_long_window) return 1;
  for (int split : {4, 2})
    if (head_dim % (block * split) == 0 && head_dim / split >= 128) return split;
  return 1;
}

// Threads of an emit CTA: one per channel of its range, rounded up to whole warps, at most 512
// (then each thread takes several channels).
int compressor_emit_threads(int64_t head_dim, int split) {
  const int64_t per_cta = (head_dim / split + k_warp_size - 1) / k_warp_size * k_warp_size;
  return int(std::min<int64_t>(per_cta, k_emit_max_threads));
}

// Tokens scanned per cluster. Emitting tokens are about tokens / rate of a step (one per window
// of a sequence; every token for single-token decode steps at window ends), and a cluster per
// token made prefill steps launch tokens x split CTAs of which all but ~1 / rate exit at once:
// at T = 4096, HCA, that launch churn was most of the kernel's time (ncu, H200: 61 us). A cluster
// now lists the emitting tokens of `per_cluster` consecutive tokens (one load per thread) and
// pools them one after another: for long windows max(4 tokens / rate, 256) clusters (at most one
// per token), so a prefill cluster gets at most about one emitting token and a decode step of up
// to 256 tokens one token per cluster; short windows keep one cluster (CTA) per token (one per 4
// tokens was 1.2x slower for CSA at T = 4096 on the H200).
int64_t compressor_emit_tokens_per_cluster(int64_t tokens, int64_t rate) {
  if (rate < k_long_window) return 1;
  const int64_t clusters = std::min(tokens, std::max<int64_t>(4 * ceil_div(tokens, rate), 256));
  return ceil_div(tokens, std::max<int64_t>(clusters, 1));
}

// Slot source encoding in shared memory: >= 0 a token of this step, -1 left out, <= -2 ring row
// (-2 - code).
constexpr int32_t k_slot_skip = -1;

// Emitting tokens are few (one per `rate` tokens of a sequence) and each pools up to 2 * rate
// slots of a head_dim-wide row, so one CTA per emitting token left most SMs idle and streamed its
// slots one dependent load at a time (HCA, rate 128: ~1 MB per CTA). Now `split` CTAs of a
// thread-block cluster share an emitting token, each owning a contiguous, even-sized channel
// range (RoPE pairs never straddle two CTAs); the RMSNorm sum of squares is exchanged through
// distributed shared memory and summed in rank order (the same total in every CTA). The slot
// loops are unrolled with the loads independent of the running max / sums: when the window's
// slots of this step follow its ring slots (always, given compressor.h's requirements on the
// step), ring rows and this step's rows are walked in two straight loops; otherwise the per-slot
// loop of the first version.
// Token t's entry (t emits; the same t in every CTA of the cluster), by this CTA's channels.
template <typename act_t, bool RECORD>
__device__ __forceinline__ void compressor_emit_token(
    int64_t t, int64_t emit, int64_t pos, const act_t* kv, const act_t* score,
    const int32_t* positions, const int32_t* state_base, const float* ape, const float* norm_weight,
    const float* inv_freq, const compressor_shape& shape, const float* state_kv,
    const float* state_score, int64_t state_rows, act_t* out_pool, uint8_t* records,
    const kv_record::dims& record_dims, float* smem, float* scratch, float& cta_ss) {
  __syncthreads();  // the previous token's reads of the shared buffers are done
  const int64_t rate = shape.rate;
  const int split = int(gridDim.y);
  const int rank = int(blockIdx.y);  // cluster dims (1, split, 1): the rank in the cluster
  const int64_t hd = shape.head_dim;
  const int64_t c0 = hd / split * rank, c1 = c0 + hd / split;
  const int64_t width = (shape.overlap ? 2 : 1) * hd;
  const int64_t ring = (shape.overlap ? 2 : 1) * rate;
  const int64_t w = pos / rate;
  const int64_t base = state_base[t];
  // Slots: with overlap, the rate slots of window w-1 (channels [0, hd); absent for w = 0) then
  // the rate slots of window w (channels [hd, 2hd)); without, window w (channels [0, hd)).
  const int64_t first_window = (shape.overlap && w > 0) ? w - 1 : w;
  const int64_t n_slots = (w - first_window + 1) * rate;
  // Slots from this index on belong to window w (the Cb half with overlap).
  const int64_t cb_from = (w - first_window) * rate;
  float* entry = smem;                                                // [c1 - c0]
  int32_t* slot_src = reinterpret_cast<int32_t*>(entry + (c1 - c0));  // [n_slots]
  for (int64_t i = threadIdx.x; i < n_slots; i += blockDim.x) {
    const int64_t p = first_window * rate + i;
    const int64_t in_step = t - (pos - p);
    int32_t src;
    if (in_step >= 0 && state_base[in_step] == base && positions[in_step] == p) {
      src = int32_t(in_step);
    } else {
      const int64_t row = base + p % ring;
      src = (base >= 0 && row < state_rows) ? int32_t(-2 - row) : k_slot_skip;
    }
    slot_src[i] = src;
  }
  __syncthreads();
  // Ring (or skipped) slots first, then this step's: n_ring of them, the rest consecutive tokens.
  bool misordered = false;
  int n_front = 0;
  for (int64_t i = threadIdx.x; i < n_slots; i += blockDim.x) {
    n_front += slot_src[i] < 0;
    if (i > 0 && slot_src[i - 1] >= 0 && slot_src[i] < 0) misordered = true;
    if (i > 0 && slot_src[i - 1] >= 0 && slot_src[i] >= 0 && slot_src[i] != slot_src[i - 1] + 1)
      misordered = true;
  }
  const int64_t n_ring = int64_t(block_sum(float(n_front), scratch));  // exact: <= 2^24
  const bool straight = !__syncthreads_or(misordered);
  const int64_t step0 = n_ring < n_slots ? int64_t(slot_src[n_ring]) : 0;

  float ss = 0.0f;
  for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    float mx = -INFINITY, den = 0.0f, num = 0.0f;
    if (straight) {
#pragma unroll 8
      for (int64_t i = 0; i < n_ring; ++i) {
        const int32_t src = slot_src[i];
        const int64_t off = (shape.overlap && i >= cb_from) ? hd : 0;
        if (src != k_slot_skip) mx = fmaxf(mx, state_score[int64_t(-2 - src) * width + off + c]);
      }
#pragma unroll 8
      for (int64_t i = n_ring; i < n_slots; ++i) {
        const int64_t off = (shape.overlap && i >= cb_from) ? hd : 0;
        const int64_t at = (step0 + (i - n_ring)) * width + off + c;
        const int64_t j = i >= rate ? i - rate : i;  // p % rate (n_slots <= 2 rate)
        mx = fmaxf(mx, __fadd_rn(act_to_f32(score[at]), ape[j * width + off + c]));
      }
#pragma unroll 8
      for (int64_t i = 0; i < n_ring; ++i) {
        const int32_t src = slot_src[i];
        const int64_t off = (shape.overlap && i >= cb_from) ? hd : 0;
        if (src != k_slot_skip) {
          const int64_t at = int64_t(-2 - src) * width + off + c;
          const float e = expf(state_score[at] - mx);
          den = __fadd_rn(den, e);
          num = __fadd_rn(num, __fmul_rn(e, state_kv[at]));
        }
      }
#pragma unroll 8
      for (int64_t i = n_ring; i < n_slots; ++i) {
        const int64_t off = (shape.overlap && i >= cb_from) ? hd : 0;
        const int64_t at = (step0 + (i - n_ring)) * width + off + c;
        const int64_t j = i >= rate ? i - rate : i;
        const float sc = __fadd_rn(act_to_f32(score[at]), ape[j * width + off + c]);
        const float e = expf(sc - mx);
        den = __fadd_rn(den, e);
        num = __fadd_rn(num, __fmul_rn(e, act_to_f32(kv[at])));
      }
    } else {
      // Slot i's (score, kv) at channel c of its window half.
      auto load = [&](int64_t i, float& s, float& v) {
        const int64_t off = (shape.overlap && i >= cb_from) ? hd : 0;
        const int32_t src = slot_src[i];
        if (src >= 0) {
          const int64_t p = first_window * rate + i;
          const int64_t at = int64_t(src) * width + off + c;
          s = __fadd_rn(act_to_f32(score[at]), ape[(p % rate) * width + off + c]);
          v = act_to_f32(kv[at]);
        } else {
          const int64_t at = int64_t(-2 - src) * width + off + c;
          s = state_score[at];
          v = state_kv[at];
        }
      };
      for (int64_t i = 0; i < n_slots; ++i) {
        if (slot_src[i] == k_slot_skip) continue;
        float s, v;
        load(i, s, v);
        mx = fmaxf(mx, s);
      }
      for (int64_t i = 0; i < n_slots; ++i) {
        if (slot_src[i] == k_slot_skip) continue;
        float s, v;
        load(i, s, v);
        const float e = expf(s - mx);
        den = __fadd_rn(den, e);
        num = __fadd_rn(num, __fmul_rn(e, v));
      }
    }
    const float x = num / den;
    entry[c - c0] = x;
    ss = __fadd_rn(ss, __fmul_rn(x, x));
  }
  ss = block_sum(ss, scratch);
  if (split > 1) {
    // Every CTA sums the cluster's partial sums in rank order; the second barrier keeps each
    // CTA's shared memory alive until all have read it.
    if (threadIdx.x == 0) cta_ss = ss;
    cluster::sync();
    const uint32_t local = uint32_t(__cvta_generic_to_shared(&cta_ss));
    ss = 0.0f;
    for (int r = 0; r < split; ++r)
      ss = __fadd_rn(ss, cluster::load_f(cluster::map(local, uint32_t(r))));
    cluster::sync();
  }
  const float inv = 1.0f / sqrtf(ss / float(hd) + shape.norm_eps);
  for (int64_t c = c0 + threadIdx.x; c < c1; c += blockDim.x)
    entry[c - c0] = __fmul_rn(norm_weight[c], __fmul_rn(entry[c - c0], inv));
  __syncthreads();

  // RoPE on the trailing rope_dim channels at position w * rate (interleaved pairs, f32 angle
  // and accurate sinf / cosf as rope.cu and the CPU's rope_rotate). c0, c1 and rope_start are
  // even when split > 1, so this CTA owns both channels of each pair it rotates.
  // Channel c's final value: into the pool, or (RECORD) back into `entry`, rounded to act_t.
  act_t* out = RECORD ? nullptr : out_pool + emit * hd;
  auto store = [&](int64_t c, float v) {
    if constexpr (RECORD)
      entry[c - c0] = act_to_f32(act_from_f32<act_t>(v));
    else
      out[c] = act_from_f32<act_t>(v);
  };
  const int64_t rope_start = hd - shape.rope_dim;
  const float position = float(int32_t(w * rate));
  for (int64_t c = c0 + threadIdx.x; c < min(c1, rope_start); c += blockDim.x)
    store(c, entry[c - c0]);
  const int64_t pair0 = (max(c0, rope_start) - rope_start) / 2;
  const int64_t pair1 = (max(c1, rope_start) - rope_start) / 2;
  for (int64_t i = pair0 + threadIdx.x; i < pair1; i += blockDim.x) {
    const float angle = position * inv_freq[i];
    const float co = cosf(angle);
    const float si = sinf(angle);
    const float a = entry[rope_start + 2 * i - c0];
    const float b = entry[rope_start + 2 * i + 1 - c0];
    store(rope_start + 2 * i, __fsub_rn(__fmul_rn(a, co), __fmul_rn(b, si)));
    store(rope_start + 2 * i + 1, __fadd_rn(__fmul_rn(b, co), __fmul_rn(a, si)));
  }
  if constexpr (RECORD) {
    // nope dims = rope_start (checked on the host); c0 is a multiple of 64 and so is c1 unless
    // c1 = hd, so the scale blocks of [c0, min(c1, nope)) lie inside this CTA's range.
    __syncthreads();
    const kv_record::dims& d = record_dims;
    uint8_t* data = records + d.data_offset(emit);
    uint8_t* scales = records + d.scale_offset(emit);
    const int lane = int(threadIdx.x) % k_warp_size;
    const int warps = int(blockDim.x) / k_warp_size;
    const int64_t nope = d.nope;
    const int64_t block0 = c0 / kv_record::k_quant_block;
    const int64_t block1 =
        (min(c1, nope) + kv_record::k_quant_block - 1) / kv_record::k_quant_block;
    for (int64_t j = block0 + threadIdx.x / k_warp_size; j < block1; j += warps) {
      const int64_t k = j * kv_record::k_quant_block + 2 * lane;
      const bool valid = k < nope;
      const float a = valid ? entry[k - c0] : 0.0f;
      const float b = valid ? entry[k + 1 - c0] : 0.0f;
      kv_record::encode_block_warp(a, b, valid, data + j * kv_record::k_quant_block, scales + j,
                                   lane);
    }
    if (c0 == 0 && threadIdx.x < d.scale_bytes() - d.scale_count())
      scales[d.scale_count() + threadIdx.x] = 0;
    uint16_t* rope = reinterpret_cast<uint16_t*>(data + nope);
    for (int64_t c = max(c0, nope) + threadIdx.x; c < c1; c += blockDim.x)
      rope[c - nope] = kv_record::bf16_bits(entry[c - c0]);
  }
}

// RECORD: out_pool is unused and the entries go to the records of `records` (rows = pool_rows).
// LONG (windows of rate >= 16): up to 255 registers per thread, since the long slot loops are
// unrolled and their CTAs are few (at the default 64 the record variant spilled inside them:
// HCA T = 4096 54 instead of 34 us on the H200); short windows keep 64 registers and two 512-
// thread CTAs per SM, which their many CTAs need (128 registers: CSA T = 4096 84 instead of 50).
template <typename act_t, bool RECORD, bool LONG>
__global__ void __launch_bounds__(k_emit_max_threads, LONG ? 1 : 2)
    compressor_emit_kernel(const act_t* kv, const act_t* score, int64_t tokens,
                           const int32_t* positions, const int32_t* state_base,
                           const int32_t* emit_rows, const float* ape, const float* norm_weight,
                           const float* inv_freq, compressor_shape shape, const float* state_kv,
                           const float* state_score, int64_t state_rows, act_t* out_pool,
                           uint8_t* records, kv_record::dims record_dims, int64_t pool_rows,
                           int64_t tokens_per_cluster) {
  extern __shared__ float4 smem_raw[];
  __shared__ float scratch[k_warp_size];
  __shared__ float cta_ss;  // this CTA's sum of squares, read by the other CTAs of the cluster
  __shared__ int32_t emitters[k_emit_max_threads], emitter_rows[k_emit_max_threads],
      emitter_positions[k_emit_max_threads];
  __shared__ int32_t warp_emitters[k_emit_max_threads / k_warp_size];
  const int64_t rate = shape.rate;
  const int64_t t_begin = int64_t(blockIdx.x) * tokens_per_cluster;
  const int64_t t_end = min(tokens, t_begin + tokens_per_cluster);
  auto emits = [&](int64_t emit, int64_t pos) {
    return emit >= 0 && emit < pool_rows && pos >= 0 && (pos + 1) % rate == 0;
  };
  const int warp = int(threadIdx.x) / k_warp_size, lane = int(threadIdx.x) % k_warp_size;
  // One call site of the (large, inlined) token body: with a second copy for the one-token path
  // every variant ran 1.2-1.4x slower on the H200, also those that never took it (cause not
  // broken down: code size or register allocation).
  const bool single = tokens_per_cluster == 1;
  for (int64_t batch = t_begin; batch < t_end; batch += blockDim.x) {
    int n_emitters;
    int32_t emit = -1, pos = -1;
    if (single) {
      // One token per cluster: no list and no barrier before a non-emitting cluster exits (the
      // list's barriers in 4096 mostly idle CTAs cost CSA T = 4096 1.25x).
      emit = emit_rows[batch], pos = positions[batch];
      if (!emits(emit, pos)) return;
      n_emitters = 1;
    } else {
      // The batch's emitting tokens (a window closes, valid row and position), listed in token
      // order: every CTA of the cluster lists the same tokens in the same order, so their
      // cluster barriers below pair up token by token.
      const int64_t scan = batch + threadIdx.x;
      if (scan < t_end) emit = emit_rows[scan], pos = positions[scan];
      const bool listed = scan < t_end && emits(emit, pos);
      const uint32_t ballot = __ballot_sync(0xffffffffu, listed);
      __syncthreads();  // the previous batch's reads of `emitters` are done
      if (lane == 0) warp_emitters[warp] = __popc(ballot);
      __syncthreads();
      n_emitters = 0;
      int offset = 0;
      for (int w = 0; w < int(blockDim.x) / k_warp_size; ++w) {
        if (w == warp) offset = n_emitters;
        n_emitters += warp_emitters[w];
      }
      if (listed) {
        const int i = offset + __popc(ballot & ((1u << lane) - 1u));
        emitters[i] = int32_t(scan), emitter_rows[i] = emit, emitter_positions[i] = pos;
      }
      __syncthreads();
    }
    for (int e = 0; e < n_emitters; ++e)
      compressor_emit_token<act_t, RECORD>(
          single ? batch : emitters[e], single ? emit : emitter_rows[e],
          single ? pos : emitter_positions[e], kv, score, positions, state_base, ape, norm_weight,
          inv_freq, shape, state_kv, state_score, state_rows, out_pool, records, record_dims,
          reinterpret_cast<float*>(smem_raw), scratch, cta_ss);
  }
}

// One token per block iteration: whether it writes (and where) is decided once per token; the
// threads copy its channels. The first version decided per element, with four 64-bit integer
// divisions per element (most of its time at T = 4096, width 1024).
template <typename act_t>
__global__ void __launch_bounds__(k_ring_threads)
    compressor_ring_kernel(const act_t* kv, const act_t* score, int64_t tokens,
                           const int32_t* positions, const int32_t* state_base, const float* ape,
                           int64_t rate, int64_t ring, int64_t width, float* state_kv,
                           float* state_score, int64_t state_rows) {
  pdl_trigger();  // pdl.cuh, launch_small
  pdl_wait();
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const int64_t pos = positions[t];
    const int64_t base = state_base[t];
    const int64_t later = t + ring;
    if (later < tokens && state_base[later] == base && positions[later] == pos + ring)
      continue;  // the same ring row is written by a later token of this step
    if (base < 0 || pos < 0) continue;
    const int64_t row = base + pos % ring;
    if (row >= state_rows) continue;
    const float* a = ape + (pos % rate) * width;
    const act_t* k_src = kv + t * width;
    const act_t* s_src = score + t * width;
    float* k_dst = state_kv + row * width;
    float* s_dst = state_score + row * width;
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
      k_dst[c] = act_to_f32(k_src[c]);
      s_dst[c] = __fadd_rn(act_to_f32(s_src[c]), a[c]);
    }
  }
}

// Both kernels of a step; RECORD: the emit kernel writes FP8 records (out_pool unused).
template <typename act_t, bool RECORD>
cudaError_t compressor_launch(const act_t* kv, const act_t* score, int64_t tokens,
                              const int32_t* positions, const int32_t* state_base,
                              const int32_t* emit_rows, const float* ape, const float* norm_weight,
                              const float* inv_freq, const compressor_shape& shape, float* state_kv,
                              float* state_score, int64_t state_rows, act_t* out_pool,
                              uint8_t* records, kv_record::dims record_dims, int64_t pool_rows,
                              cudaStream_t stream) {
  if (tokens < 0 || shape.rate <= 0 || shape.head_dim <= 0 || shape.rope_dim < 0 ||
      shape.rope_dim % 2 != 0 || shape.rope_dim > shape.head_dim || state_rows < 0 ||
      pool_rows < 0 || tokens > INT32_MAX || state_rows > INT32_MAX - 2)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t width = (shape.overlap ? 2 : 1) * shape.head_dim;
  const int64_t ring = (shape.overlap ? 2 : 1) * shape.rate;
  const int split =
      compressor_emit_split(shape.head_dim, shape.rate, RECORD ? kv_record::k_quant_block : 2);
  const size_t smem =
      size_t(shape.head_dim / split) * sizeof(float) + size_t(ring) * sizeof(int32_t);
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1;
  cluster.val.clusterDim.y = unsigned(split);
  cluster.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  const int64_t per_cluster = compressor_emit_tokens_per_cluster(tokens, shape.rate);
  config.gridDim = dim3(unsigned(ceil_div(tokens, per_cluster)), unsigned(split));
  config.blockDim = dim3(unsigned(compressor_emit_threads(shape.head_dim, split)));
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &cluster;
  config.numAttrs = split > 1 ? 1 : 0;
  cudaError_t status = cudaLaunchKernelEx(
      &config,
      shape.rate >= k_long_window ? compressor_emit_kernel<act_t, RECORD, true>
                                  : compressor_emit_kernel<act_t, RECORD, false>,
      kv, score, tokens, positions, state_base, emit_rows, ape, norm_weight, inv_freq, shape,
      state_kv, state_score, state_rows, out_pool, records, record_dims, pool_rows, per_cluster);
  if (status != cudaSuccess) return status;
  return launch_small(compressor_ring_kernel<act_t>, unsigned(std::min<int64_t>(tokens, 4096)),
                      k_ring_threads, 0, stream, kv, score, tokens, positions, state_base, ape,
                      shape.rate, ring, width, state_kv, state_score, state_rows);
}

}  // namespace

template <typename act_t>
cudaError_t compressor(const act_t* kv, const act_t* score, int64_t tokens,
                       const int32_t* positions, const int32_t* state_base,
                       const int32_t* emit_rows, const float* ape, const float* norm_weight,
                       const float* inv_freq, const compressor_shape& shape, float* state_kv,
                       float* state_score, int64_t state_rows, act_t* out_pool, int64_t pool_rows,
                       cudaStream_t stream) {
  return compressor_launch<act_t, false>(
      kv, score, tokens, positions, state_base, emit_rows, ape, norm_weight, inv_freq, shape,
      state_kv, state_score, state_rows, out_pool, nullptr, kv_record::dims{}, pool_rows, stream);
}

template <typename act_t>
cudaError_t compressor_records(const act_t* kv, const act_t* score, int64_t tokens,
                               const int32_t* positions, const int32_t* state_base,
                               const int32_t* emit_rows, const float* ape, const float* norm_weight,
                               const float* inv_freq, const compressor_shape& shape,
                               float* state_kv, float* state_score, int64_t state_rows,
                               const compressor_record_pool& out, cudaStream_t stream) {
  const kv_record::dims d{out.nope_dims, out.rope_dims, out.rows_per_block, out.block_bytes};
  if (!d.valid() || d.rope != shape.rope_dim || d.nope + d.rope != shape.head_dim ||
      (tokens > 0 && (!out.pool || reinterpret_cast<uintptr_t>(out.pool) % 16 != 0)))
    return cudaErrorInvalidValue;
  return compressor_launch<act_t, true>(kv, score, tokens, positions, state_base, emit_rows, ape,
                                        norm_weight, inv_freq, shape, state_kv, state_score,
                                        state_rows, nullptr, out.pool, d, out.rows, stream);
}

#define DSV4_COMPRESSOR_INSTANTIATE(T)                                                            \
  template cudaError_t compressor<T>(const T*, const T*, int64_t, const int32_t*, const int32_t*, \
                                     const int32_t*, const float*, const float*, const float*,    \
                                     const compressor_shape&, float*, float*, int64_t, T*,        \
                                     int64_t, cudaStream_t);                                      \
  template cudaError_t compressor_records<T>(                                                     \
      const T*, const T*, int64_t, const int32_t*, const int32_t*, const int32_t*, const float*,  \
      const float*, const float*, const compressor_shape&, float*, float*, int64_t,               \
      const compressor_record_pool&, cudaStream_t);
DSV4_COMPRESSOR_INSTANTIATE(float)
DSV4_COMPRESSOR_INSTANTIATE(__nv_bfloat16)
#undef DSV4_COMPRESSOR_INSTANTIATE

}  // namespace dsv4::cuda
