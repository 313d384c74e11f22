// Diagnostic (session 30): does binding a 32 MiB user workspace after cublasSetStream (what
// linear_gemm does since session 30) change cuBLAS's speed against its internal pool (what it did
// before)? The engine's GEMM form (bf16 in and out, f32 compute, OP_T / OP_N) on Flash projection
// shapes at decode and prefill token counts, one stream. Two weight copies per shape, alternated;
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

#define CK(x)                                                                \
  do {                                                                       \
    auto e_ = (x);                                                           \
    if (e_ != 0) {                                                           \
      std::printf("%s:%d %s failed: %d\n", __FILE__, __LINE__, #x, int(e_)); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

__global__ void fill_kernel(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    // bf16 with exponent in [2^-8, 2^-1): random sign and mantissa
    p[i] = (unsigned short)((h & 0x8000u) | ((119u + (h >> 16) % 7u) << 7) | (h & 0x7fu));
  }
}

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
  CK(cublasCreate(&h));
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
    fill_kernel<<<1024, 256>>>(w[0], size_t(sh.m) * sh.k, 1);
    fill_kernel<<<1024, 256>>>(w[1], size_t(sh.m) * sh.k, 2);
    fill_kernel<<<1024, 256>>>(x, size_t(tmax) * sh.k, 3);
    CK(cudaDeviceSynchronize());
    for (int T : tokens) {
      auto batch = [&](bool own) {
        CK(cudaEventRecord(e0, s));
        for (int i = 0; i < 20; ++i) {
          CK(cublasSetStream(h, s));
          if (own) CK(cublasSetWorkspace(h, ws, ws_bytes));
          CK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.m, T, sh.k, &one, w[i % 2], CUDA_R_16BF,
                          sh.k, x, CUDA_R_16BF, sh.k, &zero, y, CUDA_R_16BF, sh.m,
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        return double(ms) * 1000.0 / 20.0;
      };
      batch(false);
      batch(true);
      std::vector<double> pool, own;
      for (int r = 0; r < 7; ++r) {
        pool.push_back(batch(false));
        own.push_back(batch(true));
      }
      std::sort(pool.begin(), pool.end());
      std::sort(own.begin(), own.end());
      std::printf("%s %d: %.2f, %.2f, %.3f\n", sh.name, T, pool[3], own[3], own[3] / pool[3]);
    }
    for (auto p : w) CK(cudaFree(p));
    CK(cudaFree(x));
    CK(cudaFree(y));
  }
  return 0;
}
