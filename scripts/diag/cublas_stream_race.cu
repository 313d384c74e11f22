// Diagnostic (session 30): do cuBLAS GEMMs issued through one handle on three concurrent streams
// (cublasSetStream before each call, as linear_gemm does) give the same bits as the same GEMMs
// run one at a time? Decode-shaped (n tokens), bf16 in, bf16 out, fp32 compute, the engine's
// OP_T / OP_N form. Modes: 0 one handle, cuBLAS's default workspace (cublasSetStream resets a
// user workspace); 1 one handle, a workspace per stream set after each cublasSetStream; 2 one
// handle per stream. Prints the mismatching outputs per mode (a mismatch: any bit differs).
// Results: bench/RESULTS.md, session 30 (l30a, l30c). The parity case linear_gemm_streams checks
// the engine's form. Build and run (sm_90a):
//   nvcc -O2 -arch=sm_90a -std=c++17 scripts/diag/cublas_stream_race.cu -lcublas -o
//   cublas_stream_race
//   ./cublas_stream_race [tokens = 3] [iterations = 300]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../../bench/kernels/bench_common.cuh"  // CK, CB, bench::fill, bench::median

__global__ void spin_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

__global__ void compare_kernel(const unsigned short* y, const unsigned short* ref, long long n,
                               unsigned long long* bad) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    if (y[i] != ref[i]) atomicAdd(bad, 1ull);
}

struct gemm_shape {
  int m, k;
};

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 3;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 300;
  // Flash-like decode projections: wq_a 1024x4096, compressor wkv/wgate 512x4096 (x2),
  // shared w1/w3 2048x4096, wo_b 4096x8192, w2 4096x2048.
  const std::vector<gemm_shape> shapes{{1024, 4096}, {512, 4096},  {2048, 4096},
                                       {4096, 8192}, {4096, 2048}, {1024, 1024}};
  const int S = int(shapes.size());
  constexpr int k_streams = 3;  // the main stream and two side branches
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<__nv_bfloat16*> A(S), X(S), R(S);
  std::vector<std::vector<__nv_bfloat16*>> Y(k_streams, std::vector<__nv_bfloat16*>(S));
  for (int i = 0; i < S; ++i) {
    const size_t a = size_t(shapes[i].m) * shapes[i].k, x = size_t(shapes[i].k) * n,
                 y = size_t(shapes[i].m) * n;
    std::vector<__nv_bfloat16> ha(a), hx(x);
    for (auto& v : ha) v = __float2bfloat16(nd(rng) * 0.05f);
    for (auto& v : hx) v = __float2bfloat16(nd(rng));
    CK(cudaMalloc(&A[i], a * 2));
    CK(cudaMalloc(&X[i], x * 2));
    CK(cudaMalloc(&R[i], y * 2));
    for (auto& ys : Y) CK(cudaMalloc(&ys[i], y * 2));
    CK(cudaMemcpy(A[i], ha.data(), a * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(X[i], hx.data(), x * 2, cudaMemcpyHostToDevice));
  }
  cudaStream_t st[k_streams];
  cublasHandle_t h[k_streams];
  void* ws[k_streams];
  const size_t ws_bytes = size_t(32) << 20;
  for (int b = 0; b < k_streams; ++b) {
    CK(cudaStreamCreateWithFlags(&st[b], cudaStreamNonBlocking));
    CB(cublasCreate(&h[b]));
    CK(cudaMalloc(&ws[b], ws_bytes));
  }
  unsigned long long* bad;
  CK(cudaMalloc(&bad, sizeof(unsigned long long) * k_streams));
  const float one = 1.f, zero = 0.f;
  auto gemm = [&](cublasHandle_t hd, int i, __nv_bfloat16* y) {
    CB(cublasGemmEx(hd, CUBLAS_OP_T, CUBLAS_OP_N, shapes[i].m, n, shapes[i].k, &one, A[i],
                    CUDA_R_16BF, shapes[i].k, X[i], CUDA_R_16BF, shapes[i].k, &zero, y, CUDA_R_16BF,
                    shapes[i].m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  // Reference: one at a time on stream 0, nothing else running.
  CB(cublasSetStream(h[0], st[0]));
  for (int i = 0; i < S; ++i) gemm(h[0], i, R[i]);
  CK(cudaStreamSynchronize(st[0]));
  for (int mode = 0; mode < 3; ++mode) {
    CK(cudaMemset(bad, 0, sizeof(unsigned long long) * k_streams));
    CK(cudaDeviceSynchronize());
    for (auto s : st) spin_kernel<<<1, 1, 0, s>>>(20000000);
    for (int it = 0; it < iters; ++it) {
      for (int b = 0; b < k_streams; ++b) {
        // The streams run the shapes in rotated orders, so different GEMMs overlap.
        const int i = (it + b * 3) % S;
        cublasHandle_t hd = mode == 2 ? h[b] : h[0];
        CB(cublasSetStream(hd, st[b]));
        if (mode == 1) CB(cublasSetWorkspace(hd, ws[b], ws_bytes));
        gemm(hd, i, Y[b][i]);
        compare_kernel<<<64, 256, 0, st[b]>>>(reinterpret_cast<unsigned short*>(Y[b][i]),
                                              reinterpret_cast<unsigned short*>(R[i]),
                                              (long long)shapes[i].m * n, bad + b);
      }
    }
    CK(cudaDeviceSynchronize());
    unsigned long long hb[k_streams];
    CK(cudaMemcpy(hb, bad, sizeof(hb), cudaMemcpyDeviceToHost));
    const char* names[3] = {"one handle, cuBLAS's pool", "one handle, a workspace per stream",
                            "a handle per stream"};
    std::printf("n=%d mode %d (%s): %d iterations x %d streams, mismatching outputs:", n, mode,
                names[mode], iters, k_streams);
    for (int b = 0; b < k_streams; ++b) std::printf(" %llu", hb[b]);
    std::printf("\n");
  }
  return 0;
}
