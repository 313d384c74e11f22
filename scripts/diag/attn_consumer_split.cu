// Diagnostic (session 31): would a third consumer warpgroup take the decode attention's consumer
// chain to the tensor pipe's floor?
//
// bench/TARGETS.md (issue 6): on the H200 the warp-specialized decode kernel's two consumer
// warpgroups take a 32-key tile every ~1710-1820 cycles against ~1280 cycles of tensor-pipe work
// (S on 32 SS m64n32k16 at 24 cycles, P V on 8 RS m64n128k16 at 64). Each warpgroup owns every
// other tile (its S over all 512 channels, the softmax, the hand-off of P and (m, l)) and runs
// P V of every tile for its 256 output channels; its own chain per two tiles (S ~700-770 cycles
// with the warp held at the wgmma issue, softmax ~800, two P V ~380 each, overhead) is longer than
// the pipe's share. With three consumer warpgroups (channels 192 / 192 / 128, tiles owned in
// turn) a warpgroup's chain covers three tiles for one S and one softmax, so the pipe, not the
// chain, would set the pace, if the registers allow it: beside a 56-register producer warpgroup
// the consumers get 152 registers (128 x 56 + 384 x 152 = 64 K) instead of 224.
//
// This kernel is that consumer loop alone (as the engine's plan.diag "consumers alone": the key
// tiles stay in shared memory) with NWG = 2 (the engine's split, 224 registers) or 3 (152), the
// same wgmma shapes, the same online softmax (lazy rescale), the same hand-off through shared
// memory and named barriers; the producer warpgroup holds its 56 registers and is idle, or runs
// (RING 1) the engine's stage protocol without rows: full / empty mbarriers, the mask word, one
// release per consumer warp and tile; RING 2 / 3 add rows: one producer lane brings each tile's
// 32 KB into its stage by 8 bulk copies (TMA engine) from an L2-resident pool or a 276 MB pool;
// RING 4 / 5 run the engine's producer protocol for TMA tiles (all 128 producer threads wait and
// arrive) without / with its per-lane index loads (RING 7: with the engine's arrival,
// cp.async.mbarrier.arrive.noinc); RING 6 the engine's 2D tensor-map copies (8
// boxes of 32 rows x 64 channels, SWIZZLE_128B) from a row-major pool.
// Per CTA it runs n tiles (tile k holds base tile k % 4) for one 64-head query tile and writes
// O = sum p v / sum p; the host checks CTA 0's O against a double reference (P is bf16:
// tolerance 1e-2 of max |O|) and reports per tile the median CTA's clock64 cycles and globaltimer
// time around the loop, and for RING 3 the rows' bandwidth against the read ceiling measured in
// the same process. PIPE rows drop the softmax's arithmetic (P = S * 0 + 0.001, S kept live);
// stamped rows print clock64 stamps of CTA 0 at the points of session 29's l29e.
// Answers (H200, session 31 l31a-l31j; bench/RESULTS.md): a third warpgroup is 1.04-1.07x slower
// (two already run at their wgmmas' pace: 1424-1527 cycles per tile, ~640 TFLOP/s, the softmax
// off the critical path); with rows from HBM two warpgroups stream at 88.2-89.8% of the read
// ceiling (512-2048 tiles per CTA, a tile every 1.008 us), where the engine's plan at HCA 1M T=32
// runs its loop at 1.196 us per tile (65 tiles, same machine) and spends ~11 us outside it; the
// engine's producer protocol and index work (RING 4 / 5) and its 2D copies (RING 6) cost under
// 1% here (l31k, l31l).
// Build and run (sm_90a), from the repository root:
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -Isrc -Xptxas -v
//   scripts/diag/attn_consumer_split.cu src/backends/cuda/tensor_map.cpp -o attn_consumer_split
//   ./attn_consumer_split [tiles per CTA, default 512] [only the rows whose name contains this]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../bench/kernels/bench_common.cuh"  // CK, bench::median
#include "backends/cuda/attention_decode_softmax.cuh"  // wg_offset, exp2_ftz, pack_probs
#include "backends/cuda/attention_decode_wgmma.cuh"
#include "backends/cuda/attention_decode_ws_layout.cuh"  // stages, registers, lazy rescale
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/mbarrier.cuh"
#include "backends/cuda/tensor_map.h"
#include "backends/cuda/tma.cuh"

namespace wgm = dsv4::cuda::attention_wgmma;
namespace mbar = dsv4::cuda::mbar;
using dsv4::cuda::exp2_ftz;
using dsv4::cuda::pack_probs;
using dsv4::cuda::wg_offset;

