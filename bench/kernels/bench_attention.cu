// bench_attention: decode sparse attention and the indexer top-k on the GPU, old kernels against
// new, with the ceilings measured in the same run:
//   * HBM read bandwidth: a read-only reduction over a 1 GiB buffer (>= 4x L2);
//   * dense BF16 tensor-core rate: cuBLAS GEMM 8192^3 (bf16 in, f32 accumulate);
//   * launch floor: an empty kernel, event-timed like every case.
// Every case: random data (never zeros), pools larger than L2 with random (not sequential) rows,
// L2 flushed (a read of 2x L2 outside the timed region) before each of >= 50 CUDA-event timed
// launches; the median is reported with GB/s over the bytes the op must read (keys + queries),
// their % of the read ceiling and TFLOP/s. Also a naive reference for scale: gather the rows
// (gather_rows) and dense BF16 attention through cuBLAS (two batched GEMMs and a softmax kernel).
//
//   bench_attention [--runs N]   every case, old kernels included
//   bench_attention --focus      the decode cases that matter, with a thin-split plan row and the
//                                indexer's grid variants; no old kernels (old vs new: build this
//                                file once more against the previous tree with
//                                -DDSV4_BENCH_PREV_API and run both)
//   bench_attention --profile    the T=1 cases, one timed launch each (under ncu)
//   bench_attention --cases "T,H,hca|csa,CTX,TOPK;..."   those cases only, the attention_decode
//                                kernels alone (warp-specialized in turn and with alternate
//                                tiles, synchronous wgmma); with --no-ceilings none are
//                                measured (under ncu)
//   bench_attention --indexer-chain  the FP4 indexer plan at T=1 x 256K per call in a graph of 8
//                                calls on disjoint keys (the cost per layer in a decode graph)
//   bench_attention --indexer-select-ctas N  (with --indexer-plan-only / --indexer-chain) the
//                                score_list select over N CTAs per token instead of the plan's
//   bench_attention --indexer    the ceilings and the indexer cases only (T=1 and 32, 256K
//                                entries, top-512 and top-1024; graph-replay rows)
//   bench_attention --write-ceiling  the write ceiling rows (bench_write_ceiling) after the read
//                                ceiling, before the other rows (--steps prints them too)
//   bench_attention --small      where small decode steps spend their time: launch floors (an
//                                empty grid shaped like the kernel, + a PDL launch), per case the
//                                split plans of 2 tiles and the engine's (eager, graph replay,
//                                without the combine, producer toggled), the plan as made with
//                                and without alternate tiles (max output difference to the
//                                engine's split plan printed), the naive reference
//   bench_attention --chain-early [--cases ...]  plan.tables_early off / on behind a plain and
//                                a triggering (engine-like) query writer in a graph, the combine's
//                                trigger with an engine-like reader after it, and event-timed
//                                (bench_chain_early_rows)
//   bench_attention --combine-rows --cases "..."   the split plan's combine: block / row
//                                combine (plan.combine_rows), each with and without the partials
//                                kept in L2 (plan.partials_l2), outputs against the block
//                                combine's; and the plan without its combine launch
//   bench_attention --wgmma-rates  cycles per wgmma of the decode kernel's S and P V shapes (and
//                                SS / RS at N = 32, 64, 128), one and two warpgroups per SM
//   bench_attention --prefill [--prefill-cases "T,H,hca|csau|csas,CTX,TOPK;..."]
//                   [--prefill-chunks "N,N,..."] [--prefill-rounds R]   prefill sizes (T = 256-4096
//                                tokens of one sequence) through the engine's chunk loop at
//                                chunks of 64 tokens up to the rule's; what each row models:
//                                bench_prefill_case
//   bench_attention --kv-fp8     FP8 KV records (584 bytes per key: 448 e4m3 + 7 E8M0 scales +
//                                pad + 64 BF16 RoPE) against bf16 pools (1024 bytes per key) in
//                                attention_decode, on Flash CSA T=1 / 32, HCA 1M T=1 / 8, Pro HCA
//                                1M T=32, HCA 128K T=1 / 32; % of the read ceiling on the bytes
//                                each actually reads; split plans also with plan.partials_bf16
//                                toggled (two rounds, alternating with the plan)
//   bench_attention --kv-fp8-ab [--cases ...]  FP8 records vs bf16 pools on the engine's plan,
//                                with the ring / consumer bounds (g_kv_fp8_ab)
//   bench_attention --fp8-convert-check  the warp-specialized producer's record conversion
//                                (dequant_codes8_bf16) against dequant_codes8, bit for bit, over
//                                every code pair and scale byte (2^24 cases; exit 2 on a mismatch)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/attention.h"
#include "backends/cuda/attention_decode.h"
#include "backends/cuda/attention_decode_loads.cuh"
#include "backends/cuda/attention_decode_wgmma.cuh"
#include "backends/cuda/indexer.h"
#include "backends/cuda/indexer_topk_fast.h"
#include "backends/cuda/kv_record.h"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/rows.h"

namespace {

#define CHECK(expr)                                                               \
  do {                                                                            \
    const cudaError_t status_ = (expr);                                           \
    if (status_ != cudaSuccess) {                                                 \
      std::fprintf(stderr, "%s failed at %s:%d: %s\n", #expr, __FILE__, __LINE__, \
                   cudaGetErrorString(status_));                                  \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)
#define CHECK_CUBLAS(expr)                                                                       \
  do {                                                                                           \
    const cublasStatus_t status_ = (expr);                                                       \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "%s failed at %s:%d: %d\n", #expr, __FILE__, __LINE__, int(status_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

int g_runs = 60;
// --twice (diagnosis): each timed region runs the launch twice back to back after the flush, so
// (twice - once) is the time of a launch whose code and data are hot in L2.
bool g_twice = false;
bool g_focus = false;   // --focus: the decode cases that matter, extra plan rows, no old kernels
bool g_kv_fp8 = false;  // --kv-fp8: bf16 pools vs FP8 records only
// --kv-fp8-ab (KVFP8, session 25): the FP8 records against the bf16 pools on the engine's plan
// (attention_decode_make_plan as the engine makes it; --kv-fp8 runs the 2-tile plan and compares
// with the in-turn bf16 kernel), two rounds in alternating order, then the bounds: the ring alone
// (plan.diag 2) of both pools and the records' consumers alone (diag 1). With DSV4_KVFP8_NCU in the
// environment: the records' plan launched twice, nothing timed (for ncu -s 1 -c 1).
bool g_kv_fp8_ab = false;

// --fp8-convert-check: thread i takes code pair i & 0xffff (4 copies, so all four of
// dequant_codes8's word lanes see it) and scale byte b = i >> 16 at byte position i & 3 of the
// scale word (e8m0_bf16x2's PRMT); a mismatch of any of the 4 bf16x2 words is counted and the
// lowest failing i kept. The producer's fast form (dequant_codes8_bf16_fast, e8m0_bf16x2_fast)
// against the same reference for every case it takes (scale bytes <= k_fast_scale_max, no NaN
// code: kv_record.h), counted in fast_bad / fast_first / fast_cases.
__global__ void fp8_convert_check_kernel(unsigned int* bad, unsigned int* first,
                                         unsigned int* nan_out, unsigned int* fast_bad,
                                         unsigned int* fast_first, unsigned int* fast_cases) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t pair = i & 0xffffu, b = i >> 16;
  const uint2 codes = make_uint2(pair | pair << 16, pair | pair << 16);
  const uint4 ref = dsv4::cuda::dequant_codes8(codes, dsv4::cuda::e8m0_value_sel(b));
  const uint32_t word = (b << (8 * (i & 3))) | (0x5a5a5a5au & ~(0xffu << (8 * (i & 3))));
  const uint4 got =
      dsv4::cuda::dequant_codes8_bf16(codes, dsv4::cuda::e8m0_bf16x2(word, int(i & 3)));
  if (ref.x != got.x || ref.y != got.y || ref.z != got.z || ref.w != got.w) {
    atomicAdd(bad, 1u);
    atomicMin(first, i);
  }
  const bool nan_code = (pair & 0x7fu) == 0x7fu || ((pair >> 8) & 0x7fu) == 0x7fu;
  if (b <= dsv4::cuda::k_fast_scale_max && !nan_code) {
    const uint4 fast =
        dsv4::cuda::dequant_codes8_bf16_fast(codes, dsv4::cuda::e8m0_bf16x2_fast(word, int(i & 3)));
    atomicAdd(fast_cases, 1u);
    if (ref.x != fast.x || ref.y != fast.y || ref.z != fast.z || ref.w != fast.w) {
      atomicAdd(fast_bad, 1u);
      atomicMin(fast_first, i);
    }
  }
  // How many results are NaN (codes 0x7f / 0xff or scale 0xff): the check covers them.
  if ((ref.x & 0x7fffu) > 0x7f80u) atomicAdd(nan_out, 1u);
}
bool g_lean = false;  // --cases: the attention_decode bf16 kernels only (no other rows)
// --alt-rows (with --cases): only the alternate-tile schedule's rows: the plan as made, then two
// rounds of alt (the plan's schedule), alt with every token reading token 0's key rows ("hot": rows
// another CTA has read already come from L2; H100 2026-11-26: within 1-3% of the cold rows at HCA
// 1M), the bounds of alt (plan.diag: no row copies, the consumers' chain alone; no products, the
// ring alone), in-turn and its consumers' chain; and the plan without its combine launch.
bool g_alt_rows = false;
// --combine-rows (with --cases): the split plan's combine kernels: the plan as made, then two
// rounds of the block combine (one 128-thread CTA per row) and the row combine (plan.combine_rows,
// one warp per row; outputs compared bit for bit), and the plan without its combine launch.
bool g_combine_rows = false;
size_t g_l2 = 60u << 20;
void* g_flush = nullptr;
size_t g_flush_bytes = 0;
double g_read_gbps = 0;  // ceiling
double g_peak_tflops = 0;

std::mt19937_64 g_rng(20261122);

template <typename T>
T* device_alloc(size_t count) {
  T* p = nullptr;
  CHECK(cudaMalloc(&p, count * sizeof(T)));
  return p;
}

__global__ void fill_uniform_f32(float* p, size_t n, uint64_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = lo + (hi - lo) * float(z >> 40) * 0x1p-24f;
  }
}

__global__ void f32_to_bf16(const float* x, __nv_bfloat16* y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

float* random_f32(size_t n, float lo, float hi) {
  float* p = device_alloc<float>(n);
  fill_uniform_f32<<<1024, 256>>>(p, n, g_rng(), lo, hi);
  CHECK(cudaGetLastError());
  return p;
}

__nv_bfloat16* random_bf16(size_t n, float lo, float hi) {
  float* f = random_f32(n, lo, hi);
  __nv_bfloat16* p = device_alloc<__nv_bfloat16>(n);
  f32_to_bf16<<<1024, 256>>>(f, p, n);
  CHECK(cudaGetLastError());
  CHECK(cudaFree(f));
  return p;
}

int32_t* upload_i32(const std::vector<int32_t>& v) {
  int32_t* p = device_alloc<int32_t>(std::max<size_t>(v.size(), 1));
  CHECK(cudaMemcpy(p, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  return p;
}

std::vector<int32_t> random_rows(size_t n, int64_t below) {
  std::vector<int32_t> v(n);
  for (auto& x : v) x = int32_t(g_rng() % uint64_t(below));
  return v;
}

float* g_flush_sink = nullptr;

__global__ void flush_read_kernel(const float4* p, size_t n, float* sink) {
  float acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = p[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) sink[0] = acc;
}

// IDX29 (--indexer-prologue): n 4-byte words read into L2 (and not kept anywhere).
__global__ void warm_words_kernel(const uint32_t* p, size_t n, float* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    acc ^= p[i];
  if (acc == 0x12345678u) sink[1] = float(acc);
}

// Median of g_runs event-timed launches (after 3 warm-up launches), L2 flushed before each (outside
// the events).
// Warm-up: the timed loop itself (flush + launch + event round trip) runs g_runs times untimed
// first. With three bare launches only, the first timed case of a process measured 7-15% slower
// than the same case timed again later in it (ATTN11, H100 2026-11-26: HCA 1M T=32 117.2 vs
// 102.9 us): the steady state of a decode step is the later figure.
double time_ms(const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms(static_cast<size_t>(g_runs));
  for (int r = -g_runs; r < g_runs; ++r) {
    // Evict L2 by reading 2x its size (clean lines, as after the weight reads of a real step;
    // a memset would leave dirty lines whose write-back competes with the timed reads).
    flush_read_kernel<<<1024, 512>>>(static_cast<const float4*>(g_flush), g_flush_bytes / 16,
                                     g_flush_sink);
    CHECK(cudaEventRecord(a, 0));
    launch();
    if (g_twice) launch();
    CHECK(cudaEventRecord(b, 0));
    CHECK(cudaEventSynchronize(b));
    if (r >= 0) CHECK(cudaEventElapsedTime(&ms[size_t(r)], a, b));
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

__global__ void read_only_kernel(const float4* p, size_t n, float* sink) {
  float acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = __ldcs(p + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1234.5f) sink[0] = acc;  // keeps the loads
}

__global__ void empty_kernel() {}

void print_row(const char* op, const std::string& shape, double ms, double bytes, double flops) {
  const double gbps = bytes / (ms * 1e-3) / 1e9;
  const double tflops = flops > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0;
  if (g_read_gbps > 0)
    std::printf("  %-22s %-50s %9.2f %9.1f %6.1f%% %8.1f\n", op, shape.c_str(), ms * 1e3, gbps,
                100.0 * gbps / g_read_gbps, tflops);
  else  // --quick / --profile measure no ceiling
    std::printf("  %-22s %-50s %9.2f %9.1f %7s %8.1f\n", op, shape.c_str(), ms * 1e3, gbps, "-",
                tflops);
}

// ---- naive reference: gather + dense BF16 attention via cuBLAS ----
__global__ void softmax_rows_bf16(const float* s, const float* sinks, int heads, int keys,
                                  float scale, __nv_bfloat16* p) {
  // One block per (token, head) row of S [keys].
  const int64_t row = blockIdx.x;
  const float* x = s + row * keys;
  __shared__ float red[32];
  float mx = sinks[row % heads];
  for (int i = threadIdx.x; i < keys; i += blockDim.x) mx = fmaxf(mx, x[i] * scale);
  for (int o = 16; o; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(~0u, mx, o));
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx;
  __syncthreads();
  mx = red[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w) mx = fmaxf(mx, red[w]);
  __syncthreads();
  float den = 0;
  for (int i = threadIdx.x; i < keys; i += blockDim.x) den += expf(x[i] * scale - mx);
  for (int o = 16; o; o /= 2) den += __shfl_xor_sync(~0u, den, o);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = den;
  __syncthreads();
  den = expf(sinks[row % heads] - mx);
  for (int w = 0; w < int(blockDim.x / 32); ++w) den += red[w];
  for (int i = threadIdx.x; i < keys; i += blockDim.x)
    p[row * keys + i] = __float2bfloat16_rn(expf(x[i] * scale - mx) / den);
}

struct naive_attention {
  cublasHandle_t handle;
  int64_t T, H, keys;
  __nv_bfloat16 *kv, *p, *q;
  float *s, *o;
  naive_attention(cublasHandle_t h, int64_t T_, int64_t H_, int64_t keys_, __nv_bfloat16* q_)
      : handle(h), T(T_), H(H_), keys(keys_), q(q_) {
    kv = device_alloc<__nv_bfloat16>(size_t(T * keys * 512));
    p = device_alloc<__nv_bfloat16>(size_t(T * H * keys));
    s = device_alloc<float>(size_t(T * H * keys));
    o = device_alloc<float>(size_t(T * H * 512));
  }
  ~naive_attention() {
    cudaFree(kv);
    cudaFree(p);
    cudaFree(s);
    cudaFree(o);
  }
  void run(const __nv_bfloat16* pool, int64_t pool_rows, const int32_t* rows, const float* sinks) {
    CHECK(dsv4::cuda::gather_rows(pool, pool_rows, 1024, rows, T * keys, kv, 0));
    const float one = 1, zero = 0;
    // Column-major view: S^T [keys, H] per token = K [keys, 512] . Q^T [512, H].
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, int(keys), int(H), 512, &one, kv, CUDA_R_16BF, 512,
        keys * 512, q, CUDA_R_16BF, 512, H * 512, &zero, s, CUDA_R_32F, int(keys), H * keys, int(T),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    softmax_rows_bf16<<<unsigned(T * H), 256>>>(s, sinks, int(H), int(keys),
                                                1.0f / std::sqrt(512.0f), p);
    // O^T [512, H] = V^T [512, keys] . P^T [keys, H].
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, 512, int(H), int(keys), &one, kv, CUDA_R_16BF, 512,
        keys * 512, p, CUDA_R_16BF, int(keys), H * keys, &zero, o, CUDA_R_32F, 512, H * 512, int(T),
        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
};

// ---- --small: where the time of small decode steps goes ----
bool g_small = false;

__global__ void empty_smem_kernel() {
  extern __shared__ unsigned char smem[];
  if (threadIdx.x == 1023) smem[0] = 0;  // never: keeps the dynamic allocation
}
__global__ void empty_pdl_kernel() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// Fixed costs of a step: one empty launch, an empty launch shaped like the warp-specialized
// kernel (384 threads, its dynamic shared memory; the SMs switch their carveout after the flush),
// and that launch followed by a PDL-launched empty grid shaped like the combine (64 CTAs).
void bench_small_floors() {
  const int smem = 229968;  // attention_decode_ws_kernel's dynamic shared memory
  CHECK(cudaFuncSetAttribute(empty_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  double ms = time_ms([] { empty_kernel<<<1, 32>>>(); });
  std::printf("  floor: empty kernel (1 x 32)                          %9.2f us\n", ms * 1e3);
  ms = time_ms([&] { empty_smem_kernel<<<8, 384, smem>>>(); });
  std::printf("  floor: empty kernel (8 x 384, 224.6 KB smem)          %9.2f us\n", ms * 1e3);
  ms = time_ms([&] {
    empty_smem_kernel<<<8, 384, smem>>>();
    CHECK(dsv4::cuda::launch_pdl(true, empty_pdl_kernel, dim3(64), dim3(128), 0, 0));
  });
  std::printf("  floor: + PDL empty grid (64 x 128)                    %9.2f us\n", ms * 1e3);
}

// ---- write ceiling: the split partials' store pattern against plain stores ----
// Each CTA writes its share of the buffer (contiguous units, grid-stride over units: 64 KB tiles,
// or 4 KB units for the 16-byte patterns' full grid) with 256 threads, as the ws kernel's two
// consumer warpgroups do:
//   k_wc_plain16: st.global.v4 (a warp store: 512 contiguous bytes);
//   k_wc_evl16: the same with the L2::evict_last cache hint (createpolicy.fractional 1.0);
//   k_wc_frag8 / k_wc_frag8_plain: store_split_partial_bf16's pattern (tile = 64 rows x 1024 B;
//     warp w: rows 16 (w % 4) + lane / 4 and + 8, half w / 4 of the row; 16 rounds of one 8-byte
//     store per lane per row, so a warp store is one 32-byte sector in each of 8 rows), with and
//     without evict_last.
// Stamps (%globaltimer, optional): per CTA its entry (thread 0) and the end, after a barrier of
// all threads' issued stores, or with fence, after each thread's membar.gl (its stores done).
double time_graph_ms(cudaStream_t stream, const std::function<void()>& launch);
enum : int { k_wc_plain16 = 0, k_wc_evl16 = 1, k_wc_frag8 = 2, k_wc_frag8_plain = 3 };
constexpr int k_wc_threads = 256;
constexpr int64_t k_wc_tile = 64 * 1024;

__device__ __forceinline__ unsigned long long wc_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <int Mode, bool Fence>
__global__ void __launch_bounds__(k_wc_threads)
    write_ceiling_kernel(unsigned char* dst, int64_t tiles, int unit, unsigned long long* stamps) {
  const unsigned long long t0 = stamps && threadIdx.x == 0 ? wc_now() : 0;
  uint64_t policy = 0;
  if constexpr (Mode == k_wc_evl16 || Mode == k_wc_frag8)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  const uint32_t v = threadIdx.x * 0x9E3779B9u + blockIdx.x;  // any non-constant data
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    unsigned char* base = dst + t * unit;
    if constexpr (Mode == k_wc_plain16 || Mode == k_wc_evl16) {
#pragma unroll 4
      for (int i = 0; i < unit / (16 * k_wc_threads); ++i) {
        unsigned char* p = base + (int64_t(i) * k_wc_threads + threadIdx.x) * 16;
        if constexpr (Mode == k_wc_plain16)
          asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v), "r"(v + 1),
                       "r"(v + 2), "r"(v + i)
                       : "memory");
        else
          asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p),
                       "r"(v), "r"(v + 1), "r"(v + 2), "r"(v + i), "l"(policy)
                       : "memory");
      }
    } else {
      const int half = warp / 4, h0 = 16 * (warp % 4) + lane / 4, h1 = h0 + 8;
#pragma unroll
      for (int n = 0; n < 32; n += 2) {
        const int pos = (half * 256 + (n >> 1) * 16 + 4 * (lane % 4)) * 2;  // bytes
        unsigned char* p0 = base + h0 * 1024 + pos;
        unsigned char* p1 = base + h1 * 1024 + pos;
        if constexpr (Mode == k_wc_frag8) {
          asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;" ::"l"(p0), "r"(v),
                       "r"(v + n), "l"(policy)
                       : "memory");
          asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;" ::"l"(p1), "r"(v),
                       "r"(v - n), "l"(policy)
                       : "memory");
        } else {
          asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p0), "r"(v), "r"(v + n) : "memory");
          asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p1), "r"(v), "r"(v - n) : "memory");
        }
      }
    }
  }
  if (stamps) {
    if constexpr (Fence) __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
      stamps[2 * blockIdx.x] = t0;
      stamps[2 * blockIdx.x + 1] = wc_now();
    }
  }
}

