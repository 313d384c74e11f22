// Diagnostic (session 30): does binding a 32 MiB user workspace after cublasSetStream (what
// linear_gemm does since session 30) change cuBLAS's speed against its internal pool (what it did
// before)? The engine's GEMM form (bf16 in and out, f32 compute, OP_T / OP_N) on Flash projection
// shapes at decode and prefill token counts, one stream. Two weight copies per shape (bench::fill's
// bf16 values; l30g ran an own fill of bf16 in +-[2^-8, 2^-1)), alternated;
// per mode the median of 7 event-timed batches of 20 calls, the modes interleaved.
// Build and run (sm_90a):
//   nvcc -O2 -arch=sm_90a -std=c++17 scripts/diag/cublas_workspace_speed.cu -lcublas -o
//   cublas_workspace_speed
//   ./cublas_workspace_speed
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../bench/kernels/bench_common.cuh"  // CK, CB, bench::fill, bench::median

int main() {
  struct shape {
    const char* name;
    int m, k;
  };
  const std::vector<shape> shapes{
      {"wq_a", 1024, 4096}, {"wq_b", 32768, 1024}, {"wo_b", 4096, 8192}, {"shared_w1", 2048, 4096}};
  const std::vector<int> tokens{3, 8, 512, 2048, 4096};
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t h;
  CB(cublasCreate(&h));
  const size_t ws_bytes = size_t(32) << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const float one = 1.f, zero = 0.f;
  std::printf("shape tokens: pool us, own workspace us, ratio (own / pool)\n");
  for (const shape& sh : shapes) {
    const int tmax = 4096;
    unsigned short *w[2], *x, *y;
    for (auto& p : w) CK(cudaMalloc(&p, size_t(sh.m) * sh.k * 2));
    CK(cudaMalloc(&x, size_t(tmax) * sh.k * 2));
    CK(cudaMalloc(&y, size_t(tmax) * sh.m * 2));
    bench::fill(w[0], size_t(sh.m) * sh.k * 2, 1, 3);  // bf16 in +-0.2
    bench::fill(w[1], size_t(sh.m) * sh.k * 2, 2, 3);
    bench::fill(x, size_t(tmax) * sh.k * 2, 3, 3);
    CK(cudaDeviceSynchronize());
    for (int T : tokens) {
      auto batch = [&](bool own) {
        CK(cudaEventRecord(e0, s));
        for (int i = 0; i < 20; ++i) {
          CB(cublasSetStream(h, s));
          if (own) CB(cublasSetWorkspace(h, ws, ws_bytes));
          CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.m, T, sh.k, &one, w[i % 2], CUDA_R_16BF,
                          sh.k, x, CUDA_R_16BF, sh.k, &zero, y, CUDA_R_16BF, sh.m,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return ms * 1000.0f / 20.0f;
      };
      batch(false);
      batch(true);
      std::vector<float> pool, own;
      for (int r = 0; r < 7; ++r) {
        pool.push_back(batch(false));
        own.push_back(batch(true));
      }
      const double p = bench::median(pool), o = bench::median(own);
      std::printf("%s %d: %.2f, %.2f, %.3f\n", sh.name, T, p, o, o / p);
    }
    for (auto p : w) CK(cudaFree(p));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
