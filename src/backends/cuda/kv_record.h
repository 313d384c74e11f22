// FP8 KV records on the GPU: the pack scatter (KV rows -> records at pool rows, what a cache write
// does) and the unpack gather (records -> f32 / bf16 rows, what an attention kernel that reads
// records does per key). Byte layout and value rules: io/kv_record.h (FlashMLA's MODEL1 layout,
// 584 bytes per DeepSeek-V4 row); the CPU functions there are the reference.
//
// Status: pack and gather GPU-verified (H200, 2026-11-22: kv_record_pack 8/8, kv_record_gather
// 8/8, kv_record_round_trip 6/6); the record cache (cache_options::kv_dtype fp8) calls them from
// cuda_ops (scatter_rows, compressor, and the gather fallback of sparse_attention).
//
// Layout arguments (both kernels): nope_dims (a multiple of 16), rope_dims (a multiple of 8),
// rows_per_block > 0, block_bytes (a multiple of 8, >= rows_per_block * row bytes), as in
// dsv4::kv_record_layout; `pool` 16-byte aligned. Anything else returns cudaErrorInvalidValue.
//
// Exactness: pack computes each block's amax exactly (NaN ignored), the scale 2^ceil(log2(max(
// amax, 1e-4) / 448)) from one IEEE division, x / s exactly (power of two), and rounds to the
// e4m3 grid with quant::e4m3_round (the kernel of fake_quant_fp8_rows); the codes, scale bytes and
// BF16 RoPE bits are then the CPU's byte for byte (NaN -> code 0x7f; RoPE NaN made quiet like
// f32_to_bf16). Gather multiplies the exact e4m3 value by the exact scale in one f32 rounding, as
// kv_record_decode does; in bf16 storage the product is exact (an e4m3 value times a power of two
// has 4 significant bits), so both storage types reproduce the CPU decode bit for bit.
//
// How attention_decode reads records (kv_rows<kv_fp8_record>, attention_decode.h): per key row r
// it copies the 576 data bytes at data_offset(r) (36 16-byte cp.async) and the 8 scale bytes at
// scale_offset(r) (one 8-byte cp.async) into a raw stage, and the consuming iteration turns the
// stage into the bf16 key tile the bf16-pool path uses (value = e4m3(code) * 2^(scale_byte - 127)
// for dims [0, 448), the BF16 RoPE values for [448, 512)): bit for bit the bf16-pool kernel on
// the gathered rows, 584 instead of 1024 bytes read per key. Applying the power-of-two scale once
// per 64-dim segment of q.k and p.v (fewer conversions) would change the f32 summation order,
// hence the results' bits; it is not done.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// For i < count, r = rows ? rows[i] : i (rows[i] < 0 or >= row_limit skipped; row_limit is
// ignored without a row list): the nope_dims + rope_dims values at x[i * x_stride ...] are encoded
// into record r of `pool` (the scale padding bytes zeroed; no other byte written). One warp per
// listed row; no host synchronisation. act_t: float or __nv_bfloat16.
template <typename act_t>
cudaError_t kv_record_pack(const act_t* x, int64_t x_stride, const int32_t* rows, int64_t row_limit,
                           int64_t count, uint8_t* pool, int64_t nope_dims, int64_t rope_dims,
                           int64_t rows_per_block, int64_t block_bytes, cudaStream_t stream);

// For i < count, r = rows ? rows[i] : i: out[i * out_stride ...] (nope_dims + rope_dims values) =
// decode(record r); r < 0 or r >= row_limit (only checked with a row list) gives zeros. One warp
// per listed row; no host synchronisation.
template <typename act_t>
cudaError_t kv_record_gather(const uint8_t* pool, int64_t nope_dims, int64_t rope_dims,
                             int64_t rows_per_block, int64_t block_bytes, const int32_t* rows,
                             int64_t row_limit, int64_t count, act_t* out, int64_t out_stride,
                             cudaStream_t stream);

}  // namespace dsv4::cuda
