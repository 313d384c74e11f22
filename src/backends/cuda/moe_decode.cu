// Decode-path routed experts on tensor cores (see moe_decode.h and fp4_mma.cuh).
//
// Launches:
//   1. moe_decode_prepare_kernel: block 0 plans (pairs grouped by expert, cut into chunks of up to
//      8 pairs: (expert, first position in `sorted`, count)); the other blocks convert x to the
//      paired BF16 hi (and lo, for f32 x) layout.
//   2. moe_decode_gemm_kernel<up = true>: item (chunk, 16-row tile): W1 and W3 rows of the tile
//      times the chunk's tokens; epilogue: SwiGLU, h written in the paired hi/lo layout.
//   3. moe_decode_gemm_kernel<up = false>: W2 rows times the chunk's h rows into out[pair, :].
//   4. moe_decode_combine_kernel: y[t] = sum_k weights[t, k] * out[t * top_k + k] in k order.
// Official order (moe_decode_experts_official): launch 2 writes hf = SwiGLU * weights[pair] in
// f32; moe_decode_quantize_h_kernel FP8-quantizes each 128-block of hf (quant::, the semantics
// of fake_quant_fp8_values) into the paired hi layout, where it is exact in BF16 (an e4m3 value
// times a power of two), so launch 3 runs without the lo part; the combine drops the weights.
// A block is 4 warps; each warp owns one 16-row tile and a quarter, half or all of K (RT = 1, 2
// or 4 tiles per block); K parts are summed through shared memory in warp order (deterministic).
// The grid is (row groups, chunk upper bound); blocks past the device-side chunk count exit.
// Two weight pipelines (RING, chosen per format and activation type in run()): RING streams the
// weights through a per-warp cp.async ring of k_stages rounds and launches 2..4 (and the
// quantize launch) with programmatic dependent launch, so each starts while its predecessor
// drains and L2 fetches its first W2 rounds before L1 has finished; !RING is the first
// version's register double buffer with plain launches. Both compute the same sums in the same
// order (the same outputs bit for bit).
// MOE8: a block whose chunk holds one pair may stage that pair's activation row in dynamic
// shared memory (moe_decode_set_stage_x_tokens; the GEMM kernel's stage_x). MOE9 (switches, not
// the default, see g_stage_x in moe_decode_switches.cpp): staging at every T (W2 from T = 2), W2
// chunks of up to 2 pairs (moe_decode_set_stage_pairs), 4 scale slots so that W1/W3 keeps 4 blocks
// per SM (moe_decode_set_scale_slots_from; since session 39 the default where W1/W3 is staged, T =
// 2..4, on the H200 class). MOE10 (moe_decode_set_chain): where the W1/W3 grid is
// one wave its last block per (chunk, 128-row group) quantizes h (no quantize launch); up to 8
// pairs the prepare launch plans with one warp; at T <= 4 the GEMM blocks read their chunk with the
// count and the quantize / combine launches issue their loads before the index checks. MOE11 (chain
// bit 8; default 15): at T = 1 with bf16 x no prepare launch: each GEMM warp derives its block's
// chunk from the routing and W1/W3 converts x into its staged row itself (then the quantize launch
// runs: the fold's counters have nobody to zero them). Same sums (bit-equal to chain 0). MOE13
// (chain bits 16, 32, 64; default 127): at T <= 4 on the engine's path the fold runs at every wave
// count and at T = 1, its counters in a per-stream buffer that the combine zeroes, and W2 waits per
// chunk for its h (readiness counters released by the fold) instead of for the whole W1/W3 grid
// (chain_args; the SLOTS kernels). MOE15 (chain bit 256; default 383): a one-wave W2 grid capped at
// ceil(blocks / SMs) blocks per SM (launch_gemm_ss); DSV4_MOE_TRACE (diagnostic builds only):
// %globaltimer stamps of every block (bench_moe_linear_trace).
//
// Files: moe_decode_common.cuh (geometry, weight view, activation layout), moe_decode_plan.cuh
// (launch 1), moe_decode_round.cuh (the weight stream and one round's math),
// moe_decode_quantize.cuh (h's FP8 step, its launch), moe_decode_chain.cuh (chain arguments,
// readiness counters), moe_decode_gemm.cuh (launches 2 and 3), moe_decode_combine.cuh (launch 4),
// moe_decode_trace.cuh (diagnostic build); host: moe_decode_tuning.cpp (row tiles),
// moe_decode_switches.cpp (the switches and their measurements); here: the workspace, the launches
// and the entry points, in one translation unit with every kernel instantiation.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "backends/cuda/device_info.h"
#include "backends/cuda/kernel_attributes.h"
#include "backends/cuda/kernel_common.cuh"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_decode_combine.cuh"
#include "backends/cuda/moe_decode_common.cuh"
#include "backends/cuda/moe_decode_gemm.cuh"
#include "backends/cuda/moe_decode_plan.cuh"
#include "backends/cuda/moe_decode_quantize.cuh"
#include "backends/cuda/moe_decode_tuning.h"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