template <int Mode, bool Fence>
void launch_write_ceiling(int ctas, int smem, unsigned char* dst, int64_t tiles, int unit,
                          unsigned long long* stamps, cudaStream_t s) {
  write_ceiling_kernel<Mode, Fence><<<ctas, k_wc_threads, smem, s>>>(dst, tiles, unit, stamps);
  CHECK(cudaGetLastError());
}

// Median over replays (L2 flushed before each) of the median CTA's span (entry -> end) and the
// grid's span (first entry -> last end), us.
template <int Mode, bool Fence>
void trace_write_ceiling(int ctas, int smem, unsigned char* dst, int64_t tiles, int unit,
                         double& cta_us, double& grid_us) {
  constexpr int reps = 31;
  unsigned long long* st = device_alloc<unsigned long long>(size_t(2) * ctas);
  std::vector<unsigned long long> h(size_t(2) * ctas);
  std::vector<double> cta, grid;
  for (int r = 0; r < reps + 2; ++r) {
    flush_read_kernel<<<1024, 512>>>(static_cast<const float4*>(g_flush), g_flush_bytes / 16,
                                     g_flush_sink);
    CHECK(cudaDeviceSynchronize());
    launch_write_ceiling<Mode, Fence>(ctas, smem, dst, tiles, unit, st, 0);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h.data(), st, h.size() * 8, cudaMemcpyDeviceToHost));
    if (r < 2) continue;
    unsigned long long lo = ~0ull, hi = 0;
    std::vector<double> span(static_cast<size_t>(ctas));
    for (int c = 0; c < ctas; ++c) {
      lo = std::min(lo, h[2 * size_t(c)]);
      hi = std::max(hi, h[2 * size_t(c) + 1]);
      span[size_t(c)] = double(int64_t(h[2 * size_t(c) + 1] - h[2 * size_t(c)])) * 1e-3;
    }
    std::sort(span.begin(), span.end());
    cta.push_back(span[span.size() / 2]);
    grid.push_back(double(int64_t(hi - lo)) * 1e-3);
  }
  std::sort(cta.begin(), cta.end());
  std::sort(grid.begin(), grid.end());
  cta_us = cta[cta.size() / 2];
  grid_us = grid[grid.size() / 2];
  cudaFree(st);
}

// The rows: per pattern, buffer size (8 / 32 MB) and grid (128 CTAs, one per SM: each CTA takes
// 120 KB of shared memory; and the full grid), the graph-replay time (L2 flushed
// before each replay) less the empty kernel's, and the %globaltimer spans: issue (all stores
// issued) and fenced (all stores done), GB/s on the fenced grid span.
void bench_write_ceiling(int sms) {
  const int one_per_sm_smem = 120 * 1024;
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_plain16, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_evl16, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_frag8, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_frag8_plain, false>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_plain16, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_evl16, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_frag8, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  CHECK(cudaFuncSetAttribute(write_ceiling_kernel<k_wc_frag8_plain, true>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, one_per_sm_smem));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));  // blocking: ordered with the legacy stream of the events
  const double floor_ms = time_graph_ms(s, [&] { empty_kernel<<<1, 32, 0, s>>>(); });
  unsigned char* buf = device_alloc<unsigned char>(size_t(32) << 20);
  std::printf(
      "write ceiling (256 threads per CTA, 64 KB tiles; graph replay less the empty kernel's "
      "%.2f us; spans: %%globaltimer, median of 31, median CTA / grid):\n"
      "  %-20s %3s %5s %9s %9s %9s %9s %9s %9s %9s\n",
      floor_ms * 1e3, "pattern", "MB", "CTAs", "graph us", "-floor", "GB/s", "issue cta",
      "issue grd", "fence grd", "GB/s fnc");
  struct pattern {
    const char* name;
    bool frag;
    void (*launch)(int, int, unsigned char*, int64_t, int, unsigned long long*, cudaStream_t);
    void (*trace_issue)(int, int, unsigned char*, int64_t, int, double&, double&);
    void (*trace_fence)(int, int, unsigned char*, int64_t, int, double&, double&);
  };
  const pattern pats[] = {
      {"16B plain", false, launch_write_ceiling<k_wc_plain16, false>,
       trace_write_ceiling<k_wc_plain16, false>, trace_write_ceiling<k_wc_plain16, true>},
      {"16B evict_last", false, launch_write_ceiling<k_wc_evl16, false>,
       trace_write_ceiling<k_wc_evl16, false>, trace_write_ceiling<k_wc_evl16, true>},
      {"8B frag evict_last", true, launch_write_ceiling<k_wc_frag8, false>,
       trace_write_ceiling<k_wc_frag8, false>, trace_write_ceiling<k_wc_frag8, true>},
      {"8B frag plain", true, launch_write_ceiling<k_wc_frag8_plain, false>,
       trace_write_ceiling<k_wc_frag8_plain, false>, trace_write_ceiling<k_wc_frag8_plain, true>},
  };
  for (int mb : {8, 32})
    for (const bool full : {false, true})
      for (const pattern& pt : pats) {
        // 128 CTAs: 64 KB tiles, one CTA per SM. Full grid: the 16-byte patterns in 4 KB units
        // over 1024 CTAs (~8 per SM, equal shares); the fragment pattern one CTA per 64 KB tile
        // (its layout), no shared memory.
        const int unit = full && !pt.frag ? 4096 : int(k_wc_tile);
        const int64_t tiles = (int64_t(mb) << 20) / unit;
        const int grid = !full ? 128 : pt.frag ? int(tiles) : 1024;
        const int smem = full ? 0 : one_per_sm_smem;
        const double ms =
            time_graph_ms(s, [&] { pt.launch(grid, smem, buf, tiles, unit, nullptr, s); });
        double ic, ig, fc, fg;
        pt.trace_issue(grid, smem, buf, tiles, unit, ic, ig);
        pt.trace_fence(grid, smem, buf, tiles, unit, fc, fg);
        const double net_us = (ms - floor_ms) * 1e3;
        const double bytes = double(int64_t(mb) << 20);
        std::printf("  %-20s %3d %5d %9.2f %9.2f %9.1f %9.2f %9.2f %9.2f %9.1f\n", pt.name, mb,
                    grid, ms * 1e3, net_us, bytes / (net_us * 1e-6) / 1e9, ic, ig, fg,
                    bytes / (fg * 1e-6) / 1e9);
      }
  cudaFree(buf);
  CHECK(cudaStreamDestroy(s));
}
// Max |a - b| / max |b| over two bf16 outputs.
double rel_diff(const __nv_bfloat16* a, const __nv_bfloat16* b, size_t n) {
  std::vector<__nv_bfloat16> x(n), y(n);
  CHECK(cudaMemcpy(x.data(), a, n * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(y.data(), b, n * 2, cudaMemcpyDeviceToHost));
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double u = __bfloat162float(x[i]), v = __bfloat162float(y[i]);
    d = std::max(d, std::fabs(u - v));
    m = std::max(m, std::fabs(v));
  }
  return m > 0 ? d / m : d;
}

double time_graph_ms(cudaStream_t stream, const std::function<void()>& launch);

void bench_small_rows(cublasHandle_t blas, int sms, int64_t T, int64_t H, bool hca, int64_t context,
                      int64_t top_k, int64_t W, int64_t table_width, const __nv_bfloat16* pool16,
                      int64_t pool_rows, __nv_bfloat16* q16, const float* sinks,
                      __nv_bfloat16* out16, const dsv4::cuda::kv_rows<__nv_bfloat16>& w16,
                      const dsv4::cuda::kv_rows<__nv_bfloat16>& c16, const int32_t* gather_idx,
                      const char* shape, double bytes16, double flops) {
  const int64_t d = 512;
  const int64_t cap_c = hca ? table_width * 128 : top_k;
  const int64_t slots = W + cap_c;
  const size_t n_out = size_t(T * H * d);
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));  // blocking: ordered with the legacy stream of the events
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
  auto run = [&](const dsv4::cuda::attention_decode_plan& p, void* scratch, __nv_bfloat16* o,
                 cudaStream_t s) {
    CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, 1.0f / std::sqrt(float(d)), o, p, scratch, p.scratch_bytes,
        s)));
  };
  auto row = [&](const std::string& label, const dsv4::cuda::attention_decode_plan& p, bool graph,
                 bool check) {
    void* scratch = device_alloc<unsigned char>(std::max<size_t>(p.scratch_bytes, 16));
    // One launch first (its one-time attribute calls outside any capture); a configuration the
    // device refuses is reported and skipped.
    const cudaError_t e = dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, 1.0f / std::sqrt(float(d)), out16, p, scratch,
        p.scratch_bytes, 0);
    if (e != cudaSuccess) {
      std::printf("  %-22s s=%lld: launch refused: %s\n", label.c_str(), (long long)p.splits,
                  cudaGetErrorString(e));
      (void)cudaGetLastError();
      cudaFree(scratch);
      return 0.0;
    }
    CHECK(cudaDeviceSynchronize());
    const double ms = time_ms([&] { run(p, scratch, out16, 0); });
    char l[64];
    std::snprintf(l, sizeof(l), "%s s=%lld", label.c_str(), (long long)p.splits);
    print_row(l, shape, ms, bytes16, flops);
    if (check)
      std::printf("    max |out - split plan out| / max |out|: %.3g\n",
                  rel_diff(out16, ref, n_out));
    if (graph) {
      const double gms = time_graph_ms(st, [&] { run(p, scratch, out16, st); });
      print_row((std::string(l) + " graph").c_str(), shape, gms, bytes16, flops);
    }
    cudaFree(scratch);
    return ms;
  };
  // The split plans: the benchmark's (2 tiles per split) and the engine's (one tile per split
  // for small steps).
  const auto old_bench = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms, 2);
  const auto old_engine = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  {
    void* scratch = device_alloc<unsigned char>(old_engine.scratch_bytes);
    run(old_engine, scratch, ref, 0);
    CHECK(cudaDeviceSynchronize());
    cudaFree(scratch);
  }
  row("split 2t", old_bench, false, false);
  row("split engine", old_engine, true, false);
  {
    auto p = old_engine;
    p.combine = false;
    row("  no combine", p, true, false);
    p = old_engine;
    p.producer = !p.producer;
    row(p.producer ? "  with producer" : "  no producer", p, false, false);
  }
  const auto now = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  row("NEW plan split", now, true, true);
  if (now.producer) {
    // The schedule the plan does not take (DSV4_ATTENTION_ALT=0).
    auto p = now;
    p.alt = false;
    row("  in-turn (no alt)", p, false, true);
  }
  {
    // Alternate tiles per consumer warpgroup on the plan's split (plan.alt; producer kernel).
    auto p = now;
    p.producer = true;
    p.alt = true;
    row("  alternate tiles", p, false, true);
  }
  if (T * slots <= 64 * 8320) {
    naive_attention naive(blas, T, H, slots - (hca ? cap_c - context / 128 : 0), q16);
    const double ms = time_ms([&] { naive.run(pool16, pool_rows, gather_idx, sinks); });
    print_row("naive gather+cuBLAS", shape, ms, bytes16, flops);
  }
  cudaFree(ref);
  CHECK(cudaStreamDestroy(st));
}

// ---- --steps: small decode steps (T <= 8): where a step's time goes, and its alternatives ----
bool g_steps = false;

// A kernel of the shape of the step's predecessor in the engine (it writes the query: one CTA per
// 4 (token, head) rows, a copy), for the chained rows: the attention launch after it with and
// without plan.pdl.
__global__ void prev_write_q(const uint4* src, uint4* dst, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

// plan.trace: the median over replays (L2 flushed before each) of the CTAs' stamps, us after the
// first CTA's entry: per slot the median and the latest CTA; the combine's first entry, latest
// wait return and latest end.
void trace_plan(const char* label, const dsv4::cuda::attention_decode_plan& plan,
                const std::function<void(const dsv4::cuda::attention_decode_plan&)>& run) {
  using namespace dsv4::cuda;
  constexpr int reps = 31;
  const size_t words = size_t(2) * k_adt_max_ctas * k_adt_slots;
  unsigned long long* tr = device_alloc<unsigned long long>(words);
  auto p = plan;
  p.trace = tr;
  std::vector<unsigned long long> h(words);
  static const int slots[] = {k_adt_setup, k_adt_index, k_adt_issued, k_adt_landed, k_adt_query,
                              k_adt_tile0, k_adt_s0,    k_adt_loop,   k_adt_end};
  static const char* const names[] = {"setup", "index", "issued", "landed", "query",
                                      "tile0", "s0",    "loop",   "end"};
  constexpr int n_slots = int(sizeof(slots) / sizeof(slots[0]));
  std::vector<std::vector<double>> med(n_slots), mx(n_slots), comb(3), span(1);
  int ctas = 0;
  for (int r = 0; r < reps + 2; ++r) {
    CHECK(cudaMemset(tr, 0, words * 8));
    flush_read_kernel<<<1024, 512>>>(static_cast<const float4*>(g_flush), g_flush_bytes / 16,
                                     g_flush_sink);
    CHECK(cudaDeviceSynchronize());
    run(p);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h.data(), tr, words * 8, cudaMemcpyDeviceToHost));
    if (r < 2) continue;
    unsigned long long t0 = ~0ull;
    ctas = 0;
    for (int c = 0; c < k_adt_max_ctas; ++c) {
      const unsigned long long e = h[size_t(c) * k_adt_slots + k_adt_entry];
      if (e) {
        t0 = std::min(t0, e);
        ++ctas;
      }
    }
    if (ctas == 0) continue;
    auto rel = [&](unsigned long long x) { return double(int64_t(x - t0)) * 1e-3; };
    for (int i = 0; i < n_slots; ++i) {
      std::vector<double> v;
      for (int c = 0; c < k_adt_max_ctas; ++c) {
        const unsigned long long x = h[size_t(c) * k_adt_slots + slots[i]];
        if (x) v.push_back(rel(x));
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      med[size_t(i)].push_back(v[v.size() / 2]);
      mx[size_t(i)].push_back(v.back());
    }
    double c_entry = 1e30, c_wait = -1e30, c_end = -1e30;
    bool any = false;
    for (int c = 0; c < k_adt_max_ctas; ++c) {
      const size_t b = (size_t(k_adt_max_ctas) + size_t(c)) * k_adt_slots;
      if (!h[b + k_adt_entry]) continue;
      any = true;
      c_entry = std::min(c_entry, rel(h[b + k_adt_entry]));
      if (h[b + k_adt_setup]) c_wait = std::max(c_wait, rel(h[b + k_adt_setup]));
      if (h[b + k_adt_end]) c_end = std::max(c_end, rel(h[b + k_adt_end]));
    }
    if (any) {
      comb[0].push_back(c_entry);
      comb[1].push_back(c_wait);
      comb[2].push_back(c_end);
    }
    double last_entry = 0;
    for (int c = 0; c < k_adt_max_ctas; ++c) {
      const unsigned long long e = h[size_t(c) * k_adt_slots + k_adt_entry];
      if (e) last_entry = std::max(last_entry, rel(e));
    }
    span[0].push_back(last_entry);
  }
  auto median = [](std::vector<double>& v) {
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "    trace %s (%d CTAs; us after the first entry, median of %d; med/last CTA):\n"
      "     ",
      label, ctas, reps);
  std::printf(" entry last %.2f;", median(span[0]));
  for (int i = 0; i < n_slots; ++i)
    if (!med[size_t(i)].empty())
      std::printf(" %s %.2f/%.2f;", names[i], median(med[size_t(i)]), median(mx[size_t(i)]));
  if (!comb[0].empty())
    std::printf(" combine entry %.2f, wait %.2f, end %.2f", median(comb[0]), median(comb[1]),
                median(comb[2]));
  std::printf("\n");
  cudaFree(tr);
}

// The split plan as attention_decode_make_plan made it before ATTN12 (the baseline of --steps):
// one tile per split for one token with <= 2048 slots, else 2; the warp-specialized kernel from 4
// tiles per split (alt, partials in L2 with the fragments' stores; fold at one split), else the
// synchronous kernel; no PDL. (Before session 13 this baseline took the fused cluster plan where
// the session-8 rule chose it; that plan is removed, attention_decode_plan.cpp.)
dsv4::cuda::attention_decode_plan plan_before_attn12(int64_t T, int64_t H, int64_t W, int64_t cap_c,
                                                     int sms) {
  using namespace dsv4::cuda;
  auto split =
      attention_decode_make_plan(T, H, 512, W, cap_c, sms, T == 1 && W + cap_c <= 2048 ? 1 : 2);
  const int64_t per = split.keys_per_split / 32;
  split.producer = split.alt = split.partials_l2 = per >= 4;
  split.fold = split.producer && split.splits == 1;
  split.pdl = false;
  return split;
}

