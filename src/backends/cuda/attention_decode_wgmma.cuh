// wgmma helpers of the decode attention kernel (attention_decode.cu, plan.wgmma): shared-memory
// matrix descriptors for the 128-byte swizzled key / query tiles, S = Q K^T with both operands
// in shared memory (m64n32k16, K-major) and O += P V with P from registers and V the same key
// tile read MN-major (m64n128k16, imm-trans-b = 1), f32 accumulators.
//
// Tile layout (attention_decode.cu, wg_offset): a tile of `rows` rows of 512 bf16 is 8 column
// blocks of 64 channels, each `rows` x 128 bytes, the 16-byte chunk c of row r at chunk
// c ^ (r & 7): the SW128 atom of 8 rows x 128 bytes, 1024-byte aligned. As a K-major operand
// (keys or query rows along M/N, channels along K) the 8-row groups are 1024 bytes apart (SBO);
// as an MN-major operand (keys along K, channels along N) the 64-channel atoms are
// rows * 128 bytes apart (LBO) and the 8-key groups 1024 bytes (SBO).
#pragma once

#include <cstdint>

#include "backends/cuda/wgmma_common.cuh"

namespace dsv4::cuda::attention_wgmma {

// Descriptors, fences and waits: wgmma_common.cuh.
using wgmma::commit;
using wgmma::fence;
using wgmma::fence_async_smem;
using wgmma::reg_fence;
using wgmma::wait;
__device__ __forceinline__ uint64_t desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return wgmma::sw128_desc(addr, lbo, sbo);
}
// The descriptor of the operand `bytes` (a multiple of 16) past the one `d` describes: only the
// start address field (bits 0-13: shared address >> 4) changes, and every operand lies inside
// the CTA's shared memory (< 256 KB), so the 32-bit add never carries out of that field. One
// add per wgmma instead of rebuilding the descriptor from the address (a chain of ~5 uniform
// operations per operand in the issue loop of S).
__device__ __forceinline__ uint64_t desc_at(uint64_t d, uint32_t bytes) {
  const uint32_t lo = uint32_t(d) + (bytes >> 4), hi = uint32_t(d >> 32);
  return (uint64_t(hi) << 32) | lo;
}
__device__ __forceinline__ void wait_all() {
  wgmma::wait<0>();
}

// d[16] += A (64 x 16, descriptor, K-major) * B (16 x 32, descriptor, K-major).
__device__ __forceinline__ void mma_ss_n32(float (&d)[16], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b));
}

// d[16] = A * B as mma_ss_n32, the accumulator's input ignored (scale-d 0): starts a chain
// without zeroing d first (a non-wgmma write of an accumulator between wgmmas makes ptxas
// serialize them).
__device__ __forceinline__ void mma_ss_n32_first(float (&d)[16], uint64_t a, uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "l"(a), "l"(b));
}

// d[64] += A (64 x 16, registers: the mma.sync m16n8k16 A fragment of each warp's 16 rows) *
// B (16 x 128, descriptor, MN-major).
__device__ __forceinline__ void mma_rs_n128_mn(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,"
      "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, 1, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

}  // namespace dsv4::cuda::attention_wgmma
