// W8A8 linear on wgmma for 9-64 tokens (see linear_w8a8_wgmma.h).
//
// Shared memory: a ring of stages, each one 128-k block of one 128-row tile:
//   [0, 16384)            weights, 128 rows x 128 bytes, TMA SWIZZLE_128B (16-byte chunk c of
//                         row r at chunk c ^ (r % 8); the stage base is 1024-byte aligned)
//   [16384, +N * 128)     activation codes, N token rows x 128 bytes, the same swizzle (written
//                         so by the quantize launch, copied as is)
//   [.., +N * 4)          activation scales s_x(t, b), f32
//   [.., +32)             per consumer warpgroup, the 16-byte aligned global chunk holding its
//                         rows' weight scale
// then the full / empty mbarriers and a flag word. Every copy of a stage completes as transaction
// bytes on its full barrier (one arrival: the producer's expect_tx); each of the 8 consumer warps
// arrives on its empty barrier once its MMAs and scale reads of the stage are done.
//
// wgmma m64nNk32 SS: A = the warpgroup's 64 weight rows (descriptor start + 32 bytes per k32
// step: inside a 128-byte swizzled row the hardware applies the XOR to the full address), B = the
// N token rows, both K-major, stride 1024 bytes between 8-row groups.
#include <cuda.h>  // CUtensorMap (the type only: encoded through the runtime's driver entry point)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <type_traits>

#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/linear_w8a8_wgmma.h"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/pdl.cuh"
#include "backends/cuda/quantize.h"
#include "backends/cuda/tensor_map.h"
#include "backends/cuda/tma.cuh"
#include "backends/cuda/weight_decode.cuh"
#include "backends/cuda/wgmma_common.cuh"
#include "backends/cuda/wgmma_fp8_ss.cuh"

