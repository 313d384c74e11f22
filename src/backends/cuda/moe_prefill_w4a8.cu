// The W4A8 GEMM core of the routed-expert prefill (moe_prefill_w4a8.h; moe_prefill_core::w4a8;
// sm_90a): MXFP4 weights expanded to E4M3 in registers with their group exponent folded in
// (moe_prefill_w4a8_ops.cuh), activations E4M3 per token and 128 k, FP8 wgmma, f32 promotion
// per 128 k. Official order only (moe_prefill_experts_official).
//
// Numerics (docs/dsv4-model.md section 3.7: the official reference quantizes the input of every
// FP4-weight Linear to E4M3 per token and 128 k with a power-of-two scale and sums the block
// products (A.B) * s_a * s_b in f32):
//  * x arrives FP8-quantize-dequantized per 128 values (the official forward's act_quant); its
//    re-quantization here (s = 2^ceil(log2(max(amax, 1e-4) / 448)), q = e4m3(x / s)) returns the
//    same values (the new s is never larger than the old one, and a smaller power of two maps an
//    E4M3 value <= 448 onto another). h (f32, SwiGLU times the routing weight) is quantized the
//    same way: exactly moe_quantize_h_kernel's fake quantization, stored as bytes + scales.
//  * Weights: per weight row a base B = (largest E8M0 byte of the row) - 6; every group's values
//    are code * 2^(E - B) as E4M3 (exact while E >= B - 8, i.e. within 14 binades of the row's
//    largest group; rounded onto the E4M3 grid below that, see moe_prefill_w4a8_ops.cuh), and
//    the row's outputs take 2^(B - 127) at the end (NaN for a row with an E8M0 byte 255).
//  * Per 128-k round each warpgroup runs 4 wgmma k32 steps into a zeroed f32 block accumulator
//    (every product e4m3 x e4m3 is exact; the tensor core sums 32-k groups with its own internal
//    precision), then promotes it into the main f32 accumulator with one FMA per element times
//    the token's activation scale of that round (a power of two: the product is exact).
//  So against the f32 reference on the same FP8 inputs only the summation order and the tensor
//  core's in-block summation differ, plus the d < -8 rounding.
//
// Block: 256 threads = 2 warpgroups, one (row block, pair tile of up to 128 pairs). L1: warp w
// of warpgroup q owns h rows R = 64 bx + 32 q + 8 w + g (g = 0..7): fragment row g holds W1 row
// R and fragment row g + 8 holds W3 row R, so a lane's accumulators j and j + 2 are W1 x and
// W3 x of the same (row, token) and the SwiGLU epilogue needs no exchange. L2: warpgroup q owns
// W2 rows 128 bx + 64 q .. + 63 (warp w: 16 w + g and 16 w + g + 8).
//
// K order: lane c's weight bytes of a round are physical k 32 c .. 32 c + 31 (16 bytes, one MXFP4
// group); k32 step s takes its word s (physical 32 c + 8 s .. + 7) as A regs (lo = values 0-3 at
// logical k 4 c + i, hi = values 4-7 at logical 16 + 4 c + i). So logical k L = 32 s + 16 h +
// 4 c + i of a round holds physical P = 32 c + 8 s + 4 h + i (w4a8_physical_k); the quantize
// kernel writes each 128-k block of x and h in this logical order, so B rows are staged by plain
// cp.async copies into the 128-byte-swizzled stage (K-major, one 1024-byte atom per 8 tokens).
//
// Pipeline: stages_for(pipelined) rounds in flight through cp.async (B rows, the round's token
// scales and each thread's weight bytes in one group per round); one barrier per round; each
// warpgroup waits for its own 4 wgmmas before the promotion, while the other warpgroup's keep the
// tensor core busy.
//
// Measured (H100, official order, bench_moe_linear --prefill-w4a8; bench/RESULTS.md session 6
// W4A8): both kernels pass parity; 272-294 TFLOP/s at Flash T = 4096 / 8192 and 230-279 at Pro
// T = 4096, 0.96-1.22x the W4A16 wgmma core and 19-25% of a cuBLASLt FP8 dense GEMM of the same
// FLOPs: far from the issue's 1 PFLOP/s. The serial 4-stage kernel was the faster one in the last
// run. ncu of the pipelined kernel (Flash T = 4096): L1 3.43 ms, L2 1.53 ms at the profiler's
// 1.44 GHz; 2 warps per scheduler, 0.31-0.38 instructions issued per cycle, 0.42-0.51 eligible
// warps; DRAM 22-31%, L2 27-35% of peak; the top stall (31% of the cycles between issues) waits on
// L1TEX results, i.e. global loads into registers: in the main loop only the per-round scale
// bytes (scale_byte), which with 206 KB of shared memory find little L1 left. Next: scale bytes
// staged in shared memory, then warp specialization (a producer warp for the copies, consumers
// decoupled by mbarriers instead of one barrier per round), and the fixed costs outside the GEMMs
// (f32 h round trip through HBM, the per-pair f32 out and its combine).
// Session 17 (REVIEW17, H200, Flash T = 4096, same call): both kernels now take the ws kernel's
// one-mask expand_e2m1x8 (the same bytes, one LOP3 less per word): w4a8 1.010-1.012x, w4a8_serial
// 1.012-1.013x main's, y still bit for bit the ws kernel's.
// Session 20 (PREFILL20, H200; bench/kernels/results/2026-11-27_s20_prefill20_NOTES.md): the
// kernels around the GEMMs. L1 writes h as BF16 rounded to odd (half the bytes; the same E4M3
// bytes and scales, moe_prefill_fp8.cuh) and w4a8_quantize_fast_kernel quantizes x and h (cvt,
// four blocks per warp); with moe_prefill.cu's combine, the official call's non-GEMM kernels at
// Flash T = 4096 (stage breakdown) 458 -> ~190 us; against main's binary, alternated: w4a8_ws
// Flash T = 4096 3443 / 3438 -> 3321 / 3315 us (1.037x, 372-373 TFLOP/s), Pro T = 4096 9675 /
// 9641 -> 9248 / 9273 us (1.043x), w4a8_serial 1.039x / 1.026x, w4a8 1.00x / 1.026x (at Flash
// its L1 kernel in this build is slower than main's by about what the other kernels save: the
// in-process A/B, main's kernels there, measured 1.063x; not resolved).
//
// Determinism: every output element is one pair's sum in a fixed order.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdlib>
#include <type_traits>

#include "backends/cuda/activation.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/moe_prefill_common.cuh"
#include "backends/cuda/moe_prefill_fp8.cuh"
#include "backends/cuda/moe_prefill_w4a8.h"
#include "backends/cuda/moe_prefill_w4a8_ops.cuh"
#include "backends/cuda/moe_prefill_wgmma.h"
#include "backends/cuda/quantize.h"
#include "backends/cuda/wgmma_common.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DSV4_W4A8_WGMMA 1
#else
#define DSV4_W4A8_WGMMA 0
#endif