namespace {

// The engine's geometry (attention_decode_common.cuh, attention_decode_ws_layout.cuh): 32-key
// tiles of 512 channels, 64 query rows, a 4-stage ring, 56 / 224 registers.
constexpr int k_tile = dsv4::cuda::k_tile, k_rows = dsv4::cuda::k_rows, k_dim = dsv4::cuda::k_d;
constexpr int k_stages = dsv4::cuda::k_ws_stages;
constexpr int k_q_bytes = dsv4::cuda::k_q_bytes;        // 64 KB
constexpr int k_tile_bytes = dsv4::cuda::k_tile_bytes;  // 32 KB
static_assert(k_tile == 32 && k_rows == 64 && k_dim == 512, "the diag's loops assume these");
// Hand-off buffer of one tile: P as two k16 A fragments per consumer thread (uint4 each), then
// (m0, m1, l0, l1) per thread.
constexpr int k_hand_bytes = 2 * 128 * 16 + 128 * 16;
constexpr float k_lazy = dsv4::cuda::k_lazy_rescale;
constexpr int k_producer_regs = dsv4::cuda::k_ws_producer_regs;

// d[32] += A (64 x 16, registers) * B (16 x 64, descriptor, MN-major).
__device__ __forceinline__ void mma_rs_n64_mn(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, 1, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// One consumer warpgroup: output channel blocks [cb0, cb0 + 2 N128 + N64) of 64 channels, tiles
// k == wg (mod NWG) owned. PIPE: P = S * zero + 0.001 (zero = 0 at run time, so that S stays
// live): no softmax arithmetic, the rest unchanged.
// stamps (non-null): clock64 of thread 0 of each warpgroup of CTA 0 at the points of the engine's
// plan.diag 256 (session 29, l29e), per tile [wg][k][8]: owner: S ready, hand-off, P V issued,
// P V done, full k + NWG, S k + NWG issued; reader: full, hand-off, P V issued, P V done, own S.
template <int NWG, int N128, int N64, bool PIPE, int RING>
__device__ __forceinline__ void consume(int wg, int cb0, uint32_t q_s, uint32_t k_s, uint8_t* hand,
                                        uint32_t bars, int n, float scale_log2, float zero,
                                        float* out, long long* cycles, long long* stamps) {
  const bool stamping = stamps != nullptr && blockIdx.x == 0 && threadIdx.x % 128 == 0;
  auto stamp = [&](int k, int i) {
    if (stamping) stamps[(size_t(wg) * n + k) * 8 + i] = clock64();
  };
  const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x % 32;
  const int rg = warp, tid = rg * 32 + lane;
  float a128[N128 > 0 ? N128 : 1][64];
  float a64[N64 > 0 ? N64 : 1][32];
#pragma unroll
  for (int i = 0; i < 64; ++i)
#pragma unroll
    for (int j = 0; j < (N128 > 0 ? N128 : 1); ++j) a128[j][i] = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; ++i)
#pragma unroll
    for (int j = 0; j < (N64 > 0 ? N64 : 1); ++j) a64[j][i] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float sd[16], corr[2] = {1.0f, 1.0f};
  uint32_t pas[2][4], pin[2][4];

  auto kb_of = [&](int k) { return k_s + uint32_t(k % k_stages) * k_tile_bytes; };
  // RING: the engine's stage protocol without rows (its plan.diag 1): every consumer thread waits
  // on the stage's `full` barrier, fences the async proxy and reads the stage's mask word; each
  // warp releases the stage on `empty` once its P V of the tile completed.
  uint32_t mask_word = 0;
  auto wait_full = [&](int k) {
    if constexpr (RING != 0) {
      const int stage = k % k_stages;
      mbar::wait(bars + 8 * stage, uint32_t(k / k_stages) & 1u);
      wgm::fence_async_smem();
      mask_word |= reinterpret_cast<volatile uint32_t*>(hand + NWG * k_hand_bytes)[stage];
    }
  };
  auto release = [&](int k) {
    if constexpr (RING != 0) {
      __syncwarp();
      if (lane == 0) mbar::arrive(bars + 8 * (k_stages + k % k_stages));
    }
  };
  auto fence_acc = [&] {
#pragma unroll
    for (int i = 0; i < 64; ++i)
#pragma unroll
      for (int j = 0; j < N128; ++j) wgm::reg_fence(a128[j][i]);
#pragma unroll
    for (int i = 0; i < 32; ++i)
#pragma unroll
      for (int j = 0; j < N64; ++j) wgm::reg_fence(a64[j][i]);
  };
  auto issue_scores = [&](uint32_t kb) {
    wgm::fence();
    const uint64_t a0 = wgm::desc(q_s, 16, 1024), b0 = wgm::desc(kb, 16, 1024);
#pragma unroll
    for (int kk = 0; kk < 32; ++kk) {
      const uint32_t block = uint32_t(kk / 4), byte = uint32_t(kk % 4) * 32;
      const uint64_t a = wgm::desc_at(a0, block * (k_rows * 128) + byte);
      const uint64_t b = wgm::desc_at(b0, block * (k_tile * 128) + byte);
      if (kk == 0)
        wgm::mma_ss_n32_first(sd, a, b);
      else
        wgm::mma_ss_n32(sd, a, b);
    }
    wgm::commit();
  };
  auto issue_pv = [&](const uint32_t(&pa)[2][4], uint32_t kb) {
    wgm::fence();
    const uint64_t v0 = wgm::desc(kb, k_tile * 128, 1024);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
      for (int j = 0; j < N128; ++j)
        wgm::mma_rs_n128_mn(
            a128[j], pa[ks],
            wgm::desc_at(v0, uint32_t(cb0 + 2 * j) * (k_tile * 128) + uint32_t(ks) * 16 * 128));
#pragma unroll
      for (int j = 0; j < N64; ++j)
        mma_rs_n64_mn(a64[j], pa[ks],
                      wgm::desc_at(v0, uint32_t(cb0 + 2 * N128 + j) * (k_tile * 128) +
                                           uint32_t(ks) * 16 * 128));
    }
    wgm::commit();
  };
  auto rescale = [&] {
    if (__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) {
#pragma unroll
      for (int i = 0; i < 64; ++i)
#pragma unroll
        for (int j = 0; j < N128; ++j) a128[j][i] *= corr[(i & 3) >> 1];
#pragma unroll
      for (int i = 0; i < 32; ++i)
#pragma unroll
        for (int j = 0; j < N64; ++j) a64[j][i] *= corr[(i & 3) >> 1];
    }
  };
  // The engine's softmax_local (all keys valid), lazy rescale, then P as bf16 A fragments.
  auto softmax = [&] {
    float s[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = sd[4 * j + e];
    if constexpr (PIPE) {
      corr[0] = corr[1] = 1.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[j][e] = fmaf(s[j][e], zero, 0.001f);
    } else {
      float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] *= scale_log2;
          tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
        }
      float m_use[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 1));
        tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 2));
        float m_new = fmaxf(m[i], tmax[i]);
        m_new = m_new > m[i] + k_lazy ? m_new : m[i];
        m_use[i] = m_new == -INFINITY ? 0.0f : m_new;
        corr[i] = exp2_ftz(m[i] - m_use[i]);
        m[i] = m_new;
        l[i] *= corr[i];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] = exp2_ftz(s[j][e] - m_use[e >> 1]);
          l[e >> 1] += s[j][e];
        }
    }
    pack_probs(s, pas);
  };
  uint4* const hand_p = reinterpret_cast<uint4*>(hand);  // [buffer][k16 step][128]
  float4* const hand_s = reinterpret_cast<float4*>(hand + NWG * 2 * 128 * 16);  // [buffer][128]
  // Barrier of tile k's hand-off: the owner's warp rg arrives, warp rg of every other consumer
  // warpgroup syncs. An owner reuses buffer / barrier k % NWG at tile k + NWG only after it read
  // tile k + NWG - 1, handed off after every other warpgroup read tile k (tiles in order).
  auto hand_bar = [&](int k) { return uint32_t(2 + (k % NWG) * 4 + rg); };

  long long t0 = 0;
  unsigned long long g0 = 0;
  if (threadIdx.x == 0) {
    t0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  }
  if (wg < n) {
    wait_full(wg);
    issue_scores(kb_of(wg));
  }
