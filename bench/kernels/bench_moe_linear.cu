// Decode-path MoE kernel benchmark with its ceilings, in one run on one GPU:
//   * HBM read bandwidth: a read-only kernel (16-byte loads, 4 in flight per thread) over buffers
//     of 0.25-4 GB (>= 4x L2), and the device-to-device copy for reference;
//   * the launch floor: a CUDA graph of 4 empty kernels (the decode MoE is 4 launches);
//   * cuBLAS BF16 (cublasGemmEx) and cuBLASLt FP8 (E4M3, f32 scales) on one expert-sized matrix
//     [rows, cols] x [cols, T], copies rotated past L2: the library's GB/s on these shapes;
//   * the naive baseline: a per-expert cuBLAS BF16 loop (3 GEMMs per touched expert, tokens of
//     that expert as N; no gather or SwiGLU, so it is a lower bound on that approach's time);
//   * the kernels: moe_experts_f32 (moe.h, the first version) and moe_decode_experts (f32 and bf16
//     activations), Flash and Pro shapes, MXFP4 and NVFP4, T = 1, 4, 16, 64; the same in the
//     official order (moe_experts_official, moe_decode_experts_official), and the repacked-layout
//     variants beside them; --decode-only leaves out the general kernels and the cuBLAS loop,
//     --replays N sets the replays (the previous moe_decode, before the cp.async ring, was compared
//     in session 3: bench/kernels/results/h200_2026-11-22_s3_final_bench_moe_decode_partial.txt),
//     --replay-log FILE writes every replay's time with its wall clock, --replay-gap-ms N idles
//     before each replay (see time_ms);
//   * a stage breakdown of moe_decode (Flash MXFP4, T = 1 and 64: f32 exact order, bf16 official
//     order in both layouts): each kernel of the captured graph in turn replaced by an empty
//     kernel; the time saved is that stage's share of the call (with PDL the stages overlap, so
//     the shares need not add up);
//   * --icache-cold (with --decode-ab): each decode call after a kernel that leaves the SMs'
//     instruction caches warm or evicts them (and the L2), as the engine's other kernels would
//     (icache_cold_rows);
//   * decode selection: --shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64 (all by
//     default); --profile makes one eager official-order bf16 call per selected case and layout
//     and exits, for a profiler (ncu -k regex:moe_decode_gemm);
//   * prefill (bench_prefill_section; alone with --prefill-only, left out by --decode-only):
//     moe_prefill_experts at T = 256 .. 16384 in TFLOP/s against cuBLAS BF16 (one dense GEMM
//     of the same size, a grouped GEMM on the same routing, the per-expert loop) and the old
//     moe_experts; the wgmma core also on the repacked layout (the pool repacked on the device as
//     the engine loads it; outputs compared bit for bit with the checkpoint layout's).
// Timing: CUDA graphs of `k_calls` consecutive calls, each with its own routing (random top-k over
// all experts, fresh per call), replayed >= 50 times; the median replay / k_calls is one call.
// Weights: every expert slot of the pool holds different random bytes (a device hash), scales in
// realistic ranges; the pool (3.3 GB Flash, 12.7 GB Pro) is far beyond L2, so consecutive calls
// read their experts from HBM. Bytes counted = weights + scales of the experts a call touches
// (averaged over its routings) + activations in and out.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/linear_decode.h"
#include "backends/cuda/moe.h"
#include "backends/cuda/moe_decode.h"
#include "backends/cuda/moe_prefill.h"
#include "backends/cuda/moe_prefill_fp8.cuh"
#include "backends/cuda/moe_repack.h"
#include "backends/cuda/quantize.h"
#include "bench_common.cuh"
#include "straight_code.cuh"

namespace {

using bench::fill;
using bench::median;
using bench::read_kernel;

bool g_decode_only = false;
// --decode-ab: per (shape, format, T) only the repacked layout (the engine's), bf16 activations,
// official and exact order, timed under each configuration of --ab (default "s4,s0"): "s" (the
// E2M1 expansion's letter; "r", the rotation expansion, was retired in session 44 with its
// kernels), then the blocks per SM of the RT choice (moe_decode_set_rt_blocks_per_sm; 0 = the
// wave model, the default; 4 = the rule before MOE7). Two alternating passes over the
// configurations, each its own graph; the rows report the second pass and each configuration's
// speed against the first one. With --profile: the repacked official call per configuration.
bool g_decode_ab = false;
// --breakdown (with --decode-ab): at T = 1 and 4, the stage breakdown of the official call under
// the first and the last configuration of --ab.
bool g_ab_breakdown = false;
bool g_ab_official_only = false;  // --ab-official: the official order only (the engine's)
std::vector<std::string> g_ab_configs = {"s4", "s0"};
// A "from T = N" switch's letter in an A/B configuration: absent 0 (off), "La" -1 (the default
// rule), "LN" N (at least 1).
int from_tokens_letter(const std::string& c, char letter) {
  const size_t pos = c.find(letter);
  if (pos == std::string::npos) return 0;
  if (c[pos + 1] == 'a') return -1;
  return std::max(1, std::atoi(c.c_str() + pos + 1));
}

// An optional suffix xU[.Dmin.Dmax] stages the activation rows of one-pair chunks in shared
// memory (moe_decode_set_stage_x_tokens): W1/W3 for T <= U, W2 for Dmin <= T <= Dmax ("s0x4":
// both for T <= 4, "s0x4.2.4": W2 from T = 2, the default of MOE8); without it, staging is off
// (main before MOE8). MOE9 suffixes, anywhere after the digits: "q" 4 scale slots from T = 1
// ("qN": from T = N; "qa": the default rule since session 39, 4 slots where W1/W3 is staged on an
// H200-class device; moe_decode_set_scale_slots_from), "uN" / "vN" staged chunks of up to N
// pairs in W1/W3 / W2 (moe_decode_set_stage_pairs). A config without a suffix takes its "off"
// value (8 scale slots, 1-pair chunks), so "s0x4.2.4" is the default before MOE9 and
// "s0x64.2.64q2v2" the MOE9 default. (MOE9's suffixes dN, e and pN went with their switches.)
// MOE10 (moe_decode_set_chain): "h" quantizes h in the W1/W3 launch, "w" plans by one warp at
// tokens * top_k <= 8, "l" shortens the dependent-load chains; no suffix = chain 0 (before
// MOE10), "hwl" = MOE10's chain (7). MOE11: "p" no prepare launch at T = 1 (8); "hwlp" = the
// default (15). MOE13: "f" W2 waits per slot for h released by the fold of W1/W3 (16, at T <= 4
// with the engine's path), "g" with it W2 stages h at T = 1 too (32), "m" with it the fold's
// fences as one acq_rel RMW (64; since MOE14 part of 16, "m" a no-op); "hwlpfgm" = the default
// (127). MOE14: 16 up to T = 16 (was 4); "t" 16 at every T (128). MOE15: "c" a one-wave W2 grid
// of 16 at most ceil(blocks / SMs) blocks per SM (256; "hwlpfgmc" = 383, the default); a negative
// number after the first letter forces row tiles, -(10 u + d): u for W1/W3, d for W2 (1, 2 or 4;
// 0 = the model), e.g. "s-20x4.2.4hwlpfgm" (MOE15's ring-depth switches, "d" / "e", measured
// no faster and were removed: 2026-11-26_s13_moe15_NOTES.md).
void apply_ab_config(const std::string& c) {
  dsv4::cuda::moe_decode_set_chain(
      (c.find('h') != std::string::npos ? 1 : 0) | (c.find('w') != std::string::npos ? 2 : 0) |
      (c.find('l') != std::string::npos ? 4 : 0) | (c.find('p') != std::string::npos ? 8 : 0) |
      (c.find('f') != std::string::npos ? 16 : 0) | (c.find('g') != std::string::npos ? 32 : 0) |
      (c.find('m') != std::string::npos ? 64 : 0) | (c.find('t') != std::string::npos ? 128 : 0) |
      (c.find('c') != std::string::npos ? 256 : 0));
  dsv4::cuda::moe_decode_set_rt_blocks_per_sm(std::atoi(c.c_str() + 1));
  // Session 38: "yN" two W2 row tiles per warp-round from T = N (moe_decode_set_w2_pair_from;
  // without y: off); "ya" the default rule (-1: T >= 5 and, on the H200 class, T = 1; session 40).
  dsv4::cuda::moe_decode_set_w2_pair_from(from_tokens_letter(c, 'y'));
  // "qa": the default rule (-1: 4 slots where W1/W3 is staged, H200 class; session 39).
  dsv4::cuda::moe_decode_set_scale_slots_from(from_tokens_letter(c, 'q'));
  // Session 42: "k1" W1/W3 alone on 4 scale slots at T = 1, "ka" the rule (-1, the default since
  // session 42; occupancy and waves); without k: 0, as before (moe_decode_set_up_scale_slots_4_t1).
  // Hence "s0x4.2.4hwlpfgmcqayakaba" is the default configuration ("b" below).
  const size_t kpos = c.find('k');
  dsv4::cuda::moe_decode_set_up_scale_slots_4_t1(kpos == std::string::npos ? 0
                                                 : c[kpos + 1] == 'a'      ? -1
                                                                           : 1);
  // Session 48: "bN" two accumulator sets in W2 from T = N (moe_decode_set_w2_two_sets_from),
  // "ba" the default rule (-1); without b: 0, never.
  dsv4::cuda::moe_decode_set_w2_two_sets_from(from_tokens_letter(c, 'b'));
  const size_t upos = c.find('u'), vpos = c.find('v');
  dsv4::cuda::moe_decode_set_stage_pairs(
      upos == std::string::npos ? 1 : std::atoi(c.c_str() + upos + 1),
      vpos == std::string::npos ? 1 : std::atoi(c.c_str() + vpos + 1));
  int up = 0, dmin = 1, dmax = 0;
  if (const size_t x = c.find('x'); x != std::string::npos) {
    up = dmax = std::atoi(c.c_str() + x + 1);
    if (const size_t d = c.find('.', x); d != std::string::npos) {
      dmin = std::atoi(c.c_str() + d + 1);
      const size_t d2 = c.find('.', d + 1);
      dmax = d2 == std::string::npos ? dmin : std::atoi(c.c_str() + d2 + 1);
    }
  }
  dsv4::cuda::moe_decode_set_stage_x_tokens(up, dmin, dmax);
}
const dsv4::cuda::moe_decode_stage_x g_stage_x_default = dsv4::cuda::moe_decode_stage_x_tokens();
const int g_scale_slots_default = dsv4::cuda::moe_decode_scale_slots_from();
const int g_w2_pair_default = dsv4::cuda::moe_decode_w2_pair_from();
const int g_up_slots_t1_default = dsv4::cuda::moe_decode_up_scale_slots_4_t1();
const int g_w2_two_sets_default = dsv4::cuda::moe_decode_w2_two_sets_from();
const int g_chain_default = dsv4::cuda::moe_decode_chain();
const dsv4::cuda::moe_decode_stage_pairs_t g_stage_pairs_default =
    dsv4::cuda::moe_decode_stage_pairs();
void reset_ab_config() {
  dsv4::cuda::moe_decode_set_rt_blocks_per_sm(0);
  dsv4::cuda::moe_decode_set_w2_pair_from(g_w2_pair_default);
  dsv4::cuda::moe_decode_set_scale_slots_from(g_scale_slots_default);
  dsv4::cuda::moe_decode_set_up_scale_slots_4_t1(g_up_slots_t1_default);
  dsv4::cuda::moe_decode_set_w2_two_sets_from(g_w2_two_sets_default);
  dsv4::cuda::moe_decode_set_chain(g_chain_default);
  dsv4::cuda::moe_decode_set_stage_pairs(g_stage_pairs_default.up, g_stage_pairs_default.down);
  const auto d = g_stage_x_default;
  dsv4::cuda::moe_decode_set_stage_x_tokens(d.up_max, d.down_min, d.down_max);
}
// Decode-section selection (--shapes flash,pro --formats mxfp4,nvfp4 --tokens 1,4,16,64): which
// rows run; all of them by default.
std::string g_shapes = "flash,pro", g_formats = "mxfp4,nvfp4";
std::vector<int64_t> g_tokens = {1, 4, 16, 64};

bool listed(const std::string& list, const std::string& name) {
  return ("," + list + ",").find("," + name + ",") != std::string::npos;
}

using dsv4::cuda::device_weight;
using dsv4::cuda::weight_kind;

constexpr int k_calls = 16;  // calls per captured graph
int k_replays = 60;          // graph replays timed (median); --replays

__global__ void empty_kernel() {}

// Stand-in for a stage in the breakdown: keeps a PDL chain's ordering (waits for its
// predecessor) and does nothing else.
__global__ void empty_wait_kernel() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

// --replay-log FILE: every timed launch of time_ms as one line "wall_s timing_id ms" (wall_s: the
// host's CLOCK_REALTIME when the launch's end event completed, the clock of `date +%s.%N`;
// timing_id counts time_ms calls), so that a script can set each replay beside the SM clock and
// power it sampled with nvidia-smi. The medians the rows print are unchanged.
FILE* g_replay_log = nullptr;
int g_timing_id = 0;
// --replay-gap-ms N: the host idles N ms before each timed launch (and each warm-up launch), so
// that every replay starts with the card's power budget recovered: under back-to-back replays
// the H200 reaches its 700 W limit within ~25 ms of decode and its power controller lowers the
// SM clock (1.6-1.85 GHz; session 37, l37c). With a gap the rows time the kernels at the clock
// they start at (1980 MHz there); without one (0, the default), at the sustained clock. Each
// replay after an idle gap also pays a ~25-35 us wake-up (l37d: the 4 GB read 0.977 vs 0.946 ms,
// Flash T = 1 35.4 vs 33.9 us a call over 16 calls): A/B ratios of rows timed alike stay fair, but
// the read ceilings this process measures with a gap read low; take the ceiling from a run
// without one.
int g_replay_gap_ms = 0;

// The host idle of --replay-gap-ms before a launch (none by default).
void replay_gap() {
  if (g_replay_gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_replay_gap_ms));
}

// Median ms of `runs` event-timed launches after a warm-up.
double time_ms(const std::function<void()>& launch, int runs, cudaStream_t s) {
  for (int i = 0; i < 3; ++i) {
    replay_gap();
    launch();
    if (g_replay_gap_ms > 0) CK(cudaStreamSynchronize(s));
  }
  CK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t(runs);
  for (int i = 0; i < runs; ++i) {
    replay_gap();
    CK(cudaEventRecord(a, s));
    launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&t[i], a, b));
    if (g_replay_log) {
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      std::fprintf(g_replay_log, "%.6f %d %.5f\n", double(now.tv_sec) + 1e-9 * double(now.tv_nsec),
                   g_timing_id, t[i]);
    }
  }
  ++g_timing_id;
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(t);
}

// Captures body(i) for i < calls into one graph; returns the median ms per call of its replays.
double time_graph_per_call(const std::function<void(int, cudaStream_t)>& body, int calls,
                           cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) body(i, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  const double ms = time_ms([&] { CK(cudaGraphLaunch(ge, s)); }, k_replays, s);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return ms / calls;
}

