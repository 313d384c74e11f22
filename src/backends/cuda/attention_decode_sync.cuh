// The synchronous split-KV decode kernel (attention_decode.cu; mma.sync, or wgmma with wg):
// every warp loads and computes in turn.
#pragma once

#include "backends/cuda/attention_decode_common.cuh"
#include "backends/cuda/attention_decode_loads.cuh"
#include "backends/cuda/attention_decode_partials.cuh"
#include "backends/cuda/attention_decode_softmax.cuh"
#include "backends/cuda/attention_decode_wgmma.cuh"
#include "backends/cuda/cp_async.cuh"
#include "backends/cuda/mma_sm80.cuh"
#include "backends/cuda/pdl.cuh"

namespace dsv4::cuda {

namespace {

template <bool wg, typename act_t, typename pool_t>
__global__ void __launch_bounds__(k_threads, 1)
    attention_decode_kernel(const act_t* q, int heads, kv_rows<pool_t> window, kv_rows<pool_t> comp,
                            int cap_w, int cap_c, int keys_per_split, int splits, float scale_log2,
                            float* part_o, float2* part_ml, unsigned long long* trace) {
  extern __shared__ __align__(1024) unsigned char smem[];  // wgmma: SW128 atoms 1024-aligned
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_entry);
  using tr = pool_traits<pool_t>;
  static_assert(!(wg && tr::records), "the wgmma path takes bf16 / f32 pools");
  namespace wgm = attention_wgmma;
  using ref_t = typename tr::ref;
  constexpr int k_stages = tr::stages;
  const uint32_t q_s = smem_u32(smem);
  const uint32_t k_s = q_s + k_q_bytes;  // the key ring: k_stages stages of tr::stage_bytes
  unsigned char* const dequant = smem + k_q_bytes + k_stages * tr::stage_bytes;  // records
  float* xchg = reinterpret_cast<float*>(dequant + tr::dequant_bytes);
  int* valid = reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(xchg) + k_xchg_bytes);
  int32_t* index = valid + k_stages * k_tile;                               // [index_ring][k_tile]
  ref_t* ptrs = reinterpret_cast<ref_t*>(index + tr::index_ring * k_tile);  // [ptr_ring][k_tile]

  // The combine kernel is launched as a programmatic dependent (pdl.cuh): let it start (and wait
  // in pdl_wait for this grid's completion and memory) on the SMs this grid leaves free.
  pdl_trigger();
  // plan.pdl: this grid may start before the previous kernel has finished; nothing global is read
  // before its completion.
  pdl_wait();
  const int split = blockIdx.x;
  const int group = blockIdx.y;
  const int64_t t = blockIdx.z;
  const int lane = threadIdx.x % k_warp_size;
  const int warp = threadIdx.x / k_warp_size;
  const int rg = warp & 3;     // query rows 16 rg ..
  const int half = warp >> 2;  // channels 256 half ..

  const split_keys<pool_t> keys =
      split_key_space(window, comp, t, cap_w, cap_c, split, keys_per_split);
  const slot_space<pool_t>& space = keys.space;
  const int n_live = keys.n_live;
  auto tile_start = [&](int k) { return keys.tile_start(k); };

  const int64_t head0 = int64_t(group) * k_rows;
  const int64_t part = (t * splits + split) * heads;
  if (n_live == 0) {
    if (threadIdx.x < k_rows && head0 + threadIdx.x < heads)
      part_ml[part + head0 + threadIdx.x] = make_float2(-INFINITY, 0.0f);
    return;
  }
  if (threadIdx.x == 0) trace_smid(trace);