namespace dsv4::cuda {

namespace {

constexpr int k_kb = 128;           // k per block: one scale block
constexpr int k_smem_max = 232448;  // sm_90 opt-in dynamic shared memory per block
// Two consumer warpgroups of 64 rows each (a 128-row tile: one scale block) and a producer
// warpgroup. (Tiles of 192 and 256 rows, three and four consumer warpgroups, were no faster than
// these with the K split of linear_w8a8_wgmma_default_plan: H100, session 26 call w8a8w r1.)
// Register split: the CTA gets the launch bound's cap per thread (ptxas allocates it when the
// kernel has setmaxnreg: 168 at 384 threads) and setmaxnreg.inc can only take what the producer's
// .dec gave back (it blocks otherwise): 384 x 168 = 128 x 40 + 256 x 232.
template <int N>
struct layout {
  static_assert(N % 16 == 0 && N >= 16 && N <= 64);
  static constexpr int tile_rows = 128;
  static constexpr int threads = 384;
  static constexpr int consumers = 256;
  static constexpr int producer_regs = 40;
  static constexpr int consumer_regs = 232;
  static constexpr int w_bytes = tile_rows * k_kb;  // weights of a stage
  // One weight-scale chunk per consumer warpgroup (the scale block of its 64 rows; both the same
  // block here, the form that was measured).
  static constexpr int scale_chunks = 2;
  static constexpr int x_off = w_bytes;
  static constexpr int sx_off = x_off + N * 128;
  static constexpr int ws_off = sx_off + N * 4;  // 16-byte aligned: N * 132 % 16 == 0
  static constexpr int x_copy = N * 132;         // codes + scales of a block, one bulk copy
  static constexpr int stage = (ws_off + 16 * scale_chunks + 1023) / 1024 * 1024;
  static constexpr int stages = std::min(12, (k_smem_max - 1024 - 256) / stage);
  static constexpr int smem = stages * stage + 1024 + 256;  // alignment slack, barriers, flag
  static_assert(2 * stages * 8 + 4 <= 256);
};

struct gemm_params {
  const uint8_t* xt;      // [kblocks][N * 132]: swizzled codes, then the N scales
  const uint8_t* wscale;  // weight scales [ceil(rows / 128)][kblocks] of scale_bytes each
  int scale_bytes;        // 1 (E8M0) or 4 (f32)
  int rows, row_blocks, kblocks, k_parts, items, tokens;  // row_blocks: ceil(rows / 128)
  void* y;
  int y_bf16;
  float* partial;  // [items][N / 2][256] (k_parts > 1)
  int* counters;   // [tiles], zeroed by the quantize launch
};

// The (item, k block) sequence of one CTA: items blockIdx.x, + gridDim.x, ...; item = tile *
// k_parts + part, part p covering blocks [kblocks p / k_parts, kblocks (p + 1) / k_parts) (never
// empty: k_parts <= kblocks).
struct step_iter {
  int item, tile, kb, kb_end;
  __device__ __forceinline__ void range(const gemm_params& p) {
    if (item >= p.items) return;
    tile = item / p.k_parts;
    const int part = item % p.k_parts;
    kb = int(int64_t(p.kblocks) * part / p.k_parts);
    kb_end = int(int64_t(p.kblocks) * (part + 1) / p.k_parts);
  }
  __device__ __forceinline__ bool valid(const gemm_params& p) const { return item < p.items; }
  __device__ __forceinline__ void next(const gemm_params& p) {
    if (++kb == kb_end) {
      item += gridDim.x;
      range(p);
    }
  }
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

// The weight scale of 128-row block rb (clamped: a tile's second block may lie past the rows, whose
// weights read as zeros and are never stored) at k block kb. The producer copies the 16-byte
// aligned chunk holding it (a bulk copy needs 16-byte alignment): up to 15 bytes before the array's
// start or past its end, which the layout contract of linear_w8a8_wgmma.h keeps inside its
// allocation.
__device__ __forceinline__ const uint8_t* scale_at(const gemm_params& p, int rb, int kb) {
  return p.wscale + (int64_t(min(rb, p.row_blocks - 1)) * p.kblocks + kb) * p.scale_bytes;
}

template <int N>
__device__ __forceinline__ void produce(const CUtensorMap* wmap, const gemm_params& p,
                                        uint32_t base, uint32_t bars) {
  using L = layout<N>;
  tma::prefetch_map(wmap);
  const auto issue_w = [&](int n, const step_iter& it) {
    const int s = n % L::stages;
    const uint32_t st = base + uint32_t(s * L::stage), full = bars + 8 * s;
    mbar::arrive_expect_tx(full, uint32_t(L::w_bytes + L::x_copy + 16 * L::scale_chunks));
    tma::g2s_2d(st, wmap, it.kb * k_kb, it.tile * L::tile_rows, full);
#pragma unroll
    for (int j = 0; j < L::scale_chunks; ++j) {
      const uint8_t* sc = scale_at(p, (it.tile * L::tile_rows + 64 * j) / 128, it.kb);
      mbar::bulk_g2s(st + L::ws_off + 16 * j,
                     reinterpret_cast<const void*>(uintptr_t(sc) & ~uintptr_t(15)), 16, full);
    }
  };
  const auto issue_x = [&](int n, const step_iter& it) {
    const int s = n % L::stages;
    mbar::bulk_g2s(base + uint32_t(s * L::stage + L::x_off), p.xt + int64_t(it.kb) * L::x_copy,
                   L::x_copy, bars + 8 * s);
  };
  step_iter it{int(blockIdx.x)}, xi{int(blockIdx.x)};
  it.range(p);
  xi.range(p);
  // Weights never depend on earlier launches: the first stages' weights go out before the wait on
  // the previous launch (the quantize launch writes the activations).
  int n = 0;
  for (; n < L::stages && it.valid(p); ++n, it.next(p)) issue_w(n, it);
  pdl_wait();
  for (int m = 0; m < n; ++m, xi.next(p)) issue_x(m, xi);
  for (; it.valid(p); ++n, it.next(p)) {
    const int s = n % L::stages;
    mbar::wait(bars + 8 * (L::stages + s), uint32_t(n / L::stages - 1) & 1u);
    issue_w(n, it);
    issue_x(n, it);
  }
}

template <int N>
__device__ __forceinline__ void store_y(const gemm_params& p, const float (&v)[N / 2], int r_lo,
                                        int c) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int t = 8 * j + 2 * c + e, r = r_lo + 8 * h;
        if (t >= p.tokens || r >= p.rows) continue;
        const int64_t at = int64_t(t) * p.rows + r;
        const float x = v[4 * j + 2 * h + e];
        if (p.y_bf16)
          static_cast<__nv_bfloat16*>(p.y)[at] = __float2bfloat16_rn(x);
        else
          static_cast<float*>(p.y)[at] = x;
      }
}

template <int N>
__device__ __forceinline__ void consume(const gemm_params& p, uint32_t base, uint8_t* gbase,
                                        uint32_t bars, volatile int* flag) {
  using L = layout<N>;
  const int ct = int(threadIdx.x) - 128;
  const int cwg = ct / 128, warp = (ct % 128) / 32, lane = ct % 32, g = lane / 4, c = lane % 4;
  pdl_wait();  // y, the partials and the counters may still be in use by earlier launches
  // The MMAs of the block in ring slot n % stages (waits for its full barrier) into acc.
  const auto issue = [&](float(&acc)[N / 2], int n) {
    const int s = n % L::stages;
    const uint32_t st = base + uint32_t(s * L::stage);
    mbar::wait(bars + 8 * s, uint32_t(n / L::stages) & 1u);
    wgmma::fence();
    const uint64_t a = wgmma::sw128_desc(st + uint32_t(cwg * 64 * 128), 16, 1024);
    const uint64_t b = wgmma::sw128_desc(st + uint32_t(L::x_off), 16, 1024);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)  // + 32 bytes a step: + 2 in the 16-byte address field
      wgmma::fp8_ss<N>::run(acc, a + uint64_t(2 * kk), b + uint64_t(2 * kk), kk);
    wgmma::commit();
  };
  // tot += acc * s_w * s_x of the block in slot n % stages (its MMAs complete), then the slot is
  // released.
  float tot[N / 2];
  const auto fold = [&](float(&acc)[N / 2], int n, int tile, int kb) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) wgmma::reg_fence(acc[i]);
    const int s = n % L::stages;
    const uint8_t* gst = gbase + s * L::stage;
    const int rb = (tile * L::tile_rows + 64 * cwg) / 128;  // this warpgroup's scale block
    const uint32_t so = L::ws_off + 16 * cwg + uint32_t(uintptr_t(scale_at(p, rb, kb)) & 15u);
    const float sw = p.scale_bytes == 1 ? detail::e8m0_to_f32(gst[so])
                                        : *reinterpret_cast<const float*>(gst + so);
    const float* sx = reinterpret_cast<const float*>(gst + L::sx_off);
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      const float2 xs = *reinterpret_cast<const float2*>(sx + 8 * j + 2 * c);
      // The scale product first, then one fma: linear_decode_fp8act's rounding.
      const float s0 = __fmul_rn(sw, xs.x), s1 = __fmul_rn(sw, xs.y);
      tot[4 * j + 0] = fmaf(acc[4 * j + 0], s0, tot[4 * j + 0]);
      tot[4 * j + 1] = fmaf(acc[4 * j + 1], s1, tot[4 * j + 1]);
      tot[4 * j + 2] = fmaf(acc[4 * j + 2], s0, tot[4 * j + 2]);
      tot[4 * j + 3] = fmaf(acc[4 * j + 3], s1, tot[4 * j + 3]);
    }
    __syncwarp();
    if (lane == 0) mbar::arrive(bars + 8 * (L::stages + s));
  };
  int n = 0;
  for (int item = blockIdx.x; item < p.items; item += gridDim.x) {
    const int tile = item / p.k_parts, part = item % p.k_parts;
    const int kb0 = int(int64_t(p.kblocks) * part / p.k_parts);
    const int kb1 = int(int64_t(p.kblocks) * (part + 1) / p.k_parts);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) tot[i] = 0.0f;
    // Each block's MMAs waited for, then folded: the other consumer warpgroup's MMAs fill the
    // tensor cores meanwhile. (Issuing block kb + 1 before folding block kb, two accumulator
    // sets and wait_group 1, made ptxas serialize the wgmmas: C7514, accumulators read inside
    // the pipeline stage.)
    float acc[N / 2];
    for (int kb = kb0; kb < kb1; ++kb, ++n) {
      issue(acc, n);
      wgmma::wait<0>();
      fold(acc, n, tile, kb);
    }
    const int r_lo = tile * L::tile_rows + cwg * 64 + warp * 16 + g;
    if (p.k_parts == 1) {
      store_y<N>(p, tot, r_lo, c);
      continue;
    }
    // Split K: every part stores its sums; the CTA that completes the tile's count adds the parts
    // in part order (the same sums whichever CTA finishes last).
    float* mine = p.partial + int64_t(item) * (N / 2) * L::consumers + ct;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) __stcg(mine + i * L::consumers, tot[i]);
    __threadfence();
    mbar::named_sync(1, L::consumers);
    if (ct == 0) *flag = atomicAdd(p.counters + tile, 1) == p.k_parts - 1 ? 1 : 0;
    mbar::named_sync(1, L::consumers);
    if (*flag == 0) continue;
    __threadfence();
    const float* first = p.partial + int64_t(tile) * p.k_parts * (N / 2) * L::consumers + ct;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) tot[i] = __ldcg(first + i * L::consumers);
    for (int q = 1; q < p.k_parts; ++q) {
      const float* part_q = first + int64_t(q) * (N / 2) * L::consumers;
#pragma unroll
      for (int i = 0; i < N / 2; ++i) tot[i] += __ldcg(part_q + i * L::consumers);
    }
    store_y<N>(p, tot, r_lo, c);
  }
}

