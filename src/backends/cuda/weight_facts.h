// Facts about a weight's bytes that an uploader finds on the host once and the kernels may rely
// on (device_weight's flags). Host code only; no CUDA.
#pragma once

#include <cstdint>

namespace dsv4::cuda {

// Whether every E8M0 byte of `scales[0, n)` is <= 128, i.e. every MXFP4 block scale is <= 2: the
// MoE decode kernels' one-step scale multiply is exact for all of them (moe_decode_round.cuh), so
// device_weight::scales_at_most_2 may be set. True for n == 0.
bool e8m0_scales_at_most_2(const uint8_t* scales, int64_t n);

}  // namespace dsv4::cuda
