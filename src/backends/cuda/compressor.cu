// Compressor, parallel over the step's tokens. The CPU reference walks the tokens in order,
// writing each token's (kv, score + ape) into its sequence's ring and pooling the ring when a
// window closes. Here:
//
//   1. compressor_emit_kernel: one block per token that closes a window. Each slot of the window
//      (position p) is read from the step's own kv / score rows (+ ape) when position p is in
//      this step, and from the ring only when p belongs to an earlier step. Position p of the
//      emitting token t's sequence is in this step iff token i = t - (pos[t] - p) exists, has the
//      same state_base and position p (a sequence's tokens are contiguous, at consecutive
//      positions). A ring row read here always still holds position p: p >= pos[t] - ring + 1,
//      so the only positions that map to the same row are >= p + ring > pos[t], and those are
//      not from an earlier step.
//   2. compressor_ring_kernel: writes this step's tokens into the ring, each row once: token t
//      writes unless token t + ring (same sequence, position pos[t] + ring) overwrites the same
//      row later in step order, so the final ring equals the CPU's after its sequential walk.
//
// Ordering invariant: kernel 2 runs after kernel 1 on the same stream, so every ring row that
// kernel 1 reads (an earlier step's token) is read before kernel 2 can overwrite it. The
// arithmetic of the pooling follows the CPU operation by operation (max, then sum of e and of
// e * kv in slot order, explicit roundings); only the RMS sum of squares is reduced in another
// order.
#include "backends/cuda/activation.cuh"
#include "backends/cuda/compressor.h"
#include "backends/cuda/kernel_common.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_emit_threads = 128;
constexpr int k_ring_threads = 256;

// Slot source encoding in shared memory: >= 0 a token of this step, -1 left out, <= -2 ring row
// (-2 - code).
constexpr int32_t k_slot_skip = -1;

template <typename act_t>
__global__ void compressor_emit_kernel(const act_t* kv, const act_t* score, int64_t tokens,
                                       const int32_t* positions, const int32_t* state_base,
                                       const int32_t* emit_rows, const float* ape,
                                       const float* norm_weight, const float* inv_freq,
                                       compressor_shape shape, const float* state_kv,
                                       const float* state_score, int64_t state_rows,
                                       act_t* out_pool, int64_t pool_rows) {
  extern __shared__ float4 smem_raw[];
  __shared__ float scratch[k_warp_size];
  const int64_t t = blockIdx.x;
  const int64_t emit = emit_rows[t];
  const int64_t pos = positions[t];
  const int64_t rate = shape.rate;
  // Block-uniform exits: no window closes here, or the row / position is invalid.
  if (emit < 0 || emit >= pool_rows || pos < 0 || (pos + 1) % rate != 0) return;
  const int64_t hd = shape.head_dim;
  const int64_t width = (shape.overlap ? 2 : 1) * hd;
  const int64_t ring = (shape.overlap ? 2 : 1) * rate;
  const int64_t w = pos / rate;
  const int64_t base = state_base[t];
  // Slots: with overlap, the rate slots of window w-1 (channels [0, hd); absent for w = 0) then
  // the rate slots of window w (channels [hd, 2hd)); without, window w (channels [0, hd)).
  const int64_t first_window = (shape.overlap && w > 0) ? w - 1 : w;
  const int64_t n_slots = (w - first_window + 1) * rate;
  float* entry = reinterpret_cast<float*>(smem_raw);           // [hd]
  int32_t* slot_src = reinterpret_cast<int32_t*>(entry + hd);  // [n_slots]
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

  float ss = 0.0f;
  for (int64_t c = threadIdx.x; c < hd; c += blockDim.x) {
    // Slot i's (score, kv) at channel c of its window half.
    auto load = [&](int64_t i, float& s, float& v) {
      const int64_t off = (shape.overlap && (first_window * rate + i) / rate == w) ? hd : 0;
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
    float mx = -INFINITY;
    for (int64_t i = 0; i < n_slots; ++i) {
      if (slot_src[i] == k_slot_skip) continue;
      float s, v;
      load(i, s, v);
      mx = fmaxf(mx, s);
    }
    float den = 0.0f, num = 0.0f;
    for (int64_t i = 0; i < n_slots; ++i) {
      if (slot_src[i] == k_slot_skip) continue;
      float s, v;
      load(i, s, v);
      const float e = expf(s - mx);
      den = __fadd_rn(den, e);
      num = __fadd_rn(num, __fmul_rn(e, v));
    }
    const float x = num / den;
    entry[c] = x;
    ss = __fadd_rn(ss, __fmul_rn(x, x));
  }
  ss = block_sum(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / float(hd) + shape.norm_eps);
  for (int64_t c = threadIdx.x; c < hd; c += blockDim.x)
    entry[c] = __fmul_rn(norm_weight[c], __fmul_rn(entry[c], inv));
  __syncthreads();

  // RoPE on the trailing rope_dim channels at position w * rate (interleaved pairs, f32 angle
  // and accurate sinf / cosf as rope.cu and the CPU's rope_rotate).
  act_t* out = out_pool + emit * hd;
  const int64_t rope_start = hd - shape.rope_dim;
  const float position = float(int32_t(w * rate));
  for (int64_t c = threadIdx.x; c < rope_start; c += blockDim.x)
    out[c] = act_from_f32<act_t>(entry[c]);
  for (int64_t i = threadIdx.x; i < shape.rope_dim / 2; i += blockDim.x) {
    const float angle = position * inv_freq[i];
    const float co = cosf(angle);
    const float si = sinf(angle);
    const float a = entry[rope_start + 2 * i];
    const float b = entry[rope_start + 2 * i + 1];
    out[rope_start + 2 * i] = act_from_f32<act_t>(__fsub_rn(__fmul_rn(a, co), __fmul_rn(b, si)));
    out[rope_start + 2 * i + 1] =
        act_from_f32<act_t>(__fadd_rn(__fmul_rn(b, co), __fmul_rn(a, si)));
  }
}

template <typename act_t>
__global__ void compressor_ring_kernel(const act_t* kv, const act_t* score, int64_t tokens,
                                       const int32_t* positions, const int32_t* state_base,
                                       const float* ape, int64_t rate, int64_t ring, int64_t width,
                                       float* state_kv, float* state_score, int64_t state_rows) {
  const int64_t n = tokens * width;
  for (int64_t x = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; x < n;
       x += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = x / width;
    const int64_t c = x % width;
    const int64_t pos = positions[t];
    const int64_t base = state_base[t];
    const int64_t later = t + ring;
    if (later < tokens && state_base[later] == base && positions[later] == pos + ring)
      continue;  // the same ring row is written by a later token of this step
    const int64_t row = base + pos % ring;
    if (base < 0 || pos < 0 || row >= state_rows) continue;
    state_kv[row * width + c] = act_to_f32(kv[t * width + c]);
    state_score[row * width + c] =
        __fadd_rn(act_to_f32(score[t * width + c]), ape[(pos % rate) * width + c]);
  }
}

}  // namespace

