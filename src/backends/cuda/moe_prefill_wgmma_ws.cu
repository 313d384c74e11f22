// The warp-specialized persistent variant of the W4A16 wgmma core (moe_prefill_core::wgmma_ws,
// moe_prefill_wgmma_ws.h): the arithmetic of moe_prefill_wgmma_kernel.cuh (same rows per warp,
// same A fragments from expand_step, same logical k order, same wgmma m64nNk16 sequence per
// accumulator, same epilogue store_tile), so the same results bit for bit; what changes is who
// moves the data and how the warps meet.
//
// 384 threads: warps 0-7 are two consumer warpgroups (the core's 2 x 64 weight rows of a block),
// warps 8-11 a producer warpgroup (setmaxnreg k_ws_producer_regs / k_ws_consumer_regs) that
// fills a ring of k_ws_stages stages by cp.async: per 128-k round the token tile (B, N rows of
// 256 bytes, 128-byte swizzle), the consumers' weight bytes in their per-thread slot order and
// the weight rows' scale bytes. Each producer thread arrives on the stage's full barrier twice,
// a plain arrival and cp.async.mbarrier.arrive.noinc (count 256: w4a8_ws's noinc scheme, its
// faster one); the consumers fence the async proxy after each wait and give a stage back through
// its empty barrier (one arrival per consumer warp) once the wgmmas that read it retired (MXFP4:
// at the wait_group 1 of the next round's first step; NVFP4: at the end of the round, see
// k_carry). No CTA-wide barrier: the two
// consumer warpgroups drift apart and one's expansion or epilogue runs under the other's
// wgmmas. The grid is persistent (one CTA per SM; work items (tile slot, row block), row block
// fastest, dealt round-robin) and the ring runs on across items, so the producer loads the next
// item while the consumers store the current one.
//
// B needs no register staging because it arrives pre-permuted into the logical k order
// (moe_prefill_permute_kernel: x' from x; h' from L1's epilogue with PERMUTE_H in the exact order,
// from L1's f32 h by ws_quantize_permute_kernel, which also does the FP8 rounding, in the official
// order), BF16 as the core stages it: so B in shared memory is byte for byte the core's.
//
// Measured (H200, bench_moe_linear --prefill-ws, PREFILL7 session 13; results
// bench/kernels/results/h200_2026-11-26_s13_prefill7_*): outputs equal to the wgmma core's bit for
// bit in all 104 comparisons of two runs (Flash T = 256 .. 8192, Pro T = 4096, both formats, both
// orders, both layouts). Repacked layout, speed-up over the wgmma core: Flash T = 256 /
// 1024 1.25-1.40x; T = 4096 exact 1.01-1.02x (322 / 310 TFLOP/s MXFP4 / NVFP4, 43% / 37% of cuBLAS
// BF16 dense), official 1.11x; T = 8192 exact 0.96-0.97x, official 1.04x; Pro T = 4096 1.08x
// exact, 1.12x official (298 / 291 TFLOP/s, 38-39% of dense). Checkpoint layout (first
// run): 1.02-1.23x. ncu (Flash MXFP4 T = 4096, repacked, exact): 0.42 instructions issued per
// scheduler and cycle, 2.98 warps and 0.69 eligible per scheduler, SM throughput 40-44%:
// latency-bound, not issue- or bandwidth-bound; each consumer warpgroup has one or two commit
// groups (2-4 wgmma k16) in flight. Tried and dropped: two k16 steps per commit group (0.94-1.04x
// of one, 1.00x geomean); two groups in flight (ptxas serializes every wgmma, as it does when NVFP4
// carries a round's last wgmmas over the ring wait, see k_carry).
//
// PREFILL8 (session 14; bench/kernels/results/h200_2026-11-26_s14_prefill8_*): ncu's source
// counters (same case) put 13.5% of all warp samples, ~20% of the consumers', on the consumers'
// full-barrier wait, and the producer waited on its empty barrier only ~12% of its time: the
// 40-register producer was the limit, ~530 SASS instructions a round at N = 128 (each B copy
// re-derived its addresses: ~28 instructions, spills). The producer PR (ws_produce_item) keeps its
// B rows as 32-bit chunk indices in registers with a 224 / 56 split: ~110 instructions a round, no
// spills in the loop; tensor pipe active 44% -> 58%, L1 kernel 3.2 -> 2.4 ms under ncu. Bench
// (repacked, over session 13's producer): MXFP4 1.12-1.22x at T >= 4096 (Flash T = 8192 exact
// 399 TFLOP/s, 53% of cuBLAS BF16 dense; T = 4096 363, 47%; Pro 333, 43%), NVFP4 1.10-1.17x at
// Flash T >= 4096 but 0.91-0.93x at T <= 1024 (cause not measured; ws_use_pr keeps session 13's
// producer there). Also dropped: two wgmma groups in flight for MXFP4 N <= 96 (the only
// instantiations ptxas keeps pipelined: C7511 / C7512 otherwise), 0.94-1.01x.
//
// PREFILL9 (session 15; bench/kernels/results/h200_2026-11-27_s15_prefill9_*): the consumers'
// SASS per 128-k round (N = 128, repacked, L1) was ~515 instructions for MXFP4 and ~402 for
// NVFP4: per k16 step 22 integer (5 SHF + 6 LOP3 per word: the minimum for this bit layout, an
// exhaustive search over rotation sets mod 16) + 8 HMUL2 + for MXFP4 8 more HMUL2 predicated on
// E8M0 > 128 (issued even when off) + ~6 uniform descriptor instructions; per round ~50-100 for
// the scales. MXFP4 now: ws_mx_second_step behind one warp-uniform branch, ws_mx_scale_of, one
// descriptor per round, the shift decode: ~405 executed per round (-21%). Measured (H200, two
// calls, one process, repacked, over session 14's consumers): MXFP4 0.97-1.05x, geomean 1.016 over
// 32 comparisons (Flash T = 1024 / 4096 / 8192, Pro 4096, both orders, two passes); NVFP4 with
// the same changes (and its E4M3 pairs through one cvt.f16x2.e4m3x2): 0.91-1.07x, geomean 0.99,
// not kept; both formats without the shift decode: geomean 0.99. Diagnostic variants (wrong
// results, same call), geomeans: no expansion at all (135 instructions a round) 1.22x (1.12-1.34),
// no B copies 1.06x, no epilogue 1.14x: the expansion is a part of the gap to cuBLAS, not the wall
// (with none, Flash MXFP4 T = 8192 would be at ~62% of dense).
//
// PREFILL10 (session 16; bench/kernels/results/h200_2026-11-27_s16_prefill10_*): staggering the
// consumer warpgroups so that their epilogues do not coincide (warpgroup 1 started each item once
// warpgroup 0 reached its round 1, 2 or 3; named barrier, same results bit for bit) was slower:
// 0.98x geomean for each lag over 32 comparisons each (H200, both formats, Flash T = 1024 / 4096 /
// 8192 and Pro 4096, both orders, two passes; 0.89-1.05x). A warpgroup running its rounds alone
// (at the start and end of every item) is slower than the two together, so the overlap buys
// nothing: the same holds a fortiori for a ping-pong schedule (one warpgroup's main loop at a
// time) unless a single warpgroup's main loop keeps the tensor pipe busy.
//
// PREFILL13 (session 16; bench/kernels/results/h200_2026-11-27_s16_prefill13_*, code in commit
// 744b6a7 of wip/prefill13): a fourth warpgroup converting each stage's FP4 into BF16 A tiles in
// shared memory (the consumers' exact A registers, stmatrix .x4 into 128-byte-swizzled K-major
// 64 x 64 k tiles, two half-round slots per consumer warpgroup, mbarriers, async-proxy fence) and
// consumers issuing SS wgmma with no expansion: outputs bit for bit equal (H200, 24 comparisons,
// parity 28/28) but 0.72-0.87x (geomean MXFP4 0.77, NVFP4 0.82 over 18 comparisons each; Flash
// T = 4096 / 8192, Pro 4096, both orders). The converter (~1000 SASS instructions a round, one warp
// per scheduler, ring cut to 3 stages for the 64 KB of A slots) is slower than the expansion it
// replaced in eight warps; not kept.
//
// PREFILL17 (session 18; bench/kernels/results/h200_2026-11-27_s18_prefill17_*): the q4 kernel
// (moe_prefill_wgmma_ws_q4_kernel, below): four consumer warpgroups of one accumulator each in
// place of two of two, same ring, producer and results (bit for bit: 24 bench comparisons with
// the wgmma core, parity 42/42). PREFILL10's stagger said each warpgroup's own chain (main loop
// plus epilogue) is the critical path, not the tensor pipe left idle in the epilogues, so the
// lever is more warps per scheduler to cover those chains (4 consumer warps instead of 2). H200,
// one process, epi 16 (q4) over epi 4 (this kernel), 3 passes x both orders at T = 4096:
// NVFP4 Flash 1.03-1.07x, Pro 1.15-1.17x; MXFP4 Flash 0.98-1.04x, Pro 1.00-1.03x (geomean
// 1.013; MXFP4 loses this kernel's k_carry, which at 104 registers ptxas serializes, C7512).
// Default where the PR producer runs (moe_prefill_set_ws_epilogue(16)).
//
// The wide kernel (tiles of up to 256 pairs, PREFILL15 / PREFILL16) is in
// moe_prefill_wgmma_ws_wide.cu; what both kernels share in moe_prefill_wgmma_ws_common.cuh.
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/moe_prefill_fp8.cuh"
#include "backends/cuda/moe_prefill_wgmma_permute.cuh"
#include "backends/cuda/moe_prefill_wgmma_ws_common.cuh"