void bench_step_rows(int sms, int64_t T, int64_t H, int64_t W, int64_t cap_c, __nv_bfloat16* q16,
                     const float* sinks, __nv_bfloat16* out16,
                     const dsv4::cuda::kv_rows<__nv_bfloat16>& w16,
                     const dsv4::cuda::kv_rows<__nv_bfloat16>& c16, const char* shape,
                     double bytes16, double flops) {
  using dsv4::cuda::attention_decode_plan;
  const int64_t d = 512;
  const int64_t slots = W + cap_c;
  const int64_t tiles = (slots + 31) / 32;
  const size_t n_out = size_t(T * H * d);
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));  // blocking: ordered with the legacy stream of the events
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
  __nv_bfloat16* q_src = device_alloc<__nv_bfloat16>(n_out);
  CHECK(cudaMemcpy(q_src, q16, n_out * 2, cudaMemcpyDeviceToDevice));
  size_t scratch_bytes = 16;
  for (int64_t k = 1; k <= 64; ++k)
    scratch_bytes =
        std::max(scratch_bytes,
                 dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms, k).scratch_bytes);
  scratch_bytes = std::max(scratch_bytes, size_t(T * 33 * H) * (512 * 4 + 8));  // "waves" rows
  void* scratch = device_alloc<unsigned char>(scratch_bytes);
  auto run_on = [&](const attention_decode_plan& p, __nv_bfloat16* o, cudaStream_t s) {
    return dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, 1.0f / std::sqrt(float(d)), o, p, scratch, p.scratch_bytes,
        s);
  };
  auto run = [&](const attention_decode_plan& p) { CHECK(run_on(p, out16, 0)); };
  const auto made = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  CHECK(run_on(made, ref, 0));
  CHECK(cudaDeviceSynchronize());
  auto label_of = [&](const char* base, const attention_decode_plan& p) {
    char l[96];
    std::snprintf(l, sizeof(l), "%s S%lldx%lld%s", base, (long long)p.splits,
                  (long long)(p.keys_per_split / 32),
                  p.producer ? (p.alt ? " ws" : " ws-it") : " sync");
    return std::string(l);
  };
  // One row: event-timed (eager launch), output distance to the plan as made.
  auto row = [&](const char* base, const attention_decode_plan& p, bool trace) {
    const cudaError_t e = run_on(p, out16, 0);
    const std::string l = label_of(base, p);
    if (e != cudaSuccess) {
      std::printf("  %-26s launch refused: %s\n", l.c_str(), cudaGetErrorString(e));
      (void)cudaGetLastError();
      return 0.0;
    }
    CHECK(cudaDeviceSynchronize());
    const double ms = time_ms([&] { run(p); });
    print_row(l.c_str(), shape, ms, bytes16, flops);
    const double diff = rel_diff(out16, ref, n_out);
    if (diff != 0) std::printf("    max |out - plan out| / max |out|: %.3g\n", diff);
    if (trace) trace_plan(l.c_str(), p, run);
    return ms;
  };
  const auto before = plan_before_attn12(T, H, W, cap_c, sms);
  row("before", before, true);
  row("plan", made, true);
  // The plan with plan.partials_bf16 toggled (f32 / bf16 partial rows), twice, alternating with
  // the plan as made; traced once.
  auto toggled = made;
  toggled.partials_bf16 = !made.partials_bf16;
  const char* const tog_label = toggled.partials_bf16 ? "bf16 part" : "f32 part";
  if (made.splits > 1) {
    row(tog_label, toggled, true);
    row("plan r2", made, false);
    row((std::string(tog_label) + " r2").c_str(), toggled, false);
  }
  {
    const double gms = time_graph_ms(st, [&] { CHECK(run_on(before, out16, st)); });
    print_row((label_of("before", before) + " graph").c_str(), shape, gms, bytes16, flops);
    const double pms = time_graph_ms(st, [&] { CHECK(run_on(made, out16, st)); });
    print_row((label_of("plan", made) + " graph").c_str(), shape, pms, bytes16, flops);
    std::printf("    before / plan (graph): %.3fx\n", gms / pms);
    if (made.splits > 1) {
      const double tms = time_graph_ms(st, [&] { CHECK(run_on(toggled, out16, st)); });
      print_row((label_of(tog_label, toggled) + " graph").c_str(), shape, tms, bytes16, flops);
      const double pms2 = time_graph_ms(st, [&] { CHECK(run_on(made, out16, st)); });
      print_row((label_of("plan", made) + " graph r2").c_str(), shape, pms2, bytes16, flops);
      std::printf("    %s / plan (graph): %.3fx\n", tog_label, tms / std::min(pms, pms2));
    }
  }
  // The key loop's two bounds on the plan (plan.diag, output undefined): the consumers alone (no
  // row copies) and the ring alone (no products), traced.
  if (made.producer) {
    auto p = made;
    p.diag = 1;
    row("  consumers alone", p, true);
    p.diag = 2;
    row("  ring alone", p, true);
  }
  // ATTN28: the key tiles of 32 consecutive valid rows by TMA (plan.diag 32: also in splits that
  // the plan leaves to cp.async, ATTN29; the HCA cases' paged compressed rows) against every tile
  // by cp.async (plan.diag 16), bf16 split partials only:
  // event rows (traced) with the output's distance to the cp.async variant's (0: bit-equal), each
  // one's ring alone (diag + 2, traced), then graph replays alternating three rounds. (ATTN27's
  // exact-rescale A/B (plan.diag 8) was here: its rows are in the session 18 logs.)
  if (made.producer && made.alt && made.partials_bf16 && made.splits > 1) {
    struct variant {
      const char* name;
      int diag;
    };
    // (v tma2d: plan.diag 128, each TMA tile as 8 2-D boxes, the form before session 32, instead
    // of one 3-D box.)
    const variant vs[] = {{"v ldgsts", 16}, {"v tma", 32}, {"v tma2d", 32 | 128}};
    constexpr int nv = int(sizeof(vs) / sizeof(vs[0]));
    __nv_bfloat16* base_out = device_alloc<__nv_bfloat16>(n_out);
    auto with = [&](int diag) {
      auto p = made;
      p.diag = diag;
      return p;
    };
    CHECK(run_on(with(16), base_out, 0));
    CHECK(cudaDeviceSynchronize());
    for (const variant& v : vs) {
      row(v.name, with(v.diag), true);
      std::printf("    %s: max |out - ldgsts out| / max |out|: %.3g\n", v.name,
                  rel_diff(out16, base_out, n_out));
    }
    for (const variant& v : vs)
      row((std::string("  ring ") + v.name).c_str(), with(v.diag + 2), true);
    double best[nv];
    for (int i = 0; i < nv; ++i) best[i] = 1e30;
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < nv; ++i) {
        const auto p = with(vs[i].diag);
        const double gms = time_graph_ms(st, [&] { CHECK(run_on(p, out16, st)); });
        best[i] = std::min(best[i], gms);
        char l[64];
        std::snprintf(l, sizeof(l), "%s graph r%d", vs[i].name, r + 1);
        print_row(l, shape, gms, bytes16, flops);
      }
    std::printf("    variants (graph, best of 3):");
    for (int i = 0; i < nv; ++i)
      std::printf(" %s %.2f us (ldgsts / this %.3fx);", vs[i].name, best[i] * 1e3,
                  best[0] / best[i]);
    std::printf("\n");
    cudaFree(base_out);
  }
  if (!made.fold) {
    auto p = made;
    p.combine = false;
    row("  no combine", p, false);
  }
  {
    auto p = made;
    p.pdl = false;
    row("  no pdl", p, false);
  }
  // Chained behind a predecessor that writes the query (graph replay): without / with plan.pdl.
  {
    const int64_t n16 = int64_t(n_out / 8);
    const unsigned blocks = unsigned((n16 + 127) / 128);
    auto prev = [&](cudaStream_t s) {
      prev_write_q<<<blocks, 128, 0, s>>>(reinterpret_cast<const uint4*>(q_src),
                                          reinterpret_cast<uint4*>(q16), n16);
    };
    const double ms_prev = time_graph_ms(st, [&] { prev(st); });
    print_row("chain: predecessor alone", shape, ms_prev, bytes16, flops);
    for (const bool pdl : {false, true}) {
      auto p = made;
      p.pdl = pdl;
      const double ms = time_graph_ms(st, [&] {
        prev(st);
        CHECK(run_on(p, out16, st));
      });
      char l[96];
      std::snprintf(l, sizeof(l), "chain: + plan%s", pdl ? " pdl" : "");
      print_row(l, shape, ms, bytes16, flops);
      std::printf("    chain - predecessor: %.2f us\n", (ms - ms_prev) * 1e3);
      const double diff = rel_diff(out16, ref, n_out);
      if (diff != 0) std::printf("    max |out - plan out| / max |out|: %.3g\n", diff);
    }
  }
  // Splits of k tiles on the plan's kernel (warp-specialized, alternate tiles, partials in L2).
  int64_t last_splits = -1;
  for (const int64_t k : {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 33}) {
    auto p = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms, k);
    if (p.splits == last_splits || p.splits == made.splits || p.keys_per_split / 32 > tiles)
      continue;
    last_splits = p.splits;
    row("split", p, false);
  }
  // More splits than one wave holds (T * splits > SMs; the plan caps splits at SMs / T): the same
  // kernel and combines as the plan would pick for that split count; one of them traced.
  for (const int64_t want : {20, 24, 33}) {
    if (want <= made.splits || want > tiles || made.fold) continue;
    auto p = made;
    const int64_t per = (tiles + want - 1) / want;
    p.splits = (tiles + per - 1) / per;
    p.keys_per_split = per * 32;
    p.scratch_bytes = size_t(T * p.splits * H) * (512 * 4 + 8);
    if (p.scratch_bytes > scratch_bytes) continue;
    p.partials_bf16 = p.splits <= 64;  // as the plan
    p.combine_rows = p.splits <= dsv4::cuda::k_attention_decode_max_combine_rows_splits;
    row("waves", p, want == 24);
  }
  cudaFree(scratch);
  cudaFree(q_src);
  cudaFree(ref);
  CHECK(cudaStreamDestroy(st));
}

// --chain-early: the plan as made (off) and with plan.tables_early (early) in a graph behind a
// predecessor that writes the query: plain (prev_write_q) and the engine's way (copy_pdl), 3
// rounds alternating; "- pred" subtracts the predecessor alone. Then, for split plans, the
// attention between the engine-like writer and reader (copy_pdl of its output) with
// plan.combine_trigger on / off; then the event-timed rows (no predecessor). L2 flushed before
// each replay.
bool g_chain_early = false;

// A copy the engine's way (pdl.cuh's small kernels: trigger and wait first thing): the query's
// writer before the attention, and the step's next kernel after it (the inverse RoPE reading its
// output).
__global__ void copy_pdl(const uint4* src, uint4* dst, int64_t n) {
  dsv4::cuda::pdl_trigger();
  dsv4::cuda::pdl_wait();
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

void bench_chain_early_rows(int sms, int64_t T, int64_t H, int64_t W, int64_t cap_c,
                            __nv_bfloat16* q16, const float* sinks, __nv_bfloat16* out16,
                            const dsv4::cuda::kv_rows<__nv_bfloat16>& w16,
                            const dsv4::cuda::kv_rows<__nv_bfloat16>& c16, const char* shape,
                            double bytes16, double flops) {
  using dsv4::cuda::attention_decode_plan;
  const int64_t d = 512;
  const size_t n_out = size_t(T * H * d);
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));  // blocking: ordered with the legacy stream of the events
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
  __nv_bfloat16* q_src = device_alloc<__nv_bfloat16>(n_out);
  CHECK(cudaMemcpy(q_src, q16, n_out * 2, cudaMemcpyDeviceToDevice));
  const auto made = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  void* scratch = device_alloc<unsigned char>(std::max<size_t>(made.scratch_bytes, 16));
  auto run_on = [&](const attention_decode_plan& p, __nv_bfloat16* o, cudaStream_t s) {
    return dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, 1.0f / std::sqrt(float(d)), o, p, scratch, p.scratch_bytes,
        s);
  };
  CHECK(run_on(made, ref, 0));
  CHECK(cudaDeviceSynchronize());
  // off: the plan as made; early: the tables before the wait (plan.tables_early).
  struct variant {
    const char* name;
    attention_decode_plan p;
  };
  std::vector<variant> vs = {{"off", made}, {"early", made}};
  vs[1].p.tables_early = true;
  // Three rounds of every variant in turn, each a graph replay of body(variant) whose output
  // `check` is compared with the plan's; returns each variant's best time less `base` (ms).
  auto best_of_rounds = [&](const std::vector<variant>& vars, const char* label, auto body,
                            double base, const __nv_bfloat16* check) {
    std::vector<double> best(vars.size(), 1e30);
    for (int r = 0; r < 3; ++r)
      for (size_t v = 0; v < vars.size(); ++v) {
        CHECK(cudaMemset(out16, 0xff, n_out * 2));
        const double ms = time_graph_ms(st, [&] { body(vars[v].p); });
        char l[96];
        std::snprintf(l, sizeof(l), "%s + %s r%d", label, vars[v].name, r + 1);
        print_row(l, shape, ms, bytes16, flops);
        std::printf("    - base: %.2f us\n", (ms - base) * 1e3);
        best[v] = std::min(best[v], ms - base);
        const double diff = rel_diff(check, ref, n_out);
        if (diff != 0) std::printf("    max |out - plan out| / max |out|: %.3g\n", diff);
      }
    return best;
  };
  const int64_t n16 = int64_t(n_out / 8);
  const unsigned blocks = unsigned((n16 + 127) / 128);
  auto prev = [&](bool trig, cudaStream_t s) {
    if (trig)
      CHECK(dsv4::cuda::launch_pdl(true, copy_pdl, dim3(blocks), dim3(128), 0, s,
                                   reinterpret_cast<const uint4*>(q_src),
                                   reinterpret_cast<uint4*>(q16), n16));
    else
      prev_write_q<<<blocks, 128, 0, s>>>(reinterpret_cast<const uint4*>(q_src),
                                          reinterpret_cast<uint4*>(q16), n16);
  };
  std::printf("  chain-early S%lldx%lld%s\n", (long long)made.splits,
              (long long)(made.keys_per_split / 32), made.pdl ? " pdl" : "");
  for (const bool trig : {false, true}) {
    const double ms_prev = time_graph_ms(st, [&] { prev(trig, st); });
    char l[96];
    std::snprintf(l, sizeof(l), "pred %s alone", trig ? "trig" : "plain");
    print_row(l, shape, ms_prev, bytes16, flops);
    std::snprintf(l, sizeof(l), "pred %s", trig ? "trig" : "plain");
    const std::vector<double> best = best_of_rounds(
        vs, l,
        [&](const attention_decode_plan& p) {
          prev(trig, st);
          CHECK(run_on(p, out16, st));
        },
        ms_prev, out16);
    std::printf("    pred %s, best - pred (us):", trig ? "trig" : "plain");
    for (size_t v = 0; v < vs.size(); ++v)
      std::printf(" %s %.2f (%.3fx)", vs[v].name, best[v] * 1e3, best[0] / best[v]);
    std::printf("\n");
  }
  // With the step's next kernel behind the attention (copy_pdl of its output), the engine's way
  // both sides: the combine triggering its dependents first thing ("first", plan.combine_trigger)
  // or at its exit ("exit"); fold plans have no combine. Minus the writer and the reader alone.
  if (made.splits > 1) {
    __nv_bfloat16* next_out = device_alloc<__nv_bfloat16>(n_out);
    auto next = [&](cudaStream_t s) {
      CHECK(dsv4::cuda::launch_pdl(true, copy_pdl, dim3(blocks), dim3(128), 0, s,
                                   reinterpret_cast<const uint4*>(out16),
                                   reinterpret_cast<uint4*>(next_out), n16));
    };
    const double ms_pn = time_graph_ms(st, [&] {
      prev(true, st);
      next(st);
    });
    auto first_plan = vs[1].p, exit_plan = vs[1].p;
    first_plan.combine_trigger = true;
    exit_plan.combine_trigger = false;
    const std::vector<variant> ns = {{"first", first_plan}, {"exit", exit_plan}};
    const std::vector<double> best = best_of_rounds(
        ns, "trig + next",
        [&](const attention_decode_plan& p) {
          prev(true, st);
          CHECK(run_on(p, out16, st));
          next(st);
        },
        ms_pn, next_out);
    std::printf(
        "    with next, best - writer - reader (us): first %.2f, exit %.2f (%.3fx; plan %s)\n",
        best[0] * 1e3, best[1] * 1e3, best[1] / best[0], made.combine_trigger ? "first" : "exit");
    cudaFree(next_out);
  }
  for (int r = 0; r < 2; ++r)
    for (size_t v = 0; v < vs.size(); ++v) {
      const double ms = time_ms([&] { CHECK(run_on(vs[v].p, out16, 0)); });
      char l[96];
      std::snprintf(l, sizeof(l), "event %s r%d", vs[v].name, r + 1);
      print_row(l, shape, ms, bytes16, flops);
      const double diff = rel_diff(out16, ref, n_out);
      if (diff != 0) std::printf("    max |out - plan out| / max |out|: %.3g\n", diff);
    }
  cudaFree(scratch);
  cudaFree(q_src);
  cudaFree(ref);
  CHECK(cudaStreamDestroy(st));
}

// ---- --alt-rows: the alternate-tile schedule, its bounds (plan.diag) and in-turn ----
void bench_alt_rows(int sms, int64_t T, int64_t H, int64_t d, int64_t W, int64_t cap_c,
                    const __nv_bfloat16* q16, const float* sinks, __nv_bfloat16* out16,
                    const dsv4::cuda::kv_rows<__nv_bfloat16>& w16,
                    const dsv4::cuda::kv_rows<__nv_bfloat16>& c16, const std::vector<int32_t>& wr,
                    int64_t table_width, const char* shape, double bytes16, double flops) {
  const float scale = 1.0f / std::sqrt(float(d));
  const size_t n_out = size_t(T * H * d);
  const auto made = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  void* scratch = device_alloc<unsigned char>(std::max<size_t>(made.scratch_bytes, 16));
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
  auto run = [&](const dsv4::cuda::attention_decode_plan& p,
                 const dsv4::cuda::kv_rows<__nv_bfloat16>& w,
                 const dsv4::cuda::kv_rows<__nv_bfloat16>& c, __nv_bfloat16* o) {
    CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w, &c, sinks, scale, o, p, scratch, p.scratch_bytes, 0)));
  };
  // Hot sources: every token reads token 0's window rows and block table row.
  std::vector<int32_t> wr_hot(wr.size());
  for (size_t i = 0; i < wr.size(); ++i) wr_hot[i] = wr[i % size_t(W)];
  int32_t* wrows_hot = upload_i32(wr_hot);
  int32_t* seq_hot = nullptr;
  auto w_hot = w16;
  w_hot.rows = wrows_hot;
  auto c_hot = c16;
  if (!c16.rows && c16.pool) {
    seq_hot = upload_i32(std::vector<int32_t>(size_t(T), 0));
    c_hot.token_seq = seq_hot;
  } else if (c16.rows) {
    std::vector<int32_t> cr(size_t(T * c16.rows_width));
    CHECK(cudaMemcpy(cr.data(), c16.rows, cr.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < cr.size(); ++i) cr[i] = cr[i % size_t(c16.rows_width)];
    c_hot.rows = upload_i32(cr);
  }
  (void)table_width;
  run(made, w16, c16, ref);
  CHECK(cudaDeviceSynchronize());
  struct variant {
    const char* label;
    bool hot;
    int diag = 0;          // plan.diag (output undefined)
    bool in_turn = false;  // plan.alt off
  };
  const variant variants[] = {{"alt", false},
                              {"hot alt", true},
                              {"diag no rows", false, 1},
                              {"diag no products", false, 2},
                              {"in-turn", false, 0, true},
                              {"in-turn diag no rows", false, 1, true}};
  // A discarded warm-up, then two rounds over the variants (the first timed row of a case has
  // measured up to ~10% slower than the same kernel timed next).
  (void)time_ms([&] { run(made, w16, c16, out16); });
  const double ms_made = time_ms([&] { run(made, w16, c16, out16); });
  print_row("plan: split", shape, ms_made, bytes16, flops);
  for (int round = 1; round <= 2; ++round) {
    double base = 0;
    for (const variant& v : variants) {
      auto p = made;
      p.producer = true;
      p.alt = !v.in_turn;
      p.diag = v.diag;
      const auto& w = v.hot ? w_hot : w16;
      const auto& c = v.hot ? c_hot : c16;
      const double ms = time_ms([&] { run(p, w, c, out16); });
      char l[64];
      std::snprintf(l, sizeof(l), "  r%d %s", round, v.label);
      print_row(l, shape, ms, bytes16, flops);
      if (base == 0) base = ms;
      if (!v.hot && v.diag == 0)
        std::printf("    alt / this %.3fx; max |out - plan out| / max |plan out| %.3g\n", base / ms,
                    rel_diff(out16, ref, n_out));
    }
  }
  // The main kernel alone (no combine launch).
  {
    auto p = made;
    p.combine = false;
    const double ms = time_ms([&] { run(p, w16, c16, out16); });
    print_row("  plan, no combine", shape, ms, bytes16, flops);
  }
  cudaFree(ref);
  cudaFree(scratch);
  cudaFree(wrows_hot);
  if (seq_hot) cudaFree(seq_hot);
  if (c16.rows) cudaFree(const_cast<int32_t*>(c_hot.rows));
}

// ---- --combine-rows: the combine kernels (plan.combine_rows, plan.partials_l2) ----
void bench_combine_rows(int sms, int64_t T, int64_t H, int64_t d, int64_t W, int64_t cap_c,
                        const __nv_bfloat16* q16, const float* sinks, __nv_bfloat16* out16,
                        const dsv4::cuda::kv_rows<__nv_bfloat16>& w16,
                        const dsv4::cuda::kv_rows<__nv_bfloat16>& c16, const char* shape,
                        double bytes16, double flops) {
  const float scale = 1.0f / std::sqrt(float(d));
  const size_t n_out = size_t(T * H * d);
  const auto made = dsv4::cuda::attention_decode_make_plan(T, H, d, W, cap_c, sms);
  void* scratch = device_alloc<unsigned char>(std::max<size_t>(made.scratch_bytes, 16));
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
  auto run = [&](const dsv4::cuda::attention_decode_plan& p, __nv_bfloat16* o) {
    CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, scale, o, p, scratch, p.scratch_bytes, 0)));
  };
  auto base = made;  // the session-10 combine: block, partials through DRAM
  base.combine_rows = false;
  base.partials_l2 = false;
  run(base, ref);
  CHECK(cudaDeviceSynchronize());
  (void)time_ms([&] { run(made, out16); });  // discarded warm-up
  const double ms_made = time_ms([&] { run(made, out16); });
  char l[64];
  std::snprintf(l, sizeof(l), "plan: split%s%s", made.combine_rows ? ", rows" : ", block",
                made.partials_l2 ? ", l2" : "");
  print_row(l, shape, ms_made, bytes16, flops);
  if (made.fold) {
    std::printf("    (no combine here: fold)\n");
  } else {
    const bool rows_apply = made.splits <= dsv4::cuda::k_attention_decode_max_combine_rows_splits;
    for (int round = 1; round <= 2; ++round) {
      double ms_base = 0;
      for (int v = 0; v < 4; ++v) {
        auto p = base;
        p.combine_rows = v >= 2;
        p.partials_l2 = (v & 1) != 0;
        if ((p.combine_rows && !rows_apply) || (p.partials_l2 && !made.alt)) continue;
        const double ms = time_ms([&] { run(p, out16); });
        std::snprintf(l, sizeof(l), "  r%d %s%s", round, p.combine_rows ? "rows" : "block",
                      p.partials_l2 ? ", l2" : "");
        print_row(l, shape, ms, bytes16, flops);
        if (v == 0) ms_base = ms;
        std::printf("    block / this %.3fx; max |this - block| / max |block| %.3g\n", ms_base / ms,
                    rel_diff(out16, ref, n_out));
      }
    }
  }
  auto none = made;
  none.combine = false;
  const double ms_none = time_ms([&] { run(none, out16); });
  print_row("  plan, no combine", shape, ms_none, bytes16, flops);
  cudaFree(ref);
  cudaFree(scratch);
}