  // Prologue: the indices of tiles 0 .. k_stages + index_lead - 1 and the query rows (rows past
  // `heads` are zero and never written out); references of tiles 0 .. k_stages - 1; the rows of
  // tiles 0 .. k_stages - 2.
  const uint32_t index_s = smem_u32(index);
  auto prefetch = [&](int j) {
    if (j < n_live)
      prefetch_indices(space, tile_start(j), index_s + uint32_t(j % tr::index_ring) * k_tile * 4);
  };
  auto convert = [&](int j) {
    if (j < n_live)
      convert_slots(space, tile_start(j), index + (j % tr::index_ring) * k_tile,
                    ptrs + (j % tr::ptr_ring) * k_tile);
  };
  const void* any_global = q;
  auto issue = [&](int j) {
    const int st = int(j % k_stages);
    if (j >= n_live) return;
    if constexpr (tr::records)
      load_record_tile(ptrs + (j % tr::ptr_ring) * k_tile, any_global, k_s + st * tr::stage_bytes,
                       valid + st * k_tile);
    else
      load_tile<wg>(ptrs + (j % tr::ptr_ring) * k_tile, any_global,
                    smem + k_q_bytes + st * k_tile_bytes, k_s + st * k_tile_bytes,
                    valid + st * k_tile);
  };
  // Prologue loops stay rolled: unrolled, the inlined slot lookups made the prologue ~64 KB of
  // straight-line SASS, fetched cold into the instruction cache on every launch.
#pragma unroll 1
  for (int j = 0; j < k_stages + tr::index_lead; ++j) prefetch(j);
  load_query_tile<wg>(q, t, heads, head0, smem, q_s);
  cp_async_commit_noclobber();
  cp_async_wait_noclobber<0>();
  if constexpr (wg) wgm::fence_async_smem();
  __syncthreads();
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_query);
#pragma unroll 1
  for (int j = 0; j < k_stages; ++j) convert(j);
  __syncthreads();
#pragma unroll 1
  for (int j = 0; j < k_stages - 1; ++j) {
    issue(j);
    cp_async_commit_noclobber();
  }

  // Output channels 256 half + 8 n + 2 (lane % 4) + (e & 1), rows lane / 4 + 8 (e >> 1): the
  // mma.sync C fragments acc[n][e], stored as the wgmma m64n128 accumulators of the two
  // 128-channel halves: acc_at(n, e) = acc[n / 16][4 (n % 16) + e].
  float acc[2][64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[0][i] = acc[1][i] = 0.0f;
  auto acc_at = [&](int n, int e) -> float& { return acc[n >> 4][4 * (n & 15) + e]; };
  auto acc_frag = [&](int n) -> float(&)[4] {
    return *reinterpret_cast<float(*)[4]>(&acc[n >> 4][4 * (n & 15)]);
  };
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

#pragma unroll 1
  for (int k = 0; k < n_live; ++k) {
    cp_async_wait_noclobber<k_stages - 2>();
    if constexpr (wg) wgm::fence_async_smem();
    __syncthreads();  // tile k landed for every thread; tile k - 1 is consumed
    if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_tile0);
    // (The group of iteration k - index_lead, which prefetched tile k + k_stages's indices, is
    // complete: at most k_stages - 2 newer groups are pending.)
    if (warp == 0) {
      prefetch(k + k_stages + tr::index_lead);
      convert(k + k_stages);
    }
    issue(k + k_stages - 1);
    cp_async_commit_noclobber();
    const int stage = int(k % k_stages);
    const int* vt = valid + stage * k_tile;
    uint32_t kb;  // the bf16 key tile
    if constexpr (tr::records) {
      // The dequantized tile of iteration k - 1 is consumed (the barrier above).
      dequant_record_tile(smem + k_q_bytes + stage * tr::stage_bytes, dequant);
      __syncthreads();
      kb = smem_u32(dequant);
    } else {
      kb = k_s + stage * k_tile_bytes;
    }

    // Half of S = Q K^T: rows 16 rg.., 32 keys, channels 256 half ..
    float s[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
    if constexpr (wg) {
      // Warpgroup `half` (warps 4 half ..): its 256 channels in 16 k16 steps; step kk is in
      // column block 4 half + kk / 4 at byte 32 (kk % 4) of each 128-byte row.
      float sd[16];
#pragma unroll
      for (int i = 0; i < 16; ++i) sd[i] = 0.0f;
      wgm::fence();
#pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        const uint32_t block = uint32_t(half * 4 + kk / 4), byte = uint32_t(kk % 4) * 32;
        wgm::mma_ss_n32(sd, wgm::desc(q_s + block * (k_rows * 128) + byte, 16, 1024),
                        wgm::desc(kb + block * (k_tile * 128) + byte, 16, 1024));
      }
      wgm::commit();
      wgm::wait_all();
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        wgm::reg_fence(sd[i]);
        s[i / 4][i % 4] = sd[i];
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < 16; ++kk) {
        const int c0 = half * 32 + kk * 2;
        uint32_t a[4];
        ldmatrix_x4(a, q_s + swizzled(rg * 16 + (lane % 8) + ((lane / 8) & 1) * 8, c0 + lane / 16));
#pragma unroll
        for (int np = 0; np < 2; ++np) {
          uint32_t b[4];
          ldmatrix_x4(b,
                      kb + swizzled(np * 16 + (lane / 16) * 8 + lane % 8, c0 + ((lane / 8) & 1)));
          mma_bf16_16816(s[2 * np], a, b[0], b[1]);
          mma_bf16_16816(s[2 * np + 1], a, b[2], b[3]);
        }
      }
    }
    float* mine = xchg + (warp * k_warp_size + lane) * 16;
    const float* other = xchg + ((warp ^ 4) * k_warp_size + lane) * 16;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      reinterpret_cast<float4*>(mine)[j] = make_float4(s[j][0], s[j][1], s[j][2], s[j][3]);
    __syncthreads();
    if (k == 0 && threadIdx.x == 0) trace_stamp(trace, 0, k_adt_s0);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float4 o = reinterpret_cast<const float4*>(other)[j];
      s[j][0] += o.x;
      s[j][1] += o.y;
      s[j][2] += o.z;
      s[j][3] += o.w;
    }

    // Online softmax over rows lane / 4 (e = 0, 1) and lane / 4 + 8 (e = 2, 3) (the ws kernel's
    // softmax_local, spelled out in each: a shared helper changed the SASS of both kernels).
    float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j * 8 + 2 * (lane % 4) + (e & 1);
        s[j][e] = vt[key] ? s[j][e] * scale_log2 : -INFINITY;
        tmax[e >> 1] = fmaxf(tmax[e >> 1], s[j][e]);
      }
    float corr[2], m_use[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 1));
      tmax[i] = fmaxf(tmax[i], __shfl_xor_sync(0xffffffffu, tmax[i], 2));
      const float m_new = fmaxf(m[i], tmax[i]);
      m_use[i] = m_new == -INFINITY ? 0.0f : m_new;  // no -inf - -inf
      corr[i] = exp2f(m[i] - m_use[i]);
      m[i] = m_new;
      l[i] *= corr[i];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - m_use[e >> 1]);
        l[e >> 1] += s[j][e];
      }