namespace dsv4::cuda::prefill {

namespace {

using namespace w4a8;

constexpr int k_threads = 256;
constexpr int k_tile = k_wgmma_tile;  // pairs per tile (the plan's)
constexpr int k_round = 128;          // k per round
// Rounds in flight: 8 for the pipelined kernel (moe_prefill_core::w4a8), 4 for the serial one
// (w4a8_serial). The first version (both 4, no L2 prefetch) measured 277 / 260 TFLOP/s
// (pipelined / serial) at Flash T = 4096 on an H100, and its total times put the weights at
// ~1 TB/s for Flash and Pro alike; the L2 prefetch (cp_async_cg_16_l2_256), scale bytes two rounds
// ahead and per-tile B offsets then took the serial kernel to 281 (Pro 246 -> 279), while 8
// stages with paired weight requests made the pipelined one slower (272, Pro 230): deeper
// copies were not what limited it (see the measurements at the top of the file).
__host__ __device__ constexpr int stages_for(bool pipelined) {
  return pipelined ? 8 : 4;
}
constexpr int k_b_bytes = k_tile * k_round;         // a round's B: token rows of 128 E4M3 bytes
constexpr int k_stage_bytes = k_b_bytes + 1024;     // + the round's token scales (f32)
constexpr int k_wround_bytes = 2 * k_threads * 16;  // a round's weights: 2 rows x 16 bytes each
constexpr int smem_bytes_for(bool pipelined) {      // + alignment slack
  return stages_for(pipelined) * (k_stage_bytes + k_wround_bytes) + 1024;
}
constexpr int k_up_rows = 64;     // h rows (a W1 and a W3 row each) per L1 block
constexpr int k_down_rows = 128;  // W2 rows per L2 block

// Physical k (within a 128-k block) of logical position L (the top of the file).
__host__ __device__ constexpr int w4a8_physical_k(int L) {
  return 32 * ((L >> 2) & 3) + 8 * (L >> 5) + 4 * ((L >> 4) & 1) + (L & 3);
}
static_assert(w4a8_physical_k(0) == 0 && w4a8_physical_k(4) == 32 && w4a8_physical_k(16) == 4 &&
                  w4a8_physical_k(32) == 8 && w4a8_physical_k(127) == 127,
              "logical k order of the top of the file");

size_t align_256(size_t n) {
  return (n + 255) / 256 * 256;
}

struct q_layout {
  size_t xq, xs, hq, hs, total;
};
q_layout make_q_layout(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter) {
  const size_t pairs = size_t(tokens) * size_t(top_k);
  q_layout l;
  l.xq = 0;
  l.xs = l.xq + align_256(size_t(tokens) * size_t(hidden));
  l.hq = l.xs + align_256(size_t(tokens) * size_t(hidden / 128) * 4);
  l.hs = l.hq + align_256(pairs * size_t(inter));
  l.total = l.hs + align_256(pairs * size_t(inter / 128) * 4);
  return l;
}

// ---- activation quantization ----

// One warp per (row, 128-value block): s = 2^ceil(log2(max(amax, 1e-4) / 448)), q = e4m3(v / s)
// (quant::fp8_block_warp's values), written as bytes in the logical k order (lane l writes
// logical 4 l .. 4 l + 3) and s as f32. With indices, rows whose expert index is outside
// [0, experts) are skipped (L1 never wrote them; no tile reads them).
template <typename in_t>
__global__ void __launch_bounds__(256)
    w4a8_quantize_kernel(const in_t* src, int64_t rows, int64_t cols, const int32_t* indices,
                         int64_t experts, uint8_t* q, float* scales) {
  const int64_t blocks_per_row = cols / 128;
  const int64_t item = int64_t(blockIdx.x) * (256 / k_warp_size) + threadIdx.x / k_warp_size;
  if (item >= rows * blocks_per_row) return;
  const int64_t row = item / blocks_per_row, b = item % blocks_per_row;
  if (indices) {
    const int32_t e = indices[row];
    if (e < 0 || e >= experts) return;
  }
  const int lane = threadIdx.x % k_warp_size;
  const int64_t base = row * cols + b * 128;
  const in_t* p = src + base + w4a8_physical_k(4 * lane);
  float v[4];
  if constexpr (std::is_same_v<in_t, float>) {
    const float4 f = *reinterpret_cast<const float4*>(p);
    v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
  } else {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    v[0] = __uint_as_float(u.x << 16), v[1] = __uint_as_float(u.x & 0xFFFF0000u);
    v[2] = __uint_as_float(u.y << 16), v[3] = __uint_as_float(u.y & 0xFFFF0000u);
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) amax = fmaxf(amax, fabsf(v[i]));  // NaN ignored
  amax = quant::warp_max(amax);
  const float s = fp8_block_scale(amax);
  uint32_t bytes = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float r = quant::e4m3_round(__fdiv_rn(v[i], s));  // on the grid: the cast is exact
    bytes |= uint32_t(__nv_cvt_float_to_fp8(r, __NV_SATFINITE, __NV_E4M3)) << (8 * i);
  }
  *reinterpret_cast<uint32_t*>(q + base + 4 * lane) = bytes;
  if (lane == 0) scales[row * blocks_per_row + b] = s;
}

// w4a8_quantize_kernel's bytes and scales (moe_prefill_fp8.cuh: v * (1 / s), one cvt per two
// values) with U consecutive blocks of one row per warp (U divides cols / 128), their loads
// issued before the first reduction: BF16 h (L1's output, rounded to odd) is 256 bytes per
// block, and one block per warp left the loads too few per SM to stream at full rate.
// H: a tag (h or x), so that the bench's stage breakdown tells the two launches apart.
template <typename in_t, int U, bool H>
__global__ void __launch_bounds__(256)
    w4a8_quantize_fast_kernel(const in_t* src, int64_t rows, int64_t cols, const int32_t* indices,
                              int64_t experts, uint8_t* q, float* scales) {
  const int64_t blocks_per_row = cols / 128;
  const int64_t first = (int64_t(blockIdx.x) * (256 / k_warp_size) + threadIdx.x / k_warp_size) * U;
  if (first >= rows * blocks_per_row) return;
  const int64_t row = first / blocks_per_row;
  if (indices) {
    const int32_t e = indices[row];
    if (e < 0 || e >= experts) return;
  }
  const int lane = threadIdx.x % k_warp_size;
  const int64_t base = row * cols + (first - row * blocks_per_row) * 128;
  float v[U][4];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const in_t* p = src + base + u * 128 + w4a8_physical_k(4 * lane);
    if constexpr (std::is_same_v<in_t, float>) {
      const float4 f = *reinterpret_cast<const float4*>(p);
      v[u][0] = f.x, v[u][1] = f.y, v[u][2] = f.z, v[u][3] = f.w;
    } else {
      const uint2 w = *reinterpret_cast<const uint2*>(p);
      v[u][0] = __uint_as_float(w.x << 16), v[u][1] = __uint_as_float(w.x & 0xFFFF0000u);
      v[u][2] = __uint_as_float(w.y << 16), v[u][3] = __uint_as_float(w.y & 0xFFFF0000u);
    }
  }
  float my_scale = 0.0f;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) amax = fmaxf(amax, fabsf(v[u][i]));  // NaN ignored
    amax = quant::warp_max(amax);
    const float s = fp8_block_scale(amax);
    const float r = __fdiv_rn(1.0f, s);  // exact: s is a power of two
    const uint32_t bytes = e4m3x2_bits(__fmul_rn(v[u][0], r), __fmul_rn(v[u][1], r)) |
                           e4m3x2_bits(__fmul_rn(v[u][2], r), __fmul_rn(v[u][3], r)) << 16;
    *reinterpret_cast<uint32_t*>(q + base + u * 128 + 4 * lane) = bytes;
    if (lane == u) my_scale = s;
  }
  if (lane < U) scales[first + lane] = my_scale;
}

// ---- the GEMM ----

// v * 2^e for e in [-133, 122] (two exact power-of-two steps, one rounding at most).
__device__ __forceinline__ float scale_pow2(float v, int e) {
  const int e1 = e < -126 ? -126 : e;
  return v * __uint_as_float(uint32_t(e1 + 127) << 23) *
         __uint_as_float(uint32_t(e - e1 + 127) << 23);
}

struct w4a8_args {
  const uint8_t* bq;  // B: E4M3 rows [*, cols] in the logical k order
  const float* bs;    // and their scales [*, cols / 128]
  int top_k;
  const int* tile_count;
  const int4* tiles;
  const int* sorted;
  fp4_weight wa, wb;  // L1: W1, W3; L2: W2 twice
  float limit;
  const float* pair_weights;  // L1 (official order)
  float* dst;                 // L1: h [pairs, inter]; L2: out [pairs, hidden]
  uint16_t* h16;              // L1: h as BF16 rounded to odd (bf16_round_odd) instead of dst
};

