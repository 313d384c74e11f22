// CSA/HCA token compressor (f32 or bf16 activations, f32 state): softmax pooling of each closed
// window, RMSNorm, RoPE at the window's first position, written into the compressed pool;
// per-sequence state ring.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

struct compressor_shape {
  int64_t rate = 4;        // tokens per compressed entry
  bool overlap = false;    // CSA: entry w pools Ca of window w-1 and Cb of window w
  int64_t head_dim = 512;  // entry width; kv / score rows are (overlap ? 2 : 1) * head_dim
  int64_t rope_dim = 64;   // trailing dims rotated at position w * rate
  float norm_eps = 1e-6f;
};

// The semantics of dsv4::ops::compressor for one step of `tokens` tokens (kv, score: [tokens,
// width], width = (overlap ? 2 : 1) * head_dim; ape [rate, width]; norm_weight [head_dim];
// inv_freq [rope_dim / 2]; state_kv / state_score [state_rows, width] with ring = (overlap ? 2 :
// 1) * rate rows per sequence starting at state_base[t]; out_pool [pool_rows, head_dim]).
// Requirements the model's step plan meets: the tokens of one sequence are contiguous in the
// step, at consecutive positions, and distinct sequences have distinct state_base. Indices are
// bounds-checked on the device (an out-of-range emit row or state row is not written; a window
// slot whose state row is out of range is left out of the pooling), where the CPU throws.
// Two kernels, no host synchronisation (see compressor.cu for the ordering invariant).
// kv, score and out_pool are activations (act_t: float or __nv_bfloat16); the state ring stays
// f32 (it holds score + ape, a softmax input that bf16 would round), as do ape, norm_weight and
// all the pooling arithmetic.
template <typename act_t>
cudaError_t compressor(const act_t* kv, const act_t* score, int64_t tokens,
                       const int32_t* positions, const int32_t* state_base,
                       const int32_t* emit_rows, const float* ape, const float* norm_weight,
                       const float* inv_freq, const compressor_shape& shape, float* state_kv,
                       float* state_score, int64_t state_rows, act_t* out_pool, int64_t pool_rows,
                       cudaStream_t stream);

// An FP8 KV record pool (layout io/kv_record.h: nope_dims FP8 values with an E8M0 scale per 64,
// rope_dims BF16 values; rows_per_block records and their scales per block_bytes), 16-byte
// aligned, `rows` records.
struct compressor_record_pool {
  uint8_t* pool = nullptr;
  int64_t nope_dims = 0, rope_dims = 0, rows_per_block = 1, block_bytes = 0;
  int64_t rows = 0;
};

// compressor() into a record pool in the same pass: each emitted entry (the values compressor()
// would write into an act_t pool) is encoded into record emit_rows[t], byte for byte what
// kv_record_pack of those act_t rows writes (the scale padding zeroed, no other byte written).
// Requires nope_dims + rope_dims == shape.head_dim and rope_dims == shape.rope_dim; anything
// invalid returns cudaErrorInvalidValue.
template <typename act_t>
cudaError_t compressor_records(const act_t* kv, const act_t* score, int64_t tokens,
                               const int32_t* positions, const int32_t* state_base,
                               const int32_t* emit_rows, const float* ape, const float* norm_weight,
                               const float* inv_freq, const compressor_shape& shape,
                               float* state_kv, float* state_score, int64_t state_rows,
                               const compressor_record_pool& out, cudaStream_t stream);

}  // namespace dsv4::cuda
