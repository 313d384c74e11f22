// How the access pattern of a decode kernel bounds its weight stream, with no arithmetic in the
// way: each kernel below reads a row-major [rows, cols] byte matrix (an FP8 projection) exactly
// once, the way one decode kernel family walks it, and XORs what it read (so the loads stay).
// Printed as GB/s and as a ratio to the plain streaming read of the same bytes, in the same run.
//
//   contig      grid-stride 16-byte loads over the whole buffer (the read ceiling)
//   tile16x128  linear_decode at few tokens: a warp owns a 16-row tile and a K part; per round
//               each row gives 128 bytes (lane L: rows L/4 and L/4 + 8, 32 bytes each), 3 rounds
//               of loads in flight
//   tile16x512  the same tiles, 512 bytes per row per round (16 loads in flight per lane)
//   row_stream  a warp walks whole rows, 512 contiguous bytes per load instruction, 8 in flight
//   ... pdl    the same launched with programmatic dependent launch (see pdl_trigger)
//   bulk<R,C>   TMA bulk copies (cp.async.bulk, mbarrier completion) of R rows x C bytes per
//               stage into a per-warp shared-memory ring of 4 stages; the warp then reads the
//               stage back from shared memory (the consumer side of a bulk-ring kernel)
//
// Timing: batches of 8 back-to-back launches (one per weight copy, copies rotated past L2 so
// every launch reads from HBM), CUDA events, median of 15 batches; and the median of single
// launches, which adds the launch latency a lone call sees.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.cuh"

namespace {

constexpr int k_tile_rows = 16;

__device__ __forceinline__ uint32_t fold(uint4 v) {
  return v.x ^ v.y ^ v.z ^ v.w;
}

// Programmatic dependent launch, as a chained decode step would use it: the kernel lets its
// successor launch at once, issues its first weight loads (weights never depend on the previous
// kernel), and only then waits for the predecessor (whose output, the activations, a real kernel
// needs). Without the launch attribute both instructions are no-ops.
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void pdl_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

__global__ void contig_kernel(const uint4* __restrict__ p, size_t n, uint32_t* sink) {
  pdl_trigger();
  uint32_t acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  bool waited = false;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = __ldcs(p + i + j * stride);
    if (!waited) pdl_wait(), waited = true;
#pragma unroll
    for (int j = 0; j < 4; ++j) acc ^= fold(v[j]);
  }
  if (!waited) pdl_wait();
  for (; i < n; i += stride) acc ^= fold(__ldcs(p + i));
  if (acc == 0x12345678u) *sink = acc;
}

// Work item w = (tile, part): rows 16 tile .. 16 tile + 15, bytes [part * span, (part + 1) * span)
// of each row. Warps are numbered over the grid; a warp takes items w, w + warps, ...
struct tile_walk {
  int64_t rows, cols, parts, span;
  __device__ int64_t items() const { return rows / k_tile_rows * parts; }
};