// Per-stage shares of one call: captures `calls` calls, then for each distinct kernel of the
// graph (in order of first appearance) times a clone with every node of that kernel replaced by
// empty_wait_kernel. Prints the full time per call and each stage's saving.
void stage_breakdown(const char* label, const std::function<void(int, cudaStream_t)>& body,
                     int calls, cudaStream_t s) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) body(i, s);
  CK(cudaStreamEndCapture(s, &g));
  size_t n = 0;
  CK(cudaGraphGetNodes(g, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  CK(cudaGraphGetNodes(g, nodes.data(), &n));
  std::vector<const void*> funcs;
  std::vector<cudaKernelNodeParams> first;
  std::vector<std::vector<cudaGraphNode_t>> of;
  for (cudaGraphNode_t nd : nodes) {
    cudaGraphNodeType t;
    CK(cudaGraphNodeGetType(nd, &t));
    if (t != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams p{};
    CK(cudaGraphKernelNodeGetParams(nd, &p));
    size_t j = std::find(funcs.begin(), funcs.end(), p.func) - funcs.begin();
    if (j == funcs.size()) {
      funcs.push_back(p.func);
      first.push_back(p);
      of.emplace_back();
    }
    of[j].push_back(nd);
  }
  auto time_graph = [&](cudaGraph_t gr) {
    cudaGraphExec_t ge;
    CK(cudaGraphInstantiate(&ge, gr, 0));
    const double ms = time_ms([&] { CK(cudaGraphLaunch(ge, s)); }, k_replays, s);
    CK(cudaGraphExecDestroy(ge));
    return 1e3 * ms / calls;
  };
  const double full = time_graph(g);
  std::printf("breakdown %-34s full %8.2f us/call\n", label, full);
  for (size_t j = 0; j < funcs.size(); ++j) {
    cudaGraph_t c;
    CK(cudaGraphClone(&c, g));
    for (cudaGraphNode_t nd : of[j]) {
      cudaGraphNode_t cn;
      CK(cudaGraphNodeFindInClone(&cn, nd, c));
      cudaKernelNodeParams q{};
      q.func = reinterpret_cast<void*>(empty_wait_kernel);
      q.gridDim = dim3(1);
      q.blockDim = dim3(32);
      q.sharedMemBytes = 0;
      q.kernelParams = nullptr;
      q.extra = nullptr;
      CK(cudaGraphKernelNodeSetParams(cn, &q));
    }
    const double without = time_graph(c);
    CK(cudaGraphDestroy(c));
    const char* name = "?";
    if (cudaFuncGetName(&name, funcs[j]) != cudaSuccess) name = "?";
    std::string nm(name);
    // The gemm's UP flag is the template argument after the weight kind (mangled
    // "weight_kindE<digit>ELb<UP>").
    const size_t kind_at = nm.find("weight_kindE");
    const bool up = kind_at != std::string::npos && nm.compare(kind_at + 13, 4, "ELb1") == 0;
    // Other kernels (the prefill's): the demangled name without scopes and parameters.
    std::string shortname = nm;
    if (int st = 0; char* dm = abi::__cxa_demangle(nm.c_str(), nullptr, nullptr, &st)) {
      shortname = dm;
      std::free(dm);
      const size_t paren = shortname.find('(');
      if (paren != std::string::npos) shortname.resize(paren);
      const size_t lt = shortname.find('<');
      const size_t colon = shortname.rfind("::", lt == std::string::npos ? shortname.size() : lt);
      if (colon != std::string::npos) shortname = shortname.substr(colon + 2);
    }
    const bool decode = nm.find("moe_decode") != std::string::npos ||
                        nm.find("moe_quantize_h") != std::string::npos ||
                        nm.find("moe_combine_kernel") != std::string::npos;
    std::string tag = !decode                                    ? shortname.substr(0, 60)
                      : nm.find("prepare") != std::string::npos  ? "prepare"
                      : nm.find("quantize") != std::string::npos ? "quantize_h"
                      : nm.find("combine") != std::string::npos  ? "combine"
                      : nm.find("gemm") != std::string::npos
                          ? (up ? "gemm L1 (W1, W3)" : "gemm L2 (W2)")
                          : nm.substr(0, 40);
    std::printf("  stage %-24s grid %5u x %4u, %4u threads: saves %8.2f us/call (%5.1f%%)\n",
                tag.c_str(), first[j].gridDim.x, first[j].gridDim.y, first[j].blockDim.x,
                full - without, 100.0 * (full - without) / full);
  }
  CK(cudaGraphDestroy(g));
}

struct ceilings {
  double read_gbps = 0;  // best of the read-only sizes
  double copy_gbps = 0;
  double launch4_us = 0;
};

ceilings measure_ceilings(cudaStream_t s) {
  ceilings c;
  uint32_t* sink;
  CK(cudaMalloc(&sink, 4));
  std::printf("## ceilings\n");
  for (size_t mb : {256, 1024, 4096}) {
    const size_t bytes = mb << 20;
    void* p;
    CK(cudaMalloc(&p, bytes));
    fill(p, bytes, 7, 0);
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const double ms = time_ms(
        [&] {
          read_kernel<<<sms * 8, 512, 0, s>>>(static_cast<const uint4*>(p), bytes / 16, sink);
        },
        50, s);
    const double gbps = double(bytes) / (ms * 1e-3) / 1e9;
    std::printf("hbm read-only kernel %5zu MB: %8.1f GB/s\n", mb, gbps);
    c.read_gbps = std::max(c.read_gbps, gbps);
    if (mb == 1024) {
      void* q;
      CK(cudaMalloc(&q, bytes));
      const double cms =
          time_ms([&] { CK(cudaMemcpyAsync(q, p, bytes, cudaMemcpyDeviceToDevice, s)); }, 20, s);
      c.copy_gbps = 2.0 * double(bytes) / (cms * 1e-3) / 1e9;
      std::printf("device-to-device copy 1024 MB: %8.1f GB/s (read + write)\n", c.copy_gbps);
      CK(cudaFree(q));
    }
    CK(cudaFree(p));
  }
  c.launch4_us = 1e3 * time_graph_per_call(
                           [](int, cudaStream_t st) {
                             for (int j = 0; j < 4; ++j) empty_kernel<<<1, 32, 0, st>>>();
                           },
                           k_calls, s);
  std::printf("launch floor: 4 empty kernels in a graph: %.2f us per group\n", c.launch4_us);
  CK(cudaFree(sink));
  return c;
}

// ---- dense decode linears vs cuBLAS ----
// One weight of `kind` [rows, cols] in `copies` copies (>= 4x L2 in all); a graph of k_calls
// calls cycles through them.
struct dense_copies {
  std::vector<device_weight> w;
  std::vector<void*> bufs;
  double bytes = 0;  // weights + scales of one copy
  dense_copies(weight_kind kind, int64_t rows, int64_t cols, size_t l2, uint32_t seed) {
    const size_t db = kind == weight_kind::bf16        ? size_t(rows) * cols * 2
                      : kind == weight_kind::fp8_block ? size_t(rows) * cols
                                                       : size_t(rows) * cols / 2;
    const size_t sc = kind == weight_kind::fp8_block
                          ? size_t((rows + 127) / 128) * ((cols + 127) / 128)
                      : kind == weight_kind::mxfp4 ? size_t(rows) * cols / 32
                      : kind == weight_kind::nvfp4 ? size_t(rows) * cols / 16
                                                   : 0;
    bytes = double(db + sc);
    const int copies =
        int(std::min<size_t>(k_calls, std::max<size_t>(2, (4 * l2) / (db + sc) + 1)));
    for (int i = 0; i < copies; ++i) {
      device_weight d;
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      void *data, *scale = nullptr, *global = nullptr;
      CK(cudaMalloc(&data, db));
      fill(data, db, seed + 10 * i,
           kind == weight_kind::bf16        ? 3
           : kind == weight_kind::fp8_block ? 4
                                            : 0);
      bufs.push_back(data);
      if (sc) {
        CK(cudaMalloc(&scale, sc));
        fill(scale, sc, seed + 10 * i + 1, kind == weight_kind::nvfp4 ? 2 : 1);
        bufs.push_back(scale);
        d.scale_e8m0 = kind != weight_kind::nvfp4;
      }
      if (kind == weight_kind::nvfp4) {
        const float g = 1.0f / (6.0f * 448.0f) * 40.0f;
        CK(cudaMalloc(&global, 4));
        CK(cudaMemcpy(global, &g, 4, cudaMemcpyHostToDevice));
        bufs.push_back(global);
      }
      d.data = data;
      d.scale = scale;
      d.global_scale = static_cast<const float*>(global);
      w.push_back(d);
    }
  }
  ~dense_copies() {
    for (void* p : bufs) cudaFree(p);
  }
};

const char* kind_name(weight_kind k) {
  switch (k) {
    case weight_kind::bf16:
      return "bf16";
    case weight_kind::fp8_block:
      return "fp8blk";
    case weight_kind::mxfp4:
      return "mxfp4";
    case weight_kind::nvfp4:
      return "nvfp4";
    default:
      return "f32";
  }
}

void bench_dense(const char* name, weight_kind kind, int64_t rows, int64_t cols, cudaStream_t s,
                 const ceilings& c, size_t l2, cublasHandle_t h, cublasLtHandle_t lt) {
  dense_copies ours(kind, rows, cols, l2, 21);
  dense_copies bf(weight_kind::bf16, rows, cols, l2, 41);
  dense_copies f8(weight_kind::fp8_block, rows, cols, l2, 61);
  float *xf, *y;
  __nv_bfloat16* xb;
  CK(cudaMalloc(&xf, size_t(64) * cols * 4));
  CK(cudaMalloc(&xb, size_t(64) * cols * 2));
  CK(cudaMalloc(&y, size_t(64) * rows * 4));
  fill(xb, size_t(64) * cols * 2, 77, 3);
  {
    std::vector<float> hx(size_t(64) * cols);
    for (size_t i = 0; i < hx.size(); ++i)
      hx[i] = float(int(i * 2654435761u % 2001) - 1000) / 1000.0f;
    CK(cudaMemcpy(xf, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
  }
  void *xq, *ws, *lt_ws;
  CK(cudaMalloc(&xq, size_t(64) * cols));
  fill(xq, size_t(64) * cols, 78, 4);
  const size_t wsb = dsv4::cuda::linear_decode_workspace_bytes(64, cols);
  CK(cudaMalloc(&ws, wsb));
  const size_t lt_bytes = 32 << 20;
  CK(cudaMalloc(&lt_ws, lt_bytes));
  float* one_scale;
  CK(cudaMalloc(&one_scale, 8));
  const float ones[2] = {1.0f, 1.0f};
  CK(cudaMemcpy(one_scale, ones, 8, cudaMemcpyHostToDevice));
  auto row = [&](const char* kernel, const char* act, int T, double ms, double wbytes) {
    const double gbps = wbytes / (ms * 1e-3) / 1e9;
    std::printf("%-10s %-6s %6lld %6lld %-24s %-4s %3d %9.2f %9.1f %6.1f%%\n", name,
                kind_name(kind), (long long)rows, (long long)cols, kernel, act, T, ms * 1e3, gbps,
                100 * gbps / c.read_gbps);
  };
  for (int T : {1, 4, 16, 64}) {
    const double ours_f = time_graph_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::linear_decode(xf, T, ours.w[i % ours.w.size()], y, ws, wsb, st));
        },
        k_calls, s);
    row("linear_decode", "f32", T, ours_f, ours.bytes);
    const double ours_b = time_graph_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::linear_decode(xb, T, ours.w[i % ours.w.size()], y, ws, wsb, st));
        },
        k_calls, s);
    row("linear_decode", "bf16", T, ours_b, ours.bytes);
    const float one = 1.0f, zero = 0.0f;
    const double cb = time_graph_per_call(
        [&](int i, cudaStream_t st) {
          CB(cublasSetStream(h, st));
          CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(rows), T, int(cols), &one,
                          bf.w[i % bf.w.size()].data, CUDA_R_16BF, int(cols), xb, CUDA_R_16BF,
                          int(cols), &zero, y, CUDA_R_32F, int(rows), CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
        },
        k_calls, s);
    row("cublas bf16 (bf16 bytes)", "bf16", T, cb, bf.bytes);
    // cuBLASLt FP8 E4M3 x E4M3 -> BF16 (TN), N padded to 16; per-tensor scales (the block
    // scales of fp8_block are not applied: a ceiling for the FP8 byte stream, not a drop-in).
    const int n = std::max(T, 16);
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, cols, rows, cols));
    CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, cols, n, cols));
    CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, rows, n, rows));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &lt_bytes, sizeof(lt_bytes)));
    cublasLtMatmulHeuristicResult_t heur[4];
    int found = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 4, heur, &found);
    bool done = false;
    for (int a = 0; hs == CUBLAS_STATUS_SUCCESS && a < found && !done; ++a) {
      // Probe the algorithm outside capture first: skip those that refuse at run time.
      const cublasStatus_t st0 = cublasLtMatmul(lt, op, &one, f8.w[0].data, la, xq, lb, &zero, y,
                                                lc, y, lc, &heur[a].algo, lt_ws, lt_bytes, s);
      if (st0 != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(s) != cudaSuccess) continue;
      const double f8ms = time_graph_per_call(
          [&](int i, cudaStream_t st) {
            CB(cublasLtMatmul(lt, op, &one, f8.w[i % f8.w.size()].data, la, xq, lb, &zero, y, lc, y,
                              lc, &heur[a].algo, lt_ws, lt_bytes, st));
          },
          k_calls, s);
      row("cublasLt fp8 (fp8 bytes)", "fp8", T, f8ms, double(rows) * double(cols));
      done = true;
    }
    if (!done)
      std::printf(
          "%-10s %-6s %6lld %6lld %-24s %-4s %3d   no usable algorithm (status %d, %d found)\n",
          name, kind_name(kind), (long long)rows, (long long)cols, "cublasLt fp8", "fp8", T,
          int(hs), found);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
  }
  CK(cudaFree(xf));
  CK(cudaFree(xb));
  CK(cudaFree(y));
  CK(cudaFree(xq));
  CK(cudaFree(ws));
  CK(cudaFree(lt_ws));
  CK(cudaFree(one_scale));
}

// ---- MoE ----
struct moe_shape {
  const char* name;
  int64_t hidden, inter, experts, top_k;
};

struct stacked {
  device_weight w;
  void *data = nullptr, *scale = nullptr, *global = nullptr;
  double bytes_per_matrix = 0;
  stacked(weight_kind kind, int64_t rows, int64_t cols, int64_t count, uint32_t seed) {
    w.kind = kind;
    w.rows = rows;
    w.cols = cols;
    w.count = count;
    const size_t mb = size_t(rows) * cols / 2;
    const size_t sc =
        kind == weight_kind::mxfp4 ? size_t(rows) * cols / 32 : size_t(rows) * cols / 16;
    CK(cudaMalloc(&data, mb * count));
    CK(cudaMalloc(&scale, sc * count));
    fill(data, mb * count, seed, 0);
    fill(scale, sc * count, seed + 1, kind == weight_kind::mxfp4 ? 1 : 2);
    w.data = data;
    w.scale = scale;
    w.scale_e8m0 = kind == weight_kind::mxfp4;
    // Fill mode 1 draws E8M0 121..125: the flag the engine's uploader sets for such scales
    // (device_weight::scales_at_most_2), so the decode rows time the engine's round.
    w.scales_at_most_2 = kind == weight_kind::mxfp4;
    if (kind == weight_kind::nvfp4) {
      std::vector<float> g(count, 1.0f / (6.0f * 448.0f) * 40.0f);
      CK(cudaMalloc(&global, 4 * count));
      CK(cudaMemcpy(global, g.data(), 4 * count, cudaMemcpyHostToDevice));
      w.global_scale = static_cast<const float*>(global);
    }
    bytes_per_matrix = double(mb + sc);
  }
  ~stacked() {
    cudaFree(data);
    cudaFree(scale);
    if (global) cudaFree(global);
  }
};

// A device copy of a stacked 4-bit weight with the experts listed in `repack` repacked on the
// host (moe_repack.h); the other experts keep their random bytes, which the repacked kernels
// read as random repacked codes (the work does not depend on the values). Scales shared.
struct repacked_copy {
  device_weight w;
  void* data = nullptr;
  repacked_copy(const stacked& src, const std::vector<int32_t>& repack) : w(src.w) {
    const size_t mb = size_t(w.rows) * size_t(w.cols) / 2;
    CK(cudaMalloc(&data, mb * size_t(w.count)));
    CK(cudaMemcpy(data, src.data, mb * size_t(w.count), cudaMemcpyDeviceToDevice));
    std::vector<int32_t> experts = repack;
    std::sort(experts.begin(), experts.end());
    experts.erase(std::unique(experts.begin(), experts.end()), experts.end());
    std::vector<uint8_t> from(mb), to(mb);
    for (int32_t e : experts) {
      auto* d = static_cast<uint8_t*>(data) + size_t(e) * mb;
      CK(cudaMemcpy(from.data(), d, mb, cudaMemcpyDeviceToHost));
      dsv4::cuda::fp4_repack::repack_matrices(from.data(), to.data(), 1, w.rows, w.cols);
      CK(cudaMemcpy(d, to.data(), mb, cudaMemcpyHostToDevice));
    }
    w.data = data;
    w.layout = dsv4::cuda::weight_layout::repacked;
  }
  ~repacked_copy() { cudaFree(data); }
  repacked_copy(const repacked_copy&) = delete;
  repacked_copy& operator=(const repacked_copy&) = delete;
};

// A device copy of a whole stacked 4-bit weight repacked on the device
// (fp4_repack::repack_matrices_device, as cuda_ops::prepare_experts does at load); scales shared.
struct device_repacked {
  device_weight w;
  void* data = nullptr;
  explicit device_repacked(const stacked& src) : w(src.w) {
    const size_t bytes = size_t(w.rows) * size_t(w.cols) / 2 * size_t(w.count);
    CK(cudaMalloc(&data, bytes));
    CK(dsv4::cuda::fp4_repack::repack_matrices_device(static_cast<const uint8_t*>(src.data),
                                                      static_cast<uint8_t*>(data), w.count, w.rows,
                                                      w.cols, 0));
    CK(cudaDeviceSynchronize());
    w.data = data;
    w.layout = dsv4::cuda::weight_layout::repacked;
  }
  ~device_repacked() { cudaFree(data); }
  device_repacked(const device_repacked&) = delete;
  device_repacked& operator=(const device_repacked&) = delete;
};

// Routings of `tokens` tokens: top_k distinct experts each, uniform over `experts` (a partial
// Fisher-Yates shuffle per token), appended to `out`.
void draw_routes(std::mt19937_64& rng, int64_t tokens, int64_t experts, int64_t top_k,
                 std::vector<int32_t>& out) {
  std::vector<int32_t> all(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t e = 0; e < experts; ++e) all[size_t(e)] = int32_t(e);
    for (int64_t k = 0; k < top_k; ++k) {
      std::swap(all[size_t(k)], all[size_t(k + int64_t(rng() % uint64_t(experts - k)))]);
      out.push_back(all[size_t(k)]);
    }
  }
}

// ---- the short dependent read (--short-read, with --decode-ab) ----
// The plain-read ceiling of one decode call: exactly the bytes of the experts a routing touches
// (W1 + W3 data and scales: "up"; W2: "down"), read by the read-only pattern of the HBM ceiling
// (16-byte evict-first loads, U in flight per thread), each block a contiguous share of the
// launch's bytes. Graphs of k_calls calls with the decode bench's own routings (the pools are far
// past L2), so the rows compare with the decode rows of the same T: one launch of the up bytes,
// one of the down bytes, both in one launch, and the two as a dependent pair (down after up:
// plain stream order, or PDL with griddepcontrol.wait before the first load, up then waiting on
// the previous call's down the same way). At T = 1 the 1 GiB ceiling's rate is out of reach for
// ~20-80 MB: ramp and tail of each launch, and the dependency between the two.
struct read_seg {
  const uint4* p;
  uint64_t begin, n;  // 16-byte words [begin, begin + n) of the launch's range
};