template <typename act_t>
cudaError_t compressor(const act_t* kv, const act_t* score, int64_t tokens,
                       const int32_t* positions, const int32_t* state_base,
                       const int32_t* emit_rows, const float* ape, const float* norm_weight,
                       const float* inv_freq, const compressor_shape& shape, float* state_kv,
                       float* state_score, int64_t state_rows, act_t* out_pool, int64_t pool_rows,
                       cudaStream_t stream) {
  if (tokens < 0 || shape.rate <= 0 || shape.head_dim <= 0 || shape.rope_dim < 0 ||
      shape.rope_dim % 2 != 0 || shape.rope_dim > shape.head_dim || state_rows < 0 ||
      pool_rows < 0 || tokens > INT32_MAX || state_rows > INT32_MAX - 2)
    return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int64_t width = (shape.overlap ? 2 : 1) * shape.head_dim;
  const int64_t ring = (shape.overlap ? 2 : 1) * shape.rate;
  const size_t smem = size_t(shape.head_dim) * sizeof(float) + size_t(ring) * sizeof(int32_t);
  if (smem > 48 * 1024) return cudaErrorInvalidValue;
  compressor_emit_kernel<<<unsigned(tokens), k_emit_threads, smem, stream>>>(
      kv, score, tokens, positions, state_base, emit_rows, ape, norm_weight, inv_freq, shape,
      state_kv, state_score, state_rows, out_pool, pool_rows);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  compressor_ring_kernel<<<grid_stride_blocks(tokens * width, k_ring_threads), k_ring_threads, 0,
                           stream>>>(kv, score, tokens, positions, state_base, ape, shape.rate,
                                     ring, width, state_kv, state_score, state_rows);
  return cudaGetLastError();
}

#define DSV4_COMPRESSOR_INSTANTIATE(T)                                                            \
  template cudaError_t compressor<T>(const T*, const T*, int64_t, const int32_t*, const int32_t*, \
                                     const int32_t*, const float*, const float*, const float*,    \
                                     const compressor_shape&, float*, float*, int64_t, T*,        \
                                     int64_t, cudaStream_t);
DSV4_COMPRESSOR_INSTANTIATE(float)
DSV4_COMPRESSOR_INSTANTIATE(__nv_bfloat16)
#undef DSV4_COMPRESSOR_INSTANTIATE

}  // namespace dsv4::cuda