// The epilogue of both W4A8 cores: accumulator j is fragment row (j >> 1) & 1 (0: g, 1: g + 8),
// token 8 (j >> 2) + 2 c + (j & 1) of the tile (pair id pairs[token]); outputs take
// 2^(base - 127) (NaN for an E8M0 byte 255 in the row). UP: SwiGLU of W1 (rows g) and W3
// (accumulators j + 2), times the pair weight in the official order; !UP: W2 rows g and g + 8.
// UP's pair weights are all loaded before the first store: loaded next to each store (until
// session 10), every load waited one global round trip, as the stores may alias them as far as
// the compiler knows (SASS: LDG, STG, LDG, ... one chain of N / 4 loads per thread and item).
template <bool UP, int N>
__device__ __forceinline__ void w4a8_store_outputs(const w4a8_args& a, const float (&acc)[N / 2],
                                                   int c, int ntok, const int* pairs,
                                                   const int64_t (&row)[2], const int (&emax)[2],
                                                   const int (&base)[2], int64_t out_rows) {
  const float nan = __uint_as_float(0x7fc00000u);
  float pw[UP ? N / 4 : 1];  // UP: the pair weight of accumulator j = 4 q + b at 2 q + b
  if constexpr (UP) {
#pragma unroll
    for (int q = 0; q < N / 8; ++q)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int t = 8 * q + 2 * c + b;
        pw[2 * q + b] =
            a.pair_weights && t < ntok && row[0] < out_rows ? a.pair_weights[pairs[t]] : 1.0f;
      }
  }
#pragma unroll
  for (int j = 0; j < N / 2; ++j) {
    const int t = 8 * (j >> 2) + 2 * c + (j & 1);
    if (t >= ntok) continue;
    const int p = pairs[t];
    const int i = (j >> 1) & 1;
    if constexpr (UP) {
      if (i == 0 && row[0] < out_rows) {
        const float gv = emax[0] == 255 ? nan : scale_pow2(acc[j], base[0] - 127);
        const float uv = emax[1] == 255 ? nan : scale_pow2(acc[j + 2], base[1] - 127);
        const float v = moe_swiglu_value(gv, uv, a.limit);
        const float hv = a.pair_weights ? __fmul_rn(v, pw[2 * (j >> 2) + (j & 1)]) : v;
        if (a.h16)
          a.h16[int64_t(p) * out_rows + row[0]] = bf16_round_odd(hv);
        else
          a.dst[int64_t(p) * out_rows + row[0]] = hv;
      }
    } else {
      if (row[i] < out_rows)
        a.dst[int64_t(p) * out_rows + row[i]] =
            emax[i] == 255 ? nan : scale_pow2(acc[j], base[i] - 127);
    }
  }
}

template <bool UP, int N, bool PIPE>
__device__ __forceinline__ void w4a8_tile(const w4a8_args& a, int e, int ntok, const int* src_row,
                                          const int* pair_of, uint8_t* smem) {
  constexpr int k_stages = stages_for(PIPE);
  const int tid = threadIdx.x, lane = tid % k_warp_size, g = lane / 4, c = lane % 4;
  const int wg = tid / 128, warp = (tid / k_warp_size) % 4;
  const int64_t cols = a.wa.cols, out_rows = a.wa.rows;
  // This lane's weight rows: fragment rows g (i = 0) and g + 8 (i = 1).
  int64_t row[2];
  if constexpr (UP) {
    row[0] = row[1] = int64_t(blockIdx.x) * k_up_rows + wg * 32 + warp * 8 + g;
  } else {
    row[0] = int64_t(blockIdx.x) * k_down_rows + wg * 64 + warp * 16 + g;
    row[1] = row[0] + 8;
  }
  const uint8_t* wrow[2];
  const uint8_t* srow[2];
  const bool f32_scale = a.wa.scale_f32;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const fp4_weight& w = UP && i == 1 ? a.wb : a.wa;
    const int64_t r = row[i] < w.rows ? row[i] : w.rows - 1;  // past the end: read, not stored
    wrow[i] = w.data + e * w.matrix_bytes + r * (cols / 2);
    srow[i] = w.scale + (e * w.matrix_scales + r * (cols / 32)) * (f32_scale ? 4 : 1);
  }
  const auto scale_byte = [&](int i, int64_t group) -> int {
    return f32_scale
               ? int((__ldg(reinterpret_cast<const uint32_t*>(srow[i]) + group) >> 23) & 0xFFu)
               : int(__ldg(srow[i] + group));
  };
  float acc[N / 2], blk[N / 2];
#pragma unroll
  for (int j = 0; j < N / 2; ++j) acc[j] = blk[j] = 0.0f;

  const int rounds = int(cols / k_round);
  const int64_t scols = cols / 128;
  const uint32_t sbase = smem_addr(smem);
  const uint32_t wring = sbase + k_stages * k_stage_bytes + tid * 16;
  const auto wslot = [&](int round, int i) {
    return wring + ((round % k_stages) * 2 + i) * (k_threads * 16);
  };
  // This thread's B chunks (N rows x 8 chunks over 256 threads: chunk j of token row n) and
  // token scale (thread n < N): source offsets of round 0 (k_none: a zero fill), fixed per tile
  // (the host keeps them below 2^32 - 1).
  constexpr uint32_t k_none = 0xFFFFFFFFu;
  uint32_t boff[N / 32], bdst[N / 32];
#pragma unroll
  for (int q = 0; q < N / 32; ++q) {
    const int idx = tid + q * k_threads, n = idx >> 3, j = idx & 7;
    const int r = src_row[n];
    boff[q] = r >= 0 ? uint32_t(r) * uint32_t(cols) + 16u * j : k_none;
    bdst[q] = n * 128 + ((j ^ (n & 7)) << 4);
  }
  const uint32_t soff =
      tid < N && src_row[tid] >= 0 ? uint32_t(src_row[tid]) * uint32_t(scols) : k_none;
  const auto issue_weights = [&](int wround) {
#pragma unroll
    for (int i = 0; i < 2; ++i)
      cp_async_cg_16_l2_256(wslot(wround, i), wrow[i] + int64_t(wround) * (k_round / 2) + 16 * c);
  };
  // Round `round`'s B rows and scales and, serial kernel, its weights; pipelined kernel: the
  // weights of rounds round and round + 1 at even rounds (a row's 128 bytes requested together,
  // one whole L2 line; round + 1's slot was freed by the expansion of round + 1 - k_stages, one
  // round before this call).
  const auto issue = [&](int round) {
    if (round < rounds) {
      if constexpr (PIPE) {
        if ((round & 1) == 0) {
          issue_weights(round);
          if (round + 1 < rounds) issue_weights(round + 1);
        }
      } else {
        issue_weights(round);
      }
      const uint32_t st = sbase + (round % k_stages) * k_stage_bytes;
#pragma unroll
      for (int q = 0; q < N / 32; ++q)
        cp_async_cg_16_zfill(st + bdst[q],
                             boff[q] != k_none ? a.bq + boff[q] + uint32_t(round) * k_round : a.bq,
                             boff[q] != k_none ? 16 : 0);
      if (tid < N)
        cp_async_ca_4_zfill(st + k_b_bytes + 4 * tid, soff != k_none ? a.bs + soff + round : a.bs,
                            soff != k_none ? 4 : 0);
    }
    cp_async_commit();  // empty past the end: the group count stays uniform
  };