// mode 1: griddepcontrol.wait, then launch_dependents, before the first load (PDL chains).
template <int U>
__global__ void seg_read_kernel(const read_seg* segs, int count, uint64_t total, int mode,
                                uint32_t* sink) {
  if (mode & 1) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  const uint64_t per = (total + gridDim.x - 1) / gridDim.x;
  const uint64_t b0 = blockIdx.x * per, b1 = min(total, b0 + per);
  uint32_t acc = 0;
  for (int k = 0; k < count && b0 < b1; ++k) {
    const read_seg sg = segs[k];
    const uint64_t s0 = max(b0, sg.begin), s1 = min(b1, sg.begin + sg.n);
    if (s0 >= s1) continue;
    const uint4* p = sg.p + (s0 - sg.begin);
    const uint64_t n = s1 - s0;
    uint64_t i = threadIdx.x;
    for (; i + (U - 1) * blockDim.x < n; i += U * blockDim.x) {
      uint4 v[U];
#pragma unroll
      for (int j = 0; j < U; ++j) v[j] = __ldcs(p + i + j * blockDim.x);
#pragma unroll
      for (int j = 0; j < U; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    for (; i < n; i += blockDim.x) {
      const uint4 v = __ldcs(p + i);
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  if (acc == 0x9e3779b9u) *sink = acc;  // keeps the loads
}

// The segments of one routing's touched experts: part 0 up (W1, W3), 1 down (W2), 2 both.
struct seg_set {
  read_seg* dev = nullptr;
  int count = 0;
  uint64_t total = 0;
};
seg_set make_segs(const std::vector<int32_t>& route, const device_weight* const* mats, int nmat) {
  std::vector<int32_t> ex = route;
  std::sort(ex.begin(), ex.end());
  ex.erase(std::unique(ex.begin(), ex.end()), ex.end());
  std::vector<read_seg> v;
  uint64_t at = 0;
  for (int32_t e : ex)
    for (int m = 0; m < nmat; ++m) {
      const device_weight& w = *mats[m];
      const size_t mb = size_t(w.rows) * size_t(w.cols) / 2;
      const size_t sb = size_t(dsv4::cuda::scale_matrix_count(w.kind, w.rows, w.cols)) *
                        (w.kind == weight_kind::mxfp4 && !w.scale_e8m0 ? 4 : 1);
      const auto* d = static_cast<const uint8_t*>(w.data) + size_t(e) * mb;
      const auto* sc = static_cast<const uint8_t*>(w.scale) + size_t(e) * sb;
      for (auto [ptr, bytes] : {std::pair{d, mb}, std::pair{sc, sb}}) {
        v.push_back({reinterpret_cast<const uint4*>(ptr), at, bytes / 16});
        at += bytes / 16;
      }
    }
  seg_set s;
  s.count = int(v.size());
  s.total = at;
  CK(cudaMalloc(&s.dev, v.size() * sizeof(read_seg)));
  CK(cudaMemcpy(s.dev, v.data(), v.size() * sizeof(read_seg), cudaMemcpyHostToDevice));
  return s;
}

struct read_cfg {
  int blocks_per_sm, threads, u;
};

void launch_seg_read(const read_cfg& c, int sms, const seg_set& s, bool pdl, uint32_t* sink,
                     cudaStream_t st) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(sms * c.blocks_per_sm));
  config.blockDim = dim3(unsigned(c.threads));
  config.stream = st;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  const int mode = pdl ? 1 : 0;
  if (c.u == 8)
    CK(cudaLaunchKernelEx(&config, seg_read_kernel<8>, (const read_seg*)s.dev, s.count, s.total,
                          mode, sink));
  else if (c.u == 2)
    CK(cudaLaunchKernelEx(&config, seg_read_kernel<2>, (const read_seg*)s.dev, s.count, s.total,
                          mode, sink));
  else
    CK(cudaLaunchKernelEx(&config, seg_read_kernel<4>, (const read_seg*)s.dev, s.count, s.total,
                          mode, sink));
}

bool g_short_read = false;

// --icache-cold (with --decode-ab, official rows, the first configuration): what a decode call
// costs when its code is not in the SMs' instruction caches, as in the engine, where attention,
// norms and the other layers' kernels run between two MoE calls (the bench's graphs run the calls
// back to back, so every call after the first finds its code cached; session 45, l45a:
// icache_probe kept <= 64 KB of code in an SM across launches, 128 KB not). Each call is preceded
// by kernels of one warp per block, 4 blocks per SM: "warm" 12288 IMADs from 4 KB of code (a
// loop), "cold" the same count as 192 KB of straight-line code (evicts the SMs' instruction
// caches); "+L2" a read pass over 4x the L2 before it (l2_displace_kernel: the kernels' code and
// any data left in L2 then come from HBM). Each call is timed by event records around it inside
// the captured graph (cudaEventRecordExternal makes them record nodes; a plain record in capture
// only orders streams and has no time to read). A difference of graphs (preceding kernels + call,
// minus the preceding kernels alone) would mix in the preceding kernels' own time, which depends
// on where their code is (l45b did so). Per replay the mean over the graph's calls, then the
// median over replays. The preceding kernels also end the PDL overlap between consecutive calls,
// and the records add their own gaps, so "warm" reads 1.3-2.6 us above the A/B rows (l45d).
bool g_icache_cold = false;

// Reads n 16-byte words with plain loads (L2's normal eviction priority): the L2 then holds clean
// lines of this buffer. A store pass (bench::fill) would leave it full of dirty lines, whose
// write-back then competes with the next kernel's reads (l45c: +6-11 us a decode call, with the
// instruction caches warm).
__global__ void l2_displace_kernel(const uint4* p, size_t n, uint32_t* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) sink[0] = acc;  // keeps the loads
}

void icache_cold_rows(const char* shape, const char* kname, int64_t T,
                      const std::function<void(int, cudaStream_t)>& moe, cudaStream_t s) {
  static uint32_t *in = nullptr, *out = nullptr;
  static void* flush = nullptr;
  static size_t flush_bytes = 0;
  static int sms = 0;
  static std::vector<cudaEvent_t> ev;
  if (!in) {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    flush_bytes = size_t(prop.l2CacheSize) * 4;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMalloc(&in, 64 * 4));
    std::vector<uint32_t> h(64);
    for (int i = 0; i < 64; ++i) h[size_t(i)] = 0x9E3779B9u * uint32_t(i + 1);
    CK(cudaMemcpy(in, h.data(), 64 * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&out, size_t(sms) * 4 * 32 * 4));
    ev.resize(2 * k_calls);
    for (auto& e : ev) CK(cudaEventCreate(&e));
  }
  // scenario: bit 0 the 192 KB kernel (else the 4 KB loop), bit 1 the L2 read pass first.
  const auto before = [&](int scenario, int i, cudaStream_t st) {
    if (scenario & 2) {
      l2_displace_kernel<<<4 * sms, 256, 0, st>>>(static_cast<const uint4*>(flush),
                                                  flush_bytes / 16, out);
      CK(cudaGetLastError());
    }
    if (scenario & 1)
      bench::straight_code_kernel<12288><<<4 * sms, 32, 0, st>>>(in, out, 1);
    else
      bench::straight_code_kernel<256><<<4 * sms, 32, 0, st>>>(in, out, 48);
    CK(cudaGetLastError());
  };
  const auto call_us = [&](int scenario) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < k_calls; ++i) {
      before(scenario, i, s);
      CK(cudaEventRecordWithFlags(ev[size_t(2 * i)], s, cudaEventRecordExternal));
      moe(i, s);
      CK(cudaEventRecordWithFlags(ev[size_t(2 * i + 1)], s, cudaEventRecordExternal));
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<float> per_replay;
    for (int r = 0; r < k_replays + 3; ++r) {
      replay_gap();
      CK(cudaGraphLaunch(ge, s));
      CK(cudaStreamSynchronize(s));
      if (r < 3) continue;  // warm-up
      float sum = 0;
      for (int i = 0; i < k_calls; ++i) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[size_t(2 * i)], ev[size_t(2 * i + 1)]));
        sum += ms;
      }
      per_replay.push_back(1e3f * sum / float(k_calls));
    }
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
    return median(per_replay);
  };
  const char* names[4] = {"warm", "cold", "warm+L2", "cold+L2"};
  double us[4] = {0, 0, 0, 0};
  for (int rep = 0; rep < 2; ++rep)  // two alternating passes; the second is reported
    for (int sc = 0; sc < 4; ++sc) us[sc] = call_us(sc);
  std::printf("%-6s %-6s   T=%lld icache: us a call (events around it)", shape, kname,
              (long long)T);
  for (int sc = 0; sc < 4; ++sc) std::printf("  %s %.2f", names[sc], us[sc]);
  std::printf("  | cold - warm %+.2f, warm+L2 - warm %+.2f, cold+L2 - warm %+.2f us\n",
              us[1] - us[0], us[2] - us[0], us[3] - us[0]);
}

#ifdef DSV4_MOE_TRACE
}  // namespace
namespace dsv4::cuda {
void moe_decode_trace_enable(bool on);
void moe_decode_trace_set_mode(int mode);
int moe_decode_trace_copy(unsigned long long* t4, int* info4, int max);
}  // namespace dsv4::cuda
namespace {
// --trace (the diagnostic build bench_moe_linear_trace): per configuration, eager calls after a
// warm-up, each traced on its own (%globaltimer stamps of every block, moe_decode_trace.cuh),
// printed as us after the first W1/W3 block's entry: min / median / max over blocks.
void trace_rows(const std::string& label, const std::function<void(int, cudaStream_t)>& body,
                cudaStream_t s) {
  namespace dc = dsv4::cuda;
  // DSV4_MOE_TRACE_MODE=N: W2's stamps of trace mode N (moe_decode_trace.cuh, g_trace_mode; 1 and
  // 2 put other points of W2's prologue in its "waited" / "loop end" columns).
  const char* mode = std::getenv("DSV4_MOE_TRACE_MODE");
  dc::moe_decode_trace_set_mode(mode ? std::atoi(mode) : 0);
  for (int i = 0; i < k_calls; ++i) body(i, s);
  CK(cudaStreamSynchronize(s));
  const int maxr = 8192;
  std::vector<unsigned long long> t(4 * maxr);
  std::vector<int> info(4 * maxr);
  for (int call = 0; call < 4; ++call) {
    for (int i = 0; i < 4; ++i) body((call * 5 + i) % k_calls, s);  // other experts first
    dc::moe_decode_trace_enable(true);
    body((call * 5 + 4) % k_calls, s);
    CK(cudaStreamSynchronize(s));
    const int n = dc::moe_decode_trace_copy(t.data(), info.data(), maxr);
    dc::moe_decode_trace_enable(false);
    unsigned long long t0 = ~0ull;
    for (int r = 0; r < n; ++r)
      if (info[4 * r] == 0) t0 = std::min(t0, t[4 * r]);
    const auto us = [&](unsigned long long v) { return v ? double(v - t0) * 1e-3 : -1.0; };
    std::printf("trace %s call %d: %d blocks\n", label.c_str(), call, n);
    // DSV4_MOE_TRACE_RAW=FILE: every record appended (label, call, kind, sm, slot, bx, the four
    // stamps in us after the first W1/W3 entry), for per-SM timelines off the device.
    if (const char* raw = std::getenv("DSV4_MOE_TRACE_RAW"))
      if (FILE* f = std::fopen(raw, "a")) {
        for (int r = 0; r < n; ++r)
          std::fprintf(f, "%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n", label.c_str(), call,
                       info[4 * r], info[4 * r + 1], info[4 * r + 2], info[4 * r + 3], us(t[4 * r]),
                       us(t[4 * r + 1]), us(t[4 * r + 2]), us(t[4 * r + 3]));
        std::fclose(f);
      }
    const char* kinds[3] = {"W1/W3", "W2", "combine"};
    const char* stamps[4] = {"entry", "waited", "loop end", "exit"};
    for (int k = 0; k < 3; ++k) {
      std::vector<std::vector<double>> v(4);
      std::vector<double> fold_exit;
      std::map<int, double> sm_exit;
      int cnt = 0;
      for (int r = 0; r < n; ++r) {
        if (info[4 * r] != k) continue;
        ++cnt;
        for (int j = 0; j < 4; ++j)
          if (t[4 * r + j]) v[size_t(j)].push_back(us(t[4 * r + j]));
        if (k == 0 && info[4 * r + 2] >= 1000) fold_exit.push_back(us(t[4 * r + 3]));
        double& m = sm_exit[info[4 * r + 1]];
        m = std::max(m, us(t[4 * r + 3]));
      }
      if (!cnt) continue;
      std::printf("  %-7s %4d blocks on %3zu SMs:", kinds[k], cnt, sm_exit.size());
      for (int j = 0; j < 4; ++j) {
        auto& x = v[size_t(j)];
        if (x.empty()) continue;
        std::sort(x.begin(), x.end());
        std::printf("  %s %.2f/%.2f/%.2f", stamps[j], x.front(), x[x.size() / 2], x.back());
      }
      if (!fold_exit.empty()) {
        std::sort(fold_exit.begin(), fold_exit.end());
        std::printf("  fold exits (%zu) %.2f/%.2f/%.2f", fold_exit.size(), fold_exit.front(),
                    fold_exit[fold_exit.size() / 2], fold_exit.back());
      }
      std::vector<double> se;
      for (auto& [sm, e] : sm_exit) se.push_back(e);
      std::sort(se.begin(), se.end());
      std::printf("  per-SM last exit %.2f/%.2f/%.2f\n", se.front(), se[se.size() / 2], se.back());
    }
  }
}
#endif

// Rows of the short-read ceiling for one (shape, format, T) and the decode's times beside it
// (moe: the --ab configurations' times of the same process, ms per call).
void short_read_rows(const char* shape, const char* kname, int64_t T,
                     const std::vector<std::vector<int32_t>>& routes, const device_weight& w1,
                     const device_weight& w3, const device_weight& w2,
                     const std::vector<std::pair<std::string, double>>& moe, double read_gbps,
                     cudaStream_t s) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint32_t* sink;
  CK(cudaMalloc(&sink, 4));
  const device_weight* up_m[2] = {&w1, &w3};
  const device_weight* dn_m[1] = {&w2};
  const device_weight* all_m[3] = {&w1, &w3, &w2};
  std::vector<seg_set> up, dn, all;
  double up_b = 0, dn_b = 0;
  for (const auto& r : routes) {
    up.push_back(make_segs(r, up_m, 2));
    dn.push_back(make_segs(r, dn_m, 1));
    all.push_back(make_segs(r, all_m, 3));
    up_b += 16.0 * double(up.back().total) / double(routes.size());
    dn_b += 16.0 * double(dn.back().total) / double(routes.size());
  }
  const read_cfg cfgs[] = {{1, 512, 4}, {1, 1024, 4}, {2, 512, 4}, {2, 512, 8},
                           {4, 512, 2}, {4, 512, 4},  {4, 256, 8}, {8, 256, 4}};
  const int ncfg = int(sizeof cfgs / sizeof cfgs[0]);
  const auto time_one = [&](const std::vector<seg_set>& set, const read_cfg& c) {
    return 1e3 * time_graph_per_call(
                     [&](int i, cudaStream_t st) {
                       launch_seg_read(c, sms, set[size_t(i) % set.size()], false, sink, st);
                     },
                     k_calls, s);
  };
  const auto gbps = [](double bytes, double us) { return bytes / (us * 1e-6) / 1e9; };
  std::printf("short-read %s %s T=%lld: up (W1+W3) %.2f MB, down (W2) %.2f MB per call\n", shape,
              kname, (long long)T, up_b / 1e6, dn_b / 1e6);
  int best[3] = {0, 0, 0};
  double best_us[3] = {1e30, 1e30, 1e30};
  const std::vector<seg_set>* sets[3] = {&up, &dn, &all};
  const double bytes3[3] = {up_b, dn_b, up_b + dn_b};
  const char* names[3] = {"up", "down", "up+down"};
  for (int k = 0; k < ncfg; ++k) {
    std::printf("  cfg %d/SM x %4d thr, %d in flight:", cfgs[k].blocks_per_sm, cfgs[k].threads,
                cfgs[k].u);
    for (int part = 0; part < 3; ++part) {
      const double us = time_one(*sets[part], cfgs[k]);
      std::printf("  %s %7.2f us (%5.1f%%)", names[part], us,
                  100 * gbps(bytes3[part], us) / read_gbps);
      if (us < best_us[part]) best_us[part] = us, best[part] = k;
    }
    std::printf("\n");
  }
  for (int part = 0; part < 3; ++part)
    std::printf(
        "short-read %s %s T=%lld %-8s one launch: %7.2f us, %7.1f GB/s, %5.1f%% of read "
        "(cfg %d)\n",
        shape, kname, (long long)T, names[part], best_us[part], gbps(bytes3[part], best_us[part]),
        100 * gbps(bytes3[part], best_us[part]) / read_gbps, best[part]);
  double pair_us[2], triple_us = 0;
  for (int pdl = 0; pdl < 2; ++pdl) {
    pair_us[pdl] =
        1e3 *
        time_graph_per_call(
            [&](int i, cudaStream_t st) {
              launch_seg_read(cfgs[best[0]], sms, up[size_t(i) % up.size()], pdl != 0, sink, st);
              launch_seg_read(cfgs[best[1]], sms, dn[size_t(i) % dn.size()], pdl != 0, sink, st);
            },
            k_calls, s);
    std::printf(
        "short-read %s %s T=%lld pair %-5s (up, then down): %7.2f us, %7.1f GB/s, %5.1f%% "
        "of read\n",
        shape, kname, (long long)T, pdl ? "PDL" : "plain", pair_us[pdl],
        gbps(up_b + dn_b, pair_us[pdl]), 100 * gbps(up_b + dn_b, pair_us[pdl]) / read_gbps);
  }
  // The decode's third launch (the combine) as a read of its input, out (T * top_k rows of f32),
  // after the pair: one block per 8 KB, PDL.
  {
    const int64_t K = int64_t(routes[0].size()) / T, D = w2.rows;
    const uint64_t words = uint64_t(T * K * D * 4) / 16;
    void* outb;
    CK(cudaMalloc(&outb, words * 16));
    fill(outb, words * 16, 5, 0);
    const read_seg one{static_cast<const uint4*>(outb), 0, words};
    seg_set small;
    small.count = 1;
    small.total = words;
    CK(cudaMalloc(&small.dev, sizeof(read_seg)));
    CK(cudaMemcpy(small.dev, &one, sizeof(read_seg), cudaMemcpyHostToDevice));
    const int small_blocks = int(std::max<uint64_t>(1, words / 512));
    const read_cfg sc{1, 256, 2};
    const double tri =
        1e3 * time_graph_per_call(
                  [&](int i, cudaStream_t st) {
                    launch_seg_read(cfgs[best[0]], sms, up[size_t(i) % up.size()], true, sink, st);
                    launch_seg_read(cfgs[best[1]], sms, dn[size_t(i) % dn.size()], true, sink, st);
                    launch_seg_read(sc, small_blocks, small, true, sink, st);
                  },
                  k_calls, s);
    std::printf(
        "short-read %s %s T=%lld triple PDL (up, down, then %llu KB like the combine): "
        "%7.2f us, %5.1f%% of read on the weights\n",
        shape, kname, (long long)T, (unsigned long long)(words * 16 / 1024), tri,
        100 * gbps(up_b + dn_b, tri) / read_gbps);
    CK(cudaFree(small.dev));
    CK(cudaFree(outb));
    triple_us = tri;
  }
  const double pair_best = std::min(pair_us[0], pair_us[1]);
  for (const auto& [name, ms] : moe)
    std::printf(
        "short-read %s %s T=%lld moe_decode %-26s %7.2f us = %5.1f%% of the dependent "
        "pair (%.2f us), %5.1f%% of the triple (%.2f us), %5.1f%% of one launch of both "
        "(%.2f us)\n",
        shape, kname, (long long)T, name.c_str(), ms * 1e3, 100 * pair_best / (ms * 1e3), pair_best,
        100 * triple_us / (ms * 1e3), triple_us, 100 * best_us[2] / (ms * 1e3), best_us[2]);
  for (auto* v : {&up, &dn, &all})
    for (seg_set& x : *v) CK(cudaFree(x.dev));
  CK(cudaFree(sink));
}