#pragma unroll
    for (int n = 0; n < 32; ++n) {
      acc_at(n, 0) *= corr[0];
      acc_at(n, 1) *= corr[0];
      acc_at(n, 2) *= corr[1];
      acc_at(n, 3) *= corr[1];
    }

    // O += P V over the 32 keys (two k16 steps), channels 256 half ..
    uint32_t pas[2][4];
    pack_probs(s, pas);
    if constexpr (wg) wgm::fence();  // acc rescaled and P written by this thread
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
      const uint32_t(&pa)[4] = pas[ks];
      if constexpr (wg) {
        // V = the key tile read MN-major: keys 16 ks .. at byte 128 * 16 ks of the column
        // blocks 4 half + 2 nh, + 1 (LBO: the next 64 channels; SBO: the next 8 keys).
#pragma unroll
        for (int nh = 0; nh < 2; ++nh)
          wgm::mma_rs_n128_mn(
              acc[nh], pa,
              wgm::desc(kb + uint32_t(half * 4 + nh * 2) * (k_tile * 128) + uint32_t(ks) * 16 * 128,
                        k_tile * 128, 1024));
      } else {
        const int key = ks * 16 + (lane % 8) + ((lane / 8) & 1) * 8;
#pragma unroll
        for (int np = 0; np < 16; ++np) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, kb + swizzled(key, half * 32 + np * 2 + lane / 16));
          mma_bf16_16816(acc_frag(2 * np), pa, b[0], b[1]);
          mma_bf16_16816(acc_frag(2 * np + 1), pa, b[2], b[3]);
        }
      }
    }
    if constexpr (wg) {
      wgm::commit();
      wgm::wait_all();
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        wgm::reg_fence(acc[0][i]);
        wgm::reg_fence(acc[1][i]);
      }
    }
  }
  cp_async_wait_noclobber<0>();
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_loop);

  sum_row_quads(l);
  const int64_t h0 = head0 + rg * 16 + lane / 4, h1 = h0 + 8;
  store_split_partial(acc, m, l, half, lane, h0, h1, heads, part, part_o, part_ml);
  if (threadIdx.x == 0) trace_stamp(trace, 0, k_adt_end);
}

}  // namespace

}  // namespace dsv4::cuda
