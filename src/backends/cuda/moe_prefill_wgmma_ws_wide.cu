// The wide warp-specialized W4A16 kernel (PREFILL15; moe_prefill_core::wgmma_ws with wide tiles,
// moe_prefill_wgmma_ws.h): tiles of up to k_ws_wide_tile = 256 pairs. The 128-pair kernel it
// derives from (ring, producer / consumer split, expansion, epilogue) is described at the top of
// moe_prefill_wgmma_ws.cu; what both share is in moe_prefill_wgmma_ws_common.cuh.
//
// An expert with more than 128 pairs (Flash T = 8192: ~192 on average) is cut by the 128-pair
// plan into two tiles, and each tile expands the expert's weights again. Here a tile holds up to
// 256 pairs and each consumer warpgroup issues ONE wgmma m64nNk16 per step (N up to 256) instead
// of two m64nNk16 with N <= 128, so the accumulators stay at N / 2 <= 128 registers while the
// expansion per weight element serves up to twice the tokens. The 64 A rows of a warpgroup:
// L1: 32 intermediate rows, W1's in fragment rows g and W3's in g + 8 (slot i = 0 / 1), so one
// thread holds g and u of its row for its tokens and the SwiGLU epilogue stays in the thread;
// L2: 64 rows of W2 (rows g and g + 8 of 16-row tiles as in the core). Blocks: L1 64 intermediate
// rows, L2 128 hidden rows (no partial blocks: hidden and inter are multiples of 128). Every
// output element is the same products summed in the same k order as in the core: the same bits.
// Repacked layout and the PR producer only. Ring: 3 stages of 74 KB (B 64 KB at N = 256).
// Measured (H200, below): 1.03-1.13x at Flash T = 8192 (~192 pairs per expert), but 0.85-0.95x
// where the 128-pair plan already gives one tile per expert (T = 4096, Pro): with the expansion
// per wgmma column the same, one wgmma per step and 3 stages cost ~10%.
//
// PREFILL15 (session 17; bench/kernels/results/h200_2026-11-27_s17_prefill15_*): this kernel
// (tiles of up to 256 pairs, one m64nNk16 with N <= 256 per warpgroup and step, W1 and W3
// rows in one wgmma, 3 stages). Same results bit for bit (H200, two calls: 48 bench comparisons
// with the wgmma core at Flash T = 4096 / 8192 and Pro 4096, 0 differing; parity 32/32 twice).
// Over the 128-pair kernel (same process, alternating, 3 passes, both orders): Flash T = 8192 MXFP4
// 1.03x / 1.07x (run 1 / run 2 geomeans), NVFP4 1.10x / 1.13x; forced where experts hold <= 128
// pairs (Flash T = 4096, Pro 4096) 0.85-0.95x, so automatic only above 128 pairs per expert on
// average (ws_use_wide). Rounding N up to 16 instead of 32 above 128 changed nothing (1.00x).
//
// PREFILL16 (session 17; bench/kernels/results/h200_2026-11-27_s17_prefill16_*): the wide kernel's
// consumers issue two k16 steps per commit group for tiles of up to 128 pairs (k_wd_two_step_n),
// so two wgmmas stay in flight as in the 128-pair kernel: 1.01-1.02x over one step (geomeans),
// still 0.86x (MXFP4) / 0.91x (NVFP4) of the 128-pair kernel at Flash T = 4096 and 0.86x at Pro T =
// 4096: the in-flight depth was not the main part of that gap.
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/moe_prefill_wgmma_ops_wide.cuh"
#include "backends/cuda/moe_prefill_wgmma_ws_common.cuh"