template <int N>
__global__ void __launch_bounds__(layout<N>::threads, 1)
    w8a8_wgmma_kernel(const __grid_constant__ CUtensorMap wmap, const gemm_params p) {
  using L = layout<N>;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* gbase = smem_raw + (base - raw);
  const uint32_t bars = base + uint32_t(L::stages * L::stage);
  volatile int* flag =
      reinterpret_cast<volatile int*>(gbase + L::stages * L::stage + 16 * L::stages);
  if (threadIdx.x == 0) {
    for (int s = 0; s < L::stages; ++s) {
      mbar::init(bars + 8 * s, 1);
      mbar::init(bars + 8 * (L::stages + s), 8);  // the consumer warps
    }
    mbar::fence_init();
  }
  __syncthreads();
  pdl_trigger();  // the next launch waits for this grid before it touches anything
  if (threadIdx.x < 128) {
    mbar::setmaxnreg_dec<L::producer_regs>();
    if (threadIdx.x == 0) produce<N>(&wmap, p, base, bars);
  } else {
    mbar::setmaxnreg_inc<L::consumer_regs>();
    consume<N>(p, base, gbase, bars, flag);
  }
}

// A warp per (token row t < n, 128-k block): codes of fp8act_quantize's rule written in the
// stage's swizzled layout, s_x after the block's n rows; rows t >= tokens get zero codes and a
// zero scale (their columns are never stored). Also zeroes the split-K counters.
template <typename act_t>
__global__ void w8a8_quantize_kernel(const act_t* x, int tokens, int n, int64_t cols, uint8_t* xt,
                                     int* counters, int tiles) {
  pdl_trigger();  // the GEMM may launch: it waits for this grid before it reads xt / counters
  pdl_wait();     // x comes from the previous launch; a previous GEMM may still read xt
  const int64_t gid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = gid; i < tiles; i += int64_t(gridDim.x) * blockDim.x) counters[i] = 0;
  const int lane = threadIdx.x % k_warp_size;
  const int64_t item = gid / k_warp_size, blocks = cols / k_kb;
  if (item >= n * blocks) return;  // uniform over the warp
  const int t = int(item % n);
  const int64_t kb = item / n;
  uint8_t* tile = xt + kb * (int64_t(n) * 132);
  uint32_t code = 0;
  float s = 0.0f;
  if (t < tokens)
    code = quant::fp8_block_codes_warp(x + int64_t(t) * cols + kb * k_kb + lane * 4, s);
  const int chunk = lane / 4;
  *reinterpret_cast<uint32_t*>(tile + t * 128 + ((chunk ^ (t & 7)) * 16) + (lane % 4) * 4) = code;
  if (lane == 0) reinterpret_cast<float*>(tile + n * 128)[t] = s;
}