// Device inputs of routed-MoE steps: the routes as given, a routing weight per pair in
// [0.05, 1.05), and T x D activations in [-1, 1] as f32 and the same values in bf16 (weights
// drawn before activations); outputs yf / yb of the same size.
struct moe_step_inputs {
  int32_t* idx = nullptr;
  float *wts = nullptr, *xf = nullptr, *yf = nullptr;
  __nv_bfloat16 *xb = nullptr, *yb = nullptr;
  moe_step_inputs(const std::vector<int32_t>& routes, int64_t T, int64_t D, std::mt19937_64& rng) {
    CK(cudaMalloc(&idx, routes.size() * 4));
    CK(cudaMalloc(&wts, routes.size() * 4));
    CK(cudaMemcpy(idx, routes.data(), routes.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> hw(routes.size());
    for (float& v : hw) v = 0.05f + float(rng() % 1000) / 1000.0f;
    CK(cudaMemcpy(wts, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&xf, size_t(T * D) * 4));
    CK(cudaMalloc(&yf, size_t(T * D) * 4));
    CK(cudaMalloc(&xb, size_t(T * D) * 2));
    CK(cudaMalloc(&yb, size_t(T * D) * 2));
    std::vector<float> hx(size_t(T * D));
    std::vector<__nv_bfloat16> hb(hx.size());
    for (size_t j = 0; j < hx.size(); ++j) {
      hx[j] = float(int64_t(rng() % 2001) - 1000) / 1000.0f;
      hb[j] = __float2bfloat16(hx[j]);
    }
    CK(cudaMemcpy(xf, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(xb, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
  }
  ~moe_step_inputs() {
    CK(cudaFree(idx));
    CK(cudaFree(wts));
    CK(cudaFree(xf));
    CK(cudaFree(yf));
    CK(cudaFree(xb));
    CK(cudaFree(yb));
  }
  moe_step_inputs(const moe_step_inputs&) = delete;
  moe_step_inputs& operator=(const moe_step_inputs&) = delete;
};

void bench_moe(const moe_shape& sh, weight_kind kind, cudaStream_t s, const ceilings& c,
               cublasHandle_t h) {
  const int64_t D = sh.hidden, I = sh.inter, E = sh.experts, K = sh.top_k;
  stacked w1(kind, I, D, E, 100), w3(kind, I, D, E, 200), w2(kind, D, I, E, 300);
  // BF16 pool for the cuBLAS loop: enough experts to rotate past L2 (routing maps e -> e % pool).
  const size_t bf_expert = size_t(3) * I * D * 2;
  const int64_t bf_pool = std::min<int64_t>(E, std::max<int64_t>(8, (1536ull << 20) / bf_expert));
  void* bf;
  CK(cudaMalloc(&bf, bf_expert * bf_pool));
  fill(bf, bf_expert * bf_pool, 400, 3);
  std::mt19937_64 rng(1234);
  const char* kname = kind == weight_kind::mxfp4 ? "mxfp4" : "nvfp4";
  for (int64_t T : g_tokens) {
    // k_calls routings: top-k distinct experts per token, uniform over all E.
    std::vector<std::vector<int32_t>> routes(k_calls);
    std::vector<int32_t> all_routes;  // the k_calls routings back to back
    double touched = 0;
    std::vector<std::vector<int>> per_expert_tokens(k_calls);
    for (int i = 0; i < k_calls; ++i) {
      draw_routes(rng, T, E, K, routes[i]);
      std::vector<int> cnt(E, 0);
      for (int32_t e : routes[i]) ++cnt[e];
      for (int64_t e = 0; e < E; ++e) touched += cnt[e] > 0;
      per_expert_tokens[i] = cnt;
      all_routes.insert(all_routes.end(), routes[i].begin(), routes[i].end());
    }
    touched /= k_calls;
    const moe_step_inputs in(all_routes, T, D, rng);
    int32_t* const idx = in.idx;
    float *const wts = in.wts, *const xf = in.xf, *const yf = in.yf;
    __nv_bfloat16 *const xb = in.xb, *const yb = in.yb;
    const size_t ws_old = dsv4::cuda::moe_experts_workspace_bytes(T, K, E, D, I);
    const size_t ws_new = dsv4::cuda::moe_decode_workspace_bytes(T, K, E, D, I);
    void* ws;
    CK(cudaMalloc(&ws, std::max(ws_old, ws_new)));
    const double wbytes =
        touched * (w1.bytes_per_matrix + w3.bytes_per_matrix + w2.bytes_per_matrix);
    auto report = [&](const char* kernel, const char* act, double ms, double act_bytes) {
      const double bytes = wbytes + act_bytes;
      const double gbps = bytes / (ms * 1e-3) / 1e9;
      std::printf("%-6s %-6s %-22s %-5s %3lld %7.1f %10.2f %9.1f %6.1f%%\n", sh.name, kname, kernel,
                  act, (long long)T, touched, ms * 1e3, gbps, 100 * gbps / c.read_gbps);
    };
    namespace dc = dsv4::cuda;
    // One call of `fn` (a moe_decode entry point) for routing i.
    const auto decode_body = [&](auto fn, auto* x, auto* y, size_t wsb) {
      return [=, &w1, &w3, &w2](int i, cudaStream_t st) {
        CK(fn(x, T, idx + size_t(i) * T * K, wts + size_t(i) * T * K, K, w1.w, w3.w, w2.w, 10.0f,
              ws, wsb, y, st));
      };
    };
    if (g_decode_ab) {
      const repacked_copy r1(w1, {}), r3(w3, {}), r2(w2, {});
      for (int official = 1; official >= (g_ab_official_only ? 1 : 0); --official) {
        const auto fn = official ? dc::moe_decode_experts_official_repacked<__nv_bfloat16>
                                 : dc::moe_decode_experts_repacked<__nv_bfloat16>;
        const auto body = [=, &r1, &r3, &r2](int i, cudaStream_t st) {
          CK(fn(xb, T, idx + size_t(i) * T * K, wts + size_t(i) * T * K, K, r1.w, r3.w, r2.w, 10.0f,
                ws, ws_new, yb, st));
        };
        const size_t nc = g_ab_configs.size();
        std::vector<double> ms(nc, 0.0);
        for (int rep = 0; rep < 2; ++rep)
          for (size_t v = 0; v < nc; ++v) {
            apply_ab_config(g_ab_configs[v]);
            // One eager call first (chain 16 allocates its counters outside capture).
            if (rep == 0) {
              body(0, s);
              CK(cudaStreamSynchronize(s));
            }
            ms[v] = time_graph_per_call(body, k_calls, s);
          }
        reset_ab_config();
        std::string line;
        for (size_t v = 0; v < nc; ++v) {
          const std::string name =
              std::string(official ? "rp official " : "rp exact ") + g_ab_configs[v];
          report(name.c_str(), "bf16", ms[v], 4.0 * T * D);
          char buf[64];
          std::snprintf(buf, sizeof buf, " %s %.3fx", g_ab_configs[v].c_str(), ms[0] / ms[v]);
          line += buf;
        }
        std::printf("%-6s %-6s   T=%lld %s: speed vs %s:%s\n", sh.name, kname, (long long)T,
                    official ? "official" : "exact", g_ab_configs[0].c_str(), line.c_str());
        if (g_icache_cold && official) {
          apply_ab_config(g_ab_configs[0]);
          icache_cold_rows(sh.name, kname, T, body, s);
          reset_ab_config();
        }
        if (g_short_read && official) {
          std::vector<std::pair<std::string, double>> moe;
          for (size_t v = 0; v < nc; ++v) moe.emplace_back(g_ab_configs[v], ms[v]);
          short_read_rows(sh.name, kname, T, routes, r1.w, r3.w, r2.w, moe, c.read_gbps, s);
        }
#ifdef DSV4_MOE_TRACE
        if (official && T <= 4)
          for (size_t v = 0; v < nc; ++v) {
            apply_ab_config(g_ab_configs[v]);
            trace_rows(std::string(sh.name) + " " + kname + " T=" + std::to_string(T) + " " +
                           g_ab_configs[v],
                       body, s);
            reset_ab_config();
          }
#endif
        // (Chain 16's W2 waits for counters that only W1/W3 releases: with W1/W3 replaced by an
        // empty kernel it would spin until its trap, so the breakdown skips such configurations.)
        if (g_ab_breakdown && official && T <= 4)
          for (size_t v : {size_t(0), nc - 1}) {
            if (g_ab_configs[v].find('f') != std::string::npos) {
              std::printf("breakdown %s: skipped (chain 16)\n", g_ab_configs[v].c_str());
              continue;
            }
            apply_ab_config(g_ab_configs[v]);
            const std::string label = std::string(sh.name) + " " + kname +
                                      " T=" + std::to_string(T) + " " + g_ab_configs[v];
            stage_breakdown(label.c_str(), body, k_calls, s);
            reset_ab_config();
          }
      }
      CK(cudaFree(ws));
      continue;
    }
    const auto body_new_f = decode_body(dc::moe_decode_experts<float>, xf, yf, ws_new);
    double old_ms = 0, off_old = 0, loop_ms = 0;
    if (!g_decode_only) {
      old_ms = time_graph_per_call(
          [&](int i, cudaStream_t st) {
            CK(dc::moe_experts<float>(xf, T, idx + size_t(i) * T * K, wts + size_t(i) * T * K, K,
                                      w1.w, w3.w, w2.w, 10.0f, ws, ws_old, yf, st));
          },
          k_calls, s);
      report("moe_experts_f32 (old)", "f32", old_ms, 8.0 * T * D);
    }
    const double new_f = time_graph_per_call(body_new_f, k_calls, s);
    report("moe_decode", "f32", new_f, 8.0 * T * D);
    const double new_b = time_graph_per_call(
        decode_body(dc::moe_decode_experts<__nv_bfloat16>, xb, yb, ws_new), k_calls, s);
    report("moe_decode", "bf16", new_b, 4.0 * T * D);
    // Official order (the default for FP8 checkpoints on the GPU): the generic kernel and the
    // decode variant (FP8 h quantization launch, W2 without the lo part).
    if (!g_decode_only) {
      off_old = time_graph_per_call(
          [&](int i, cudaStream_t st) {
            CK(dc::moe_experts_official<float>(xf, T, idx + size_t(i) * T * K,
                                               wts + size_t(i) * T * K, K, w1.w, w3.w, w2.w, 10.0f,
                                               ws, ws_old, yf, st));
          },
          k_calls, s);
      report("moe_experts_official", "f32", off_old, 8.0 * T * D);
    }
    const double off_f = time_graph_per_call(
        decode_body(dc::moe_decode_experts_official<float>, xf, yf, ws_new), k_calls, s);
    report("moe_decode_official", "f32", off_f, 8.0 * T * D);
    const double off_b = time_graph_per_call(
        decode_body(dc::moe_decode_experts_official<__nv_bfloat16>, xb, yb, ws_new), k_calls, s);
    report("moe_decode_official", "bf16", off_b, 4.0 * T * D);
    {  // The repacked layout (moe_decode_*_repacked; not GPU-verified before this bench).
      // Host repacking of routing 0's experts for the check, up to T = 16 (at T = 64 the Pro
      // experts would take seconds of host work; the timing does not depend on the values).
      const bool check = T <= 16;
      const std::vector<int32_t> to_repack = check ? routes[0] : std::vector<int32_t>{};
      const repacked_copy r1(w1, to_repack), r3(w3, to_repack), r2(w2, to_repack);
      const auto rp_body = [&](auto fn, auto* x, auto* y) {
        return [=, &r1, &r3, &r2](int i, cudaStream_t st) {
          CK(fn(x, T, idx + size_t(i) * T * K, wts + size_t(i) * T * K, K, r1.w, r3.w, r2.w, 10.0f,
                ws, ws_new, y, st));
        };
      };
      // Sanity (not the parity test): routing 0, repacked vs current, meant to be bit-identical.
      std::vector<float> a(size_t(T * D)), b(a.size());
      for (int official = 0; official < (check ? 2 : 0); ++official) {
        const auto f_cur =
            official ? dc::moe_decode_experts_official<float> : dc::moe_decode_experts<float>;
        const auto f_rp = official ? dc::moe_decode_experts_official_repacked<float>
                                   : dc::moe_decode_experts_repacked<float>;
        CK(f_cur(xf, T, idx, wts, K, w1.w, w3.w, w2.w, 10.0f, ws, ws_new, yf, s));
        CK(cudaMemcpyAsync(b.data(), yf, b.size() * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaMemset(yf, 0xFF, a.size() * 4));
        CK(f_rp(xf, T, idx, wts, K, r1.w, r3.w, r2.w, 10.0f, ws, ws_new, yf, s));
        CK(cudaMemcpyAsync(a.data(), yf, a.size() * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        size_t differ = 0;
        double dmax = 0, bmax = 0;
        for (size_t j = 0; j < a.size(); ++j) {
          differ += std::memcmp(&a[j], &b[j], 4) != 0;
          dmax = std::max(dmax, double(std::fabs(a[j] - b[j])));
          bmax = std::max(bmax, double(std::fabs(b[j])));
        }
        const double rel = bmax > 0 ? dmax / bmax : dmax;
        std::printf(
            "check %-6s %-6s T=%-3lld %s: repacked vs current: %zu of %zu differ, max |diff| / "
            "max |y| %.2e%s\n",
            sh.name, kname, (long long)T, official ? "official" : "exact   ", differ, a.size(), rel,
            differ ? "  MISMATCH" : "");
      }
      const double rp_f =
          time_graph_per_call(rp_body(dc::moe_decode_experts_repacked<float>, xf, yf), k_calls, s);
      report("moe_decode repacked", "f32", rp_f, 8.0 * T * D);
      const double rp_b = time_graph_per_call(
          rp_body(dc::moe_decode_experts_repacked<__nv_bfloat16>, xb, yb), k_calls, s);
      report("moe_decode repacked", "bf16", rp_b, 4.0 * T * D);
      const double rp_of = time_graph_per_call(
          rp_body(dc::moe_decode_experts_official_repacked<float>, xf, yf), k_calls, s);
      report("moe_decode_off repacked", "f32", rp_of, 8.0 * T * D);
      const double rp_ob = time_graph_per_call(
          rp_body(dc::moe_decode_experts_official_repacked<__nv_bfloat16>, xb, yb), k_calls, s);
      report("moe_decode_off repacked", "bf16", rp_ob, 4.0 * T * D);
      std::printf(
          "%-6s %-6s   repacked vs current: exact f32 %.2fx, exact bf16 %.2fx, official f32 "
          "%.2fx, official bf16 %.2fx\n",
          sh.name, kname, new_f / rp_f, new_b / rp_b, off_f / rp_of, off_b / rp_ob);
    }
    if (std::string(sh.name) == "flash" && kind == weight_kind::mxfp4 && (T == 1 || T == 64)) {
      const std::string tl = " T=" + std::to_string(T);
      stage_breakdown(("flash mxfp4 f32 current" + tl).c_str(), body_new_f, k_calls, s);
      stage_breakdown(("flash mxfp4 bf16 official current" + tl).c_str(),
                      decode_body(dc::moe_decode_experts_official<__nv_bfloat16>, xb, yb, ws_new),
                      k_calls, s);
      const repacked_copy r1(w1, {}), r3(w3, {}), r2(w2, {});
      // Without chain 16 (see the --decode-ab breakdown): 15's launches.
      dsv4::cuda::moe_decode_set_chain(g_chain_default & 15);
      stage_breakdown(("flash mxfp4 bf16 official repacked chain 15" + tl).c_str(),
                      [=, &r1, &r3, &r2](int i, cudaStream_t st) {
                        CK(dc::moe_decode_experts_official_repacked<__nv_bfloat16>(
                            xb, T, idx + size_t(i) * T * K, wts + size_t(i) * T * K, K, r1.w, r3.w,
                            r2.w, 10.0f, ws, ws_new, yb, st));
                      },
                      k_calls, s);
      dsv4::cuda::moe_decode_set_chain(g_chain_default);
    }
    // Per-expert cuBLAS BF16 loop (host-known routing; 3 GEMMs per touched expert).
    void *hb1 = nullptr, *hb2 = nullptr;
    if (!g_decode_only) {
      CK(cudaMalloc(&hb1, size_t(T * K) * I * 4 * 2));
      CK(cudaMalloc(&hb2, size_t(T * K) * D * 4));
      loop_ms = time_graph_per_call(
          [&](int i, cudaStream_t st) {
            CB(cublasSetStream(h, st));
            const float one = 1.0f, zero = 0.0f;
            for (int64_t e = 0; e < E; ++e) {
              const int n = per_expert_tokens[i][e];
              if (!n) continue;
              const uint8_t* base =
                  static_cast<const uint8_t*>(bf) + size_t(e % bf_pool) * bf_expert;
              for (int m = 0; m < 2; ++m)
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(I), n, int(D), &one,
                                base + size_t(m) * I * D * 2, CUDA_R_16BF, int(D), xb, CUDA_R_16BF,
                                int(D), &zero, static_cast<float*>(hb1) + size_t(m) * T * K * I,
                                CUDA_R_32F, int(I), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
              CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(D), n, int(I), &one,
                              base + size_t(2) * I * D * 2, CUDA_R_16BF, int(I), xb, CUDA_R_16BF,
                              int(I), &zero, hb2, CUDA_R_32F, int(D), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
            }
          },
          4, s);
      const double bytes = touched * 3.0 * double(I) * double(D) * 2.0;
      const double gbps = bytes / (loop_ms * 1e-3) / 1e9;
      std::printf("%-6s %-6s %-22s %-5s %3lld %7.1f %10.2f %9.1f %6.1f%%  (bf16 bytes)\n", sh.name,
                  "bf16", "cublas per-expert loop", "bf16", (long long)T, touched, loop_ms * 1e3,
                  gbps, 100 * gbps / c.read_gbps);
      std::printf(
          "%-6s %-6s   speed-up new(f32) vs old %.2fx, new(bf16) vs cuBLAS loop %.2fx, official "
          "decode(f32) vs official old %.2fx\n",
          sh.name, kname, old_ms / new_f, loop_ms / new_b, off_old / off_f);
    }
    if (hb1) CK(cudaFree(hb1));
    if (hb2) CK(cudaFree(hb2));
    CK(cudaFree(ws));
  }
  CK(cudaFree(bf));
}

// --profile: for a profiler (ncu -k regex:moe_decode), one eager call of the official-order
// decode with bf16 activations per (shape, format, T) selected, checkpoint layout then repacked
// (random bytes read as either layout: the work does not depend on the values). No timing here.
void profile_decode(cudaStream_t s) {
  const moe_shape flash{"flash", 4096, 2048, 256, 6}, pro{"pro", 7168, 3072, 384, 6};
  namespace dc = dsv4::cuda;
  for (const moe_shape& sh : {flash, pro})
    for (weight_kind kind : {weight_kind::mxfp4, weight_kind::nvfp4}) {
      if (!listed(g_shapes, sh.name) ||
          !listed(g_formats, kind == weight_kind::mxfp4 ? "mxfp4" : "nvfp4"))
        continue;
      const int64_t D = sh.hidden, I = sh.inter, E = sh.experts, K = sh.top_k;
      stacked w1(kind, I, D, E, 100), w3(kind, I, D, E, 200), w2(kind, D, I, E, 300);
      std::mt19937_64 rng(99);
      for (int64_t T : g_tokens) {
        std::vector<int32_t> route;
        draw_routes(rng, T, E, K, route);
        int32_t* idx;
        float* wts;
        __nv_bfloat16 *xb, *yb;
        CK(cudaMalloc(&idx, route.size() * 4));
        CK(cudaMalloc(&wts, route.size() * 4));
        CK(cudaMalloc(&xb, size_t(T * D) * 2));
        CK(cudaMalloc(&yb, size_t(T * D) * 2));
        CK(cudaMemcpy(idx, route.data(), route.size() * 4, cudaMemcpyHostToDevice));
        const std::vector<float> hw(route.size(), 0.25f);
        CK(cudaMemcpy(wts, hw.data(), hw.size() * 4, cudaMemcpyHostToDevice));
        fill(xb, size_t(T * D) * 2, 6, 3);
        const size_t wsb = dc::moe_decode_workspace_bytes(T, K, E, D, I);
        void* ws;
        CK(cudaMalloc(&ws, wsb));
        // The same random bytes read as the repacked layout (the work does not depend on the
        // values; the repacked entry points insist on the layout flag).
        device_weight r1 = w1.w, r3 = w3.w, r2 = w2.w;
        r1.layout = r3.layout = r2.layout = dc::weight_layout::repacked;
        const int nv = g_decode_ab ? int(g_ab_configs.size()) : 2;
        for (int v = 0; v < nv; ++v) {
          const bool rp = v == 1 || g_decode_ab;  // --decode-ab: repacked, each configuration
          if (g_decode_ab) apply_ab_config(g_ab_configs[size_t(v)]);
          if (rp)
            CK(dc::moe_decode_experts_official_repacked<__nv_bfloat16>(xb, T, idx, wts, K, r1, r3,
                                                                       r2, 10.0f, ws, wsb, yb, s));
          else
            CK(dc::moe_decode_experts_official<__nv_bfloat16>(xb, T, idx, wts, K, w1.w, w3.w, w2.w,
                                                              10.0f, ws, wsb, yb, s));
          CK(cudaStreamSynchronize(s));
          std::printf("profiled %s %s T=%lld %s\n", sh.name,
                      kind == weight_kind::mxfp4 ? "mxfp4" : "nvfp4", (long long)T,
                      g_decode_ab ? ("repacked " + g_ab_configs[size_t(v)]).c_str()
                                  : (v ? "repacked" : "current"));
        }
        reset_ab_config();
        CK(cudaFree(ws));
        CK(cudaFree(idx));
        CK(cudaFree(wts));
        CK(cudaFree(xb));
        CK(cudaFree(yb));
      }
    }
}

// ---- MoE prefill (moe_prefill.h) ----
// --prefill-quick: without the old moe_experts; --prefill-flash: Flash shapes only (to fit one
// device call).
// --prefill-cp: also the not yet GPU-verified wgmma_cp variant (left out by default: a fault there
// would end the whole run).
bool g_prefill_quick = false, g_prefill_flash = false, g_prefill_cp = false;
int64_t g_prefill_t = 0;  // --prefill-t N: that token count only (e.g. for one ncu launch)

// Median ms per call of a graph of `calls` consecutive calls replayed `replays` times.
double time_prefill_per_call(const std::function<void(int, cudaStream_t)>& body, int calls,
                             int replays, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) body(i, s);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  const double ms = time_ms([&] { CK(cudaGraphLaunch(ge, s)); }, replays, s);
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return ms / calls;
}

// cuBLAS BF16 grouped GEMM over the same routings (the issue's "same shapes" ceiling): per call,
// one cublasGemmGroupedBatchedEx for L1 (w1 and w3 of every expert with tokens, one problem each:
// [I, D] x [D, n_e]) and one for L2 ([D, I] x [I, n_e]); BF16 in and out, f32 compute; token
// segments of the expanded activations in expert order. Median ms per call (event-timed back to
// back launches: 2 per call, so no graph needed); -1 when cuBLAS refuses the type combination.
// At small T it is bound by reading the BF16 weights (Flash: 256 x 50 MB = 12.9 GB per call,
// 4x the MXFP4 bytes), so it is a fair "same shapes in BF16" ceiling, not a tensor-core one.
double time_grouped_ceiling(cublasHandle_t h, cudaStream_t s,
                            const std::vector<std::vector<int>>& cnt, const void* bf,
                            int64_t bf_pool, size_t bf_expert, const void* db, void* dc, int64_t D,
                            int64_t I) {
  struct layer_args {
    std::vector<cublasOperation_t> ta, tb;
    std::vector<int> m, n, k, lda, ldb, ldc, size;
    std::vector<float> alpha, beta;
    const void** a = nullptr;  // device pointer arrays
    const void** b = nullptr;
    void** c = nullptr;
  };
  const int calls = int(cnt.size());
  const int64_t E = int64_t(cnt[0].size());
  int64_t P = 0;
  for (int c : cnt[0]) P += c;
  std::vector<layer_args> l1(calls), l2(calls);
  std::vector<void*> dev_arrays;
  const auto* wb = static_cast<const uint8_t*>(bf);
  const auto* xb = static_cast<const __nv_bfloat16*>(db);
  auto* yb = static_cast<__nv_bfloat16*>(dc);
  auto add = [](layer_args& L, int m, int n, int k, int ld_in, int ld_out) {
    L.ta.push_back(CUBLAS_OP_T);
    L.tb.push_back(CUBLAS_OP_N);
    L.m.push_back(m), L.n.push_back(n), L.k.push_back(k);
    L.lda.push_back(ld_in), L.ldb.push_back(ld_in), L.ldc.push_back(ld_out);
    L.size.push_back(1), L.alpha.push_back(1.0f), L.beta.push_back(0.0f);
  };
  auto upload = [&](const std::vector<const void*>& host) {
    void* d;
    CK(cudaMalloc(&d, host.size() * sizeof(void*)));
    CK(cudaMemcpy(d, host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice));
    dev_arrays.push_back(d);
    return d;
  };
  for (int i = 0; i < calls; ++i) {
    std::vector<const void*> a1, b1, c1, a2, b2, c2;
    int64_t off = 0;
    for (int64_t e = 0; e < E; ++e) {
      const int n = cnt[i][e];
      if (!n) continue;
      const uint8_t* base = wb + size_t(e % bf_pool) * bf_expert;
      for (int g = 0; g < 2; ++g) {  // w1, w3: outputs [P, I] each, side by side in dc
        add(l1[i], int(I), n, int(D), int(D), int(I));
        a1.push_back(base + size_t(g) * I * D * 2);
        b1.push_back(xb + off * D);
        c1.push_back(yb + size_t(g) * P * I + off * I);
      }
      add(l2[i], int(D), n, int(I), int(I), int(D));
      a2.push_back(base + size_t(2) * I * D * 2);
      b2.push_back(xb + off * I);
      c2.push_back(yb + off * D);
      off += n;
    }
    l1[i].a = static_cast<const void**>(upload(a1));
    l1[i].b = static_cast<const void**>(upload(b1));
    l1[i].c = static_cast<void**>(upload(c1));
    l2[i].a = static_cast<const void**>(upload(a2));
    l2[i].b = static_cast<const void**>(upload(b2));
    l2[i].c = static_cast<void**>(upload(c2));
  }
  auto gemm = [&](const layer_args& L) {
    return cublasGemmGroupedBatchedEx(
        h, L.ta.data(), L.tb.data(), L.m.data(), L.n.data(), L.k.data(), L.alpha.data(), L.a,
        CUDA_R_16BF, L.lda.data(), L.b, CUDA_R_16BF, L.ldb.data(), L.beta.data(), L.c, CUDA_R_16BF,
        L.ldc.data(), int(L.m.size()), L.size.data(), CUBLAS_COMPUTE_32F);
  };
  CB(cublasSetStream(h, s));
  double ms = -1;
  const cublasStatus_t probe = gemm(l1[0]);
  if (probe == CUBLAS_STATUS_SUCCESS) {
    ms = time_ms(
             [&] {
               for (int i = 0; i < calls; ++i) {
                 CB(gemm(l1[i]));
                 CB(gemm(l2[i]));
               }
             },
             10, s) /
         calls;
  } else {
    std::printf("cublasGemmGroupedBatchedEx refused BF16/BF16/BF16 f32-compute: status %d\n",
                int(probe));
  }
  CK(cudaStreamSynchronize(s));
  for (void* d : dev_arrays) CK(cudaFree(d));
  return ms;
}

// Prefill steps (T = 256 .. 16384 tokens, random top-k over all experts, a fresh routing per call):
// TFLOP/s (2 * pairs * 3 * hidden * inter per call) of moe_prefill_experts (bf16 and f32 x, exact
// and official order) against, measured in the same run: cuBLAS BF16 on one dense GEMM of the
// same total size (every pair on one [inter, hidden] matrix: the tensor-core ceiling of these
// shapes), the per-expert cuBLAS BF16 loop (3 GEMMs per expert with that expert's token count on
// expanded BF16 weights; no gather, SwiGLU or combine, so a lower bound on that approach) and the
// old moe_experts (T = 1024 only: it runs at f32-FMA speed).
// The dense BF16 ceiling of one routed-MoE call: W1 and W3 ([I, D] each) then W2 ([D, I]) of one
// BF16 expert at `base` (w1 | w3 | w2, row-major) against P activation columns in `db`, f32 into
// `dc` (cuBLAS on the stream set by the caller).
void dense_bf16_expert_gemms(cublasHandle_t h, const uint8_t* base, int64_t P, int64_t D, int64_t I,
                             const void* db, void* dc) {
  const float one = 1.0f, zero = 0.0f;
  for (int m = 0; m < 2; ++m)
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(I), int(P), int(D), &one,
                    base + size_t(m) * I * D * 2, CUDA_R_16BF, int(D), db, CUDA_R_16BF, int(D),
                    &zero, dc, CUDA_R_32F, int(I), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(D), int(P), int(I), &one,
                  base + size_t(2) * I * D * 2, CUDA_R_16BF, int(I), db, CUDA_R_16BF, int(I), &zero,
                  dc, CUDA_R_32F, int(D), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void bench_moe_prefill(const moe_shape& sh, weight_kind kind, cudaStream_t s, cublasHandle_t h) {
  const int64_t D = sh.hidden, I = sh.inter, E = sh.experts, K = sh.top_k;
  stacked w1(kind, I, D, E, 500), w3(kind, I, D, E, 600), w2(kind, D, I, E, 700);
  const size_t bf_expert = size_t(3) * I * D * 2;
  const int64_t bf_pool = std::min<int64_t>(E, std::max<int64_t>(8, (1536ull << 20) / bf_expert));
  void* bf;
  CK(cudaMalloc(&bf, bf_expert * bf_pool));
  fill(bf, bf_expert * bf_pool, 800, 3);
  std::mt19937_64 rng(4321);
  const char* kname = kind == weight_kind::mxfp4 ? "mxfp4" : "nvfp4";
  constexpr int calls = 4;
  for (int64_t T : {256, 1024, 4096, 8192, 16384}) {
    if (g_prefill_t && T != g_prefill_t) continue;
    const int64_t P = T * K;
    std::vector<int32_t> routes;  // `calls` routings back to back
    draw_routes(rng, calls * T, E, K, routes);
    std::vector<std::vector<int>> cnt(calls, std::vector<int>(E, 0));
    for (int i = 0; i < calls; ++i)
      for (int64_t p = 0; p < P; ++p) ++cnt[i][routes[size_t(i * P + p)]];
    const moe_step_inputs in(routes, T, D, rng);
    int32_t* const idx = in.idx;
    float *const wts = in.wts, *const xf = in.xf, *const yf = in.yf;
    __nv_bfloat16 *const xb = in.xb, *const yb = in.yb;
    const size_t ws_new = dsv4::cuda::moe_prefill_workspace_bytes(T, K, E, D, I);
    const size_t ws_old = dsv4::cuda::moe_experts_workspace_bytes(T, K, E, D, I);
    void* ws;
    CK(cudaMalloc(&ws, std::max(ws_new, ws_old)));
    const double flops = 2.0 * double(P) * 3.0 * double(D) * double(I);
    // Dense ceiling operands: [I, D] x [D, P] and [D, I] x [I, P] BF16 -> f32.
    void *db, *dc;
    CK(cudaMalloc(&db, size_t(P) * std::max(D, I) * 2));
    CK(cudaMalloc(&dc, size_t(P) * std::max(D, I) * 4));
    fill(db, size_t(P) * std::max(D, I) * 2, 900, 3);
    const float one = 1.0f, zero = 0.0f;
    const double dense_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CB(cublasSetStream(h, st));
          const uint8_t* base = static_cast<const uint8_t*>(bf) + size_t(i % bf_pool) * bf_expert;
          dense_bf16_expert_gemms(h, base, P, D, I, db, dc);
        },
        calls, 10, s);
    const double loop_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CB(cublasSetStream(h, st));
          for (int64_t e = 0; e < E; ++e) {
            const int n = cnt[i][e];
            if (!n) continue;
            const uint8_t* base = static_cast<const uint8_t*>(bf) + size_t(e % bf_pool) * bf_expert;
            for (int m = 0; m < 2; ++m)
              CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(I), n, int(D), &one,
                              base + size_t(m) * I * D * 2, CUDA_R_16BF, int(D), db, CUDA_R_16BF,
                              int(D), &zero, dc, CUDA_R_32F, int(I), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
            CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(D), n, int(I), &one,
                            base + size_t(2) * I * D * 2, CUDA_R_16BF, int(I), db, CUDA_R_16BF,
                            int(I), &zero, dc, CUDA_R_32F, int(D), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
          }
        },
        calls, 10, s);
    const double group_ms = time_grouped_ceiling(h, s, cnt, bf, bf_pool, bf_expert, db, dc, D, I);
    auto report = [&](const char* kernel, const char* act, double ms) {
      const double tf = flops / (ms * 1e-3) / 1e12;
      std::printf("%-6s %-6s %-29s %-5s %5lld %10.1f %8.1f %8.1f%% %8.1f%% %8.1f%%\n", sh.name,
                  kname, kernel, act, (long long)T, ms * 1e3, tf, 100 * dense_ms / ms,
                  100 * group_ms / ms, 100 * loop_ms / ms);
    };
    report("cublas bf16 dense (ceil)", "bf16", dense_ms);
    if (group_ms > 0) report("cublas bf16 grouped (ceil)", "bf16", group_ms);
    report("cublas bf16 expert loop", "bf16", loop_ms);
    const auto sl = [&](int i) { return size_t(i) * P; };
    const double nb = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::moe_prefill_experts(xb, T, idx + sl(i), wts + sl(i), K, w1.w, w3.w, w2.w,
                                             10.0f, ws, ws_new, yb, st));
        },
        calls, 20, s);
    report("moe_prefill", "bf16", nb);
    const double nf = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::moe_prefill_experts(xf, T, idx + sl(i), wts + sl(i), K, w1.w, w3.w, w2.w,
                                             10.0f, ws, ws_new, yf, st));
        },
        calls, 20, s);
    report("moe_prefill", "f32", nf);
    const double ob = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx + sl(i), wts + sl(i), K, w1.w,
                                                      w3.w, w2.w, 10.0f, ws, ws_new, yb, st));
        },
        calls, 20, s);
    report("moe_prefill_official", "bf16", ob);
    // The wgmma core on the same data; first an eager call of each instantiation (its one-time
    // shared-memory attribute stays out of the capture) and an output comparison with mma.sync.
    using dsv4::cuda::moe_prefill_core;
    const auto wg_bf16 = [&](int i, cudaStream_t st, moe_prefill_core core) {
      CK(dsv4::cuda::moe_prefill_experts(xb, T, idx + sl(i), wts + sl(i), K, w1.w, w3.w, w2.w,
                                         10.0f, ws, ws_new, yb, st, core));
    };
    CK(dsv4::cuda::moe_prefill_experts(xf, T, idx, wts, K, w1.w, w3.w, w2.w, 10.0f, ws, ws_new, yf,
                                       s, moe_prefill_core::wgmma));
    CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx, wts, K, w1.w, w3.w, w2.w, 10.0f, ws,
                                                ws_new, yb, s, moe_prefill_core::wgmma));
    // Same routing and data through the cores (bf16 x, exact and official order): the k order
    // of the sums is the same, so the outputs should agree bit for bit. wgmma_cp: the
    // cp.async-staged variant (not yet GPU-verified).
    for (bool official : {false, true}) {
      const moe_prefill_core cores[] = {moe_prefill_core::mma_sync, moe_prefill_core::wgmma,
                                        moe_prefill_core::wgmma_cp};
      std::vector<__nv_bfloat16> ys[3];
      const int ncores = g_prefill_cp ? 3 : 2;
      for (int ci = 0; ci < ncores; ++ci) {
        ys[ci].resize(size_t(T * D));
        CK(cudaMemsetAsync(yb, 0xFF, size_t(T * D) * 2, s));  // NaN: unwritten shows
        if (official)
          CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx, wts, K, w1.w, w3.w, w2.w, 10.0f,
                                                      ws, ws_new, yb, s, cores[ci]));
        else
          wg_bf16(0, s, cores[ci]);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(ys[ci].data(), yb, ys[ci].size() * 2, cudaMemcpyDeviceToHost));
      }
      for (int ci = 1; ci < ncores; ++ci) {
        const std::vector<__nv_bfloat16>&ya = ys[0], &yw = ys[ci];
        double num = 0, den = 0;
        size_t differ = 0, nan = 0;
        for (size_t j = 0; j < ya.size(); ++j) {
          const double a = __bfloat162float(ya[j]), b = __bfloat162float(yw[j]);
          if (std::isnan(a) || std::isnan(b)) {
            ++nan;
            continue;
          }
          differ += a != b;
          num += (a - b) * (a - b);
          den += a * a;
        }
        std::printf(
            "%-6s %-6s   %s vs mma.sync y (bf16 x, %s, T=%lld): nmse %.2e, %zu of %zu differ, "
            "%zu NaN, rms(y) %.3g\n",
            sh.name, kname, ci == 1 ? "wgmma" : "wgmma_cp", official ? "official" : "exact",
            (long long)T, den > 0 ? num / den : num, differ, ya.size(), nan,
            std::sqrt(den / double(ya.size())));
      }
    }
    const double wb = time_prefill_per_call(
        [&](int i, cudaStream_t st) { wg_bf16(i, st, moe_prefill_core::wgmma); }, calls, 20, s);
    report("moe_prefill wgmma", "bf16", wb);
    const double wf = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::moe_prefill_experts(xf, T, idx + sl(i), wts + sl(i), K, w1.w, w3.w, w2.w,
                                             10.0f, ws, ws_new, yf, st, moe_prefill_core::wgmma));
        },
        calls, 20, s);
    report("moe_prefill wgmma", "f32", wf);
    const double wo = time_prefill_per_call(
        [&](int i, cudaStream_t st) {
          CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx + sl(i), wts + sl(i), K, w1.w,
                                                      w3.w, w2.w, 10.0f, ws, ws_new, yb, st,
                                                      moe_prefill_core::wgmma));
        },
        calls, 20, s);
    report("moe_prefill_official wgmma", "bf16", wo);
    {  // The repacked layout (what the engine loads with bf16 activations on compute capability
       // 9.0): the whole pool repacked on the device; outputs compared with the checkpoint
       // layout's (meant to be bit-identical), then timed.
      const device_repacked r1(w1), r3(w3), r2(w2);
      const auto rp_call = [&](int i, cudaStream_t st, bool official) {
        if (official)
          CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx + sl(i), wts + sl(i), K, r1.w,
                                                      r3.w, r2.w, 10.0f, ws, ws_new, yb, st));
        else
          CK(dsv4::cuda::moe_prefill_experts(xb, T, idx + sl(i), wts + sl(i), K, r1.w, r3.w, r2.w,
                                             10.0f, ws, ws_new, yb, st));
      };
      for (bool official : {false, true}) {
        std::vector<uint16_t> ya(size_t(T * D)), yr(size_t(T * D));
        CK(cudaMemsetAsync(yb, 0xFF, ya.size() * 2, s));
        if (official)
          CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx, wts, K, w1.w, w3.w, w2.w, 10.0f,
                                                      ws, ws_new, yb, s, moe_prefill_core::wgmma));
        else
          wg_bf16(0, s, moe_prefill_core::wgmma);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(ya.data(), yb, ya.size() * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemsetAsync(yb, 0xFF, yr.size() * 2, s));
        rp_call(0, s, official);
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(yr.data(), yb, yr.size() * 2, cudaMemcpyDeviceToHost));
        size_t differ = 0, unwritten = 0;
        for (size_t j = 0; j < ya.size(); ++j) {
          differ += ya[j] != yr[j];
          unwritten += yr[j] == 0xFFFF;
        }
        std::printf(
            "%-6s %-6s   repacked vs checkpoint wgmma y (bf16 x, %s, T=%lld): %zu of %zu "
            "differ, %zu unwritten\n",
            sh.name, kname, official ? "official" : "exact", (long long)T, differ, ya.size(),
            unwritten);
      }
      const double rb = time_prefill_per_call(
          [&](int i, cudaStream_t st) { rp_call(i, st, false); }, calls, 20, s);
      report("moe_prefill wgmma repacked", "bf16", rb);
      const double ro = time_prefill_per_call([&](int i, cudaStream_t st) { rp_call(i, st, true); },
                                              calls, 20, s);
      report("moe_prefill_official wgmma rp", "bf16", ro);
      std::printf(
          "%-6s %-6s   repacked vs checkpoint (wgmma, bf16, T=%lld): exact %.3fx, "
          "official %.3fx\n",
          sh.name, kname, (long long)T, wb / rb, wo / ro);
    }
    if (g_prefill_cp) {
      const double cb = time_prefill_per_call(
          [&](int i, cudaStream_t st) { wg_bf16(i, st, moe_prefill_core::wgmma_cp); }, calls, 20,
          s);
      report("moe_prefill wgmma_cp", "bf16", cb);
      const double co = time_prefill_per_call(
          [&](int i, cudaStream_t st) {
            CK(dsv4::cuda::moe_prefill_experts_official(xb, T, idx + sl(i), wts + sl(i), K, w1.w,
                                                        w3.w, w2.w, 10.0f, ws, ws_new, yb, st,
                                                        moe_prefill_core::wgmma_cp));
          },
          calls, 20, s);
      report("moe_prefill_official wgmma_cp", "bf16", co);
    }
    std::printf("%-6s %-6s   speed-up wgmma vs mma.sync (bf16 x, T=%lld) %.2fx\n", sh.name, kname,
                (long long)T, nb / wb);
    if (T == 1024 && !g_prefill_quick) {
      const double old_ms = time_prefill_per_call(
          [&](int i, cudaStream_t st) {
            CK(dsv4::cuda::moe_experts<__nv_bfloat16>(xb, T, idx + sl(i), wts + sl(i), K, w1.w,
                                                      w3.w, w2.w, 10.0f, ws, ws_old, yb, st));
          },
          1, 3, s);
      report("moe_experts (old)", "bf16", old_ms);
      std::printf("%-6s %-6s   speed-up moe_prefill(bf16) vs old %.2fx\n", sh.name, kname,
                  old_ms / nb);
    }
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(ws));
  }
  CK(cudaFree(bf));
}

