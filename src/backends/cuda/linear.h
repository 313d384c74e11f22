// Linear layers with the weight kept in its checkpoint format on the GPU and expanded in registers
// (f32 activations in and out, f32 accumulation). Formats and layouts (see io/linear_weight.h and
// core/dtype.h for the element encodings):
//   f32, bf16  [rows, cols]
//   fp8_block  E4M3 [rows, cols] + one scale per 128x128 block, [ceil(rows/128), ceil(cols/128)]
//   mxfp4      packed e2m1 [rows, cols/2] (low nibble = even k) + one scale per 32 along k,
//              [rows, cols/32]; cols % 32 == 0
//   nvfp4      packed e2m1 [rows, cols/2] + E4M3 scale per 16 along k [rows, cols/16] + one f32
//              global scale per matrix; cols % 16 == 0; w = (e2m1 * scale) * global
// Block scales (fp8_block, mxfp4) are f32, or raw E8M0 bytes when scale_e8m0 is set. Every
// dequantized weight equals dequantize_to_f32's value bit for bit; only the summation order of
// the dot products differs from the CPU reference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

enum class weight_kind : uint8_t { f32, bf16, fp8_block, mxfp4, nvfp4 };

// Byte layout of the weight data. checkpoint: as above (row-major, every kernel reads it).
// repacked: 4-bit weights (mxfp4 / nvfp4, rows % 16 == 0, cols % 128 == 0) in the tiled,
// bit-permuted layout of moe_repack.h (scales and global scales unchanged), read only by the
// kernels that say so (moe_decode_experts*, moe_prefill_experts* with the wgmma core; for dense
// nvfp4 matrices linear_decode and linear_gemm); every other kernel (the GEMV / tiled kernels
// below among them) refuses it (validate_weight below), so no kernel can misread it silently.
enum class weight_layout : uint8_t { checkpoint, repacked };

// `count` matrices [rows, cols] of one format stacked back to back (count > 1 for the routed
// experts): matrix e starts at data + e * weight_matrix_bytes(...), its scales at scale +
// e * scale_matrix_count(...) elements, its global scale at global_scale[e]. All device pointers.
struct device_weight {
  weight_kind kind = weight_kind::f32;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features
  int64_t count = 1;
  const void* data = nullptr;
  const void* scale = nullptr;          // fp8_block, mxfp4 (f32 or E8M0 bytes), nvfp4 (E4M3)
  bool scale_e8m0 = false;              // fp8_block / mxfp4: scale holds E8M0 bytes, not f32
  // mxfp4 with E8M0 scales: every scale byte of all `count` matrices is <= 128 (every block scale
  // <= 2), as the uploader found it (weight_facts.h); the MoE decode kernels then skip their
  // per-round check for the two-step variant. false: not known (always correct).
  bool scales_at_most_2 = false;
  const float* global_scale = nullptr;  // nvfp4: count f32 values (null reads as 1)
  weight_layout layout = weight_layout::checkpoint;
};

// Bytes of one matrix's weight data and elements of one matrix's scale array.
int64_t weight_matrix_bytes(weight_kind kind, int64_t rows, int64_t cols);
int64_t scale_matrix_count(weight_kind kind, int64_t rows, int64_t cols);
// cudaSuccess when `w` is well formed (dims, divisibility, non-null pointers), otherwise
// cudaErrorInvalidValue. The repacked layout is well formed only where accept_repacked is set
// (the caller reads it) and for a 4-bit kind with rows % 16 == 0 and cols % 128 == 0: the
// kernels that read only the checkpoint layout call this with the default and so refuse it.
cudaError_t validate_weight(const device_weight& w, bool accept_repacked = false);

// y[t, :] = x[t, :] . W^T for t < tokens: x [tokens, cols] activations (act_t: float or
// __nv_bfloat16), y [tokens, rows] of out_t (act_t, or float for the LM head's logits with bf16
// activations), both contiguous, W matrix 0 of `w`; f32 accumulation. Decode-sized steps (<= 64
// tokens) read each weight once per 16 tokens (warp-per-rows GEMV); larger steps use a
// shared-memory tiled GEMM. No host synchronisation. Instantiated for (float, float),
// (bf16, bf16) and (bf16, float).
template <typename act_t, typename out_t>
cudaError_t linear(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                   cudaStream_t stream);

// Block-diagonal: x [tokens, groups * cols], W [groups * out_g, cols] (out_g = rows / groups),
// y [tokens, rows]; group g maps x[:, g*cols : (g+1)*cols] to y[:, g*out_g : (g+1)*out_g]. One
// launch for all groups. groups == 1 is linear.
template <typename act_t, typename out_t>
cudaError_t grouped_linear(const act_t* x, int64_t tokens, const device_weight& w, int64_t groups,
                           out_t* y, cudaStream_t stream);

}  // namespace dsv4::cuda
