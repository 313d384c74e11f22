// Dense linears at decode and prefill, one run on one GPU (`--decode-only` skips prefill;
// `--split-sweep` only sweeps linear_decode's block split; `--fp8-cublaslt` compares cuBLASLt's
// block-scaled FP8 matmul with the engine's FP8-input path at 8-128 tokens; `--w8a8-wgmma` the
// wgmma W8A8 linear (linear_w8a8_wgmma.h) against that path and cuBLASLt; `--nvfp4-repack-ab`
// NVFP4's checkpoint and repacked layouts in linear_decode; `--nvfp4-ring-ab` linear_decode
// against linear_decode_nvfp4 on repacked NVFP4):
//   * decode (T = 1..64, graphs of 16 calls): the GEMV of linear.h, linear_decode (tensor cores),
//     linear_gemm and cuBLAS BF16, as % of the HBM read ceiling measured in the same run;
//   * ceiling: cuBLAS BF16 (cublasGemmEx, f32 compute, BF16 out) on the same shape with the weight
//     already in BF16 — what the GPU does with these shapes at best through the library;
//   * linear_gemm (linear_gemm.h): exact expansion of the FP8-block / NVFP4 matrix into a BF16
//     workspace + the same cuBLAS call; also the expansion alone;
//   * the GEMV / tiled kernels of linear.h (what T > 64 used before linear_gemm) at small and
//     mid T, to place the dispatch threshold.
// Shapes: the dense projections of V4-Flash and V4-Pro (attention wq_a, wq_b, wkv, wo_b, the
// indexer's wq_b, the shared expert). Weights: random bytes in realistic code ranges, several
// copies rotated so that each timed call reads its matrix from HBM (>= 4x L2 of packed bytes);
// activations random. Timing: median of event-timed calls after warm-up.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/device_info.h"
#include "backends/cuda/linear.h"
#include "backends/cuda/linear_decode.h"
#include "backends/cuda/linear_decode_fp8act.h"
#include "backends/cuda/linear_decode_nvfp4.h"
#include "backends/cuda/linear_dispatch.h"
#include "backends/cuda/linear_fp8_cublaslt.h"
#include "backends/cuda/linear_fp8_dispatch.h"
#include "backends/cuda/linear_gemm.h"
#include "backends/cuda/linear_w8a8_wgmma.h"
#include "backends/cuda/moe_repack.h"
#include "bench_common.cuh"

namespace {

using bench::fill;
using bench::median;
using bench::read_kernel;

using dsv4::cuda::device_weight;
using dsv4::cuda::weight_kind;

void* dmalloc(size_t n) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(n, 256)));
  return p;
}

// cuBLAS's workspace for every linear_gemm call of the run (one stream); main allocates it before
// any graph capture.
void* cublas_workspace() {
  static void* ws = dmalloc(dsv4::cuda::k_linear_gemm_cublas_workspace_bytes);
  return ws;
}

// Median ms of `runs` event-timed calls launch(i) after a warm-up.
double time_ms(const std::function<void(int)>& launch, int runs, cudaStream_t s) {
  for (int i = 0; i < 3; ++i) launch(i);
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t(runs);
  for (int i = 0; i < runs; ++i) {
    CK(cudaEventRecord(a, s));
    launch(i);
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&t[i], a, b));
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(t);
}

// HBM read ceiling: a read-only kernel over 2 GiB (far past L2), GB/s.
double read_ceiling_gbps(cudaStream_t s) {
  const size_t bytes = size_t(2) << 30;
  void* p = dmalloc(bytes);
  fill(p, bytes, 5, 0);
  uint32_t* sink = static_cast<uint32_t*>(dmalloc(4));
  int sms = 132;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double ms = time_ms(
      [&](int) {
        read_kernel<<<sms * 8, 512, 0, s>>>(static_cast<const uint4*>(p), bytes / 16, sink);
      },
      20, s);
  cudaFree(p);
  cudaFree(sink);
  return double(bytes) / (ms * 1e-3) * 1e-9;
}

// Bytes read in `ms` as % of the read ceiling.
double pct_of_read(double bytes, double ms, double read_gbps) {
  return 100.0 * bytes / (ms * 1e-3) * 1e-9 / read_gbps;
}

constexpr int k_graph_calls = 16;

// Captures launch(i) for i < k_graph_calls into one graph; median ms per call over replays.
double time_graph_per_call(const std::function<void(int)>& launch, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < k_graph_calls; ++i) launch(i);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  const double ms = time_ms([&](int) { CK(cudaGraphLaunch(ge, s)); }, 40, s);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return ms / k_graph_calls;
}

// One packed matrix in a checkpoint format (fp8_block with E8M0 scales, or nvfp4).
struct packed_matrix {
  device_weight w;
  std::vector<void*> owned;
  packed_matrix(weight_kind kind, int64_t rows, int64_t cols, uint32_t seed) {
    w.kind = kind;
    w.rows = rows;
    w.cols = cols;
    w.scale_e8m0 = kind == weight_kind::fp8_block;
    const size_t bytes = size_t(dsv4::cuda::weight_matrix_bytes(kind, rows, cols));
    const size_t scales = size_t(dsv4::cuda::scale_matrix_count(kind, rows, cols));
    void* d = dmalloc(bytes);
    fill(d, bytes, seed, kind == weight_kind::fp8_block ? 4 : kind == weight_kind::bf16 ? 3 : 0);
    w.data = d;
    owned.push_back(d);
    void* s = dmalloc(scales);
    fill(s, scales, seed + 1, kind == weight_kind::fp8_block ? 1 : 2);
    w.scale = s;
    owned.push_back(s);
    if (kind == weight_kind::nvfp4) {
      float* g = static_cast<float*>(dmalloc(4));
      const float v = 1.0f / 64.0f;
      CK(cudaMemcpy(g, &v, 4, cudaMemcpyHostToDevice));
      w.global_scale = g;
      owned.push_back(g);
    }
  }
  ~packed_matrix() {
    for (void* p : owned) cudaFree(p);
  }
  size_t read_bytes() const {
    return size_t(dsv4::cuda::weight_matrix_bytes(w.kind, w.rows, w.cols)) +
           size_t(dsv4::cuda::scale_matrix_count(w.kind, w.rows, w.cols)) +
           (w.global_scale ? 4 : 0);
  }
};

struct shape {
  const char* name;
  int64_t rows, cols;
};

constexpr size_t k_rotate_bytes = size_t(512) << 20;  // >= 4x the 50/60 MiB L2

// The operands of one shape: packed copies rotated past L2 (at most max_sets), BF16 copies for the
// cuBLAS ceiling likewise (none when bf16_seed is 0), activations and output for tmax tokens.
struct shape_operands {
  using bf = __nv_bfloat16;
  std::vector<std::unique_ptr<packed_matrix>> mats;
  std::vector<void*> bf16_copies;
  bf* x = nullptr;
  bf* y = nullptr;
  size_t packed_bytes = 0;
  shape_operands(weight_kind kind, int64_t rows, int64_t cols, int64_t tmax, size_t max_sets,
                 uint32_t packed_seed, uint32_t bf16_seed, uint32_t x_seed) {
    packed_bytes = packed_matrix(kind, rows, cols, 1).read_bytes();
    const size_t sets = std::max<size_t>(2, std::min(max_sets, k_rotate_bytes / packed_bytes + 1));
    for (size_t i = 0; i < sets; ++i)
      mats.push_back(std::make_unique<packed_matrix>(kind, rows, cols, packed_seed + 7 * i));
    if (bf16_seed) {
      const size_t bf_bytes = size_t(rows * cols * 2);
      const size_t bf_sets = std::max<size_t>(2, std::min(max_sets, k_rotate_bytes / bf_bytes + 1));
      for (size_t i = 0; i < bf_sets; ++i) {
        bf16_copies.push_back(dmalloc(bf_bytes));
        fill(bf16_copies.back(), bf_bytes, bf16_seed + uint32_t(i), 3);
      }
    }
    x = static_cast<bf*>(dmalloc(size_t(tmax * cols * 2)));
    fill(x, size_t(tmax * cols * 2), x_seed, 3);
    y = static_cast<bf*>(dmalloc(size_t(tmax * rows * 2)));
  }
  ~shape_operands() {
    for (void* p : bf16_copies) cudaFree(p);
    cudaFree(x);
    cudaFree(y);
  }
  shape_operands(const shape_operands&) = delete;
  shape_operands& operator=(const shape_operands&) = delete;
  const device_weight& w(int i) const { return mats[size_t(i) % mats.size()]->w; }
  const void* bf16_copy(int i) const { return bf16_copies[size_t(i) % bf16_copies.size()]; }
};