// The weights as a [rows, cols] u8 tensor, boxes of 128 rows x 128 bytes, 128-byte swizzle; rows
// past the end read as zeros (and count as transaction bytes: the full box always lands).
bool encode_weight_map(CUtensorMap& map, const device_weight& w) {
  const auto encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[2] = {cuuint64_t(w.cols), cuuint64_t(w.rows)};
  const cuuint64_t strides[1] = {cuuint64_t(w.cols)};
  const cuuint32_t box[2] = {cuuint32_t(k_kb), cuuint32_t(layout<16>::tile_rows)};
  const cuuint32_t elem[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(w.data), dims, strides,
                box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

constexpr int k_widths[] = {16, 32, 48, 64};

bool valid_width(int n) {
  return std::find(std::begin(k_widths), std::end(k_widths), n) != std::end(k_widths);
}

size_t round256(size_t b) {
  return (b + 255) / 256 * 256;
}

double device_read_gbps() {
  // 90% of the peak (device_info.h), about what a read-only kernel reaches (H100 SXM: 3.35 TB/s
  // peak, bench_linear_gemm's read ceiling 3.07 TB/s; H200 4.81 / 4.47-4.64).
  return 0.9 * peak_memory_gbps(current_device_rates());
}

bool device_is_sm90() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major == 9;
}

}  // namespace