namespace dsv4::cuda::prefill {

namespace {

constexpr int k_ws_stages = 4;
// Register split (setmaxnreg), consumers x 256 + producer x 128 <= 168 x 384, the launch cap of
// __launch_bounds__(384, 1): PR (the producer with its B rows in registers) 224 / 56, else
// 232 / 40.
template <bool PR>
constexpr int k_ws_consumer_regs = PR ? 224 : 232;
template <bool PR>
constexpr int k_ws_producer_regs = PR ? 56 : 40;
static_assert(k_ws_consumer_regs<true> * 256 + k_ws_producer_regs<true> * 128 <= 168 * 384 &&
                  k_ws_consumer_regs<false> * 256 + k_ws_producer_regs<false> * 128 <= 168 * 384,
              "register split");
// Stage layout (bytes; each stage 1024-aligned for the swizzle atoms).
constexpr int k_ws_b = 0;                                  // 2 atoms of 128 rows x 128 bytes
constexpr int k_ws_w = 2 * k_atom_bytes;                   // [m][i][consumer thread] x 16
constexpr int k_ws_s = k_ws_w + 4 * k_ws_consumers * 16;   // [256 row slots] x 16
constexpr int k_ws_stage_bytes = k_ws_s + 256 * 16;        // 53248
constexpr int k_ws_pbuf = k_ws_stages * k_ws_stage_bytes;  // 2 x 128 pair ids (per consumer WG)
constexpr int k_ws_rowtab = k_ws_pbuf + 2 * 128 * 4;       // 128 B source rows (producer)
constexpr int k_ws_bars = k_ws_rowtab + 128 * 4;           // full[stages], empty[stages]
constexpr int k_ws_smem = k_ws_bars + 2 * k_ws_stages * 8 + 1024;  // + alignment slack
static_assert(k_ws_stage_bytes % 1024 == 0 && k_ws_smem <= 227 * 1024, "stage layout");

// First row (fragment row g, i = 0) of consumer warpgroup h, warp `warp`, accumulator m: the
// core's block_args r0 (plus b_offset for m = 1 in L2).
template <bool UP>
__device__ __forceinline__ int64_t ws_row0(int rb, int h, int warp, int m) {
  return UP ? int64_t(rb) * k_up_rows + h * 64 + warp * 16
            : int64_t(rb) * k_down_rows + h * 128 + warp * 16 + 64 * m;
}

// Producer thread p (0..127) serves consumer threads p and p + 128 (warpgroup h = 0, 1; warp
// p / 32, lane p % 32): their weight slots of both accumulators, 16 bytes each per round
// (coalesced: a warp's copies are 8 rows x 64 bytes, or 512 contiguous repacked bytes); the scale
// row slots p and p + 128 (R = 64 (2 m + h) + 16 warp + 8 i + g); B chunk column p % 16 (16
// bytes of the 256 of a token row's round) of token rows p / 16 + 8 q.
template <weight_kind K, bool UP, bool RP, bool PR, int N>
__device__ __forceinline__ void ws_produce_item(const ws_args& a, const ws_ring& ring, int p,
                                                int& k, int4 tile, int rb, int rounds) {
  const int e = tile.x, ntok = tile.z;
  const int64_t cols = a.wa.cols;
  int* rowtab = reinterpret_cast<int*>(ring.gen + k_ws_rowtab);
  const int pair = p < ntok ? __ldg(a.sorted + tile.y + p) : -1;
  mbar::named_sync(3, 128);  // every producer thread issued the previous item's B copies
  rowtab[p] = pair < 0 ? -1 : UP ? pair / a.top_k : pair;
  mbar::named_sync(3, 128);
  const int warp = p >> 5, lane = p & 31, g = lane >> 2, c = lane & 3;
  // Weight rows: warpgroup h and fragment row i are fixed offsets from the (h, i) = (0, 0) row
  // in both layouts (row + 8 i and + 64 h (L1) / 128 h (L2), all within the matrix's 16-row tile
  // grid); L2's second half block may lie past the last row (hidden % 256 == 128): not copied
  // (its accumulators are never stored).
  const uint8_t* wbase[2];
#pragma unroll
  for (int m = 0; m < 2; ++m)
    wbase[m] =
        locate_tile<K, RP>(m ? a.wb : a.wa, e, ws_row0<UP>(rb, 0, warp, m) + g).w[0] + c * 16;
  constexpr int hrows = UP ? 64 : 128;
  const uint32_t di = RP ? uint32_t(fp4_repack::k_tile_bytes / 2) : uint32_t(4 * cols);
  const uint32_t dh = RP ? uint32_t(hrows / 16 * (cols / 128) * fp4_repack::k_tile_bytes)
                         : uint32_t(hrows * cols / 2);
  const bool upper = ws_row0<UP>(rb, 1, 0, 0) < a.wa.rows;
  const uint8_t* ssrc[2];  // scale row slots p and p + 128 (rows past the end clamped)
  {
    const int h = p >> 6, sw = (p >> 4) & 3, i = (p >> 3) & 1, sg = p & 7;
#pragma unroll
    for (int m = 0; m < 2; ++m)
      ssrc[m] = locate_tile<K, RP>(m ? a.wb : a.wa, e, ws_row0<UP>(rb, h, sw, m) + sg).s[i];
  }
  constexpr int64_t wround = RP ? fp4_repack::k_tile_bytes : 64;
  // Scale bytes per row and round: E8M0 4, f32 16, E4M3 (NVFP4) 8.
  const bool f32_scale = a.wa.scale_f32;
  const int j = p & 15;
  // PR: this thread's B rows n = p / 16 + 8 q read from rowtab once per item; n & 7 = p / 16, so
  // every row's destination is one per-thread offset plus 1024 q, and a copy costs one IMAD.WIDE.
  // (Without, the 40-register producer re-derived each copy's addresses from rowtab, the
  // parameters and the thread index: ~28 instructions a copy, 16 copies a round.)
  // Kept as 32-bit 16-byte chunk indices (row * cols / 8; launch_ws checks the range, ~0u: past
  // the tile) and widened by one mad.wide per copy: 64-bit products hoisted out of the round loop
  // would not fit the producer's registers.
  constexpr int nq = N / 8;
  uint32_t bchunk[nq];
  if constexpr (PR) {
#pragma unroll
    for (int q = 0; q < nq; ++q) {
      const int row = rowtab[(p >> 4) + 8 * q];
      bchunk[q] = row < 0 ? ~0u : uint32_t(row) * uint32_t(cols / 8);
    }
  }
  const uint32_t bdst =
      k_ws_b + (j >> 3) * k_atom_bytes + (p >> 4) * 128 + (((j & 7) ^ (p >> 4)) << 4);
  for (int rr = 0; rr < rounds; ++rr) {
    const int kk = k + rr;
    const int stage = kk % k_ws_stages;
    if (kk >= k_ws_stages)
      mbar::wait(ring.full + 8 * (k_ws_stages + stage), uint32_t(kk / k_ws_stages - 1) & 1u);
    const uint32_t st = ring.smem + uint32_t(stage) * k_ws_stage_bytes;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          if (h == 0 || upper)
            cp_async_cg_16_l2_256(st + k_ws_w + ((2 * m + i) * k_ws_consumers + 128 * h + p) * 16,
                                  wbase[m] + (h * dh + i * di) + rr * wround);
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const uint32_t sd = st + k_ws_s + (p + 128 * m) * 16;
      if constexpr (K == weight_kind::nvfp4)
        cp_async_ca<8>(sd, ssrc[m] + rr * 8);
      else if (f32_scale)
        cp_async_cg_16(sd, ssrc[m] + rr * 16);
      else
        cp_async_ca<4>(sd, ssrc[m] + rr * 4);
    }
    if constexpr (PR) {
      const uint64_t bs = reinterpret_cast<uint64_t>(a.src + (rr * k_round + 8 * j));
#pragma unroll
      for (int q = 0; q < nq; ++q)
        if (bchunk[q] != ~0u) {
          uint64_t src;
          asm volatile("mad.wide.u32 %0, %1, 16, %2;\n" : "=l"(src) : "r"(bchunk[q]), "l"(bs));
          cp_async_cg_16(st + bdst + q * 1024, reinterpret_cast<const void*>(src));
        }
    } else {
#pragma unroll
      for (int q = 0; q < N / 8; ++q) {
        const int n = (p >> 4) + 8 * q;
        if (n < ntok)
          cp_async_cg_16(
              st + k_ws_b + (j >> 3) * k_atom_bytes + n * 128 + (((j & 7) ^ (n & 7)) << 4),
              a.src + int64_t(rowtab[n]) * cols + int64_t(rr) * k_round + 8 * j);
      }
    }
    const uint32_t bar = ring.full + 8 * stage;
    mbar::arrive(bar);
    cp_async_mbarrier_arrive_noinc(bar);
  }
  k += rounds;
}

// MXFP4's second scale step (E8M0 > 128: m2 = 2^(e - 128), NaN for 255; 1.0 otherwise) on both
// matrices' A registers of a step, skipped by a branch when no lane of the warp needs it (`two`
// warp-uniform). expand_step predicates these 8 multiplies per thread instead, and a predicated-off
// instruction still takes its issue slot: 8 of the ~48 instructions of every step, for a path only
// block scales above 2 (E8M0 > 128, weights beyond 12) take. Lanes of a warp that takes it without
// needing it multiply by 1.0: exact. (The parity cases' wide scales, E8M0 110..141, take it.)
__device__ __forceinline__ void ws_mx_second_step(uint32_t two, const tile_scale (&sc)[2],
                                                  uint32_t (&a)[2][4]) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %8, 0;\n@!p bra.uni WS_MX_SECOND_DONE;\n"
      "mul.rn.bf16x2 %0, %0, %9;\nmul.rn.bf16x2 %1, %1, %10;\n"
      "mul.rn.bf16x2 %2, %2, %9;\nmul.rn.bf16x2 %3, %3, %10;\n"
      "mul.rn.bf16x2 %4, %4, %11;\nmul.rn.bf16x2 %5, %5, %12;\n"
      "mul.rn.bf16x2 %6, %6, %11;\nmul.rn.bf16x2 %7, %7, %12;\n"
      "WS_MX_SECOND_DONE:\n}\n"
      : "+r"(a[0][0]), "+r"(a[0][1]), "+r"(a[0][2]), "+r"(a[0][3]), "+r"(a[1][0]), "+r"(a[1][1]),
        "+r"(a[1][2]), "+r"(a[1][3])
      : "r"(two), "r"(sc[0].m2[0]), "r"(sc[0].m2[1]), "r"(sc[1].m2[0]), "r"(sc[1].m2[1]));
}