void bench_shape(const shape& sh, weight_kind kind, const std::vector<int64_t>& tokens,
                 cublasHandle_t cublas, cudaStream_t s) {
  using bf = __nv_bfloat16;
  const int64_t rows = sh.rows, cols = sh.cols;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(kind, rows, cols, tmax, 16, 100, 900, 77);
  bf* const x = op.x;
  bf* const y = op.y;
  const size_t ws_bytes = dsv4::cuda::linear_gemm_workspace_bytes<bf>(op.w(0));
  void* ws = dmalloc(ws_bytes);
  const char* kname = kind == weight_kind::fp8_block ? "fp8blk" : "nvfp4";
  for (int64_t T : tokens) {
    const int runs = T >= 2048 ? 20 : 40;
    const double flops = 2.0 * double(T) * double(rows) * double(cols);
    const float one = 1.0f, zero = 0.0f;
    CB(cublasSetStream(cublas, s));
    const double t_cublas = time_ms(
        [&](int i) {
          CB(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(rows), int(T), int(cols), &one,
                          op.bf16_copy(i), CUDA_R_16BF, int(cols), x, CUDA_R_16BF, int(cols), &zero,
                          y, CUDA_R_16BF, int(rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        runs, s);
    const double t_gemm = time_ms(
        [&](int i) {
          CK(dsv4::cuda::linear_gemm(cublas, x, T, op.w(i), 1, y, ws, ws_bytes, cublas_workspace(),
                                     dsv4::cuda::k_linear_gemm_cublas_workspace_bytes, s));
        },
        runs, s);
    // The expansion alone: linear_gemm with 1 token costs the expansion plus a trivial GEMM.
    const double t_expand = time_ms(
        [&](int i) {
          CK(dsv4::cuda::linear_gemm(cublas, x, 1, op.w(i), 1, y, ws, ws_bytes, cublas_workspace(),
                                     dsv4::cuda::k_linear_gemm_cublas_workspace_bytes, s));
        },
        runs, s);
    double t_old = -1;
    if (T <= 1024)
      t_old = time_ms([&](int i) { CK(dsv4::cuda::linear(x, T, op.w(i), y, s)); },
                      T <= 64 ? runs : 5, s);
    std::printf(
        "%-10s %-6s %6lld %6lld %5lld  cublas-bf16 %9.1f us %6.1f TF | linear_gemm %9.1f us "
        "%6.1f TF %5.1f%% of cublas (1-token call %7.1f us) | linear.h %s",
        sh.name, kname, (long long)rows, (long long)cols, (long long)T, t_cublas * 1e3,
        flops / t_cublas * 1e-9, t_gemm * 1e3, flops / t_gemm * 1e-9, 100.0 * t_cublas / t_gemm,
        t_expand * 1e3, t_old < 0 ? "-" : "");
    if (t_old >= 0) std::printf("%9.1f us %6.1f TF", t_old * 1e3, flops / t_old * 1e-9);
    std::printf("\n");
    std::fflush(stdout);
  }
  cudaFree(ws);
}

// Decode-sized steps: every dense path on the same shape and T, each timed as a graph of 16 calls
// (the way decode steps run), bf16 activations in and out; % of the read ceiling on the bytes each
// path must read at least (the packed matrix + scales; cuBLAS: its BF16 copy).
void bench_decode(const shape& sh, weight_kind kind, const std::vector<int64_t>& tokens,
                  double read_gbps, cublasHandle_t cublas, cudaStream_t s) {
  using bf = __nv_bfloat16;
  const int64_t rows = sh.rows, cols = sh.cols;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(kind, rows, cols, tmax, 24, 300, 700, 78);
  bf* const x = op.x;
  bf* const y = op.y;
  const size_t packed_bytes = op.packed_bytes;
  const size_t bf_bytes = size_t(rows * cols * 2);
  const size_t ws_bytes = std::max({dsv4::cuda::linear_gemm_workspace_bytes<bf>(op.w(0)),
                                    dsv4::cuda::linear_decode_workspace_bytes(tmax, cols),
                                    dsv4::cuda::linear_decode_fp8act_workspace_bytes(tmax, cols)});
  void* ws = dmalloc(ws_bytes);
  const char* kname = kind == weight_kind::fp8_block ? "fp8blk" : "nvfp4";
  const bool ld_ok = dsv4::cuda::linear_decode_supported(op.w(0));
  CB(cublasSetStream(cublas, s));
  auto pct = [&](double ms, double bytes) { return pct_of_read(bytes, ms, read_gbps); };
  for (int64_t T : tokens) {
    const double t_gemv =
        time_graph_per_call([&](int i) { CK(dsv4::cuda::linear(x, T, op.w(i), y, s)); }, s);
    const double t_ld =
        ld_ok
            ? time_graph_per_call(
                  [&](int i) { CK(dsv4::cuda::linear_decode(x, T, op.w(i), y, ws, ws_bytes, s)); },
                  s)
            : -1;
    const double t_ld_plain = ld_ok ? time_graph_per_call(
                                          [&](int i) {
                                            CK(dsv4::cuda::linear_decode_with_split(
                                                x, T, op.w(i), y, ws, ws_bytes, nullptr, s, false));
                                          },
                                          s)
                                    : -1;
    const double t_gemm = time_graph_per_call(
        [&](int i) {
          CK(dsv4::cuda::linear_gemm(cublas, x, T, op.w(i), 1, y, ws, ws_bytes, cublas_workspace(),
                                     dsv4::cuda::k_linear_gemm_cublas_workspace_bytes, s));
        },
        s);
    // The W8A8 path of official precision mode (x quantized to FP8 blocks inside the call).
    const bool w8a8_ok = dsv4::cuda::linear_decode_fp8act_supported(op.w(0)) &&
                         T <= dsv4::cuda::k_linear_decode_fp8act_max_tokens;
    const double t_w8a8 =
        w8a8_ok ? time_graph_per_call(
                      [&](int i) {
                        CK(dsv4::cuda::linear_decode_fp8act(x, T, op.w(i), y, ws, ws_bytes, s));
                      },
                      s)
                : -1.0;
    const float one = 1.0f, zero = 0.0f;
    const double t_cublas = time_graph_per_call(
        [&](int i) {
          CB(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(rows), int(T), int(cols), &one,
                          op.bf16_copy(i), CUDA_R_16BF, int(cols), x, CUDA_R_16BF, int(cols), &zero,
                          y, CUDA_R_16BF, int(rows), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        s);
    const double pb = double(packed_bytes);
    std::printf("%-10s %-6s %6lld %6lld %3lld | gemv %7.1f us %5.1f%% | linear_decode ", sh.name,
                kname, (long long)rows, (long long)cols, (long long)T, t_gemv * 1e3,
                pct(t_gemv, pb));
    if (t_ld >= 0)
      std::printf("%7.1f us %5.1f%% (no pdl %7.1f us %5.1f%%)", t_ld * 1e3, pct(t_ld, pb),
                  t_ld_plain * 1e3, pct(t_ld_plain, pb));
    else
      std::printf("%41s", "-");
    if (t_w8a8 >= 0) std::printf(" | w8a8 %7.1f us %5.1f%%", t_w8a8 * 1e3, pct(t_w8a8, pb));
    std::printf(" | linear_gemm %7.1f us %5.1f%% | cublas-bf16 %7.1f us %5.1f%% of bf16 bytes\n",
                t_gemm * 1e3, pct(t_gemm, pb), t_cublas * 1e3, pct(t_cublas, double(bf_bytes)));
    std::fflush(stdout);
  }
  cudaFree(ws);
}

// Official mode's FP8-input linear (cuda_ops::linear_fp8_input) against cuBLASLt's block-scaled
// FP8 matmul (linear_fp8_cublaslt.h) on one shape, bf16 activations in and out, graphs of 16
// calls on rotated weights, % of the read ceiling on the packed bytes. "engine" is what
// linear_fp8_input runs at that T: linear_decode_fp8act to 8 tokens, then linear()'s choice
// (choose_dense_linear_path: linear_decode or linear_gemm). w8a8 (to 32 tokens) for reference.
// algos: also the heuristic's other algorithms (1..7), the best of them printed.
void bench_fp8_cublaslt(const shape& sh, const std::vector<int64_t>& tokens, double read_gbps,
                        cublasHandle_t cublas, cudaStream_t s, bool algos = false) {
  using bf = __nv_bfloat16;
  namespace dc = dsv4::cuda;
  const int64_t rows = sh.rows, cols = sh.cols;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(weight_kind::fp8_block, rows, cols, tmax, 24, 300, 0, 78);
  const size_t ws_bytes = std::max({dc::linear_gemm_workspace_bytes<bf>(op.w(0)),
                                    dc::linear_decode_workspace_bytes(tmax, cols),
                                    dc::linear_decode_fp8act_workspace_bytes(tmax, cols),
                                    dc::linear_fp8_cublaslt_workspace_bytes(tmax, rows, cols)});
  void* ws = dmalloc(ws_bytes);
  // Weight scales in cuBLASLt's layout, prepared once per rotated copy (as at load time).
  std::vector<float*> lt_scales;
  for (size_t i = 0; i < op.mats.size(); ++i) {
    lt_scales.push_back(static_cast<float*>(
        dmalloc(size_t(dc::linear_fp8_cublaslt_scale_count(op.w(int(i)))) * 4)));
    CK(dc::linear_fp8_cublaslt_prepare_scales(op.w(int(i)), lt_scales.back(), s));
  }
  CK(cudaStreamSynchronize(s));
  auto* lt = reinterpret_cast<cublasLtHandle_t>(cublas);
  const bool decode_ok = dc::linear_decode_supported(op.w(0));
  const bool gemm_ok = dc::linear_gemm_supported<bf>(op.w(0));
  CB(cublasSetStream(cublas, s));
  const double pb = double(op.packed_bytes);
  for (int64_t T : tokens) {
    const bool fp8act = T <= 8 && dc::linear_decode_fp8act_supported(op.w(0));
    const dc::dense_linear_path path =
        dc::choose_dense_linear_path(weight_kind::fp8_block, rows, T, 1, decode_ok, gemm_ok);
    const char* engine_name = fp8act                                         ? "w8a8"
                              : path == dc::dense_linear_path::linear_gemm   ? "linear_gemm"
                              : path == dc::dense_linear_path::linear_decode ? "linear_decode"
                                                                             : "gemv";
    auto engine = [&](int i) {
      if (fp8act)
        CK(dc::linear_decode_fp8act(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
      else if (path == dc::dense_linear_path::linear_gemm)
        CK(dc::linear_gemm(cublas, op.x, T, op.w(i), 1, op.y, ws, ws_bytes, cublas_workspace(),
                           dsv4::cuda::k_linear_gemm_cublas_workspace_bytes, s));
      else if (path == dc::dense_linear_path::linear_decode)
        CK(dc::linear_decode(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
      else
        CK(dc::linear(op.x, T, op.w(i), op.y, s));
    };
    // First call outside capture: the heuristic's verdict (and its cached algorithm).
    const cudaError_t lt_err =
        dc::linear_fp8_cublaslt(lt, op.x, T, op.w(0), lt_scales[0], op.y, ws, ws_bytes, s);
    CK(cudaStreamSynchronize(s));
    auto lt_call = [&](int i) {
      const size_t m = size_t(i) % op.mats.size();
      CK(dc::linear_fp8_cublaslt(lt, op.x, T, op.w(i), lt_scales[m], op.y, ws, ws_bytes, s));
    };
    const bool w8a8_ok =
        T <= dc::k_linear_decode_fp8act_max_tokens && dc::linear_decode_fp8act_supported(op.w(0));
    // Alternating engine / cuBLASLt twice; the best of each.
    double t_engine = 1e30, t_lt = 1e30;
    for (int rep = 0; rep < 2; ++rep) {
      t_engine = std::min(t_engine, time_graph_per_call(engine, s));
      if (lt_err == cudaSuccess) t_lt = std::min(t_lt, time_graph_per_call(lt_call, s));
    }
    const double t_w8a8 =
        w8a8_ok ? time_graph_per_call(
                      [&](int i) {
                        CK(dc::linear_decode_fp8act(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
                      },
                      s)
                : -1.0;
    std::printf("%-10s %6lld %6lld %5lld | engine %-13s %8.1f us %5.1f%% | ", sh.name,
                (long long)rows, (long long)cols, (long long)T, engine_name, t_engine * 1e3,
                pct_of_read(pb, t_engine, read_gbps));
    if (w8a8_ok)
      std::printf("w8a8 %8.1f us %5.1f%% | ", t_w8a8 * 1e3, pct_of_read(pb, t_w8a8, read_gbps));
    else
      std::printf("w8a8 %17s | ", "-");
    if (lt_err == cudaSuccess)
      std::printf("cublaslt %8.1f us %5.1f%% | engine/cublaslt %.3f", t_lt * 1e3,
                  pct_of_read(pb, t_lt, read_gbps), t_engine / t_lt);
    else
      std::printf("cublaslt refused: %s", cudaGetErrorString(lt_err));
    if (algos && lt_err == cudaSuccess) {
      int best = 0, tried = 0;
      double t_best = t_lt;
      for (int a = 1; a < 8; ++a) {
        const cudaError_t e = dc::linear_fp8_cublaslt_with_algo(lt, op.x, T, op.w(0), lt_scales[0],
                                                                op.y, ws, ws_bytes, a, s);
        CK(cudaStreamSynchronize(s));
        if (e != cudaSuccess) break;  // past the heuristic's list
        ++tried;
        const double t = time_graph_per_call(
            [&](int i) {
              const size_t m = size_t(i) % op.mats.size();
              CK(dc::linear_fp8_cublaslt_with_algo(lt, op.x, T, op.w(i), lt_scales[m], op.y, ws,
                                                   ws_bytes, a, s));
            },
            s);
        if (t < t_best) t_best = t, best = a;
      }
      std::printf(" | algos 0..%d best #%d %8.1f us %5.1f%%", tried, best, t_best * 1e3,
                  pct_of_read(pb, t_best, read_gbps));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (float* p : lt_scales) cudaFree(p);
  cudaFree(ws);
}

// The path below linear_w8a8_wgmma that linear_fp8_input takes (linear_fp8_dispatch.h's rules with
// every kernel supported, then linear()'s choose_dense_linear_path).
enum class fp8_route { w8a8, cublaslt, decode, gemm, gemv };
fp8_route current_fp8_route(int64_t T, int64_t rows, int64_t cols) {
  namespace dc = dsv4::cuda;
  const dc::fp8_input_path p =
      dc::choose_fp8_input_path(false, false, dc::fp8_cublaslt_wins(T, rows, cols), true,
                                dc::fp8act_wins(T, rows, cols), true);
  if (p == dc::fp8_input_path::fp8act) return fp8_route::w8a8;
  if (p == dc::fp8_input_path::cublaslt) return fp8_route::cublaslt;
  const dc::dense_linear_path path =
      dc::choose_dense_linear_path(weight_kind::fp8_block, rows, T, 1, true, true);
  return path == dc::dense_linear_path::linear_gemm     ? fp8_route::gemm
         : path == dc::dense_linear_path::linear_decode ? fp8_route::decode
                                                        : fp8_route::gemv;
}
const char* route_name(fp8_route r) {
  return r == fp8_route::w8a8       ? "w8a8"
         : r == fp8_route::cublaslt ? "cublaslt"
         : r == fp8_route::decode   ? "linear_decode"
         : r == fp8_route::gemm     ? "linear_gemm"
                                    : "gemv";
}

// --w8a8-wgmma: linear_w8a8_wgmma (default plan) against the path linear_fp8_input takes today
// (current_fp8_route), cuBLASLt's block-scaled FP8 matmul and linear_decode_fp8act (to 32 tokens)
// on one shape, bf16 x / y, graphs of 16 calls on weights rotated past L2, best of `reps`
// alternating passes, % of the read ceiling on the FP8 bytes (+ scales). sweep: also the wgmma
// kernel at 1 / 2 / 4 / 8 / 16 K parts (one CTA per item up to the SMs).
void bench_w8a8_wgmma(const shape& sh, const std::vector<int64_t>& tokens, double read_gbps,
                      cublasHandle_t cublas, cudaStream_t s, int reps, bool sweep) {
  using bf = __nv_bfloat16;
  namespace dc = dsv4::cuda;
  const int64_t rows = sh.rows, cols = sh.cols;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(weight_kind::fp8_block, rows, cols, tmax, 24, 300, 0, 78);
  int sms = 132;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int kp_max = int(std::min<int64_t>(16, cols / 128));
  const double bytes_per_sm_cycle = dc::current_device_read_bytes_per_sm_cycle();
  size_t ws_bytes = std::max({dc::linear_gemm_workspace_bytes<bf>(op.w(0)),
                              dc::linear_decode_workspace_bytes(tmax, cols),
                              dc::linear_decode_fp8act_workspace_bytes(tmax, cols),
                              dc::linear_fp8_cublaslt_workspace_bytes(tmax, rows, cols)});
  for (int64_t T : tokens) {
    dc::linear_w8a8_wgmma_plan pl = dc::linear_w8a8_wgmma_default_plan(T, rows, cols, sms);
    pl.k_parts = std::max(pl.k_parts, kp_max);
    ws_bytes = std::max(ws_bytes, dc::linear_w8a8_wgmma_workspace_bytes(pl, rows, cols));
  }
  void* ws = dmalloc(ws_bytes);
  std::vector<float*> lt_scales;
  for (size_t i = 0; i < op.mats.size(); ++i) {
    lt_scales.push_back(static_cast<float*>(
        dmalloc(size_t(dc::linear_fp8_cublaslt_scale_count(op.w(int(i)))) * 4)));
    CK(dc::linear_fp8_cublaslt_prepare_scales(op.w(int(i)), lt_scales.back(), s));
  }
  CK(cudaStreamSynchronize(s));
  auto* lt = reinterpret_cast<cublasLtHandle_t>(cublas);
  CB(cublasSetStream(cublas, s));
  const double pb = double(op.packed_bytes);
  for (int64_t T : tokens) {
    const fp8_route route = current_fp8_route(T, rows, cols);
    const dc::linear_w8a8_wgmma_plan def = dc::linear_w8a8_wgmma_default_plan(T, rows, cols, sms);
    const bool w8a8_ok =
        T <= dc::k_linear_decode_fp8act_max_tokens && dc::linear_decode_fp8act_supported(op.w(0));
    const cudaError_t lt_err =
        dc::linear_fp8_cublaslt(lt, op.x, T, op.w(0), lt_scales[0], op.y, ws, ws_bytes, s);
    CK(cudaStreamSynchronize(s));
    const auto lt_call = [&](int i) {
      const size_t m = size_t(i) % op.mats.size();
      CK(dc::linear_fp8_cublaslt(lt, op.x, T, op.w(i), lt_scales[m], op.y, ws, ws_bytes, s));
    };
    const auto w8a8_call = [&](int i) {
      CK(dc::linear_decode_fp8act(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
    };
    const auto route_call = [&](int i) {
      switch (route) {
        case fp8_route::w8a8:
          return w8a8_call(i);
        case fp8_route::cublaslt:
          return lt_call(i);
        case fp8_route::decode:
          CK(dc::linear_decode(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
          return;
        case fp8_route::gemm:
          CK(dc::linear_gemm(cublas, op.x, T, op.w(i), 1, op.y, ws, ws_bytes, cublas_workspace(),
                             dsv4::cuda::k_linear_gemm_cublas_workspace_bytes, s));
          return;
        case fp8_route::gemv:
          CK(dc::linear(op.x, T, op.w(i), op.y, s));
          return;
      }
    };
    const auto wg_call = [&](const dc::linear_w8a8_wgmma_plan& pl) {
      return [&, pl](int i) {
        CK(dc::linear_w8a8_wgmma(op.x, T, op.w(i), op.y, ws, ws_bytes, s, &pl));
      };
    };
    double t_route = 1e30, t_wg = 1e30, t_lt = 1e30, t_w8a8 = 1e30;
    for (int rep = 0; rep < reps; ++rep) {
      t_route = std::min(t_route, time_graph_per_call(route_call, s));
      t_wg = std::min(t_wg, time_graph_per_call(wg_call(def), s));
      if (lt_err == cudaSuccess && route != fp8_route::cublaslt)
        t_lt = std::min(t_lt, time_graph_per_call(lt_call, s));
      if (w8a8_ok && route != fp8_route::w8a8)
        t_w8a8 = std::min(t_w8a8, time_graph_per_call(w8a8_call, s));
    }
    if (route == fp8_route::cublaslt) t_lt = t_route;
    if (route == fp8_route::w8a8) t_w8a8 = t_route;
    std::printf(
        "wgmma %-10s %6lld %6lld %4lld | route %-13s %7.1f us %5.1f%% | wgmma %7.1f us "
        "%5.1f%% (n%d kp%d ctas%d) | ",
        sh.name, (long long)rows, (long long)cols, (long long)T, route_name(route), t_route * 1e3,
        pct_of_read(pb, t_route, read_gbps), t_wg * 1e3, pct_of_read(pb, t_wg, read_gbps), def.n,
        def.k_parts, def.ctas);
    if (lt_err == cudaSuccess)
      std::printf("cublaslt %7.1f us %5.1f%% | ", t_lt * 1e3, pct_of_read(pb, t_lt, read_gbps));
    else
      std::printf("cublaslt %16s | ", "refused");
    if (w8a8_ok)
      std::printf("w8a8 %7.1f us %5.1f%% | ", t_w8a8 * 1e3, pct_of_read(pb, t_w8a8, read_gbps));
    else
      std::printf("w8a8 %16s | ", "-");
    std::printf("route/wgmma %.3f | engine %s\n", t_route / t_wg,
                dc::w8a8_wgmma_wins(T, rows, cols, bytes_per_sm_cycle) ? "wgmma" : "route");
    if (sweep) {
      std::printf("  kp-sweep %-10s T=%lld:", sh.name, (long long)T);
      for (int kp : {1, 2, 4, 8, 16}) {
        if (kp > kp_max) break;
        dc::linear_w8a8_wgmma_plan pl = def;
        pl.k_parts = kp;
        pl.ctas = int(std::min<int64_t>((rows + 127) / 128 * kp, sms));
        double t = 1e30;
        for (int rep = 0; rep < reps; ++rep) t = std::min(t, time_graph_per_call(wg_call(pl), s));
        std::printf(" kp%d %.1f us %.1f%%%s", kp, t * 1e3, pct_of_read(pb, t, read_gbps),
                    kp == def.k_parts ? "*" : "");
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  }
  for (float* p : lt_scales) cudaFree(p);
  cudaFree(ws);
}

// linear_decode's split (row tiles x K parts per block) swept on one shape: the data behind
// linear_decode_make_split. One line per (T, split): time and % of the read ceiling; "*" marks the
// planner's choice.
void bench_decode_split_sweep(const shape& sh, weight_kind kind, const std::vector<int64_t>& tokens,
                              double read_gbps, cudaStream_t s) {
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(kind, sh.rows, sh.cols, tmax, 24, 300, 0, 78);
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, sh.cols);
  void* ws = dmalloc(ws_bytes);
  for (int64_t T : tokens) {
    const dsv4::cuda::linear_decode_split pick =
        dsv4::cuda::linear_decode_default_split(op.w(0), T);
    for (int64_t rt = 1; rt <= 4; rt *= 2)
      for (int64_t ks = 1; ks <= dsv4::cuda::k_linear_decode_max_warps; ks *= 2) {
        const dsv4::cuda::linear_decode_split sp{rt, ks};
        if (!dsv4::cuda::linear_decode_split_fits(op.w(0), T, sp)) continue;
        const double t = time_graph_per_call(
            [&](int i) {
              CK(dsv4::cuda::linear_decode_with_split(op.x, T, op.w(i), op.y, ws, ws_bytes, &sp,
                                                      s));
            },
            s);
        std::printf("sweep %-10s T=%-2lld rt=%lld ks=%-2lld %7.1f us %5.1f%%%s\n", sh.name,
                    (long long)T, (long long)rt, (long long)ks, t * 1e3,
                    pct_of_read(double(op.packed_bytes), t, read_gbps),
                    rt == pick.row_tiles && ks == pick.k_parts ? " *" : "");
      }
    std::fflush(stdout);
  }
  cudaFree(ws);
}

// W8A8 plan variants of one shape at T tokens, alternating in one process (--w8a8-xlead,
// --w8a8-ks): each variant edits a copy of the default plan and returns false where it does not
// apply (printed "-"); `head` prints the row's start from the default plan.
using w8a8_plan = dsv4::cuda::linear_decode_fp8act_plan;
struct w8a8_variant {
  std::string name;
  std::function<bool(w8a8_plan&)> edit;
};
void bench_w8a8_variants(const shape& sh, int64_t T, int reps,
                         const std::function<void(const w8a8_plan&)>& head,
                         const std::vector<w8a8_variant>& variants, double read_gbps,
                         cudaStream_t s) {
  const shape_operands op(weight_kind::fp8_block, sh.rows, sh.cols, T, 24, 300, 0, 78);
  const size_t ws_bytes = dsv4::cuda::linear_decode_fp8act_workspace_bytes(T, sh.cols);
  void* ws = dmalloc(ws_bytes);
  const w8a8_plan def = dsv4::cuda::linear_decode_fp8act_default_plan(op.w(0), T);
  head(def);
  for (int rep = 0; rep < reps; ++rep)
    for (const w8a8_variant& v : variants) {
      w8a8_plan plan = def;
      if (!v.edit(plan)) {
        std::printf(" | %s -", v.name.c_str());
        continue;
      }
      const double t = time_graph_per_call(
          [&](int i) {
            CK(dsv4::cuda::linear_decode_fp8act_with_plan(op.x, T, op.w(i), op.y, ws, ws_bytes,
                                                          &plan, s));
          },
          s);
      std::printf(" | %s %6.2f us %5.1f%%", v.name.c_str(), t * 1e3,
                  pct_of_read(double(op.packed_bytes), t, read_gbps));
    }
  std::printf("\n");
  std::fflush(stdout);
  cudaFree(ws);
}

// W8A8 decode plans on one shape, in one process (bf16 x and y, graphs of 16 calls
// chained with PDL as decode steps run): the default plan against quantize_in_gemm and L2
// prefetch variants ("default": linear_decode_fp8act_default_plan); "base2" repeats the first
// plan last (run-to-run spread).
void bench_w8a8_ab(const shape& sh, const std::vector<int64_t>& tokens, double read_gbps,
                   cudaStream_t s) {
  const auto fixed = [](w8a8_plan plan) {
    return [plan](w8a8_plan& p) {
      p = plan;  // x_lead / late_scale -1: the default plan's
      return true;
    };
  };
  const std::vector<w8a8_variant> variants{
      {"base", fixed({false, 0, 0})},      {"default", [](w8a8_plan&) { return true; }},
      {"pf2", fixed({false, 2, 0})},       {"pf8", fixed({false, 8, 0})},
      {"inwarp+pf4", fixed({true, 4, 0})}, {"inwarp+pf8", fixed({true, 8, 0})},
      {"base2", fixed({false, 0, 0})}};
  int sms = 132;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int ks = int(dsv4::cuda::linear_decode_make_split(sh.rows, sh.cols / 128, 1, sms).k_parts);
  for (int64_t T : tokens)
    bench_w8a8_variants(
        sh, T, 1,
        [&](const w8a8_plan& def) {
          std::printf("ab %-10s %6lld %6lld T=%lld ks=%d default=%s/pf%d", sh.name,
                      (long long)sh.rows, (long long)sh.cols, (long long)T, ks,
                      def.quantize_in_gemm ? "inwarp" : "kernel", def.l2_prefetch_rounds);
        },
        variants, read_gbps, s);
}

// linear_decode at <= 8 tokens (one n-tile), same process and operands (bf16 x and y, graphs of
// 16 PDL-chained calls): the register pipeline ("reg", the planner's split) against the
// shared-memory ring of 4 / 6 stages on the same split, and the 6-stage ring on half and twice the
// K parts; "default": the planner's pick (linear_decode_default_split); "reg2" repeats the first
// variant last (run-to-run spread). "-": K parts that do not fit. FP8 blocks and BF16 (the ring's
// formats).
void bench_ring_ab(const shape& sh, weight_kind kind, const std::vector<int64_t>& tokens,
                   double read_gbps, cudaStream_t s) {
  using dsv4::cuda::linear_decode_split;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(kind, sh.rows, sh.cols, tmax, 24, 300, 0, 78);
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, sh.cols);
  void* ws = dmalloc(ws_bytes);
  const char* kname = kind == weight_kind::fp8_block ? "fp8blk" : "bf16";
  for (int64_t T : tokens) {
    const linear_decode_split pick = dsv4::cuda::linear_decode_default_split(op.w(0), T);
    // The registers without the activation lead (the split before it: f32 activations' pick).
    linear_decode_split def = dsv4::cuda::linear_decode_default_split(op.w(0), T, false);
    def.ring_stages = 0;
    const auto with = [&](int ring, int64_t ks) {
      linear_decode_split sp = def;
      sp.ring_stages = ring;
      sp.k_parts = ks;
      return sp;
    };
    struct variant {
      const char* name;
      linear_decode_split split;
    };
    const variant variants[] = {{"reg", def},
                                {"default", pick},
                                {"ring4", with(4, def.k_parts)},
                                {"ring6", with(6, def.k_parts)},
                                {"ring6/2", with(6, def.k_parts / 2)},
                                {"ring6x2", with(6, def.k_parts * 2)},
                                {"reg2", def}};
    std::printf("ring %-10s %-6s %6lld %6lld T=%lld ks=%lld default=ring%d", sh.name, kname,
                (long long)sh.rows, (long long)sh.cols, (long long)T, (long long)def.k_parts,
                pick.ring_stages);
    for (const variant& v : variants) {
      if (!dsv4::cuda::linear_decode_split_fits(op.w(0), T, v.split)) {
        std::printf(" | %s -", v.name);
        continue;
      }
      // One call outside the capture (the ring's shared-memory attribute is set on first use).
      CK(dsv4::cuda::linear_decode_with_split(op.x, T, op.w(0), op.y, ws, ws_bytes, &v.split, s));
      const double t = time_graph_per_call(
          [&](int i) {
            CK(dsv4::cuda::linear_decode_with_split(op.x, T, op.w(i), op.y, ws, ws_bytes, &v.split,
                                                    s));
          },
          s);
      std::printf(" | %s %6.2f us %5.1f%%", v.name, t * 1e3,
                  pct_of_read(double(op.packed_bytes), t, read_gbps));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  cudaFree(ws);
}

// linear_decode at <= 8 tokens with the activation lead of linear_decode_split (bf16 x and y,
// graphs of 16 PDL-chained calls, same process and operands): "main" is the planner's split
// without the lead (linear_decode_default_split for f32 activations: registers or ring, x_lead
// 0), "default" the planner's split with it (x_lead rule), "xl1" / "xl2" main's split with
// x_lead 1 / 2 (xl2: registers; on a ring "r-xl2" is the register pipeline with x_lead 2 on the
// same K parts, and "reg" the registers without), "half" / "half-xl2" the registers on half the K
// parts without / with x_lead 2 where main's split has > 8 warps, "main2" the first variant again.
// Two passes over the variants in order (alternating); each cell prints the best of the two, the
// spread and main / variant. "-": the split does not fit (x_lead needs <= 8 warps a block).
// groups > 1: the block-diagonal form (wo_a: x [T, groups * cols]); "default" is then the
// planner's own pick for the grouped call (linear_decode_grouped), shown as default=planner.
// Large BF16 matrices at decode (the LM head: f32 logits; BF16 wo_a: block-diagonal over
// `groups`), graphs of k_graph_calls calls on weights rotated past L2: the GEMV / grouped kernel
// of linear.h, linear_decode_grouped (its planner's split and activation lead) and cuBLAS BF16
// (ungrouped only), and the path choose_dense_linear_path takes; % of the read ceiling on the
// matrix's bytes.
void bench_bf16_large(const shape& sh, int64_t groups, bool f32_out,
                      const std::vector<int64_t>& tokens, double read_gbps, cublasHandle_t cublas,
                      cudaStream_t s) {
  using bf = __nv_bfloat16;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const int64_t cols = sh.cols / groups;  // a group's columns (x holds groups * cols)
  const shape_operands op(weight_kind::bf16, sh.rows, cols, tmax * groups, 24, 300, 0, 78);
  float* yf = static_cast<float*>(dmalloc(size_t(tmax * sh.rows * 4)));
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, sh.cols);
  void* ws = dmalloc(ws_bytes);
  const bool ld_ok = dsv4::cuda::linear_decode_grouped_supported(op.w(0), groups);
  CB(cublasSetStream(cublas, s));
  for (int64_t T : tokens) {
    auto run_gemv = [&](int i) {
      if (f32_out)
        CK(dsv4::cuda::grouped_linear(op.x, T, op.w(i), groups, yf, s));
      else
        CK(dsv4::cuda::grouped_linear(op.x, T, op.w(i), groups, op.y, s));
    };
    auto run_ld = [&](int i) {
      if (f32_out)
        CK(dsv4::cuda::linear_decode_grouped(op.x, T, op.w(i), groups, yf, ws, ws_bytes, s));
      else
        CK(dsv4::cuda::linear_decode_grouped(op.x, T, op.w(i), groups, op.y, ws, ws_bytes, s));
    };
    const double t_gemv = time_graph_per_call(run_gemv, s);
    const double t_ld = ld_ok ? time_graph_per_call(run_ld, s) : -1.0;
    double t_cublas = -1.0;
    if (groups == 1) {
      const float one = 1.0f, zero = 0.0f;
      t_cublas = time_graph_per_call(
          [&](int i) {
            CB(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(sh.rows), int(T), int(cols), &one,
                            op.w(i).data, CUDA_R_16BF, int(cols), op.x, CUDA_R_16BF, int(cols),
                            &zero, yf, CUDA_R_32F, int(sh.rows), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
          },
          s);
    }
    const dsv4::cuda::dense_linear_path path = dsv4::cuda::choose_dense_linear_path(
        weight_kind::bf16, sh.rows, T, groups, ld_ok, true, true);
    const double pb = double(op.packed_bytes);
    std::printf(
        "bf16-large %-9s %6lld x %5lld g%-2lld T=%-2lld | gemv %8.1f us %5.1f%% | "
        "linear_decode %8.1f us %5.1f%% | cublas %8.1f us %5.1f%% | path %s\n",
        sh.name, (long long)sh.rows, (long long)sh.cols, (long long)groups, (long long)T,
        t_gemv * 1e3, pct_of_read(pb, t_gemv, read_gbps), t_ld * 1e3,
        t_ld > 0 ? pct_of_read(pb, t_ld, read_gbps) : 0.0, t_cublas * 1e3,
        t_cublas > 0 ? pct_of_read(pb, t_cublas, read_gbps) : 0.0,
        path == dsv4::cuda::dense_linear_path::gemv            ? "gemv"
        : path == dsv4::cuda::dense_linear_path::linear_decode ? "linear_decode"
                                                               : "linear_gemm");
    std::fflush(stdout);
  }
  cudaFree(ws);
  cudaFree(yf);
}

// Every rotated copy of op's NVFP4 matrices repacked on the device (moe_repack.h's layout, what
// cuda_ops gives dense NVFP4 matrices of >= 8 MiB): the same weights in the other layout. The
// caller frees each copy's data (cudaFree).
std::vector<device_weight> repacked_nvfp4_copies(const shape_operands& op, const shape& sh,
                                                 cudaStream_t s) {
  std::vector<device_weight> rp;
  const size_t bytes =
      size_t(dsv4::cuda::weight_matrix_bytes(weight_kind::nvfp4, sh.rows, sh.cols));
  for (size_t i = 0; i < op.mats.size(); ++i) {
    device_weight w = op.mats[i]->w;
    void* d = dmalloc(bytes);
    CK(dsv4::cuda::fp4_repack::repack_matrices_device(
        static_cast<const uint8_t*>(w.data), static_cast<uint8_t*>(d), 1, sh.rows, sh.cols, s));
    w.data = d;
    w.layout = dsv4::cuda::weight_layout::repacked;
    rp.push_back(w);
  }
  CK(cudaStreamSynchronize(s));
  return rp;
}

// Every split linear_decode_grouped_with_split accepts for a (grouped) matrix of `kind` with bf16
// activations (official wo_a: FP8 blocks), rt 1 / 2 / 4 x ks 1..16 x ring 0 / 4 / 6 x x_lead 0..2
// (linear_decode_split_fits filters: no x_lead on fp8_block, <= 8 warps with it), best of two
// passes each (graphs of PDL-chained calls): the planner's own choice against the best found.
// repacked (nvfp4): the repacked_nvfp4_copies of the matrices.
void bench_split_sweep_grouped(const shape& sh, weight_kind kind,
                               const std::vector<int64_t>& tokens, double read_gbps, cudaStream_t s,
                               int64_t groups, bool repacked = false) {
  using dsv4::cuda::linear_decode_split;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(kind, sh.rows, sh.cols, tmax * groups, 24, 300, 0, 78);
  const std::vector<device_weight> rp =
      repacked ? repacked_nvfp4_copies(op, sh, s) : std::vector<device_weight>{};
  const auto weight = [&](int i) -> const device_weight& {
    return repacked ? rp[size_t(i) % rp.size()] : op.w(i);
  };
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, groups * sh.cols);
  void* ws = dmalloc(ws_bytes);
  const auto call = [&](int i, int64_t T, const linear_decode_split* sp) {
    CK(dsv4::cuda::linear_decode_grouped_with_split(op.x, T, weight(i), groups, op.y, ws, ws_bytes,
                                                    sp, s));
  };
  for (int64_t T : tokens) {
    const linear_decode_split pick = dsv4::cuda::linear_decode_default_split(op.w(0), T);
    std::vector<linear_decode_split> splits{pick};
    for (int64_t rt : {1, 2, 4})
      for (int64_t ks : {1, 2, 4, 8, 16})
        for (int ring : {0, 4, 6})
          for (int lead : {0, 1, 2}) {
            if (lead > 0 && kind == weight_kind::fp8_block) continue;  // not instantiated
            linear_decode_split sp;
            sp.row_tiles = rt;
            sp.k_parts = ks;
            sp.ring_stages = ring;
            sp.x_lead = lead;
            if ((sh.cols / 128) / ks < 2) continue;
            if (dsv4::cuda::linear_decode_split_fits(op.w(0), T, sp)) splits.push_back(sp);
          }
    std::vector<double> best(splits.size(), 1e30);
    // Entry 0: the planner's own choice (no forced split; linear_decode_default_split does not
    // know the groups), printed with the ungrouped default's figures.
    for (int pass = 0; pass < 2; ++pass)
      for (size_t v = 0; v < splits.size(); ++v) {
        const linear_decode_split* sp = v == 0 ? nullptr : &splits[v];
        call(0, T, sp);
        best[v] = std::min(best[v], time_graph_per_call([&](int i) { call(i, T, sp); }, s));
      }
    std::vector<size_t> order(splits.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin() + 1, order.end(),
              [&](size_t a, size_t b) { return best[a] < best[b]; });
    std::printf("sweep %-8s %-5s%s %6lld x %6lld groups=%lld T=%lld:", sh.name,
                kind == weight_kind::bf16    ? "bf16"
                : kind == weight_kind::nvfp4 ? "nvfp4"
                                             : "fp8",
                repacked ? " repacked" : "", (long long)sh.rows, (long long)sh.cols,
                (long long)groups, (long long)T);
    for (size_t j = 0; j < std::min<size_t>(order.size(), 6); ++j) {
      const linear_decode_split& sp = splits[order[j]];
      if (j == 0)
        std::printf(" | planner");
      else
        std::printf(" | rt%lld ks%lld r%d xl%d", (long long)sp.row_tiles, (long long)sp.k_parts,
                    sp.ring_stages, sp.x_lead);
      std::printf(" %6.2f us %5.1f%%", best[order[j]] * 1e3,
                  pct_of_read(double(op.packed_bytes), best[order[j]], read_gbps));
    }
    std::printf(" (%zu splits)\n", splits.size());
    std::fflush(stdout);
  }
  cudaFree(ws);
  for (const device_weight& w : rp) cudaFree(const_cast<void*>(w.data));
}

void bench_lead_ab(const shape& sh, weight_kind kind, const std::vector<int64_t>& tokens,
                   double read_gbps, cudaStream_t s, int64_t groups = 1) {
  using dsv4::cuda::linear_decode_split;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  // x holds tmax tokens of groups * cols activations.
  const shape_operands op(kind, sh.rows, sh.cols, tmax * groups, 24, 300, 0, 78);
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, groups * sh.cols);
  void* ws = dmalloc(ws_bytes);
  const char* kname = kind == weight_kind::bf16    ? "bf16"
                      : kind == weight_kind::nvfp4 ? "nvfp4"
                                                   : "fp8";
  const auto call = [&](int i, int64_t T, const linear_decode_split* sp) {
    CK(dsv4::cuda::linear_decode_grouped_with_split(op.x, T, op.w(i), groups, op.y, ws, ws_bytes,
                                                    sp, s));
  };
  for (int64_t T : tokens) {
    const linear_decode_split pick = dsv4::cuda::linear_decode_default_split(op.w(0), T);
    const linear_decode_split base = dsv4::cuda::linear_decode_default_split(op.w(0), T, false);
    const auto with = [&](int ring, int lead) {
      linear_decode_split sp = base;
      sp.ring_stages = ring;
      sp.x_lead = lead;
      return sp;
    };
    struct variant {
      const char* name;
      linear_decode_split split;
    };
    const int ring = base.ring_stages;
    std::vector<variant> variants{{"main", base}, {"default", pick}};
    std::vector<bool> planner(1, false);  // variant 1 on the planner's split (grouped)
    planner.push_back(groups > 1);
    variants.push_back({"xl1", with(ring, 1)});
    variants.push_back({ring ? "r-xl2" : "xl2", with(0, 2)});
    if (ring) variants.push_back({"reg", with(0, 0)});
    if (base.row_tiles * base.k_parts > 8) {  // x_lead 2 needs <= 8 warps: half the K parts
      linear_decode_split half = with(0, 0), half_xl2 = with(0, 2);
      half.k_parts = half_xl2.k_parts = base.k_parts / 2;
      variants.push_back({"half", half});
      variants.push_back({"half-xl2", half_xl2});
    }
    variants.push_back({"main2", base});
    std::vector<double> best(variants.size(), 1e30), worst(variants.size(), 0.0);
    for (int pass = 0; pass < 2; ++pass)
      for (size_t v = 0; v < variants.size(); ++v) {
        const linear_decode_split* sp =
            v < planner.size() && planner[v] ? nullptr : &variants[v].split;
        if (sp && !dsv4::cuda::linear_decode_split_fits(op.w(0), T, *sp)) continue;
        // One call outside the capture (the ring's shared-memory attribute is set on first use).
        call(0, T, sp);
        const double t = time_graph_per_call([&](int i) { call(i, T, sp); }, s);
        best[v] = std::min(best[v], t);
        worst[v] = std::max(worst[v], t);
      }
    std::printf("lead %-10s %-6s %6lld %6lld T=%lld rt=%lld ks=%lld ring=%d", sh.name, kname,
                (long long)sh.rows, (long long)sh.cols, (long long)T, (long long)base.row_tiles,
                (long long)base.k_parts, base.ring_stages);
    if (groups > 1)
      std::printf(" groups=%lld default=planner", (long long)groups);
    else
      std::printf(" default=ring%d/xl%d", pick.ring_stages, pick.x_lead);
    for (size_t v = 0; v < variants.size(); ++v) {
      if (best[v] > 1e29) {
        std::printf(" | %s -", variants[v].name);
        continue;
      }
      std::printf(" | %s %6.2f us %5.1f%% (+%.1f%%) x%.3f", variants[v].name, best[v] * 1e3,
                  pct_of_read(double(op.packed_bytes), best[v], read_gbps),
                  100.0 * (worst[v] / best[v] - 1.0), best[0] / best[v]);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  cudaFree(ws);
}

// NVFP4 in the checkpoint layout vs the repacked one (linear.h weight_layout::repacked, what
// cuda_ops::prepare_linear gives dense NVFP4 matrices where dense_layout.h allows): the planner's
// split (linear_decode_grouped as cuda_ops calls it), bf16 x and y, graphs of 16 calls on
// rotated copies (each copy repacked on the device from the checkpoint copy, so both layouts
// hold the same weights), `reps` alternating passes, best (and the spread to the worst) per
// layout, % of the read ceiling on the packed bytes. groups > 1: wo_a's grouped form; at T = 1
// also linear.h's GEMV (what cuda_ops runs there on the checkpoint layout).
void bench_nvfp4_repack_ab(const shape& sh, const std::vector<int64_t>& tokens, double read_gbps,
                           cudaStream_t s, int reps, int64_t groups = 1) {
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(weight_kind::nvfp4, sh.rows, sh.cols, tmax * groups, 24, 300, 0, 78);
  const std::vector<device_weight> rp = repacked_nvfp4_copies(op, sh, s);
  if (!dsv4::cuda::linear_decode_grouped_supported(rp[0], groups)) {
    std::printf("repack %-10s: repacked layout not supported\n", sh.name);
    return;
  }
  const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(tmax, groups * sh.cols);
  void* ws = dmalloc(ws_bytes);
  for (int64_t T : tokens) {
    const auto call = [&](int i, bool repacked) {
      const device_weight& w = repacked ? rp[size_t(i) % rp.size()] : op.w(i);
      CK(dsv4::cuda::linear_decode_grouped(op.x, T, w, groups, op.y, ws, ws_bytes, s));
    };
    double best[2] = {1e30, 1e30}, worst[2] = {0, 0};
    for (int pass = 0; pass < reps; ++pass)
      for (int v = 0; v < 2; ++v) {
        const double t = time_graph_per_call([&](int i) { call(i, v == 1); }, s);
        best[v] = std::min(best[v], t);
        worst[v] = std::max(worst[v], t);
      }
    const dsv4::cuda::linear_decode_split sp = dsv4::cuda::linear_decode_default_split(op.w(0), T);
    std::printf("repack %-10s %6lld %6lld T=%-3lld groups=%lld ks=%lld xl=%d", sh.name,
                (long long)sh.rows, (long long)sh.cols, (long long)T, (long long)groups,
                (long long)sp.k_parts, groups > 1 ? -1 : sp.x_lead);
    const char* names[2] = {"checkpoint", "repacked"};
    for (int v = 0; v < 2; ++v)
      std::printf(" | %s %7.2f us %5.1f%% (+%.1f%%)", names[v], best[v] * 1e3,
                  pct_of_read(double(op.packed_bytes), best[v], read_gbps),
                  100.0 * (worst[v] / best[v] - 1.0));
    std::printf(" | x%.3f", best[0] / best[1]);
    if (groups > 1 && T == 1) {
      const double t = time_graph_per_call(
          [&](int i) { CK(dsv4::cuda::grouped_linear(op.x, T, op.w(i), groups, op.y, s)); }, s);
      std::printf(" | gemv (checkpoint) %7.2f us %5.1f%%", t * 1e3,
                  pct_of_read(double(op.packed_bytes), t, read_gbps));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (const device_weight& w : rp) cudaFree(const_cast<void*>(w.data));
  cudaFree(ws);
}

// linear_decode_nvfp4 (the MoE decode kernel over one dense NVFP4 matrix, repacked) against
// linear_decode on the same repacked copies: bf16 x and y, graphs of 16 calls on rotated copies,
// `reps` alternating passes, best (and the spread to the worst) per variant, % of the read
// ceiling on the packed bytes. Variants: linear_decode (the planner's split), linear_decode_nvfp4
// with its rule, the rule with the prepare launch for staged rows ("rule/prep", x_raw 0), then
// every configuration (row tiles 4 / 2 / 1, W2P, x staged; staged rows raw) that the shape allows;
// xN.NNN = linear_decode's time / the variant's.
void bench_nvfp4_ring_ab(const shape& sh, const std::vector<int64_t>& tokens, double read_gbps,
                         cudaStream_t s, int reps) {
  using cfg_t = dsv4::cuda::linear_decode_nvfp4_config;
  const int64_t tmax = *std::max_element(tokens.begin(), tokens.end());
  const shape_operands op(weight_kind::nvfp4, sh.rows, sh.cols, tmax, 24, 300, 0, 78);
  const std::vector<device_weight> rp = repacked_nvfp4_copies(op, sh, s);
  if (!dsv4::cuda::linear_decode_nvfp4_supported(rp[0])) {
    std::printf("nvfp4-ring %-10s: not supported\n", sh.name);
    return;
  }
  const size_t ws_bytes = std::max(dsv4::cuda::linear_decode_workspace_bytes(tmax, sh.cols),
                                   dsv4::cuda::linear_decode_nvfp4_workspace_bytes(tmax, sh.cols));
  void* ws = dmalloc(ws_bytes);
  // The rule's launch, then the same with the prepare launch for staged rows (x_raw 0).
  std::vector<cfg_t> configs{cfg_t{}, cfg_t{0, -1, -1, 0}};
  for (int w2p : {1, 0})
    for (int rt : {4, 2, 1})
      for (int stage : {1, 0}) configs.push_back(cfg_t{rt, w2p, stage});
  for (int64_t T : tokens) {
    const size_t n = configs.size() + 1;
    std::vector<double> best(n, 1e30), worst(n, 0.0);
    std::vector<bool> ok(n, true);
    for (size_t v = 1; v < n; ++v) {  // configurations the shape refuses are skipped
      const cfg_t& c = configs[v - 1];
      const cudaError_t e =
          dsv4::cuda::linear_decode_nvfp4(op.x, T, rp[0], op.y, ws, ws_bytes, s, &c);
      if (e != cudaSuccess) {
        cudaGetLastError();
        ok[v] = false;
      }
    }
    CK(cudaStreamSynchronize(s));
    for (int pass = 0; pass < reps; ++pass)
      for (size_t v = 0; v < n; ++v) {
        if (!ok[v]) continue;
        const double t = time_graph_per_call(
            [&](int i) {
              const device_weight& w = rp[size_t(i) % rp.size()];
              if (v == 0)
                CK(dsv4::cuda::linear_decode(op.x, T, w, op.y, ws, ws_bytes, s));
              else
                CK(dsv4::cuda::linear_decode_nvfp4(op.x, T, w, op.y, ws, ws_bytes, s,
                                                   &configs[v - 1]));
            },
            s);
        best[v] = std::min(best[v], t);
        worst[v] = std::max(worst[v], t);
      }
    const cfg_t rule = dsv4::cuda::linear_decode_nvfp4_plan(rp[0], T);
    std::printf("nvfp4-ring %-10s %6lld %6lld T=%-2lld rule=rt%d/w2p%d/st%d take=%d", sh.name,
                (long long)sh.rows, (long long)sh.cols, (long long)T, rule.row_tiles, rule.w2_pair,
                rule.stage_x, int(dsv4::cuda::linear_decode_nvfp4_preferred(rp[0], T)));
    for (size_t v = 0; v < n; ++v) {
      char name[32];
      if (v == 0)
        std::snprintf(name, sizeof(name), "linear_decode");
      else if (v == 1)
        std::snprintf(name, sizeof(name), "rule");
      else if (v == 2)
        std::snprintf(name, sizeof(name), "rule/prep");
      else
        std::snprintf(name, sizeof(name), "rt%d/w2p%d/st%d", configs[v - 1].row_tiles,
                      configs[v - 1].w2_pair, configs[v - 1].stage_x);
      if (!ok[v]) {
        std::printf(" | %s -", name);
        continue;
      }
      std::printf(" | %s %6.2f us %5.1f%% (+%.1f%%) x%.3f", name, best[v] * 1e3,
                  pct_of_read(double(op.packed_bytes), best[v], read_gbps),
                  100.0 * (worst[v] / best[v] - 1.0), best[0] / best[v]);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  for (const device_weight& w : rp) cudaFree(const_cast<void*>(w.data));
  cudaFree(ws);
}

}  // namespace

int main(int argc, char** argv) {
  const bool decode_only = argc > 1 && std::string(argv[1]) == "--decode-only";
  const bool split_sweep = argc > 1 && std::string(argv[1]) == "--split-sweep";
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const dsv4::cuda::device_info info = dsv4::cuda::query_device(0);
  std::printf(
      "bench_linear_gemm: %s, %d SMs, L2 %d MiB, peak HBM %.0f GB/s = %.1f B per SM cycle\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20,
      dsv4::cuda::peak_memory_gbps(info), dsv4::cuda::peak_read_bytes_per_sm_cycle(info));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cublasHandle_t cublas;
  CB(cublasCreate(&cublas));
  // Allocated here, not on its first use: that can sit inside a graph capture (the route rows of
  // --w8a8-wgmma at 33-64 tokens, where cudaMalloc fails and the run stopped, sessions 35-36).
  (void)cublas_workspace();
  const double read_gbps = read_ceiling_gbps(s);
  std::printf("HBM read ceiling (read-only kernel, 2 GiB): %.1f GB/s\n", read_gbps);
  const shape flash[] = {{"fl.wq_a", 1024, 4096},   {"fl.wq_b", 32768, 1024},
                         {"fl.wkv", 512, 4096},     {"fl.wo_b", 4096, 8192},
                         {"fl.idx_wq", 8192, 1024}, {"fl.sh_w13", 2048, 4096},
                         {"fl.sh_w2", 4096, 2048}};
  const shape pro[] = {{"pro.wq_a", 1536, 7168},
                       {"pro.wq_b", 65536, 1536},
                       {"pro.wo_b", 7168, 16384},
                       {"pro.sh_w13", 3072, 7168},
                       {"pro.sh_w2", 7168, 3072}};
  std::printf(
      "\n## decode: graph of %d calls per timing; %% = of the read ceiling on the packed "
      "bytes (cuBLAS: on its BF16 copy)\n",
      k_graph_calls);
  if (argc > 3 && std::string(argv[1]) == "--profile") {
    // For ncu: linear_decode on one named FP8 shape at T tokens, 6 plain calls, nothing else
    // (e.g. ncu -k regex:linear_decode_kernel --launch-skip 3 --launch-count 1 ...).
    for (const shape& sh : {flash[0], flash[1], flash[2], flash[3], flash[4], flash[5], flash[6],
                            pro[0], pro[1], pro[2], pro[3], pro[4]}) {
      if (std::string(sh.name) != argv[2]) continue;
      const int64_t T = std::atoll(argv[3]);
      const shape_operands op(weight_kind::fp8_block, sh.rows, sh.cols, T, 24, 300, 0, 78);
      const size_t ws_bytes = dsv4::cuda::linear_decode_workspace_bytes(T, sh.cols);
      void* ws = dmalloc(ws_bytes);
      for (int i = 0; i < 6; ++i)
        CK(dsv4::cuda::linear_decode(op.x, T, op.w(i), op.y, ws, ws_bytes, s));
      CK(cudaStreamSynchronize(s));
      cudaFree(ws);
      std::printf("profiled %s T=%lld\n", sh.name, (long long)T);
    }
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--w8a8-ab") {
    std::printf("\n## W8A8 decode plans (fp8 blocks, bf16 x, graph of %d calls, %% of read)\n",
                k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    for (const shape& sh : flash) bench_w8a8_ab(sh, ts, read_gbps, s);
    for (const shape& sh : pro) bench_w8a8_ab(sh, ts, read_gbps, s);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--w8a8-ks") {
    // The default plan against the same plan with 1 / 2 / 4 / 8 / 16 K parts per 16-row tile
    // (plan.k_parts; "-": more parts than 128-k rounds), alternating in one process.
    std::printf("\n## W8A8 K parts (default plan otherwise, graph of %d calls, %% of read)\n",
                k_graph_calls);
    const int reps = argc > 2 ? std::atoi(argv[2]) : 2;
    int sms = 132;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    for (const shape& sh : {flash[1], flash[3], flash[5], pro[1], pro[2], pro[3], pro[4]}) {
      const int ks0 =
          int(dsv4::cuda::linear_decode_make_split(sh.rows, sh.cols / 128, 1, sms).k_parts);
      std::vector<w8a8_variant> variants;
      for (int ks : {0, 1, 2, 4, 8, 16})
        variants.push_back(
            {(ks ? "ks" : "def") + std::to_string(ks ? ks : ks0), [ks, &sh](w8a8_plan& p) {
               p.k_parts = ks;
               return ks <= sh.cols / 128;
             }});
      for (int64_t T : {int64_t(1), int64_t(4), int64_t(8)})
        bench_w8a8_variants(
            sh, T, reps,
            [&](const w8a8_plan& def) {
              std::printf("ks %-10s T=%lld default ks%d pf%d xl%d ls%d", sh.name, (long long)T, ks0,
                          def.l2_prefetch_rounds, def.x_lead, def.late_scale);
            },
            variants, read_gbps, s);
    }
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--w8a8-xlead") {
    // The default plan with its activations loaded 0 / 2 rounds ahead of the MMAs, and with the
    // E8M0 weight scales converted at the MMAs (ls), and the default plan itself, alternating in
    // one process.
    std::printf("\n## W8A8 x lead (default plan, graph of %d calls, %% of read)\n", k_graph_calls);
    const int reps = argc > 2 ? std::atoi(argv[2]) : 2;
    const auto lead = [](int x_lead, int late) {
      return [x_lead, late](w8a8_plan& p) {
        p.x_lead = x_lead;
        p.late_scale = late;
        return true;
      };
    };
    const std::vector<w8a8_variant> variants{
        {"xl0", lead(0, 0)}, {"xl2", lead(2, 0)}, {"xl2ls", lead(2, 1)}, {"default", lead(-1, -1)}};
    for (const shape& sh :
         {flash[0], flash[1], flash[3], flash[5], flash[6], pro[0], pro[1], pro[2], pro[3], pro[4]})
      for (int64_t T : {int64_t(1), int64_t(2), int64_t(4), int64_t(8), int64_t(9), int64_t(16)})
        bench_w8a8_variants(
            sh, T, reps,
            [&](const w8a8_plan& def) {
              std::printf("xlead %-10s T=%lld pf%d", sh.name, (long long)T, def.l2_prefetch_rounds);
            },
            variants, read_gbps, s);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--nvfp4-ring-ab") {
    // Optional: reps (default 2), T list as "1,2,4,8".
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
    std::vector<int64_t> ts{1, 2, 4, 8};
    if (argc > 3) {
      ts.clear();
      for (const char* p = argv[3]; *p;) {
        ts.push_back(std::atoll(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    }
    std::printf(
        "\n## dense NVFP4 (repacked): linear_decode vs linear_decode_nvfp4 (the MoE decode "
        "kernel), bf16 x / y, graph of %d calls, best of %d alternating passes, %% of read, "
        "xN.NNN = linear_decode / variant\n",
        k_graph_calls, reps);
    for (const shape& sh : {flash[1], flash[3], pro[1], pro[2], pro[3], pro[4], flash[5], flash[6]})
      bench_nvfp4_ring_ab(sh, ts, read_gbps, s, reps);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--nvfp4-repack-ab") {
    // Optional: reps (default 2).
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
    std::printf(
        "\n## linear_decode NVFP4: checkpoint vs repacked layout (planner's split, bf16 x / y, "
        "graph of %d calls, best of %d alternating passes, %% of read, xN.NNN = checkpoint / "
        "repacked)\n",
        k_graph_calls, reps);
    const std::vector<int64_t> ts{1, 2, 4, 8, 16};
    for (const shape& sh :
         {flash[1], flash[3], flash[0], flash[5], flash[6], pro[1], pro[2], pro[0], pro[3], pro[4]})
      bench_nvfp4_repack_ab(sh, ts, read_gbps, s, reps);
    bench_nvfp4_repack_ab({"fl.wo_a", 8 * 1024, 4096}, ts, read_gbps, s, reps, 8);
    bench_nvfp4_repack_ab({"pro.wo_a", 16 * 1024, 4096}, ts, read_gbps, s, reps, 16);
    // Larger steps (four and eight n-tiles) on two shapes.
    bench_nvfp4_repack_ab(flash[5], {32, 64}, read_gbps, s, reps);
    bench_nvfp4_repack_ab(pro[2], {32, 64}, read_gbps, s, reps);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--ring-ab") {
    std::printf(
        "\n## linear_decode <= 8 tokens: register pipeline vs shared-memory ring (bf16 x, graph "
        "of %d calls, %% of read; matrices < ~4 MB cycle in L2 inside a graph)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    for (const shape& sh : flash) bench_ring_ab(sh, weight_kind::fp8_block, ts, read_gbps, s);
    for (const shape& sh : pro) bench_ring_ab(sh, weight_kind::fp8_block, ts, read_gbps, s);
    for (const shape& sh : {flash[1], flash[3], pro[2]})
      bench_ring_ab(sh, weight_kind::bf16, ts, read_gbps, s);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--bf16-large") {
    // The LM head (vocab 129280; 16384 the test checkpoints') and BF16 wo_a at 1-8 tokens.
    std::printf("\n## large BF16 matrices at decode (graph of %d calls, %% of read)\n",
                k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 3, 4, 8};
    bench_bf16_large({"head16k", 16384, 4096}, 1, true, ts, read_gbps, cublas, s);
    bench_bf16_large({"fl.head", 129280, 4096}, 1, true, ts, read_gbps, cublas, s);
    bench_bf16_large({"pro.head", 129280, 7168}, 1, true, ts, read_gbps, cublas, s);
    bench_bf16_large({"fl.wo_a", 8 * 1024, 8 * 4096}, 8, false, ts, read_gbps, cublas, s);
    bench_bf16_large({"pro.wo_a", 16 * 1024, 16 * 4096}, 16, false, ts, read_gbps, cublas, s);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--grouped-lead-ab") {
    // wo_a's block-diagonal form (Flash 8 x 1024 rows, Pro 16 x 1024, 4096 columns a group):
    // BF16 (BF16 checkpoints), NVFP4 (NVIDIA's) and FP8 blocks (official), as --lead-ab.
    std::printf(
        "\n## linear_decode_grouped (wo_a) <= 8 tokens: activation lead (bf16 x, graph of %d "
        "calls, %% of read, xN.NNN = main / variant)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    for (weight_kind k : {weight_kind::bf16, weight_kind::nvfp4, weight_kind::fp8_block}) {
      bench_lead_ab({"fl.wo_a", 8 * 1024, 4096}, k, ts, read_gbps, s, 8);
      bench_lead_ab({"pro.wo_a", 16 * 1024, 4096}, k, ts, read_gbps, s, 16);
    }
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--fp8-grouped-sweep") {
    std::printf(
        "\n## linear_decode_grouped FP8 blocks (official wo_a), bf16 x: split sweep (graph of %d "
        "calls, %% of read)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    const weight_kind fp8 = weight_kind::fp8_block;
    bench_split_sweep_grouped({"fl.wo_a", 8 * 1024, 4096}, fp8, ts, read_gbps, s, 8);
    bench_split_sweep_grouped({"pro.wo_a", 16 * 1024, 4096}, fp8, ts, read_gbps, s, 16);
    // Ungrouped FP8 blocks with bf16 x (the exact mode's projections) for comparison.
    bench_split_sweep_grouped({"fl.wq_b", 32768, 1024}, fp8, ts, read_gbps, s, 1);
    bench_split_sweep_grouped({"fl.wo_b", 4096, 8192}, fp8, ts, read_gbps, s, 1);
    bench_split_sweep_grouped({"pro.wo_b", 7168, 16384}, fp8, ts, read_gbps, s, 1);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--grouped-sweep") {
    // wo_a's BF16 form (BF16 checkpoints) and its NVFP4 form in the repacked layout (all-linear
    // NVFP4 checkpoints: what cuda_ops runs at this size): every split.
    std::printf(
        "\n## linear_decode_grouped wo_a, bf16 x: split sweep (graph of %d calls, %% of read)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    bench_split_sweep_grouped({"fl.wo_a", 8 * 1024, 4096}, weight_kind::bf16, ts, read_gbps, s, 8);
    bench_split_sweep_grouped({"pro.wo_a", 16 * 1024, 4096}, weight_kind::bf16, ts, read_gbps, s,
                              16);
    bench_split_sweep_grouped({"fl.wo_a", 8 * 1024, 4096}, weight_kind::nvfp4, ts, read_gbps, s, 8,
                              true);
    bench_split_sweep_grouped({"pro.wo_a", 16 * 1024, 4096}, weight_kind::nvfp4, ts, read_gbps, s,
                              16, true);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "--lead-ab") {
    // Optional second argument: a format (bf16, nvfp4) to run alone (fp8 blocks ignore x_lead).
    const std::string only = argc > 2 ? argv[2] : "";
    std::printf(
        "\n## linear_decode <= 8 tokens: activation lead (bf16 x, graph of %d "
        "calls, %% of read, xN.NNN = main / variant)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{1, 2, 4, 8};
    const shape set[] = {flash[1], flash[3], flash[5], flash[6], flash[0],
                         pro[1],   pro[2],   pro[3],   pro[4],   pro[0]};
    for (weight_kind k : {weight_kind::bf16, weight_kind::nvfp4}) {
      const char* n = k == weight_kind::bf16 ? "bf16" : "nvfp4";
      if (!only.empty() && only != n) continue;
      for (const shape& sh : set) bench_lead_ab(sh, k, ts, read_gbps, s);
    }
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 &&
      (std::string(argv[1]) == "--w8a8-wgmma" || std::string(argv[1]) == "--w8a8-wgmma-sweep")) {
    // Optional: reps (default 2), then a shape name to run alone.
    const bool sweep = std::string(argv[1]) == "--w8a8-wgmma-sweep";
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 2;
    const std::string only = argc > 3 ? argv[3] : "";
    std::printf(
        "\n## W8A8 wgmma vs the current FP8-input path, cuBLASLt and W8A8 mma.sync (bf16 x / y, "
        "graph of %d calls, best of %d alternating, %% of read on the FP8 bytes)\n",
        k_graph_calls, reps);
    const std::vector<int64_t> ts{9, 16, 17, 32, 48, 64};
    for (const shape& sh : {flash[1], flash[3], flash[0], flash[5], flash[6], flash[2], pro[1],
                            pro[2], pro[0], pro[3], pro[4]}) {
      if (!only.empty() && only != sh.name) continue;
      bench_w8a8_wgmma(sh, ts, read_gbps, cublas, s, reps, sweep);
    }
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (argc > 1 && (std::string(argv[1]) == "--fp8-cublaslt" ||
                   std::string(argv[1]) == "--fp8-cublaslt-algos")) {
    const bool algos = std::string(argv[1]) == "--fp8-cublaslt-algos";
    std::printf(
        "\n## FP8-input linears: engine path vs cuBLASLt block-scaled FP8 (bf16 x / y, graph of "
        "%d calls, best of 2 alternating, %% of read on the FP8 bytes)\n",
        k_graph_calls);
    const std::vector<int64_t> ts{8, 9, 16, 32, 64, 128};
    for (const shape& sh :
         {flash[0], flash[1], flash[3], flash[5], flash[6], pro[0], pro[1], pro[2], pro[3], pro[4]})
      bench_fp8_cublaslt(sh, ts, read_gbps, cublas, s, algos);
    // Prefill sanity rows: linear_gemm (expand + cuBLAS BF16) above 64 tokens.
    bench_fp8_cublaslt(pro[2], {512, 1024}, read_gbps, cublas, s, algos);
    std::printf("HBM read ceiling again: %.1f GB/s\n", read_ceiling_gbps(s));
    return 0;
  }
  if (split_sweep) {
    std::printf("\n## linear_decode split sweep (fp8 blocks, graph of %d calls)\n", k_graph_calls);
    const std::vector<int64_t> ts{2, 8, 16, 32};
    for (const shape& sh : {flash[0], flash[1], flash[3], flash[5], pro[1], pro[2]})
      bench_decode_split_sweep(sh, weight_kind::fp8_block, ts, read_gbps, s);
    return 0;
  }
  const std::vector<int64_t> decode{1, 2, 4, 8, 16, 32, 64};
  for (const shape& sh : flash)
    bench_decode(sh, weight_kind::fp8_block, decode, read_gbps, cublas, s);
  for (const shape& sh : pro)
    bench_decode(sh, weight_kind::fp8_block, decode, read_gbps, cublas, s);
  bench_decode({"fl.sh_w13", 2048, 4096}, weight_kind::nvfp4, decode, read_gbps, cublas, s);
  if (decode_only) return 0;
  std::printf(
      "\n## prefill: columns name format rows cols T; cuBLAS BF16 on a BF16 copy "
      "(ceiling); linear_gemm (expand + same GEMM); linear.h (tiled kernel)\n");
  const std::vector<int64_t> prefill{512, 1024, 4096};
  for (const shape& sh : flash) bench_shape(sh, weight_kind::fp8_block, prefill, cublas, s);
  bench_shape({"fl.sh_w13", 2048, 4096}, weight_kind::nvfp4, prefill, cublas, s);
  bench_shape({"fl.wq_b", 32768, 1024}, weight_kind::nvfp4, prefill, cublas, s);
  for (const shape& sh : pro) bench_shape(sh, weight_kind::fp8_block, prefill, cublas, s);
  cublasDestroy(cublas);
  cudaStreamDestroy(s);
  return 0;
}
