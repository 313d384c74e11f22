// Loads of the split-KV decode kernels (attention_decode.cu): slot indices and row references,
// key tiles by cp.async (bf16 / f32 rows, FP8 records and their dequantization to the bf16 tile),
// the query tile.
#pragma once

#include <cstdint>

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/kv_record.cuh"
#include "backends/cuda/mma_sm80.cuh"

namespace dsv4::cuda {

namespace {

template <typename pool_t>
__device__ __forceinline__ int64_t visible_slots(const kv_rows<pool_t>& s, int64_t t) {
  if (!s.pool) return 0;
  if (s.rows) return s.rows_width;
  return clamp_visible(s.n_visible[t], s.table_width * s.block_size);
}

// Where token t's slot s lives: window slots [0, cap_w), compressed slots [cap_w, cap_w + cap_c).
// Slot indices (explicit rows, or block-table entries for the paged form) are prefetched into
// shared memory with cp.async a few tiles ahead (index_src), so no thread waits on a dependent
// global load inside the key loop; row_ref turns the prefetched value into a row.
template <typename pool_t>
struct slot_space {
  kv_rows<pool_t> window, comp;
  // Slot numbers are 32-bit (the host checks the capacities) so the block division is a short
  // unsigned 32-bit sequence instead of a 64-bit division call.
  int64_t t;
  int cap_w, n_w, n_c, hi;
  int64_t seq_w, seq_c;