// store_tile's values and stores (the same expressions, so the same bits) in phases over chunks of
// CB token blocks (8 tokens, 4 accumulators per matrix and thread): each thread's two
// rows, their bounds and permuted columns once per item; each token's pair id (and routing
// weight) once per block; then the chunk's SwiGLU up to the division without branches, its
// divisions, its stores. store_tile does all of it per accumulator behind the bounds branches,
// and the division's slow-path branch keeps ptxas from overlapping one value's chain
// (~30 dependent instructions, two MUFU) with the next one's.
template <typename out_t, weight_kind K, bool UP, int N, bool PERMUTE_H, int CB>
__device__ __forceinline__ void ws_store_tile(const float (&acc)[2][N / 2], const block_args& ba,
                                              const fp4_weight& wa, const fp4_weight& wb,
                                              const int* pair_of, int g, int c, float limit,
                                              const float* pair_weights, out_t* dst) {
  float fa = 1.0f, fb = 1.0f;
  if constexpr (K == weight_kind::nvfp4) {
    fa = (wa.global ? __ldg(wa.global + ba.e) : 1.0f) * 256.0f;
    fb = (wb.global ? __ldg(wb.global + ba.e) : 1.0f) * 256.0f;
  }
  int64_t col[2];
  bool row_ok[2], row_ok_b[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = ba.r0 + g + 8 * h;
    row_ok[h] = row < ba.out_rows;
    row_ok_b[h] = row + ba.b_offset < ba.out_rows;
    col[h] = UP && PERMUTE_H && std::is_same_v<out_t, __nv_bfloat16>
                 ? (row & ~int64_t(127)) | permuted_k(int(row & 127))
                 : row;
  }
  constexpr int blocks = N / 8;
  constexpr int chunk = blocks < CB ? blocks : CB;
#pragma unroll
  for (int b0 = 0; b0 < blocks; b0 += chunk) {
    out_t* base[chunk][2];  // token 8 (b0 + b) + 2 c + u's row of dst; null past ntok
    float pw[chunk][2];
    ws_chunk_rows<UP>(b0, c, ba.ntok, ba.out_rows, pair_of, pair_weights, dst, base, pw);
    if constexpr (UP) {
      moe_swiglu_terms sw[chunk][4];
      float v[chunk][4];
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int j = 4 * (b0 + b) + q;
          sw[b][q] = moe_swiglu_begin(acc[0][j] * fa, acc[1][j] * fb, limit);
        }
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) v[b][q] = moe_swiglu_end(sw[b][q]);
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int u = q & 1, h = q >> 1;
          if (base[b][u] && row_ok[h])
            base[b][u][col[h]] =
                act_from_f32<out_t>(pair_weights ? __fmul_rn(v[b][q], pw[b][u]) : v[b][q]);
        }
    } else {
#pragma unroll
      for (int b = 0; b < chunk; ++b)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int j = 4 * (b0 + b) + q, u = q & 1, h = q >> 1;
          if (base[b][u] && row_ok[h]) base[b][u][col[h]] = act_from_f32<out_t>(acc[0][j] * fa);
          if (base[b][u] && row_ok_b[h])
            base[b][u][col[h] + ba.b_offset] = act_from_f32<out_t>(acc[1][j] * fb);
        }
    }
  }
}