void bench_prefill_section(cudaStream_t s, cublasHandle_t h) {
  std::printf(
      "\n## routed MoE prefill (graph of 4 calls, fresh routing each, median replay; weights "
      "past L2; TFLOP/s = 2*T*top_k*3*D*I / time; %%dense / %%group / %%loop = cuBLAS "
      "BF16 dense-GEMM / grouped-GEMM / per-expert-loop time over this time)\n");
  std::printf("%-6s %-6s %-29s %-5s %5s %10s %8s %9s %9s %9s\n", "model", "format", "kernel", "act",
              "T", "us", "TFLOP/s", "%dense", "%group", "%loop");
  const moe_shape flash{"flash", 4096, 2048, 256, 6}, pro{"pro", 7168, 3072, 384, 6};
  for (const moe_shape& sh : {flash, pro}) {
    if (g_prefill_flash && std::string(sh.name) != "flash") continue;
    for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4}) bench_moe_prefill(sh, k, s, h);
  }
}

// --prefill-ws: the warp-specialized W4A16 core (moe_prefill_core::wgmma_ws; with session 13's
// producer and with the B-rows-in-registers one, forced by moe_prefill_set_ws_producer) against the
// wgmma core, bf16 x, exact and official order, checkpoint and repacked layouts (the engine's), at
// Flash T = 256 / 1024 / 4096 / 8192 and Pro T = 4096 (both formats), with the cuBLAS BF16 dense
// ceiling of the same FLOPs measured in the same run; outputs compared bit for bit with the wgmma
// core's.
// --ws-profile: instead, one eager exact-order wgmma_ws call on repacked weights at Flash MXFP4
// T = 4096, for ncu.
bool g_ws_profile = false;
// --ws-t LIST: Flash's token counts (default 256, 1024, 4096, 8192).
std::vector<int64_t> g_ws_flash_t = {256, 1024, 4096, 8192};
// --ws-epis M0,M1,..: instead of the producer variants, wgmma_ws with each epilogue
// (moe_prefill_set_ws_epilogue; the first one the baseline), repacked layout only, each compared
// bit for bit with the wgmma core and timed in three alternating passes.
std::vector<int64_t> g_ws_epis;