using moe_decode_tuning::pick_rt;

// The workspace of one call (moe_decode_workspace_bytes): chunk count, sorted pairs, chunks, x
// and h in the paired hi / lo layout, hf, out and the fold's counters, each 256-byte aligned.
size_t align_256(size_t n) {
  return (n + 255) / 256 * 256;
}

int64_t max_chunks(int64_t pairs, int64_t experts) {
  return pairs / k_chunk + std::min(pairs, experts);
}

struct layout {
  size_t count = 0, sorted, chunks, xhi, xlo, hhi, hlo, hf, out, qcnt, total;
};

// Counters of the quantization folded into W1/W3 (moe_decode_set_chain), zeroed by the prepare
// launch of every call: one per (chunk slot, 128-row group of h).
int64_t qfold_counters(int64_t chunks_bound, int64_t inter) {
  return chunks_bound * (inter / 128);
}

layout make_layout(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden, int64_t inter) {
  const int64_t pairs = tokens * top_k;
  layout l;
  l.sorted = 256;
  l.chunks = l.sorted + align_256(size_t(pairs) * 4);
  l.xhi = l.chunks + align_256(size_t(max_chunks(pairs, experts)) * sizeof(int4));
  l.xlo = l.xhi + align_256(size_t(tokens * hidden) * 2);
  l.hhi = l.xlo + align_256(size_t(tokens * hidden) * 2);
  l.hlo = l.hhi + align_256(size_t(pairs * inter) * 2);
  l.hf = l.hlo + align_256(size_t(pairs * inter) * 2);  // official order only
  l.out = l.hf + align_256(size_t(pairs * inter) * 4);
  l.qcnt = l.out + align_256(size_t(pairs * hidden) * 4);
  l.total = l.qcnt + align_256(size_t(qfold_counters(max_chunks(pairs, experts), inter)) * 4);
  return l;
}

// Resident blocks per SM of one GEMM instantiation with `smem` bytes of dynamic shared memory
// (queried once without; with, per launch: the staged row length varies with the shapes).
// The occupancy query counts 0 blocks when static + dynamic shared memory passes 48 KB and the
// kernel's dynamic limit has not been raised yet (the launch raises it: allow_dynamic_smem), so
// the limit is raised first. Before session 39 it was not: a staged W1/W3 instantiation read 1
// block per SM (max(0, 1)) until its first launch, and pick_rt's choice at T <= 4 depended on the
// process's earlier launches (l39b-l39f: the 4-slot kernels always took RT 4 that way).
template <weight_kind K, bool UP, bool SPLIT, int RT, bool RING, int RP, int SSO, bool W2P = false>
int gemm_blocks_per_sm(size_t smem) {
  const auto query = [](size_t bytes) {
    const auto kernel = moe_decode_gemm_kernel<K, UP, SPLIT, RT, RING, RP, SSO, false, W2P>;
    int b = 0;
    if ((bytes > 0 &&
         allow_dynamic_smem(reinterpret_cast<const void*>(kernel), bytes) != cudaSuccess) ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, k_threads, bytes) !=
            cudaSuccess) {
      cudaGetLastError();
      b = 1;
    }
    return std::max(b, 1);
  };
  static const int n0 = query(0);
  if (smem == 0) return n0;
  static std::atomic<uint64_t> last{0};  // (bytes << 32) | blocks of the latest query
  const uint64_t v = last.load(std::memory_order_relaxed);
  if ((v >> 32) == smem) return int(v & 0xFFFFFFFFu);
  const int n = query(smem);
  last.store((uint64_t(smem) << 32) | uint32_t(n), std::memory_order_relaxed);
  return n;
}

// Dynamic shared memory (at least `base`) that leaves `kernel` at most `cap` resident blocks per
// SM (never fewer than `base` allows), or `base` where that is already so. Cached per kernel
// for the latest (base, cap).
size_t dyn_smem_for_cap(const void* kernel, size_t base, int cap) {
  static std::mutex mu;
  static std::map<const void*, std::pair<uint64_t, size_t>> cache;
  const uint64_t key = (uint64_t(base) << 8) | uint64_t(cap);
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(kernel); it != cache.end() && it->second.first == key)
      return it->second.second;
  }
  const auto blocks = [&](size_t bytes) {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, k_threads, bytes) !=
        cudaSuccess) {
      cudaGetLastError();
      return -1;
    }
    return b;
  };
  size_t bytes = base;
  cudaFuncAttributes a{};
  int device = 0, per_sm = 0, reserved = 0;
  if (cap > 0 && blocks(base) > cap && cudaFuncGetAttributes(&a, kernel) == cudaSuccess &&
      cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) ==
          cudaSuccess &&
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) ==
          cudaSuccess) {
    // Per block: static + dynamic + reserved > per_sm / (cap + 1).
    const int64_t want =
        int64_t(per_sm) / (cap + 1) + 1 - int64_t(a.sharedSizeBytes) - int64_t(reserved);
    size_t pad = size_t(std::max<int64_t>(int64_t(base), (want + 127) / 128 * 128));
    if (allow_dynamic_smem(kernel, pad) == cudaSuccess) {
      for (int i = 0; i < 8 && blocks(pad) > cap; ++i) pad += 128;
      const int b = blocks(pad);
      if (b == cap) bytes = pad;
    } else {
      cudaGetLastError();
    }
  }
  const std::lock_guard<std::mutex> lock(mu);
  cache[kernel] = {key, bytes};
  return bytes;
}