#pragma unroll 1
  for (int k = 0; k < n; ++k) {
    const int b = k % NWG;
    if (b == wg) {
      wgm::wait<0>();
#pragma unroll
      for (int i = 0; i < 16; ++i) wgm::reg_fence(sd[i]);
      stamp(k, 0);
      softmax();
      hand_p[(b * 2 + 0) * 128 + tid] = make_uint4(pas[0][0], pas[0][1], pas[0][2], pas[0][3]);
      hand_p[(b * 2 + 1) * 128 + tid] = make_uint4(pas[1][0], pas[1][1], pas[1][2], pas[1][3]);
      hand_s[b * 128 + tid] = make_float4(m[0], m[1], l[0], l[1]);
      mbar::named_arrive(hand_bar(k), NWG * 32);
      stamp(k, 1);
      rescale();
      issue_pv(pas, kb_of(k));
      stamp(k, 2);
      wgm::wait<0>();
      fence_acc();
      stamp(k, 3);
      release(k);
      if (k + NWG < n) {
        wait_full(k + NWG);
        stamp(k, 4);
        issue_scores(kb_of(k + NWG));
        stamp(k, 5);
      }
    } else {
      wait_full(k);
      stamp(k, 0);
      mbar::named_sync(hand_bar(k), NWG * 32);
      stamp(k, 1);
      const uint4 p0 = hand_p[(b * 2 + 0) * 128 + tid];
      const uint4 p1 = hand_p[(b * 2 + 1) * 128 + tid];
      const float4 st = hand_s[b * 128 + tid];
      pin[0][0] = p0.x, pin[0][1] = p0.y, pin[0][2] = p0.z, pin[0][3] = p0.w;
      pin[1][0] = p1.x, pin[1][1] = p1.y, pin[1][2] = p1.z, pin[1][3] = p1.w;
      const float m_new[2] = {st.x, st.y};
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float m_use = m_new[i] == -INFINITY ? 0.0f : m_new[i];
        corr[i] = PIPE ? 1.0f : exp2_ftz(m[i] - m_use);
        m[i] = m_new[i];
      }
      l[0] = st.z;
      l[1] = st.w;
      wgm::wait<0>();  // this warpgroup's next S (no accumulator rescale with a wgmma in flight)
      fence_acc();
      stamp(k, 4);
      rescale();
      issue_pv(pin, kb_of(k));
      stamp(k, 2);
      wgm::wait<0>();
      fence_acc();
      stamp(k, 3);
      release(k);
    }
  }
  if (mask_word == 0x12345678u) out[0] = 0.0f;  // keeps the mask loads (never true)
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = clock64() - t0;
    unsigned long long g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    cycles[gridDim.x + blockIdx.x] = (long long)(g1 - g0);  // ns
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
  // O rows 16 rg + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1) of each n8 block.
  float* const o = out + size_t(blockIdx.x) * k_rows * k_dim;
  const int r0 = 16 * rg + lane / 4;
  auto put = [&](int ch0, const float* acc, int nblocks) {
    for (int j = 0; j < nblocks; ++j)
      for (int e = 0; e < 4; ++e) {
        const int row = r0 + 8 * (e >> 1), col = ch0 + 8 * j + 2 * (lane % 4) + (e & 1);
        o[size_t(row) * k_dim + col] = acc[4 * j + e] / l[e >> 1];
      }
  };