  __device__ __forceinline__ const int32_t* index_of(const kv_rows<pool_t>& src, int64_t seq,
                                                     int i) const {
    if (src.rows) return src.rows + t * src.rows_width + i;
    if (seq < 0 || seq >= src.table_rows) return nullptr;
    const uint32_t block = uint32_t(i) / uint32_t(src.block_size);
    if (block >= src.table_width) return nullptr;
    return src.block_table + seq * src.table_width + block;
  }
  // The global index to prefetch for slot s, or null when s holds no key.
  __device__ __forceinline__ const int32_t* index_src(int s) const {
    if (s >= hi) return nullptr;
    if (s < cap_w) return s < n_w ? index_of(window, seq_w, s) : nullptr;
    s -= cap_w;
    return s < n_c ? index_of(comp, seq_c, s) : nullptr;
  }
  // Row of slot s (index_src(s) non-null) from its prefetched index v, or no row if invalid.
  // The source's fields are selected one by one: a reference chosen at run time between
  // `window` and `comp` made both structs addressable, i.e. copied to local memory in the
  // prologue and read back per slot (232 bytes of stack; with ~230 KB of shared memory those
  // loads went to L2: ncu, HCA 8K T=1 (fused cluster plan), 44K local sectors against 23K global
  // ones).
  __device__ __forceinline__ typename pool_traits<pool_t>::ref row_ref(int s, int32_t v) const {
    const bool in_window = s < cap_w;
    const int i = in_window ? s : s - cap_w;
    const bool explicit_rows = in_window ? window.rows != nullptr : comp.rows != nullptr;
    const int64_t block_size = in_window ? window.block_size : comp.block_size;
    const int64_t pool_rows = in_window ? window.pool_rows : comp.pool_rows;
    const pool_t* pool = in_window ? window.pool : comp.pool;
    int64_t row = v;
    if (!explicit_rows) {
      if (v < 0)
        row = -1;
      else
        row = int64_t(v) * block_size + int64_t(uint32_t(i) % uint32_t(block_size));
    }
    const bool ok = row >= 0 && row < pool_rows;
    if constexpr (pool_traits<pool_t>::records) {
      if (!ok) return {nullptr, nullptr};
      // Record rows and rows_per_block fit 32 bits (the host checks): a short unsigned division.
      const uint32_t rpb =
          uint32_t(in_window ? window.record_rows_per_block : comp.record_rows_per_block);
      const int64_t block_bytes = in_window ? window.record_block_bytes : comp.record_block_bytes;
      const uint32_t block = uint32_t(row) / rpb, slot = uint32_t(row) - block * rpb;
      const uint8_t* base = reinterpret_cast<const uint8_t*>(pool) + int64_t(block) * block_bytes;
      return {base + int64_t(slot) * k_rec_data,
              base + int64_t(rpb) * k_rec_data + int64_t(slot) * k_rec_scale};
    } else {
      return ok ? pool + row * k_d : nullptr;
    }
  }
};

// Split `split` of token t's key space: slots [lo, hi) with hi = min(lo + keys_per_split,
// cap_w + cap_c), and its live tiles (those holding a visible slot): a run of len1 over the
// window part, then one of n_live - len1 over the compressed part from tile j2a, merged where a
// tile straddles both. One set-up for the synchronous and the warp-specialized kernels.
template <typename pool_t>
struct split_keys {
  slot_space<pool_t> space;
  int lo, len1, j2a, n_live;
  // The first slot of live tile k.
  __device__ __forceinline__ int tile_start(int k) const {
    return lo + k_tile * (k < len1 ? k : j2a + (k - len1));
  }
};
template <typename pool_t>
__device__ __forceinline__ split_keys<pool_t> split_key_space(kv_rows<pool_t> window,
                                                              kv_rows<pool_t> comp, int64_t t,
                                                              int cap_w, int cap_c, int split,
                                                              int keys_per_split) {
  slot_space<pool_t> space{.window = window,
                           .comp = comp,
                           .t = t,
                           .cap_w = cap_w,
                           .n_w = 0,
                           .n_c = 0,
                           .hi = 0,
                           .seq_w = -1,
                           .seq_c = -1};
  if (!window.rows) space.seq_w = window.token_seq[t];
  if (comp.pool && !comp.rows) space.seq_c = comp.token_seq[t];
  space.n_w = int(min(visible_slots(window, t), int64_t(cap_w)));
  space.n_c = int(min(visible_slots(comp, t), int64_t(cap_c)));
  const int lo = split * keys_per_split;
  const int hi = min(lo + keys_per_split, cap_w + cap_c);
  space.hi = hi;
  int len1 = 0, j2a = 0, len2 = 0;
  if (space.n_w > lo) len1 = ceil_div_dev(min(space.n_w, hi) - lo, k_tile);
  {
    const int c_lo = max(cap_w, lo), c_hi = min(cap_w + space.n_c, hi);
    if (c_hi > c_lo) {
      j2a = max((c_lo - lo) / k_tile, len1);
      len2 = max(ceil_div_dev(c_hi - lo, k_tile) - j2a, 0);
    }
  }
  return {.space = space, .lo = lo, .len1 = len1, .j2a = j2a, .n_live = len1 + len2};
}

// Warp 0 prefetches the indices of the 32 slots from s0 into `dst` (shared address).
template <typename pool_t>
__device__ __forceinline__ void prefetch_indices(const slot_space<pool_t>& space, int s0,
                                                 uint32_t dst) {
  if (threadIdx.x < k_tile) {
    const int32_t* src = space.index_src(s0 + threadIdx.x);
    cp_async_ca_zfill_noclobber<4>(dst + threadIdx.x * 4,
                                   src ? static_cast<const void*>(src) : space.window.pool,
                                   src != nullptr);
  }
}

// Warp 0: references of the 32 slots from s0 (none where no key) from their prefetched indices.
// Lane l converts slot l, whose index it prefetched itself (complete after its wait_group).
template <typename pool_t>
__device__ __forceinline__ void convert_slots(const slot_space<pool_t>& space, int s0,
                                              const int32_t* index,
                                              typename pool_traits<pool_t>::ref* ptrs) {
  if (threadIdx.x < k_tile) {
    const int s = s0 + int(threadIdx.x);
    ptrs[threadIdx.x] = space.index_src(s) ? space.row_ref(s, index[threadIdx.x])
                                           : typename pool_traits<pool_t>::ref{};
  }
}

// Issues the copies of the 32 rows `ptrs` points at into the stage at `dst` (shared address;
// null rows are zero-filled) and marks which slots hold a key. Thread x copies chunk x % 64 of
// rows x / 64 + 4 i.
template <bool wg, typename pool_t>
__device__ __forceinline__ void load_tile(const pool_t* const* ptrs, const void* any_global,
                                          unsigned char* dst_ptr, uint32_t dst, int* valid) {
  const int chunk = threadIdx.x % k_chunks;
#pragma unroll
  for (int i = 0; i < k_tile * k_chunks / k_threads; ++i) {
    const int r = threadIdx.x / k_chunks + (k_threads / k_chunks) * i;
    const pool_t* p = ptrs[r];
    if (chunk == 0) valid[r] = p != nullptr;
    if constexpr (sizeof(pool_t) == 2) {
      cp_async_cg_16_zfill_noclobber(dst + tile_offset<wg, k_tile>(r, chunk),
                                     p ? static_cast<const void*>(p + chunk * 8) : any_global, p);
    } else {
      float4 a = make_float4(0, 0, 0, 0), b = a;
      if (p) {
        a = reinterpret_cast<const float4*>(p + chunk * 8)[0];
        b = reinterpret_cast<const float4*>(p + chunk * 8)[1];
      }
      *reinterpret_cast<uint4*>(dst_ptr + tile_offset<wg, k_tile>(r, chunk)) =
          make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                     pack_bf16x2(b.z, b.w));
    }
  }
}

// Records: issues the copies of the 32 records `refs` names into the raw stage at `dst` (data row
// r at r * 576, the scale bytes of row r at 32 * 576 + 8 r; missing rows zero-filled, which
// dequantize to 0) and marks which slots hold a key.
__device__ __forceinline__ void load_record_tile(const pool_traits<kv_fp8_record>::ref* refs,
                                                 const void* any_global, uint32_t dst, int* valid) {
  constexpr int n = k_tile * k_rec_data_chunks;
#pragma unroll
  for (int i = 0; i < (n + k_threads - 1) / k_threads; ++i) {
    const int x = threadIdx.x + i * k_threads;
    if (n % k_threads == 0 || x < n) {
      const int r = x / k_rec_data_chunks, c = x % k_rec_data_chunks;
      const uint8_t* p = refs[r].data;
      cp_async_cg_16_zfill_noclobber(dst + r * k_rec_data + c * 16,
                                     p ? static_cast<const void*>(p + c * 16) : any_global,
                                     p != nullptr);
    }
  }
  if (threadIdx.x < k_tile) {
    const pool_traits<kv_fp8_record>::ref ref = refs[threadIdx.x];
    valid[threadIdx.x] = ref.data != nullptr;
    cp_async_ca_zfill_noclobber<8>(dst + k_tile * k_rec_data + threadIdx.x * k_rec_scale,
                                   ref.data ? static_cast<const void*>(ref.scales) : any_global,
                                   ref.data != nullptr);
  }
}

// Records: the raw stage at `raw` -> the bf16 key tile at `tile` (swizzled as load_tile stores
// rows). Thread x writes chunk x % 64 of rows x / 64 + 4 i: chunks < 56 from 8 e4m3 codes times
// their block's power-of-two scale (e4m3 x 2^k has 4 significant bits: the f32 product and its
// bf16 rounding are exact for every scale a pack writes, and otherwise round exactly as
// kv_record_gather's bf16 output does), chunks 56.. copy the BF16 RoPE values.
// 8 e4m3 codes times their block's scale (kv_record::e8m0_value of its byte) -> 8 bf16 values
// (one 16-byte chunk of a key row). The one dequantization of record codes in these kernels: the
// synchronous kernel's tile and the warp-specialized kernel's producer both call it, so both
// give the same bf16 tile.
__device__ __forceinline__ uint4 dequant_codes8(uint2 codes, float s) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t word = j < 2 ? codes.x : codes.y;
    const float2 f = kv_record::e4m3x2_values(uint16_t(word >> (16 * (j & 1))));
    w[j] = pack_bf16x2(__fmul_rn(f.x, s), __fmul_rn(f.y, s));
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// kv_record::e8m0_value with selects instead of branches (the same value for every byte: 0xff
// NaN, 0 -> 2^-127, else 2^(b - 127)), so the producer's loads and conversions can interleave.
__device__ __forceinline__ float e8m0_value_sel(uint32_t b) {
  return __uint_as_float(b == 0xffu ? 0x7fc00000u : b == 0u ? 0x00400000u : b << 23);
}

// The warp-specialized producer's form of dequant_codes8 (the same bf16 bits for every code and
// scale byte), one bf16x2 multiply per code pair instead of two f32 products: the pair to f16x2 and
// f32 (exact), packed to bf16x2 (exact: an e4m3 value has 4 significant bits and |v| >= 2^-9),
// then multiplied by s2 = the block's scale 2^k in both halves (e8m0_bf16x2) with one rounding to
// nearest even. dequant_codes8 rounds the f32 product v * 2^k to bf16 once, and that product is
// exact in f32 for every scale byte (k >= -127 and the lowest bit of v >= 2^-9 keep its bits above
// 2^-149), so both round the same exact product: bf16 subnormal results included (mul.rn.bf16x2
// keeps subnormals), NaN codes or scale give the canonical NaN in both.
__device__ __forceinline__ uint32_t mul_bf16x2_rn(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint4 dequant_codes8_bf16(uint2 codes, uint32_t s2) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const uint32_t word = j < 2 ? codes.x : codes.y;
    const float2 f = kv_record::e4m3x2_values(uint16_t(word >> (16 * (j & 1))));
    w[j] = mul_bf16x2_rn(pack_bf16x2(f.x, f.y), s2);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Scale byte `byte` (0..3) of the word sc -> kv_record::e8m0_value of it as bf16 bits in both
// halves of a bf16x2: 2^(b - 127) is b << 7 for b = 1..254 (exponent field b, mantissa 0); b = 0
// (2^-127, the subnormal 0x0040) and b = 0xff (NaN, 0x7fc0) are b << 7 with bit 6 set.
// (`byte` a constant after inlining: one PRMT.)
// Scale byte `byte` of sc in both halves: b | b << 16 (one PRMT; the scale conversions' start).
__device__ __forceinline__ uint32_t scale_byte_pair(uint32_t sc, int byte) {
  return __byte_perm(sc, 0u, uint32_t(byte | 4 << 4 | byte << 8 | 4 << 12));
}
__device__ __forceinline__ uint32_t e8m0_bf16x2(uint32_t sc, int byte) {
  const uint32_t t = scale_byte_pair(sc, byte);
  const bool edge = ((t + 0x00010001u) & 0x00fe00feu) == 0u;  // (b + 1) mod 256 is 0 or 1
  return (t << 7) | (edge ? 0x00400040u : 0u);
}

// The producer's fast form of dequant_codes8_bf16, for scale bytes b <= k_fast_scale_max and
// codes other than 0x7f / 0xff (kv_record.h: NaN codes occur only under scale 0xff): the same bf16
// bits. Each pair by one PRMT whose selector nibbles 8 | n copy byte n's sign into the byte above
// (bytes 0, 1 -> 0x9180, bytes 2, 3 -> 0xB3A2: two sign-extended int16 halves), << 4 and a mask
// leave sign at bit 15 and the 7 magnitude bits at 10..4: the bf16 bits of value * 2^-120 (an
// e4m3 exponent e in the bf16 exponent field, E4M3 subnormals on bf16 subnormals, exactly), then
// one mul.rn.bf16x2 by s2 = 2^(b - 7) (e8m0_bf16x2_fast): the exact product rounded once, as
// dequant_codes8_bf16 (bench_attention --fp8-convert-check compares every code pair and byte).
constexpr uint32_t k_fast_scale_max = 134;  // 2^(b - 7) a normal bf16: exponent field b + 120
__device__ __forceinline__ uint32_t e4m3_pair_bits(uint32_t word, uint32_t selector) {
  uint32_t z;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(z) : "r"(word), "r"(selector));
  return (z << 4) & 0x87F087F0u;
}
__device__ __forceinline__ uint4 dequant_codes8_bf16_fast(uint2 codes, uint32_t s2) {
  return make_uint4(mul_bf16x2_rn(e4m3_pair_bits(codes.x, 0x9180u), s2),
                    mul_bf16x2_rn(e4m3_pair_bits(codes.x, 0xB3A2u), s2),
                    mul_bf16x2_rn(e4m3_pair_bits(codes.y, 0x9180u), s2),
                    mul_bf16x2_rn(e4m3_pair_bits(codes.y, 0xB3A2u), s2));
}
// Scale byte `byte` of sc (<= k_fast_scale_max) -> 2^(b - 7) in both halves: exponent field b +
// 120, mantissa 0 (`byte` a constant after inlining: one PRMT and one IMAD).
__device__ __forceinline__ uint32_t e8m0_bf16x2_fast(uint32_t sc, int byte) {
  return scale_byte_pair(sc, byte) * 128u + ((120u << 7) | (120u << 23));
}
// Whether any of the 7 scale bytes of a record (sc; byte 7 is padding) exceeds k_fast_scale_max.
__device__ __forceinline__ bool record_scales_slow(uint2 sc) {
  return __vcmpgtu4(sc.x, 0x86868686u) != 0u || (__vcmpgtu4(sc.y, 0x86868686u) & 0x00ffffffu) != 0u;
}

__device__ __forceinline__ void dequant_record_tile(const unsigned char* raw, unsigned char* tile) {
  const int chunk = threadIdx.x % k_chunks;
#pragma unroll
  for (int i = 0; i < k_tile * k_chunks / k_threads; ++i) {
    const int r = threadIdx.x / k_chunks + (k_threads / k_chunks) * i;
    const unsigned char* row = raw + r * k_rec_data;
    uint4 v;
    if (chunk < k_rec_nope_chunks) {
      v = dequant_codes8(*reinterpret_cast<const uint2*>(row + chunk * 8),
                         kv_record::e8m0_value(raw[k_tile * k_rec_data + r * k_rec_scale +
                                                   chunk * 8 / int(kv_record::k_quant_block)]));
    } else {
      v = *reinterpret_cast<const uint4*>(row + k_nope + (chunk - k_rec_nope_chunks) * 16);
    }
    *reinterpret_cast<uint4*>(tile + swizzled(r, chunk)) = v;
  }
}

__device__ __forceinline__ uint4 load8_bf16(const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0];
  const float4 b = reinterpret_cast<const float4*>(p)[1];
  return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                    pack_bf16x2(b.z, b.w));
}