// Dynamic shared memory of a staged launch: one bf16 row of kdim per pair, rows 64 bytes apart
// modulo 128 when several (moe_decode_gemm_kernel's xs_stride).
size_t staged_rows_bytes(int pairs, int64_t kdim) {
  return size_t(pairs) * size_t(kdim * 2 + (pairs > 1 ? 64 : 0));
}

// The shape-dependent plan of one GEMM launch: its staged rows, resident blocks per SM at RT 4 /
// 2 / 1, and the row tiles pick_rt takes. `ready`: chain 16's per-slot readiness is on (W2 then
// stages h at T = 1 too with chain.stage_h1).
// Rows of one warp's tile: 16, or 32 with W2P (two 16-row tiles a warp-round).
template <bool W2P>
constexpr int64_t k_gemm_tile_rows = W2P ? 32 : 16;
struct gemm_plan {
  size_t stage_bytes = 0;
  int stage_pairs = 0;
  int blocks_per_sm[3] = {1, 1, 1};
  int rt = 4;
};
template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP, int SSO, bool W2P>
gemm_plan plan_gemm(int sms, int64_t kdim, int64_t rows, int64_t tokens, int64_t experts, int top_k,
                    int64_t chunks_bound, bool ready, int stage_h1) {
  gemm_plan p;
  // Staged activation rows (moe_decode_set_stage_x_tokens): the ring kernels without a lo part.
  const moe_decode_stage_x sx = moe_decode_stage_x_tokens();
  const bool stage = UP ? tokens <= sx.up_max
                        : (tokens >= sx.down_min || (ready && stage_h1)) && tokens <= sx.down_max;
  p.stage_pairs = UP ? moe_decode_stage_pairs().up : moe_decode_stage_pairs().down;
  p.stage_bytes = RING && !SPLIT && stage ? staged_rows_bytes(p.stage_pairs, kdim) : 0;
  p.blocks_per_sm[0] = gemm_blocks_per_sm<K, UP, SPLIT, 4, RING, RP, SSO, W2P>(p.stage_bytes);
  p.blocks_per_sm[1] = gemm_blocks_per_sm<K, UP, SPLIT, 2, RING, RP, SSO, W2P>(p.stage_bytes);
  p.blocks_per_sm[2] = gemm_blocks_per_sm<K, UP, SPLIT, 1, RING, RP, SSO, W2P>(p.stage_bytes);
  // W2P: a warp's tile is 32 rows; the row-tile model sees that many tiles (rows / 32 of 16).
  p.rt = pick_rt(UP, rows * 16 / k_gemm_tile_rows<W2P>, kdim / k_round, tokens, top_k, experts,
                 chunks_bound, sms, p.blocks_per_sm, moe_decode_rt_blocks_per_sm(),
                 current_device_read_bytes_per_sm_cycle(), SSO == k_scale_slots_few, W2P,
                 K == weight_kind::mxfp4);
  return p;
}