bool linear_w8a8_wgmma_supported(const device_weight& w) {
  if (w.kind != weight_kind::fp8_block || validate_weight(w) != cudaSuccess) return false;
  if (w.layout != weight_layout::checkpoint) return false;
  static const bool sm90 = device_is_sm90();
  return sm90 && w.cols % k_kb == 0 && aligned_16(w.data) && w.rows <= INT_MAX / 2 &&
         w.cols <= INT_MAX / 2 && tensor_map_encoder() != nullptr;
}

linear_w8a8_wgmma_plan linear_w8a8_wgmma_default_plan(int64_t tokens, int64_t rows, int64_t cols,
                                                      int sms, double read_gbps) {
  linear_w8a8_wgmma_plan pl;
  pl.n = k_widths[3];
  for (int n : k_widths)
    if (n >= tokens) {
      pl.n = n;
      break;
    }
  constexpr int64_t tile_rows = layout<16>::tile_rows;
  const int64_t tiles = ceil_div(rows, tile_rows), kblocks = std::max<int64_t>(cols / k_kb, 1);
  sms = std::max(sms, 1);
  if (read_gbps <= 0) read_gbps = device_read_gbps();
  if (read_gbps <= 0) read_gbps = 3000.0;
  // K parts: the fewest (powers of two) minimizing an estimate of the call's time, a model fitted
  // to bench_linear_gemm --w8a8-wgmma-sweep (H100, session 26 call w8a8w r1: every Flash / Pro FP8
  // projection at T = 9 .. 128, K parts 1 .. 16; its pick is within 2.1% of the fastest measured
  // split at every point, 0.1% over the sum):
  //  * the weight stream: the longer of all bytes at the read rate (read_gbps) and the busiest
  //    CTA's bytes at what one SM pulls, its ring's weight bytes per 3.0 us (Little's law: the
  //    ring in flight; an H100 CTA streamed a 2 MiB K range at 47 GB/s with 11 stages (n 16) and
  //    27 GB/s with 6 (n 128: 128 tokens, not kept));
  //  * per split item: 2 us (the partial store, fence, counter) plus the last CTA's reload of all
  //    K parts of its tile at 60 GB/s (measured: 16 parts at n 128 cost more than the stream).
  // Measured best (time, us, at n 16 / 64): Pro wq_b 1 part (36.3 / 40.7), Pro wo_b 1 (44.3) / 2
  // (53.3), Flash wo_b 2 (17.9 / 20.4), Pro shared w13 4 (13.0 / 16.9), Flash wkv 8 (6.2 / 9.6).
  const int stages = pl.n <= 16   ? layout<16>::stages
                     : pl.n <= 32 ? layout<32>::stages
                     : pl.n <= 48 ? layout<48>::stages
                                  : layout<64>::stages;
  const double ring_bytes = double(stages) * layout<16>::w_bytes;
  const double stream_us = double(rows) * double(cols) / (read_gbps * 1e3);
  double best = 0;
  int best_parts = 1;
  for (int64_t parts = 1; parts <= std::min<int64_t>(kblocks, 16); parts *= 2) {
    const int64_t items = tiles * parts, per_cta = ceil_div(items, std::min<int64_t>(items, sms));
    const double cta_bytes = double(per_cta * ceil_div(kblocks, parts)) * layout<16>::w_bytes;
    const double split_us = parts > 1 ? 2.0 + double(parts * tile_rows * pl.n * 4) / 60e3 : 0.0;
    const double t = std::max(stream_us, cta_bytes * 3.0 / ring_bytes) + double(per_cta) * split_us;
    if (parts == 1 || t < best) best = t, best_parts = int(parts);
  }
  pl.k_parts = best_parts;
  pl.ctas = int(std::min<int64_t>(tiles * best_parts, sms));
  return pl;
}