#pragma unroll
  for (int d = 0; d < k_stages - 1; ++d) issue(d);
  // The rows' bases (while the first rounds' copies are in flight): the largest E8M0 byte over
  // the row (the 4 lanes of a row split it) - 6. E8M0 rows start 4-byte aligned (cols / 32 is a
  // multiple of 4): 4 groups per load, bytes compared with __vmaxu4.
  const int groups = int(cols / 32);
  int emax[2] = {0, 0};
  if (f32_scale) {
#pragma unroll 4
    for (int gi = c; gi < groups; gi += 4)
#pragma unroll
      for (int i = 0; i < 2; ++i) emax[i] = max(emax[i], scale_byte(i, gi));
  } else {
    uint32_t m[2] = {0, 0};
#pragma unroll 4
    for (int wi = c; wi < groups / 4; wi += 4)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        m[i] = __vmaxu4(m[i], __ldg(reinterpret_cast<const uint32_t*>(srow[i]) + wi));
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      m[i] = __vmaxu4(m[i], m[i] >> 16);
      m[i] = __vmaxu4(m[i], m[i] >> 8);
      emax[i] = int(m[i] & 0xFFu);
    }
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    emax[i] = max(emax[i], __shfl_xor_sync(0xffffffffu, emax[i], 1));
    emax[i] = max(emax[i], __shfl_xor_sync(0xffffffffu, emax[i], 2));
  }
  const int base[2] = {emax[0] - 6, emax[1] - 6};
  // A registers of a round: its weight bytes (this thread's ring slot, after its own cp.async
  // wait) expanded with the fold tables of its scale bytes, loaded two rounds ahead (e_conv for
  // the next round to expand, e_next for the one after: L2 latency, as the small L1 left beside
  // the stages rarely keeps them).
  int e_conv[2] = {scale_byte(0, c), scale_byte(1, c)};
  int e_next[2] = {0, 0};
  if (rounds > 1) e_next[0] = scale_byte(0, 4 + c), e_next[1] = scale_byte(1, 4 + c);
  const auto convert = [&](int round, uint32_t(&am)[4][4]) {
    const uint4 wv[2] = {lds_16(wslot(round, 0)), lds_16(wslot(round, 1))};
    const e4m3_table t0 = fold_table(e_conv[0] - base[0]), t1 = fold_table(e_conv[1] - base[1]);
    e_conv[0] = e_next[0], e_conv[1] = e_next[1];
    if (round + 2 < rounds) {
      e_next[0] = scale_byte(0, 4 * (round + 2) + c);
      e_next[1] = scale_byte(1, 4 * (round + 2) + c);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      expand_e2m1x8(word_of(wv[0], s), t0, am[s][0], am[s][2]);
      expand_e2m1x8(word_of(wv[1], s), t1, am[s][1], am[s][3]);
    }
  };
  const auto mma = [&](int round, const uint32_t(&am)[4][4]) {
    const uint32_t st = sbase + (round % k_stages) * k_stage_bytes;
    __syncwarp();
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < 4; ++s)
      wgmma_fp8_rs<N>::run(blk, am[s], wgmma::sw128_desc(st + 32 * s, 16, 1024), s);
    wgmma::commit();
  };
  // Promotion: accumulator j is token 8 (j >> 2) + 2 c + (j & 1).
  const auto promote = [&](int round) {
    wgmma::wait<0>();
#pragma unroll
    for (int j = 0; j < N / 2; ++j) wgmma::reg_fence(blk[j]);
    const float* ts =
        reinterpret_cast<const float*>(smem + (round % k_stages) * k_stage_bytes + k_b_bytes);
#pragma unroll
    for (int q = 0; q < N / 8; ++q) {
      const float2 sc = *reinterpret_cast<const float2*>(ts + 8 * q + 2 * c);
      acc[4 * q] = fmaf(blk[4 * q], sc.x, acc[4 * q]);
      acc[4 * q + 1] = fmaf(blk[4 * q + 1], sc.y, acc[4 * q + 1]);
      acc[4 * q + 2] = fmaf(blk[4 * q + 2], sc.x, acc[4 * q + 2]);
      acc[4 * q + 3] = fmaf(blk[4 * q + 3], sc.y, acc[4 * q + 3]);
    }
  };
  // Round r: wait for this thread's copies of round r, barrier (everyone's; round r - 1's
  // wgmmas and scale reads are done, so its stage and ring slot can be refilled), refill.
  const auto open_round = [&](int r) {
    cp_async_wait<k_stages - 2>();
    wgmma::fence_async_smem();
    __syncthreads();
    issue(r + k_stages - 1);
  };
  if constexpr (!PIPE) {
    for (int r = 0; r < rounds; ++r) {
      open_round(r);
      uint32_t am[4][4];
      convert(r, am);
      mma(r, am);
      promote(r);
    }
  } else {
    // Round r + 1's A registers are expanded while round r's wgmmas run (two register sets,
    // the loop unrolled by two so that each set has fixed registers).
    uint32_t am[2][4][4];
    cp_async_wait<k_stages - 2>();  // this thread's round 0 weights
    convert(0, am[0]);
    const auto body = [&](int r, auto parity) {
      constexpr int p = decltype(parity)::value;
      open_round(r);
      mma(r, am[p]);
      if (r + 1 < rounds) {
        cp_async_wait<k_stages - 2>();  // this thread's round r + 1 copies
        convert(r + 1, am[p ^ 1]);
      }
      promote(r);
    };
    for (int r = 0; r < rounds; r += 2) {
      body(r, std::integral_constant<int, 0>{});
      if (r + 1 < rounds) body(r + 1, std::integral_constant<int, 1>{});
    }
  }
  cp_async_wait<0>();

  w4a8_store_outputs<UP, N>(a, acc, c, ntok, pair_of, row, emax, base, out_rows);
}

// Grid: x = row blocks (L1 k_up_rows h rows, L2 k_down_rows W2 rows), y = tile slots.
template <bool UP, bool PIPE>
__global__ void __launch_bounds__(k_threads, 1) moe_prefill_w4a8_kernel(w4a8_args a) {
#if DSV4_W4A8_WGMMA
  extern __shared__ uint8_t smem_raw[];
  __shared__ int src_row[k_tile];
  __shared__ int pair_of[k_tile];
  const int slot = blockIdx.y;
  if (slot >= *a.tile_count) return;  // uniform over the block
  const int4 tile = a.tiles[slot];
  const int e = tile.x, ntok = tile.z;
  if (threadIdx.x < k_tile) {
    const int p = int(threadIdx.x) < ntok ? a.sorted[tile.y + threadIdx.x] : -1;
    pair_of[threadIdx.x] = p;
    src_row[threadIdx.x] = p < 0 ? -1 : UP ? p / a.top_k : p;
  }
  const uint32_t base = smem_addr(smem_raw);
  uint8_t* smem = smem_raw + ((1024u - (base & 1023u)) & 1023u);
  __syncthreads();
  if (ntok <= 32)
    w4a8_tile<UP, 32, PIPE>(a, e, ntok, src_row, pair_of, smem);
  else if (ntok <= 64)
    w4a8_tile<UP, 64, PIPE>(a, e, ntok, src_row, pair_of, smem);
  else if (ntok <= 96)
    w4a8_tile<UP, 96, PIPE>(a, e, ntok, src_row, pair_of, smem);
  else
    w4a8_tile<UP, 128, PIPE>(a, e, ntok, src_row, pair_of, smem);
#else
  (void)a;
  __trap();
#endif
}

template <bool UP, bool PIPE>
cudaError_t launch_w4a8_gemm(dim3 grid, const w4a8_args& a, cudaStream_t stream) {
  if (const cudaError_t e =
          allow_dynamic_smem(moe_prefill_w4a8_kernel<UP, PIPE>, smem_bytes_for(PIPE));
      e != cudaSuccess)
    return e;
  moe_prefill_w4a8_kernel<UP, PIPE><<<grid, k_threads, smem_bytes_for(PIPE), stream>>>(a);
  return cudaGetLastError();
}