#pragma unroll
  for (int j = 0; j < N128; ++j) put((cb0 + 2 * j) * 64, a128[j], 16);
#pragma unroll
  for (int j = 0; j < N64; ++j) put((cb0 + 2 * N128 + j) * 64, a64[j], 8);
}

// RING: 0 none, 1 the stage protocol without rows, 2 / 3 with rows: each tile's 32 KB brought
// into its stage by 8 bulk copies (the TMA engine, 4 KB column blocks, already in the wgmma
// layout) from `pool`, an L2-resident 16-tile pool shared by all CTAs (2) or 64 tiles per CTA,
// 276 MB in all (3); pool tile i holds base tile i % 4, so O is checked as without rows.
template <int NWG, bool PIPE, int RING>
__global__ void __launch_bounds__((NWG + 1) * 128, 1)
    consumers_kernel(const uint4* q, const uint4* keys, const uint8_t* pool,
                     const int32_t* index_list, const __grid_constant__ CUtensorMap map, int n,
                     float scale_log2, float zero, float* out, long long* cycles,
                     long long* stamps) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* const smem =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const uint32_t q_s = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t k_s = q_s + k_q_bytes;
  uint8_t* const hand = smem + k_q_bytes + k_stages * k_tile_bytes;
  // After the hand-off buffers: the stage masks (4 words), then full[4], empty[4] (RING).
  uint32_t* const masks = reinterpret_cast<uint32_t*>(hand + NWG * k_hand_bytes);
  const uint32_t bars = uint32_t(__cvta_generic_to_shared(masks + 8));  // 32-byte offset
  if (threadIdx.x < k_stages) masks[threadIdx.x] = 0xffffffffu;
  if (RING && threadIdx.x == 0) {
    for (int s = 0; s < k_stages; ++s) {
      mbar::init(bars + 8 * s,
                 RING == 2 || RING == 3 || RING == 6 ? 1 : 128 + 1);  // full: producers (+ mask)
      mbar::init(bars + 8 * (k_stages + s), NWG * 4);  // empty: every consumer warp
    }
    mbar::fence_init();
  }
  // Query tile and the 4 key tiles, by every thread, into the wgmma layout.
  for (int i = threadIdx.x; i < k_rows * 64; i += blockDim.x)
    *reinterpret_cast<uint4*>(smem + wg_offset<k_rows>(i / 64, i % 64)) = q[i];
  for (int i = threadIdx.x; i < k_stages * k_tile * 64; i += blockDim.x) {
    const int stage = i / (k_tile * 64), r = (i / 64) % k_tile, c = i % 64;
    *reinterpret_cast<uint4*>(smem + k_q_bytes + stage * k_tile_bytes + wg_offset<k_tile>(r, c)) =
        keys[i];
  }
  wgm::fence_async_smem();
  __syncthreads();
  const int wg = __shfl_sync(0xffffffffu, int(threadIdx.x / 128), 0);
  if (wg == NWG) {  // the producer warpgroup: holds its registers; RING: publishes empty stages
    mbar::setmaxnreg_dec<k_producer_regs>();
    if constexpr (RING == 1) {
      for (int j = 0; j < n; ++j) {
        const int stage = j % k_stages;
        if (j >= k_stages)
          mbar::wait(bars + 8 * (k_stages + stage), uint32_t(j / k_stages - 1) & 1u);
        wgm::fence_async_smem();
        mbar::arrive(bars + 8 * stage);
        if (threadIdx.x == NWG * 128) {
          masks[stage] = 0xffffffffu;
          mbar::arrive(bars + 8 * stage);
        }
      }
    } else if constexpr (RING == 6) {
      // The engine's TMA key tiles (attention_decode.cu encode_key_map): a row-major [rows, 512]
      // bf16 pool, 8 boxes of 32 rows x 64 channels per tile, SWIZZLE_128B into the same layout.
      if (threadIdx.x == NWG * 128) {
        dsv4::cuda::tma::prefetch_map(&map);
        for (int j = 0; j < n; ++j) {
          const int stage = j % k_stages;
          if (j >= k_stages)
            mbar::wait(bars + 8 * (k_stages + stage), uint32_t(j / k_stages - 1) & 1u);
          const int row0 = (int(blockIdx.x) * 64 + j % 64) * k_tile;
          masks[stage] = 0xffffffffu;
          mbar::arrive_expect_tx(bars + 8 * stage, uint32_t(k_tile_bytes));
          for (int b = 0; b < 8; ++b)
            dsv4::cuda::tma::g2s_2d(k_s + uint32_t(stage * k_tile_bytes + b * k_tile * 128), &map,
                                    b * 64, row0, bars + 8 * stage);
        }
      }
    } else if constexpr (RING == 2 || RING == 3) {
      if (threadIdx.x == NWG * 128) {
        for (int j = 0; j < n; ++j) {
          const int stage = j % k_stages;
          if (j >= k_stages)
            mbar::wait(bars + 8 * (k_stages + stage), uint32_t(j / k_stages - 1) & 1u);
          const int64_t tile = RING == 2 ? j % 16 : int64_t(blockIdx.x) * 64 + j % 64;
          const uint8_t* src = pool + tile * k_tile_bytes;
          masks[stage] = 0xffffffffu;
          mbar::arrive_expect_tx(bars + 8 * stage, uint32_t(k_tile_bytes));
          for (int b = 0; b < 8; ++b)
            mbar::bulk_g2s(k_s + uint32_t(stage * k_tile_bytes + b * 4096), src + b * 4096, 4096,
                           bars + 8 * stage);
        }
      }
    }
    if constexpr (RING == 4 || RING == 5 || RING == 7) {
      // The engine's TMA-tile protocol (attention_decode_ws.cuh produce): all 128 producer
      // threads wait for the stage's release and arrive on `full` (count 129); the first lane
      // also arms the transaction bytes and issues the copies. RING 5 adds the engine's per-tile
      // index work: each lane loads its slot's index three tiles ahead (a global int list), the
      // warp ballots a row pointer's validity.
      const int pl = int(threadIdx.x) - NWG * 128;
      int32_t v0 = 0, v1 = 0, v2 = 0;
      if constexpr (RING == 5 || RING == 7) {
        v0 = index_list[(0 * 32 + pl % 32) % 4096];
        v1 = index_list[(1 * 32 + pl % 32) % 4096];
        v2 = index_list[(2 * 32 + pl % 32) % 4096];
      }
      for (int j = 0; j < n; ++j) {
        const int stage = j % k_stages;
        uint32_t mask = 0xffffffffu;
        if constexpr (RING == 5 || RING == 7) {
          const int32_t v = v0;
          v0 = v1;
          v1 = v2;
          v2 = index_list[((j + 3) * 32 + pl % 32) % 4096];
          const uint8_t* row = pool + (int64_t(v) % 64 + int64_t(blockIdx.x) * 64) * 1024;
          mask = __ballot_sync(0xffffffffu, row != nullptr);
        }
        if (j >= k_stages)
          mbar::wait(bars + 8 * (k_stages + stage), uint32_t(j / k_stages - 1) & 1u);
        if (pl == 0) {
          const int64_t tile = int64_t(blockIdx.x) * 64 + j % 64;
          const uint8_t* src = pool + tile * k_tile_bytes;
          masks[stage] = mask;
          mbar::arrive_expect_tx(bars + 8 * stage, uint32_t(k_tile_bytes));
          for (int b = 0; b < 8; ++b)
            mbar::bulk_g2s(k_s + uint32_t(stage * k_tile_bytes + b * 4096), src + b * 4096, 4096,
                           bars + 8 * stage);
        }
        if constexpr (RING == 7)
          dsv4::cuda::cp_async_mbarrier_arrive_noinc(bars + 8 * stage);
        else
          mbar::arrive(bars + 8 * stage);
      }
    }
    return;
  }
  // Three consumer warpgroups share what two get beside the producer: 128 x 56 + 384 x 152 = 64 K.
  constexpr int consumer_regs = NWG == 2 ? dsv4::cuda::k_ws_consumer_regs : 152;
  mbar::setmaxnreg_inc<consumer_regs>();
  if constexpr (NWG == 2) {
    consume<2, 2, 0, PIPE, RING>(wg, 4 * wg, q_s, k_s, hand, bars, n, scale_log2, zero, out, cycles,
                                 stamps);
  } else {
    if (wg < 2)
      consume<3, 1, 1, PIPE, RING>(wg, 3 * wg, q_s, k_s, hand, bars, n, scale_log2, zero, out,
                                   cycles, stamps);
    else
      consume<3, 1, 0, PIPE, RING>(wg, 6, q_s, k_s, hand, bars, n, scale_log2, zero, out, cycles,
                                   stamps);
  }
}