// --ws-wides M0,M1,..: as --ws-epis for the wide kernel (moe_prefill_set_ws_wide: 0 off, 1 on,
// -1 automatic; the first one the baseline).
std::vector<int64_t> g_ws_wides;

// Each mode of `modes` set by `set` (label `tag`), compared bit for bit with the wgmma core and
// timed in three alternating passes; `reset` restores the default.
void bench_ws_modes(
    const moe_shape& sh, const char* kname, int64_t T,
    const std::function<void(int, cudaStream_t, bool, bool, dsv4::cuda::moe_prefill_core)>& call,
    const std::function<void(const char*, double)>& report, const __nv_bfloat16* yb, cudaStream_t s,
    const std::vector<int64_t>& modes, void (*set)(int), const char* tag, int reset) {
  using dsv4::cuda::moe_prefill_core;
  const int64_t D = sh.hidden;
  const size_t nl = modes.size();
  for (bool official : {false, true}) {
    std::vector<uint16_t> ref(size_t(T * D)), y(size_t(T * D));
    const auto run_one = [&](moe_prefill_core core, std::vector<uint16_t>& out) {
      CK(cudaMemsetAsync(const_cast<__nv_bfloat16*>(yb), 0xFF, out.size() * 2, s));
      call(0, s, true, official, core);
      CK(cudaStreamSynchronize(s));
      CK(cudaMemcpy(out.data(), yb, out.size() * 2, cudaMemcpyDeviceToHost));
    };
    run_one(moe_prefill_core::wgmma, ref);
    for (size_t li = 0; li < nl; ++li) {
      set(int(modes[li]));
      run_one(moe_prefill_core::wgmma_ws, y);
      size_t differ = 0, unwritten = 0;
      for (size_t j = 0; j < ref.size(); ++j) {
        differ += ref[j] != y[j];
        unwritten += y[j] == 0xFFFF;
      }
      std::printf(
          "%-6s %-6s   T=%lld repacked %s: wgmma_ws %s%lld vs wgmma y: %zu of %zu differ, "
          "%zu unwritten\n",
          sh.name, kname, (long long)T, official ? "official" : "exact", tag, (long long)modes[li],
          differ, ref.size(), unwritten);
    }
    std::vector<double> ms(3 * nl);
    for (int pass = 0; pass < 3; ++pass)
      for (size_t li = 0; li < nl; ++li) {
        set(int(modes[li]));
        ms[pass * nl + li] = time_prefill_per_call(
            [&](int i, cudaStream_t st) {
              call(i, st, true, official, moe_prefill_core::wgmma_ws);
            },
            4, 20, s);
        char name[64];
        std::snprintf(name, sizeof name, "%swgmma_ws %s%lld rp p%d", official ? "official " : "",
                      tag, (long long)modes[li], pass + 1);
        report(name, ms[pass * nl + li]);
      }
    for (size_t li = 1; li < nl; ++li)
      std::printf(
          "%-6s %-6s   T=%lld repacked %s: %s%lld speed-up over %s%lld p1 %.3fx p2 %.3fx p3 "
          "%.3fx\n",
          sh.name, kname, (long long)T, official ? "official" : "exact", tag, (long long)modes[li],
          tag, (long long)modes[0], ms[0] / ms[li], ms[nl] / ms[nl + li],
          ms[2 * nl] / ms[2 * nl + li]);
  }
  set(reset);
}

void bench_prefill_ws_case(const moe_shape& sh, weight_kind kind, const std::vector<int64_t>& ts,
                           cudaStream_t s, cublasHandle_t h) {
  const int64_t D = sh.hidden, I = sh.inter, E = sh.experts, K = sh.top_k;
  stacked w1(kind, I, D, E, 500), w3(kind, I, D, E, 600), w2(kind, D, I, E, 700);
  const device_repacked r1(w1), r3(w3), r2(w2);
  const size_t bf_expert = size_t(3) * I * D * 2;
  const int64_t bf_pool = std::min<int64_t>(E, std::max<int64_t>(8, (1536ull << 20) / bf_expert));
  void* bf;
  CK(cudaMalloc(&bf, bf_expert * bf_pool));
  fill(bf, bf_expert * bf_pool, 800, 3);
  std::mt19937_64 rng(4321);
  const char* kname = kind == weight_kind::mxfp4 ? "mxfp4" : "nvfp4";
  constexpr int calls = 4;
  using dsv4::cuda::moe_prefill_core;
  for (int64_t T : ts) {
    const int64_t P = T * K;
    std::vector<int32_t> routes;
    draw_routes(rng, calls * T, E, K, routes);
    const moe_step_inputs in(routes, T, D, rng);
    const size_t ws_bytes = dsv4::cuda::moe_prefill_workspace_bytes(T, K, E, D, I);
    void* ws;
    CK(cudaMalloc(&ws, ws_bytes));
    const double flops = 2.0 * double(P) * 3.0 * double(D) * double(I);
    void *db, *dc;
    CK(cudaMalloc(&db, size_t(P) * std::max(D, I) * 2));
    CK(cudaMalloc(&dc, size_t(P) * std::max(D, I) * 4));
    fill(db, size_t(P) * std::max(D, I) * 2, 900, 3);
    const double dense_ms = g_ws_profile
                                ? 1.0
                                : time_prefill_per_call(
                                      [&](int i, cudaStream_t st) {
                                        CB(cublasSetStream(h, st));
                                        const uint8_t* base = static_cast<const uint8_t*>(bf) +
                                                              size_t(i % bf_pool) * bf_expert;
                                        dense_bf16_expert_gemms(h, base, P, D, I, db, dc);
                                      },
                                      calls, 10, s);
    const auto report = [&](const char* kernel, double ms) {
      std::printf("%-6s %-6s %-30s %5lld %10.1f %8.1f %8.1f%%\n", sh.name, kname, kernel,
                  (long long)T, ms * 1e3, flops / (ms * 1e-3) / 1e12, 100 * dense_ms / ms);
    };
    report("cublas bf16 dense (ceil)", dense_ms);
    const auto sl = [&](int i) { return size_t(i) * P; };
    const auto call = [&](int i, cudaStream_t st, bool rp, bool official, moe_prefill_core core) {
      const device_weight &a = rp ? r1.w : w1.w, &b = rp ? r3.w : w3.w, &c = rp ? r2.w : w2.w;
      if (official)
        CK(dsv4::cuda::moe_prefill_experts_official(in.xb, T, in.idx + sl(i), in.wts + sl(i), K, a,
                                                    b, c, 10.0f, ws, ws_bytes, in.yb, st, core));
      else
        CK(dsv4::cuda::moe_prefill_experts(in.xb, T, in.idx + sl(i), in.wts + sl(i), K, a, b, c,
                                           10.0f, ws, ws_bytes, in.yb, st, core));
    };
    if (!g_ws_epis.empty() || !g_ws_wides.empty()) {
      if (!g_ws_epis.empty())
        bench_ws_modes(sh, kname, T, call, report, in.yb, s, g_ws_epis,
                       dsv4::cuda::moe_prefill_set_ws_epilogue, "epi", 4);
      if (!g_ws_wides.empty())
        bench_ws_modes(sh, kname, T, call, report, in.yb, s, g_ws_wides,
                       dsv4::cuda::moe_prefill_set_ws_wide, "wide", -1);
      CK(cudaFree(db));
      CK(cudaFree(dc));
      CK(cudaFree(ws));
      continue;
    }
    if (g_ws_profile) {
      call(0, s, true, false, moe_prefill_core::wgmma_ws);
      CK(cudaStreamSynchronize(s));
      CK(cudaFree(db));
      CK(cudaFree(dc));
      CK(cudaFree(ws));
      continue;
    }
    // Variants: the wgmma core, then wgmma_ws with session 13's producer and with the default one
    // (moe_prefill_set_ws_producer), compared bit for bit with the first on both
    // layouts, timed on the repacked layout (the engine's).
    struct variant {
      moe_prefill_core core;
      int producer;
      const char* name;
    };
    const variant vs[3] = {{moe_prefill_core::wgmma, 1, "wgmma"},
                           {moe_prefill_core::wgmma_ws, 0, "wgmma_ws s13"},
                           {moe_prefill_core::wgmma_ws, 1, "wgmma_ws"}};
    for (bool rp : {false, true}) {
      for (bool official : {false, true}) {
        std::vector<uint16_t> ys[3];
        for (int ci = 0; ci < 3; ++ci) {
          dsv4::cuda::moe_prefill_set_ws_producer(vs[ci].producer);
          ys[ci].resize(size_t(T * D));
          CK(cudaMemsetAsync(in.yb, 0xFF, ys[ci].size() * 2, s));
          call(0, s, rp, official, vs[ci].core);
          CK(cudaStreamSynchronize(s));
          CK(cudaMemcpy(ys[ci].data(), in.yb, ys[ci].size() * 2, cudaMemcpyDeviceToHost));
        }
        for (int ci = 1; ci < 3; ++ci) {
          size_t differ = 0, unwritten = 0;
          for (size_t j = 0; j < ys[0].size(); ++j) {
            differ += ys[0][j] != ys[ci][j];
            unwritten += ys[ci][j] == 0xFFFF;
          }
          std::printf("%-6s %-6s   T=%lld %s %s: %s vs wgmma y: %zu of %zu differ, %zu unwritten\n",
                      sh.name, kname, (long long)T, rp ? "repacked" : "checkpoint",
                      official ? "official" : "exact", vs[ci].name, differ, ys[0].size(),
                      unwritten);
        }
        if (!rp) continue;
        double ms[3];
        for (int ci = 0; ci < 3; ++ci) {
          dsv4::cuda::moe_prefill_set_ws_producer(vs[ci].producer);
          ms[ci] = time_prefill_per_call(
              [&](int i, cudaStream_t st) { call(i, st, rp, official, vs[ci].core); }, calls, 20,
              s);
        }
        char name[64];
        for (int ci = 0; ci < 3; ++ci) {
          std::snprintf(name, sizeof name, "%s%s rp", official ? "official " : "", vs[ci].name);
          report(name, ms[ci]);
        }
        std::printf(
            "%-6s %-6s   T=%lld repacked %s: wgmma_ws speed-up over wgmma %.3fx, over wgmma_ws s13 "
            "%.3fx\n",
            sh.name, kname, (long long)T, official ? "official" : "exact", ms[0] / ms[2],
            ms[1] / ms[2]);
      }
    }
    dsv4::cuda::moe_prefill_set_ws_producer(-1);
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(ws));
  }
  CK(cudaFree(bf));
}

void bench_prefill_ws_section(cudaStream_t s, cublasHandle_t h) {
  std::printf(
      "\n## routed MoE prefill, wgmma_ws vs wgmma (graph of 4 calls, fresh routing each, median "
      "replay; bf16 x; TFLOP/s = 2*T*top_k*3*D*I / time; %%dense = cuBLAS BF16 dense-GEMM time "
      "of the same FLOPs over this time)\n");
  std::printf("%-6s %-6s %-30s %5s %10s %8s %9s\n", "model", "format", "kernel", "T", "us",
              "TFLOP/s", "%dense");
  const moe_shape flash{"flash", 4096, 2048, 256, 6}, pro{"pro", 7168, 3072, 384, 6};
  if (g_ws_profile) {
    bench_prefill_ws_case(flash, weight_kind::mxfp4, {4096}, s, h);
    return;
  }
  for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4}) {
    if (!listed(g_formats, k == weight_kind::mxfp4 ? "mxfp4" : "nvfp4")) continue;
    if (listed(g_shapes, "flash")) bench_prefill_ws_case(flash, k, g_ws_flash_t, s, h);
    if (listed(g_shapes, "pro")) bench_prefill_ws_case(pro, k, {4096}, s, h);
  }
}

// ---- W4A8 prefill (moe_prefill_core::w4a8) ----
// --prefill-w4a8: the official-order prefill of MXFP4 experts, W4A8 core against the W4A16
// wgmma core (same official semantics) and two dense ceilings of the same FLOPs measured in the
// same run: cuBLAS BF16 (bf16 in, f32 out) and cuBLASLt FP8 (e4m3 x e4m3, f32 accumulate, BF16
// out, per-tensor scales). x is FP8 fake-quantized first (as the official forward feeds it), so
// both cores compute the same values; their outputs are compared (NMSE) as a sanity check.
double nmse_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, size_t n) {
  std::vector<__nv_bfloat16> ha(n), hb(n);
  CK(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = __bfloat162float(ha[i]), y = __bfloat162float(hb[i]);
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? num / den : num;
}

// Token counts of the W4A8 section: --w4a8-flash-t / --w4a8-pro-t (comma-separated; empty: skip).
std::vector<int64_t> g_w4a8_flash_t = {1024, 4096, 8192}, g_w4a8_pro_t = {4096};
// --w4a8-profile: one call of each core at Flash's first token count, no timing (for ncu).
bool g_w4a8_profile = false;
// --w4a8-batched M: the FP8 ceilings at the experts' shapes (time_fp8_batched_ceiling); 0 none,
// 1 per-tensor scales only, 2 (default) also 128-block scales.
int g_w4a8_batched = 2;

// --w4a8-ab (PREFILL20): per shape and T of the W4A8 section, its dense ceilings, then the
// official call of the W4A8 ws core, the engine's W4A16 path (repacked weights, automatic core)
// and the W4A8 pipelined core under each moe_prefill_set_nongemm_old value of --ab-old (default
// 15,0; bits in moe_prefill.h: 15 = session 19's non-GEMM kernels, 0 = PREFILL20's), --ab-passes
// passes (default 2, every other one in reverse order); y of call 0 under each value compared
// byte for byte with the first value's; then a stage breakdown (each kernel in turn replaced by an
// empty one) of the three paths under the first value and 0 (--ab-breakdown-new: under 0 only).
bool g_w4a8_ab = false;
std::vector<int64_t> g_ab_old = {15, 0};
int g_ab_passes = 2;
bool g_ab_breakdown_new = false;

// --fp8-check (PREFILL20): moe_prefill_fp8.cuh's rounding against quant::e4m3_round over all 2^32
// f32 inputs v, for s = 2^k (k in the list below): the E4M3 byte cvt(v * (1 / s)) vs
// cvt(e4m3_round(v / s)) (W4A8 bytes), BF16(e4m3(v * (1 / s)) * s) vs BF16(e4m3_round(v / s) * s)
// (W4A16 h'), and the byte of BF16-rounded-to-odd v vs the f32 v's; plus the block scale of
// the rounded-to-odd amax against the f32 amax's over all 2^31 non-negative inputs.
__global__ void fp8_check_kernel(int k, unsigned long long* bad) {
  const float s = __uint_as_float(uint32_t(k + 127) << 23);
  const float r = __fdiv_rn(1.0f, s);
  unsigned long long b0 = 0, b1 = 0, b2 = 0, b3 = 0;
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += uint64_t(gridDim.x) * blockDim.x) {
    const float v = __uint_as_float(uint32_t(i));
    const float ref = dsv4::cuda::quant::e4m3_round(__fdiv_rn(v, s));
    const uint32_t old_byte = __nv_cvt_float_to_fp8(ref, __NV_SATFINITE, __NV_E4M3);
    const uint32_t new_bits = dsv4::cuda::prefill::e4m3x2_bits(__fmul_rn(v, r), 0.0f);
    b0 += old_byte != (new_bits & 0xFFu);
    const __nv_bfloat16 oh = __float2bfloat16_rn(__fmul_rn(ref, s));
    const __nv_bfloat16 nh =
        __float2bfloat16_rn(__fmul_rn(dsv4::cuda::prefill::e4m3x2_values(new_bits).x, s));
    b1 += *reinterpret_cast<const uint16_t*>(&oh) != *reinterpret_cast<const uint16_t*>(&nh);
    const float ro = __uint_as_float(uint32_t(dsv4::cuda::prefill::bf16_round_odd(v)) << 16);
    b2 += old_byte != (dsv4::cuda::prefill::e4m3x2_bits(__fmul_rn(ro, r), 0.0f) & 0xFFu);
    if (k == 0 && i < (1ull << 31)) {  // non-negative amax
      const float a = __uint_as_float(uint32_t(i));
      const float sa = dsv4::cuda::prefill::fp8_block_scale(a);
      const float sb = dsv4::cuda::prefill::fp8_block_scale(ro);
      b3 += !(isnan(a) || __float_as_uint(sa) == __float_as_uint(sb));
    }
  }
  atomicAdd(bad + 0, b0);
  atomicAdd(bad + 1, b1);
  atomicAdd(bad + 2, b2);
  atomicAdd(bad + 3, b3);
}