// ---- the warp-specialized persistent kernel (moe_prefill_core::w4a8_ws) ----
//
// 384 threads: warps 0-7 are the two consumer warpgroups of w4a8_tile (same rows, fragments,
// k order, block accumulators and promotion, so the same results bit for bit), warps 8-11 a
// producer warpgroup (setmaxnreg 232 / 40) that fills a ring of k_ws_stages stages with
// cp.async and publishes each one through an mbarrier (full) k_ws_lead rounds after issuing it
// (its own cp.async.wait_group, a proxy fence, then the arrival: attention_decode_ws_kernel's
// pattern); the consumers give a stage back through a second mbarrier (empty, one arrival per
// consumer warp) and never meet in a CTA-wide barrier, so the two warpgroups drift apart and
// one's promotion runs under the other's wgmmas. The grid is persistent (one CTA per SM): work
// items (tile slot, row block), row block fastest, are dealt round-robin over the CTAs and the
// ring runs on across items, so the producer loads the next item while the consumers finish
// the current one's epilogue. Every global read of the main loop moves to the producer: a
// round's stage holds B (token rows, swizzled), the weight bytes in the consumers' per-thread
// slot order, the token scales and the weight rows' scale bytes of the round; the first stage
// of an item also carries a header: ntok, the tile's pair ids and each weight row's largest
// E8M0 byte (computed by the producer thread that owns the row).
//
// Measured (H200, bench_moe_linear --prefill-w4a8, same runs as the other cores; session 7,
// bench/kernels/results/h200_2026-11-26_s7_prefill4_*): parity 15/15 and outputs equal to the
// w4a8 kernel's bit for bit at Flash T = 1024 / 4096 / 8192 and Pro T = 4096; lag 6 (default):
// 122 / 293 / 299 TFLOP/s at Flash T = 1024 / 4096 / 8192 and 294 at Pro T = 4096 (1.03-1.24x
// w4a8, 0.93-1.07x w4a8_serial, 22-25% of cuBLASLt FP8 dense); the noinc scheme (parity 14/14,
// bit for bit at Flash 1024 / 4096 and Pro 4096): 132 / 313 at Flash 1024 / 4096, 313 at Pro
// 4096 (1.01-1.14x w4a8_serial). ncu (lag 6, Flash T = 4096, unlocked clocks ~1.8 GHz): L1
// 2.75 ms, L2 1.10 ms; issue slots 33% / 44%, 3 warps and 0.48 / 0.68 eligible per scheduler,
// DRAM 20% / 30% of peak, tensor ~15% (FLOPs over time), ALU the busiest pipe (21% / 30%); top
// stall the L1TEX scoreboard (41% of the cycles between issues), i.e. the producer in its
// cp.async.wait_group, which the noinc scheme removes. Latency-bound, not bandwidth- or
// issue-bound: each consumer warpgroup still runs wait - expand - 4 wgmma - wait<0> - promote in
// turn (the promotion per 128 k is fixed by the results bit for bit), and both warpgroups wait
// for the same stages, so they tend to run in step instead of hiding each other's promotion.
//
// Session 16 (PREFILL11, H200, bench/kernels/results/2026-11-27_s16_prefill11_NOTES.md): the noinc
// scheme is the default now (main's lag-6 kernel over it: 1.08 / 1.08 / 1.03-1.06x at Flash T =
// 4096 / 8192 and Pro T = 4096), and the consumers form their wgmma descriptors from one base
// with unsigned stage math and mask each weight word once (1.5-4% at lag 6; ~22 fewer of ~245
// issued instructions per round). Diagnostics of the same call (whole official prefill call,
// Flash T = 4096): no E2M1 expansion 1.21x, no promotion 1.00x, no B / weight / any copies 1.02 /
// 1.06 / 1.05x, consumers reduced to the ring protocol (producer unchanged) 1.96x: the producer
// and ring alone need half of today's time, and neither side alone explains the rest.
//
// Tried and removed (session 16, PREFILL12, H200; 2026-11-27_s16_prefill12_NOTES.md, code at
// c32a51c): a converter warpgroup expanding E2M1 into swizzled E4M3 A tiles in shared memory
// (3 slots, ring cut to 6 stages) with SS wgmma in the consumers: bit-equal (parity 12/12 and y
// at Flash T = 4096 / 8192, Pro 4096) but 0.82-0.87x this kernel; two converter warpgroups
// 0.80-0.87x; the converter without the expansion still 0.91-0.95x, so the SS structure itself
// (A written and read through shared memory on top of B, fewer stages) loses before the expansion.
//
// Tried and removed (session 17, PREFILL14, H200; 2026-11-27_s17_prefill14_NOTES.md, code at
// dc37651): for N <= 96 and even round counts, two block accumulators alternating by round with A
// expanded one k32 step at a time (one commit group per step, 8 live A registers), round r - 1
// promoted after round r's first two steps were issued: bit-equal (parity 19/19, y at Flash T =
// 4096 / 8192 and Pro 4096) but 0.95-0.98x this loop (more waits, fences and commits per round;
// the promotion was never the cost: PREFILL11's no-promotion diagnostic measured 0.99-1.00x).
// ptxas (CUDA 13.0) serializes every wgmma of the kernel (C7514) unless the pending groups drain
// to zero between the last wgmma into one block and the first into the other, even when the
// promotion reads only completed blocks.
//
// Tried and removed (session 18, PREFILL18, H200; 2026-11-27_s18_prefill18_NOTES.md, code at
// 34d17e8): four consumer warpgroups (640 threads, setmaxnreg 104 / 64), warpgroup (h, q) taking
// row half q and token half h of the tile (m64n32 / n48 / n64 wgmmas, each weight row expanded
// twice), same producer, stages and bytes: bit-equal (parity 15/15, y at Flash T = 4096 / 8192
// and Pro 4096) but 0.84-0.86x (Flash 4096), 0.82x (Pro 4096), 0.89-0.90x (Flash 8192) this
// kernel; with the next round's loads ahead of the wait 0.80-0.87x. Twice the consumer warps
// per scheduler do not pay for the duplicated expansion and the smaller wgmmas.
// Producer accounting (same notes; estimate): at Flash T = 4096 the producer requests ~8.6 GB
// L2 -> SM per call (B rows 58%: every 128-row item re-reads its tile's activations, weights 37%);
// PREFILL11's ring-only floor (~1.5 ms of GEMM) is ~5.7 TB/s of it, so more weight rows per B
// stage (or B shared across a cluster) is what raises that floor; not measured which of L2
// bandwidth or the producer's instructions sets it (diagnostics prepared at 6980b8a, not run).
constexpr int k_ws_threads = 384;
constexpr int k_ws_consumer_threads = 256;
constexpr int k_ws_stages = 8;
// LEAD 0 (default): the noinc scheme of ws_produce_item (each round published by the copies'
// own mbarrier arrivals). LEAD > 0 (DSV4_W4A8_WS_LEAD=6 in the environment, A/B only): a round
// is published by the producer once LEAD newer ones were issued (LEAD + 1 rounds in flight while
// it waits for the oldest); session 16 measured it 0.93-0.97x the noinc scheme on an H200, and
// LEAD 4 in between (session 7 measured lag 4 only in its first version, without coalesced
// weight copies: 1.05 / 0.99x w4a8_serial at Flash / Pro T = 4096).
constexpr int k_ws_lead = 6;
constexpr int k_ws_producer_regs = 104, k_ws_consumer_regs = 200;
// Stage layout (bytes).
constexpr int k_ws_b = 0;                           // N token rows x 128 E4M3, swizzled
constexpr int k_ws_w = k_b_bytes;                   // 2 x 256 x 16 weight bytes
constexpr int k_ws_ts = k_ws_w + k_wround_bytes;    // 128 token scales (f32)
constexpr int k_ws_ws = k_ws_ts + 512;              // 128 rows x 16 bytes of scales
constexpr int k_ws_hdr_emax = k_ws_ws + 128 * 16;   // 128 ints: largest scale byte per row
constexpr int k_ws_hdr_pair = k_ws_hdr_emax + 512;  // 128 ints: pair ids (-1 past ntok)
constexpr int k_ws_hdr_ntok = k_ws_hdr_pair + 512;  // 1 int
constexpr int k_ws_stage_bytes = (k_ws_hdr_ntok + 16 + 1023) / 1024 * 1024;
constexpr int k_ws_pbuf = k_ws_stages * k_ws_stage_bytes;          // 2 x 128 ints (per consumer WG)
constexpr int k_ws_bars = k_ws_pbuf + 2 * 128 * 4;                 // full[stages], empty[stages]
constexpr int k_ws_smem = k_ws_bars + 2 * k_ws_stages * 8 + 1024;  // + alignment slack
static_assert(k_ws_stage_bytes == 28 * 1024 && k_ws_smem <= 227 * 1024, "stage layout");

using mbar::named_sync;

// A work item: tile slot w / row_blocks, row block w % row_blocks.
struct ws_ring {
  uint32_t smem;  // the 1024-aligned base (stage 0)
  uint32_t full;  // full[0]; empty[0] = full + 8 * k_ws_stages
  uint8_t* gen;   // the same base as a generic pointer
};