float bf(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t to_bf(float f) {
  const __nv_bfloat16 b = __float2bfloat16_rn(f);
  return *reinterpret_cast<const uint16_t*>(&b);
}

const int32_t* g_index_list = nullptr;  // RING 5's slot indices (4096 ints)
CUtensorMap g_map{};                    // RING 6's row-major pool
const char* g_only = nullptr;           // argv[2]: only the rows whose name contains it

template <int NWG, bool PIPE, int RING>
void run(const char* name, const uint4* q, const uint4* keys, const uint8_t* pool, int n,
         float scale_log2, int ctas, float* out, long long* cycles, const std::vector<double>& ref,
         long long* stamps = nullptr, double read_gbs = 0) {
  if (g_only && !std::strstr(name, g_only)) return;
  const int smem = 1024 + k_q_bytes + k_stages * k_tile_bytes + NWG * k_hand_bytes + 128;
  auto kern = consumers_kernel<NWG, PIPE, RING>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<float> per_tile, ns_tile, ms;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaEventRecord(e0));
    kern<<<ctas, (NWG + 1) * 128, smem>>>(q, keys, pool, g_index_list, g_map, n, scale_log2, 0.0f,
                                          out, cycles, stamps);
    CK(cudaEventRecord(e1));
    CK(cudaGetLastError());
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
    std::vector<long long> c(2 * size_t(ctas));
    CK(cudaMemcpy(c.data(), cycles, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<float> d(c.begin(), c.begin() + ctas), g(c.begin() + ctas, c.end());
    per_tile.push_back(bench::median(d) / n);
    ns_tile.push_back(bench::median(g) / n);
  }
  if (RING >= 3 && read_gbs > 0) {
    // The rows' bytes over the kernel's time (its prologue and ramp included).
    const double gbs = double(k_tile_bytes) * n * ctas / (bench::median(ms) * 1e-3) / 1e9;
    std::printf("  rows from HBM: %.1f GB/s = %.1f%% of the read ceiling (%.1f GB/s)\n", gbs,
                100.0 * gbs / read_gbs, read_gbs);
  }
  std::vector<float> o(size_t(k_rows) * k_dim);
  CK(cudaMemcpy(o.data(), out, o.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0, mx = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    err = std::max(err, std::fabs(double(o[i]) - ref[i]));
    mx = std::max(mx, std::fabs(ref[i]));
  }
  const double cyc = bench::median(per_tile), t = bench::median(ms);
  // 64 heads x 32 keys x 512 x 2 (S) + the same for P V, per tile and CTA.
  const double flops = 4.0 * k_rows * k_tile * k_dim * double(n) * ctas;
  std::printf(
      "%-18s cycles per tile (median CTA, median of 7) %7.1f   kernel %.3f ms   %.1f TFLOP/s   "
      "tile every %.3f us (globaltimer, loop; %.2f GHz)   max |O - ref| / max |ref| %.2e%s\n",
      name, cyc, t, flops / (t * 1e-3) / 1e12, bench::median(ns_tile) * 1e-3,
      cyc / bench::median(ns_tile), err / mx,
      PIPE ? " (pipe: P constant, not compared)" : (err / mx < 1e-2 ? " OK" : " FAIL"));
  if (stamps) {
    std::vector<long long> h(size_t(NWG) * n * 8);
    CK(cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost));
    const long long t0 = h[0];
    std::printf(
        "  stamps (CTA 0, last run; cycles after WG0's S of tile 0; owner: S, hand-off, PV issued, "
        "PV "
        "done, full k+%d, S k+%d issued | readers: full, hand-off, PV issued, PV done, own S):\n",
        NWG, NWG);
    for (int k = 0; k < std::min(n, 20); ++k) {
      const int o = k % NWG;
      const long long* r = &h[(size_t(o) * n + k) * 8];
      std::printf("    tile %2d owner WG%d: %7lld %7lld %7lld %7lld %7lld %7lld", k, o, r[0] - t0,
                  r[1] - t0, r[2] - t0, r[3] - t0, r[4] - t0, r[5] - t0);
      for (int w = 0; w < NWG; ++w) {
        if (w == o) continue;
        const long long* x = &h[(size_t(w) * n + k) * 8];
        std::printf(" | WG%d: %7lld %7lld %7lld %7lld %7lld", w, x[0] - t0, x[1] - t0, x[2] - t0,
                    x[3] - t0, x[4] - t0);
      }
      std::printf("\n");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 512;
  if (argc > 2) g_only = argv[2];
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("%s, %d SMs, %d tiles of 32 keys per CTA, one CTA per SM\n", prop.name, sms, n);
  // Query rows with a spread of scales (so that row maxima move and the lazy rescale runs),
  // keys in +-1.
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint16_t> hq(size_t(k_rows) * k_dim), hk(size_t(k_stages) * k_tile * k_dim);
  for (int h = 0; h < k_rows; ++h)
    for (int c = 0; c < k_dim; ++c) hq[size_t(h) * k_dim + c] = to_bf(u(rng) * (0.5f + h * 0.1f));
  for (auto& v : hk) v = to_bf(u(rng));
  const float scale = 1.0f / std::sqrt(float(k_dim)), scale_log2 = scale * 1.4426950408889634f;
  // Reference: key j of the sequence is row j % 32 of tile (j / 32) % 4.
  std::vector<double> ref(size_t(k_rows) * k_dim, 0.0);
  {
    const int keys = n * k_tile;
    std::vector<double> s(keys);
    for (int h = 0; h < k_rows; ++h) {
      double mx = -1e300;
      for (int j = 0; j < keys; ++j) {
        const uint16_t* kr = &hk[(size_t((j / k_tile) % k_stages) * k_tile + j % k_tile) * k_dim];
        double d = 0;
        for (int c = 0; c < k_dim; ++c) d += double(bf(hq[size_t(h) * k_dim + c])) * bf(kr[c]);
        s[j] = d * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j < keys; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int j = 0; j < keys; ++j) {
        const uint16_t* kr = &hk[(size_t((j / k_tile) % k_stages) * k_tile + j % k_tile) * k_dim];
        for (int c = 0; c < k_dim; ++c) ref[size_t(h) * k_dim + c] += s[j] / sum * bf(kr[c]);
      }
    }
  }
  uint4 *q = nullptr, *keys = nullptr;
  float* out = nullptr;
  long long *cycles = nullptr, *stamps = nullptr;
  CK(cudaMalloc(&q, hq.size() * 2));
  CK(cudaMalloc(&keys, hk.size() * 2));
  CK(cudaMalloc(&out, size_t(sms) * k_rows * k_dim * 4));
  CK(cudaMalloc(&cycles, 2 * size_t(sms) * sizeof(long long)));
  CK(cudaMalloc(&stamps, size_t(3) * n * 8 * sizeof(long long)));
  CK(cudaMemcpy(q, hq.data(), hq.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(keys, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
  // The rows' pool: base tile i % 4 in the wgmma layout at tile i, 64 tiles per CTA.
  const int64_t pool_tiles = int64_t(sms) * 64;
  uint8_t* pool = nullptr;
  {
    std::vector<uint8_t> swz(size_t(k_stages) * k_tile_bytes);
    for (int t = 0; t < k_stages; ++t)
      for (int r = 0; r < k_tile; ++r)
        for (int c = 0; c < 64; ++c) {
          const size_t o = size_t(t) * k_tile_bytes + (c >> 3) * (k_tile * 128) + r * 128 +
                           (((c & 7) ^ (r & 7)) << 4);
          std::memcpy(&swz[o], &hk[(size_t(t) * k_tile + r) * k_dim + c * 8], 16);
        }
    CK(cudaMalloc(&pool, size_t(pool_tiles) * k_tile_bytes));
    for (int64_t t = 0; t < pool_tiles; t += k_stages)
      CK(cudaMemcpy(pool + t * k_tile_bytes, swz.data(), swz.size(), cudaMemcpyHostToDevice));
  }
  // The read ceiling: bench::read_kernel over 1 GiB, median of 7.
  double read_gbs = 0;
  {
    const size_t bytes = size_t(1) << 30;
    uint4* buf = nullptr;
    uint32_t* sink = nullptr;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMalloc(&sink, 4));
    bench::fill(reinterpret_cast<uint8_t*>(buf), bytes, 7, 0);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> t;
    for (int r = 0; r < 8; ++r) {
      CK(cudaEventRecord(e0));
      bench::read_kernel<<<sms * 8, 512>>>(buf, bytes / 16, sink);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r > 0) t.push_back(ms);
    }
    read_gbs = double(bytes) / (bench::median(t) * 1e-3) / 1e9;
    std::printf("HBM read ceiling (1 GiB read-only): %.1f GB/s\n", read_gbs);
    CK(cudaFree(buf));
    CK(cudaFree(sink));
  }
  {
    // RING 6's pool: row-major [rows, 512] bf16, row r of pool tile t = row r % 32 of base tile
    // t % 4 (the same bytes as the bulk pool, unswizzled: the copies swizzle).
    const int64_t rows = pool_tiles * k_tile;
    uint8_t* rm = nullptr;
    CK(cudaMalloc(&rm, size_t(rows) * k_dim * 2));
    for (int64_t t = 0; t < pool_tiles; t += k_stages)
      CK(cudaMemcpy(rm + t * k_tile_bytes, hk.data(), hk.size() * 2, cudaMemcpyHostToDevice));
    const auto encode = dsv4::cuda::tensor_map_encoder();
    const cuuint64_t dims[2] = {cuuint64_t(k_dim), cuuint64_t(rows)};
    const cuuint64_t strides[1] = {cuuint64_t(k_dim * 2)};
    const cuuint32_t box[2] = {64, cuuint32_t(k_tile)};
    const cuuint32_t elem[2] = {1, 1};
    if (!encode || encode(&g_map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, rm, dims, strides, box, elem,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled failed\n");
      return 1;
    }
  }
  {
    std::vector<int32_t> idx(4096);
    for (int i = 0; i < 4096; ++i) idx[i] = int32_t((i * 2654435761u) % 8192u);
    int32_t* d = nullptr;
    CK(cudaMalloc(&d, idx.size() * 4));
    CK(cudaMemcpy(d, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice));
    g_index_list = d;
  }
  for (int pass = 0; pass < 2; ++pass) {
    std::printf("pass %d\n", pass + 1);
    run<2, false, 0>("2 WGs", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<2, false, 1>("2 WGs ring", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<2, false, 2>("2 WGs rows L2", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<2, false, 4>("2 WGs rows HBM all producers", q, keys, pool, n, scale_log2, sms, out, cycles,
                     ref, nullptr, read_gbs);
    run<2, false, 5>("2 WGs rows HBM + index work", q, keys, pool, n, scale_log2, sms, out, cycles,
                     ref, nullptr, read_gbs);
    run<2, false, 7>("2 WGs rows HBM + index + noinc", q, keys, pool, n, scale_log2, sms, out,
                     cycles, ref, nullptr, read_gbs);
    run<2, false, 6>("2 WGs rows HBM 2D maps", q, keys, pool, n, scale_log2, sms, out, cycles, ref,
                     nullptr, read_gbs);
    run<2, false, 3>("2 WGs rows HBM", q, keys, pool, n, scale_log2, sms, out, cycles, ref, nullptr,
                     read_gbs);
    run<3, false, 0>("3 WGs", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<3, false, 1>("3 WGs ring", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<3, false, 3>("3 WGs rows HBM", q, keys, pool, n, scale_log2, sms, out, cycles, ref, nullptr,
                     read_gbs);
    run<2, true, 0>("2 WGs pipe", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
    run<2, true, 3>("2 WGs pipe rows HBM", q, keys, pool, n, scale_log2, sms, out, cycles, ref,
                    nullptr, read_gbs);
    run<3, true, 0>("3 WGs pipe", q, keys, pool, n, scale_log2, sms, out, cycles, ref);
  }
  std::printf("stamped runs (the stamps cost a few instructions per step)\n");
  run<2, false, 1>("2 WGs ring", q, keys, pool, n, scale_log2, sms, out, cycles, ref, stamps);
  run<2, false, 3>("2 WGs rows HBM", q, keys, pool, n, scale_log2, sms, out, cycles, ref, stamps);
  return 0;
}