// ---- attention cases ----
// CSA: window 128 + top-k rows (explicit); HCA: window 128 + all n / 128 entries (paged).
void bench_attention_case(cublasHandle_t blas, int sms, int64_t T, int64_t H, bool hca,
                          int64_t context, int64_t top_k) {
  const int64_t d = 512, W = 128;
  const int64_t comp_entries = hca ? context / 128 : top_k;
  const int64_t keys = W + comp_entries;
  // Pools: >= 4x L2 of random rows (window ring rows and compressed rows drawn from them).
  const int64_t pool_rows = std::max<int64_t>(int64_t(4 * g_l2 / 1024), T * keys);
  static __nv_bfloat16* pool16 = nullptr;
  static float* pool32 = nullptr;
  static uint8_t* pool8 = nullptr;  // the bf16 pool's rows as FP8 records (the engine's layout)
  static int64_t pool_have = 0;
  // make_kv_record_layout(448, 64, 128): 130 data rows of 576 bytes per 128-row block.
  constexpr int64_t rec_rows_per_block = 128, rec_block_bytes = 130 * 576, rec_row_bytes = 584;
  if (pool_have < pool_rows) {
    if (pool16) cudaFree(pool16);
    if (pool32) cudaFree(pool32);
    if (pool8) cudaFree(pool8);
    pool16 = random_bf16(size_t(pool_rows * d), -1, 1);
    pool32 = random_f32(size_t(pool_rows * d), -1, 1);
    const int64_t blocks = (pool_rows + rec_rows_per_block - 1) / rec_rows_per_block;
    pool8 = device_alloc<uint8_t>(size_t(blocks * rec_block_bytes));
    CHECK(dsv4::cuda::kv_record_pack(pool16, d, nullptr, pool_rows, pool_rows, pool8, 448, 64,
                                     rec_rows_per_block, rec_block_bytes, 0));
    pool_have = pool_rows;
  }
  float* q32 = random_f32(size_t(T * H * d), -2, 2);
  __nv_bfloat16* q16 = random_bf16(size_t(T * H * d), -2, 2);
  float* sinks = random_f32(size_t(H), -1, 1);
  float* out32 = device_alloc<float>(size_t(T * H * d));
  __nv_bfloat16* out16 = device_alloc<__nv_bfloat16>(size_t(T * H * d));
  int32_t* wrows = upload_i32(random_rows(size_t(T * W), pool_rows));
  int32_t *crows = nullptr, *table = nullptr, *seq = nullptr, *vis = nullptr;
  int64_t table_width = 0;
  std::vector<int32_t> all_rows(size_t(T * keys));  // for the naive gather
  std::vector<int32_t> wr(size_t(T * W));
  CHECK(cudaMemcpy(wr.data(), wrows, wr.size() * 4, cudaMemcpyDeviceToHost));
  if (hca) {
    table_width = (comp_entries + 127) / 128;
    std::vector<int32_t> t(size_t(T * table_width));
    for (auto& b : t) b = int32_t(g_rng() % uint64_t(pool_rows / 128));
    table = upload_i32(t);
    std::vector<int32_t> sq(static_cast<size_t>(T)),
        nv(static_cast<size_t>(T), int32_t(comp_entries));
    for (int64_t i = 0; i < T; ++i) sq[size_t(i)] = int32_t(i);
    seq = upload_i32(sq);
    vis = upload_i32(nv);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t s = 0; s < comp_entries; ++s)
        all_rows[size_t(i * keys + W + s)] = t[size_t(i * table_width + s / 128)] * 128 + s % 128;
  } else {
    const std::vector<int32_t> c = random_rows(size_t(T * top_k), pool_rows);
    crows = upload_i32(c);
    for (int64_t i = 0; i < T; ++i)
      for (int64_t s = 0; s < top_k; ++s)
        all_rows[size_t(i * keys + W + s)] = c[size_t(i * top_k + s)];
  }
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < W; ++j) all_rows[size_t(i * keys + j)] = wr[size_t(i * W + j)];
  int32_t* gather_idx = upload_i32(all_rows);

  dsv4::cuda::kv_rows<float> w32{pool32, pool_rows, wrows, W};
  dsv4::cuda::kv_rows<float> c32{pool32, pool_rows, crows, crows ? top_k : 0, table, T, table_width,
                                 seq,    vis,       128};
  auto w16 = dsv4::cuda::kv_rows<__nv_bfloat16>{pool16, pool_rows, wrows, W};
  auto c16 = dsv4::cuda::kv_rows<__nv_bfloat16>{
      pool16, pool_rows, crows, crows ? top_k : 0, table, T, table_width, seq, vis, 128};
  // The split plan of 2 tiles per split: the rows below compare its kernels; --focus adds the
  // plan as attention_decode_make_plan makes it for the engine.
  const auto plan =
      dsv4::cuda::attention_decode_make_plan(T, H, d, W, hca ? table_width * 128 : top_k, sms, 2);
  void* scratch = device_alloc<unsigned char>(plan.scratch_bytes);
  const float scale = 1.0f / std::sqrt(float(d));

  char shape[128];
  std::snprintf(shape, sizeof(shape), "%s T=%lld H=%lld ctx=%lld keys=%lld splits=%lld",
                hca ? "HCA" : "CSA", (long long)T, (long long)H, (long long)context,
                (long long)keys, (long long)plan.splits);
  const double flops = 4.0 * double(T * H * keys * d);
  const double bytes16 = double(T * keys * d * 2) + double(T * H * d * 2);
  const double bytes32 = double(T * keys * d * 4) + double(T * H * d * 4);

  auto release = [&] {
    cudaFree(q32);
    cudaFree(q16);
    cudaFree(sinks);
    cudaFree(out32);
    cudaFree(out16);
    cudaFree(wrows);
    cudaFree(crows);
    cudaFree(table);
    cudaFree(seq);
    cudaFree(vis);
    cudaFree(gather_idx);
    cudaFree(scratch);
  };
  // The same key slots over the FP8-record copy of the pool.
  using dsv4::cuda::kv_fp8_record;
  auto records = [&](dsv4::cuda::kv_rows<__nv_bfloat16> k) {
    dsv4::cuda::kv_rows<kv_fp8_record> r{reinterpret_cast<const kv_fp8_record*>(pool8),
                                         k.pool_rows,
                                         k.rows,
                                         k.rows_width,
                                         k.block_table,
                                         k.table_rows,
                                         k.table_width,
                                         k.token_seq,
                                         k.n_visible,
                                         k.block_size};
    r.record_rows_per_block = rec_rows_per_block;
    r.record_block_bytes = rec_block_bytes;
    return r;
  };
  const auto w8 = records(w16), c8 = records(c16);
  if (g_kv_fp8_ab) {
    const auto made =
        dsv4::cuda::attention_decode_make_plan(T, H, d, W, hca ? table_width * 128 : top_k, sms);
    void* ms_scratch = device_alloc<unsigned char>(std::max<size_t>(made.scratch_bytes, 16));
    char mshape[160];
    std::snprintf(mshape, sizeof(mshape), "%s T=%lld H=%lld ctx=%lld keys=%lld S%lld",
                  hca ? "HCA" : "CSA", (long long)T, (long long)H, (long long)context,
                  (long long)keys, (long long)made.splits);
    const double bytes8 = double(T * keys * rec_row_bytes) + double(T * H * d * 2);
    auto run8 = [&](const dsv4::cuda::attention_decode_plan& p) {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
          q16, T, H, d, w8, &c8, sinks, scale, out16, p, ms_scratch, made.scratch_bytes, 0)));
    };
    auto run16 = [&](const dsv4::cuda::attention_decode_plan& p) {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, p, ms_scratch, made.scratch_bytes, 0)));
    };
    // For ncu (-k regex:ws_kernel -s 1 -c 1): two launches, nothing timed; DSV4_KVFP8_NCU the
    // records' plan, DSV4_BF16_NCU_DIAG the bf16 pools' plan with that plan.diag (e.g. 128: the
    // 2-D key boxes).
    const char* const ncu_diag = std::getenv("DSV4_BF16_NCU_DIAG");
    if (ncu_diag || std::getenv("DSV4_KVFP8_NCU")) {
      auto p = made;
      if (ncu_diag) p.diag = std::atoi(ncu_diag);
      for (int i = 0; i < 2; ++i) ncu_diag ? run16(p) : run8(p);
      CHECK(cudaDeviceSynchronize());
      if (ncu_diag)
        std::printf("  ncu launches: bf16 pools, plan.diag %d, %s\n", p.diag, mshape);
      else
        std::printf("  ncu launches: fp8 records %s\n", mshape);
      cudaFree(ms_scratch);
      release();
      return;
    }
    double best16 = 1e30, best8 = 1e30;
    for (int r = 0; r < 2; ++r) {
      for (int k = 0; k < 2; ++k) {
        if ((k == 0) == (r == 0)) {
          const double ms16 = time_ms([&] { run16(made); });
          best16 = std::min(best16, ms16);
          print_row("bf16 pools plan", mshape, ms16, bytes16, flops);
        } else {
          const double ms8 = time_ms([&] { run8(made); });
          best8 = std::min(best8, ms8);
          print_row("fp8 records plan", mshape, ms8, bytes8, flops);
        }
      }
    }
    std::printf("  %-22s %-50s %9.2f  fp8/bf16 time %.3fx (best of 2)\n", "fp8 records", mshape,
                best8 * 1e3, best8 / best16);
    // Bounds (plan.diag, outputs undefined): the ring alone (2) of both pools, the consumers
    // alone (1; no copies, no conversion).
    auto diag = [&](int v) {
      auto p = made;
      p.diag = v;
      return p;
    };
    print_row("  ring fp8 records", mshape, time_ms([&] { run8(diag(2)); }), bytes8, flops);
    print_row("  ring bf16 pools", mshape, time_ms([&] { run16(diag(2)); }), bytes16, flops);
    print_row("  fp8 consumers alone", mshape, time_ms([&] { run8(diag(1)); }), bytes8, flops);
    cudaFree(ms_scratch);
    release();
    return;
  }
  if (g_small) {
    bench_small_rows(blas, sms, T, H, hca, context, top_k, W, table_width, pool16, pool_rows, q16,
                     sinks, out16, w16, c16, gather_idx, shape, bytes16, flops);
    release();
    return;
  }
  if (g_chain_early) {
    bench_chain_early_rows(sms, T, H, W, hca ? table_width * 128 : top_k, q16, sinks, out16, w16,
                           c16, shape, bytes16, flops);
    release();
    return;
  }
  if (g_steps) {
    bench_step_rows(sms, T, H, W, hca ? table_width * 128 : top_k, q16, sinks, out16, w16, c16,
                    shape, bytes16, flops);
    release();
    return;
  }
  if (g_combine_rows) {
    bench_combine_rows(sms, T, H, d, W, hca ? table_width * 128 : top_k, q16, sinks, out16, w16,
                       c16, shape, bytes16, flops);
    release();
    return;
  }
  // --alt-rows: the alternate-tile kernel's variants alone (bench_alt_rows).
  if (g_alt_rows) {
    bench_alt_rows(sms, T, H, d, W, hca ? table_width * 128 : top_k, q16, sinks, out16, w16, c16,
                   wr, hca ? table_width : 0, shape, bytes16, flops);
    release();
    return;
  }
  // The plan's tiles and split on the warp-specialized wgmma kernel in turn (alt off), with
  // alternate tiles, on the synchronous wgmma kernel and on mma.sync (whatever the plan would
  // pick); the other rows run the plan as made.
  auto ws_plan = plan;
  ws_plan.producer = true;
  ws_plan.alt = false;
  double ms = time_ms([&] {
    CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, scale, out16, ws_plan, scratch, plan.scratch_bytes, 0)));
  });
  print_row("wgmma-ws in-turn bf16", shape, ms, bytes16, flops);
  if (g_focus) {
    const auto made =
        dsv4::cuda::attention_decode_make_plan(T, H, d, W, hca ? table_width * 128 : top_k, sms);
    void* made_scratch = device_alloc<unsigned char>(std::max<size_t>(made.scratch_bytes, 16));
    const double ms_made = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, made, made_scratch, made.scratch_bytes,
          0)));
    });
    print_row("  plan: split", shape, ms_made, bytes16, flops);
    cudaFree(made_scratch);
  }
  {
    // Alternate tiles per consumer warpgroup (plan.alt, the plan's choice for these kernels; not
    // bit-equal to in-turn): in-turn against it, and its output's distance to the in-turn output.
    const size_t n_out = size_t(T * H * d);
    __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(n_out);
    CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
        q16, T, H, d, w16, &c16, sinks, scale, ref, ws_plan, scratch, plan.scratch_bytes, 0)));
    auto alt = ws_plan;
    alt.alt = true;
    const double ms_alt = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, alt, scratch, plan.scratch_bytes, 0)));
    });
    print_row("  ws, alternate tiles", shape, ms_alt, bytes16, flops);
    std::printf("  %-22s %-50s %9.2fx   max |alt - in-turn| / max |in-turn| %.3g\n",
                "  in-turn / alt time", shape, ms / ms_alt, rel_diff(out16, ref, n_out));
    cudaFree(ref);
  }
  {
    auto sync = plan;
    sync.producer = false;
    const double ms_sync = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, sync, scratch, plan.scratch_bytes, 0)));
    });
    print_row("wgmma sync bf16", shape, ms_sync, bytes16, flops);
    if (g_focus) std::printf("  %-22s %-50s %9.2fx\n", "  sync / ws time", shape, ms_sync / ms);
  }
  if (!g_lean) {
    auto sync = plan;
    sync.wgmma = false;
    const double ms_sync = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, sync, scratch, plan.scratch_bytes, 0)));
    });
    print_row("mma.sync bf16 pool/act", shape, ms_sync, bytes16, flops);
  }
  if (g_lean) {
    // Fewer, longer splits (fewer partial rows for the combine to read), default kernel.
    for (const int64_t min_tiles : {4, 8, 16}) {
      auto fewer = dsv4::cuda::attention_decode_make_plan(
          T, H, d, W, hca ? table_width * 128 : top_k, sms, min_tiles);
      if (fewer.splits >= plan.splits) continue;
      fewer.producer = true;  // warp-specialized (from 4 tiles per split the plan's choice too)
      void* fewer_scratch = device_alloc<unsigned char>(fewer.scratch_bytes);
      const double ms_fewer = time_ms([&] {
        CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
            q16, T, H, d, w16, &c16, sinks, scale, out16, fewer, fewer_scratch, fewer.scratch_bytes,
            0)));
      });
      print_row(("  ws splits=" + std::to_string(fewer.splits)).c_str(), shape, ms_fewer, bytes16,
                flops);
      cudaFree(fewer_scratch);
    }
    release();
    return;
  }
  {
    const double ms8 = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
          q16, T, H, d, w8, &c8, sinks, scale, out16, plan, scratch, plan.scratch_bytes, 0)));
    });
    print_row("new fp8 records", shape, ms8,
              double(T * keys * rec_row_bytes) + double(T * H * d * 2), flops);
    if (g_kv_fp8) std::printf("  %-22s %-50s %9.2fx\n", "  fp8 / bf16 time", shape, ms8 / ms);
    if (g_kv_fp8 && plan.splits > 1) {
      // The records with plan.partials_bf16 toggled, alternating with the plan.
      auto tog = plan;
      tog.partials_bf16 = !plan.partials_bf16;
      for (int r = 0; r < 2; ++r) {
        const double mst = time_ms([&] {
          CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
              q16, T, H, d, w8, &c8, sinks, scale, out16, tog, scratch, plan.scratch_bytes, 0)));
        });
        print_row(tog.partials_bf16 ? "  fp8 bf16 partials" : "  fp8 f32 partials", shape, mst,
                  double(T * keys * rec_row_bytes) + double(T * H * d * 2), flops);
        const double msp = time_ms([&] {
          CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
              q16, T, H, d, w8, &c8, sinks, scale, out16, plan, scratch, plan.scratch_bytes, 0)));
        });
        print_row(plan.partials_bf16 ? "  fp8 plan (bf16 part)" : "  fp8 plan (f32 part)", shape,
                  msp, double(T * keys * rec_row_bytes) + double(T * H * d * 2), flops);
      }
    }
    if (g_kv_fp8) {
      // The records' synchronous kernel (in turn; what they ran before the warp-specialized one).
      auto sync = plan;
      sync.producer = false;
      sync.alt = false;
      const double ms8s = time_ms([&] {
        CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
            q16, T, H, d, w8, &c8, sinks, scale, out16, sync, scratch, plan.scratch_bytes, 0)));
      });
      print_row("  fp8 records sync", shape, ms8s,
                double(T * keys * rec_row_bytes) + double(T * H * d * 2), flops);
      std::printf("  %-22s %-50s %9.2fx\n", "  fp8 sync / fp8 time", shape, ms8s / ms8);
      // The records under a plan.diag value: 2 = the ring alone (the consumers compute nothing),
      // 4 = the references by 32-bit divisions (the path of block sizes that are not powers of
      // two: what the shifts save).
      auto records_diag_row = [&](int diag, const char* label) {
        auto v = plan;
        v.diag = diag;
        const double msv = time_ms([&] {
          CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, kv_fp8_record>(
              q16, T, H, d, w8, &c8, sinks, scale, out16, v, scratch, plan.scratch_bytes, 0)));
        });
        print_row(label, shape, msv, double(T * keys * rec_row_bytes) + double(T * H * d * 2),
                  flops);
      };
      records_diag_row(2, "  fp8 ws ring alone");
      records_diag_row(4, "  fp8 refs by division");
      // The bf16 rows' ring alone.
      {
        auto v = plan;
        v.diag = 2;
        const double msv = time_ms([&] {
          CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
              q16, T, H, d, w16, &c16, sinks, scale, out16, v, scratch, plan.scratch_bytes, 0)));
        });
        print_row("  bf16 ws ring alone", shape, msv, bytes16, flops);
      }
    }
  }
  if (g_kv_fp8) {
    release();
    return;
  }
  if (g_focus) {
    // Thinner splits (one 32-key tile per CTA where the SMs allow).
    const auto thin =
        dsv4::cuda::attention_decode_make_plan(T, H, d, W, hca ? table_width * 128 : top_k, sms, 1);
    void* thin_scratch = device_alloc<unsigned char>(thin.scratch_bytes);
    ms = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
          q16, T, H, d, w16, &c16, sinks, scale, out16, thin, thin_scratch, thin.scratch_bytes,
          0)));
    });
    print_row(("  splits=" + std::to_string(thin.splits)).c_str(), shape, ms, bytes16, flops);
    cudaFree(thin_scratch);
  }
  ms = time_ms([&] {
    CHECK((dsv4::cuda::sparse_attention_decode<float, __nv_bfloat16>(
        q32, T, H, d, w16, &c16, sinks, scale, out32, plan, scratch, plan.scratch_bytes, 0)));
  });
  print_row("new bf16 pool f32 act", shape, ms, bytes16 + double(T * H * d * 2), flops);
  {
    const auto w = w32;
    const auto c = c32;
    ms = time_ms([&] {
      CHECK((dsv4::cuda::sparse_attention_decode<float, float>(
          q32, T, H, d, w, &c, sinks, scale, out32, plan, scratch, plan.scratch_bytes, 0)));
    });
    print_row("new f32 pool/act", shape, ms, bytes32, flops);
  }
  if (!g_focus) {
    ms = time_ms([&] {
      CHECK(dsv4::cuda::sparse_attention<float>(q32, T, H, d, w32, &c32, sinks, scale, out32, 0));
    });
    print_row("old f32 (attention.cu)", shape, ms, bytes32, flops);
  }
  {
    naive_attention naive(blas, T, H, keys, q16);
    ms = time_ms([&] { naive.run(pool16, pool_rows, gather_idx, sinks); });
    print_row("naive gather+cuBLAS", shape, ms, bytes16, flops);
  }
  release();
}

// ---- indexer cases ----
// Random e4m3 bytes, never NaN (0x7f / 0xff become 0x7e / 0xfe).
__global__ void fill_e4m3(uint8_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    uint8_t b = uint8_t(z >> 56);
    if ((b & 0x7f) == 0x7f) b ^= 1;
    p[i] = b;
  }
}

// Random E8M0 scale words (each byte in 120..127: FP4 keys of magnitude up to 6).
__global__ void fill_e8m0_words(uint32_t* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    p[i] = (uint32_t(z >> 32) & 0x07070707u) | 0x78787878u;
  }
}

// An FP4 indexer key pool of `rows` keys of width d (io/indexer_fp4_key.h: d / 2 code bytes, any
// nibble, and one word of four E8M0 block scales per key), random on the device.
void alloc_fp4_key_pool(int64_t rows, int64_t d, uint8_t*& codes, uint32_t*& scales4) {
  codes = device_alloc<uint8_t>(size_t(rows * d / 2));
  fill_e4m3<<<1024, 256>>>(codes, size_t(rows * d / 2), g_rng());  // any nibble
  scales4 = device_alloc<uint32_t>(size_t(rows));
  fill_e8m0_words<<<1024, 256>>>(scales4, size_t(rows), g_rng());
}