// Producer thread p (0..127) owns weight row slot p: consumer warp p / 16 (warpgroup p / 64,
// warp (p / 16) % 4), fragment row i = (p / 8) % 2 (0: g, 1: g + 8), g = p % 8; its 64 bytes of a
// round go to the 4 consumer lanes 4 g .. 4 g + 3 of that warp (slot order of w4a8_tile), its
// scale bytes to row p of the stage's scale area. B chunk column j = p % 8 of token rows
// p / 8 + 16 q.
// LEAD 0: every producer thread arrives twice per round on full (count 256): a plain arrival
// (publishes the header's stores) and cp.async.mbarrier.arrive.noinc once its copies landed;
// the consumers then fence the async proxy after each wait (the default since session 16).
// next: the next item's tile (x < 0: none) and row block, whose scale rows and pair ids are
// prefetched into L2 during this item's second round.
template <bool UP, int N, int LEAD>
__device__ __forceinline__ void ws_produce_item(const w4a8_args& a, const ws_ring& ring, int p,
                                                int& k, int e, int rb, int tile_y, int ntok,
                                                int rounds, int4 next, int next_rb) {
  const int64_t cols = a.wa.cols;
  const int64_t scols = cols / 128;
  const bool f32_scale = a.wa.scale_f32;
  // Row slot rs (0..127): its global row (clamped: past the end it is read, not stored).
  const auto slot_row = [&](int rs, const fp4_weight*& w) -> int64_t {
    const int wgw = rs >> 4, i = (rs >> 3) & 1, g = rs & 7, wg = wgw >> 2, warp = wgw & 3;
    int64_t row;
    if constexpr (UP)
      row = int64_t(rb) * k_up_rows + wg * 32 + warp * 8 + g;
    else
      row = int64_t(rb) * k_down_rows + wg * 64 + warp * 16 + g + 8 * i;
    w = UP && i == 1 ? &a.wb : &a.wa;
    return row < w->rows ? row : w->rows - 1;
  };
  // Weight copies, coalesced: instruction q of producer warp p / 32 copies rows
  // 32 (p / 32) + 8 q + lane / 4, 16 bytes each (lane % 4), a row's 64 bytes by 4 adjacent lanes.
  const uint8_t* wsrc[4];
  uint32_t wdst[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int rs = 32 * (p >> 5) + 8 * q + ((p & 31) >> 2), cq = p & 3;
    const fp4_weight* w;
    const int64_t r = slot_row(rs, w);
    wsrc[q] = w->data + e * w->matrix_bytes + r * (cols / 2) + 16 * cq;
    wdst[q] = k_ws_w + ((rs >> 3) & 1) * (k_threads * 16) + ((rs >> 4) * 32 + 4 * (rs & 7)) * 16 +
              16 * cq;
  }
  // This thread's own row slot p: its scale bytes (per round, and the largest for the header).
  const fp4_weight* wp;
  const int64_t rp = slot_row(p, wp);
  const uint8_t* srow =
      wp->scale + (e * wp->matrix_scales + rp * (cols / 32)) * (f32_scale ? 4 : 1);
  const uint32_t sdst = k_ws_ws + p * 16;
  // The row's largest scale byte (global loads before the first stage is free).
  int emax = 0;
  {
    const uint32_t* s32 = reinterpret_cast<const uint32_t*>(srow);
    if (f32_scale) {
      const int n = int(cols / 32);
#pragma unroll 16
      for (int q = 0; q < n; ++q) emax = max(emax, int((__ldg(s32 + q) >> 23) & 0xFFu));
    } else {
      const int n = int(cols / 128);
      uint32_t m = 0;
#pragma unroll 16
      for (int q = 0; q < n; ++q) m = __vmaxu4(m, __ldg(s32 + q));
      m = __vmaxu4(m, m >> 16);
      m = __vmaxu4(m, m >> 8);
      emax = int(m & 0xFFu);
    }
  }
  const int pair = p < ntok ? a.sorted[tile_y + p] : -1;
  constexpr uint32_t k_none = 0xFFFFFFFFu;
  constexpr int nq = N / 16;
  uint32_t boff[nq];
  uint32_t soff = k_none;
  const int j = p & 7;
  for (int rr = 0; rr < rounds; ++rr) {
    const int kk = k + rr;
    if (LEAD > 0 && kk >= LEAD) {
      cp_async_wait<LEAD - 1>();
      wgmma::fence_async_smem();
      mbar::arrive(ring.full + 8 * ((kk - LEAD) % k_ws_stages));
    }
    const int stage = kk % k_ws_stages;
    if (kk >= k_ws_stages)
      mbar::wait(ring.full + 8 * (k_ws_stages + stage), uint32_t(kk / k_ws_stages - 1) & 1u);
    const uint32_t st = ring.smem + uint32_t(stage) * k_ws_stage_bytes;
    if (rr == 0) {
      // The header, then this thread's B rows from it (the producers' named barrier 3).
      uint8_t* hs = ring.gen + stage * k_ws_stage_bytes;
      reinterpret_cast<int*>(hs + k_ws_hdr_emax)[p] = emax;
      reinterpret_cast<int*>(hs + k_ws_hdr_pair)[p] = pair;
      if (p == 0) *reinterpret_cast<int*>(hs + k_ws_hdr_ntok) = ntok;
      named_sync(3, 128);
      const int* hp = reinterpret_cast<const int*>(hs + k_ws_hdr_pair);
#pragma unroll
      for (int q = 0; q < nq; ++q) {
        const int pq = hp[(p >> 3) + 16 * q];
        const int src = pq < 0 ? -1 : UP ? pq / a.top_k : pq;
        boff[q] = src >= 0 ? uint32_t(src) * uint32_t(cols) + 16u * j : k_none;
      }
      if (p < N) {
        const int pq = hp[p];
        const int src = pq < 0 ? -1 : UP ? pq / a.top_k : pq;
        soff = src >= 0 ? uint32_t(src) * uint32_t(scols) : k_none;
      }
      named_sync(3, 128);  // every producer read the pair ids before a later header's writes
    }
    // Weights: 64 bytes of the row (the L2 prefetch as w4a8_tile), its 4 scale bytes (16 f32).
#pragma unroll
    for (int q = 0; q < 4; ++q)
      cp_async_cg_16_l2_256(st + wdst[q], wsrc[q] + int64_t(rr) * (k_round / 2));
    if (f32_scale)
      cp_async_cg_16_zfill(st + sdst, srow + int64_t(rr) * 16, 16);
    else
      cp_async_ca_4_zfill(st + sdst, srow + int64_t(rr) * 4, 4);
#pragma unroll
    for (int q = 0; q < nq; ++q) {
      const int n = (p >> 3) + 16 * q;
      cp_async_cg_16_zfill(st + k_ws_b + n * 128 + ((j ^ (n & 7)) << 4),
                           boff[q] != k_none ? a.bq + boff[q] + uint32_t(rr) * k_round : a.bq,
                           boff[q] != k_none ? 16 : 0);
    }
    if (p < N)
      cp_async_ca_4_zfill(st + k_ws_ts + 4 * p, soff != k_none ? a.bs + soff + rr : a.bs,
                          soff != k_none ? 4 : 0);
    if constexpr (LEAD == 0) {
      const uint32_t bar = ring.full + 8 * stage;
      mbar::arrive(bar);
      cp_async_mbarrier_arrive_noinc(bar);
    } else {
      cp_async_commit();
    }
    if (rr == 1 && next.x >= 0) {
      // The next item's scale row of this thread's row slot and its pair id, into L2.
      const int64_t nrow = UP ? int64_t(next_rb) * k_up_rows + (rp - int64_t(rb) * k_up_rows)
                              : int64_t(next_rb) * k_down_rows + (rp - int64_t(rb) * k_down_rows);
      const fp4_weight& nw = *wp;
      const int64_t nr = nrow < nw.rows ? nrow : nw.rows - 1;
      const uint8_t* nsrow =
          nw.scale + (next.x * nw.matrix_scales + nr * (cols / 32)) * (f32_scale ? 4 : 1);
      const int bytes = int(cols / 32) * (f32_scale ? 4 : 1);
      for (int off = 0; off < bytes + 127; off += 128)
        asm volatile("prefetch.global.L2 [%0];\n" ::"l"(nsrow + (off < bytes ? off : bytes - 1)));
      if (p < next.z) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(a.sorted + next.y + p));
    }
  }
  k += rounds;
}

