// NVFP4 weight quantization (NVIDIA ModelOpt layout: dsv4-model.md §7), one [out, in] matrix at a
// time. Dequantized value = e2m1(code) * e4m3(weight_scale) * weight_scale_2, computed in f32 in
// that order (the product of code and block scale is exact; the global scale multiplies last), as
// dequantize_to_f32 and the kernels do.
//
// Rules (the original design's quantize_to_nvfp4, with the deviations named):
//   global scale  g = max(amax, 1e-8) / (6 * 448), one f32 division (round to nearest even), amax
//                 over the whole tensor (or over w1 and w3 of an expert together, which share g).
//   block scale   per 16 consecutive elements along `in`: s = e4m3_rne((amax16 / g) / 6), f32 ops;
//                 at most 448 (amax16 / g <= 2688 up to one rounding, which rounds back to 448).
//                 A block whose s rounds to 0 (amax16 / g / 6 < 2^-10, or == 2^-10, a tie to even)
//                 is all zero codes. The design instead zeroes every block with amax16 / g < 6 *
//                 2^-9 (s < the smallest subnormal 2^-9 before rounding); keeping s = 2^-9 for
//                 [2^-10, 2^-9) is strictly closer.
//   code          the e2m1 code whose dequantized value fl(fl(e2m1 * s) * g) is nearest to x
//                 (distances in double); an exact tie goes to the even code (mantissa bit 0), the
//                 rule of round-to-nearest-even; |x| beyond the largest (6 * s * g) saturates to
//                 +-6. Zero magnitudes are written as +0 (code 0). The design's half-step table
//                 [0,1,2,3,4,4,5,5,6,6,6,7,7] is not nearest: it maps 2.6 -> 2, 3.6 -> 3, 5.1 -> 4
//                 (thresholds 2.75 / 3.75 / 5.25 instead of 2.5 / 3.5 / 5); we round to nearest
//                 as the issue asks (Gaussian 2048x2048, same scales: 8.8% of the codes differ,
//                 relative RMS error 0.095 instead of the table's 0.109).
//   NaN or Inf in the input is an error naming the tensor.
//
// MXFP4 -> NVFP4: an MXFP4 group of 32 is code * 2^e. With a power-of-two global scale
// g = 2^(emax - 8), emax = the largest e of a group with a nonzero code, each 16-element half of a
// group keeps its codes and takes s = 2^(e - emax + 8), which is an E4M3 value exactly when
// e - emax + 8 >= -9, i.e. e >= emax - 17 (E4M3 holds the powers of two 2^-9 .. 2^8). So the
// conversion is exact (bit-identical dequantized values) for every half-group whose exponent is
// within 17 binades of the tensor's largest, and for every all-zero half-group; any other
// half-group is requantized from its values by the generic rules above with the same g (and
// counted). A tensor whose nonzero groups span at most 18 binades converts exactly as a whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsv4 {

constexpr int64_t k_nvfp4_block = 16;

struct nvfp4_matrix {
  int64_t out = 0;
  int64_t in = 0;
  std::vector<uint8_t> codes;   // [out, in/2]: element 2i in the low nibble, 2i+1 in the high
  std::vector<uint8_t> scales;  // e4m3 [out, in/16]
  float global_scale = 0;       // f32 weight_scale_2
};

// Largest |x| of n values; throws "<name>: NaN at element i" / "Inf at element i" on a non-finite.
float nvfp4_amax(const float* values, int64_t n, const std::string& name);

// The design's global scale for a given amax: max(amax, 1e-8) / 2688 in f32.
float nvfp4_global_scale(float amax);

// E4M3 block scale byte for a block with largest magnitude `block_amax` (see the rules).
uint8_t nvfp4_block_scale(float block_amax, float global_scale);

// E2M1 code (sign in bit 3) of x in a block with scale byte `scale` (nearest dequantized value).
uint8_t nvfp4_encode(float x, uint8_t scale, float global_scale);

// The dequantized value of one code: fl(fl(e2m1 * e4m3) * g).
float nvfp4_value(uint8_t code, uint8_t scale, float global_scale);

// Quantizes a row-major f32 [out, in] matrix (in % 16 == 0) with the given global scale (from
// nvfp4_global_scale of its amax, or of a larger shared amax). `name` goes into error messages.
nvfp4_matrix quantize_nvfp4(const float* values, int64_t out, int64_t in, float global_scale,
                            const std::string& name);

// Dequantizes into dst [out, in].
void dequantize_nvfp4(const nvfp4_matrix& m, float* dst);

// MXFP4 source: codes [out, in/2] (packed like NVFP4), E8M0 scales [out, in/32].
struct mxfp4_source {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t out = 0;
  int64_t in = 0;
};

// Largest exponent e (scale byte - 127) over groups holding a nonzero code; nullopt-like
// INT32_MIN when every code is zero. Throws on a NaN scale byte (0xff) naming `name`.
int32_t mxfp4_max_exponent(const mxfp4_source& src, const std::string& name);

// The power-of-two global scale 2^(emax - 8) (1 when emax is INT32_MIN: an all-zero tensor).
float mxfp4_global_scale(int32_t max_exponent);

struct mxfp4_conversion {
  nvfp4_matrix matrix;
  int64_t blocks = 0;          // 16-element blocks
  int64_t requantized = 0;     // blocks outside the exact range, requantized by the generic rules
  int64_t inexact_blocks = 0;  // blocks whose dequantized values differ from the source's
};

// Converts with the given power-of-two global scale (mxfp4_global_scale of this tensor's
// exponent, or of the larger of w1's and w3's). Throws if the scale is not a power of two.
mxfp4_conversion convert_mxfp4_to_nvfp4(const mxfp4_source& src, float global_scale,
                                        const std::string& name);

// Quantization error of `got` against `ref` (n values).
struct quantization_error {
  double relative_rms = 0;  // sqrt(sum (got - ref)^2 / sum ref^2); 0 when ref is all zero and equal
  double max_abs = 0;
  double sum_squared_error = 0;
  double sum_squared_reference = 0;
};
quantization_error measure_quantization_error(const float* ref, const float* got, int64_t n);

}  // namespace dsv4