// One consumer warpgroup's item: the core's gemm_tile main loop and epilogue with A's bytes and
// scales and B from the ring. EPI: the epilogue ws_store_tile with chunks of EPI token blocks
// (0: store_tile).
template <typename out_t, weight_kind K, bool UP, bool RP, bool PERMUTE_H, int EPI, int N>
__device__ __forceinline__ void ws_consume_item(const ws_args& a, const ws_ring& ring, int& k,
                                                int4 tile, int rb, int rounds) {
  const int tid = threadIdx.x, lane = tid % k_warp_size, g = lane / 4, c = lane % 4;
  const int wg = tid / 128, warp = (tid / k_warp_size) % 4;
  const int pair = tid % 128 < tile.z ? __ldg(a.sorted + tile.y + tid % 128) : -1;
  block_args ba;
  ba.e = tile.x;
  ba.ntok = tile.z;
  ba.cols = a.wa.cols;
  ba.out_rows = a.wa.rows;
  ba.r0 = ws_row0<UP>(rb, wg, warp, 0);
  ba.b_offset = UP ? 0 : 64;
  const bool f32_scale = a.wa.scale_f32;
  // MXFP4: PREFILL9's expansion (ws_mx_scale_of, ws_expand_first on the shift decode,
  // ws_mx_second_step, per-round descriptor). NVFP4 keeps session 14's (expand_step; the same
  // changes measured geomean 0.99x there, see the top of the file).
  constexpr bool mx_split_scale = K == weight_kind::mxfp4;
  // Whether a round's last wgmmas stay in flight into the next round (its wait for the stage,
  // scale loads and first expansion). MXFP4 only: with NVFP4 ptxas then serializes every wgmma of
  // the kernel (C7513), so those drain at the end of each round and the other warpgroup covers.
  constexpr bool k_carry = K == weight_kind::mxfp4;

  float acc[2][N / 2];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int jj = 0; jj < N / 2; ++jj) acc[m][jj] = 0.0f;

  const auto release = [&](int kk) {
    __syncwarp();
    if (lane == 0) mbar::arrive(ring.full + 8 * (k_ws_stages + kk % k_ws_stages));
  };
  for (int r = 0; r < rounds; ++r) {
    const int kk = k + r;
    mbar::wait(ring.full + 8 * (kk % k_ws_stages), uint32_t(kk / k_ws_stages) & 1u);
    wgmma::fence_async_smem();  // cp.async (generic proxy) writes before wgmma's async reads
    const uint32_t st = ring.smem + uint32_t(kk % k_ws_stages) * k_ws_stage_bytes;
    tile_round cur[2];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        cur[m].v[i] = lds_16(st + k_ws_w + ((2 * m + i) * k_ws_consumers + tid) * 16);
        const uint32_t sa = st + k_ws_s + (64 * (2 * m + wg) + 16 * warp + 8 * i + g) * 16;
        uint32_t v;
        if constexpr (K == weight_kind::nvfp4) {
          asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(v) : "r"(sa + 2 * c) : "memory");
        } else if (f32_scale) {
          asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(sa + 4 * c) : "memory");
          v = (v >> 23) & 0xFFu;
        } else {
          asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(sa + c) : "memory");
        }
        cur[m].s[i] = v;
      }
    }
    tile_scale sc[2];
    if constexpr (mx_split_scale) {
#pragma unroll
      for (int m = 0; m < 2; ++m) sc[m] = ws_mx_scale_of(cur[m]);
    } else {
      sc[0] = scale_of<K>(cur[0]);
      sc[1] = scale_of<K>(cur[1]);
    }
    uint32_t two = 0;
    if constexpr (mx_split_scale) two = __any_sync(~0u, sc[0].two || sc[1].two);
    // Step s's descriptor is the round's plus the 16-byte units of its offset: the stage base is
    // 1024-aligned and every address < 2^18, so the 14-bit address field never carries.
    const uint64_t d0 = smem_desc(st + k_ws_b);
    // [step & 1][accumulator][reg]: step s rewrites the set of step s - 2, retired by the
    // wait_group 1 that followed step s - 1.
    uint32_t am[2][2][4];
    const auto step = [&](auto s_const) {
      constexpr int s = decltype(s_const)::value;
      if constexpr (mx_split_scale) {
        ws_expand_first<K, s, RP, true>(cur[0], sc[0], am[s & 1][0]);
        ws_expand_first<K, s, RP, true>(cur[1], sc[1], am[s & 1][1]);
        ws_mx_second_step(two, sc, am[s & 1]);
      } else {
        expand_step<K, s, RP>(cur[0], sc[0], am[s & 1][0]);
        expand_step<K, s, RP>(cur[1], sc[1], am[s & 1][1]);
      }
      __syncwarp();
      wgmma::fence();
      const uint64_t d = mx_split_scale
                             ? d0 + uint64_t(((s >> 2) * k_atom_bytes + (s & 3) * 32) >> 4)
                             : smem_desc(st + k_ws_b + (s >> 2) * k_atom_bytes + (s & 3) * 32);
      wgmma_rs<N>::run(acc[0], am[s & 1][0], d);
      wgmma_rs<N>::run(acc[1], am[s & 1][1], d);
      wgmma::commit();
      wgmma::wait<1>();
      // Only this step is left in flight: the previous round's wgmmas read their stage last.
      if constexpr (s == 0 && k_carry)
        if (r > 0) release(kk - 1);
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
    step(std::integral_constant<int, 4>{});
    step(std::integral_constant<int, 5>{});
    step(std::integral_constant<int, 6>{});
    step(std::integral_constant<int, 7>{});
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
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int jj = 0; jj < N / 2; ++jj) wgmma::reg_fence(acc[m][jj]);

  int* pbuf = reinterpret_cast<int*>(ring.gen + k_ws_pbuf) + 128 * wg;
  mbar::named_sync(1 + wg, 128);  // this warpgroup's previous epilogue read its pair ids
  pbuf[tid % 128] = pair;
  mbar::named_sync(1 + wg, 128);
  if constexpr (EPI > 0)
    ws_store_tile<out_t, K, UP, N, PERMUTE_H, EPI>(acc, ba, a.wa, a.wb, pbuf, g, c, a.limit,
                                                   a.pair_weights, static_cast<out_t*>(a.dst));
  else
    store_tile<out_t, K, UP, N, PERMUTE_H>(acc, ba, a.wa, a.wb, pbuf, g, c, a.limit, a.pair_weights,
                                           static_cast<out_t*>(a.dst));
}