__global__ void tile16x128_kernel(const uint8_t* __restrict__ m, tile_walk walk, uint32_t* sink) {
  pdl_trigger();
  bool waited = false;
  const int lane = threadIdx.x % 32;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  uint32_t acc = 0;
  for (int64_t w = warp; w < walk.items(); w += warps) {
    const int64_t tile = w / walk.parts, part = w % walk.parts;
    const uint8_t* r0 =
        m + (tile * k_tile_rows + lane / 4) * walk.cols + part * walk.span + (lane % 4) * 32;
    const uint8_t* r1 = r0 + 8 * walk.cols;
    const int rounds = int(walk.span / 128);
    int r = 0;
    for (; r + 3 <= rounds; r += 3) {
      uint4 v[3][4];
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        const int64_t o = int64_t(r + j) * 128;
        v[j][0] = __ldcs(reinterpret_cast<const uint4*>(r0 + o));
        v[j][1] = __ldcs(reinterpret_cast<const uint4*>(r0 + o + 16));
        v[j][2] = __ldcs(reinterpret_cast<const uint4*>(r1 + o));
        v[j][3] = __ldcs(reinterpret_cast<const uint4*>(r1 + o + 16));
      }
      if (!waited) pdl_wait(), waited = true;
#pragma unroll
      for (int j = 0; j < 3; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc ^= fold(v[j][q]);
    }
    for (; r < rounds; ++r) {
      const int64_t o = int64_t(r) * 128;
      acc ^= fold(__ldcs(reinterpret_cast<const uint4*>(r0 + o))) ^
             fold(__ldcs(reinterpret_cast<const uint4*>(r0 + o + 16))) ^
             fold(__ldcs(reinterpret_cast<const uint4*>(r1 + o))) ^
             fold(__ldcs(reinterpret_cast<const uint4*>(r1 + o + 16)));
    }
  }
  if (!waited) pdl_wait();
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void tile16x512_kernel(const uint8_t* __restrict__ m, tile_walk walk, uint32_t* sink) {
  pdl_trigger();
  bool waited = false;
  const int lane = threadIdx.x % 32;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  uint32_t acc = 0;
  for (int64_t w = warp; w < walk.items(); w += warps) {
    const int64_t tile = w / walk.parts, part = w % walk.parts;
    const uint8_t* base = m + tile * k_tile_rows * walk.cols + part * walk.span + lane * 16;
    for (int64_t o = 0; o + 512 <= walk.span; o += 512) {
      uint4 v[k_tile_rows];
#pragma unroll
      for (int r = 0; r < k_tile_rows; ++r)
        v[r] = __ldcs(reinterpret_cast<const uint4*>(base + r * walk.cols + o));
      if (!waited) pdl_wait(), waited = true;
#pragma unroll
      for (int r = 0; r < k_tile_rows; ++r) acc ^= fold(v[r]);
    }
  }
  if (!waited) pdl_wait();
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void row_stream_kernel(const uint8_t* __restrict__ m, int64_t rows, int64_t cols,
                                  uint32_t* sink) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  uint32_t acc = 0;
  for (int64_t row = warp; row < rows; row += warps) {
    const uint8_t* p = m + row * cols + lane * 16;
    int64_t o = 0;
    for (; o + 8 * 512 <= cols; o += 8 * 512) {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = __ldcs(reinterpret_cast<const uint4*>(p + o + j * 512));
#pragma unroll
      for (int j = 0; j < 8; ++j) acc ^= fold(v[j]);
    }
    for (; o < cols; o += 512) acc ^= fold(__ldcs(reinterpret_cast<const uint4*>(p + o)));
  }
  if (acc == 0x12345678u) *sink = acc;
}

// --- TMA bulk ring -------------------------------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  }
}

__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes,
                                          uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

constexpr int k_bulk_stages = 4;