namespace dsv4::cuda::prefill {

namespace {

constexpr int k_wd_max = 256;
constexpr int k_wd_stages = 3;
constexpr int k_wd_atom = k_wd_max * 128;                          // 64 k of 256 token rows
constexpr int k_wd_b = 0;                                          // 2 atoms
constexpr int k_wd_w = 2 * k_wd_atom;                              // [i][consumer thread] x 16
constexpr int k_wd_s = k_wd_w + 2 * k_ws_consumers * 16;           // [128 row slots] x 16
constexpr int k_wd_stage_bytes = k_wd_s + 128 * 16;                // 75776
constexpr int k_wd_pbuf = k_wd_stages * k_wd_stage_bytes;          // 2 x 256 pair ids
constexpr int k_wd_rowtab = k_wd_pbuf + 2 * k_wd_max * 4;          // 256 B source rows
constexpr int k_wd_bars = k_wd_rowtab + k_wd_max * 4;              // full[stages], empty[stages]
constexpr int k_wd_smem = k_wd_bars + 2 * k_wd_stages * 8 + 1024;  // + alignment slack
static_assert(k_wd_stage_bytes % 1024 == 0 && k_wd_smem <= 227 * 1024, "wide stage layout");
static_assert(k_wd_max == k_ws_wide_tile, "the plan's tile");
// Consumers: 128 accumulators at N = 256 plus one matrix's A and scales; producer: N / 8 = 32 B
// row chunk indices at N = 256.
constexpr int k_wd_consumer_regs = 216;
constexpr int k_wd_producer_regs = 72;
static_assert(k_wd_consumer_regs * 256 + k_wd_producer_regs * 128 <= 168 * 384, "register split");
// Tiles of up to this N issue two k16 steps (two wgmmas) per commit group, wider ones one.
// PREFILL16 (H200, one process, 3 passes x both orders; geomeans over one step per group at
// every N): Flash T = 4096 MXFP4 1.020x, NVFP4 1.019x; T = 8192 1.023x / 1.023x; Pro T = 4096
// MXFP4 1.010x. Two steps at every N instead: T = 8192 MXFP4 0.985x (its N = 256 MXFP4 L1 consumer
// spills 120-128 bytes), NVFP4 1.030x.
constexpr int k_wd_two_step_n = 128;

// Row of fragment row slot i (row g + 8 i of the warpgroup's m64 tile) of warpgroup h, warp w:
// L1 W1 (i = 0) / W3 (i = 1) row 64 rb + 32 h + 8 w + g; L2 W2 row 128 rb + 64 h + 16 w + 8 i + g.
template <bool UP>
__device__ __forceinline__ int64_t wd_row(int rb, int h, int w, int i, int g) {
  return UP ? int64_t(rb) * k_wd_up_rows + 32 * h + 8 * w + g
            : int64_t(rb) * k_wd_down_rows + 64 * h + 16 * w + 8 * i + g;
}

// ws_produce_item (PR) for the wide layout: producer thread p serves consumer threads p and
// p + 128 (slots i = 0, 1 each: 4 weight copies a round), scale row slot p
// (S = 64 h + 16 w + 8 i + g) and B chunk column p % 16 of token rows p / 16 + 8 q, q < N / 8.
template <weight_kind K, bool UP, int N>
__device__ __forceinline__ void wd_produce_item(const ws_args& a, const ws_ring& ring, int p,
                                                int& k, int4 tile, int rb, int rounds) {
  const int e = tile.x, ntok = tile.z;
  const int64_t cols = a.wa.cols;
  int* rowtab = reinterpret_cast<int*>(ring.gen + k_wd_rowtab);
  mbar::named_sync(3, 128);  // every producer thread issued the previous item's B copies
#pragma unroll
  for (int u = 0; u < (N > 128 ? 2 : 1); ++u) {
    const int n = p + 128 * u;
    const int pair = n < ntok ? __ldg(a.sorted + tile.y + n) : -1;
    rowtab[n] = pair < 0 ? -1 : UP ? pair / a.top_k : pair;
  }
  mbar::named_sync(3, 128);
  const int warp = p >> 5, lane = p & 31, g = lane >> 2, c = lane & 3;
  const uint8_t* wbase[2];  // slot i of warpgroup 0; warpgroup 1's rows are dh bytes on
#pragma unroll
  for (int i = 0; i < 2; ++i)
    wbase[i] =
        locate_tile<K, true>(i ? a.wb : a.wa, e, wd_row<UP>(rb, 0, warp, i, g)).w[0] + c * 16;
  // Warpgroup 1: 32 (L1) / 64 (L2) rows on, 2 / 4 rows of 16-row repacked tiles.
  const uint32_t dh = uint32_t((UP ? 2 : 4) * (cols / 128) * fp4_repack::k_tile_bytes);
  const uint8_t* ssrc;
  {
    const int h = p >> 6, sw = (p >> 4) & 3, i = (p >> 3) & 1, sg = p & 7;
    ssrc = locate_tile<K, true>(i ? a.wb : a.wa, e, wd_row<UP>(rb, h, sw, i, sg)).s[0];
  }
  const bool f32_scale = a.wa.scale_f32;
  const int j = p & 15;
  constexpr int nq = N / 8;
  uint32_t bchunk[nq];
#pragma unroll
  for (int q = 0; q < nq; ++q) {
    const int row = rowtab[(p >> 4) + 8 * q];
    bchunk[q] = row < 0 ? ~0u : uint32_t(row) * uint32_t(cols / 8);
  }
  const uint32_t bdst =
      k_wd_b + (j >> 3) * k_wd_atom + (p >> 4) * 128 + (((j & 7) ^ (p >> 4)) << 4);
  for (int rr = 0; rr < rounds; ++rr) {
    const int kk = k + rr;
    const int stage = kk % k_wd_stages;
    if (kk >= k_wd_stages)
      mbar::wait(ring.full + 8 * (k_wd_stages + stage), uint32_t(kk / k_wd_stages - 1) & 1u);
    const uint32_t st = ring.smem + uint32_t(stage) * k_wd_stage_bytes;
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        cp_async_cg_16_l2_256(st + k_wd_w + (i * k_ws_consumers + 128 * h + p) * 16,
                              wbase[i] + (h * dh + rr * int64_t(fp4_repack::k_tile_bytes)));
    const uint32_t sd = st + k_wd_s + p * 16;
    if constexpr (K == weight_kind::nvfp4)
      cp_async_ca<8>(sd, ssrc + rr * 8);
    else if (f32_scale)
      cp_async_cg_16(sd, ssrc + rr * 16);
    else
      cp_async_ca<4>(sd, ssrc + rr * 4);
    const uint64_t bs = reinterpret_cast<uint64_t>(a.src + (rr * k_round + 8 * j));
#pragma unroll
    for (int q = 0; q < nq; ++q)
      if (bchunk[q] != ~0u) {
        uint64_t src;
        asm volatile("mad.wide.u32 %0, %1, 16, %2;\n" : "=l"(src) : "r"(bchunk[q]), "l"(bs));
        cp_async_cg_16(st + bdst + q * 1024, reinterpret_cast<const void*>(src));
      }
    const uint32_t bar = ring.full + 8 * stage;
    mbar::arrive(bar);
    cp_async_mbarrier_arrive_noinc(bar);
  }
  k += rounds;
}

// ws_consume_item for the wide layout: one accumulator of N / 2 registers, one matrix's A per
// step (MXFP4: PREFILL9's split scale and second step; NVFP4: expand_step), the same k_carry.
// G k16 steps (wgmmas) per commit group, 1 or 2: with wait_group 1 after each commit, G wgmmas stay
// in flight while the next group's A is expanded.
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H, int N, int G>
__device__ __forceinline__ void wd_consume_item(const ws_args& a, const ws_ring& ring, int& k,
                                                int4 tile, int rb, int rounds) {
  const int tid = threadIdx.x, lane = tid % k_warp_size, g = lane / 4, c = lane % 4;
  const int wg = tid / 128, warp = (tid / k_warp_size) % 4;
  const int t0 = tid % 128;
  const int pair0 = t0 < tile.z ? __ldg(a.sorted + tile.y + t0) : -1;
  const int pair1 = N > 128 && t0 + 128 < tile.z ? __ldg(a.sorted + tile.y + t0 + 128) : -1;
  const bool f32_scale = a.wa.scale_f32;
  constexpr bool mx = K == weight_kind::mxfp4;
  constexpr bool k_carry = mx;  // as ws_consume_item (ptxas serializes NVFP4's otherwise)

  float acc[N / 2];
#pragma unroll
  for (int jj = 0; jj < N / 2; ++jj) acc[jj] = 0.0f;

  const auto release = [&](int kk) {
    __syncwarp();
    if (lane == 0) mbar::arrive(ring.full + 8 * (k_wd_stages + kk % k_wd_stages));
  };
  for (int r = 0; r < rounds; ++r) {
    const int kk = k + r;
    mbar::wait(ring.full + 8 * (kk % k_wd_stages), uint32_t(kk / k_wd_stages) & 1u);
    wgmma::fence_async_smem();  // cp.async (generic proxy) writes before wgmma's async reads
    const uint32_t st = ring.smem + uint32_t(kk % k_wd_stages) * k_wd_stage_bytes;
    tile_round cur;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      cur.v[i] = lds_16(st + k_wd_w + (i * k_ws_consumers + tid) * 16);
      const uint32_t sa = st + k_wd_s + (64 * wg + 16 * warp + 8 * i + g) * 16;
      uint32_t v;
      if constexpr (K == weight_kind::nvfp4) {
        asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(v) : "r"(sa + 2 * c) : "memory");
      } else if (f32_scale) {
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(sa + 4 * c) : "memory");
        v = (v >> 23) & 0xFFu;
      } else {
        asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(sa + c) : "memory");
      }
      cur.s[i] = v;
    }
    tile_scale sc;
    if constexpr (mx)
      sc = ws_mx_scale_of(cur);
    else
      sc = scale_of<K>(cur);
    uint32_t two = 0;
    if constexpr (mx) two = __any_sync(~0u, sc.two);
    // The stage base is 1024-aligned and every address < 2^18: step offsets never carry.
    const uint64_t d0 = smem_desc(st + k_wd_b);
    // [group & 1][step of the group]: rewritten two groups on, after wait_group 1 retired it.
    uint32_t am[2][G][4];
    const auto expand = [&](auto s_const, uint32_t(&dst)[4]) {
      constexpr int s = decltype(s_const)::value;
      if constexpr (mx) {
        ws_expand_first<K, s, true, true>(cur, sc, dst);
        ws_mx_second_step_one(two, sc, dst);
      } else {
        expand_step<K, s, true>(cur, sc, dst);
      }
    };
    // Commit group q: steps G q .. G q + G - 1 (the same wgmma sequence into acc in k order, so
    // the same bits for every G).
    const auto group = [&](auto q_const) {
      constexpr int q = decltype(q_const)::value;
      expand(std::integral_constant<int, G * q>{}, am[q & 1][0]);
      if constexpr (G == 2) expand(std::integral_constant<int, G * q + 1>{}, am[q & 1][G - 1]);
      __syncwarp();
      wgmma::fence();
#pragma unroll
      for (int u = 0; u < G; ++u) {
        const int s = G * q + u;
        wgmma_rs<N>::run(acc, am[q & 1][u],
                         d0 + uint64_t(((s >> 2) * k_wd_atom + (s & 3) * 32) >> 4));
      }
      wgmma::commit();
      wgmma::wait<1>();
      if constexpr (q == 0 && k_carry)
        if (r > 0) release(kk - 1);
    };
    group(std::integral_constant<int, 0>{});
    group(std::integral_constant<int, 1>{});
    group(std::integral_constant<int, 2>{});
    group(std::integral_constant<int, 3>{});
    if constexpr (G == 1) {
      group(std::integral_constant<int, 4>{});
      group(std::integral_constant<int, 5>{});
      group(std::integral_constant<int, 6>{});
      group(std::integral_constant<int, 7>{});
    }
    if constexpr (!k_carry) {
      wgmma::wait<0>();
      release(kk);
    }
  }
  if constexpr (k_carry) {
    wgmma::wait<0>();
    release(k + rounds - 1);
  }
  k += rounds;
