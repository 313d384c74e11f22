// Launches 2 and 3 of the decode-path MoE (moe_decode.cu): the tensor-core GEMV over (chunk,
// 16-row tile) items, W1/W3 with the SwiGLU epilogue (and the official order's folded
// quantization of h) or W2 into out. The round it repeats: moe_decode_round.cuh.
#pragma once

#include <cstdint>

#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/moe_decode_chain.cuh"
#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/moe_decode_plan.cuh"
#include "backends/cuda/moe_decode_quantize.cuh"
#include "backends/cuda/moe_decode_round.cuh"
#include "backends/cuda/moe_decode_trace.cuh"
#include "backends/cuda/moe_plan.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

// UP: W1 and W3 (NM = 2), SwiGLU epilogue into paired hi/lo h, or (pair_weights non-null, the
// official order) h * pair_weights[pair] into hf [pairs, rows] f32. !UP: W2 into out (f32).
// ain_hi / ain_lo: paired activations, one row of `kdim` per token (UP) or per pair (!UP).
// Before its grid-dependency wait the kernel reads only the plan (chain 8: the routing), complete
// (see pdl_wait), and the weights, so with RING, !UP streams its first k_stages rounds of W2
// while the L1 launch still finishes.
// RP: the weights are repacked (moe_repack.h): a lane's 16 bytes of rows g and g + 8 of a round
// are at tile * 1024 + lane * 16 and + 512 (each warp-wide load one contiguous 512 bytes),
// rounds of a row tile 1024 bytes apart; both pipelines read them.
// SSO: scale slots (0: k_scale_slots; moe_decode_set_scale_slots_from).
// W2P (W2 of the engine's path only, moe_decode_set_w2_pair_from): each warp streams two 16-row
// tiles of W2 per round (rows r0 .. r0 + 15 as matrix 0, r0 + 16 .. r0 + 31 as matrix 1, both from
// wa) through the NM = 2 machinery of W1/W3: one round's ring wait, scale and activation loads,
// refill bookkeeping and loop control serve twice the weights (about half of a W2 round's
// instructions is that bookkeeping, session 38's SASS census). Same products and sums per output
// row for the same K split, by construction (each row's mma column sums are independent of the
// other rows'); not compared bit for bit against the one-tile kernel on a GPU (parity: the CPU
// reference). SLOTS (chain 16; the ring without a lo part, RP = 2): W1/W3 releases each quantized
// group of h on chain.ready; W2 waits for its slot's h there instead of the grid dependency and
// reads h with coherent loads (see chain_args). A template parameter so that the other
// instantiations keep their SASS.
// Y16 (!UP): out holds bf16 values (rounded once from the f32 sums), for the dense linears that
// run this kernel as one "expert" (linear_decode_nvfp4.cu). XRAW (!UP, the dense linears): the
// activation rows are raw bf16 (x in its natural order, not the paired layout of a prepare
// launch), converted while they are staged; the launch must stage every row (stage_x >= the
// chunk's pairs: the unstaged path would read them as paired).
template <weight_kind K, bool UP, bool SPLIT, int RT, bool RING, int RP = 0, int SSO = 0,
          bool SLOTS = false, bool W2P = false, bool Y16 = false, bool XRAW = false,
          bool ACC2 = false>