void fp8_check() {
  unsigned long long* bad;
  CK(cudaMalloc(&bad, 4 * sizeof(unsigned long long)));
  for (int k : {0, -126, -22, -10, -3, 5, 20, 120, 127}) {
    CK(cudaMemset(bad, 0, 4 * sizeof(unsigned long long)));
    fp8_check_kernel<<<132 * 16, 256>>>(k, bad);
    CK(cudaDeviceSynchronize());
    unsigned long long h[4];
    CK(cudaMemcpy(h, bad, sizeof(h), cudaMemcpyDeviceToHost));
    std::printf(
        "fp8-check s = 2^%d: over 2^32 inputs, E4M3 byte differs %llu, BF16 h' differs %llu, "
        "byte of round-to-odd BF16 differs %llu; scale of round-to-odd amax differs %llu%s\n",
        k, h[0], h[1], h[2], h[3], k == 0 ? " (of 2^31)" : " (not checked)");
  }
  CK(cudaFree(bad));
}

std::vector<int64_t> parse_list(const std::string& list) {
  std::vector<int64_t> v;
  for (std::string t = list; !t.empty();) {
    const size_t comma = t.find(',');
    v.push_back(std::atoll(t.substr(0, comma).c_str()));
    t = comma == std::string::npos ? "" : t.substr(comma + 1);
  }
  return v;
}

// One cuBLASLt FP8 GEMM of the W4A8 section's ceilings: y[M, n] (BF16) = A[M, Kd] (E4M3, rows of
// Kd bytes) x B[n, Kd] (E4M3), f32 accumulate; `batch` problems strided by a_stride / n * Kd /
// M * n elements; with scales (sw, sx) the 128-block modes (BLK128x128 weights, VEC128
// activations), else per-tensor. The heuristic's first algorithm that runs on (a, b, y) is kept,
// probed outside any capture; `why` says where it stopped.
struct lt_fp8_gemm {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ok = false;
  std::string why;
};

void destroy_lt_fp8_gemm(lt_fp8_gemm& g) {
  if (g.lc) cublasLtMatrixLayoutDestroy(g.lc);
  if (g.lb) cublasLtMatrixLayoutDestroy(g.lb);
  if (g.la) cublasLtMatrixLayoutDestroy(g.la);
  if (g.op) cublasLtMatmulDescDestroy(g.op);
  g = lt_fp8_gemm{};
}

lt_fp8_gemm make_lt_fp8_gemm(cublasLtHandle_t lt, int64_t M, int64_t Kd, int64_t n, int32_t batch,
                             int64_t a_stride, const float* sw, const float* sx, const void* a,
                             const void* b, void* y, void* ws, size_t ws_bytes, cudaStream_t s) {
  lt_fp8_gemm g;
  CB(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CB(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CB(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (sw && sx) {
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    if (cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                       sizeof(a_mode)) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                       sizeof(b_mode)) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sw,
                                       sizeof(sw)) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sx,
                                       sizeof(sx)) != CUBLAS_STATUS_SUCCESS) {
      g.why = "scale attributes refused";
      return g;
    }
  }
  CB(cublasLtMatrixLayoutCreate(&g.la, CUDA_R_8F_E4M3, Kd, M, Kd));
  CB(cublasLtMatrixLayoutCreate(&g.lb, CUDA_R_8F_E4M3, Kd, n, Kd));
  CB(cublasLtMatrixLayoutCreate(&g.lc, CUDA_R_16BF, M, n, M));
  if (batch > 1) {
    const int64_t sb = n * Kd, sc = M * n;
    for (auto [l, st] : {std::pair{g.la, a_stride}, std::pair{g.lb, sb}, std::pair{g.lc, sc}}) {
      CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                          sizeof(batch)));
      CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st,
                                          sizeof(st)));
    }
  }
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                          sizeof(ws_bytes)));
  cublasLtMatmulHeuristicResult_t heur[8];
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.la, g.lb, g.lc, g.lc, pref, 8, heur, &found);
  g.why =
      "heuristic status " + std::to_string(int(hs)) + ", " + std::to_string(found) + " algorithms";
  const float one = 1.0f, zero = 0.0f;
  for (int k = 0; hs == CUBLAS_STATUS_SUCCESS && k < found && !g.ok; ++k) {
    const cublasStatus_t st0 = cublasLtMatmul(lt, g.op, &one, a, g.la, b, g.lb, &zero, y, g.lc, y,
                                              g.lc, &heur[k].algo, ws, ws_bytes, s);
    if (st0 != CUBLAS_STATUS_SUCCESS || cudaStreamSynchronize(s) != cudaSuccess) {
      g.why += ", matmul status " + std::to_string(int(st0));
      continue;
    }
    g.algo = heur[k].algo;
    g.ok = true;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  return g;
}

// The FP8 ceiling at the routed experts' own shapes (session 36): cuBLASLt's strided-batched FP8
// matmul over E experts of n = P / E tokens each (the mean of the routed counts; real routings
// are ragged, so this is the kinder problem), per call one batched GEMM for L1 (each expert's W1
// and W3 stacked as one [2I, D] matrix: the same FLOPs in half the launches) and one for L2
// ([D, I]); E4M3 in, f32 accumulate, BF16 out. block = false: per-tensor scales (no promotion);
// block = true: the official FP8 numerics' scaling, weights per 128 x 128 and activations per
// token and 128 k (CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F / VEC128_32F), batched when
// cuBLASLt offers it, else one launch per expert and GEMM (*per_expert_loop = true). The weights
// are E * 3 * I * D bytes (Flash 6.4 GB, Pro 25.4 GB), far past L2, random E4M3 bytes. Median ms
// per call (graph of `calls` calls); -1 when no algorithm runs.
double time_fp8_batched_ceiling(cublasLtHandle_t lt, cudaStream_t s, int64_t E, int64_t D,
                                int64_t I, int64_t n, bool block, int calls,
                                bool* per_expert_loop = nullptr) {
  const size_t w_expert = size_t(3) * I * D;
  void *w, *x, *y, *lt_ws;
  float *sw = nullptr, *sx = nullptr;
  const size_t lt_bytes = size_t(64) << 20;
  CK(cudaMalloc(&w, w_expert * E));
  CK(cudaMalloc(&x, size_t(E) * n * std::max(D, I)));
  CK(cudaMalloc(&y, size_t(E) * n * std::max(2 * I, D) * 2));
  CK(cudaMalloc(&lt_ws, lt_bytes));
  fill(w, w_expert * E, 1100, 4);
  fill(x, size_t(E) * n * std::max(D, I), 1101, 4);
  if (block) {  // generous: every batch's scale tensors, contiguous, with room to spare
    const size_t sw_n = size_t(E) * (3 * I / 128 + 2) * (std::max(D, I) / 128 + 2);
    const size_t sx_n = size_t(E) * (n + 16) * (std::max(D, I) / 128 + 2);
    CK(cudaMalloc(&sw, sw_n * 4));
    CK(cudaMalloc(&sx, sx_n * 4));
    std::vector<float> ones(std::max(sw_n, sx_n), 0.0078125f);  // 2^-7: finite BF16 outputs
    CK(cudaMemcpy(sw, ones.data(), sw_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sx, ones.data(), sx_n * 4, cudaMemcpyHostToDevice));
  }
  const float one = 1.0f, zero = 0.0f;
  const auto make = [&](int64_t M, int64_t Kd, int32_t batch) {
    const void* a = M == 2 * I ? w : static_cast<const uint8_t*>(w) + size_t(2) * I * D;
    return make_lt_fp8_gemm(lt, M, Kd, n, batch, int64_t(w_expert), sw, sx, a, x, y, lt_ws,
                            lt_bytes, s);
  };
  lt_fp8_gemm g1 = make(2 * I, D, int32_t(E)), g2 = make(D, I, int32_t(E));
  // cuBLASLt (CUDA 13) answers the batched block-scaled problem with CUBLAS_STATUS_NOT_SUPPORTED
  // (session 36, l36f); it then runs as a loop of one launch per expert and GEMM (the issue's
  // naive per-expert baseline, with the official scaling).
  bool loop = false;
  if (block && !(g1.ok && g2.ok)) {
    lt_fp8_gemm e1 = make(2 * I, D, 1), e2 = make(D, I, 1);
    std::printf(
        "  block-scaled batched: L1 %s (%s), L2 %s (%s); one expert: L1 %s (%s), L2 %s (%s)\n",
        g1.ok ? "ok" : "no", g1.why.c_str(), g2.ok ? "ok" : "no", g2.why.c_str(),
        e1.ok ? "ok" : "no", e1.why.c_str(), e2.ok ? "ok" : "no", e2.why.c_str());
    destroy_lt_fp8_gemm(g1);
    destroy_lt_fp8_gemm(g2);
    g1 = e1, g2 = e2, loop = true;
  }
  if (per_expert_loop) *per_expert_loop = loop;
  double ms = -1;
  const uint8_t* w8 = static_cast<const uint8_t*>(w);
  const uint8_t* x8 = static_cast<const uint8_t*>(x);
  auto* y16 = static_cast<__nv_bfloat16*>(y);
  if (g1.ok && g2.ok)
    ms = time_prefill_per_call(
        [&](int, cudaStream_t st) {
          for (int64_t e = 0; e < (loop ? E : 1); ++e) {
            CB(cublasLtMatmul(lt, g1.op, &one, w8 + size_t(e) * w_expert, g1.la,
                              x8 + size_t(e) * n * D, g1.lb, &zero, y16 + size_t(e) * 2 * I * n,
                              g1.lc, y16 + size_t(e) * 2 * I * n, g1.lc, &g1.algo, lt_ws, lt_bytes,
                              st));
            CB(cublasLtMatmul(lt, g2.op, &one, w8 + size_t(e) * w_expert + size_t(2) * I * D, g2.la,
                              x8 + size_t(e) * n * I, g2.lb, &zero, y16 + size_t(e) * D * n, g2.lc,
                              y16 + size_t(e) * D * n, g2.lc, &g2.algo, lt_ws, lt_bytes, st));
          }
        },
        calls, 10, s);
  destroy_lt_fp8_gemm(g1);
  destroy_lt_fp8_gemm(g2);
  CK(cudaGetLastError());
  CK(cudaFree(w));
  CK(cudaFree(x));
  CK(cudaFree(y));
  CK(cudaFree(lt_ws));
  if (sw) CK(cudaFree(sw));
  if (sx) CK(cudaFree(sx));
  return ms;
}