// Threads 0 .. k_threads - 1 put token t's query rows head0 .. head0 + k_rows - 1 (zeros past
// `heads`) into the shared tile at `smem` (shared address q_s) in the tile_offset<wg> layout:
// bf16 by cp.async (the caller commits and waits), f32 converted to bf16 by the threads.
template <bool wg, typename act_t>
__device__ __forceinline__ void load_query_tile(const act_t* q, int64_t t, int64_t heads,
                                                int64_t head0, unsigned char* smem, uint32_t q_s) {
  if constexpr (sizeof(act_t) == 2) {
#pragma unroll
    for (int i = 0; i < k_rows * k_chunks / k_threads; ++i) {
      const int x = threadIdx.x + i * k_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const int64_t h = head0 + r;
      cp_async_cg_16_zfill_noclobber(q_s + tile_offset<wg, k_rows>(r, c),
                                     h < heads ? q + (t * heads + h) * k_d + c * 8 : q, h < heads);
    }
  } else {
#pragma unroll
    for (int i = 0; i < k_rows * k_chunks / k_threads; ++i) {
      const int x = threadIdx.x + i * k_threads;
      const int r = x / k_chunks, c = x % k_chunks;
      const int64_t h = head0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (h < heads) v = load8_bf16(q + (t * heads + h) * k_d + c * 8);
      *reinterpret_cast<uint4*>(smem + tile_offset<wg, k_rows>(r, c)) = v;
    }
  }
}

}  // namespace

}  // namespace dsv4::cuda