// PREFILL17: four consumer warpgroups (q4). The same block, the same ring and the same producer
// (ws_produce_item unchanged: same stage layout, same slots), but each consumer warpgroup takes
// ONE of the two-warpgroup kernel's (warpgroup, accumulator) pairs: 4 consumer warps per
// scheduler instead of 2, each thread with one accumulator (N / 2 registers) and one matrix's
// expansion per step. Consumer warpgroup W = 2 h + s reads the slots of the two-warpgroup kernel's
// thread 128 h + (tid % 128). L1: fragment row g = W1's row (slot (0, s)), g + 8 = W3's same row
// (slot (1, s)), so the SwiGLU stays in the thread (the wide kernel's L1 interleave); intermediate
// row r0 (h) + g + 8 s. L2: accumulator s of warpgroup h (slots (s, 0), (s, 1)), rows r0 + 64 s +
// g (+ 8). Every output element is the same products summed in the same k order: the same bits.
// Measured (PREFILL17, H200, see the top of the file): 1.03-1.17x over the two-warpgroup kernel
// for NVFP4, 0.98-1.04x (geomean 1.01) for MXFP4, at T = 4096.
constexpr int k_q4_consumers = 4 * 128;
constexpr int k_q4_threads = k_q4_consumers + 128;
// The launch cap of __launch_bounds__(640, 1) is 96 registers (65536 / 640, in units of 8).
constexpr int k_q4_consumer_regs = 104;
constexpr int k_q4_producer_regs = 64;
static_assert(k_q4_consumer_regs * k_q4_consumers + k_q4_producer_regs * 128 <= 96 * k_q4_threads,
              "q4 register split");
constexpr int k_q4_pbuf = k_ws_bars + 2 * k_ws_stages * 8;  // 4 x 128 pair ids
constexpr int k_q4_smem = k_q4_pbuf + 4 * 128 * 4 + 1024;   // + alignment slack
static_assert(k_q4_smem <= 227 * 1024, "q4 layout");