bool g_indexer_only = false;   // --indexer: the ceilings and the indexer cases only
bool g_indexer_fp4 = false;    // --indexer-fp4: the ceilings and the FP4-key indexer rows only
bool g_indexer_trace = false;  // --indexer-trace (with --indexer-fp4): %globaltimer phase stamps
bool g_indexer_plan_only = false;  // --indexer-plan-only (with --indexer-fp4): the plan rows only
bool g_indexer_chain = false;      // --indexer-chain: the T=1 plan per call in a graph of 8 calls
// --indexer-select-ctas N (with --indexer-plan-only / --indexer-chain): the plan's select CTAs per
// token on the score_list path (both top-k widths) set to N (1..64) instead of make_plan's choice.
int g_indexer_select_ctas = 0;

// indexer_topk_fast_make_plan with --indexer-select-ctas applied.
dsv4::cuda::indexer_fast_plan bench_indexer_plan(int64_t T, int64_t width, int64_t bs, int sms) {
  dsv4::cuda::indexer_fast_plan p = dsv4::cuda::indexer_topk_fast_make_plan(T, width, bs, sms);
  if (g_indexer_select_ctas > 0 && p.score_list)
    p.select_ctas = p.select_ctas_wide = g_indexer_select_ctas;
  return p;
}

// --indexer-prologue (with --indexer-trace): IDX29's traces, L2 warm / the prologue's inputs warm
bool g_indexer_prologue = false;

// Median time of `launch` (work on `stream`) replayed from a CUDA graph, L2 flushed before each
// replay like time_ms: no host launch cost inside the timed region, as in the model's decode
// graphs.
// `launch` (work on `stream`) captured into an instantiated graph; freed by its destructor.
struct captured_launch {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  captured_launch(cudaStream_t stream, const std::function<void()>& launch) {
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launch();
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
  }
  ~captured_launch() {
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  captured_launch(const captured_launch&) = delete;
  captured_launch& operator=(const captured_launch&) = delete;
};

double time_graph_ms(cudaStream_t stream, const std::function<void()>& launch) {
  const captured_launch g(stream, launch);
  return time_ms([&] { CHECK(cudaGraphLaunch(g.exec, stream)); });
}

// The indexer benches' key pool: T sequences of `entries` each, blocks of bs keys scattered over
// a pool of >= 4x L2 of bf16 keys of width d.
int64_t indexer_pool_blocks(int64_t T, int64_t width, int64_t bs, int64_t d) {
  return std::max<int64_t>(T * width, int64_t(4 * g_l2 / (bs * d * 2)) + 1);
}

// Their block table (sequence i's blocks: a shuffle of the pool), token -> sequence map (token i
// is sequence i) and visible counts, on the device.
struct indexer_tables {
  int32_t* table;
  int32_t* seq;
  int32_t* visible;
};
indexer_tables upload_indexer_tables(int64_t T, int64_t entries, int64_t width,
                                     int64_t pool_blocks) {
  std::vector<int32_t> perm(static_cast<size_t>(pool_blocks));
  for (int64_t i = 0; i < pool_blocks; ++i) perm[size_t(i)] = int32_t(i);
  std::shuffle(perm.begin(), perm.end(), g_rng);
  std::vector<int32_t> table(static_cast<size_t>(T * width));
  for (int64_t i = 0; i < T * width; ++i) table[size_t(i)] = perm[size_t(i)];
  std::vector<int32_t> sq(static_cast<size_t>(T)), nv(static_cast<size_t>(T), int32_t(entries));
  for (int64_t i = 0; i < T; ++i) sq[size_t(i)] = int32_t(i);
  return {upload_i32(table), upload_i32(sq), upload_i32(nv)};
}

void bench_indexer_case(int sms, int64_t T, int64_t entries, int64_t top_k) {
  const int64_t heads = 64, d = 128, bs = 128;
  const int64_t width = (entries + bs - 1) / bs;
  const int64_t pool_blocks = indexer_pool_blocks(T, width, bs, d);
  __nv_bfloat16* keys16 = random_bf16(size_t(pool_blocks * bs * d), -1, 1);
  const indexer_tables tabs = upload_indexer_tables(T, entries, width, pool_blocks);
  int32_t* dtable = tabs.table;
  int32_t* dseq = tabs.seq;
  int32_t* dvis = tabs.visible;
  float* q32 = random_f32(size_t(T * heads * d), -1, 1);
  float* w32 = random_f32(size_t(T * heads), -1, 1);
  __nv_bfloat16* q16 = random_bf16(size_t(T * heads * d), -1, 1);
  __nv_bfloat16* w16 = random_bf16(size_t(T * heads), -1, 1);
  int32_t* out = device_alloc<int32_t>(size_t(T * top_k));
  const float q_scale = 1.0f / std::sqrt(float(d));
  char shape[128];
  std::snprintf(shape, sizeof(shape), "T=%lld entries=%lld top_k=%lld", (long long)T,
                (long long)entries, (long long)top_k);
  const double flops = 2.0 * double(T * entries * heads * d);
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));  // blocking: ordered with the legacy stream of the events

  using plan_t = dsv4::cuda::indexer_fast_plan;
  const plan_t plan = bench_indexer_plan(T, width, bs, sms);
  const size_t scratch_bytes = plan.scratch_bytes;
  void* scratch = device_alloc<unsigned char>(scratch_bytes);
  const double bytes16 = double(T * entries * d * 2) + double(T * heads * d * 2);
  auto run_new = [&](const plan_t& p, int32_t* o) {
    CHECK(dsv4::cuda::indexer_topk_fast<__nv_bfloat16>(
        q16, w16, T, heads, d, keys16, pool_blocks * bs, dtable, T, width, dseq, dvis, bs, top_k,
        q_scale, p, scratch, scratch_bytes, o, st));
  };
  double ms = time_ms([&] { run_new(plan, out); });
  print_row("new bf16 (eager)", shape, ms, bytes16, flops);
  ms = time_graph_ms(st, [&] { run_new(plan, out); });
  char label[64];
  std::snprintf(label, sizeof(label), "new bf16 %d-warp (graph)", plan.score_warps);
  print_row(label, shape, ms, bytes16, flops);
  {
    plan_t p = plan;
    p.score_only = true;
    ms = time_graph_ms(st, [&] { run_new(p, out); });
    print_row("  of which scores+hist", shape, ms, bytes16, flops);
    p.score_only = false;
    p.collect_only = true;
    ms = time_graph_ms(st, [&] { run_new(p, out); });
    print_row("  of which up to collect", shape, ms, bytes16, flops);
  }
  {
    // The other score CTA shape (4 warps, each 32 keys of a pass and a quarter of its copies).
    plan_t p = plan;
    p.score_warps = plan.score_warps == 8 ? 4 : 8;
    ms = time_graph_ms(st, [&] { run_new(p, out); });
    std::snprintf(label, sizeof(label), "new bf16 %d-warp (graph)", p.score_warps);
    print_row(label, shape, ms, bytes16, flops);
    p.score_only = true;
    ms = time_graph_ms(st, [&] { run_new(p, out); });
    std::snprintf(label, sizeof(label), "  %d-warp scores+hist", p.score_warps);
    print_row(label, shape, ms, bytes16, flops);
  }
  // E4M3 keys + one f32 scale per key (half the key bytes), same plan and scratch.
  {
    uint8_t* keys8 = device_alloc<uint8_t>(size_t(pool_blocks * bs * d));
    fill_e4m3<<<1024, 256>>>(keys8, size_t(pool_blocks * bs * d), g_rng());
    CHECK(cudaGetLastError());
    float* scales = random_f32(size_t(pool_blocks * bs), 0.5f / 448, 1.0f / 448);
    const double bytes8 = double(T * entries * (d + 4)) + double(T * heads * d * 2);
    auto run_fp8 = [&](const plan_t& p) {
      CHECK(dsv4::cuda::indexer_topk_fast_fp8<__nv_bfloat16>(
          q16, w16, T, heads, d, keys8, scales, pool_blocks * bs, dtable, T, width, dseq, dvis, bs,
          top_k, q_scale, p, scratch, scratch_bytes, out, st));
    };
    run_fp8(plan);  // its one-time attribute calls outside the capture
    CHECK(cudaStreamSynchronize(st));
    for (int warps : {plan.score_warps, plan.score_warps == 8 ? 4 : 8}) {
      plan_t p = plan;
      p.score_warps = warps;
      ms = time_graph_ms(st, [&] { run_fp8(p); });
      std::snprintf(label, sizeof(label), "new fp8 %d-warp (graph)", warps);
      print_row(label, shape, ms, bytes8, flops);
      p.score_only = true;
      ms = time_graph_ms(st, [&] { run_fp8(p); });
      std::snprintf(label, sizeof(label), "  fp8 %d-warp scores", warps);
      print_row(label, shape, ms, bytes8, flops);
    }
    cudaFree(keys8);
    cudaFree(scales);
  }
  // FP4 keys (io/indexer_fp4_key.h): 64 code bytes + 4 scale bytes per key, same plan and scratch.
  {
    uint8_t* codes = nullptr;
    uint32_t* scales4 = nullptr;
    alloc_fp4_key_pool(pool_blocks * bs, d, codes, scales4);
    CHECK(cudaGetLastError());
    const double bytes4 = double(T * entries * (d / 2 + 4)) + double(T * heads * d * 2);
    auto run_fp4 = [&](const plan_t& p) {
      CHECK(dsv4::cuda::indexer_topk_fast_fp4<__nv_bfloat16>(
          q16, w16, T, heads, d, codes, scales4, pool_blocks * bs, dtable, T, width, dseq, dvis, bs,
          top_k, q_scale, p, scratch, scratch_bytes, out, st));
    };
    run_fp4(plan);  // its one-time attribute calls outside the capture
    CHECK(cudaStreamSynchronize(st));
    // The score MMAs: mma.sync (score_wgmma off) and wgmma (the plan), both CTA shapes.
    for (int warps : {plan.score_warps, plan.score_warps == 8 ? 4 : 8}) {
      plan_t p = plan;
      p.score_warps = warps;
      p.score_wgmma = false;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "fp4 mma.sync %d-warp", warps);
      print_row(label, shape, ms, bytes4, flops);
      p.score_only = true;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "  fp4 mma.sync %d-warp scores", warps);
      print_row(label, shape, ms, bytes4, flops);
    }
    for (int warps : {plan.score_warps, plan.score_warps == 8 ? 4 : 8}) {
      plan_t p = plan;
      p.score_warps = warps;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "new fp4 %d-warp (graph)", warps);
      print_row(label, shape, ms, bytes4, flops);
      p.score_only = true;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "  fp4 %d-warp scores", warps);
      print_row(label, shape, ms, bytes4, flops);
      p.score_only = false;
      p.collect_only = true;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "  fp4 %d-warp up to collect", warps);
      print_row(label, shape, ms, bytes4, flops);
    }
    // The collect chunking (keys per collect CTA), 8-warp scores.
    for (int64_t keys : {2048, 4096, 8192, 16384}) {
      plan_t p = plan;
      p.score_warps = 8;
      p.collect_keys = keys;
      p.collect_ctas_per_token = (p.capacity + keys - 1) / keys;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "  fp4 collect %lld%s", (long long)keys,
                    keys == plan.collect_keys ? " (plan)" : "");
      print_row(label, shape, ms, bytes4, flops);
      p.collect_only = true;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "    up to collect %lld", (long long)keys);
      print_row(label, shape, ms, bytes4, flops);
    }
    // The select over select_ctas CTAs per token (0: the last collect CTA alone, the scheme
    // before); plan warps.
    for (int sel : {0, 1, 2, 4, 8, 16, 32}) {
      plan_t p = plan;
      p.select_ctas = sel;
      p.select_ctas_wide = 0;
      ms = time_graph_ms(st, [&] { run_fp4(p); });
      std::snprintf(label, sizeof(label), "  fp4 select %d CTAs%s", sel,
                    sel == plan.select_ctas ? " (plan)" : "");
      print_row(label, shape, ms, bytes4, flops);
    }
    cudaFree(codes);
    cudaFree(scales4);
  }
  if (!g_indexer_only) {
    ms = time_ms([&] {
      CHECK(dsv4::cuda::indexer_topk_fast<float>(q32, w32, T, heads, d, keys16, pool_blocks * bs,
                                                 dtable, T, width, dseq, dvis, bs, top_k, q_scale,
                                                 plan, scratch, scratch_bytes, out, st));
    });
    print_row("new bf16 keys f32 act", shape, ms, bytes16, flops);
  }
  cudaFree(keys16);
  if (!g_focus && !g_indexer_only) {
    // Old kernel: f32 keys (twice the bytes).
    float* keys32 = random_f32(size_t(pool_blocks * bs * d), -1, 1);
    const size_t old_scratch = dsv4::cuda::indexer_scratch_bytes(T, width * bs);
    float* s = device_alloc<float>(old_scratch / 4 + 1);
    ms = time_ms([&] {
      CHECK(dsv4::cuda::indexer_topk<float>(q32, w32, T, heads, d, keys32, pool_blocks * bs, dtable,
                                            T, width, dseq, dvis, bs, top_k, q_scale, s,
                                            old_scratch, out, 0));
    });
    print_row("old f32 (indexer.cu)", shape, ms, double(T * entries * d * 4), flops);
    cudaFree(keys32);
    cudaFree(s);
  }
  CHECK(cudaStreamDestroy(st));
  cudaFree(dtable);
  cudaFree(dseq);
  cudaFree(dvis);
  cudaFree(q32);
  cudaFree(w32);
  cudaFree(q16);
  cudaFree(w16);
  cudaFree(out);
  cudaFree(scratch);
}

}  // namespace

// --cases "T,H,hca|csa,CTX,TOPK;...": false on a malformed list.
bool run_cases(cublasHandle_t blas, int sms, const char* list) {
  std::string all(list);
  size_t at = 0;
  while (at < all.size()) {
    size_t end = all.find(';', at);
    if (end == std::string::npos) end = all.size();
    const std::string spec = all.substr(at, end - at);
    at = end + 1;
    if (spec.empty()) continue;
    long long T = 0, H = 0, ctx = 0, top_k = 0;
    char kind[8] = {};
    if (std::sscanf(spec.c_str(), "%lld,%lld,%3[a-z],%lld,%lld", &T, &H, kind, &ctx, &top_k) != 5 ||
        T <= 0 || H <= 0 || ctx <= 0) {
      std::fprintf(stderr, "--cases \"T,H,hca|csa,CTX,TOPK;...\": bad entry '%s'\n", spec.c_str());
      return false;
    }
    bench_attention_case(blas, sms, T, H, std::strcmp(kind, "hca") == 0, ctx, top_k);
  }
  return true;
}