#pragma unroll
  for (int jj = 0; jj < N / 2; ++jj) wgmma::reg_fence(acc[jj]);

  int* pbuf = reinterpret_cast<int*>(ring.gen + k_wd_pbuf) + k_wd_max * wg;
  mbar::named_sync(1 + wg, 128);  // this warpgroup's previous epilogue read its pair ids
  pbuf[t0] = pair0;
  if constexpr (N > 128) pbuf[t0 + 128] = pair1;
  mbar::named_sync(1 + wg, 128);
  const int64_t r0 = UP ? int64_t(rb) * k_wd_up_rows + 32 * wg + 8 * warp
                        : int64_t(rb) * k_wd_down_rows + 64 * wg + 16 * warp;
  // The wide epilogue: chunks of 4 token blocks (8 (L1) / 16 (L2) values); rows r0 + g (L1: W1's g
  // in fragment row g, W3's u in row g + 8, of intermediate row r0 + g; L2: W2 rows r0 + g and
  // r0 + g + 8) are always inside the matrix, so no bound checks.
  ws_store_tile_one<out_t, K, UP, N, PERMUTE_H, 4, false>(
      acc, tile.x, tile.z, r0, g, a.wa.rows, false, a.wa, a.wb, pbuf, c, a.limit, a.pair_weights,
      static_cast<out_t*>(a.dst));
}