// One warp = one ring of k_bulk_stages stages of rows_per_stage x chunk bytes. The warp's
// items are (tile, part) as above; a stage holds rows_per_stage rows (16: the tile; 1: one row
// at a time) of one chunk-byte step of the part's span. Lane 0 arms and issues; all lanes wait
// and read the stage back (16 bytes per lane per 512 bytes).
template <int rows_per_stage, int chunk>
__global__ void bulk_kernel(const uint8_t* __restrict__ m, tile_walk walk, uint32_t* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  constexpr int stage_bytes = rows_per_stage * chunk;
  const int lane = threadIdx.x % 32, warp_in_block = threadIdx.x / 32;
  uint8_t* ring = smem + size_t(warp_in_block) * k_bulk_stages * stage_bytes;
  __shared__ uint64_t bars[32][k_bulk_stages];
  uint64_t* bar = bars[warp_in_block];
  if (lane == 0)
    for (int s = 0; s < k_bulk_stages; ++s) mbar_init(&bar[s], 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncwarp();

  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  // The warp's steps, flattened: item-major, then row group, then chunk.
  const int64_t steps_per_item = (k_tile_rows / rows_per_stage) * (walk.span / chunk);
  int64_t my_items = 0;
  if (warp < walk.items()) my_items = (walk.items() - 1 - warp) / warps + 1;
  const int64_t steps = my_items * steps_per_item;
  auto src_of = [&](int64_t step) {
    const int64_t w = warp + (step / steps_per_item) * warps;
    const int64_t in_item = step % steps_per_item;
    const int64_t group = in_item / (walk.span / chunk), c = in_item % (walk.span / chunk);
    const int64_t tile = w / walk.parts, part = w % walk.parts;
    return m + (tile * k_tile_rows + group * rows_per_stage) * walk.cols + part * walk.span +
           c * chunk;
  };
  auto issue = [&](int64_t step) {
    const int s = int(step % k_bulk_stages);
    mbar_expect_tx(&bar[s], stage_bytes);
    const uint8_t* src = src_of(step);
    for (int r = 0; r < rows_per_stage; ++r)
      bulk_copy(ring + s * stage_bytes + r * chunk, src + r * walk.cols, chunk, &bar[s]);
  };
  if (lane == 0)
    for (int64_t st = 0; st < k_bulk_stages && st < steps; ++st) issue(st);
  uint32_t acc = 0;
  for (int64_t st = 0; st < steps; ++st) {
    const int s = int(st % k_bulk_stages);
    mbar_wait(&bar[s], uint32_t((st / k_bulk_stages) & 1));
    const uint4* v = reinterpret_cast<const uint4*>(ring + s * stage_bytes);
#pragma unroll 4
    for (int i = lane; i < stage_bytes / 16; i += 32) acc ^= fold(v[i]);
    __syncwarp();
    if (lane == 0 && st + k_bulk_stages < steps) issue(st + k_bulk_stages);
  }
  if (acc == 0x12345678u) *sink = acc;
}

// Launches kernel with the programmatic-stream-serialization attribute when pdl is set.
template <typename... kernel_args, typename... actual_args>
void launch(bool pdl, void (*kernel)(kernel_args...), int grid, int block, size_t smem,
            actual_args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(grid));
  config.blockDim = dim3(unsigned(block));
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&config, kernel, args...));
}