size_t linear_w8a8_wgmma_workspace_bytes(const linear_w8a8_wgmma_plan& plan, int64_t rows,
                                         int64_t cols) {
  constexpr int64_t tile_rows = layout<16>::tile_rows;
  const int64_t tiles = ceil_div(rows, tile_rows);
  size_t b = round256(size_t(cols / k_kb) * size_t(plan.n) * 132) + round256(size_t(tiles) * 4);
  if (plan.k_parts > 1) b += size_t(tiles) * plan.k_parts * tile_rows * plan.n * 4;
  return b;
}

size_t linear_w8a8_wgmma_workspace_bytes(int64_t tokens, int64_t rows, int64_t cols) {
  return linear_w8a8_wgmma_workspace_bytes(
      linear_w8a8_wgmma_default_plan(tokens, rows, cols, current_device_sm_count()), rows, cols);
}

template <typename act_t, typename out_t>
cudaError_t linear_w8a8_wgmma(const act_t* x, int64_t tokens, const device_weight& w, out_t* y,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream,
                              const linear_w8a8_wgmma_plan* plan, bool pdl) {
  static_assert(std::is_same_v<out_t, float> || std::is_same_v<out_t, __nv_bfloat16>);
  if (tokens < 0 || !x || !y || !workspace) return cudaErrorInvalidValue;
  if (tokens > k_linear_w8a8_wgmma_max_tokens || !linear_w8a8_wgmma_supported(w))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  const linear_w8a8_wgmma_plan pl =
      plan ? *plan
           : linear_w8a8_wgmma_default_plan(tokens, w.rows, w.cols, current_device_sm_count());
  const int64_t tiles = ceil_div(w.rows, layout<16>::tile_rows), kblocks = w.cols / k_kb;
  if (!valid_width(pl.n) || pl.n < tokens || pl.k_parts < 1 || pl.k_parts > kblocks ||
      pl.ctas < 1 || pl.ctas > tiles * pl.k_parts || tiles * pl.k_parts > INT_MAX)
    return cudaErrorInvalidValue;
  if (workspace_bytes < linear_w8a8_wgmma_workspace_bytes(pl, w.rows, w.cols) ||
      !aligned_16(workspace))
    return cudaErrorInvalidValue;
  CUtensorMap map;
  if (!encode_weight_map(map, w)) return cudaErrorNotSupported;
  auto* xt = static_cast<uint8_t*>(workspace);
  auto* counters = reinterpret_cast<int*>(xt + round256(size_t(kblocks) * pl.n * 132));
  auto* partial =
      reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(counters) + round256(size_t(tiles) * 4));
  {
    const int64_t warps = int64_t(pl.n) * kblocks;
    const int threads = 256;
    const unsigned blocks = unsigned(
        std::max<int64_t>(ceil_div(warps * k_warp_size, threads), ceil_div(tiles, threads)));
    if (const cudaError_t e =
            launch_pdl(pdl, w8a8_quantize_kernel<act_t>, dim3(blocks), dim3(threads), 0, stream, x,
                       int(tokens), pl.n, w.cols, xt, counters, int(tiles));
        e != cudaSuccess)
      return e;
  }
  gemm_params p{};
  p.xt = xt;
  p.wscale = static_cast<const uint8_t*>(w.scale);
  p.scale_bytes = w.scale_e8m0 ? 1 : 4;
  p.rows = int(w.rows);
  p.row_blocks = int(ceil_div(w.rows, 128));
  p.kblocks = int(kblocks);
  p.k_parts = pl.k_parts;
  p.items = int(tiles * pl.k_parts);
  p.tokens = int(tokens);
  p.y = y;
  p.y_bf16 = std::is_same_v<out_t, __nv_bfloat16> ? 1 : 0;
  p.partial = partial;
  p.counters = counters;
  auto run = [&](auto kernel, int smem, int threads) {
    if (const cudaError_t e = allow_dynamic_smem(kernel, size_t(smem)); e != cudaSuccess) return e;
    return launch_pdl(pdl, kernel, dim3(unsigned(pl.ctas)), dim3(unsigned(threads)), size_t(smem),
                      stream, map, p);
  };
#define DSV4_W8A8_WGMMA_RUN(N) run(w8a8_wgmma_kernel<N>, layout<N>::smem, layout<N>::threads)
  switch (pl.n) {
    case 16:
      return DSV4_W8A8_WGMMA_RUN(16);
    case 32:
      return DSV4_W8A8_WGMMA_RUN(32);
    case 48:
      return DSV4_W8A8_WGMMA_RUN(48);
    default:
      return DSV4_W8A8_WGMMA_RUN(64);
  }
#undef DSV4_W8A8_WGMMA_RUN
}

#define DSV4_W8A8_WGMMA_INST(act_t, out_t)                                              \
  template cudaError_t linear_w8a8_wgmma<act_t, out_t>(                                 \
      const act_t*, int64_t, const device_weight&, out_t*, void*, size_t, cudaStream_t, \
      const linear_w8a8_wgmma_plan*, bool);
DSV4_W8A8_WGMMA_INST(float, float)
DSV4_W8A8_WGMMA_INST(__nv_bfloat16, float)
DSV4_W8A8_WGMMA_INST(__nv_bfloat16, __nv_bfloat16)
#undef DSV4_W8A8_WGMMA_INST

}  // namespace dsv4::cuda