// --indexer-trace: token 0's CTAs stamp %globaltimer at fixed points (indexer_fast_set_trace);
// `launch` (one call of the plan) replayed from a graph `reps` times, L2 flushed before each;
// prints the median over the replays of each phase's earliest / latest stamp (us after the first
// score CTA started).
// IDX29: `l2` 0 flushes L2 before each replay, 1 does not (everything the call touches is warm
// from the previous replay), 2 flushes it and then runs `warm` (reads of the prologue's small
// inputs: its data warm in L2, its code and keys not).
void trace_indexer_phases(const char* name, cudaStream_t st, int64_t score_ctas,
                          int64_t collect_ctas, int64_t select_ctas,
                          const std::function<void()>& launch, int l2 = 0,
                          const std::function<void()>& warm = {}) {
  constexpr int words = 32776, reps = 31;
  unsigned long long* tr = device_alloc<unsigned long long>(words);
  CHECK(dsv4::cuda::indexer_fast_set_trace(tr));
  const captured_launch g(st, launch);
  const cudaGraphExec_t exec = g.exec;
  struct stat_t {
    const char* label;
    int region, slot;
    int64_t ctas;
    int which;  // 0 min, 1 median, 2 max
  };
  const stat_t stats[] = {
      {"score start max", 0, 0, score_ctas, 2},
      {"score loop end min", 0, 1, score_ctas, 0},
      {"score loop end med", 0, 1, score_ctas, 1},
      {"score loop end max", 0, 1, score_ctas, 2},
      {"score flushed med", 0, 7, score_ctas, 1},
      {"score flushed max", 0, 7, score_ctas, 2},
      {"score snapshot med", 0, 3, score_ctas, 1},
      {"score snapshot max", 0, 3, score_ctas, 2},
      {"score listed max", 0, 4, score_ctas, 2},
      {"score end max", 0, 2, score_ctas, 2},
      {"collect entry min", 8192, 0, collect_ctas, 0},
      {"collect entry max", 8192, 0, collect_ctas, 2},
      {"collect wait min", 8192, 1, collect_ctas, 0},
      {"collect wait max", 8192, 1, collect_ctas, 2},
      {"collect threshold max", 8192, 2, collect_ctas, 2},
      {"collect scan max", 8192, 3, collect_ctas, 2},
      {"collect end min", 8192, 4, collect_ctas, 0},
      {"collect end max", 8192, 4, collect_ctas, 2},
      {"select entry min", 16384, 0, select_ctas, 0},
      {"select entry max", 16384, 0, select_ctas, 2},
      {"select wait min", 16384, 1, select_ctas, 0},
      {"select wait max", 16384, 1, select_ctas, 2},
      {"select threshold max", 16384, 2, select_ctas, 2},
      {"select F max", 16384, 3, select_ctas, 2},
      {"select end max", 16384, 4, select_ctas, 2},
  };
  constexpr int n_stats = int(sizeof(stats) / sizeof(stats[0]));
  std::vector<std::vector<double>> vals(n_stats);
  std::vector<unsigned long long> h(words);
  // IDX25: every stamp's first / median / last CTA (each the median over the replays), the zeroing
  // kernel, and the stamps of the CTA that ends last (score slot 2) and of the one whose loop ends
  // last. (wip/idx25-variants adds prologue / pdl_wait / listing-bound stamps; main has none.)
  struct dist_t {
    const char* label;
    int region, slot;
    int64_t ctas;
  };
  const dist_t dists[] = {
      {"score entry (0)", 0, 0, score_ctas},        {"score loop end (1)", 0, 1, score_ctas},
      {"score flush issued (7)", 0, 7, score_ctas}, {"score snapshot ok (3)", 0, 3, score_ctas},
      {"score listed (4)", 0, 4, score_ctas},       {"score end (2)", 0, 2, score_ctas},
      {"select entry (0)", 16384, 0, select_ctas},  {"select wait done (1)", 16384, 1, select_ctas},
      {"select F (3)", 16384, 3, select_ctas},      {"select end (4)", 16384, 4, select_ctas},
  };
  constexpr int n_dists = int(sizeof(dists) / sizeof(dists[0]));
  std::vector<std::vector<double>> dfirst(n_dists), dmed(n_dists), dlast(n_dists);
  std::vector<double> zero0, zero1, zero2;
  // the critical CTAs' score slots
  const int crit_slot[] = {0, 1, 7, 3, 4, 2};
  const char* crit_name[] = {"entry", "loop end", "flush issued", "snapshot ok", "listed", "end"};
  constexpr int n_crit = 6;
  std::vector<std::vector<double>> crit_end(n_crit), crit_loop(n_crit);
  // IDX29: the fast list kernel's prologue stamps (-DDSV4_IDX_PROLOGUE_STAMPS=1 builds,
  // k_trace_prologue = 24576, 16 slots per CTA c < 512), each the first / median / last CTA,
  // medians over the replays.
  constexpr int n_pro = 13;
  const char* pro_name[n_pro] = {
      "n_visible landed", "token_seq landed", "t0's block id landed", "ids stored (barrier)",
      "pass table done",  "query issued",     "passes 0-1 issued",    "query landed",
      "weights landed",   "barrier 2",        "pass 0 landed",        "divisions done",
      "params landed"};
  std::vector<std::vector<double>> pfirst(n_pro), pmed(n_pro), plast(n_pro);
  for (int r = 0; r < reps + 2; ++r) {
    CHECK(cudaMemset(tr, 0, words * sizeof(unsigned long long)));
    if (l2 != 1)
      flush_read_kernel<<<1024, 512>>>(static_cast<const float4*>(g_flush), g_flush_bytes / 16,
                                       g_flush_sink);
    if (l2 == 2 && warm) warm();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGraphLaunch(exec, st));
    CHECK(cudaStreamSynchronize(st));
    CHECK(cudaMemcpy(h.data(), tr, words * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    if (r < 2) continue;  // warm-up
    unsigned long long t0 = ~0ull;
    for (int64_t c = 0; c < score_ctas && c < 1024; ++c)
      if (h[size_t(8 * c)]) t0 = std::min(t0, h[size_t(8 * c)]);
    for (int i = 0; i < n_pro; ++i) {
      std::vector<double> v;
      for (int64_t c = 0; c < score_ctas && c < 512; ++c) {
        const unsigned long long x = h[size_t(24576 + 16 * c + i)];
        if (x) v.push_back(double(int64_t(x - t0)) * 1e-3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      pfirst[size_t(i)].push_back(v.front());
      pmed[size_t(i)].push_back(v[v.size() / 2]);
      plast[size_t(i)].push_back(v.back());
    }
    for (int i = 0; i < n_dists; ++i) {
      std::vector<double> v;
      for (int64_t c = 0; c < dists[i].ctas && c < 1024; ++c) {
        const unsigned long long x = h[size_t(dists[i].region + 8 * c + dists[i].slot)];
        if (x) v.push_back(double(int64_t(x - t0)) * 1e-3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      dfirst[size_t(i)].push_back(v.front());
      dmed[size_t(i)].push_back(v[v.size() / 2]);
      dlast[size_t(i)].push_back(v.back());
    }
    {
      const auto rel = [&](size_t w) {
        return h[w] ? double(int64_t(h[w] - t0)) * 1e-3 : std::nan("");
      };
      zero0.push_back(rel(32768));
      zero1.push_back(rel(32769));
      zero2.push_back(rel(32770));
      int64_t c_end = -1, c_loop = -1;
      for (int64_t c = 0; c < score_ctas && c < 1024; ++c) {
        if (h[size_t(8 * c + 2)] && (c_end < 0 || h[size_t(8 * c + 2)] > h[size_t(8 * c_end + 2)]))
          c_end = c;
        if (h[size_t(8 * c + 1)] &&
            (c_loop < 0 || h[size_t(8 * c + 1)] > h[size_t(8 * c_loop + 1)]))
          c_loop = c;
      }
      for (int j = 0; j < n_crit; ++j) {
        if (c_end >= 0) crit_end[size_t(j)].push_back(rel(size_t(8 * c_end + crit_slot[j])));
        if (c_loop >= 0) crit_loop[size_t(j)].push_back(rel(size_t(8 * c_loop + crit_slot[j])));
      }
    }
    for (int i = 0; i < n_stats; ++i) {
      std::vector<double> v;
      for (int64_t c = 0; c < stats[i].ctas && c < 1024; ++c) {
        const unsigned long long x = h[size_t(stats[i].region + 8 * c + stats[i].slot)];
        if (x) v.push_back(double(int64_t(x - t0)) * 1e-3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      vals[size_t(i)].push_back(stats[i].which == 0   ? v.front()
                                : stats[i].which == 1 ? v[v.size() / 2]
                                                      : v.back());
    }
  }
  std::printf("  trace %s (median of %d replays, us after the first score CTA's start%s):\n", name,
              reps,
              l2 == 1   ? "; L2 not flushed"
              : l2 == 2 ? "; L2 flushed, then the prologue's inputs read"
                        : "");
  {
    // The last replay's score CTAs (three-CTA kernel): passes per CTA (slot 5) and the SMs by
    // their CTAs and passes (slot 6: the SM), with the SM's last loop end.
    std::vector<int> ctas_on(1024, 0), passes_on(1024, 0);
    std::vector<double> end_on(1024, 0.0);
    unsigned long long t0 = ~0ull;
    for (int64_t c = 0; c < score_ctas && c < 1024; ++c)
      if (h[size_t(8 * c)]) t0 = std::min(t0, h[size_t(8 * c)]);
    int pmin = 1 << 30, pmax = 0;
    for (int64_t c = 0; c < score_ctas && c < 1024; ++c) {
      const unsigned long long sm = h[size_t(8 * c + 6)], ps = h[size_t(8 * c + 5)];
      if (ps == 0 || sm >= 1024 || h[size_t(8 * c + 1)] == 0) continue;  // (0: not stamped)
      ++ctas_on[sm];
      passes_on[sm] += int(ps);
      pmin = std::min(pmin, int(ps));
      pmax = std::max(pmax, int(ps));
      end_on[sm] = std::max(end_on[sm], double(int64_t(h[size_t(8 * c + 1)] - t0)) * 1e-3);
    }
    std::map<std::pair<int, int>, std::vector<double>> by;  // (CTAs, passes) -> SMs' loop ends
    for (int sm = 0; sm < 1024; ++sm)
      if (ctas_on[sm]) by[{ctas_on[sm], passes_on[sm]}].push_back(end_on[sm]);
    if (!by.empty())
      std::printf(
          "    last replay: passes per CTA %d..%d; SMs by (CTAs, passes): loop end min / max"
          " us\n",
          pmin, pmax);
    for (auto& [key, v] : by) {
      std::sort(v.begin(), v.end());
      std::printf("      %d CTAs %3d passes: %3zu SMs, %.2f / %.2f\n", key.first, key.second,
                  v.size(), v.front(), v.back());
    }
  }
  for (int i = 0; i < n_stats; ++i) {
    std::vector<double>& v = vals[size_t(i)];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf("    %-24s %8.2f  (min %.2f, max %.2f)\n", stats[i].label, v[v.size() / 2],
                v.front(), v.back());
  }
  const auto med_of = [](std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
    if (v.empty()) return std::nan("");
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("    distribution over CTAs (medians over replays): first / median / last\n");
  for (int i = 0; i < n_dists; ++i) {
    if (dmed[size_t(i)].empty()) continue;
    std::printf("      %-30s %8.2f %8.2f %8.2f\n", dists[i].label, med_of(dfirst[size_t(i)]),
                med_of(dmed[size_t(i)]), med_of(dlast[size_t(i)]));
  }
  for (int i : {12, 0, 1, 11, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {  // (program order)
    if (pmed[size_t(i)].empty()) continue;
    std::printf("      prologue %-21s %8.2f %8.2f %8.2f\n", pro_name[i], med_of(pfirst[size_t(i)]),
                med_of(pmed[size_t(i)]), med_of(plast[size_t(i)]));
  }
  std::printf("      zeroing kernel: block 0 entry %.2f, block 0 exit %.2f, last block exit %.2f\n",
              med_of(zero0), med_of(zero1), med_of(zero2));
  std::printf("    the CTA that ends last / whose loop ends last (medians over replays):\n");
  for (int j = 0; j < n_crit; ++j)
    std::printf("      %-16s %8.2f %8.2f\n", crit_name[j], med_of(crit_end[size_t(j)]),
                med_of(crit_loop[size_t(j)]));
  CHECK(dsv4::cuda::indexer_fast_set_trace(nullptr));
  cudaFree(tr);
}

// --indexer-fp4: FP4 keys only (the official mode), the plan's stage breakdown and the score /
// select variants, each row a graph replay with the L2 flushed. `profile`: one timed run of the
// plan's launches (for ncu).
void bench_indexer_fp4_case(int sms, int64_t T, int64_t entries, int64_t top_k, bool profile) {
  const int64_t heads = 64, d = 128, bs = 128;
  const int64_t width = (entries + bs - 1) / bs;
  // The pool of bench_indexer_case (sized for bf16 keys: >= 4x L2), blocks shuffled.
  const int64_t pool_blocks = indexer_pool_blocks(T, width, bs, d);
  const indexer_tables tabs = upload_indexer_tables(T, entries, width, pool_blocks);
  int32_t* dtable = tabs.table;
  int32_t* dseq = tabs.seq;
  int32_t* dvis = tabs.visible;
  __nv_bfloat16* q16 = random_bf16(size_t(T * heads * d), -1, 1);
  __nv_bfloat16* w16 = random_bf16(size_t(T * heads), -1, 1);
  int32_t* out = device_alloc<int32_t>(size_t(T * top_k));
  const float q_scale = 1.0f / std::sqrt(float(d));
  char shape[128];
  std::snprintf(shape, sizeof(shape), "T=%lld entries=%lld top_k=%lld", (long long)T,
                (long long)entries, (long long)top_k);
  const double flops = 2.0 * double(T * entries * heads * d);
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));
  using plan_t = dsv4::cuda::indexer_fast_plan;
  const plan_t plan = bench_indexer_plan(T, width, bs, sms);
  const size_t scratch_bytes = plan.scratch_bytes;
  void* scratch = device_alloc<unsigned char>(scratch_bytes);
  uint8_t* codes = nullptr;
  uint32_t* scales4 = nullptr;
  alloc_fp4_key_pool(pool_blocks * bs, d, codes, scales4);
  CHECK(cudaGetLastError());
  const double bytes4 = double(T * entries * (d / 2 + 4)) + double(T * heads * d * 2);
  auto run_fp4 = [&](const plan_t& p) {
    CHECK(dsv4::cuda::indexer_topk_fast_fp4<__nv_bfloat16>(
        q16, w16, T, heads, d, codes, scales4, pool_blocks * bs, dtable, T, width, dseq, dvis, bs,
        top_k, q_scale, p, scratch, scratch_bytes, out, st));
  };
  run_fp4(plan);  // one-time attribute calls outside the capture
  CHECK(cudaStreamSynchronize(st));
  if (profile) {
    run_fp4(plan);
    CHECK(cudaStreamSynchronize(st));
    plan_t p = plan;
    p.score_bulk = false;
    run_fp4(p);
    CHECK(cudaStreamSynchronize(st));
  } else {
    // Warm-up (clocks): the plan replayed for a while before the first row.
    for (int i = 0; i < 3; ++i) time_graph_ms(st, [&] { run_fp4(plan); });
    // Variants, each timed in three interleaved rounds (min of the rounds' medians): all, scores
    // (zeroing + score kernel), up to collect.
    struct variant {
      const char* name;
      plan_t p;
    };
    std::vector<variant> vs;
    vs.push_back({"fp4 plan", plan});
    if (!g_indexer_plan_only) {  // the A/B rows
      {
        // The score kernel listing the candidates (plan.score_list) off: the collect launch.
        plan_t p = plan;
        p.score_list = !plan.score_list;
        vs.push_back({plan.score_list ? "fp4 no-list" : "fp4 list", p});
        if (plan.score_list) {
          p = plan;
          p.list_once = true;  // every CTA lists from its first snapshot
          vs.push_back({"fp4 list-once", p});
          p = plan;
          p.list_direct = !plan.list_direct;
          vs.push_back({plan.list_direct ? "fp4 list no-direct" : "fp4 list direct", p});
          p = plan;
          p.list_rank = !plan.list_rank;
          vs.push_back({plan.list_rank ? "fp4 list no-rank" : "fp4 list rank", p});
        }
      }
      {
        // The three-CTA score kernel (plan.score_three) off, and on with a grid of three CTAs per
        // SM (the plan's grid has two per SM when one wave suffices).
        plan_t p = plan;
        p.score_three = !plan.score_three;
        vs.push_back({plan.score_three ? "fp4 no-three" : "fp4 three", p});
        p.score_three = true;
        dsv4::cuda::indexer_fast_plan_set_ctas_per_sm(p, 3, sms, bs);
        vs.push_back({"fp4 three grid3", p});
      }
      {
        // Main's kernels before session 9 (the session's plan flags off).
        plan_t p0 = plan;
        p0.lean_select = p0.score_quad = p0.score_rotate = p0.cluster_select = p0.score_three =
            false;
        vs.push_back({"fp4 s8 (flags off)", p0});
      }
      {
        // (Session 7-8 rows, memset / no-decouple / cp.async / split / 4-warp, dropped to keep the
        // bench short; their outcomes are in bench/RESULTS.md.)
        plan_t p = plan;
        p.score_rotate = !plan.score_rotate;
        vs.push_back({plan.score_rotate ? "fp4 no-rotate" : "fp4 rotate", p});
        p = plan;
        p.score_pingpong = !plan.score_pingpong;
        vs.push_back({plan.score_pingpong ? "fp4 no-pingpong" : "fp4 pingpong", p});
        p = plan;
        p.score_quad = !plan.score_quad;
        vs.push_back({plan.score_quad ? "fp4 no-quad" : "fp4 quad", p});
        p = plan;
        p.cluster_select = !plan.cluster_select;
        vs.push_back({plan.cluster_select ? "fp4 no-cluster" : "fp4 cluster", p});
        if (T <= 8) {  // the cluster select's probes (results wrong, but for the no-pdl row)
          static const char* const probe_names[] = {"",
                                                    "fp4 cluster probe 1",
                                                    "fp4 cluster probe 2",
                                                    "fp4 cluster probe 3",
                                                    "fp4 cluster probe 4",
                                                    "fp4 cluster no-pdl"};
          for (int probe = 1; probe <= 5; ++probe) {
            p = plan;
            p.cluster_select = true;
            p.cluster_probe = probe;
            vs.push_back({probe_names[probe], p});
          }
        }
        p = plan;
        p.lean_select = !plan.lean_select;
        p.cluster_select = false;
        vs.push_back({plan.lean_select ? "fp4 no-lean" : "fp4 lean", p});
        for (int sel : {0, 16, 32}) {
          if (sel == plan.select_ctas) continue;
          p = plan;
          p.select_ctas = sel;
          p.select_ctas_wide = 0;
          p.cluster_select = false;
          vs.push_back({sel == 0    ? "fp4 select 0"
                        : sel == 16 ? "fp4 select 16"
                                    : "fp4 select 32",
                        p});
        }
      }
    }
    vs.push_back({"fp4 plan again", plan});  // the first rows run colder: the plan once more
    const size_t nv_ = vs.size();
    std::vector<double> all(nv_, 1e30), sc(nv_, 1e30), col(nv_, 1e30);
    for (int round = 0; round < 3; ++round)
      for (size_t i = 0; i < nv_; ++i) {
        plan_t p = vs[i].p;
        all[i] = std::min(all[i], time_graph_ms(st, [&] { run_fp4(p); }));
        p.score_only = true;
        sc[i] = std::min(sc[i], time_graph_ms(st, [&] { run_fp4(p); }));
        p.score_only = false;
        p.collect_only = true;
        col[i] = std::min(col[i], time_graph_ms(st, [&] { run_fp4(p); }));
      }
    for (size_t i = 0; i < nv_; ++i) {
      char label[64];
      print_row(vs[i].name, shape, all[i], bytes4, flops);
      std::snprintf(label, sizeof(label), "  scores");
      print_row(label, shape, sc[i], bytes4, flops);
      std::snprintf(label, sizeof(label), "  to collect");
      print_row(label, shape, col[i], bytes4, flops);
      std::printf("    stages (us): scores %.2f, collect %.2f, select %.2f (plan select_ctas %d)\n",
                  sc[i] * 1e3, (col[i] - sc[i]) * 1e3, (all[i] - col[i]) * 1e3,
                  vs[i].p.score_list ? dsv4::cuda::indexer_fast_list_select_ctas(vs[i].p)
                                     : vs[i].p.select_ctas);
    }
  }
  if (g_indexer_trace && T == 1) {
    std::printf("indexer phase trace, %s:\n", shape);
    plan_t other = plan;
    other.score_list = !plan.score_list;
    if (g_indexer_prologue) {
      // IDX29: the plan traced with L2 not flushed, and flushed then the prologue's small inputs
      // (n_visible, token_seq, the block table, the query, the weights) read back into it.
      const auto warm = [&] {
        const auto rd = [&](const void* ptr, size_t bytes) {
          const size_t n = bytes / 4;
          warm_words_kernel<<<unsigned(std::min<size_t>((n + 255) / 256, 256)), 256>>>(
              static_cast<const uint32_t*>(ptr), n, g_flush_sink);
        };
        rd(dvis, size_t(T) * 4);
        rd(dseq, size_t(T) * 4);
        rd(dtable, size_t(T * width) * 4);
        rd(q16, size_t(T * heads * d) * 2);
        rd(w16, size_t(T * heads) * 2);
      };
      for (int l2 : {1, 2})
        trace_indexer_phases(
            "score_list", st, plan.ctas_per_token, plan.collect_ctas_per_token,
            dsv4::cuda::indexer_fast_list_select_ctas(plan), [&] { run_fp4(plan); }, l2, warm);
    }
    for (const plan_t& p : {plan, other}) {
      trace_indexer_phases(
          p.score_list ? "score_list" : "collect launch", st, p.ctas_per_token,
          p.collect_ctas_per_token,
          p.score_list ? dsv4::cuda::indexer_fast_list_select_ctas(p) : p.select_ctas,
          [&] { run_fp4(p); });
      // The token's candidate count (token_state after the scores in the scratch).
      run_fp4(p);
      uint32_t state_words[8];
      CHECK(cudaMemcpy(state_words,
                       static_cast<unsigned char*>(scratch) + size_t((entries + 3) / 4 * 4) * 4 * T,
                       sizeof(state_words), cudaMemcpyDeviceToHost));
      std::printf("    listed candidates %u (threshold bin %u, above %u, in bin %u)\n",
                  state_words[1], state_words[2], state_words[3], state_words[4]);
    }
  }
  cudaFree(codes);
  cudaFree(scales4);
  cudaFree(scratch);
  cudaFree(out);
  cudaFree(q16);
  cudaFree(w16);
  cudaFree(dtable);
  cudaFree(dseq);
  cudaFree(dvis);
  CHECK(cudaStreamDestroy(st));
}

// --indexer-chain: the plan's cost per call inside a decode graph, as the model pays it per layer:
// `calls` indexer calls captured back to back in one graph, each on its own `entries` keys
// (disjoint shuffled blocks of one pool, so no call finds another's keys in L2; the pool is calls x
// the token's bytes, >= 2x L2 at 256K entries and 8 calls), L2 flushed before each replay; the
// graph's median time / calls. The launch floor of one graph is paid once per replay, not once per
// call.
void bench_indexer_fp4_chain(int sms, int64_t entries, int64_t top_k, int calls) {
  const int64_t T = 1, heads = 64, d = 128, bs = 128;
  const int64_t width = (entries + bs - 1) / bs;
  const int64_t pool_blocks = width * calls;
  std::vector<int32_t> perm(static_cast<size_t>(pool_blocks));
  for (int64_t i = 0; i < pool_blocks; ++i) perm[size_t(i)] = int32_t(i);
  std::shuffle(perm.begin(), perm.end(), g_rng);
  std::vector<int32_t*> tables;
  for (int c = 0; c < calls; ++c)
    tables.push_back(
        upload_i32(std::vector<int32_t>(perm.begin() + c * width, perm.begin() + (c + 1) * width)));
  int32_t* dseq = upload_i32(std::vector<int32_t>(1, 0));
  int32_t* dvis = upload_i32(std::vector<int32_t>(1, int32_t(entries)));
  __nv_bfloat16* q16 = random_bf16(size_t(calls * heads * d), -1, 1);
  __nv_bfloat16* w16 = random_bf16(size_t(calls * heads), -1, 1);
  int32_t* out = device_alloc<int32_t>(size_t(calls * top_k));
  const float q_scale = 1.0f / std::sqrt(float(d));
  cudaStream_t st;
  CHECK(cudaStreamCreate(&st));
  using plan_t = dsv4::cuda::indexer_fast_plan;
  const plan_t plan = bench_indexer_plan(T, width, bs, sms);
  void* scratch = device_alloc<unsigned char>(plan.scratch_bytes);
  uint8_t* codes = nullptr;
  uint32_t* scales4 = nullptr;
  alloc_fp4_key_pool(pool_blocks * bs, d, codes, scales4);
  CHECK(cudaGetLastError());
  auto run_one = [&](int c, int64_t calls_in_graph) {
    for (int64_t i = 0; i < calls_in_graph; ++i) {
      const int k = int((c + i) % calls);
      CHECK(dsv4::cuda::indexer_topk_fast_fp4<__nv_bfloat16>(
          q16 + size_t(k) * heads * d, w16 + size_t(k) * heads, T, heads, d, codes, scales4,
          pool_blocks * bs, tables[size_t(k)], 1, width, dseq, dvis, bs, top_k, q_scale, plan,
          scratch, plan.scratch_bytes, out + size_t(k) * top_k, st));
    }
  };
  run_one(0, 1);  // one-time attribute calls outside the capture
  CHECK(cudaStreamSynchronize(st));
  for (int i = 0; i < 3; ++i) time_graph_ms(st, [&] { run_one(0, calls); });  // clocks
  char shape[128];
  std::snprintf(shape, sizeof(shape), "T=1 entries=%lld top_k=%lld", (long long)entries,
                (long long)top_k);
  const double bytes4 = double(entries * (d / 2 + 4)) + double(heads * d * 2);
  const double flops = 2.0 * double(entries * heads * d);
  double one = 1e30, chain = 1e30;
  for (int round = 0; round < 3; ++round) {
    one = std::min(one, time_graph_ms(st, [&] { run_one(round, 1); }));
    chain = std::min(chain, time_graph_ms(st, [&] { run_one(0, calls); }));
  }
  print_row("fp4 plan (1 call)", shape, one, bytes4, flops);
  char label[64];
  std::snprintf(label, sizeof(label), "fp4 plan chained (/%d)", calls);
  print_row(label, shape, chain / calls, bytes4, flops);
  std::printf("    %d calls in one graph: %.2f us, per call %.2f us (pool %.0f MB of FP4 keys)\n",
              calls, chain * 1e3, chain * 1e3 / calls,
              double(pool_blocks * bs * (d / 2 + 4)) / 1e6);
  for (int32_t* t : tables) cudaFree(t);
  cudaFree(codes);
  cudaFree(scales4);
  cudaFree(scratch);
  cudaFree(out);
  cudaFree(q16);
  cudaFree(w16);
  cudaFree(dseq);
  cudaFree(dvis);
  CHECK(cudaStreamDestroy(st));
}

// wgmma issue-rate probes (--wgmma-rates): the S and P V shapes of attention_decode_ws_kernel
// (those two from attention_decode_wgmma.cuh: wgm::mma_ss_n32, wgm::mma_rs_n128_mn) and the
// other N / operand-source variants it compares them with.
namespace wgrate {
__device__ __forceinline__ void ss_n64(float (&d)[32], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%"
      "25,%26,%27,%28,%29,%30,%31}, %32, %33, 1, 1, 1, 0, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b));
}
__device__ __forceinline__ void ss_n128(float (&d)[64], uint64_t a, uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%"
      "25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%"
      "48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, 1, 1, 1, 0, 0;\n"
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
      : "l"(a), "l"(b));
}
__device__ __forceinline__ void rs_n32(float (&d)[16], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, 1, 1, 1, "
      "0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%"
      "25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1, 0;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
}  // namespace wgrate

// One CTA per SM; `wgs` warpgroups each issue `reps` chains of 32 wgmmas (one commit and wait per
// chain, as the S chain of the alternate-tile kernel) of one shape, operands in the kernel's
// layouts: A = 64 query rows x 512 channels (SW128, K-major) or registers, B = the key rows
// (K-major for S, MN-major for P V). Thread 0 of each warpgroup records the cycles of its loop.
// kind: 0 SS n32 (S now), 1 SS n64, 2 SS n128, 3 RS n32 (A from registers), 4 RS n64,
// 5 RS n128 MN-major B (P V now).
template <int kind>
__global__ void __launch_bounds__(256, 1)
    wgmma_rate_kernel(int reps, long long* cycles, float* sink) {
  namespace wgm = dsv4::cuda::attention_wgmma;
  extern __shared__ __align__(1024) unsigned char smem[];
  constexpr int n = kind == 0 || kind == 3 ? 32 : kind == 1 || kind == 4 ? 64 : 128;
  constexpr int acc = n / 2;
  const uint32_t a_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t b_s = a_s + 64 * 1024;
  for (int i = threadIdx.x; i < (64 + 128) * 1024 / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u ^ uint32_t(i * 0x9E3779B1u & 0x00ff00ffu);
  wgm::fence_async_smem();
  __syncthreads();
  float d[acc];
#pragma unroll
  for (int i = 0; i < acc; ++i) d[i] = 0.0f;
  uint32_t a[4] = {0x3c003c00u + threadIdx.x, 0x3c003c01u, 0x3c003c02u, 0x3c003c03u};
  const uint64_t a0 = wgm::desc(a_s, 16, 1024);
  const uint64_t b0 = kind == 5 ? wgm::desc(b_s, 32 * 128, 1024) : wgm::desc(b_s, 16, 1024);
  const long long t0 = clock64();
#pragma unroll 1
  for (int r = 0; r < reps; ++r) {
    wgm::fence();
#pragma unroll
    for (int kk = 0; kk < 32; ++kk) {
      const uint32_t block = uint32_t(kk / 4), byte = uint32_t(kk % 4) * 32;
      const uint64_t ad = wgm::desc_at(a0, block * (64 * 128) + byte);
      if constexpr (kind == 0) wgm::mma_ss_n32(d, ad, wgm::desc_at(b0, block * (32 * 128) + byte));
      if constexpr (kind == 1) wgrate::ss_n64(d, ad, wgm::desc_at(b0, block * (64 * 128) + byte));
      if constexpr (kind == 2) wgrate::ss_n128(d, ad, wgm::desc_at(b0, block * (128 * 128) + byte));
      if constexpr (kind == 3) wgrate::rs_n32(d, a, wgm::desc_at(b0, block * (32 * 128) + byte));
      if constexpr (kind == 4) wgrate::rs_n64(d, a, wgm::desc_at(b0, block * (64 * 128) + byte));
      if constexpr (kind == 5)
        wgm::mma_rs_n128_mn(d, a,
                            wgm::desc_at(b0, uint32_t((kk % 4) * 2) * (32 * 128) +
                                                 uint32_t((kk / 4) % 2) * 16 * 128));
    }
    wgm::commit();
    wgm::wait<0>();
#pragma unroll
    for (int i = 0; i < acc; ++i) wgm::reg_fence(d[i]);
  }
  const long long t1 = clock64();
  float x = 0.0f;
#pragma unroll
  for (int i = 0; i < acc; ++i) x += d[i];
  if (x == 1234.5f) sink[0] = x;  // keeps the products
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + threadIdx.x / 128] = t1 - t0;
}

// --wgmma-rates: cycles per wgmma of each shape, one and two warpgroups per SM (two: the pipe's
// cost per wgmma is the per-warpgroup figure / 2 if the warpgroups share it evenly).
void bench_wgmma_rates(int sms) {
  const int reps = 400;
  long long* cycles = device_alloc<long long>(size_t(2 * sms));
  float* sink = device_alloc<float>(1);
  const int smem = (64 + 128) * 1024;
  const char* names[] = {"SS m64n32k16 (S)", "SS m64n64k16", "SS m64n128k16",
                         "RS m64n32k16",     "RS m64n64k16", "RS m64n128k16 MN (PV)"};
  const double flop[] = {64.0 * 32 * 16 * 2, 64.0 * 64 * 16 * 2, 64.0 * 128 * 16 * 2,
                         64.0 * 32 * 16 * 2, 64.0 * 64 * 16 * 2, 64.0 * 128 * 16 * 2};
  auto run = [&](auto kernel, int kind) {
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    for (const int wgs : {1, 2}) {
      kernel<<<sms, 128 * wgs, smem>>>(reps, cycles, sink);  // warm-up
      CHECK(cudaMemset(cycles, 0, size_t(2 * sms) * 8));
      kernel<<<sms, 128 * wgs, smem>>>(reps, cycles, sink);
      CHECK(cudaDeviceSynchronize());
      std::vector<long long> c(size_t(2 * sms));
      CHECK(cudaMemcpy(c.data(), cycles, c.size() * 8, cudaMemcpyDeviceToHost));
      std::vector<double> per;
      for (int b = 0; b < sms; ++b)
        for (int w = 0; w < wgs; ++w) per.push_back(double(c[size_t(2 * b + w)]) / (reps * 32.0));
      std::sort(per.begin(), per.end());
      const double med = per[per.size() / 2];
      // FLOP per cycle per SM over the peak (4096 dense bf16 FLOP per cycle per SM on sm_90).
      std::printf(
          "  %-24s %d warpgroup(s): %7.1f cycles per wgmma per warpgroup, %5.1f%% of the "
          "SM's tensor peak\n",
          names[kind], wgs, med, 100.0 * flop[kind] * wgs / med / 4096.0);
    }
  };
  std::printf("wgmma issue rates (%d CTAs, %d chains of 32 per warpgroup, clock64):\n", sms, reps);
  run(wgmma_rate_kernel<0>, 0);
  run(wgmma_rate_kernel<1>, 1);
  run(wgmma_rate_kernel<2>, 2);
  run(wgmma_rate_kernel<3>, 3);
  run(wgmma_rate_kernel<4>, 4);
  run(wgmma_rate_kernel<5>, 5);
  cudaFree(cycles);
  cudaFree(sink);
}

// ---- --prefill: sparse attention at prefill sizes, as cuda_ops::sparse_attention runs it ----
// One sequence's chunk of T query tokens at positions ctx - T .. ctx - 1 (a prefill of T tokens
// ending at context ctx), bf16 q / pools / out, head_dim 512, window 128, the engine's layouts
// (kv_cache.cpp): window rows of position q at block(q / 128) * 128 + q % 128 (blocks scattered
// over the pool), so the windows of consecutive tokens share 127 of their 128 rows. Kinds:
//   hca   window + every visible HCA entry, paged (one block-table row of ceil(ctx / 128 / 128)
//         blocks, n_visible = (pos + 1) / 128): all tokens of the chunk read the same entries
//         (L2-resident after the first); compute-bound.
//   csau  window + top-k rows drawn independently per token, uniformly from a pool of >= 2 x
//         T x top-k rows (little reuse: memory-bound; % of read on the distinct bytes); the
//         context only labels the row (every token sees top-k entries from ctx >= 4 top-k).
//   csas  window + top-k distinct entries per token drawn from a candidate set of 2048 entries
//         shared by each 64 consecutive tokens (the candidates drawn from the ctx / 4 CSA entries,
//         paged in scattered blocks): heavy overlap, compute-bound.
// Rows: the cuda_ops loop (chunks of N tokens, attention_decode_make_plan of each chunk's size,
// as the engine makes it; fold plans get no scratch) at N = 64 (main before this change: every
// step in 64-token chunks), 128, 256, ... up to k_attention_decode_prefill_chunk, and T; the
// rule's chunk (attention_decode_chunk_tokens) marked; on the rule's chunk: 2 splits per (token,
// head group) with the combine, 1 split where the rule's plan has more, and the bounds plan.diag
// 1 (no row copies: the consumers alone) and 2 (no products: the row ring alone).
// FLOPs: 4 x heads x 512 x (visible keys summed over the tokens); bytes: the distinct key rows
// (1 KB each) + q + out. Eager launches, event-timed, L2 flushed before each timed loop.
bool g_prefill = false;
std::vector<int64_t> g_prefill_chunks;  // --prefill-chunks "a,b,...": the chunk rows, in order
int g_prefill_rounds = 1;               // --prefill-rounds N

__global__ void fill_bf16_hash(__nv_bfloat16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull + seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = __float2bfloat16_rn(-1.0f + 2.0f * float(z >> 40) * 0x1p-24f);
  }
}

// Max |a - b| and max |b| over two bf16 arrays into m[0], m[1] (non-negative floats compare as
// their bits).
__global__ void max_diff_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, size_t n,
                              unsigned* m) {
  float d = 0, x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float u = __bfloat162float(a[i]), v = __bfloat162float(b[i]);
    d = fmaxf(d, fabsf(u - v));
    x = fmaxf(x, fabsf(v));
  }
  atomicMax(m, __float_as_uint(d));
  atomicMax(m + 1, __float_as_uint(x));
}

double rel_diff_gpu(const __nv_bfloat16* a, const __nv_bfloat16* b, size_t n) {
  static unsigned* m = device_alloc<unsigned>(2);
  CHECK(cudaMemset(m, 0, 8));
  max_diff_bf16<<<1024, 256>>>(a, b, n, m);
  unsigned h[2];
  CHECK(cudaMemcpy(h, m, 8, cudaMemcpyDeviceToHost));
  float d, x;
  std::memcpy(&d, &h[0], 4);
  std::memcpy(&x, &h[1], 4);
  return x > 0 ? double(d) / double(x) : double(d);
}

struct prefill_summary {
  std::string name;
  double main_us = 0, rule_us = 0, best_us = 0, flops = 0, bytes = 0;
  int64_t rule_chunk = 0, best_chunk = 0;
  double ring_us = 0, consumers_us = 0;
};
std::vector<prefill_summary> g_prefill_summary;
void print_prefill_line(const char* prefix, const prefill_summary& s);

void bench_prefill_case(int sms, int64_t T, int64_t H, const char* kind, int64_t ctx,
                        int64_t top_k) {
  using namespace dsv4::cuda;
  const int64_t d = 512, W = 128, bs = 128, group = 64, candidates = 2048;
  const bool hca = std::strcmp(kind, "hca") == 0, unique = std::strcmp(kind, "csau") == 0;
  if (ctx < T || (!hca && top_k > candidates) || T > 65535) {
    std::printf("  prefill %s T=%lld ctx=%lld top-k=%lld: skipped (bad shape)\n", kind,
                (long long)T, (long long)ctx, (long long)top_k);
    return;
  }
  const int64_t p0 = ctx - T;
  const int64_t q_lo = std::max<int64_t>(0, p0 - (W - 1));
  const int64_t win_blocks = (ctx - 1) / bs - q_lo / bs + 1;
  const int64_t hca_entries = ctx / 128, csa_entries = ctx / 4;
  const int64_t comp_blocks = hca      ? (hca_entries + bs - 1) / bs
                              : unique ? 0
                                       : (csa_entries + bs - 1) / bs;
  const int64_t need_rows = (win_blocks + comp_blocks + 1) * bs + (unique ? 2 * T * top_k : 0);
  int64_t pool_rows = std::max<int64_t>(int64_t(4 * g_l2 / 1024), need_rows);
  pool_rows = (pool_rows + bs - 1) / bs * bs;
  static __nv_bfloat16* pool = nullptr;
  static int64_t pool_have = 0;
  if (pool_have < pool_rows) {
    if (pool) CHECK(cudaFree(pool));
    pool = device_alloc<__nv_bfloat16>(size_t(pool_rows * d));
    fill_bf16_hash<<<4096, 256>>>(pool, size_t(pool_rows * d), g_rng());
    CHECK(cudaGetLastError());
    pool_have = pool_rows;
  }
  // Distinct blocks for the window and the compressed entries.
  std::vector<int32_t> perm(size_t(pool_rows / bs));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = int32_t(i);
  for (size_t i = 0; i < size_t(win_blocks + comp_blocks); ++i)
    std::swap(perm[i], perm[i + size_t(g_rng() % (perm.size() - i))]);
  auto window_row = [&](int64_t q) {
    return int32_t(perm[size_t(q / bs - q_lo / bs)] * bs + q % bs);
  };
  auto comp_row = [&](int64_t e) {
    return int32_t(perm[size_t(win_blocks + e / bs)] * bs + e % bs);
  };
  std::vector<int32_t> wr(size_t(T * W)), cr, table, seq, vis;
  std::vector<int32_t> all;  // every key row read, for the distinct count
  double keys = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = p0 + t;
    for (int64_t j = 0; j < W; ++j) {
      const int64_t q = p - (W - 1) + j;
      wr[size_t(t * W + j)] = q >= 0 ? window_row(q) : -1;
      if (q >= 0) {
        all.push_back(wr[size_t(t * W + j)]);
        keys += 1;
      }
    }
  }
  int64_t cap_c = 0;
  if (hca) {
    table.resize(size_t(comp_blocks));
    for (int64_t b = 0; b < comp_blocks; ++b) table[size_t(b)] = perm[size_t(win_blocks + b)];
    seq.assign(size_t(T), 0);
    vis.resize(size_t(T));
    for (int64_t t = 0; t < T; ++t) {
      vis[size_t(t)] = int32_t((p0 + t + 1) / 128);
      keys += double(vis[size_t(t)]);
    }
    for (int64_t e = 0; e < int64_t(vis.back()); ++e) all.push_back(comp_row(e));
    cap_c = comp_blocks * bs;
  } else {
    cr.resize(size_t(T * top_k));
    if (unique) {
      for (auto& r : cr) r = int32_t(g_rng() % uint64_t(pool_rows));
    } else {
      std::vector<int32_t> cand(static_cast<size_t>(candidates));
      for (int64_t t = 0; t < T; ++t) {
        if (t % group == 0) {  // a new candidate set: 2048 distinct entries of the visible ones
          const int64_t visible = std::min(csa_entries, (p0 + t + 1) / 4);
          std::map<int64_t, bool> seen;
          for (auto& e : cand) {
            int64_t x;
            do x = int64_t(g_rng() % uint64_t(visible));
            while (seen.count(x));
            seen[x] = true;
            e = int32_t(x);
          }
        }
        for (int64_t i = 0; i < top_k; ++i) {  // partial shuffle: top-k distinct candidates
          std::swap(cand[size_t(i)], cand[size_t(i) + size_t(g_rng() % uint64_t(candidates - i))]);
          cr[size_t(t * top_k + i)] = comp_row(cand[size_t(i)]);
        }
      }
    }
    for (auto r : cr) all.push_back(r);
    keys += double(T * top_k);
    cap_c = top_k;
  }
  std::sort(all.begin(), all.end());
  const double distinct = double(std::unique(all.begin(), all.end()) - all.begin());
  const double flops = 4.0 * double(H * d) * keys;
  const double bytes = distinct * double(d * 2) + 2.0 * double(T * H * d * 2);

  int32_t* d_wr = upload_i32(wr);
  int32_t* d_cr = cr.empty() ? nullptr : upload_i32(cr);
  int32_t* d_table = table.empty() ? nullptr : upload_i32(table);
  int32_t* d_seq = seq.empty() ? nullptr : upload_i32(seq);
  int32_t* d_vis = vis.empty() ? nullptr : upload_i32(vis);
  __nv_bfloat16* q = device_alloc<__nv_bfloat16>(size_t(T * H * d));
  fill_bf16_hash<<<1024, 256>>>(q, size_t(T * H * d), g_rng());
  float* sinks = random_f32(size_t(H), -1, 1);
  __nv_bfloat16* out = device_alloc<__nv_bfloat16>(size_t(T * H * d));
  __nv_bfloat16* ref = device_alloc<__nv_bfloat16>(size_t(T * H * d));
  const kv_rows<__nv_bfloat16> w{pool, pool_rows, d_wr, W};
  kv_rows<__nv_bfloat16> c{pool, pool_rows, d_cr, d_cr ? top_k : 0};
  if (hca) {
    c.block_table = d_table;
    c.table_rows = 1;
    c.table_width = comp_blocks;
    c.token_seq = d_seq;
    c.n_visible = d_vis;
    c.block_size = bs;
  }
  const float scale = 1.0f / std::sqrt(float(d));

  char name[96];
  std::snprintf(name, sizeof(name), "%s %s T=%lld ctx=%lld%s", H == 64 ? "Flash" : "Pro",
                hca      ? "HCA"
                : unique ? "CSA-uniq"
                         : "CSA-shared",
                (long long)T, (long long)ctx, hca ? "" : (" k=" + std::to_string(top_k)).c_str());
  std::printf("%s: %.0f keys (%.1f per token), %.0f distinct rows, %.1f GFLOP, %.1f MB\n", name,
              keys, keys / double(T), distinct, flops * 1e-9, bytes * 1e-6);

  // The engine's loop (cuda_ops::sparse_attention) over chunks of `chunk` tokens with plans from
  // make(n); fold plans read no scratch.
  auto folds = [](const attention_decode_plan& p) {
    return p.wgmma && p.producer && p.fold && p.splits == 1;
  };
  auto loop = [&](int64_t chunk, const std::function<attention_decode_plan(int64_t)>& make,
                  __nv_bfloat16* o, int64_t* splits) {
    attention_decode_plan full = make(chunk), tail = make(T % chunk ? T % chunk : chunk);
    size_t sb = 16;
    for (auto* p : {&full, &tail}) {
      if (folds(*p)) p->scratch_bytes = 0;
      sb = std::max(sb, p->scratch_bytes);
    }
    if (splits) *splits = full.splits;
    void* scratch = device_alloc<unsigned char>(sb);
    auto run = [&] {
      for (int64_t t0 = 0; t0 < T; t0 += chunk) {
        const int64_t n = std::min(chunk, T - t0);
        const attention_decode_plan& plan = n == chunk ? full : tail;
        kv_rows<__nv_bfloat16> wc = w, cc = c;
        wc.rows += t0 * W;
        if (hca) {
          cc.token_seq += t0;
          cc.n_visible += t0;
        } else {
          cc.rows += t0 * top_k;
        }
        CHECK((sparse_attention_decode<__nv_bfloat16, __nv_bfloat16>(
            q + t0 * H * d, n, H, d, wc, &cc, sinks, scale, o + t0 * H * d, plan, scratch, sb, 0)));
      }
    };
    run();
    CHECK(cudaDeviceSynchronize());
    const double ms = time_ms(run);
    CHECK(cudaFree(scratch));
    return ms;
  };
  auto engine = [&](int64_t n) { return attention_decode_make_plan(n, H, d, W, cap_c, sms); };
  auto row = [&](const std::string& label, double ms, bool check) {
    const double tf = flops / (ms * 1e-3) / 1e12, gbps = bytes / (ms * 1e-3) / 1e9;
    std::printf("  %-34s %9.2f us %7.1f TFLOP/s %5.1f%% dense %7.1f GB/s %5.1f%% read",
                label.c_str(), ms * 1e3, tf, 100.0 * tf / g_peak_tflops, gbps,
                100.0 * gbps / g_read_gbps);
    if (check) std::printf("  diff %.2g", rel_diff_gpu(out, ref, size_t(T * H * d)));
    std::printf("\n");
  };
  prefill_summary s;
  s.name = name;
  s.flops = flops;
  s.bytes = bytes;
  s.rule_chunk = attention_decode_chunk_tokens(T, H, d, W, cap_c, sms, true);
  s.best_us = 1e30;
  s.main_us = s.rule_us = 1e30;
  // Rows: --prefill-chunks (in that order; >= T means T), else 64, 128, ... below T, and T; the
  // first row's output is the reference of the others' diff. --prefill-rounds repeats the list
  // (the summary takes each chunk's fastest round).
  std::vector<int64_t> chunks;
  if (!g_prefill_chunks.empty()) {
    for (const int64_t n : g_prefill_chunks)
      if (std::find(chunks.begin(), chunks.end(), std::min(n, T)) == chunks.end())
        chunks.push_back(std::min(n, T));
  } else {
    for (int64_t n = 64; n < T && n <= k_attention_decode_prefill_chunk; n *= 2)
      chunks.push_back(n);
    chunks.push_back(T);
  }
  for (int round = 0; round < g_prefill_rounds; ++round)
    for (const int64_t n : chunks) {
      int64_t splits = 0;
      const bool first = round == 0 && n == chunks.front();
      const double ms = loop(n, engine, first ? ref : out, &splits);
      char l[80];
      std::snprintf(l, sizeof(l), "chunk %lld s=%lld%s%s", (long long)n, (long long)splits,
                    n == 64 ? " (main)" : "", n == s.rule_chunk ? " <- rule" : "");
      row(l, ms, !first);
      if (n == 64) s.main_us = std::min(s.main_us, ms * 1e3);
      if (n == s.rule_chunk) s.rule_us = std::min(s.rule_us, ms * 1e3);
      if (ms * 1e3 < s.best_us) {
        s.best_us = ms * 1e3;
        s.best_chunk = n;
      }
    }
  {
    // The rule's chunk on 2 splits per (token, head group) with the combine, and on 1 split
    // where its plan has more (fold: fewer CTAs than the SMs, each with all of its tiles).
    const int64_t n = s.rule_chunk;
    const int64_t groups = (H + 63) / 64;
    auto two = [&](int64_t m) {
      return attention_decode_make_plan(m, H, d, W, cap_c, int(2 * m * groups));
    };
    int64_t splits = 0;
    double ms = loop(n, two, out, &splits);
    row("chunk " + std::to_string(n) + " s=" + std::to_string(splits) + " (combine)", ms, true);
    if (engine(n).splits > 1) {
      auto one = [&](int64_t m) { return attention_decode_make_plan(m, H, d, W, cap_c, 1); };
      ms = loop(n, one, out, &splits);
      row("chunk " + std::to_string(n) + " s=" + std::to_string(splits) + " (fold)", ms, true);
    }
    for (const int diag : {1, 2}) {
      auto bound = [&](int64_t m) {
        auto p = engine(m);
        p.diag = diag;
        return p;
      };
      const double bms = loop(n, bound, out, nullptr);
      row(diag == 1 ? "  bound: consumers alone (diag 1)" : "  bound: ring alone (diag 2)", bms,
          false);
      (diag == 1 ? s.consumers_us : s.ring_us) = bms * 1e3;
    }
  }
  g_prefill_summary.push_back(s);
  print_prefill_line("SUM ", s);
  for (void* p : {(void*)d_wr, (void*)d_cr, (void*)d_table, (void*)d_seq, (void*)d_vis, (void*)q,
                  (void*)sinks, (void*)out, (void*)ref})
    if (p) CHECK(cudaFree(p));
}

// One summary line: main's 64-token chunks, the rule's chunk (TFLOP/s, % of the dense and read
// ceilings), the fastest chunk, and the bounds on the rule's chunk.
void print_prefill_line(const char* prefix, const prefill_summary& s) {
  const double tf = s.flops / (s.rule_us * 1e-6) / 1e12;
  const double gb = s.bytes / (s.rule_us * 1e-6) / 1e9;
  const double main_us = s.main_us < 1e29 ? s.main_us : NAN;  // NaN: no 64-token row
  const double tf64 = s.flops / (main_us * 1e-6) / 1e12;
  std::printf("%s%-34s %9.1f %5.1f%% %9.1f %6lld %5.2fx %6.1f %5.1f%% %5.1f%% %6lld %9.1f %9.1f\n",
              prefix, s.name.c_str(), main_us, 100.0 * tf64 / g_peak_tflops, s.rule_us,
              (long long)s.rule_chunk, main_us / s.rule_us, tf, 100.0 * tf / g_peak_tflops,
              100.0 * gb / g_read_gbps, (long long)s.best_chunk, s.consumers_us, s.ring_us);
}

void print_prefill_summary() {
  std::printf(
      "prefill summary (us; TFLOP/s and %% of the dense BF16 ceiling %.1f; %% of read %.1f GB/s "
      "on distinct bytes + q + out; consumers / ring: the bounds on the rule's chunk):\n",
      g_peak_tflops, g_read_gbps);
  std::printf("  %-34s %9s %6s %9s %6s %6s %6s %6s %6s %6s %9s %9s\n", "case", "main(64)", "%dense",
              "rule", "chunk", "x", "TF/s", "%dense", "%read", "best", "consumers", "ring");
  for (const auto& s : g_prefill_summary) print_prefill_line("  ", s);
}

bool run_prefill_cases(int sms, const char* list) {
  std::string all(list);
  size_t at = 0;
  while (at < all.size()) {
    size_t end = all.find(';', at);
    if (end == std::string::npos) end = all.size();
    const std::string spec = all.substr(at, end - at);
    at = end + 1;
    if (spec.empty()) continue;
    long long T = 0, H = 0, ctx = 0, top_k = 0;
    char kind[8] = {};
    if (std::sscanf(spec.c_str(), "%lld,%lld,%4[a-z],%lld,%lld", &T, &H, kind, &ctx, &top_k) != 5 ||
        T <= 0 || H <= 0 || ctx <= 0 ||
        (std::strcmp(kind, "hca") && std::strcmp(kind, "csau") && std::strcmp(kind, "csas"))) {
      std::fprintf(stderr, "--prefill-cases \"T,H,hca|csau|csas,CTX,TOPK;...\": bad entry '%s'\n",
                   spec.c_str());
      return false;
    }
    bench_prefill_case(sms, T, H, kind, ctx, top_k);
  }
  return true;
}

void bench_prefill_default(int sms) {
  for (const int64_t T : {256, 1024, 4096}) {
    for (const int64_t ctx : {8192, 131072})
      for (const int64_t H : {64, 128}) bench_prefill_case(sms, T, H, "hca", ctx, 0);
    bench_prefill_case(sms, T, 64, "csau", 1 << 20, 512);
    bench_prefill_case(sms, T, 128, "csau", 1 << 20, 1024);
    for (const int64_t ctx : {131072, 1 << 20}) {
      bench_prefill_case(sms, T, 64, "csas", ctx, 512);
      bench_prefill_case(sms, T, 128, "csas", ctx, 1024);
    }
  }
}

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows survive a timeout
  bool quick = false;    // --quick: two cases, few launches (for a profiler run)
  bool profile = false;  // --profile: the small decode cases, one timed launch each (for ncu)
  const char* cases = nullptr;     // --cases "T,H,hca|csa,CTX,TOPK;...": those cases, lean rows
  bool no_ceilings = false;        // --no-ceilings: with --cases (for ncu)
  bool write_ceiling = false;      // --write-ceiling: the write ceiling rows (also with --steps)
  bool wgmma_rates = false;        // --wgmma-rates: the S / P V wgmma shapes' issue rates only
  bool fp8_convert_check = false;  // --fp8-convert-check: the record conversions, bit for bit
  bool runs_given = false;
  const char* prefill_cases = nullptr;  // --prefill-cases "T,H,hca|csau|csas,CTX,TOPK;..."
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      g_runs = std::max(50, std::atoi(argv[++i])), runs_given = true;
    else if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--focus") == 0)
      g_focus = true;
    else if (std::strcmp(argv[i], "--profile") == 0)
      profile = true;
    else if (std::strcmp(argv[i], "--indexer") == 0)
      g_indexer_only = true;
    else if (std::strcmp(argv[i], "--indexer-fp4") == 0)
      g_indexer_fp4 = true;
    else if (std::strcmp(argv[i], "--indexer-trace") == 0)
      g_indexer_trace = g_indexer_fp4 = true;
    else if (std::strcmp(argv[i], "--indexer-prologue") == 0)
      g_indexer_prologue = g_indexer_trace = g_indexer_fp4 = true;
    else if (std::strcmp(argv[i], "--indexer-plan-only") == 0)
      g_indexer_plan_only = g_indexer_fp4 = true;
    else if (std::strcmp(argv[i], "--indexer-chain") == 0)
      g_indexer_chain = g_indexer_fp4 = true;
    else if (std::strcmp(argv[i], "--indexer-select-ctas") == 0 && i + 1 < argc)
      g_indexer_select_ctas = std::clamp(std::atoi(argv[++i]), 1, 64);
    else if (std::strcmp(argv[i], "--kv-fp8") == 0)
      g_kv_fp8 = true;
    else if (std::strcmp(argv[i], "--kv-fp8-ab") == 0)
      g_kv_fp8_ab = true;
    else if (std::strcmp(argv[i], "--fp8-convert-check") == 0)
      fp8_convert_check = true;
    else if (std::strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
      cases = argv[++i];
    else if (std::strcmp(argv[i], "--no-ceilings") == 0)
      no_ceilings = true;
    else if (std::strcmp(argv[i], "--small") == 0)
      g_small = true;
    else if (std::strcmp(argv[i], "--write-ceiling") == 0)
      write_ceiling = true;
    else if (std::strcmp(argv[i], "--steps") == 0)
      g_steps = true;
    else if (std::strcmp(argv[i], "--chain-early") == 0)
      g_chain_early = g_steps = true;
    else if (std::strcmp(argv[i], "--twice") == 0)
      g_twice = true;
    else if (std::strcmp(argv[i], "--alt-rows") == 0)
      g_alt_rows = true;
    else if (std::strcmp(argv[i], "--combine-rows") == 0)
      g_combine_rows = true;
    else if (std::strcmp(argv[i], "--wgmma-rates") == 0)
      wgmma_rates = true;
    else if (std::strcmp(argv[i], "--prefill") == 0)
      g_prefill = true;
    else if (std::strcmp(argv[i], "--prefill-cases") == 0 && i + 1 < argc)
      g_prefill = true, prefill_cases = argv[++i];
    else if (std::strcmp(argv[i], "--prefill-chunks") == 0 && i + 1 < argc)
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long long n = std::strtoll(p, &end, 10);
        if (end == p) break;
        if (n > 0) g_prefill_chunks.push_back(n);
        p = *end == ',' ? end + 1 : end;
      }
    else if (std::strcmp(argv[i], "--prefill-rounds") == 0 && i + 1 < argc)
      g_prefill_rounds = std::max(1, std::atoi(argv[++i]));
  }
  // Prefill rows take up to milliseconds each: fewer launches unless --runs says otherwise.
  if (g_prefill && !runs_given) g_runs = 20;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  g_l2 = size_t(prop.l2CacheSize);
  const int sms = prop.multiProcessorCount;
  std::printf("bench_attention: %s, %d SMs, L2 %.0f MiB, %d runs per case (median, L2 flushed)\n",
              prop.name, sms, double(g_l2) / (1 << 20), g_runs);
  g_flush_bytes = 2 * g_l2;
  CHECK(cudaMalloc(&g_flush, g_flush_bytes));
  CHECK(cudaMemset(g_flush, 0x3C, g_flush_bytes));
  CHECK(cudaMalloc(&g_flush_sink, 4));

  if (fp8_convert_check) {
    unsigned int* dev = device_alloc<unsigned int>(6);
    const unsigned int init[6] = {0u, 0xffffffffu, 0u, 0u, 0xffffffffu, 0u};
    CHECK(cudaMemcpy(dev, init, sizeof(init), cudaMemcpyHostToDevice));
    fp8_convert_check_kernel<<<(1u << 24) / 256, 256>>>(dev, dev + 1, dev + 2, dev + 3, dev + 4,
                                                        dev + 5);
    CHECK(cudaGetLastError());
    unsigned int h[6];
    CHECK(cudaMemcpy(h, dev, sizeof(h), cudaMemcpyDeviceToHost));
    std::printf("fp8 convert check: %u of %u cases differ (first %#x), %u NaN results compared\n",
                h[0], 1u << 24, h[1], h[2]);
    std::printf("fp8 convert check (fast form): %u of %u cases differ (first %#x)\n", h[3], h[5],
                h[4]);
    cudaFree(dev);
    return h[0] == 0 && h[3] == 0 && h[5] > 0 ? 0 : 2;
  }
  if (wgmma_rates) {
    bench_wgmma_rates(sms);
    return 0;
  }
  if (profile && g_indexer_fp4) {  // --profile --indexer-fp4: T=1 top-512, plan and cp.async
    bench_indexer_fp4_case(sms, 1, 262144, 512, true);
    return 0;
  }
  if (profile) {
    g_runs = 1;
    g_focus = true;
    cublasHandle_t blas;
    CHECK_CUBLAS(cublasCreate(&blas));
    bench_attention_case(blas, sms, 1, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 1, 64, true, 1 << 20, 0);
    bench_indexer_case(sms, 1, 262144, 512);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (cases && no_ceilings) {
    g_focus = true;
    g_lean = true;
    cublasHandle_t blas;
    CHECK_CUBLAS(cublasCreate(&blas));
    if (!run_cases(blas, sms, cases)) return 2;
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (quick) {
    g_runs = 1;
    std::printf("--quick: one timed run per case, no ceilings\n");
    cublasHandle_t blas;
    CHECK_CUBLAS(cublasCreate(&blas));
    bench_attention_case(blas, sms, 32, 64, true, 1 << 20, 0);
    bench_indexer_case(sms, 1, 262144, 512);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  // Ceilings.
  {
    const size_t bytes = size_t(1) << 30;
    float* p = random_f32(bytes / 4, -1, 1);
    float* sink = device_alloc<float>(1);
    const double ms = time_ms([&] {
      read_only_kernel<<<unsigned(sms * 8), 512>>>(reinterpret_cast<const float4*>(p), bytes / 16,
                                                   sink);
    });
    g_read_gbps = double(bytes) / (ms * 1e-3) / 1e9;
    std::printf("HBM read ceiling (1 GiB read-only): %.1f GB/s\n", g_read_gbps);
    cudaFree(p);
    cudaFree(sink);
  }
  cublasHandle_t blas;
  CHECK_CUBLAS(cublasCreate(&blas));
  if (g_kv_fp8_ab) {
    std::printf("  %-22s %-50s %9s %9s %7s %8s\n", "kernel", "shape", "us", "GB/s", "%read",
                "TFLOP/s");
    std::printf(
        "FP8 records (584 bytes per key) vs bf16 pools (1024), the engine's plan (S = splits); "
        "%%read on the bytes each reads:\n");
    const char* list = cases ? cases
                             : "32,64,hca,1048576,0;8,64,hca,1048576,0;32,128,hca,1048576,0;"
                               "32,64,csa,1048576,512;32,64,hca,131072,0;32,128,csa,1048576,1024;"
                               "1,64,csa,1048576,512;1,64,hca,1048576,0";
    const bool ok = run_cases(blas, sms, list);
    CHECK_CUBLAS(cublasDestroy(blas));
    return ok ? 0 : 2;
  }
  if (g_kv_fp8) {
    std::printf("  %-22s %-50s %9s %9s %7s %8s\n", "kernel", "shape", "us", "GB/s", "%read",
                "TFLOP/s");
    std::printf(
        "sparse attention (decode), head_dim 512, window 128, bf16 q/out; bytes: keys "
        "(1024 bf16 / 584 fp8 per key) + q:\n");
    bench_attention_case(blas, sms, 1, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 1, 64, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 8, 64, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 32, 128, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 32, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 1, 64, true, 131072, 0);
    bench_attention_case(blas, sms, 32, 64, true, 131072, 0);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  {
    const int n = 8192;
    __nv_bfloat16* a = random_bf16(size_t(n) * n, -1, 1);
    __nv_bfloat16* b = random_bf16(size_t(n) * n, -1, 1);
    float* c = device_alloc<float>(size_t(n) * n);
    const float one = 1, zero = 0;
    const double ms = time_ms([&] {
      CHECK_CUBLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_16BF, n, b,
                                CUDA_R_16BF, n, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    });
    g_peak_tflops = 2.0 * double(n) * n * n / (ms * 1e-3) / 1e12;
    std::printf("dense BF16 GEMM ceiling (cuBLAS 8192^3): %.1f TFLOP/s\n", g_peak_tflops);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
  }
  {
    const double ms = time_ms([] { empty_kernel<<<1, 32>>>(); });
    std::printf("launch floor (empty kernel, event-timed): %.2f us\n", ms * 1e3);
  }
  if (g_steps || write_ceiling) bench_write_ceiling(sms);
  if (g_prefill) {
    if (prefill_cases) {
      if (!run_prefill_cases(sms, prefill_cases)) return 2;
    } else {
      bench_prefill_default(sms);
    }
    print_prefill_summary();
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (cases && !g_steps) {
    g_focus = true;
    g_lean = true;
    std::printf("  %-22s %-50s %9s %9s %7s %8s\n", "kernel", "shape", "us", "GB/s", "%read",
                "TFLOP/s");
    if (!run_cases(blas, sms, cases)) return 2;
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  std::printf("  %-22s %-50s %9s %9s %7s %8s\n", "kernel", "shape", "us", "GB/s", "%read",
              "TFLOP/s");
  if (g_indexer_chain) {
    std::printf("indexer top-k, FP4 keys, per call in a graph of 8 calls on disjoint keys:\n");
    for (int64_t k : {512, 1024}) bench_indexer_fp4_chain(sms, 262144, k, 8);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (g_indexer_fp4) {
    std::printf("indexer top-k, FP4 keys (64 heads x 128, bf16 activations):\n");
    bench_indexer_fp4_case(sms, 1, 262144, 512, false);
    if (std::getenv("DSV4_IDX16_K512") == nullptr)  // (set: the top-512 case only)
      bench_indexer_fp4_case(sms, 1, 262144, 1024, false);
    if (!g_indexer_plan_only) bench_indexer_fp4_case(sms, 32, 262144, 512, false);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (g_indexer_only) {
    std::printf("indexer top-k (64 heads x 128, bf16 keys and activations):\n");
    for (int64_t T : {1, 32})
      for (int64_t k : {512, 1024}) bench_indexer_case(sms, T, 262144, k);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  std::printf("sparse attention (decode), head_dim 512, window 128:\n");
  if (g_steps) {
    // (T, H, hca, context, top-k); --cases replaces the list.
    bench_small_floors();
    if (cases) {
      if (!run_cases(blas, sms, cases)) return 2;
    } else {
      for (int64_t ctx : {8192, 131072, 1048576})
        bench_attention_case(blas, sms, 1, 64, true, ctx, 0);
      bench_attention_case(blas, sms, 1, 64, false, 1 << 20, 512);
      bench_attention_case(blas, sms, 1, 128, false, 1 << 20, 1024);
      for (int64_t T : {2, 4, 8, 32}) bench_attention_case(blas, sms, T, 64, true, 8192, 0);
      for (int64_t T : {4, 8, 32}) bench_attention_case(blas, sms, T, 64, false, 1 << 20, 512);
      bench_attention_case(blas, sms, 8, 64, true, 131072, 0);
      bench_attention_case(blas, sms, 8, 64, true, 1 << 20, 0);
      bench_attention_case(blas, sms, 32, 64, true, 1 << 20, 0);
      bench_attention_case(blas, sms, 64, 128, true, 1 << 20, 0);
    }
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (g_small) {
    bench_small_floors();
    for (int64_t ctx : {8192, 131072, 1048576})
      bench_attention_case(blas, sms, 1, 64, true, ctx, 0);
    bench_attention_case(blas, sms, 1, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 1, 128, false, 1 << 20, 1024);
    for (int64_t T : {2, 4}) {
      bench_attention_case(blas, sms, T, 64, true, 8192, 0);
      bench_attention_case(blas, sms, T, 64, false, 1 << 20, 512);
    }
    bench_attention_case(blas, sms, 8, 64, true, 8192, 0);
    bench_attention_case(blas, sms, 8, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 8, 64, true, 131072, 0);
    bench_attention_case(blas, sms, 32, 64, true, 8192, 0);
    bench_attention_case(blas, sms, 32, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 32, 64, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 64, 128, true, 1 << 20, 0);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  if (g_focus) {
    for (int64_t ctx : {8192, 131072, 1048576})
      bench_attention_case(blas, sms, 1, 64, true, ctx, 0);
    for (int64_t T : {1, 8, 32}) bench_attention_case(blas, sms, T, 64, false, 1 << 20, 512);
    bench_attention_case(blas, sms, 8, 64, true, 1 << 20, 0);
    for (int64_t ctx : {8192, 131072})
      for (int64_t T : {8, 32}) bench_attention_case(blas, sms, T, 64, true, ctx, 0);
    bench_attention_case(blas, sms, 32, 64, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 64, 128, true, 1 << 20, 0);
    bench_attention_case(blas, sms, 32, 128, false, 1 << 20, 1024);
    bench_attention_case(blas, sms, 32, 128, true, 1 << 20, 0);
    std::printf("indexer top-k (64 heads x 128, bf16 keys):\n");
    bench_indexer_case(sms, 1, 262144, 512);
    bench_indexer_case(sms, 32, 262144, 512);
    CHECK_CUBLAS(cublasDestroy(blas));
    return 0;
  }
  for (int64_t H : {64, 128})
    for (int64_t T : {1, 8, 32}) {
      bench_attention_case(blas, sms, T, H, false, 1 << 20, H == 64 ? 512 : 1024);
      for (int64_t ctx : {8192, 131072, 1048576})
        bench_attention_case(blas, sms, T, H, true, ctx, 0);
    }
  std::printf("indexer top-k (64 heads x 128, bf16 keys new, f32 keys old):\n");
  for (int64_t T : {1, 32}) {
    bench_indexer_case(sms, T, 32768, 512);
    bench_indexer_case(sms, T, 262144, 512);
  }
  bench_indexer_case(sms, 1, 262144, 1024);
  CHECK_CUBLAS(cublasDestroy(blas));
  return 0;
}
