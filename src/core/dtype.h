// Element types of checkpoints and activations, with exact scalar conversions.
//
// Layout contracts:
//   f8_e4m3  e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa; no infinities; 0x7f/0xff are NaN;
//            largest finite 448.
//   f8_e8m0  unsigned exponent-only scale: value 2^(b-127); 0xff is NaN; no zero.
//   e2m1     4-bit float (bit 3 sign, values 0,0.5,1,1.5,2,3,4,6), two per byte: element 2i in the
//            low nibble, element 2i+1 in the high nibble. Shapes are in elements; bytes =
//            elements/2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dsv4 {

enum class dtype : uint8_t {
  f32,
  f16,
  bf16,
  f8_e4m3,
  f8_e8m0,
  e2m1,
  i8,
  u8,
  i32,
  i64,
  f64,
  boolean
};

// Bits per element (e2m1 is 4; everything else a whole number of bytes).
int dtype_bits(dtype t);
// Bytes for n elements; throws if n elements do not fill whole bytes (odd count of e2m1).
size_t dtype_bytes(dtype t, int64_t n);
// The safetensors spelling ("F32", "BF16", "F8_E4M3", "F8_E8M0", "I8", ...). e2m1 is "F4".
std::string_view dtype_name(dtype t);
// Inverse of dtype_name; nullopt for an unknown string.
std::optional<dtype> dtype_from_name(std::string_view name);

// ---- scalar conversions (all exact decodes; encodes round to nearest, ties to even) ----
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);  // RNE; NaN stays NaN (quiet)

float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);  // RNE; overflow to +-inf; NaN stays NaN

float e4m3_to_f32(uint8_t bits);
// RNE; |value| beyond the largest finite (448) saturates to +-448 (the quantizers clamp before
// casting, so saturation is the behaviour they rely on); NaN -> 0x7f.
uint8_t f32_to_e4m3(float value);

float e8m0_to_f32(uint8_t bits);
// Smallest power of two >= value (value > 0), clamped to [2^-127, 2^127]; this is the
// `2^ceil(log2(x))` scale rule of the official quantizers. NaN or value <= 0 -> 0xff / 0x00.
uint8_t f32_to_e8m0_ceil(float value);

float e2m1_to_f32(uint8_t nibble);  // low 4 bits used
uint8_t f32_to_e2m1(float value);   // RNE, saturates at +-6, NaN -> +6 (no NaN in e2m1)

// Element i of a packed e2m1 array.
inline uint8_t e2m1_get(const uint8_t* packed, int64_t i) {
  const uint8_t byte = packed[i >> 1];
  return (i & 1) ? uint8_t(byte >> 4) : uint8_t(byte & 0x0f);
}

// Convert n elements of type `from` at src (element offset 0) into f32.
void convert_to_f32(dtype from, const void* src, float* dst, int64_t n);

}  // namespace dsv4