// rt_force (1, 2 or 4; 0 = this launch's own plan): the row tiles, hence the K parts of each
// block (k_warps / RT), that the checkpoint layout takes from its repacked twin (launch_gemm).
template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP, int SSO, bool W2P = false>
cudaError_t launch_gemm_ss(int sms, const uint16_t* a_hi, const uint16_t* a_lo, int64_t kdim,
                           int64_t rows, int64_t tokens, int64_t experts, int top_k,
                           const int* chunk_count, const int4* chunks, const int* sorted,
                           int64_t chunks_bound, const fp4_weight& wa, const fp4_weight& wb,
                           float limit, const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo,
                           float* hf, float* out, chain_args& chain, cudaStream_t stream,
                           int rt_force, bool acc2) {
  const gemm_plan plan = plan_gemm<K, UP, SPLIT, RING, RP, SSO, W2P>(
      sms, kdim, rows, tokens, experts, top_k, chunks_bound, chain.ready != nullptr,
      chain.stage_h1);
  const size_t stage_bytes = plan.stage_bytes;
  const int stage_pairs = plan.stage_pairs;
  const int(&blocks_per_sm)[3] = plan.blocks_per_sm;
  constexpr int64_t tile_rows = k_gemm_tile_rows<W2P>;
  const int rt = rt_force > 0 ? rt_force : plan.rt;
  const dim3 grid(unsigned(rows / (tile_rows * rt)), unsigned(chunks_bound));
  // The quantization folded into W1/W3 only where the grid is one wave: each block's counter
  // round trip at its exit then delays nothing but the last blocks, less than the quantize
  // launch it replaces; over several waves it delays every wave (run 2: Pro T = 1, 3 waves,
  // 0.96x; Flash T = 1, one wave, 1.035x).
  // (Chain 16: at any wave count, fold_waves; W2 then waits for it per slot.)
  const int rt_index = rt == 4 ? 0 : rt == 2 ? 1 : 2;  // blocks_per_sm's order
  if (chain.qcnt && !chain.fold_waves &&
      int64_t(grid.x) * grid.y > int64_t(blocks_per_sm[rt_index]) * sms)
    chain.qcnt = nullptr;
  // SLOTS (chain 16) only on the engine's path (run() sets ready only there).
  constexpr bool slots_ok = RING && !SPLIT && RP == 2;
  // Chain 256 (MOE15): a one-wave W2 grid of the SLOTS path at most ceil(blocks / SMs) blocks per
  // SM (padded dynamic shared memory). Its blocks take the SM slots that W1/W3's blocks free,
  // first on the SMs whose W1/W3 blocks end first: at Flash T = 1 (384 blocks, 4 per SM) they
  // piled 4 deep on ~110 SMs (trace), each SM then issue-bound on 16 warps' E2M1 expansion while
  // ~20 SMs ran no W2 block. Same kernels and row tiles (the same sums).
  int pad_cap = 0;
  if constexpr (!UP && slots_ok)
    if (chain.ready && (moe_decode_chain() & 256)) {
      const int64_t blocks = int64_t(grid.x) * grid.y;
      if (blocks <= int64_t(blocks_per_sm[rt_index]) * sms) pad_cap = int((blocks + sms - 1) / sms);
      if (pad_cap >= blocks_per_sm[rt_index]) pad_cap = 0;
    }
#define DSV4_GEMM_K(RT, SL, A2)                                                                    \
  [&] {                                                                                            \
    const auto kernel =                                                                            \
        moe_decode_gemm_kernel<K, UP, SPLIT, RT, RING, RP, SSO, SL, W2P, false, false, A2>;        \
    const size_t dyn =                                                                             \
        pad_cap ? dyn_smem_for_cap(reinterpret_cast<const void*>(kernel), stage_bytes, pad_cap)    \
                : stage_bytes;                                                                     \
    return (dyn ? allow_dynamic_smem(kernel, dyn) : cudaSuccess) != cudaSuccess                    \
               ? cudaErrorInvalidValue                                                             \
               : launch_pdl(RING, kernel, grid, dim3(k_threads), dyn, stream, a_hi, a_lo, kdim,    \
                            rows, top_k, chunk_count, chunks, sorted, wa, wb, limit, pair_weights, \
                            h_hi, h_lo, hf, out, stage_bytes > 0 ? stage_pairs : 0, chain);        \
  }()
  // Two accumulator sets (the kernel's ACC2): W2 only, as run() chose for the call.
  constexpr bool acc2_ok = !UP;
#define DSV4_GEMM_A(RT, SL) (acc2 ? DSV4_GEMM_K(RT, SL, acc2_ok) : DSV4_GEMM_K(RT, SL, false))
#define DSV4_GEMM(RT) (slots_ok && chain.ready ? DSV4_GEMM_A(RT, slots_ok) : DSV4_GEMM_A(RT, false))
  if (!slots_ok && chain.ready) return cudaErrorInvalidValue;
  cudaError_t e;
  if (rt == 4)
    e = DSV4_GEMM(4);
  else if (rt == 2)
    e = DSV4_GEMM(2);
  else
    e = DSV4_GEMM(1);
#undef DSV4_GEMM
#undef DSV4_GEMM_A
#undef DSV4_GEMM_K
  return e;
}

// moe_decode_set_up_scale_slots_4_t1 for one W1/W3 launch at T = 1. The rule (-1,
// moe_decode_tuning::up_four_slots_at_one_token) counts both kernels' resident blocks at 2 row
// tiles (T = 1's choice at both model shapes) with the staged row, as the launch will.
template <weight_kind K, bool SPLIT, bool RING, int RP>
bool up_scale_slots_4_t1(int sms, int64_t kdim, int64_t rows, int64_t chunks_bound) {
  const int mode = moe_decode_up_scale_slots_4_t1();
  if (mode >= 0) return mode == 1;
  const size_t stage_bytes = moe_decode_stage_x_tokens().up_max >= 1
                                 ? staged_rows_bytes(moe_decode_stage_pairs().up, kdim)
                                 : 0;
  const int b8 = gemm_blocks_per_sm<K, true, SPLIT, 2, RING, RP, 0>(stage_bytes);
  const int b4 = gemm_blocks_per_sm<K, true, SPLIT, 2, RING, RP, k_scale_slots_few>(stage_bytes);
  return moe_decode_tuning::up_four_slots_at_one_token(b8, b4, (rows / 32) * chunks_bound, sms,
                                                       current_device_read_bytes_per_sm_cycle());
}