template <bool UP, int N, bool NOINC>
__device__ __forceinline__ void ws_consume_item(const w4a8_args& a, const ws_ring& ring, int& k,
                                                int rb, int rounds) {
  const int tid = threadIdx.x, lane = tid % k_warp_size, g = lane / 4, c = lane % 4;
  const int wg = tid / 128, warp = (tid / k_warp_size) % 4;
  const int64_t out_rows = a.wa.rows;
  int64_t row[2];
  if constexpr (UP) {
    row[0] = row[1] = int64_t(rb) * k_up_rows + wg * 32 + warp * 8 + g;
  } else {
    row[0] = int64_t(rb) * k_down_rows + wg * 64 + warp * 16 + g;
    row[1] = row[0] + 8;
  }
  // Row slots of the producer's layout: 16 (4 wg + warp) + 8 i + g.
  const int rs0 = 16 * (wg * 4 + warp) + g;
  const bool f32_scale = a.wa.scale_f32;
  // kk >= 0: unsigned stage / parity math (no signed-division fix-ups in the round).
  const auto stage_of = [&](int kk) { return int(uint32_t(kk) % uint32_t(k_ws_stages)); };
  const auto wait_full = [&](int kk) {
    mbar::wait(ring.full + 8 * stage_of(kk), (uint32_t(kk) / uint32_t(k_ws_stages)) & 1u);
    if constexpr (NOINC) wgmma::fence_async_smem();
  };
  // The header (stage of round k, already waited for by the caller).
  const uint8_t* hs = ring.gen + stage_of(k) * k_ws_stage_bytes;
  const int ntok = *reinterpret_cast<const int*>(hs + k_ws_hdr_ntok);
  int emax[2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
    emax[i] = reinterpret_cast<const int*>(hs + k_ws_hdr_emax)[rs0 + 8 * i];
  const int base[2] = {emax[0] - 6, emax[1] - 6};
  int* pbuf = reinterpret_cast<int*>(ring.gen + k_ws_pbuf) + 128 * wg;
  named_sync(1 + wg, 128);  // this warpgroup's previous epilogue read its pair ids
  pbuf[tid % 128] = reinterpret_cast<const int*>(hs + k_ws_hdr_pair)[tid % 128];

  float acc[N / 2], blk[N / 2];
#pragma unroll
  for (int jj = 0; jj < N / 2; ++jj) acc[jj] = blk[jj] = 0.0f;
  const auto scale_of = [&](uint32_t st, int i) -> int {
    const uint32_t addr = st + k_ws_ws + (rs0 + 8 * i) * 16;
    if (f32_scale) {
      uint32_t v;
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr + 4 * c) : "memory");
      return int((v >> 23) & 0xFFu);
    }
    uint32_t v;
    asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(addr + c) : "memory");
    return int(v);
  };
  const auto convert = [&](int kk, uint32_t(&am)[4][4]) {
    const uint32_t st = ring.smem + stage_of(kk) * k_ws_stage_bytes;
    const uint32_t wl = st + k_ws_w + tid * 16;
    const uint4 wv[2] = {lds_16(wl), lds_16(wl + k_threads * 16)};
    const e4m3_table t0 = fold_table(scale_of(st, 0) - base[0]),
                     t1 = fold_table(scale_of(st, 1) - base[1]);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      expand_e2m1x8(word_of(wv[0], s), t0, am[s][0], am[s][2]);
      expand_e2m1x8(word_of(wv[1], s), t1, am[s][1], am[s][3]);
    }
  };
  // Descriptors from one base: sw128_desc's low word holds address / 16 (and the leading byte
  // offset), its high word is the same for every stage; the ring lies below 256 KB, so adding
  // stage * stage_bytes / 16 + 2 s (32 bytes per k32 step) to the low word cannot carry out of
  // the 14-bit address field.
  const uint64_t desc0 = wgmma::sw128_desc(ring.smem + k_ws_b, 16, 1024);
  const uint32_t desc_lo0 = uint32_t(desc0), desc_hi = uint32_t(desc0 >> 32);
  const auto mma = [&](int kk, const uint32_t(&am)[4][4]) {
    const uint32_t dlo = desc_lo0 + uint32_t(stage_of(kk)) * (k_ws_stage_bytes >> 4);
    __syncwarp();
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < 4; ++s)
      wgmma_fp8_rs<N>::run(blk, am[s], (uint64_t(desc_hi) << 32) | (dlo + 2u * s), s);
    wgmma::commit();
  };
  const auto promote_release = [&](int kk) {
    wgmma::wait<0>();
#pragma unroll
    for (int jj = 0; jj < N / 2; ++jj) wgmma::reg_fence(blk[jj]);
    const float* ts =
        reinterpret_cast<const float*>(ring.gen + stage_of(kk) * k_ws_stage_bytes + k_ws_ts);
#pragma unroll
    for (int q = 0; q < N / 8; ++q) {
      const float2 sc = *reinterpret_cast<const float2*>(ts + 8 * q + 2 * c);
      acc[4 * q] = fmaf(blk[4 * q], sc.x, acc[4 * q]);
      acc[4 * q + 1] = fmaf(blk[4 * q + 1], sc.y, acc[4 * q + 1]);
      acc[4 * q + 2] = fmaf(blk[4 * q + 2], sc.x, acc[4 * q + 2]);
      acc[4 * q + 3] = fmaf(blk[4 * q + 3], sc.y, acc[4 * q + 3]);
    }
    __syncwarp();
    if (lane == 0) mbar::arrive(ring.full + 8 * (k_ws_stages + stage_of(kk)));
  };
  uint32_t am[2][4][4];
  convert(k, am[0]);
  const auto body = [&](int r, auto parity) {
    constexpr int pp = decltype(parity)::value;
    mma(k + r, am[pp]);
    if (r + 1 < rounds) {
      wait_full(k + r + 1);
      convert(k + r + 1, am[pp ^ 1]);
    }
    promote_release(k + r);
  };
  for (int r = 0; r < rounds; r += 2) {
    body(r, std::integral_constant<int, 0>{});
    if (r + 1 < rounds) body(r + 1, std::integral_constant<int, 1>{});
  }
  k += rounds;

  named_sync(1 + wg, 128);  // the pair ids of this warpgroup are written
  w4a8_store_outputs<UP, N>(a, acc, c, ntok, pbuf, row, emax, base, out_rows);
}

template <bool UP, int LEAD>
__global__ void __launch_bounds__(k_ws_threads, 1)
    moe_prefill_w4a8_ws_kernel(w4a8_args a, int row_blocks) {
  static_assert(LEAD >= 0 && LEAD <= k_ws_stages - 2,
                "the consumers hold round r while they wait for round r + 1");
#if DSV4_W4A8_WGMMA
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t pad = (1024u - (raw & 1023u)) & 1023u;
  const ws_ring ring{raw + pad, raw + pad + k_ws_bars, smem_raw + pad};
  const int items = *a.tile_count * row_blocks;
  if (int(blockIdx.x) >= items) return;  // uniform over the block
  if (threadIdx.x == 0) {
    for (int s = 0; s < k_ws_stages; ++s) {
      mbar::init(ring.full + 8 * s, LEAD == 0 ? 256 : 128);  // every producer thread
      mbar::init(ring.full + 8 * (k_ws_stages + s), k_ws_consumer_threads / k_warp_size);
    }
  }
  __syncthreads();
  const int rounds = int(a.wa.cols / k_round);
  int k = 0;
  if (threadIdx.x >= k_ws_consumer_threads) {
    mbar::setmaxnreg_dec<k_ws_producer_regs>();
    const int p = int(threadIdx.x) - k_ws_consumer_threads;
    int4 tile = a.tiles[blockIdx.x / row_blocks];
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int rb = w % row_blocks;
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      // The next item's tile, loaded one item ahead (x = -1: none).
      tile = wn < items ? a.tiles[wn / row_blocks] : make_int4(-1, 0, 0, 0);
      const int nrb = wn % row_blocks;
      const int e = cur.x, ntok = cur.z;
      if (ntok <= 32)
        ws_produce_item<UP, 32, LEAD>(a, ring, p, k, e, rb, cur.y, ntok, rounds, tile, nrb);
      else if (ntok <= 64)
        ws_produce_item<UP, 64, LEAD>(a, ring, p, k, e, rb, cur.y, ntok, rounds, tile, nrb);
      else if (ntok <= 96)
        ws_produce_item<UP, 96, LEAD>(a, ring, p, k, e, rb, cur.y, ntok, rounds, tile, nrb);
      else
        ws_produce_item<UP, 128, LEAD>(a, ring, p, k, e, rb, cur.y, ntok, rounds, tile, nrb);
    }
    if constexpr (LEAD > 0) {
      cp_async_wait<0>();
      wgmma::fence_async_smem();
      for (int kk = max(0, k - LEAD); kk < k; ++kk)
        mbar::arrive(ring.full + 8 * (kk % k_ws_stages));
    } else {
      cp_async_wait_all();
    }
  } else {
    mbar::setmaxnreg_inc<k_ws_consumer_regs>();
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int rb = w % row_blocks;
      mbar::wait(ring.full + 8 * (k % k_ws_stages), uint32_t(k / k_ws_stages) & 1u);
      if constexpr (LEAD == 0) wgmma::fence_async_smem();
      const int ntok = *reinterpret_cast<const int*>(
          ring.gen + (k % k_ws_stages) * k_ws_stage_bytes + k_ws_hdr_ntok);
      if (ntok <= 32)
        ws_consume_item<UP, 32, LEAD == 0>(a, ring, k, rb, rounds);
      else if (ntok <= 64)
        ws_consume_item<UP, 64, LEAD == 0>(a, ring, k, rb, rounds);
      else if (ntok <= 96)
        ws_consume_item<UP, 96, LEAD == 0>(a, ring, k, rb, rounds);
      else
        ws_consume_item<UP, 128, LEAD == 0>(a, ring, k, rb, rounds);
    }
  }