// ws_consume_item for a q4 consumer warpgroup (see k_q4_consumers): the same ring protocol (one
// empty arrival per consumer warp, 16 per stage), the same k_carry, one wgmma per step.
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H, int N>
__device__ __forceinline__ void q4_consume_item(const ws_args& a, const ws_ring& ring, int& k,
                                                int4 tile, int rb, int rounds) {
  const int tid = threadIdx.x, lane = tid % k_warp_size, g = lane / 4, c = lane % 4;
  const int wq = tid / 128, h = wq >> 1, sub = wq & 1, warp = (tid / k_warp_size) % 4;
  const int t0 = tid % 128, slot = 128 * h + t0;  // the two-warpgroup kernel's thread
  const int pair = t0 < tile.z ? __ldg(a.sorted + tile.y + t0) : -1;
  const bool f32_scale = a.wa.scale_f32;
  constexpr bool mx = K == weight_kind::mxfp4;
  // No carry over the ring wait (ws_consume_item's k_carry): at 104 registers ptxas then
  // serializes every wgmma of the MXFP4 kernels (C7512), even with the carry at N <= 96 only.
  constexpr bool k_carry = false;
  // Slot (m, i) of fragment row x: UP (x, sub) (W1 / W3 of one row), down (sub, x).
  const auto m_of = [&](int x) { return UP ? x : sub; };
  const auto i_of = [&](int x) { return UP ? sub : x; };

  float acc[N / 2];
#pragma unroll
  for (int jj = 0; jj < N / 2; ++jj) acc[jj] = 0.0f;

  const auto release = [&](int kk) {
    __syncwarp();
    if (lane == 0) mbar::arrive(ring.full + 8 * (k_ws_stages + kk % k_ws_stages));
  };
  for (int r = 0; r < rounds; ++r) {
    const int kk = k + r;
    mbar::wait(ring.full + 8 * (kk % k_ws_stages), uint32_t(kk / k_ws_stages) & 1u);
    wgmma::fence_async_smem();  // cp.async (generic proxy) writes before wgmma's async reads
    const uint32_t st = ring.smem + uint32_t(kk % k_ws_stages) * k_ws_stage_bytes;
    tile_round cur;
#pragma unroll
    for (int x = 0; x < 2; ++x) {
      const int m = m_of(x), i = i_of(x);
      cur.v[x] = lds_16(st + k_ws_w + ((2 * m + i) * k_ws_consumers + slot) * 16);
      const uint32_t sa = st + k_ws_s + (64 * (2 * m + h) + 16 * warp + 8 * i + g) * 16;
      uint32_t v;
      if constexpr (K == weight_kind::nvfp4) {
        asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(v) : "r"(sa + 2 * c) : "memory");
      } else if (f32_scale) {
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(sa + 4 * c) : "memory");
        v = (v >> 23) & 0xFFu;
      } else {
        asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(sa + c) : "memory");
      }
      cur.s[x] = v;
    }
    tile_scale sc;
    if constexpr (mx)
      sc = ws_mx_scale_of(cur);
    else
      sc = scale_of<K>(cur);
    uint32_t two = 0;
    if constexpr (mx) two = __any_sync(~0u, sc.two);
    // The stage base is 1024-aligned and every address < 2^18: step offsets never carry.
    const uint64_t d0 = smem_desc(st + k_ws_b);
    uint32_t am[2][4];  // [step & 1]: rewritten two steps on, after wait_group 1 retired it
    const auto step = [&](auto s_const) {
      constexpr int s = decltype(s_const)::value;
      if constexpr (mx) {
        ws_expand_first<K, s, true, true>(cur, sc, am[s & 1]);
        ws_mx_second_step_one(two, sc, am[s & 1]);
      } else {
        expand_step<K, s, true>(cur, sc, am[s & 1]);
      }
      __syncwarp();
      wgmma::fence();
      wgmma_rs<N>::run(acc, am[s & 1],
                       d0 + uint64_t(((s >> 2) * k_atom_bytes + (s & 3) * 32) >> 4));
      wgmma::commit();
      wgmma::wait<1>();
      if constexpr (s == 0 && k_carry)
        if (r > 0) release(kk - 1);
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
    step(std::integral_constant<int, 4>{});
    step(std::integral_constant<int, 5>{});
    step(std::integral_constant<int, 6>{});
    step(std::integral_constant<int, 7>{});
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

  int* pbuf = reinterpret_cast<int*>(ring.gen + k_q4_pbuf) + 128 * wq;
  mbar::named_sync(4 + wq, 128);  // this warpgroup's previous epilogue read its pair ids
  pbuf[t0] = pair;
  mbar::named_sync(4 + wq, 128);
  const int64_t row = ws_row0<UP>(rb, h, warp, UP ? 0 : sub) + g + (UP ? 8 * sub : 0);
  ws_store_tile_one<out_t, K, UP, N, PERMUTE_H, UP ? 2 : 4, true>(
      acc, tile.x, tile.z, row, 0, a.wa.rows, sub != 0, a.wa, a.wb, pbuf, c, a.limit,
      a.pair_weights, static_cast<out_t*>(a.dst));
}

// The q4 kernel: moe_prefill_wgmma_ws_kernel with four consumer warpgroups (threads 0-511) and
// the PR producer (threads 512-639). Repacked layout, BF16 x.
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H>
__global__ void __launch_bounds__(k_q4_threads, 1)
    moe_prefill_wgmma_ws_q4_kernel(ws_args a, int row_blocks) {
#if DSV4_PREFILL_WGMMA
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t pad = (1024u - (raw & 1023u)) & 1023u;
  const ws_ring ring{raw + pad, raw + pad + k_ws_bars, smem_raw + pad};
  const int items = *a.tile_count * row_blocks;
  if (int(blockIdx.x) >= items) return;  // uniform over the block
  if (threadIdx.x == 0) {
    for (int s = 0; s < k_ws_stages; ++s) {
      mbar::init(ring.full + 8 * s, 256);  // a plain and a noinc arrival per producer thread
      mbar::init(ring.full + 8 * (k_ws_stages + s), k_q4_consumers / k_warp_size);
    }
  }
  __syncthreads();
  const int rounds = int(a.wa.cols / k_round);
  int k = 0;
  int4 tile = a.tiles[blockIdx.x / row_blocks];
  if (threadIdx.x >= k_q4_consumers) {
    mbar::setmaxnreg_dec<k_q4_producer_regs>();
    const int p = int(threadIdx.x) - k_q4_consumers;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 32)
        ws_produce_item<K, UP, true, true, 32>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 64)
        ws_produce_item<K, UP, true, true, 64>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 96)
        ws_produce_item<K, UP, true, true, 96>(a, ring, p, k, cur, rb, rounds);
      else
        ws_produce_item<K, UP, true, true, 128>(a, ring, p, k, cur, rb, rounds);
    }
    cp_async_wait_all();
  } else {
    mbar::setmaxnreg_inc<k_q4_consumer_regs>();
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 32)
        q4_consume_item<out_t, K, UP, PERMUTE_H, 32>(a, ring, k, cur, rb, rounds);
      else if (cur.z <= 64)
        q4_consume_item<out_t, K, UP, PERMUTE_H, 64>(a, ring, k, cur, rb, rounds);
      else if (cur.z <= 96)
        q4_consume_item<out_t, K, UP, PERMUTE_H, 96>(a, ring, k, cur, rb, rounds);
      else
        q4_consume_item<out_t, K, UP, PERMUTE_H, 128>(a, ring, k, cur, rb, rounds);
    }
  }
#else
  (void)a;
  (void)row_blocks;
  __trap();
#endif
}