// The scale slots (SSO) and W2P choice of one launch: f(std::integral_constant<int, SSO>,
// std::bool_constant<W2P>). moe_decode_set_scale_slots_from's 4 slots and W2P apply to the engine's
// path (ring, no lo part, repacked with the shift expansion); every other combination keeps
// k_scale_slots (fewer instantiations).
template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP, typename F>
auto with_gemm_variant(int sms, int64_t kdim, int64_t rows, int64_t tokens, int64_t chunks_bound,
                       F&& f) {
  using slots_0 = std::integral_constant<int, 0>;
  using slots_4 = std::integral_constant<int, k_scale_slots_few>;
  if constexpr (RING && !SPLIT && RP == 2) {
    const double read_per_sm_cycle = current_device_read_bytes_per_sm_cycle();
    const bool four = moe_decode_scale_slots_4(tokens, read_per_sm_cycle);
    if constexpr (!UP) {
      // W2P (moe_decode_set_w2_pair_from): W2 of the engine's path, rows a multiple of 32, on the
      // 4 scale slots where those apply too (T = 2..4: Pro's W2 by default since session 46).
      if (rows % 32 == 0 && moe_decode_w2_pair(tokens, read_per_sm_cycle, rows))
        return four ? f(slots_4{}, std::true_type{}) : f(slots_0{}, std::true_type{});
    } else if (!four && tokens == 1 &&
               up_scale_slots_4_t1<K, SPLIT, RING, RP>(sms, kdim, rows, chunks_bound)) {
      return f(slots_4{}, std::false_type{});
    }
    if (four) return f(slots_4{}, std::false_type{});
  }
  return f(slots_0{}, std::false_type{});
}

// twin_ready (RP != 2): whether the repacked layout's run would have had chain 16's readiness
// (run(): slots_buf), for the twin's plan below.
template <weight_kind K, bool UP, bool SPLIT, bool RING, int RP>
cudaError_t launch_gemm(int sms, const uint16_t* a_hi, const uint16_t* a_lo, int64_t kdim,
                        int64_t rows, int64_t tokens, int64_t experts, int top_k,
                        const int* chunk_count, const int4* chunks, const int* sorted,
                        int64_t chunks_bound, const fp4_weight& wa, const fp4_weight& wb,
                        float limit, const float* pair_weights, uint16_t* h_hi, uint16_t* h_lo,
                        float* hf, float* out, chain_args& chain, bool twin_ready, bool acc2,
                        cudaStream_t stream) {
  // The checkpoint layout runs the row tiles that the repacked layout would for the same call, so
  // that each block splits K into the same parts and both layouts give the same sums bit for bit
  // (test_gpu_model's repacked-vs-checkpoint comparison): the engine's path plans its row tiles
  // with kernels the checkpoint layout does not have (4 scale slots, W2P, chain 16's staging) and
  // rules of their own (pick_rt's one-wave rules), e.g. Flash T = 2's W1/W3 at RT 2 (session 47).
  int rt_force = 0;
  if constexpr (RP != 2)
    rt_force = with_gemm_variant<K, UP, SPLIT, RING, 2>(
        sms, kdim, rows, tokens, chunks_bound, [&](auto sso, auto w2p) {
          return plan_gemm<K, UP, SPLIT, RING, 2, decltype(sso)::value, decltype(w2p)::value>(
                     sms, kdim, rows, tokens, experts, top_k, chunks_bound, twin_ready,
                     chain.stage_h1)
              .rt;
        });
  return with_gemm_variant<K, UP, SPLIT, RING, RP>(
      sms, kdim, rows, tokens, chunks_bound, [&](auto sso, auto w2p) {
        return launch_gemm_ss<K, UP, SPLIT, RING, RP, decltype(sso)::value, decltype(w2p)::value>(
            sms, a_hi, a_lo, kdim, rows, tokens, experts, top_k, chunk_count, chunks, sorted,
            chunks_bound, wa, wb, limit, pair_weights, h_hi, h_lo, hf, out, chain, stream, rt_force,
            acc2);
      });
}