struct shape {
  const char* name;
  int64_t rows, cols;
};

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device %s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);

  const std::vector<shape> shapes = {{"Pro wo_b", 7168, 16384},
                                     {"Pro wq_b", 65536, 1536},
                                     {"Flash wq_b", 32768, 1024},
                                     {"Flash wo_b", 4096, 8192}};
  // Copies of the largest matrix so that 8 consecutive launches span >= 8x the L2.
  const size_t max_bytes = 7168ull * 16384;
  const int copies = 8;
  uint8_t* buf = nullptr;
  uint32_t* sink = nullptr;
  CK(cudaMalloc(&buf, max_bytes * copies));
  CK(cudaMalloc(&sink, 4));
  bench::fill(buf, max_bytes * copies, 20261122u, 0);
  CK(cudaDeviceSynchronize());

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  // launch(copy_index) enqueues one kernel reading copy c of the current shape.
  auto time_pattern = [&](auto&& launch, double bytes, double ceiling_batch, const char* label,
                          const char* shape_name) {
    launch(0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> batch, single;
    for (int it = 0; it < 15; ++it) {
      CK(cudaEventRecord(e0));
      for (int c = 0; c < copies; ++c) launch(c);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      batch.push_back(ms / copies);
      CK(cudaEventRecord(e0));
      launch(it % copies);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
      single.push_back(ms);
    }
    CK(cudaGetLastError());
    const double tb = bench::median(batch) * 1e-3, ts = bench::median(single) * 1e-3;
    const double gbs = bytes / tb * 1e-9;
    std::printf("  %-11s %-24s batch %8.2f us %8.1f GB/s %6.1f%%   single %8.2f us %6.1f%%\n",
                shape_name, label, tb * 1e6, gbs,
                ceiling_batch > 0 ? 100.0 * gbs / ceiling_batch : 100.0, ts * 1e6,
                ceiling_batch > 0 ? 100.0 * bytes / ts * 1e-9 / ceiling_batch : 100.0);
    return gbs;
  };

  for (const shape& sh : shapes) {
    const size_t bytes = size_t(sh.rows) * sh.cols;
    auto mat = [&](int c) { return buf + size_t(c) * max_bytes; };
    const double ceiling = time_pattern(
        [&](int c) {
          launch(false, contig_kernel, sms * 4, 512, 0, reinterpret_cast<const uint4*>(mat(c)),
                 bytes / 16, sink);
        },
        double(bytes), 0, "contig", sh.name);
    time_pattern(
        [&](int c) {
          launch(true, contig_kernel, sms * 4, 512, 0, reinterpret_cast<const uint4*>(mat(c)),
                 bytes / 16, sink);
        },
        double(bytes), ceiling, "contig pdl", sh.name);
    // K parts as linear_decode_make_split picks them: doubled (up to 16) while tiles x parts
    // stays within one wave of 16 warps per SM and a part keeps >= 4 rounds of 128 bytes (here
    // also a multiple of 512 bytes, for tile16x512).
    const int64_t tiles = sh.rows / k_tile_rows;
    int64_t parts = 1;
    while (parts < 16 && tiles * parts * 2 <= int64_t(sms) * 16 && sh.cols / (parts * 2) >= 512 &&
           sh.cols % (parts * 2 * 512) == 0)
      parts *= 2;
    const tile_walk walk{sh.rows, sh.cols, parts, sh.cols / parts};
    const int64_t items = tiles * parts;
    const int warps_per_block = 4;
    const int blocks_wave = int((items + warps_per_block - 1) / warps_per_block);
    for (const bool pdl : {false, true}) {
      char label[64];
      std::snprintf(label, sizeof label, "tile16x128 parts=%lld%s", (long long)parts,
                    pdl ? " pdl" : "");
      time_pattern(
          [&](int c) { launch(pdl, tile16x128_kernel, blocks_wave, 128, 0, mat(c), walk, sink); },
          double(bytes), ceiling, label, sh.name);
      std::snprintf(label, sizeof label, "tile16x512 parts=%lld%s", (long long)parts,
                    pdl ? " pdl" : "");
      time_pattern(
          [&](int c) { launch(pdl, tile16x512_kernel, blocks_wave, 128, 0, mat(c), walk, sink); },
          double(bytes), ceiling, label, sh.name);
    }
    time_pattern(
        [&](int c) {
          launch(false, row_stream_kernel, sms * 16, 128, 0, mat(c), sh.rows, sh.cols, sink);
        },
        double(bytes), ceiling, "row_stream", sh.name);
    auto bulk = [&](auto kernel, int rows_per_stage, int chunk, int warps) {
      if (walk.span % chunk != 0) return;  // the stage must tile the part
      const size_t smem = size_t(warps) * k_bulk_stages * rows_per_stage * chunk;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
      // Items per warp: at least one wave of resident warps, at most one item each.
      const int64_t blocks = std::min<int64_t>(int64_t(per_sm) * sms, (items + warps - 1) / warps);
      char l[64];
      std::snprintf(l, sizeof l, "bulk r=%d c=%d w=%d x%d/SM", rows_per_stage, chunk, warps,
                    per_sm);
      time_pattern(
          [&](int c) { launch(false, kernel, int(blocks), warps * 32, smem, mat(c), walk, sink); },
          double(bytes), ceiling, l, sh.name);
    };
    bulk(bulk_kernel<16, 256>, 16, 256, 8);
    bulk(bulk_kernel<16, 512>, 16, 512, 4);
    bulk(bulk_kernel<16, 1024>, 16, 1024, 2);
    bulk(bulk_kernel<1, 4096>, 1, 4096, 8);
    bulk(bulk_kernel<1, 2048>, 1, 2048, 16);
  }
  CK(cudaFree(buf));
  CK(cudaFree(sink));
  return 0;
}