// DS: the largest tile N whose consumers issue two k16 steps per commit group (k_wd_two_step_n;
// a template parameter so that the A/B of PREFILL16 and the engine run the same instantiation).
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H, int DS>
__global__ void __launch_bounds__(k_ws_threads, 1)
    moe_prefill_wgmma_ws_wide_kernel(ws_args a, int row_blocks) {
#if DSV4_PREFILL_WGMMA
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t pad = (1024u - (raw & 1023u)) & 1023u;
  const ws_ring ring{raw + pad, raw + pad + k_wd_bars, smem_raw + pad};
  const int items = *a.tile_count * row_blocks;
  if (int(blockIdx.x) >= items) return;  // uniform over the block
  if (threadIdx.x == 0) {
    for (int s = 0; s < k_wd_stages; ++s) {
      mbar::init(ring.full + 8 * s, 256);  // a plain and a noinc arrival per producer thread
      mbar::init(ring.full + 8 * (k_wd_stages + s), k_ws_consumers / k_warp_size);
    }
  }
  __syncthreads();
  const int rounds = int(a.wa.cols / k_round);
  int k = 0;
  int4 tile = a.tiles[blockIdx.x / row_blocks];
  if (threadIdx.x >= k_ws_consumers) {
    mbar::setmaxnreg_dec<k_wd_producer_regs>();
    const int p = int(threadIdx.x) - k_ws_consumers;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 64)
        wd_produce_item<K, UP, 64>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 128)
        wd_produce_item<K, UP, 128>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 160)
        wd_produce_item<K, UP, 160>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 192)
        wd_produce_item<K, UP, 192>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 224)
        wd_produce_item<K, UP, 224>(a, ring, p, k, cur, rb, rounds);
      else
        wd_produce_item<K, UP, 256>(a, ring, p, k, cur, rb, rounds);
    }
    cp_async_wait_all();
  } else {
    mbar::setmaxnreg_inc<k_wd_consumer_regs>();
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 64)
        wd_consume_item<out_t, K, UP, PERMUTE_H, 64, (64 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                         rounds);
      else if (cur.z <= 128)
        wd_consume_item<out_t, K, UP, PERMUTE_H, 128, (128 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                           rounds);
      else if (cur.z <= 160)
        wd_consume_item<out_t, K, UP, PERMUTE_H, 160, (160 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                           rounds);
      else if (cur.z <= 192)
        wd_consume_item<out_t, K, UP, PERMUTE_H, 192, (192 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                           rounds);
      else if (cur.z <= 224)
        wd_consume_item<out_t, K, UP, PERMUTE_H, 224, (224 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                           rounds);
      else
        wd_consume_item<out_t, K, UP, PERMUTE_H, 256, (256 <= DS ? 2 : 1)>(a, ring, k, cur, rb,
                                                                           rounds);
    }
  }