// Chain 16's counters: k_slot_counters ints per (device, stream), allocated and zeroed on
// the first call outside stream capture (the engine's graphs run their step eagerly first); null
// while capturing before that, or when allocation fails (the call then runs chain 15's launches).
// Kept for the process. Each call leaves them zero (the combine zeroes them), so calls, replayed
// graphs included, start from zero; calls on one stream only (two streams have two buffers), and
// graphs captured on one stream are not replayed concurrently on others.
// 32768: chain 128's T = 64 (Pro: 432 slots, 24 groups: 24192).
constexpr int64_t k_slot_counters = 32768;
// Chain 16's largest T without bit 128 (MOE13: 4; MOE14: 16, see run()).
constexpr int64_t k_slots_max_tokens = 16;
int* slot_counters(cudaStream_t stream) {
  static std::mutex mu;
  static std::map<std::pair<int, cudaStream_t>, int*> buffers;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  const std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(device, stream);
  if (const auto it = buffers.find(key); it != buffers.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
      capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    return nullptr;
  }
  int* p = nullptr;
  if (cudaMalloc(&p, k_slot_counters * sizeof(int)) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (cudaMemsetAsync(p, 0, k_slot_counters * sizeof(int), stream) != cudaSuccess) {
    cudaGetLastError();
    cudaFree(p);
    return nullptr;
  }
  buffers.emplace(key, p);
  return p;
}

template <weight_kind K, int RP, typename act_t>
cudaError_t run(const act_t* x, int64_t tokens, const int32_t* indices, const float* weights,
                int64_t top_k, const device_weight& w1, const device_weight& w3,
                const device_weight& w2, float limit, const layout& l, unsigned char* base,
                act_t* y, bool official, cudaStream_t stream) {
  constexpr bool x_split = std::is_same_v<act_t, float>;
  // Weight pipeline: the cp.async ring with PDL, except MXFP4 with f32 activations, where the
  // register double buffer of the first version measured 1.0-1.2x faster on an H200 (the ring
  // is 1.0-1.2x faster for NVFP4 f32 and MXFP4 bf16; bench/kernels/results/
  // h200_2026-11-22_moe3_bench_moe_linear.txt).
  // The repacked layout (RP) takes the same pipeline as the checkpoint layout.
  constexpr bool ring = !(K == weight_kind::mxfp4 && x_split);
  const int64_t experts = w1.count, hidden = w1.cols, inter = w1.rows, pairs = tokens * top_k;
  const int64_t bound = max_chunks(pairs, experts);
  int* chunk_count = reinterpret_cast<int*>(base + l.count);
  int* sorted = reinterpret_cast<int*>(base + l.sorted);
  int4* chunks = reinterpret_cast<int4*>(base + l.chunks);
  auto* xhi = reinterpret_cast<uint16_t*>(base + l.xhi);
  auto* xlo = reinterpret_cast<uint16_t*>(base + l.xlo);
  auto* hhi = reinterpret_cast<uint16_t*>(base + l.hhi);
  auto* hlo = reinterpret_cast<uint16_t*>(base + l.hlo);
  auto* hf = reinterpret_cast<float*>(base + l.hf);
  auto* out = reinterpret_cast<float*>(base + l.out);
  // moe_decode_set_chain: 1 = the quantize launch's work in W1/W3's last block per (chunk,
  // 128-row group) at one wave, 2 = the plan by one warp at <= 8 pairs, 4 = chunk with its
  // count, quantize / combine loads issued together at T <= 4.
  const int chain = moe_decode_chain();
  // Bit 4 at T <= 4 only: T = 64 measured 0.994-0.996x with it (runs 2 and 3, controls
  // 0.997-1.000x), T = 16 noise.
  // 8: no prepare launch at T = 1 (bf16 x, the ring, W1/W3 staged, <= 8 pairs): the GEMM blocks
  // plan their own chunk and W1/W3 stages x itself. The fold of 1 is then off: nothing of the
  // call runs before W1/W3 to zero its counters, and the workspace keeps nothing between calls
  // (the engine allocates it per call). Measured (g_chain): Pro T = 1 1.02-1.03x, Flash T = 1
  // within noise.
  const bool self_plan = (chain & 8) && tokens == 1 && !x_split && ring && pairs <= k_chunk &&
                         moe_decode_stage_x_tokens().up_max >= 1;
  // 16 (MOE13, official order, T <= 16 since MOE14, the engine's path: bf16 x, ring, repacked,
  // shift decode): the fold at every wave count and with 8's self plan, its counters in a
  // per-stream buffer (slot_counters) that the combine zeroes; W2 waits per slot for its h
  // (chain_args) instead of for the whole W1/W3 grid; its fold counts with one acq_rel RMW and
  // releases with a release reduction (bit 64 chose that over fence.sc around plain atomics until
  // MOE14; now a no-op); 32: with 16, W2 stages h at T = 1 too (stage_x's down_min); 128 (MOE14,
  // A/B): 16 at every T.
  // MOE14 (H100, same process, two runs, controls bracketing; 2026-11-26_moe14_NOTES.md): 16 up
  // to T = 16 vs without, Flash T = 8 / 16 1.080 / 1.038-1.042x, Pro T = 8 1.041x, Pro T = 16
  // 1.002-1.005x (against the controls past the first position, which measured 3-4% slow there);
  // 128 at T = 64 1.004x (Flash) / 1.001x (Pro): neutral, so it stays a switch (T = 32, H200).
  const int64_t groups = inter / 128;
  const int64_t ready_ints = bound * k_ready_stride, n_slot = ready_ints + bound * groups;
  const bool slots_path = official && ring && !x_split &&
                          (tokens <= k_slots_max_tokens || (chain & 128)) && (chain & 16) &&
                          n_slot <= k_slot_counters;
  int* const slots_buf = slots_path && RP == 2 ? slot_counters(stream) : nullptr;
  // The checkpoint layout plans its row tiles as the repacked layout's call would (launch_gemm).
  const bool twin_ready = slots_path && RP != 2;
  // W2's accumulator sets: one choice per call for every W2 kernel it may run (the same sums in
  // both layouts, both pipelines and every chain).
  const bool w2_acc2 = moe_decode_w2_two_sets(tokens, K == weight_kind::nvfp4,
                                              current_device_read_bytes_per_sm_cycle(), hidden);
  const bool qfold = official && (slots_buf || ((chain & 1) && !self_plan)),
             early = (chain & 4) && tokens <= 4;
  auto* qcnt = slots_buf ? slots_buf + ready_ints : reinterpret_cast<int*>(base + l.qcnt);
  int* const ready = slots_buf;
  const int fold_waves = slots_buf ? 1 : 0, stage_h1 = (chain & 32) ? 1 : 0;
  const int32_t* self_indices = self_plan ? indices : nullptr;
  chain_args up_chain{qfold ? qcnt : nullptr,
                      early,
                      self_indices,
                      int(pairs),
                      int(experts),
                      ready,
                      int(groups),
                      fold_waves,
                      stage_h1},
      down_chain{nullptr, early,       self_indices, int(pairs), int(experts),
                 ready,   int(groups), fold_waves,   stage_h1};

  if (!self_plan) {
    const int64_t groups = tokens * hidden / 8;
    moe_decode_prepare_kernel<act_t>
        <<<unsigned(1 + ceil_div(groups, k_plan_threads)), k_plan_threads, 0, stream>>>(
            indices, int(pairs), int(experts), chunk_count, sorted, chunks, x, tokens * hidden, xhi,
            xlo, qcnt, qfold && !slots_buf ? int(qfold_counters(bound, inter)) : 0,
            (chain & 2) && pairs <= k_chunk);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  const int sms = current_device_sm_count();
  const fp4_weight f1 = make_fp4_weight(w1), f3 = make_fp4_weight(w3), f2 = make_fp4_weight(w2);
  // Chain 8: W1/W3 is the call's first launch (PDL: its blocks wait for the previous kernel
  // before reading anything) and reads x itself.
  const uint16_t* up_hi = self_plan ? reinterpret_cast<const uint16_t*>(x) : xhi;
  if (const cudaError_t e = launch_gemm<K, true, x_split, ring, RP>(
          sms, up_hi, xlo, hidden, inter, tokens, experts, int(top_k), chunk_count, chunks, sorted,
          bound, f1, f3, limit, official ? weights : nullptr, hhi, hlo, hf, nullptr, up_chain,
          twin_ready, false, stream);
      e != cudaSuccess)
    return e;
  // A launch refused past this point leaves W1/W3's counts (chain 16's readiness and fold
  // counters) in the per-stream buffer with no launch of the call left to zero them; a later call
  // whose launches succeed would then see its slots ready before its W1/W3 ran and read stale h.
  // Zero the buffer before returning the error (a memset node when capturing).
  const auto fail = [&](cudaError_t e) {
    if (slots_buf) cudaMemsetAsync(slots_buf, 0, k_slot_counters * sizeof(int), stream);
    return e;
  };
  if (official) {
    const int64_t items = pairs * (inter / k_round);
    if (!up_chain.qcnt)  // else W1/W3 quantized h (launch_gemm_ss keeps the fold at one wave)
      if (const cudaError_t e = launch_pdl(
              ring,
              early ? moe_decode_quantize_h_kernel<true> : moe_decode_quantize_h_kernel<false>,
              dim3(unsigned(ceil_div(items, 256 / k_warp_size))), dim3(256), 0, stream, hf, indices,
              pairs, experts, inter, hhi);
          e != cudaSuccess)
        return fail(e);
    // The quantized h is exact in BF16: no lo part.
    if (const cudaError_t e = launch_gemm<K, false, false, ring, RP>(
            sms, hhi, hlo, inter, hidden, tokens, experts, int(top_k), chunk_count, chunks, sorted,
            bound, f2, f2, limit, nullptr, nullptr, nullptr, nullptr, out, down_chain, twin_ready,
            w2_acc2, stream);
        e != cudaSuccess)
      return fail(e);
  } else if (const cudaError_t e = launch_gemm<K, false, true, ring, RP>(
                 sms, hhi, hlo, inter, hidden, tokens, experts, int(top_k), chunk_count, chunks,
                 sorted, bound, f2, f2, limit, nullptr, nullptr, nullptr, nullptr, out, down_chain,
                 twin_ready, w2_acc2, stream);
             e != cudaSuccess) {
    return fail(e);
  }
  const int threads = 256;
  const cudaError_t e =
      launch_pdl(ring,
                 slots_buf ? (early ? moe_decode_combine_kernel<act_t, true, true>
                                    : moe_decode_combine_kernel<act_t, false, true>)
                 : early   ? moe_decode_combine_kernel<act_t, true>
                           : moe_decode_combine_kernel<act_t, false>,
                 dim3(grid_stride_blocks(tokens * hidden, threads)), dim3(threads), 0, stream, out,
                 indices, official ? nullptr : weights, tokens, int(top_k), experts, hidden, y,
                 slots_buf, slots_buf ? int(n_slot) : 0);
  return e == cudaSuccess ? e : fail(e);
}

}  // namespace

bool moe_decode_supported(const device_weight& w1, const device_weight& w3,
                          const device_weight& w2) {
  if (w1.kind != weight_kind::mxfp4 && w1.kind != weight_kind::nvfp4) return false;
  // Either layout (the RP kernels read the repacked one), the same for all three.
  for (const device_weight* w : {&w1, &w3, &w2})
    if (validate_weight(*w, true) != cudaSuccess || w->kind != w1.kind ||
        w->scale_e8m0 != w1.scale_e8m0 || w->count != w1.count || w->layout != w1.layout ||
        !aligned_16(w->data) || !aligned_16(w->scale))
      return false;
  const int64_t hidden = w1.cols, inter = w1.rows;
  return w3.rows == inter && w3.cols == hidden && w2.rows == hidden && w2.cols == inter &&
         hidden % k_round == 0 && inter % k_round == 0 && w1.count <= k_max_experts;
}

size_t moe_decode_workspace_bytes(int64_t tokens, int64_t top_k, int64_t experts, int64_t hidden,
                                  int64_t inter) {
  if (tokens <= 0 || top_k <= 0) return 256;
  return make_layout(tokens, top_k, experts, hidden, inter).total;
}

namespace {

template <typename act_t>
cudaError_t run_decode(const act_t* x, int64_t tokens, const int32_t* indices, const float* weights,
                       int64_t top_k, const device_weight& w1, const device_weight& w3,
                       const device_weight& w2, float swiglu_limit, void* workspace,
                       size_t workspace_bytes, act_t* y, bool official, bool require_repacked,
                       cudaStream_t stream) {
  if (tokens < 0 || top_k <= 0 || top_k > 32 || !x || !indices || !weights || !y || !workspace)
    return cudaErrorInvalidValue;
  // The layout is the weights' own (device_weight::layout); the *_repacked entries insist on it.
  const bool repacked = w1.layout == weight_layout::repacked;
  if (require_repacked && !repacked) return cudaErrorInvalidValue;
  if (tokens > k_moe_decode_max_tokens || !moe_decode_supported(w1, w3, w2))
    return cudaErrorNotSupported;
  if (tokens == 0) return cudaSuccess;
  const layout l = make_layout(tokens, top_k, w1.count, w1.cols, w1.rows);
  if (workspace_bytes < l.total || !aligned_16(workspace)) return cudaErrorInvalidValue;
  auto* base = static_cast<unsigned char*>(workspace);
#define DSV4_RUN(K, RP)                                                                          \
  run<K, RP>(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, l, base, y, official, \
             stream)
  // RP: 0 the checkpoint layout, 2 the repacked one (1, the rotation expansion, retired in
  // session 44: since session 43's pair map it was the same instructions without the engine's
  // W2P / slot paths).
  if (w1.kind == weight_kind::mxfp4)
    return repacked ? DSV4_RUN(weight_kind::mxfp4, 2) : DSV4_RUN(weight_kind::mxfp4, 0);
  return repacked ? DSV4_RUN(weight_kind::nvfp4, 2) : DSV4_RUN(weight_kind::nvfp4, 0);
#undef DSV4_RUN
}

}  // namespace

template <typename act_t>
cudaError_t moe_decode_experts(const act_t* x, int64_t tokens, const int32_t* indices,
                               const float* weights, int64_t top_k, const device_weight& w1,
                               const device_weight& w3, const device_weight& w2, float swiglu_limit,
                               void* workspace, size_t workspace_bytes, act_t* y,
                               cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, false, false, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_official(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, true, false, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_repacked(const act_t* x, int64_t tokens, const int32_t* indices,
                                        const float* weights, int64_t top_k,
                                        const device_weight& w1, const device_weight& w3,
                                        const device_weight& w2, float swiglu_limit,
                                        void* workspace, size_t workspace_bytes, act_t* y,
                                        cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, false, true, stream);
}

template <typename act_t>
cudaError_t moe_decode_experts_official_repacked(
    const act_t* x, int64_t tokens, const int32_t* indices, const float* weights, int64_t top_k,
    const device_weight& w1, const device_weight& w3, const device_weight& w2, float swiglu_limit,
    void* workspace, size_t workspace_bytes, act_t* y, cudaStream_t stream) {
  return run_decode(x, tokens, indices, weights, top_k, w1, w3, w2, swiglu_limit, workspace,
                    workspace_bytes, y, true, true, stream);
}

#define DSV4_MOE_DECODE_INSTANTIATE(NAME, T)                                                     \
  template cudaError_t NAME<T>(const T*, int64_t, const int32_t*, const float*, int64_t,         \
                               const device_weight&, const device_weight&, const device_weight&, \
                               float, void*, size_t, T*, cudaStream_t);
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_repacked, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_repacked, __nv_bfloat16)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official_repacked, float)
DSV4_MOE_DECODE_INSTANTIATE(moe_decode_experts_official_repacked, __nv_bfloat16)
#undef DSV4_MOE_DECODE_INSTANTIATE

}  // namespace dsv4::cuda