// UP: src = x' (rows by token), wa = W1, wb = W3, dst = h (PERMUTE_H: BF16 h' in the logical k
// order). Down: src = h' (rows by pair), wa = wb = W2, dst = out [pairs, hidden] f32.
template <typename out_t, weight_kind K, bool UP, bool RP, bool PERMUTE_H, bool PR, int EPI>
__global__ void __launch_bounds__(k_ws_threads, 1)
    moe_prefill_wgmma_ws_kernel(ws_args a, int row_blocks) {
#if DSV4_PREFILL_WGMMA
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t pad = (1024u - (raw & 1023u)) & 1023u;
  const ws_ring ring{raw + pad, raw + pad + k_ws_bars, smem_raw + pad};
  const int items = *a.tile_count * row_blocks;
  if (int(blockIdx.x) >= items) return;  // uniform over the block
  if (threadIdx.x == 0) {
    for (int s = 0; s < k_ws_stages; ++s) {
      mbar::init(ring.full + 8 * s, 256);  // a plain and a noinc arrival per producer thread
      mbar::init(ring.full + 8 * (k_ws_stages + s), k_ws_consumers / k_warp_size);
    }
  }
  __syncthreads();
  const int rounds = int(a.wa.cols / k_round);
  int k = 0;
  int4 tile = a.tiles[blockIdx.x / row_blocks];
  if (threadIdx.x >= k_ws_consumers) {
    mbar::setmaxnreg_dec<k_ws_producer_regs<PR>>();
    const int p = int(threadIdx.x) - k_ws_consumers;
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 32)
        ws_produce_item<K, UP, RP, PR, 32>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 64)
        ws_produce_item<K, UP, RP, PR, 64>(a, ring, p, k, cur, rb, rounds);
      else if (cur.z <= 96)
        ws_produce_item<K, UP, RP, PR, 96>(a, ring, p, k, cur, rb, rounds);
      else
        ws_produce_item<K, UP, RP, PR, 128>(a, ring, p, k, cur, rb, rounds);
    }
    cp_async_wait_all();
  } else {
    mbar::setmaxnreg_inc<k_ws_consumer_regs<PR>>();
    for (int w = blockIdx.x; w < items; w += gridDim.x) {
      const int4 cur = tile;
      const int wn = w + int(gridDim.x);
      if (wn < items) tile = a.tiles[wn / row_blocks];
      const int rb = w % row_blocks;
      if (cur.z <= 32)
        ws_consume_item<out_t, K, UP, RP, PERMUTE_H, EPI, 32>(a, ring, k, cur, rb, rounds);
      else if (cur.z <= 64)
        ws_consume_item<out_t, K, UP, RP, PERMUTE_H, EPI, 64>(a, ring, k, cur, rb, rounds);
      else if (cur.z <= 96)
        ws_consume_item<out_t, K, UP, RP, PERMUTE_H, EPI, 96>(a, ring, k, cur, rb, rounds);
      else
        ws_consume_item<out_t, K, UP, RP, PERMUTE_H, EPI, 128>(a, ring, k, cur, rb, rounds);
    }
  }
#else
  (void)a;
  (void)row_blocks;
  __trap();
#endif
}

// Which producer (PR: B rows in registers, or session 13's). Measured (H200, PREFILL8 run 2,
// repacked layout, PR over session 13's): MXFP4 1.01-1.05x at Flash T = 256 / 1024 and
// 1.12-1.22x at T = 4096 / 8192 and Pro T = 4096; NVFP4 0.91-0.93x at Flash T = 256 / 1024,
// 1.01-1.02x at Pro T = 4096 (64 pairs per expert), 1.10-1.17x at Flash T = 4096 / 8192. So PR
// for MXFP4 and for NVFP4 from 64 pairs per expert on. moe_prefill_set_ws_producer forces one,
// for the bench's A/B.
int g_ws_producer = -1;
// The consumers' epilogue on repacked weights: ws_store_tile with chunks of 2 or 4 token blocks,
// 0 store_tile (moe_prefill_set_ws_epilogue); 16: the q4 kernel (four consumer warpgroups) where
// the PR producer runs.
int g_ws_epi = 16;

template <weight_kind K>
bool ws_use_pr(int64_t pairs, int64_t experts) {
  if (g_ws_producer >= 0) return g_ws_producer != 0;
  return K == weight_kind::mxfp4 || pairs >= 64 * experts;
}

template <typename out_t, weight_kind K, bool UP, bool RP, bool PERMUTE_H>
cudaError_t launch_ws(int64_t row_blocks, int64_t tile_slots, const ws_args& a, bool pr,
                      cudaStream_t stream) {
  auto kernel = pr ? moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, true, 0>
                   : moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, false, 0>;
  if constexpr (RP) {
    if (g_ws_epi == 2)
      kernel = pr ? moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, true, 2>
                  : moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, false, 2>;
    else if (g_ws_epi > 0)
      kernel = pr ? moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, true, 4>
                  : moe_prefill_wgmma_ws_kernel<out_t, K, UP, RP, PERMUTE_H, false, 4>;
  }
  int threads = k_ws_threads, smem = k_ws_smem;
  if constexpr (RP) {
    if (g_ws_epi == 16 && pr) {
      kernel = moe_prefill_wgmma_ws_q4_kernel<out_t, K, UP, PERMUTE_H>;
      threads = k_q4_threads;
      smem = k_q4_smem;
    }
  }
  if (const cudaError_t e = allow_dynamic_smem(kernel, smem); e != cudaSuccess) return e;
  const int64_t items = row_blocks * tile_slots;
  if (items == 0) return cudaSuccess;
  const int sms = current_device_sm_count();
  const unsigned grid = unsigned(items < sms ? items : sms);
  kernel<<<grid, threads, smem, stream>>>(a, int(row_blocks));
  return cudaGetLastError();
}

