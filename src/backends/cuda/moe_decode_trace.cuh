// Block timestamps of the decode-path MoE kernels for the diagnostic build (DSV4_MOE_TRACE,
// bench_moe_linear_trace); in every other build DSV4_TRACE(...) expands to nothing.
#pragma once

#ifdef DSV4_MOE_TRACE
#include <algorithm>
#include <vector>
#endif

namespace dsv4::cuda {

namespace {

#ifdef DSV4_MOE_TRACE
// Diagnostic build only (bench_moe_linear_trace; never the library's default): %globaltimer
// stamps of thread 0 of every block of the traced calls: t[0] entry, t[1] after the wait for the
// predecessor (W2: its slot's h), t[2] after the weight loop, t[3] exit.
struct moe_trace_rec {
  unsigned long long t[4];
  int kind, sm, slot, bx;  // kind 0 W1/W3, 1 W2, 2 combine
};
constexpr int k_trace_max = 8192;
__device__ moe_trace_rec g_trace[k_trace_max];
__device__ unsigned g_trace_n;
__device__ int g_trace_on;
// W2's prologue in steps (session 50; runtime, DSV4_MOE_TRACE_MODE in the bench): mode 1 stamps
// t[1] after the chunk's derivation (pair_of written) and t[2] just before the readiness wait;
// mode 2 t[1] after the wait (as mode 0) and t[2] after the staged h row's barrier (the loop's
// start). W1/W3 and the combine keep mode 0's stamps.
__device__ int g_trace_mode;
__device__ __forceinline__ unsigned long long trace_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
struct trace_block {  // stamps in shared memory: no registers taken from the kernel
  unsigned long long* t;
  __device__ trace_block() {
    __shared__ unsigned long long stamps[4];
    t = stamps;
    if (threadIdx.x == 0)
      for (int i = 0; i < 4; ++i) t[i] = 0;
  }
  __device__ void stamp(int i) {
    if (threadIdx.x == 0) t[i] = trace_now();
  }
  // W2 only: stamp i where the trace mode is `mode` (see g_trace_mode).
  __device__ void stamp_mode(int mode, int i) {
    if (g_trace_mode == mode) stamp(i);
  }
  __device__ int mode() const { return g_trace_mode; }
  // The weight loop's end, called by every warp after its loop. Default: thread 0's (warp 0's)
  // time in t[2]. DSV4_MOE_TRACE_LASTWARP (session 45): t[2] the last warp's (a shared atomic
  // maximum over the warps' lane 0), and for W1/W3 (up) t[1] warp 0's instead of the wait, whose
  // stamp is the entry's there: the blocks' K parts and row tiles finish at different times, and
  // the exit stamp follows the slowest.
  __device__ void stamp_loop_end(bool up) {
#if defined(DSV4_MOE_TRACE_EPI)
    // t[0] = the last warp's loop end for W1/W3 (its entry is not kept), the default for W2.
    if (up) {
      if (threadIdx.x % 32 == 0) atomicMax(&t[0], trace_now());
    } else {
      stamp(2);
    }
#elif defined(DSV4_MOE_TRACE_LASTWARP)
    const unsigned long long now = trace_now();
    if (threadIdx.x % 32 == 0) atomicMax(&t[2], now);
    if (up && threadIdx.x == 0) t[1] = now;
#else
    (void)up;
    stamp(2);
#endif
  }
  // DSV4_MOE_TRACE_EPI (session 45): W1/W3's folding epilogue in steps: t[1] after the block's hf
  // stores (K parts summed, SwiGLU), t[2] after the fold's acq_rel count, t[3] the exit (a folding
  // block: after the group's reload, quantization, h stores and release). No-op otherwise.
  __device__ void stamp_epilogue(int i) {
#ifdef DSV4_MOE_TRACE_EPI
    stamp(i);
#else
    (void)i;
#endif
  }
  __device__ void flush(int kind, int slot) {
    if (threadIdx.x != 0 || !g_trace_on) return;
    t[3] = trace_now();
    const unsigned k = atomicAdd(&g_trace_n, 1u);
    if (k >= unsigned(k_trace_max)) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    moe_trace_rec r;
    for (int i = 0; i < 4; ++i) r.t[i] = t[i];
    r.kind = kind, r.sm = int(sm), r.slot = slot, r.bx = int(blockIdx.x);
    g_trace[k] = r;
  }
};
#define DSV4_TRACE(...) __VA_ARGS__
#else
#define DSV4_TRACE(...)
#endif

}  // namespace

#ifdef DSV4_MOE_TRACE
// Trace control for the diagnostic build: on (clears the records) / off; copy out (returns the
// count, at most k_trace_max).
void moe_decode_trace_set_mode(int mode) {
  cudaDeviceSynchronize();
  cudaMemcpyToSymbol(g_trace_mode, &mode, sizeof mode);
}
void moe_decode_trace_enable(bool on) {
  const unsigned zero = 0;
  const int v = on ? 1 : 0;
  cudaDeviceSynchronize();
  cudaMemcpyToSymbol(g_trace_n, &zero, sizeof zero);
  cudaMemcpyToSymbol(g_trace_on, &v, sizeof v);
  cudaDeviceSynchronize();
}
int moe_decode_trace_copy(unsigned long long* t4, int* info4, int max) {
  unsigned n = 0;
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(&n, g_trace_n, sizeof n);
  n = std::min<unsigned>(n, std::min<unsigned>(unsigned(max), unsigned(k_trace_max)));
  std::vector<moe_trace_rec> r(n);
  if (n) cudaMemcpyFromSymbol(r.data(), g_trace, n * sizeof(moe_trace_rec));
  for (unsigned i = 0; i < n; ++i) {
    for (int j = 0; j < 4; ++j) t4[4 * i + j] = r[i].t[j];
    info4[4 * i] = r[i].kind, info4[4 * i + 1] = r[i].sm, info4[4 * i + 2] = r[i].slot,
              info4[4 * i + 3] = r[i].bx;
  }
  return int(n);
}
#endif

}  // namespace dsv4::cuda
