// The cp.async (sm_80+, used on sm_90) wrappers of every CUDA kernel: per-thread asynchronous
// global -> shared copies, their commit groups and waits, and the mbarrier arrival on their
// completion. Bulk (TMA) copies live in mbarrier.cuh. Included by .cu files and the .cuh headers
// they include only.
//
// Names: cp_async_<cache>_<bytes>[_<variant>]. cg (cache-global, L1 bypassed) takes 16 bytes only,
// ca (cache-all) 4, 8 or 16. _zfill: the copy reads src_bytes (0 or the full size) and zero-fills
// the rest, so 0 writes zeros without reading src (which must still be a mapped address).
// _l2_256: the 256-byte aligned L2 sector group around the source is prefetched into L2.
//
// Two families that differ only in the asm's "memory" clobber, kept apart because the clobber
// limits what the compiler may schedule across the instruction:
//  * the plain names carry it: no ordinary load or store moves across a copy, commit or wait. The
//    MoE cores (moe_decode_round.cuh, the prefill cores) read back a thread's own copies right
//    after cp_async_wait<N>() with no barrier in between, which the clobber keeps ordered.
//  * the _noclobber names (formerly mma_sm80.cuh's and attention_decode_loads.cuh's) lack it:
//    attention decode and the indexer read the copied tiles only after a __syncthreads or an
//    mbarrier wait, which order those reads themselves.
// Session 18 (REVIEW18 notes): giving the _noclobber family the clobber, or taking it off the plain
// commit and wait in moe_decode.cu, left every kernel's SASS unchanged; the families stay apart so
// that neither guarantee changes silently.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dsv4::cuda {

// The shared-window address of a generic pointer into shared memory (the copies' `dst`).
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- With the "memory" clobber. ----

// 16 bytes, L1 bypassed.
__device__ __forceinline__ void cp_async_cg_16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// 16 bytes, or 16 zero bytes when src_bytes is 0 (src is then not read).
__device__ __forceinline__ void cp_async_cg_16_zfill(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}

// 16 bytes with the aligned 256 bytes around them prefetched into L2 (a weight row's next rounds,
// a repacked tile's other lanes): the stream reaches HBM in 256-byte pieces instead of 64-byte
// ones.
__device__ __forceinline__ void cp_async_cg_16_l2_256(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(dst), "l"(src)
               : "memory");
}

// 4 or 8 bytes through L1 (scale words; cp.async.cg takes 16 bytes only).
template <int Bytes>
__device__ __forceinline__ void cp_async_ca(uint32_t dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8);
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(Bytes)
               : "memory");
}

// 4 bytes through L1, or 4 zero bytes when src_bytes is 0 (src is then not read).
__device__ __forceinline__ void cp_async_ca_4_zfill(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

// Closes this thread's group of the copies issued since the previous commit (possibly empty).
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most `pending` of this thread's committed groups are still in flight.
template <int pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

// Waits for all of this thread's copies, committed or not.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Arrives on the mbarrier at `bar` once every cp.async this thread issued before has landed
// (noinc: the arrival is one of the barrier's expected count).
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// ---- Without the "memory" clobber (see the top). ----

// 16 bytes, L1 bypassed; 16 zero bytes when `valid` is false (src is then not read).
__device__ __forceinline__ void cp_async_cg_16_zfill_noclobber(uint32_t dst, const void* src,
                                                               bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}

// 4 or 8 bytes through L1 (indices, record scales); zeros when `valid` is false.
template <int Bytes>
__device__ __forceinline__ void cp_async_ca_zfill_noclobber(uint32_t dst, const void* src,
                                                            bool valid) {
  static_assert(Bytes == 4 || Bytes == 8);
  const int bytes = valid ? Bytes : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(Bytes),
               "r"(bytes));
}

__device__ __forceinline__ void cp_async_commit_noclobber() {
  asm volatile("cp.async.commit_group;\n" ::);
}

template <int pending>
__device__ __forceinline__ void cp_async_wait_noclobber() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

}  // namespace dsv4::cuda