// Official order: h (f32, SwiGLU times the routing weight) FP8 quantize-dequantized per 128
// values of a pair's row with quant::fp8_block_warp's arithmetic (amax over the block, NaN
// ignored; s = pow2_ceil(max(amax, 1e-4) / 448); e4m3(v / s) * s), i.e. moe_quantize_h_kernel's
// values, written as BF16 (exact: FP8 values times a power of two) straight into h' in the logical
// k order: moe_quantize_h_kernel then moe_prefill_permute_kernel<float> in one pass. One warp per
// (pair, 128-value block); pairs with a bad expert index skipped (L1 never wrote them, no tile
// reads them).
__global__ void __launch_bounds__(256)
    ws_quantize_permute_kernel(const float* h, const int32_t* indices, int64_t pairs,
                               int64_t experts, int64_t inter, __nv_bfloat16* hp, bool fast) {
  __shared__ __align__(16) __nv_bfloat16 buf[256 / k_warp_size][k_round];
  const int warp = int(threadIdx.x) / k_warp_size, lane = int(threadIdx.x) % k_warp_size;
  const int64_t blocks = inter / k_round;
  const int64_t item = int64_t(blockIdx.x) * (256 / k_warp_size) + warp;
  if (item >= pairs * blocks) return;  // uniform over the warp
  const int64_t p = item / blocks, b = item % blocks;
  const int32_t e = indices[p];
  if (e < 0 || e >= experts) return;
  const float4 v = reinterpret_cast<const float4*>(h + p * inter + b * k_round)[lane];
  const float vals[4] = {v.x, v.y, v.z, v.w};  // physical k 4 lane .. 4 lane + 3
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) amax = fmaxf(amax, fabsf(vals[i]));
  amax = quant::warp_max(amax);
  const float sc = quant::fp8_block_scale(amax);
  if (fast) {  // the same values (moe_prefill_fp8.cuh): v * (1 / s), one cvt per two values
    const float r = __fdiv_rn(1.0f, sc);
#pragma unroll
    for (int i = 0; i < 4; i += 2) {
      const float2 q = e4m3x2_values(e4m3x2_bits(__fmul_rn(vals[i], r), __fmul_rn(vals[i + 1], r)));
      buf[warp][permuted_k(4 * lane + i)] = __float2bfloat16_rn(__fmul_rn(q.x, sc));
      buf[warp][permuted_k(4 * lane + i + 1)] = __float2bfloat16_rn(__fmul_rn(q.y, sc));
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      buf[warp][permuted_k(4 * lane + i)] =
          __float2bfloat16_rn(__fmul_rn(quant::e4m3_round(__fdiv_rn(vals[i], sc)), sc));
  }
  __syncwarp();
  reinterpret_cast<uint2*>(hp + p * inter + b * k_round)[lane] =
      reinterpret_cast<const uint2*>(buf[warp])[lane];
}

// The wide kernel from ws_args (moe_prefill_wgmma_ws_wide.cu).
template <typename out_t, weight_kind K, bool UP, bool PERMUTE_H>
cudaError_t launch_wd(int64_t row_blocks, int64_t tile_slots, const ws_args& a,
                      cudaStream_t stream) {
  return launch_wgmma_ws_wide<out_t, K, UP, PERMUTE_H>(
      row_blocks, tile_slots, a.src, a.top_k, a.tile_count, a.tiles, a.sorted, a.wa, a.wb, a.limit,
      a.pair_weights, static_cast<out_t*>(a.dst), stream);
}

}  // namespace

template <typename act_t, weight_kind K, bool RP>
cudaError_t launch_wgmma_ws_gemms(const act_t* x, int64_t tokens, int64_t top_k,
                                  const device_weight& w1, const device_weight& w3,
                                  const device_weight& w2, float limit, const int* tile_count,
                                  const int4* tiles, const int* sorted, int64_t tile_slots,
                                  const float* pair_weights, const int32_t* indices, int64_t pairs,
                                  float* h, float* out, __nv_bfloat16* xp, bool wide,
                                  cudaStream_t stream) {
  const int64_t hidden = w1.cols, inter = w1.rows;
  if (wide && (!RP || inter % k_wd_up_rows != 0 || hidden % k_wd_down_rows != 0))
    return cudaErrorInvalidValue;
  const int64_t rb1 = wide ? inter / k_wd_up_rows : ceil_div(inter, k_up_rows);
  const int64_t rb2 = wide ? hidden / k_wd_down_rows : ceil_div(hidden, k_down_rows);
  // The producer's 32-bit 16-byte chunk indices of x' and h' rows (ws_produce_item).
  if ((tokens * hidden > pairs * inter ? tokens * hidden : pairs * inter) / 8 >= int64_t(~0u))
    return cudaErrorInvalidValue;
  const bool pr = ws_use_pr<K>(pairs, w1.count);
  if (const cudaError_t e = launch_permute<act_t>(x, tokens, hidden, xp, stream); e != cudaSuccess)
    return e;
  ws_args a{};
  a.src = xp;
  a.top_k = int(top_k);
  a.tile_count = tile_count;
  a.tiles = tiles;
  a.sorted = sorted;
  a.wa = make_fp4_weight(w1);
  a.wb = make_fp4_weight(w3);
  a.limit = limit;
  a.pair_weights = pair_weights;
  a.dst = h;
  const fp4_weight f2 = make_fp4_weight(w2);
  if (!pair_weights) {
    // Exact order: L1 writes BF16 h' (the h region) in L2's logical k order.
    if (const cudaError_t e =
            wide ? launch_wd<__nv_bfloat16, K, true, true>(rb1, tile_slots, a, stream)
                 : launch_ws<__nv_bfloat16, K, true, RP, true>(rb1, tile_slots, a, pr, stream);
        e != cudaSuccess)
      return e;
    a.src = reinterpret_cast<const __nv_bfloat16*>(h);
  } else {
    // Official order: f32 h, then its FP8 rounding per 128 values (exact in BF16) written as h'
    // into the scratch (x' is dead once L1 ran).
    if (const cudaError_t e =
            wide ? launch_wd<float, K, true, false>(rb1, tile_slots, a, stream)
                 : launch_ws<float, K, true, RP, false>(rb1, tile_slots, a, pr, stream);
        e != cudaSuccess)
      return e;
    const int64_t items = pairs * (inter / k_round);
    if (items > 0) {
      ws_quantize_permute_kernel<<<unsigned(ceil_div(items, 256 / k_warp_size)), 256, 0, stream>>>(
          h, indices, pairs, w1.count, inter, xp, (moe_prefill_nongemm_old() & 8) == 0);
      if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
    }
    a.src = xp;
  }
  a.wa = a.wb = f2;
  a.pair_weights = nullptr;
  a.dst = out;
  return wide ? launch_wd<float, K, false, false>(rb2, tile_slots, a, stream)
              : launch_ws<float, K, false, RP, false>(rb2, tile_slots, a, pr, stream);
}

#define DSV4_PREFILL_WGMMA_WS_INSTANTIATE(T, K, RP)                                            \
  template cudaError_t launch_wgmma_ws_gemms<T, K, RP>(                                        \
      const T*, int64_t, int64_t, const device_weight&, const device_weight&,                  \
      const device_weight&, float, const int*, const int4*, const int*, int64_t, const float*, \
      const int32_t*, int64_t, float*, float*, __nv_bfloat16*, bool, cudaStream_t);
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(float, weight_kind::mxfp4, false)
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(float, weight_kind::nvfp4, false)
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4, false)
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4, false)
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(__nv_bfloat16, weight_kind::mxfp4, true)
DSV4_PREFILL_WGMMA_WS_INSTANTIATE(__nv_bfloat16, weight_kind::nvfp4, true)
#undef DSV4_PREFILL_WGMMA_WS_INSTANTIATE

}  // namespace dsv4::cuda::prefill

namespace dsv4::cuda {

void moe_prefill_set_ws_producer(int mode) {
  prefill::g_ws_producer = mode;
}

void moe_prefill_set_ws_epilogue(int mode) {
  prefill::g_ws_epi = mode;
}

}  // namespace dsv4::cuda
