// Device side of linear.h: exact expansion of checkpoint-format weights in registers, and the
// warp GEMV core shared by the linear and MoE kernels (included by linear.cu and moe.cu only).
//
// Invariants:
//  * A decoded weight equals dsv4::dequantize_to_f32's value bit for bit: e4m3 and e2m1 codes
//    convert exactly (through f16, whose range holds both), code * block scale is exact, and the
//    nvfp4 global scale multiplies last, as on the CPU.
//  * The vector path reads 16 bytes of one row per lane per step (4 f32, 8 bf16, 16 e4m3 or 32
//    e2m1 elements); it needs cols % elements-per-16-bytes == 0, 16-byte aligned matrices and rows,
//    and float4-aligned activation rows. Anything else takes the scalar path (one element per
//    lane per step), which decodes the same values.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear.h"

namespace dsv4::cuda::detail {

// ---- element decoders ----
__device__ __forceinline__ float bf16_bits_to_f32(uint32_t bits16) {
  return __uint_as_float(bits16 << 16);
}

// Two E4M3 bytes (low byte first) to f32, exactly (E4M3's range and subnormals fit in f16).
__device__ __forceinline__ float2 e4m3x2_to_f32(uint32_t two_bytes) {
  const __half2_raw h =
      __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(two_bytes & 0xffffu), __NV_E4M3);
  __half2 v;
  v = *reinterpret_cast<const __half2*>(&h);
  return __half22float2(v);
}

__device__ __forceinline__ float e4m3_to_f32(uint32_t byte) {
  return e4m3x2_to_f32(byte & 0xffu).x;
}

// e2m1 nibble -> f32: sign to f16 bit 15, the 3 magnitude bits to f16 bits 9..11 (exponent low
// bits and the top mantissa bit) gives code * 2^-14 as an f16 (0.5 lands on an f16 subnormal,
// which the conversion keeps); the f32 multiply by 2^14 is exact. No f32 subnormal is involved,
// so flush-to-zero builds decode the same values.
__device__ __forceinline__ float e2m1_to_f32(uint32_t nibble) {
  const unsigned short bits =
      static_cast<unsigned short>(((nibble & 0x8u) << 12) | ((nibble & 0x7u) << 9));
  return __half2float(__ushort_as_half(bits)) * 16384.0f;
}

// 2^(b - 127); 0xff is NaN. b == 0 gives the f32 subnormal 2^-127, as the CPU does.
__device__ __forceinline__ float e8m0_to_f32(uint32_t b) {
  if (b == 0xffu) return __uint_as_float(0x7fc00000u);
  return b == 0 ? __uint_as_float(0x00400000u) : __uint_as_float(b << 23);
}

__device__ __forceinline__ float load_block_scale(const void* p, int64_t i, bool e8m0) {
  return e8m0 ? e8m0_to_f32(__ldg(static_cast<const uint8_t*>(p) + i))
              : __ldg(static_cast<const float*>(p) + i);
}