#else
  (void)a;
  (void)row_blocks;
  __trap();
#endif
}

template <bool UP, int LEAD>
cudaError_t launch_w4a8_ws_lead(int64_t row_blocks, int64_t tile_slots, const w4a8_args& a,
                                cudaStream_t stream) {
  if (const cudaError_t e = allow_dynamic_smem(moe_prefill_w4a8_ws_kernel<UP, LEAD>, k_ws_smem);
      e != cudaSuccess)
    return e;
  const int sms = current_device_sm_count();
  const int64_t items = row_blocks * tile_slots;
  if (items == 0) return cudaSuccess;
  const unsigned grid = unsigned(items < sms ? items : sms);
  moe_prefill_w4a8_ws_kernel<UP, LEAD>
      <<<grid, k_ws_threads, k_ws_smem, stream>>>(a, int(row_blocks));
  return cudaGetLastError();
}

template <bool UP>
cudaError_t launch_w4a8_ws_gemm(int64_t row_blocks, int64_t tile_slots, const w4a8_args& a,
                                cudaStream_t stream) {
  static const int lead = [] {
    const char* v = std::getenv("DSV4_W4A8_WS_LEAD");
    return v ? std::atoi(v) : 0;
  }();
  return lead == 0 ? launch_w4a8_ws_lead<UP, 0>(row_blocks, tile_slots, a, stream)
                   : launch_w4a8_ws_lead<UP, k_ws_lead>(row_blocks, tile_slots, a, stream);
}

template <typename in_t>
cudaError_t launch_quantize(const in_t* src, int64_t rows, int64_t cols, const int32_t* indices,
                            int64_t experts, uint8_t* q, float* scales, cudaStream_t stream) {
  const int64_t items = rows * (cols / 128);
  if (items == 0) return cudaSuccess;
  w4a8_quantize_kernel<in_t><<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
      src, rows, cols, indices, experts, q, scales);
  return cudaGetLastError();
}

// The fast quantize (U = 4 where cols / 128 allows it) unless moe_prefill_nongemm_old() has bit 4.
template <typename in_t, bool H>
cudaError_t launch_quantize_any(const in_t* src, int64_t rows, int64_t cols, const int32_t* indices,
                                int64_t experts, uint8_t* q, float* scales, bool fast,
                                cudaStream_t stream) {
  if (!fast) return launch_quantize<in_t>(src, rows, cols, indices, experts, q, scales, stream);
  const int64_t items = rows * (cols / 128);
  if (items == 0) return cudaSuccess;
  if ((cols / 128) % 4 == 0)
    w4a8_quantize_fast_kernel<in_t, 4, H>
        <<<unsigned(ceil_div(items / 4, 256 / k_warp_size)), 256, 0, stream>>>(
            src, rows, cols, indices, experts, q, scales);
  else
    w4a8_quantize_fast_kernel<in_t, 1, H>
        <<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(src, rows, cols, indices,
                                                                           experts, q, scales);
  return cudaGetLastError();
}

}  // namespace

size_t w4a8_workspace_bytes(int64_t tokens, int64_t top_k, int64_t hidden, int64_t inter) {
  return make_q_layout(tokens, top_k, hidden, inter).total;
}

template <typename act_t>
cudaError_t launch_w4a8_gemms(const act_t* x, int64_t tokens, int64_t top_k,
                              const device_weight& w1, const device_weight& w3,
                              const device_weight& w2, float limit, const int* tile_count,
                              const int4* tiles, const int* sorted, int64_t tile_slots,
                              const float* pair_weights, const int32_t* indices, int64_t pairs,
                              float* h, float* out, void* q, w4a8_kernel kernel,
                              cudaStream_t stream) {
  const bool pipelined = kernel == w4a8_kernel::pipelined;
  const bool ws = kernel == w4a8_kernel::warp_specialized;
  const int64_t hidden = w1.cols, inter = w1.rows;
  // B source offsets are 32-bit (w4a8_tile), k_none reserved.
  if (tokens * hidden >= int64_t(UINT32_MAX) || pairs * inter >= int64_t(UINT32_MAX))
    return cudaErrorInvalidValue;
  const q_layout l = make_q_layout(tokens, top_k, hidden, inter);
  auto* qb = static_cast<uint8_t*>(q);
  uint8_t* xq = qb + l.xq;
  float* xs = reinterpret_cast<float*>(qb + l.xs);
  uint8_t* hq = qb + l.hq;
  float* hs = reinterpret_cast<float*>(qb + l.hs);
  const int old = moe_prefill_nongemm_old();
  const bool h16 = (old & 2) == 0, fast = (old & 4) == 0;
  if (const cudaError_t e =
          launch_quantize_any<act_t, false>(x, tokens, hidden, nullptr, 0, xq, xs, fast, stream);
      e != cudaSuccess)
    return e;
  w4a8_args a{};
  a.top_k = int(top_k);
  a.tile_count = tile_count;
  a.tiles = tiles;
  a.sorted = sorted;
  a.limit = limit;
  a.bq = xq;
  a.bs = xs;
  a.wa = make_fp4_weight(w1);
  a.wb = make_fp4_weight(w3);
  a.pair_weights = pair_weights;
  a.dst = h;
  a.h16 = h16 ? reinterpret_cast<uint16_t*>(h) : nullptr;
  const dim3 grid1(unsigned(ceil_div(inter, k_up_rows)), unsigned(tile_slots));
  if (const cudaError_t e = ws          ? launch_w4a8_ws_gemm<true>(grid1.x, tile_slots, a, stream)
                            : pipelined ? launch_w4a8_gemm<true, true>(grid1, a, stream)
                                        : launch_w4a8_gemm<true, false>(grid1, a, stream);
      e != cudaSuccess)
    return e;
  if (const cudaError_t e = h16 ? launch_quantize_any<__nv_bfloat16, true>(
                                      reinterpret_cast<const __nv_bfloat16*>(h), pairs, inter,
                                      indices, w1.count, hq, hs, fast, stream)
                                : launch_quantize_any<float, true>(h, pairs, inter, indices,
                                                                   w1.count, hq, hs, fast, stream);
      e != cudaSuccess)
    return e;
  a.h16 = nullptr;
  a.bq = hq;
  a.bs = hs;
  a.wa = a.wb = make_fp4_weight(w2);
  a.pair_weights = nullptr;
  a.dst = out;
  const dim3 grid2(unsigned(ceil_div(hidden, k_down_rows)), unsigned(tile_slots));
  if (ws) return launch_w4a8_ws_gemm<false>(grid2.x, tile_slots, a, stream);
  return pipelined ? launch_w4a8_gemm<false, true>(grid2, a, stream)
                   : launch_w4a8_gemm<false, false>(grid2, a, stream);
}

template cudaError_t launch_w4a8_gemms<float>(const float*, int64_t, int64_t, const device_weight&,
                                              const device_weight&, const device_weight&, float,
                                              const int*, const int4*, const int*, int64_t,
                                              const float*, const int32_t*, int64_t, float*, float*,
                                              void*, w4a8_kernel, cudaStream_t);
template cudaError_t launch_w4a8_gemms<__nv_bfloat16>(const __nv_bfloat16*, int64_t, int64_t,
                                                      const device_weight&, const device_weight&,
                                                      const device_weight&, float, const int*,
                                                      const int4*, const int*, int64_t,
                                                      const float*, const int32_t*, int64_t, float*,
                                                      float*, void*, w4a8_kernel, cudaStream_t);

}  // namespace dsv4::cuda::prefill