__global__ void __launch_bounds__(k_threads, (RING && K == weight_kind::mxfp4) ? 4 : 1)
    moe_decode_gemm_kernel(const uint16_t* ain_hi, const uint16_t* ain_lo, int64_t kdim,
                           int64_t rows, int top_k, const int* chunk_count, const int4* chunks,
                           const int* sorted, fp4_weight wa, fp4_weight wb, float limit,
                           const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo, float* hf,
                           float* out, int stage_x, chain_args chain) {
  constexpr int NM = UP || W2P ? 2 : 1;
  static_assert(!Y16 || !UP, "Y16: W2's out as bf16 (the dense linears, linear_decode_nvfp4.cu)");
  static_assert(!XRAW || (!UP && RING && !SPLIT), "XRAW: W2's staged rows from raw bf16 x");
  static_assert(!W2P || (!UP && RING && !SPLIT && RP == 2), "W2P: the engine's W2 only");
  constexpr int KS = k_warps / RT;
  // Scale chunks of the rounds in flight (at least one round per chunk) fit the slots.
  constexpr int SS = SSO ? SSO : k_scale_slots;
  static_assert(k_stages <= SS, "ring deeper than the scale slots");
  static_assert(!SLOTS || (RING && !SPLIT && RP == 2), "SLOTS: the engine's path only");
  static_assert(!ACC2 || !UP, "ACC2: W2 only");
  constexpr bool HL2 = SLOTS && !UP;  // W2: h of the running W1/W3 grid (load_act16<true>)
  __shared__ int pair_of[k_chunk];
  __shared__ int fold_last;
  // The K parts' hand-off below the loops. With the ring each warp with kpart > 0 leaves its sums
  // in its own ring stage 0 instead (session 41's patch, landed in 42): its last round has been
  // read (the round's mma.sync consumed every lane's words) and nothing is in flight there (past
  // its rounds the ring commits empty groups); kpart 0 reads them after the block barrier.
  // (KS - 1) * RT * NM * 512 bytes less static shared memory: 2 KB at RT 2, so Pro's W1/W3 with
  // its 14 KB staged x and 4 scale slots fits 4 blocks per SM at T = 1 (up_scale_slots_4_t1).
  __shared__ float partial_own[(KS > 1 && !RING) ? (KS - 1) * RT : 1][NM][4][k_warp_size];
  // 128-byte aligned (MOE18): each warp's cp.async of a matrix-round half writes 512 contiguous
  // bytes here. With the ring only 16-byte aligned (W1/W3 had it at shared offset 48 after
  // pair_of / fold_last), every 32-byte global sector lands across two 32-byte shared chunks and
  // L1 requested each sector twice: ncu (H200, Flash T = 16) counted 32 L2 sectors per weight
  // LDGSTS instead of 16, twice the weights' bytes through L2 (L2 tag requests 86% of peak, the
  // "Mem Busy") and 4x the ideal shared wavefronts. W2 had it at 32 (sectors ideal).
  __shared__ alignas(128) stage_buf<NM> ring[RING ? k_warps : 1][RING ? k_stages : 1];
  __shared__ alignas(128) scale_buf<NM, SS> scale_ring[RING ? k_warps : 1];
  extern __shared__ uint4 dyn_smem[];
  DSV4_TRACE(trace_block tr; tr.stamp(0));
  // UP: the plan comes from the launch right before this one (chain 8: the routing and x, from
  // launches before the call).
  if constexpr (UP) pdl_wait();
  DSV4_TRACE(if constexpr (UP) tr.stamp(1));
  const int slot = blockIdx.y;
  int4 c;
  unsigned self_mask = 0;  // chain 8: the chunk's pair positions
  if (chain.self_indices) {
    // !UP: W2 runs only once every W1/W3 block has passed its wait, so the routing is complete.
    int e_self;
    if (!moe_decode_self_chunk(chain.self_indices, chain.self_pairs, chain.self_experts, slot,
                               e_self, self_mask)) {
      if constexpr (!UP && !HL2) pdl_wait();
      return;
    }
    c = make_int4(e_self, 0, __popc(self_mask), 0);
    // Positions past the count: the last pair, as the plan's clamp below (the value of
    // self_chunk_pair at the clamped position; spelled so, the SASS is MOE11's: the clamp changed
    // it).
    if (threadIdx.x < k_chunk)
      pair_of[threadIdx.x] = int(threadIdx.x) < c.z ? self_chunk_pair(self_mask, threadIdx.x)
                                                    : 31 - __clz(int(self_mask));
  } else {
    if (chain.early_chunk) c = chunks[slot];
    if (slot >= *chunk_count) {  // uniform over the block
      if constexpr (!UP && !HL2) pdl_wait();
      return;
    }
    if (!chain.early_chunk) c = chunks[slot];
    if (threadIdx.x < k_chunk) pair_of[threadIdx.x] = sorted[c.y + min(int(threadIdx.x), c.z - 1)];
  }
  DSV4_TRACE(if constexpr (!UP) tr.stamp_mode(1, 1));
  const int warp = threadIdx.x / k_warp_size, lane = threadIdx.x % k_warp_size;
  const int tile = warp % RT, kpart = warp / RT;
  const int g = lane / 4, q = lane % 4;
  // W2P: the warp's two tiles are rows r0 .. r0 + 31 (matrix m: r0 + 16 m).
  const int64_t r0 = (int64_t(blockIdx.x) * RT + tile) * (W2P ? 32 : 16);
  constexpr int64_t m_rows = W2P ? 16 : 0;  // row offset of matrix m: m * m_rows
  const int64_t rounds = kdim / k_round;
  const int64_t rb = rounds * kpart / KS, re = rounds * (kpart + 1) / KS;

  const int64_t e = c.x;
  const int64_t row_bytes = kdim / 2;
  const int64_t srow = K == weight_kind::mxfp4 ? kdim / 32 : kdim / 16;
  const uint8_t* wrow[NM];
  const uint8_t* srow_p[NM];
  fp4_weight ws[2] = {wa, wb};
#pragma unroll
  for (int m = 0; m < NM; ++m) {
    wrow[m] = ws[m].data + e * ws[m].matrix_bytes + (r0 + m * m_rows + g) * row_bytes;
    srow_p[m] = ws[m].scale + (e * ws[m].matrix_scales + (r0 + m * m_rows + g) * srow) *
                                  (ws[m].scale_f32 ? 4 : 1);
  }
  float acc[NM][4];
  // ACC2 (W2): each word's second HMMA goes into a second accumulator set, added to the first
  // after the loop: two dependent HMMA chains per matrix instead of one (moe_decode_w2_two_sets).
  // The same products in another order of the f32 sums; every W2 instantiation a call can run
  // takes the same choice (run()), so chains, layouts and pipelines keep identical outputs.
  // Without it acc_set_b is acc itself (the SASS of the kernel before the parameter).
  constexpr bool two_sets = ACC2;
  float acc_b_own[two_sets ? NM : 1][4];
  float(&acc_set_b)[NM][4] =
      *reinterpret_cast<float(*)[NM][4]>(two_sets ? &acc_b_own[0][0] : &acc[0][0]);
#pragma unroll
  for (int m = 0; m < NM; ++m)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[m][i] = 0.0f, acc_set_b[m][i] = 0.0f;
  if constexpr (RING) {
    const bool scale_f32 = ws[0].scale_f32;  // one encoding for all three (moe_decode_supported)
    bool two_possible = false;  // some scale of this launch's matrices may be > 2 (mma_rounds)
#pragma unroll
    for (int m = 0; m < NM; ++m) two_possible |= !ws[m].scales_at_most_2;
    // This lane's copy sources at round rb, advanced by one round per issue: 64 weight bytes of a
    // row per round. Scale rows go in aligned chunks (moe_decode_scales.h: 16 bytes for the
    // model shapes, 8 or 4 for rows of 128 or 256 columns).
    const moe_scales::encoding enc = K == weight_kind::nvfp4 ? moe_scales::encoding::e4m3
                                     : scale_f32             ? moe_scales::encoding::f32
                                                             : moe_scales::encoding::e8m0;
    const moe_scales::geometry geo = moe_scales::make_geometry(srow * (scale_f32 ? 4 : 1), enc);
    const uint8_t* src_w[NM][2];  // round 0 (rb); round j at + j * (bytes a round)
    const uint8_t* src_s[NM][2];
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if constexpr (RP)
          src_w[m][i] = ws[m].data + e * ws[m].matrix_bytes +
                        (((r0 + m * m_rows) / fp4_repack::k_tile_rows) * rounds + rb) *
                            fp4_repack::k_tile_bytes +
                        i * (fp4_repack::k_tile_bytes / 2) + lane * 16;
        else
          src_w[m][i] = wrow[m] + i * 8 * row_bytes + rb * (k_round / 2) + q * 16;
        src_s[m][i] = srow_p[m] + i * 8 * srow * (scale_f32 ? 4 : 1);
      }
    const int nr = int(re - rb);  // this warp's rounds
    // Scale-chunk bookkeeping in 32 bits (rounds < 2^31) with the power-of-two slot count: the
    // values of moe_scales::chunk_of / copies_chunk and chunk % SS, without the 64-bit
    // shifts and signed-remainder fix-ups ptxas otherwise recomputes every round (MOE9).
    static_assert((SS & (SS - 1)) == 0, "scale slots: a power of two");
    const int rb32 = int(rb), rpc_shift = geo.rpc_shift, rpc_mask = (1 << geo.rpc_shift) - 1;
    stage_buf<NM>* const my_ring = &ring[0][0] + warp * k_stages;
    scale_buf<NM, SS>& my_scales = scale_ring[warp];
    // This lane's word of matrix 0, row half 0 in stage 0; stage u, matrix m, half i at
    // + u * stage_words + (2 m + i) * k_warp_size (the copies and the reads use the same form).
    const uint4* const ring_lane = &my_ring[0].w[0][0][lane];
    constexpr int stage_words = int(sizeof(stage_buf<NM>) / sizeof(uint4));
    // Round j (of this warp's) into stage j % k_stages, then commit (an empty group past the end
    // keeps one group per round for wait_group).
    const auto issue = [&](int j, int stage) {
      if (j < nr) {
        // Round j's bytes at a 32-bit offset from the warp's fixed sources (one 64-bit add per
        // source, no pointer updates); repacked, row half i is k_tile_bytes / 2 past half 0 (an
        // immediate offset of the copy).
        const uint32_t off = uint32_t(j) * uint32_t(RP ? fp4_repack::k_tile_bytes : k_round / 2);
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            cp_async_cg_16(
                smem_u32(ring_lane + stage * stage_words + (m * 2 + i) * k_warp_size),
                RP ? src_w[m][0] + off + i * (fp4_repack::k_tile_bytes / 2) : src_w[m][i] + off);
        const int r = rb32 + j;
        if (q == 0 && (j == 0 || (r & rpc_mask) == 0)) {  // copies_chunk
          const int chunk = r >> rpc_shift;
#pragma unroll
          for (int m = 0; m < NM; ++m)
#pragma unroll
            for (int i = 0; i < 2; ++i) {
              void* dst = &my_scales.s[chunk & (SS - 1)][m][i][g];
              const uint8_t* src = src_s[m][i] + (uint32_t(chunk) << geo.cb_shift);
              if (K == weight_kind::mxfp4 && scale_f32)
                // f32 scales (one round a chunk: rows of 4 f32 per round, 16-byte aligned) as
                // the E8M0 bytes of their exponents in word 0, read as E8M0 (round_math):
                // a plain load and store, ordered for the warp by the __syncwarp before the
                // round that reads them (k_stages rounds later). Not the engine's path
                // (checkpoints carry E8M0; linear_weight.cpp), so its load latency is paid here.
                *static_cast<uint32_t*>(dst) =
                    f32_scales_as_e8m0(__ldg(reinterpret_cast<const uint4*>(src)));
              else if (geo.cb_shift == 4)
                cp_async_cg_16(smem_u32(dst), src);
              else if (geo.cb_shift == 3)
                cp_async_ca<8>(smem_u32(dst), src);
              else
                cp_async_ca<4>(smem_u32(dst), src);
            }
        }
      }
      cp_async_commit();
    };
    // Staged activations (stage_x: the launch gave kdim * 2 bytes of dynamic shared memory; bf16
    // x or quantized h, no lo part): a chunk of one pair reads its single activation row from
    // shared memory, copied once per block here, instead of per-warp global loads one round
    // ahead. Those loads shared one scoreboard, so every other round's first HMMA waited for the
    // loads just issued for the next round (SASS of MOE7's W1/W3 kernel): a load latency per two
    // rounds, the long-scoreboard stall that dominated T = 1. Block-uniform (c.z).
    // MOE9: stage_x = the most pairs a staged chunk may hold (moe_decode_set_stage_pairs; 1
    // before), one row each, rows 64 bytes apart modulo 128 when several (lanes g of two rows
    // read different banks).
    uint4* const xs_row = dyn_smem;
    const int xs_stride = int(kdim / 8) + (stage_x > 1 ? 4 : 0);  // uint4 per staged row
    // Chain 8, W1/W3: one token, so every pair of the chunk reads the one row of x, staged
    // whatever the chunk's pair count (the launch gave at least one row).
    const bool self_up = UP && chain.self_indices != nullptr;
    const bool staged = !SPLIT && (c.z <= stage_x || self_up);
    // W1/W3 requests its activation rows before the weights' first k_stages rounds (session 41):
    // requested after them, as before, they came back behind the whole first burst of weight
    // copies, then (the loop below, unrolled twice) once more per two 16-byte groups a thread:
    // ncu at T = 1 on the H200 (l41b) put 17.5% (Flash) / 12.7% (Pro) of the W1/W3 warps' stall
    // samples on the first use of x. Chain 8's bf16 x goes to registers (converted below); the
    // other staged rows are plain copies, one cp.async group older than the ring's.
    const uint4* const x_src = reinterpret_cast<const uint4*>(ain_hi);
    const int x_groups = int(kdim / 8);
    uint4 x_pre[k_x_prefetch];
    if constexpr (UP && !SPLIT) {
      if (self_up) {
#pragma unroll
        for (int b = 0; b < k_x_prefetch; ++b)
          if (const int i = int(threadIdx.x) + b * k_threads; i < x_groups)
            x_pre[b] = __ldg(x_src + i);
      } else if (staged) {
        for (int p = 0; p < c.z; ++p) {
          const int64_t srow_i = int64_t(sorted[c.y + p] / top_k);
          for (int i = threadIdx.x; i < x_groups; i += k_threads)
            cp_async_cg_16(smem_u32(xs_row + p * xs_stride + i), x_src + srow_i * x_groups + i);
        }
        cp_async_commit();
      }
    }
#pragma unroll
    for (int j = 0; j < k_stages; ++j) issue(j, j);

    // h from the launch before; HL2: the slot's h, released group by group by W1/W3's fold. The
    // spin cannot starve its producers: this grid launches only once every W1/W3 block has
    // executed pdl_trigger() or exited, and W1/W3 triggers only from inside its running blocks
    // (after its own wait and first copies, never after a wait on this grid), so every W1/W3
    // block is resident or done before any W2 block spins. What the whole-grid wait protected
    // besides h: the plan (chain 8: the routing), read above, complete once every W1/W3 block has
    // passed its own wait (the prepare launch is W1/W3's predecessor); out, last read by the
    // previous call's combine, complete for the same reason; nothing else of W1/W3 is read here.
    if constexpr (!UP) {
      DSV4_TRACE(tr.stamp_mode(1, 2));
      if constexpr (HL2)
        wait_counter(chain.ready + slot * k_ready_stride, chain.ready_target);
      else
        pdl_wait();
      DSV4_TRACE(if (tr.mode() != 1) tr.stamp(1));  // the wait's end: modes 0 and 2
    }
    pdl_trigger();
    if (self_up && !SPLIT) {
      // ain_hi is x (bf16): each 16-byte group in split_group8's paired order (the prepare
      // launch's conversion; for a bf16 value its hi part is the value, its lo part zero).
#pragma unroll
      for (int b = 0; b < k_x_prefetch; ++b)
        if (const int i = int(threadIdx.x) + b * k_threads; i < x_groups)
          xs_row[act_group_slot(i)] = paired_bf16_group(x_pre[b]);
      for (int i = threadIdx.x + k_x_prefetch * k_threads; i < x_groups; i += k_threads)
        xs_row[act_group_slot(i)] = paired_bf16_group(__ldg(x_src + i));
    } else if (staged) {
      if constexpr (UP) {
        cp_async_wait<k_stages>();  // the rows' group, older than the ring's k_stages
      } else {
        // h: all of a row's loads before its stores (a loop of single or paired loads paid one
        // round trip per one or two 16-byte groups a thread; W2's blocks start here once h is
        // ready, so each trip is on the phase's critical path).
        for (int p = 0; p < c.z; ++p) {
          const int pp = chain.self_indices ? self_chunk_pair(self_mask, p) : sorted[c.y + p];
          const uint4* src = reinterpret_cast<const uint4*>(ain_hi + int64_t(pp) * kdim);
          uint4 hv[k_h_batch];
#pragma unroll
          for (int b = 0; b < k_h_batch; ++b)
            if (const int i = int(threadIdx.x) + b * k_threads; i < x_groups)
              hv[b] = load_act16<HL2>(src + i);
          // XRAW: each 16-byte group of raw bf16 into its paired slot (as the prepare launch).
          const auto put = [&](int i, uint4 v) {
            if constexpr (XRAW)
              xs_row[p * xs_stride + act_group_slot(i)] = paired_bf16_group(v);
            else
              xs_row[p * xs_stride + i] = v;
          };
#pragma unroll
          for (int b = 0; b < k_h_batch; ++b)
            if (const int i = int(threadIdx.x) + b * k_threads; i < x_groups) put(i, hv[b]);
          for (int i = threadIdx.x + k_h_batch * k_threads; i < x_groups; i += k_threads)
            put(i, load_act16<HL2>(src + i));
        }
      }
    }
    __syncthreads();  // pair_of, xs_row
    DSV4_TRACE(if constexpr (!UP) tr.stamp_mode(2, 2));

    // Activation row of token / pair g of the chunk (clamped: lanes past the count compute
    // columns that are never stored).
    const int pg = pair_of[g];
    const int64_t arow = UP ? int64_t(pg / top_k) : int64_t(pg);
    const uint4* xh_p = reinterpret_cast<const uint4*>(ain_hi + arow * kdim) + rb * 16 + q;
    const uint4* xl_p = reinterpret_cast<const uint4*>(ain_lo + arow * kdim) + rb * 16 + q;
    // Lane q's scale bits of a round in its row's chunk as the ring holds them (f32 converted to
    // E8M0 bytes at copy): one shared load, no shift or mask.
    constexpr moe_scales::encoding held =
        K == weight_kind::nvfp4 ? moe_scales::encoding::e4m3 : moe_scales::encoding::e8m0;
    const uint8_t* const scale_lane = reinterpret_cast<const uint8_t*>(&my_scales.s[0][0][0][g]) +
                                      moe_scales::lane_byte_of(held, q);

    // Round j's weights times the activation fragments cxh / cxl, then the refill of its stage.
    // after_word0: see mma_round (the unstaged path's next-round activation loads).
    const auto round_math = [&](int j, const uint4(&cxh)[4], const uint4(&cxl)[4],
                                const auto& after_word0) {
      const int u = j % k_stages;
      cp_async_wait<k_stages - 1>();  // round j (this lane's copies) has landed
      __syncwarp();                   // and the scale chunks the lanes q == 0 copied for it
      const int r = rb32 + j, in_chunk = r & rpc_mask;
      // From the lane's loop-invariant bases: stage u's words, and the scale bits in slot
      // chunk % SS at the round's place in its chunk.
      const uint4* const wl = ring_lane + u * stage_words;
      const uint8_t* const sl = scale_lane +
                                ((r >> rpc_shift) & (SS - 1)) * int(sizeof(my_scales.s[0])) +
                                in_chunk * moe_scales::round_stride_of(held);
      round_w<K> cur[NM];
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          cur[m].v[i] = wl[(m * 2 + i) * k_warp_size];
          const uint8_t* chunk_bytes = sl + (m * 2 + i) * int(sizeof(my_scales.s[0][0][0]));
          if constexpr (K == weight_kind::nvfp4)
            cur[m].s[i] = *reinterpret_cast<const uint16_t*>(chunk_bytes);
          else
            cur[m].s[i] = *chunk_bytes;
        }
#ifdef DSV4_MOE17_DIAG
      // Diagnostic (wrong y): the round's math replaced by one XOR fold of what it read (the
      // ring words, scales and activation fragments stay loaded): the kernel's memory pipeline
      // (grid, ring, copies, waits, x loads) without the expansion / scale / HMMA work.
      {
        uint32_t f = 0;
#pragma unroll
        for (int m = 0; m < NM; ++m)
#pragma unroll
          for (int i = 0; i < 2; ++i)
            f ^= cur[m].v[i].x ^ cur[m].v[i].y ^ cur[m].v[i].z ^ cur[m].v[i].w ^ cur[m].s[i];
#pragma unroll
        for (int i = 0; i < 4; ++i) f ^= cxh[i].x ^ cxh[i].y ^ cxh[i].z ^ cxh[i].w ^ cxl[i].w;
        acc[0][0] += __uint_as_float(f & 0x807FFFFFu);  // |value| < 2^-126: no inf / NaN
        after_word0();
      }
#else
      mma_rounds<K, SPLIT, RP, NM>(acc, acc_set_b, cur, cxh, cxl, after_word0, two_possible);
#endif
      // Refill the stage just read only after the math consumed what was read from it (the
      // shared loads have returned), so the asynchronous copy cannot overtake them. With as
      // many rounds in flight as scale slots, the refill's scale chunk may take the slot this
      // round's chunk was read from by the other lanes of its row: wait for the whole warp.
      if constexpr (k_stages >= SS) __syncwarp();
      issue(j + k_stages, u);
    };
    if (staged) {
      if constexpr (!SPLIT) {
        // Lanes g of one pair read the same 64 bytes (lanes past the count: the last pair's).
        const uint4* xs_lane = xs_row + (self_up ? 0 : min(g, c.z - 1)) * xs_stride + rb * 16 + q;
        for (int j = 0; j < nr; ++j, xs_lane += 16) {
          uint4 cx[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) cx[i] = xs_lane[4 * i];
          round_math(j, cx, cx, no_hook{});
        }
      }
    } else {
      uint4 xh[4], xl[4], nxh[4], nxl[4];
      if (nr > 0) load_x<HL2>(xh, xl, xh_p, xl_p, 0, SPLIT);
      // Activations loaded one round ahead; two rounds per iteration with the buffers swapping
      // roles: no register copies between rounds. Round j + 1's loads are issued inside round j,
      // after its word 0's HMMAs, and their address depends on round j's fragments (+ 0 through
      // `opaque0`, which ptxas cannot fold): all activation loads share one variable-latency
      // scoreboard, so loads issued before round j's first HMMA made it wait for them too (a
      // full load latency every other round: MOE18's 20.7% of W1/W3's stall samples); issued
      // after round j's fragments arrived, round j + 1's loads have a whole round to land.
      // Without the address dependency ptxas hoists the loads above the first HMMA, which then
      // waits for them in every round (SASS of the engine's W1/W3 kernel, MOE19).
      const uint32_t opaque0 = uint32_t(uint64_t(kdim) >> 62);  // 0: kdim < 2^62
      for (int j = 0; j < nr; j += 2) {
        round_math(j, xh, xl, [&] {
          if (j + 1 < nr) {
            const uint32_t z = xh[0].x & opaque0;
            load_x<HL2>(nxh, nxl, xh_p + z, xl_p + z, j + 1, SPLIT);
          }
        });
        if (j + 1 < nr) {
          round_math(j + 1, nxh, nxl, [&] {
            if (j + 2 < nr) {
              const uint32_t z = nxh[0].x & opaque0;
              load_x<HL2>(xh, xl, xh_p + z, xl_p + z, j + 2, SPLIT);
            }
          });
        }
      }
    }
    cp_async_wait<0>();
    DSV4_TRACE(if (UP || tr.mode() == 0) tr.stamp_loop_end(UP));
  } else {  // the first version's register double buffer (two rounds in flight), plain launches
    if constexpr (!UP) pdl_wait();  // no-op without PDL
    __syncthreads();                // pair_of
    const int pg = pair_of[g];
    const int64_t arow = UP ? int64_t(pg / top_k) : int64_t(pg);
    const uint4* xh_base = reinterpret_cast<const uint4*>(ain_hi + arow * kdim) + q;
    const uint4* xl_base = reinterpret_cast<const uint4*>(ain_lo + arow * kdim) + q;
    const uint8_t* rp_lane[NM];
#pragma unroll
    for (int m = 0; m < NM; ++m)
      rp_lane[m] = RP ? ws[m].data + e * ws[m].matrix_bytes +
                            (r0 / fp4_repack::k_tile_rows) * rounds * fp4_repack::k_tile_bytes +
                            lane * 16
                      : nullptr;
    round_w<K> cur[NM], nxt[NM];
    uint4 xh[4], xl[4], nxh[4], nxl[4];
    if (rb < re) {
      const int64_t k = rb * k_round + q * 32;
#pragma unroll
      for (int m = 0; m < NM; ++m)
        load_round<K, RP>(cur[m], wrow[m], srow_p[m], row_bytes, srow, ws[m].scale_f32, k,
                          rp_lane[m]);
      load_x(xh, xl, xh_base, xl_base, rb, SPLIT);
    }
    for (int64_t r = rb; r < re; ++r) {
      if (r + 1 < re) {
        const int64_t k = (r + 1) * k_round + q * 32;
#pragma unroll
        for (int m = 0; m < NM; ++m)
          load_round<K, RP>(nxt[m], wrow[m], srow_p[m], row_bytes, srow, ws[m].scale_f32, k,
                            rp_lane[m]);
        load_x(nxh, nxl, xh_base, xl_base, r + 1, SPLIT);
      }
      mma_rounds<K, SPLIT, RP, NM, false>(acc, acc_set_b, cur, xh, xl);
#pragma unroll
      for (int m = 0; m < NM; ++m) cur[m] = nxt[m];
#pragma unroll
      for (int i = 0; i < 4; ++i) xh[i] = nxh[i], xl[i] = nxl[i];
    }
  }

  if constexpr (two_sets) {
#pragma unroll
    for (int m = 0; m < NM; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[m][i] += acc_set_b[m][i];
  }
  if constexpr (KS > 1) {  // K parts: warps kpart > 0 hand their sums to kpart 0, added in order
    using partial_t = float[NM][4][k_warp_size];
    static_assert(!RING || sizeof(partial_t) <= sizeof(stage_buf<NM>), "partial sums in a stage");
    const auto partial = [&](int kp) -> partial_t& {
      if constexpr (RING)
        return *reinterpret_cast<partial_t*>(&ring[kp * RT + tile][0]);
      else
        return partial_own[(kp - 1) * RT + tile];
    };
    if (kpart > 0)
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial(kpart)[m][i][lane] = acc[m][i];
    __syncthreads();
    if (kpart > 0) return;  // (thread 0 is kpart 0)
    for (int p = 1; p < KS; ++p)
#pragma unroll
      for (int m = 0; m < NM; ++m)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][i] += partial(p)[m][i][lane];
  }

  // Accumulator i: row r0 + g + 8 * (i / 2), chunk column 2q + i % 2.
  float post[NM];