// Streaming 16-byte weight load: read once per launch, so keep it out of L1 (the activations,
// re-read by every warp, stay there).
__device__ __forceinline__ uint4 load_weight_16(const uint8_t* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// ---- formats ----
template <weight_kind K>
struct format;

template <>
struct format<weight_kind::f32> {
  static constexpr int elems_per_word = 1;
  static constexpr int elems_per_vec = 4;
  static __host__ __device__ int64_t row_bytes(int64_t cols) { return cols * 4; }
};
template <>
struct format<weight_kind::bf16> {
  static constexpr int elems_per_word = 2;
  static constexpr int elems_per_vec = 8;
  static __host__ __device__ int64_t row_bytes(int64_t cols) { return cols * 2; }
};
template <>
struct format<weight_kind::fp8_block> {
  static constexpr int elems_per_word = 4;
  static constexpr int elems_per_vec = 16;
  static __host__ __device__ int64_t row_bytes(int64_t cols) { return cols; }
};
template <>
struct format<weight_kind::mxfp4> {
  static constexpr int elems_per_word = 8;
  static constexpr int elems_per_vec = 32;
  static __host__ __device__ int64_t row_bytes(int64_t cols) { return cols / 2; }
};
template <>
struct format<weight_kind::nvfp4> {
  static constexpr int elems_per_word = 8;
  static constexpr int elems_per_vec = 32;
  static __host__ __device__ int64_t row_bytes(int64_t cols) { return cols / 2; }
};

// One row of one matrix, located once: its weight bytes, its scales (fp8_block: the scale row
// of its 128-row block) and the matrix's global scale (1 unless nvfp4).
struct row_ref {
  const uint8_t* data = nullptr;
  const void* scale = nullptr;
  float global = 1.0f;
};

// Element-wise view of a device_weight for kernels (a trivially copyable kernel argument).
struct weight_args {
  const uint8_t* data;
  const void* scale;
  const float* global_scale;
  int64_t rows, cols;
  int64_t matrix_bytes;   // weight bytes per matrix
  int64_t matrix_scales;  // scale elements per matrix
  bool scale_e8m0;
};

inline weight_args make_weight_args(const device_weight& w) {
  return weight_args{static_cast<const uint8_t*>(w.data),
                     w.scale,
                     w.global_scale,
                     w.rows,
                     w.cols,
                     weight_matrix_bytes(w.kind, w.rows, w.cols),
                     scale_matrix_count(w.kind, w.rows, w.cols),
                     w.scale_e8m0};
}

template <weight_kind K>
__device__ __forceinline__ row_ref locate_row(const weight_args& w, int64_t matrix, int64_t row) {
  row_ref r;
  r.data = w.data + matrix * w.matrix_bytes + row * format<K>::row_bytes(w.cols);
  const int64_t scale_elem_bytes = w.scale_e8m0 ? 1 : 4;
  if constexpr (K == weight_kind::fp8_block) {
    const int64_t scale_cols = (w.cols + 127) / 128;
    r.scale = static_cast<const uint8_t*>(w.scale) +
              (matrix * w.matrix_scales + (row / 128) * scale_cols) * scale_elem_bytes;
  } else if constexpr (K == weight_kind::mxfp4) {
    r.scale = static_cast<const uint8_t*>(w.scale) +
              (matrix * w.matrix_scales + row * (w.cols / 32)) * scale_elem_bytes;
  } else if constexpr (K == weight_kind::nvfp4) {
    r.scale = static_cast<const uint8_t*>(w.scale) + matrix * w.matrix_scales + row * (w.cols / 16);
    r.global = w.global_scale ? __ldg(w.global_scale + matrix) : 1.0f;
  }
  return r;
}

// Element k of a row (scalar path).
template <weight_kind K>
__device__ __forceinline__ float decode_one(const row_ref& r, int64_t k, bool e8m0) {
  if constexpr (K == weight_kind::f32) {
    return __ldg(reinterpret_cast<const float*>(r.data) + k);
  } else if constexpr (K == weight_kind::bf16) {
    return bf16_bits_to_f32(__ldg(reinterpret_cast<const unsigned short*>(r.data) + k));
  } else if constexpr (K == weight_kind::fp8_block) {
    return e4m3_to_f32(__ldg(r.data + k)) * load_block_scale(r.scale, k / 128, e8m0);
  } else {
    const uint32_t byte = __ldg(r.data + k / 2);
    const float code = e2m1_to_f32((k & 1) ? byte >> 4 : byte);
    if constexpr (K == weight_kind::mxfp4) {
      return code * load_block_scale(r.scale, k / 32, e8m0);
    } else {
      const float s = e4m3_to_f32(__ldg(static_cast<const uint8_t*>(r.scale) + k / 16));
      return (code * s) * r.global;
    }
  }
}

// Scales of the 16-byte vector starting at element k (k % elems_per_vec == 0): s[0] for words 0-1,
// s[1] for words 2-3 (they differ only for nvfp4, whose scale blocks are 16 elements).
template <weight_kind K>
__device__ __forceinline__ void vector_scales(const row_ref& r, int64_t k, bool e8m0,
                                              float (&s)[2]) {
  if constexpr (K == weight_kind::fp8_block) {
    s[0] = s[1] = load_block_scale(r.scale, k / 128, e8m0);
  } else if constexpr (K == weight_kind::mxfp4) {
    s[0] = s[1] = load_block_scale(r.scale, k / 32, e8m0);
  } else if constexpr (K == weight_kind::nvfp4) {
    const uint32_t two = __ldg(
        reinterpret_cast<const unsigned short*>(static_cast<const uint8_t*>(r.scale) + k / 16));
    const float2 v = e4m3x2_to_f32(two);
    s[0] = v.x;
    s[1] = v.y;
  } else {
    s[0] = s[1] = 1.0f;
  }
}

// The elems_per_word weights of word j (0..3) of a 16-byte vector, scaled.
template <weight_kind K>
__device__ __forceinline__ void decode_word(uint32_t word, int j, const float (&s)[2], float global,
                                            float* w) {
  if constexpr (K == weight_kind::f32) {
    w[0] = __uint_as_float(word);
  } else if constexpr (K == weight_kind::bf16) {
    w[0] = bf16_bits_to_f32(word & 0xffffu);
    w[1] = __uint_as_float(word & 0xffff0000u);
  } else if constexpr (K == weight_kind::fp8_block) {
    const float2 a = e4m3x2_to_f32(word);
    const float2 b = e4m3x2_to_f32(word >> 16);
    w[0] = a.x * s[0];
    w[1] = a.y * s[0];
    w[2] = b.x * s[0];
    w[3] = b.y * s[0];
  } else {
    const float sc = s[j >> 1];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float v = e2m1_to_f32(word >> (4 * e)) * sc;
      if constexpr (K == weight_kind::nvfp4)
        w[e] = v * global;
      else
        w[e] = v;
    }
  }
}