void bench_w4a8_shape(const moe_shape& sh, cudaStream_t s, cublasHandle_t h, cublasLtHandle_t lt,
                      const std::vector<int64_t>& token_counts, double read_gbps) {
  const int64_t D = sh.hidden, I = sh.inter, E = sh.experts, K = sh.top_k;
  const weight_kind kind = weight_kind::mxfp4;
  stacked w1(kind, I, D, E, 500), w3(kind, I, D, E, 600), w2(kind, D, I, E, 700);
  // Dense ceiling weights, rotated past L2: bf16 and e4m3 copies of [I, D] x 2 and [D, I].
  constexpr int pool = 4;
  const size_t bf_expert = size_t(3) * I * D * 2, f8_expert = size_t(3) * I * D;
  void *bf, *f8;
  CK(cudaMalloc(&bf, bf_expert * pool));
  CK(cudaMalloc(&f8, f8_expert * pool));
  fill(bf, bf_expert * pool, 800, 3);
  fill(f8, f8_expert * pool, 801, 4);
  size_t lt_bytes = size_t(64) << 20;
  void* lt_ws;
  CK(cudaMalloc(&lt_ws, lt_bytes));
  std::mt19937_64 rng(4321);
  constexpr int calls = 4;
  for (int64_t T : token_counts) {
    const int64_t P = T * K;
    std::vector<int32_t> routes;
    draw_routes(rng, calls * T, E, K, routes);
    const moe_step_inputs in(routes, calls * T, D, rng);  // x per call: a fresh token block
    CK(dsv4::cuda::fake_quant_fp8_rows(in.xb, D, nullptr, 0, calls * T, D, 128, s));
    const size_t ws_bytes = dsv4::cuda::moe_prefill_workspace_bytes(T, K, E, D, I);
    void* ws;
    CK(cudaMalloc(&ws, ws_bytes));
    const double flops = 2.0 * double(P) * 3.0 * double(D) * double(I);
    void *db, *dq, *dc;
    CK(cudaMalloc(&db, size_t(P) * std::max(D, I) * 2));
    CK(cudaMalloc(&dq, size_t(P) * std::max(D, I)));
    CK(cudaMalloc(&dc, size_t(P) * std::max(D, I) * 4));
    fill(db, size_t(P) * std::max(D, I) * 2, 900, 3);
    fill(dq, size_t(P) * std::max(D, I), 901, 4);
    const float one = 1.0f, zero = 0.0f;
    const double bf16_ms = g_w4a8_profile
                               ? -1.0
                               : time_prefill_per_call(
                                     [&](int i, cudaStream_t st) {
                                       CB(cublasSetStream(h, st));
                                       const uint8_t* base = static_cast<const uint8_t*>(bf) +
                                                             size_t(i % pool) * bf_expert;
                                       dense_bf16_expert_gemms(h, base, P, D, I, db, dc);
                                     },
                                     calls, 10, s);
    // cuBLASLt FP8: one heuristic algorithm per GEMM shape (L1: M = I, K = D; L2: M = D, K = I),
    // probed outside capture.
    lt_fp8_gemm g1, g2;
    if (!g_w4a8_profile) {
      g1 = make_lt_fp8_gemm(lt, I, D, P, 1, 0, nullptr, nullptr, f8, dq, dc, lt_ws, lt_bytes, s);
      g2 = make_lt_fp8_gemm(lt, D, I, P, 1, 0, nullptr, nullptr, f8, dq, dc, lt_ws, lt_bytes, s);
    }
    double f8_ms = -1;
    if (g1.ok && g2.ok)
      f8_ms = time_prefill_per_call(
          [&](int i, cudaStream_t st) {
            const uint8_t* base = static_cast<const uint8_t*>(f8) + size_t(i % pool) * f8_expert;
            for (int m = 0; m < 2; ++m)
              CB(cublasLtMatmul(lt, g1.op, &one, base + size_t(m) * I * D, g1.la, dq, g1.lb, &zero,
                                dc, g1.lc, dc, g1.lc, &g1.algo, lt_ws, lt_bytes, st));
            CB(cublasLtMatmul(lt, g2.op, &one, base + size_t(2) * I * D, g2.la, dq, g2.lb, &zero,
                              dc, g2.lc, dc, g2.lc, &g2.algo, lt_ws, lt_bytes, st));
          },
          calls, 10, s);
    else if (!g_w4a8_profile)
      std::printf("%-6s cublasLt fp8: no usable algorithm\n", sh.name);
    // The bytes bound: the touched experts' MXFP4 bytes (weights and E8M0 scales, 17 / 32
    // bytes per weight; averaged over the calls' routings) at the read ceiling measured in this
    // run, as FLOP/s; activations and outputs left out (< 2% of the bytes at these shapes).
    if (read_gbps > 0) {
      double touched = 0;
      for (int i = 0; i < calls; ++i) {
        std::vector<char> hit(size_t(E), 0);
        for (int64_t j = 0; j < P; ++j) hit[size_t(routes[size_t(i * P + j)])] = 1;
        touched += double(std::count(hit.begin(), hit.end(), 1)) / calls;
      }
      const double bytes = touched * 3.0 * double(I) * double(D) * 17.0 / 32.0;
      const double bound_ms = bytes / (read_gbps * 1e9) * 1e3;
      std::printf(
          "%-6s T=%lld bytes bound: %.1f touched experts, %.2f GB of MXFP4 at %.1f GB/s = %.1f us "
          "= %.1f TFLOP/s (1.0 PFLOP/s needs %.1f%% of read)\n",
          sh.name, (long long)T, touched, bytes / 1e9, read_gbps, bound_ms * 1e3,
          flops / (bound_ms * 1e-3) / 1e12, 100.0 * bytes / (read_gbps * 1e9) / (flops / 1e15));
    }
    // The FP8 ceilings at the experts' own shapes (time_fp8_batched_ceiling): E batches of
    // n = P / E tokens (P / E whole for the section's token counts).
    double f8b_ms = -1, f8bb_ms = -1;
    bool f8bb_loop = false;  // the block-scaled time is a per-expert loop (not batched)
    if (!g_w4a8_profile && g_w4a8_batched > 0 && P % E == 0) {
      f8b_ms = time_fp8_batched_ceiling(lt, s, E, D, I, P / E, false, calls);
      if (g_w4a8_batched > 1)
        f8bb_ms = time_fp8_batched_ceiling(lt, s, E, D, I, P / E, true, calls, &f8bb_loop);
      const auto tfl = [&](double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; };
      std::printf(
          "%-6s T=%lld cublasLt fp8 batched at the experts' shapes (%lld x [%lld tokens]): "
          "per-tensor scales %.1f us (%.1f TF), 128-block scales %.1f us (%.1f TF)%s\n",
          sh.name, (long long)T, (long long)E, (long long)(P / E), f8b_ms * 1e3, tfl(f8b_ms),
          f8bb_ms * 1e3, tfl(f8bb_ms),
          f8bb_ms <= 0 ? " [block scales: no algorithm]"
          : f8bb_loop  ? " [block scales: one launch per expert and GEMM, not batched]"
                       : "");
    }
    destroy_lt_fp8_gemm(g1);
    destroy_lt_fp8_gemm(g2);
    using dsv4::cuda::moe_prefill_core;
    const auto run = [&](int i, cudaStream_t st, moe_prefill_core core, __nv_bfloat16* y) {
      CK(dsv4::cuda::moe_prefill_experts_official(
          in.xb + size_t(i) * T * D, T, in.idx + size_t(i) * P, in.wts + size_t(i) * P, K, w1.w,
          w3.w, w2.w, 10.0f, ws, ws_bytes, y, st, core));
    };
    if (g_w4a8_ab) {
      const device_repacked r1(w1), r3(w3), r2(w2);
      // Paths: 0 the W4A8 ws core, 1 the engine's W4A16 path, 2 the W4A8 pipelined core.
      constexpr int paths = 3;
      const auto run_path = [&](int path, int i, cudaStream_t st, __nv_bfloat16* y) {
        const bool w8 = path != 1;
        CK(dsv4::cuda::moe_prefill_experts_official(
            in.xb + size_t(i) * T * D, T, in.idx + size_t(i) * P, in.wts + size_t(i) * P, K,
            w8 ? w1.w : r1.w, w8 ? w3.w : r3.w, w8 ? w2.w : r2.w, 10.0f, ws, ws_bytes, y, st,
            path == 0   ? moe_prefill_core::w4a8_ws
            : path == 2 ? moe_prefill_core::w4a8
                        : moe_prefill_core::automatic));
      };
      const char* names[paths] = {"w4a8_ws (W4A8)", "engine W4A16 (repacked)", "w4a8 (W4A8)"};
      __nv_bfloat16 *ya, *yb;
      CK(cudaMalloc(&ya, size_t(T) * D * 2));
      CK(cudaMalloc(&yb, size_t(T) * D * 2));
      const auto tf = [&](double ms) { return flops / (ms * 1e-3) / 1e12; };
      std::printf(
          "%-6s T=%lld ceilings: cublas bf16 dense %.1f us (%.1f TF), cublasLt fp8 dense "
          "%.1f us (%.1f TF)\n",
          sh.name, (long long)T, bf16_ms * 1e3, tf(bf16_ms), f8_ms * 1e3,
          f8_ms > 0 ? tf(f8_ms) : 0.0);
      for (int path = 0; path < paths; ++path) {  // y of call 0 under each value vs 15's
        std::vector<uint16_t> ref(size_t(T) * D), cur(size_t(T) * D);
        for (size_t c = 0; c < g_ab_old.size(); ++c) {
          dsv4::cuda::moe_prefill_set_nongemm_old(int(g_ab_old[c]));
          CK(cudaMemset(yb, 0xFF, size_t(T) * D * 2));
          run_path(path, 0, s, yb);
          CK(cudaStreamSynchronize(s));
          CK(cudaMemcpy(c == 0 ? ref.data() : cur.data(), yb, ref.size() * 2,
                        cudaMemcpyDeviceToHost));
          if (c == 0) continue;
          size_t differ = 0;
          for (size_t j = 0; j < ref.size(); ++j) differ += ref[j] != cur[j];
          std::printf("%-6s T=%lld %-24s old=%-2lld vs old=%lld: %zu of %zu BF16 y differ\n",
                      sh.name, (long long)T, names[path], (long long)g_ab_old[c],
                      (long long)g_ab_old[0], differ, ref.size());
        }
      }
      std::map<std::pair<int, int64_t>, std::vector<double>> times;
      for (int pass = 0; pass < g_ab_passes; ++pass)
        for (size_t c0 = 0; c0 < g_ab_old.size(); ++c0) {
          const int64_t v = g_ab_old[pass % 2 == 0 ? c0 : g_ab_old.size() - 1 - c0];
          dsv4::cuda::moe_prefill_set_nongemm_old(int(v));
          for (int path = 0; path < paths; ++path) {
            const double ms = time_prefill_per_call(
                [&](int i, cudaStream_t st) { run_path(path, i, st, ya); }, calls, 20, s);
            times[{path, v}].push_back(ms);
            std::printf(
                "%-6s T=%lld pass %d %-24s old=%-2lld %9.1f us %7.1f TF %5.1f%% fp8 "
                "%5.1f%% bf16\n",
                sh.name, (long long)T, pass + 1, names[path], (long long)v, ms * 1e3, tf(ms),
                f8_ms > 0 ? 100 * f8_ms / ms : 0.0, 100 * bf16_ms / ms);
          }
        }
      for (int path = 0; path < paths; ++path)
        for (int64_t v : g_ab_old) {
          const std::vector<double>& a = times[{path, v}];
          const std::vector<double>& b = times[{path, g_ab_old[0]}];
          std::string r;
          for (size_t q = 0; q < a.size(); ++q) {
            char buf[32];
            std::snprintf(buf, sizeof(buf), "%s%.3f", q ? " / " : "", b[q] / a[q]);
            r += buf;
          }
          std::vector<double> sa = a;
          std::sort(sa.begin(), sa.end());
          std::printf(
              "%-6s T=%lld %-24s old=%-2lld vs old=%lld: speed %sx (pass 1..%zu); "
              "median %.1f us\n",
              sh.name, (long long)T, names[path], (long long)v, (long long)g_ab_old[0], r.c_str(),
              a.size(), 1e3 * sa[sa.size() / 2]);
        }
      for (int64_t v : {g_ab_old[0], int64_t(0)}) {
        if (g_ab_breakdown_new && v != 0) continue;
        dsv4::cuda::moe_prefill_set_nongemm_old(int(v));
        for (int path = 0; path < paths; ++path) {
          const std::string label = std::string(sh.name) + " T=" + std::to_string(T) + " " +
                                    (path == 0   ? "w4a8_ws"
                                     : path == 1 ? "W4A16"
                                                 : "w4a8") +
                                    " old=" + std::to_string(v);
          stage_breakdown(
              label.c_str(), [&](int i, cudaStream_t st) { run_path(path, i, st, ya); }, calls, s);
        }
      }
      dsv4::cuda::moe_prefill_set_nongemm_old(0);
      CK(cudaFree(ya));
      CK(cudaFree(yb));
      CK(cudaFree(db));
      CK(cudaFree(dq));
      CK(cudaFree(dc));
      CK(cudaFree(ws));
      continue;
    }
    // Outputs of call 0 from both cores (yb and yf's bytes as a second BF16 buffer).
    auto* y16 = in.yb;
    auto* y8 = reinterpret_cast<__nv_bfloat16*>(in.yf);
    run(0, s, moe_prefill_core::wgmma, y16);
    run(0, s, moe_prefill_core::w4a8, y8);
    // The warp-specialized kernel (w4a8_ws) must give the w4a8 kernel's y bit for bit.
    __nv_bfloat16* yws;
    CK(cudaMalloc(&yws, size_t(T) * D * 2));
    CK(cudaMemset(yws, 0xFF, size_t(T) * D * 2));
    run(0, s, moe_prefill_core::w4a8_ws, yws);
    CK(cudaStreamSynchronize(s));
    const double agree = nmse_bf16(y8, y16, size_t(T) * D);
    size_t ws_differ = 0;
    {
      std::vector<uint16_t> ha(size_t(T) * D), hb(size_t(T) * D);
      CK(cudaMemcpy(ha.data(), y8, ha.size() * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(hb.data(), yws, hb.size() * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < ha.size(); ++i) ws_differ += ha[i] != hb[i];
    }
    std::printf("%-6s   T=%lld: w4a8_ws vs w4a8 outputs: %zu of %zu BF16 values differ\n", sh.name,
                (long long)T, ws_differ, size_t(T) * D);
    if (g_w4a8_profile) {  // one call of each core was the point (ncu)
      std::printf("%-6s   T=%lld: w4a8 vs wgmma outputs NMSE %.2e (profile run)\n", sh.name,
                  (long long)T, agree);
      CK(cudaFree(db));
      CK(cudaFree(dq));
      CK(cudaFree(dc));
      CK(cudaFree(ws));
      CK(cudaFree(yws));
      break;
    }
    const double w16_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) { run(i, st, moe_prefill_core::wgmma, y16); }, calls, 20, s);
    const double w8_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) { run(i, st, moe_prefill_core::w4a8, y8); }, calls, 20, s);
    const double w8s_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) { run(i, st, moe_prefill_core::w4a8_serial, y8); }, calls, 20,
        s);
    const double wws_ms = time_prefill_per_call(
        [&](int i, cudaStream_t st) { run(i, st, moe_prefill_core::w4a8_ws, yws); }, calls, 20, s);
    const auto tf = [&](double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; };
    const auto report = [&](const char* kernel, double ms) {
      std::printf("%-6s %-30s %5lld %10.1f %8.1f %8.1f%% %8.1f%% %8.1f%%\n", sh.name, kernel,
                  (long long)T, ms * 1e3, tf(ms), f8_ms > 0 ? 100 * f8_ms / ms : 0.0,
                  100 * bf16_ms / ms, 100 * w16_ms / ms);
    };
    report("cublas bf16 dense (ceil)", bf16_ms);
    if (f8_ms > 0) report("cublasLt fp8 dense (ceil)", f8_ms);
    if (f8b_ms > 0) report("cublasLt fp8 batched (ceil)", f8b_ms);
    if (f8bb_ms > 0)
      report(f8bb_loop ? "cublasLt fp8 blk expert loop" : "cublasLt fp8 batched blk (ceil)",
             f8bb_ms);
    report("official wgmma (W4A16)", w16_ms);
    report("official w4a8 (W4A8)", w8_ms);
    report("official w4a8_serial (W4A8)", w8s_ms);
    report("official w4a8_ws (W4A8)", wws_ms);
    std::printf(
        "%-6s   T=%lld: w4a8 vs wgmma outputs NMSE %.2e; w4a8 speed-up %.2fx; w4a8_ws "
        "%.2fx w4a8, %.2fx w4a8_serial\n",
        sh.name, (long long)T, agree, w16_ms / w8_ms, w8_ms / wws_ms, w8s_ms / wws_ms);
    CK(cudaFree(yws));
    CK(cudaFree(db));
    CK(cudaFree(dq));
    CK(cudaFree(dc));
    CK(cudaFree(ws));
  }
  CK(cudaFree(lt_ws));
  CK(cudaFree(bf));
  CK(cudaFree(f8));
}

void bench_w4a8_section(cudaStream_t s, cublasHandle_t h, cublasLtHandle_t lt) {
  const double read_gbps = g_w4a8_profile ? 0.0 : measure_ceilings(s).read_gbps;
  std::printf(
      "\n## routed MoE prefill, official order, MXFP4: W4A8 vs W4A16 (graph of 4 calls, fresh "
      "routing and x each, median replay; TFLOP/s = 2*T*top_k*3*D*I / time; %%fp8 / %%bf16 = "
      "cuBLASLt FP8 / cuBLAS BF16 dense time of the same FLOPs over this time; %%w4a16 = the "
      "wgmma W4A16 core's time over this time)\n");
  std::printf("%-6s %-30s %5s %10s %8s %9s %9s %9s\n", "model", "kernel", "T", "us", "TFLOP/s",
              "%fp8", "%bf16", "%w4a16");
  const moe_shape flash{"flash", 4096, 2048, 256, 6}, pro{"pro", 7168, 3072, 384, 6};
  // Flash's first token count, then Pro, then Flash's others (a run cut short by its time limit
  // keeps the rows it printed: stdout is line-buffered).
  const std::vector<int64_t>& ft = g_w4a8_flash_t;
  if (!ft.empty()) bench_w4a8_shape(flash, s, h, lt, {ft[0]}, read_gbps);
  if (g_w4a8_profile) return;
  if (!g_w4a8_pro_t.empty()) bench_w4a8_shape(pro, s, h, lt, g_w4a8_pro_t, read_gbps);
  if (ft.size() > 1) bench_w4a8_shape(flash, s, h, lt, {ft.begin() + 1, ft.end()}, read_gbps);
}

}  // namespace

int main(int argc, char** argv) {
  bool only_moe = false;  // --moe-only: skip the dense linears
  bool only_prefill = false;
  bool profile = false;  // --profile: one eager call per decode variant, for ncu
  bool w4a8 = false;     // --prefill-w4a8: only the W4A8 prefill section
  bool pws = false;      // --prefill-ws: only the wgmma_ws section
  bool fp8 = false;      // --fp8-check: PREFILL20's rounding check, then the sections asked for
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--moe-only") only_moe = true;
    if (a == "--prefill-only") only_prefill = true;
    if (a == "--prefill-quick") only_prefill = g_prefill_quick = true;
    if (a == "--prefill-flash") only_prefill = g_prefill_flash = true;
    if (a == "--prefill-t" && i + 1 < argc)
      only_prefill = true, g_prefill_t = std::stoll(argv[++i]);
    if (a == "--prefill-cp") g_prefill_cp = true;
    if (a == "--prefill-w4a8") w4a8 = true;
    if (a == "--prefill-ws") pws = true;
    if (a == "--ws-profile") pws = g_ws_profile = true;
    if (a == "--ws-t" && i + 1 < argc) g_ws_flash_t = parse_list(argv[++i]);
    if (a == "--ws-epis" && i + 1 < argc) pws = true, g_ws_epis = parse_list(argv[++i]);
    if (a == "--ws-wides" && i + 1 < argc) pws = true, g_ws_wides = parse_list(argv[++i]);
    if (a == "--w4a8-flash-t" && i + 1 < argc) g_w4a8_flash_t = parse_list(argv[++i]);
    if (a == "--w4a8-pro-t" && i + 1 < argc) g_w4a8_pro_t = parse_list(argv[++i]);
    if (a == "--w4a8-profile") g_w4a8_profile = true;
    if (a == "--w4a8-batched" && i + 1 < argc) g_w4a8_batched = std::atoi(argv[++i]);
    if (a == "--w4a8-ab") w4a8 = g_w4a8_ab = true;
    if (a == "--ab-old" && i + 1 < argc) g_ab_old = parse_list(argv[++i]);
    if (a == "--ab-passes" && i + 1 < argc) g_ab_passes = std::max(1, std::atoi(argv[++i]));
    if (a == "--ab-breakdown-new") g_ab_breakdown_new = true;
    if (a == "--fp8-check") fp8 = true;
    if (a == "--decode-only") g_decode_only = only_moe = true;
    if (a == "--replays" && i + 1 < argc) k_replays = std::max(5, std::atoi(argv[++i]));
    if (a == "--replay-gap-ms" && i + 1 < argc) g_replay_gap_ms = std::max(0, std::atoi(argv[++i]));
    if (a == "--replay-log" && i + 1 < argc) {
      g_replay_log = std::fopen(argv[++i], "w");
      if (!g_replay_log) {
        std::fprintf(stderr, "bench_moe_linear: cannot write --replay-log %s\n", argv[i]);
        return 2;
      }
    }
    if (a == "--shapes" && i + 1 < argc) g_shapes = argv[++i];
    if (a == "--formats" && i + 1 < argc) g_formats = argv[++i];
    if (a == "--tokens" && i + 1 < argc) {
      g_tokens.clear();
      for (std::string t = argv[++i]; !t.empty();) {
        const size_t comma = t.find(',');
        g_tokens.push_back(std::atoll(t.substr(0, comma).c_str()));
        t = comma == std::string::npos ? "" : t.substr(comma + 1);
      }
    }
    if (a == "--profile") profile = true;
    if (a == "--decode-ab") g_decode_ab = g_decode_only = only_moe = true;
    if (a == "--breakdown") g_ab_breakdown = true;
    if (a == "--short-read") g_short_read = true;
    if (a == "--icache-cold") g_icache_cold = true;
    if (a == "--ab-official") g_ab_official_only = true;
    if (a == "--ab" && i + 1 < argc) {
      g_ab_configs.clear();
      for (std::string t = argv[++i]; !t.empty();) {
        const size_t comma = t.find(',');
        g_ab_configs.push_back(t.substr(0, comma));
        if (g_ab_configs.back().empty() || g_ab_configs.back()[0] != 's') {
          std::fprintf(stderr,
                       "--ab: configuration \"%s\" must start with 's' (the rotation expansion "
                       "'r' was retired in session 44)\n",
                       g_ab_configs.back().c_str());
          return 2;
        }
        t = comma == std::string::npos ? "" : t.substr(comma + 1);
      }
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows survive a run cut short by a time limit
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  std::printf("bench_moe_linear: %s, %d SMs, L2 %d MiB, %.1f GiB\n", p.name, p.multiProcessorCount,
              p.l2CacheSize >> 20, double(p.totalGlobalMem) / double(1ull << 30));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (fp8) fp8_check();
  if (fp8 && !w4a8 && !pws) return 0;
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetStream(h, s));
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  if (pws) {
    bench_prefill_ws_section(s, h);
    cublasLtDestroy(lt);
    cublasDestroy(h);
    CK(cudaStreamDestroy(s));
    return 0;
  }
  if (w4a8) {
    bench_w4a8_section(s, h, lt);
    cublasLtDestroy(lt);
    cublasDestroy(h);
    CK(cudaStreamDestroy(s));
    return 0;
  }
  if (only_prefill) {
    bench_prefill_section(s, h);
    cublasLtDestroy(lt);
    cublasDestroy(h);
    CK(cudaStreamDestroy(s));
    return 0;
  }
  if (profile) {
    profile_decode(s);
    CK(cudaStreamDestroy(s));
    return 0;
  }
  const ceilings c = measure_ceilings(s);
  std::printf(
      "\n## routed MoE (graph of %d calls, median of %d replays; touched = experts a call "
      "reads; %%read = of the read-only ceiling %.1f GB/s)\n",
      k_calls, k_replays, c.read_gbps);
  std::printf("%-6s %-6s %-22s %-5s %3s %7s %10s %9s %7s\n", "model", "format", "kernel", "act",
              "T", "touched", "us", "GB/s", "%read");
  const moe_shape flash{"flash", 4096, 2048, 256, 6}, pro{"pro", 7168, 3072, 384, 6};
  for (const moe_shape& sh : {flash, pro})
    for (weight_kind k : {weight_kind::mxfp4, weight_kind::nvfp4})
      if (listed(g_shapes, sh.name) &&
          listed(g_formats, k == weight_kind::mxfp4 ? "mxfp4" : "nvfp4"))
        bench_moe(sh, k, s, c, h);
  if (!only_moe) {
    std::printf(
        "\n## dense decode linears (graph of %d calls; weight copies rotated past L2; GB/s "
        "on each kernel's own weight bytes; %%read = of the read-only ceiling)\n",
        k_calls);
    std::printf("%-10s %-6s %6s %6s %-24s %-4s %3s %9s %9s %7s\n", "matrix", "format", "rows",
                "cols", "kernel", "act", "T", "us", "GB/s", "%read");
    const size_t l2 = size_t(p.l2CacheSize);
    struct dense {
      const char* name;
      weight_kind kind;
      int64_t rows, cols;
    };
    const dense shapes[] = {
        {"fl.wq_a", weight_kind::fp8_block, 1024, 4096},
        {"fl.wq_b", weight_kind::fp8_block, 32768, 1024},
        {"fl.wkv", weight_kind::fp8_block, 512, 4096},
        {"fl.wo_b", weight_kind::fp8_block, 4096, 8192},
        {"fl.sh_w13", weight_kind::fp8_block, 2048, 4096},
        {"fl.sh_w2", weight_kind::fp8_block, 4096, 2048},
        {"fl.sh_w13", weight_kind::nvfp4, 2048, 4096},
        {"fl.sh_w2", weight_kind::mxfp4, 4096, 2048},
        {"fl.head", weight_kind::bf16, 129280, 4096},
        {"pro.wq_a", weight_kind::fp8_block, 1536, 7168},
        {"pro.wq_b", weight_kind::fp8_block, 65536, 1536},
        {"pro.wkv", weight_kind::fp8_block, 512, 7168},
        {"pro.sh_w13", weight_kind::fp8_block, 3072, 7168},
        {"pro.sh_w2", weight_kind::nvfp4, 7168, 3072},
    };
    for (const dense& d : shapes) bench_dense(d.name, d.kind, d.rows, d.cols, s, c, l2, h, lt);
  }
  if (!g_decode_only) bench_prefill_section(s, h);
  cublasLtDestroy(lt);
  cublasDestroy(h);
  CK(cudaStreamDestroy(s));
  return 0;
}