#pragma unroll
  for (int m = 0; m < NM; ++m)
    post[m] =
        K == weight_kind::nvfp4 ? (ws[m].global ? __ldg(ws[m].global + e) : 1.0f) * 256.0f : 1.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int col = 2 * q + (i & 1);
    if (col >= c.z) continue;
    const int p = pair_of[col];
    const int64_t row = r0 + g + 8 * (i >> 1);
    if constexpr (UP) {
      const float v = moe_swiglu_value(acc[0][i] * post[0], acc[1][i] * post[1], limit);
      if (pair_weights) {  // official order: weighted h in f32, quantized by the next launch
        hf[int64_t(p) * rows + row] = __fmul_rn(v, pair_weights[p]);
        continue;
      }
      uint16_t hi, lo;
      fp4mma::split_bf16(v, hi, lo);
      const int64_t at = int64_t(p) * rows + act_u16_index(row);
      h_hi[at] = hi;
      h_lo[at] = lo;
    } else if constexpr (Y16) {
      auto* const y16 = reinterpret_cast<__nv_bfloat16*>(out);
      y16[int64_t(p) * rows + row] = __float2bfloat16_rn(acc[0][i] * post[0]);
      if constexpr (W2P)
        y16[int64_t(p) * rows + row + m_rows] = __float2bfloat16_rn(acc[1][i] * post[1]);
    } else {
      out[int64_t(p) * rows + row] = acc[0][i] * post[0];
      if constexpr (W2P) out[int64_t(p) * rows + row + m_rows] = acc[1][i] * post[1];
    }
  }
  // HL2: no griddepcontrol.wait before the exit, so this grid may complete before W1/W3's (its
  // blocks of other slots may still be leaving): measured 1.06x at Flash T = 4 over waiting
  // (finished W2 blocks otherwise hold their SM slots until W1/W3 completes). What pdl.cuh's
  // contract gives the later launches still holds for memory: every W1/W3 block of a valid slot
  // stored hf, then counted on its fold counter (acq_rel); the last of each group quantized h,
  // then released the group (release reduction); blocks of other slots store nothing; so every
  // W1/W3 memory operation precedes a release that some W2 block observed before it completed
  // (a slot's last release follows every fold count of its groups), hence precedes W2's
  // completion, which the combine's griddepcontrol.wait covers.
  DSV4_TRACE(if constexpr (!UP) tr.flush(1, slot));
  if constexpr (UP) {
    if (!chain.qcnt) {
      DSV4_TRACE(tr.flush(0, slot));
      return;
    }
    // The quantize launch's work, by the last block of each (chunk, 128-row group): one group per
    // block (16 * RT divides 128), 128 / (16 * RT) blocks per group. The warps left are kpart 0,
    // threads 0 .. RT * 32 - 1.
    constexpr int active = RT * k_warp_size;
    const int64_t grp = r0 / 128;
    bar_sync_threads(1, active);  // every hf store of the block
    DSV4_TRACE(tr.stamp_epilogue(1));
    int* const fold_counter = chain.qcnt + int64_t(slot) * (rows / 128) + grp;
    if (threadIdx.x == 0) {
      if constexpr (SLOTS) {
        // One acq_rel RMW instead of fence.sc, RMW, fence.sc (MEMBAR.SC.GPU twice): release of
        // the block's stores (ordered before thread 0 by the barrier), acquire of the others'.
        // fence.sc at each block's exit delays every later wave (MOE13: Pro T = 4 0.92-0.97x).
        int before;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                     : "=r"(before)
                     : "l"(fold_counter)
                     : "memory");
        fold_last = before == 128 / (16 * RT) - 1;
      } else {
        __threadfence();
        fold_last = atomicAdd(fold_counter, 1) == 128 / (16 * RT) - 1;
        __threadfence();
      }
    }
    bar_sync_threads(1, active);
    DSV4_TRACE(tr.stamp_epilogue(2));
    if (!fold_last) {
      DSV4_TRACE(tr.flush(0, slot));
      return;
    }
    for (int i = warp; i < c.z; i += RT) {
      const int p = pair_of[i];
      quantize_h_block(load_h_block<true>(hf + int64_t(p) * rows + grp * 128, lane),
                       h_hi + int64_t(p) * rows, grp * 128, lane);
    }
    if constexpr (SLOTS) {  // the group is quantized: release it to the slot's W2 blocks
      bar_sync_threads(1, active);
      if (threadIdx.x == 0) {
        int* const r = chain.ready + int64_t(slot) * k_ready_stride;
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(r) : "memory");
      }
    }
    DSV4_TRACE(tr.flush(0, slot + 1000));  // a folding block
  }
}

}  // namespace

}  // namespace dsv4::cuda