// n consecutive activations (n = 1, 2, 4 or 8) as f32 from an address aligned to n activations
// (vector path).
template <int N>
__device__ __forceinline__ void load_x(const __nv_bfloat16* p, float* x) {
  if constexpr (N == 1) {
    x[0] = __bfloat162float(p[0]);
  } else if constexpr (N == 2) {
    const float2 v = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
    x[0] = v.x;
    x[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = load_act4(p + i);
      x[i] = v.x;
      x[i + 1] = v.y;
      x[i + 2] = v.z;
      x[i + 3] = v.w;
    }
  }
}
template <int N>
__device__ __forceinline__ void load_x(const float* p, float* x) {
  if constexpr (N == 1) {
    x[0] = p[0];
  } else if constexpr (N == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    x[0] = v.x;
    x[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(p + i);
      x[i] = v.x;
      x[i + 1] = v.y;
      x[i + 2] = v.z;
      x[i + 3] = v.w;
    }
  }
}

// The warp GEMV core: acc[r][t] = rows[r] . xrow[t] over cols, for rows with data != nullptr and
// t < ntok (other entries stay 0). Every lane ends with the full sums. xrow points to NT activation
// rows of X (float or __nv_bfloat16; in shared memory, so gathered token rows cost no registers).
// All lanes of the warp must call it.
// Only columns [k_begin, cols) are summed when k_begin > 0 (a K split; k_begin must be a multiple
// of the format's elems_per_vec on the vector path).
template <weight_kind K, int R, int NT, typename X>
__device__ __forceinline__ void warp_rows_dot(const row_ref (&rows)[R], int64_t cols,
                                              const X* const* xrow, int ntok, bool e8m0,
                                              bool vector_path, float (&acc)[R][NT],
                                              int64_t k_begin = 0) {
  using F = format<K>;
  const int lane = threadIdx.x % k_warp_size;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;

  if (vector_path) {
    constexpr int EW = F::elems_per_word;
    constexpr int EV = F::elems_per_vec;
    for (int64_t k0 = k_begin + int64_t(lane) * EV; k0 < cols; k0 += int64_t(k_warp_size) * EV) {
      uint4 raw[R];
      float s[R][2];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (rows[r].data) {
          raw[r] = load_weight_16(rows[r].data + F::row_bytes(k0));
          vector_scales<K>(rows[r], k0, e8m0, s[r]);
        } else {
          raw[r] = make_uint4(0, 0, 0, 0);
          s[r][0] = s[r][1] = 0.0f;
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float w[R][EW];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const uint32_t word = j == 0   ? raw[r].x
                                : j == 1 ? raw[r].y
                                : j == 2 ? raw[r].z
                                         : raw[r].w;
          decode_word<K>(word, j, s[r], rows[r].global, w[r]);
        }
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if (t < ntok) {
            float xv[EW];
            load_x<EW>(xrow[t] + k0 + j * EW, xv);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int e = 0; e < EW; ++e) acc[r][t] = fmaf(xv[e], w[r][e], acc[r][t]);
          }
        }
      }
    }
  } else {
    for (int64_t k = k_begin + lane; k < cols; k += k_warp_size) {
      float w[R];
#pragma unroll
      for (int r = 0; r < R; ++r) w[r] = rows[r].data ? decode_one<K>(rows[r], k, e8m0) : 0.0f;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < ntok) {
          const float xv = act_to_f32(xrow[t][k]);
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r][t] = fmaf(xv, w[r], acc[r][t]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = warp_sum(acc[r][t]);
}

// Whether the vector path may read every row of `w` and activation rows x + i * x_stride (+ any
// multiple of cols).
inline bool vector_path_ok(const device_weight& w, const void* x, int64_t x_stride) {
  int64_t ev = 4;
  switch (w.kind) {
    case weight_kind::f32:
      ev = 4;
      break;
    case weight_kind::bf16:
      ev = 8;
      break;
    case weight_kind::fp8_block:
      ev = 16;
      break;
    case weight_kind::mxfp4:
    case weight_kind::nvfp4:
      ev = 32;
      break;
  }
  // Rows start 16-byte aligned when cols is a multiple of elements-per-vector; every matrix then
  // too (matrix bytes = rows * row bytes). Activations (f32 or bf16): loads of up to 4 elements
  // at k multiples of their count, aligned given a 16-byte aligned x and x_stride % 4 == 0.
  // nvfp4 reads its two E4M3 scales of a vector as one 16-bit word.
  const bool scale_ok =
      w.kind != weight_kind::nvfp4 || (reinterpret_cast<uintptr_t>(w.scale) & 1u) == 0;
  return w.cols % ev == 0 && w.cols % 4 == 0 && aligned_16(w.data) && aligned_16(x) &&
         x_stride % 4 == 0 && scale_ok;
}

}  // namespace dsv4::cuda::detail