#else
  (void)a;
  (void)row_blocks;
  __trap();
#endif
}

// The wide kernel (moe_prefill_set_ws_wide): -1 automatic (ws_use_wide), 0 off, 1 on.
int g_ws_wide = -1;

}  // namespace

template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H>
cudaError_t launch_wgmma_ws_wide(int64_t row_blocks, int64_t tile_slots, const __nv_bfloat16* src,
                                 int top_k, const int* tile_count, const int4* tiles,
                                 const int* sorted, const fp4_weight& wa, const fp4_weight& wb,
                                 float limit, const float* pair_weights, out_t* dst,
                                 cudaStream_t stream) {
  auto kernel = moe_prefill_wgmma_ws_wide_kernel<out_t, K, UP, PERMUTE_H, k_wd_two_step_n>;
  if (const cudaError_t e = allow_dynamic_smem(kernel, k_wd_smem); e != cudaSuccess) return e;
  const int64_t items = row_blocks * tile_slots;
  if (items == 0) return cudaSuccess;
  ws_args a{};
  a.src = src;
  a.top_k = top_k;
  a.tile_count = tile_count;
  a.tiles = tiles;
  a.sorted = sorted;
  a.wa = wa;
  a.wb = wb;
  a.limit = limit;
  a.pair_weights = pair_weights;
  a.dst = dst;
  const int sms = current_device_sm_count();
  const unsigned grid = unsigned(items < sms ? items : sms);
  kernel<<<grid, k_ws_threads, k_wd_smem, stream>>>(a, int(row_blocks));
  return cudaGetLastError();
}

// L1 exact (BF16 h' in the logical k order), L1 official (f32 h), L2 (f32 out).
#define DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(O, K, UP, PH)                            \
  template cudaError_t launch_wgmma_ws_wide<O, K, UP, PH>(                              \
      int64_t, int64_t, const __nv_bfloat16*, int, const int*, const int4*, const int*, \
      const fp4_weight&, const fp4_weight&, float, const float*, O*, cudaStream_t);
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4, true, true)
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4, true, true)
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(float, weight_kind::mxfp4, true, false)
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(float, weight_kind::nvfp4, true, false)
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(float, weight_kind::mxfp4, false, false)
DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE(float, weight_kind::nvfp4, false, false)
#undef DSV4_PREFILL_WGMMA_WS_WIDE_INSTANTIATE

bool ws_use_wide(bool repacked, int64_t pairs, int64_t experts) {
  if (!repacked) return false;
  if (g_ws_wide >= 0) return g_ws_wide != 0;
  return pairs > int64_t(k_wgmma_tile) * experts;
}

}  // namespace dsv4::cuda::prefill

namespace dsv4::cuda {

void moe_prefill_set_ws_wide(int mode) {
  prefill::g_ws_wide = mode;
}

}  // namespace dsv4::cuda
