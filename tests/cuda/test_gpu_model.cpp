// The whole model on the CUDA backend against transformers' logits (the oracle fixtures of
// tests/fixtures/models), in full prefill, chunked prefill and decode (decode steps replay CUDA
// graphs, the runner's default). Then decode with CUDA graphs on equals graphs off bit for bit
// (three sequences of different lengths, crossing 128-row block boundaries, batch shrinking
// 3 -> 2), with per-step decode times eager vs graph, on every fixture and on a synthetic
// checkpoint with V4-Flash layer dimensions.
// Not a ctest test (CI has no GPU): run on the GPU machine by scripts/gpu_session.sh.
// Oracle runs with f32 and with bf16 activation storage.
// f32: the issue's thresholds (argmax agreement >= 99%, mean KL(ref || gpu) <= 1e-3); f32 lands
// ~9 orders of magnitude under them.
// bf16 on trained_small (a tiny model trained on real text, scripts/train_fixture.py: peaked
// logits, trained routers): the issue's BF16 criterion itself is asserted (argmax >= 99%, mean
// KL <= 1e-3 in every mode). CPU evidence (tests/fixtures/models/README.md): transformers with f32
// weights and bf16-rounded activations, prefill: KL 5.9e-4, argmax 0.9883 (3 of 256 rows flip,
// two of them output near ties; <= 2 rows pass), so argmax is decided by one or two rows.
// bf16 on the random fixtures: the issue's BF16 criterion is printed per run ("issue-criterion
// met/missed") but the assertion is the oracle's own bf16 noise floor: the tiny random models
// (hidden 32-48, near-tied routers and indexers by construction) amplify one bf16 rounding into
// discrete top-k flips. transformers itself in bf16 against its fp32 logits (prefill, CPU,
// measured 2026-11-22): mixed_small KL 0.022 argmax 93.8%, module_names KL 0.018 argmax 87.5%,
// real_rates_long KL 0.010 argmax 97.3%. dsv4 bf16 must stay within that floor: mean KL <= 2.5e-2
// and argmax >= 90% (a wrong op gives KL ~1 and argmax near 1 / vocab).
//
// usage: test_gpu_model [--only FIXTURE] [--no-synthetic] [--no-oracle] [--only-kv-fp8]
//                       [--only-index-fp4] [--only-repacked] [--only-repacked-dense]
//                       [--only-w8a8-wgmma] [--repeat-general N]
//                       [--profile-step N]
//                       [--moe-decode-chain N]
#include <cuda_profiler_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/device_info.h"
#include "backends/cuda/linear_decode_nvfp4.h"
#include "backends/cuda/moe_decode.h"
#include "core/error.h"
#include "engine/model_runner.h"
#include "io/nvfp4_checkpoint.h"
#include "io/synthetic_checkpoint.h"
#include "model/fixture_model.h"
#include "model/fixture_runner.h"

using namespace dsv4;
using dsv4::testing::run_chunks;

namespace {

struct schedule_result {
  std::vector<std::vector<float>> logits;  // per step
  std::vector<double> step_ms[4];          // decode step wall times by batch size (first skipped)
  std::vector<double> prefill_ms;          // wall time of each prompt's prefill step (synchronous)
  size_t graphs = 0;
  size_t nodes = 0;  // operations in the graph of the full batch
  // cudaMalloc calls in decode steps 2 .. decode / 2 - 1 (batch of 3, after its first steps)
  size_t mallocs_in_warm_decode = 0;
  size_t reserved = 0;
  size_t kv_pool_bytes = 0;    // window + compressed KV pools of every layer
  size_t index_fp4_bytes = 0;  // FP4 indexer key copies (codes + scales) of every layer
  int64_t expert_sets = 0, repacked_expert_sets = 0;      // MoE layers, repacked at load
  int64_t dense_linears = 0, repacked_dense_linears = 0;  // dense linears, repacked at load
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Three sequences, prompts `prompt` (prefilled one step each), then `decode` one-token steps of
// every live sequence; the last sequence leaves after half of them. Token ids are drawn from a
// fixed generator (not sampled), so graphs on and off see the same inputs.
// --profile-step N: decode step N of the run (and only it) lies between cudaProfilerStart and
// cudaProfilerStop, so `ncu --profile-from-start off` measures that step's kernels alone.
int g_profile_step = -1;

// Diagnosis (DSV4_TEST_DIRTY_MEMORY=1): before a schedule loads its runner, the device's free
// memory (all but 512 MiB) is filled with 0xff bytes (NaN as f32 / bf16) and returned to the
// driver, so that device memory the run reads before writing holds NaN instead of whatever an
// earlier run left there.
void dirty_free_memory() {
  static const bool on = [] {
    const char* e = std::getenv("DSV4_TEST_DIRTY_MEMORY");
    return e && std::atoi(e) != 0;
  }();
  if (!on) return;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) return;
  const size_t keep = size_t(512) << 20;
  if (free_b <= keep) return;
  void* p = nullptr;
  if (cudaMalloc(&p, free_b - keep) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  cudaMemset(p, 0xff, free_b - keep);
  cudaDeviceSynchronize();
  cudaFree(p);
}

schedule_result run_schedule(const std::string& dir, precision_mode precision, bool graphs,
                             const std::vector<size_t>& prompt, size_t decode, int64_t max_context,
                             const std::string& activations = "", bool decode_kernels = true,
                             kv_cache_dtype kv_dtype = kv_cache_dtype::activations,
                             bool indexer_fp4 = true, bool repack_experts = true,
                             bool repack_dense = true) {
  runner_options o;
  o.repack_experts = repack_experts;
  o.repack_dense = repack_dense;
  o.cache.kv_dtype = kv_dtype;
  o.cache.indexer_fp4 = indexer_fp4;
  o.device = "cuda";
  o.precision = precision;
  o.cuda_graph = graphs;
  if (!activations.empty()) o.activations = activations;
  o.decode_kernels = decode_kernels;
  o.cache.max_sequences = int64_t(prompt.size());
  o.cache.max_context = max_context;
  dirty_free_memory();
  auto runner = model_runner::load(dir, o);
  const auto& backend = dynamic_cast<const cuda::cuda_ops&>(runner->backend());
  const int64_t vocab = runner->config().vocab_size;
  std::mt19937 rng(1234);
  schedule_result r;
  r.expert_sets = backend.expert_sets();
  r.repacked_expert_sets = backend.repacked_expert_sets();
  r.dense_linears = backend.dense_linears();
  r.repacked_dense_linears = backend.repacked_dense_linears();
  for (const layer_cache& lc : runner->cache().layers()) {
    r.kv_pool_bytes += lc.window_pool.bytes() + (lc.comp_pool.defined() ? lc.comp_pool.bytes() : 0);
    r.index_fp4_bytes +=
        lc.index_fp4_codes.defined() ? lc.index_fp4_codes.bytes() + lc.index_fp4_scales.bytes() : 0;
  }
  std::vector<int> seqs;
  for (size_t s = 0; s < prompt.size(); ++s) {
    seqs.push_back(runner->add_sequence());
    std::vector<int32_t> ids;
    for (size_t i = 0; i < prompt[s]; ++i) ids.push_back(int32_t(rng() % vocab));
    const auto t0 = std::chrono::steady_clock::now();
    const tensor l = runner->step({{seqs[s], ids}});
    r.prefill_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    r.logits.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  }
  size_t mallocs_before = 0;
  size_t live = prompt.size();
  for (size_t step = 0; step < decode; ++step) {
    if (step == decode / 2) {
      r.mallocs_in_warm_decode = backend.allocator().malloc_count() - mallocs_before;
      if (live > 1) runner->release_sequence(seqs[--live]);
    }
    if (step == 2) mallocs_before = backend.allocator().malloc_count();
    std::vector<sequence_chunk> chunks;
    for (size_t s = 0; s < live; ++s) chunks.push_back({seqs[s], {int32_t(rng() % vocab)}});
    const bool profiled = int64_t(step) == g_profile_step;
    if (profiled) DSV4_CHECK(cudaProfilerStart() == cudaSuccess, "cudaProfilerStart failed");
    const auto t0 = std::chrono::steady_clock::now();
    const tensor l = runner->step(chunks);
    const auto t1 = std::chrono::steady_clock::now();
    if (profiled) DSV4_CHECK(cudaProfilerStop() == cudaSuccess, "cudaProfilerStop failed");
    // The first step of each batch size captures (graphs on) or warms the cache (off).
    const bool first_of_size = step == 0 || step == decode / 2;
    if (!first_of_size && live < 4)
      r.step_ms[live].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    r.logits.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  }
  r.graphs = runner->captured_graphs();
  r.nodes = runner->graph_nodes(int64_t(prompt.size()));
  r.reserved = backend.reserved_bytes();
  return r;
}

// Steps whose logits differ in any bit between two runs of the same schedule (indices), and
// their count (a length mismatch counts once).
std::vector<size_t> differing_steps(const schedule_result& a, const schedule_result& b) {
  std::vector<size_t> steps;
  for (size_t i = 0; i < a.logits.size() && i < b.logits.size(); ++i)
    if (a.logits[i].size() != b.logits[i].size() ||
        std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * 4) != 0)
      steps.push_back(i);
  return steps;
}
size_t bitwise_differing_steps(const schedule_result& a, const schedule_result& b) {
  return differing_steps(a, b).size() + (a.logits.size() == b.logits.size() ? 0 : 1);
}

// Graphs on vs off on one model: returns false on any difference.
bool compare_graph_decode(const std::string& label, const std::string& dir,
                          precision_mode precision, const std::vector<size_t>& prompt,
                          size_t decode, int64_t max_context) {
  const schedule_result eager = run_schedule(dir, precision, false, prompt, decode, max_context);
  const schedule_result graph = run_schedule(dir, precision, true, prompt, decode, max_context);
  size_t differing = 0, first_bad = 0;
  for (size_t i = 0; i < eager.logits.size(); ++i) {
    const bool same = eager.logits[i].size() == graph.logits[i].size() &&
                      std::memcmp(eager.logits[i].data(), graph.logits[i].data(),
                                  eager.logits[i].size() * sizeof(float)) == 0;
    if (!same && differing++ == 0) first_bad = i;
  }
  // Replays allocate nothing (the plan buffer is reused, the graph's blocks are its own).
  const bool ok =
      differing == 0 && graph.graphs == 2 && eager.graphs == 0 && graph.mallocs_in_warm_decode == 0;
  std::printf(
      "[gpu-graph] %-22s %-8s steps=%zu bitwise-differing=%zu%s graphs=%zu "
      "cudaMallocs in warm decode steps: eager %zu, graph %zu %s\n",
      label.c_str(), std::string(precision_mode_name(precision)).c_str(), eager.logits.size(),
      differing, differing ? fmt::format(" (first at step {})", first_bad).c_str() : "",
      graph.graphs, eager.mallocs_in_warm_decode, graph.mallocs_in_warm_decode, ok ? "OK" : "FAIL");
  for (int b = 1; b < 4; ++b)
    if (!eager.step_ms[b].empty())
      std::printf(
          "[gpu-graph] %-22s decode step (batch %d, wall, median of %zu): eager %.3f ms, graph "
          "%.3f ms, ratio %.2fx\n",
          label.c_str(), b, eager.step_ms[b].size(), median(eager.step_ms[b]),
          median(graph.step_ms[b]), median(eager.step_ms[b]) / median(graph.step_ms[b]));
  std::printf("[gpu-graph] %-22s graph of batch %zu: %zu operations\n", label.c_str(),
              prompt.size(), graph.nodes);
  std::printf("[gpu-graph] %-22s reserved device memory: eager %.1f MiB, graph %.1f MiB\n",
              label.c_str(), double(eager.reserved) / (1 << 20),
              double(graph.reserved) / (1 << 20));
  return ok;
}

struct logits_distance {
  double relative = 0;  // ||a - b|| / ||b|| over all steps' logits
  double argmax = 0;    // fraction of rows with the same argmax
};

logits_distance distance(const schedule_result& a, const schedule_result& b, int64_t vocab) {
  double num = 0, den = 0;
  size_t rows = 0, same = 0;
  for (size_t i = 0; i < a.logits.size() && i < b.logits.size(); ++i) {
    const auto& x = a.logits[i];
    const auto& y = b.logits[i];
    for (size_t j = 0; j < x.size() && j < y.size(); ++j) {
      num += (double(x[j]) - y[j]) * (double(x[j]) - y[j]);
      den += double(y[j]) * y[j];
    }
    for (size_t r = 0; r + size_t(vocab) <= x.size(); r += size_t(vocab), ++rows)
      same += std::max_element(x.begin() + r, x.begin() + r + vocab) - x.begin() ==
              std::max_element(y.begin() + r, y.begin() + r + vocab) - y.begin();
  }
  return {den > 0 ? std::sqrt(num / den) : 0, rows ? double(same) / double(rows) : 0};
}

// The decode kernels (moe_decode, attention_decode, indexer_topk_fast) inside the model: bf16
// activations, exact or official precision (MXFP4 experts take moe_decode or its official variant),
// decode kernels on vs off (general kernels), both eager. Their products round P (and for f32
// inputs q, keys) to bf16 on tensor cores; the bound is relative to the noise that bf16 storage
// itself adds: on-vs-off may differ by at most twice what bf16-off differs from f32 (a wiring
// error, such as a wrong capacity or stride, gives O(1) differences).
bool compare_decode_kernels(const std::string& label, const std::string& dir, int64_t vocab,
                            precision_mode precision) {
  const std::vector<size_t> prompt{300, 140, 20};
  const schedule_result f32 = run_schedule(dir, precision, false, prompt, 24, 1024, "f32", false);
  const schedule_result off = run_schedule(dir, precision, false, prompt, 24, 1024, "bf16", false);
  const schedule_result on = run_schedule(dir, precision, false, prompt, 24, 1024, "bf16", true);
  const logits_distance noise = distance(off, f32, vocab);
  const logits_distance fast = distance(on, off, vocab);
  const bool ok = fast.relative <= 2 * noise.relative + 1e-3;
  std::printf(
      "[gpu-decode-kernels] %-22s %-8s bf16 general vs f32: rel %.3g argmax %.4f | bf16 decode "
      "kernels vs bf16 general: rel %.3g argmax %.4f %s\n",
      label.c_str(), std::string(precision_mode_name(precision)).c_str(), noise.relative,
      noise.argmax, fast.relative, fast.argmax, ok ? "OK" : "FAIL");
  // The first prompt (300 tokens) also warms the caches and cuBLAS; the second (140) is timed.
  if (on.prefill_ms.size() > 1)
    std::printf(
        "[gpu-decode-kernels] %-22s prefill of %zu tokens (wall): f32 general %.2f ms, bf16 "
        "general %.2f ms, bf16 fast kernels %.2f ms\n",
        label.c_str(), prompt[1], f32.prefill_ms[1], off.prefill_ms[1], on.prefill_ms[1]);
  for (int b = 1; b < 4; ++b)
    if (!on.step_ms[b].empty())
      std::printf(
          "[gpu-decode-kernels] %-22s decode step (batch %d, eager, median of %zu): general %.3f "
          "ms, decode kernels %.3f ms\n",
          label.c_str(), b, on.step_ms[b].size(), median(off.step_ms[b]), median(on.step_ms[b]));
  return ok;
}

// The W8A8 wgmma linear (linear_w8a8_wgmma.h) inside the model: official precision, bf16, eager,
// prefills of 64 / 17 / 9 tokens (every FP8 projection at those T) and 8 decode steps, with every
// supported FP8 projection of 9-64 tokens on it (DSV4_W8A8_WGMMA_TOKENS=9,64, read per call)
// against none (0,-1: the paths before). The two differ in f32 summation order only (the same
// quantized products), so the bound is compare_decode_kernels': at most twice what bf16 storage
// itself adds against f32 (a wiring error gives O(1) differences).
bool compare_w8a8_wgmma(const std::string& label, const std::string& dir, int64_t vocab) {
  const std::vector<size_t> prompt{64, 17, 9};
  const auto official = precision_mode::official;
  const schedule_result f32 = run_schedule(dir, official, false, prompt, 8, 1024, "f32", false);
  setenv("DSV4_W8A8_WGMMA_TOKENS", "0,-1", 1);
  const schedule_result off = run_schedule(dir, official, false, prompt, 8, 1024, "bf16", true);
  setenv("DSV4_W8A8_WGMMA_TOKENS", "9,64", 1);
  const schedule_result on = run_schedule(dir, official, false, prompt, 8, 1024, "bf16", true);
  unsetenv("DSV4_W8A8_WGMMA_TOKENS");
  const logits_distance noise = distance(off, f32, vocab);
  const logits_distance d = distance(on, off, vocab);
  const bool ok = d.relative <= 2 * noise.relative + 1e-3;
  std::printf(
      "[gpu-w8a8-wgmma] %-22s official bf16 (before) vs f32 general: rel %.3g argmax %.4f | "
      "wgmma at 9-64 tokens vs before: rel %.3g argmax %.4f %s\n",
      label.c_str(), noise.relative, noise.argmax, d.relative, d.argmax, ok ? "OK" : "FAIL");
  for (size_t i = 0; i < prompt.size() && i < on.prefill_ms.size(); ++i)
    std::printf(
        "[gpu-w8a8-wgmma] %-22s prefill of %zu tokens (wall): before %.2f ms, wgmma %.2f ms\n",
        label.c_str(), prompt[i], off.prefill_ms[i], on.prefill_ms[i]);
  return ok;
}

// Routed experts repacked at load (src/backends/cuda/expert_layout.h: the default with bf16
// activations and the decode kernels on an H100/H200) against the checkpoint layout
// (runner_options::repack_experts off), graphs on: moe_decode (prompt of 20, decode steps) and
// moe_prefill's wgmma core (prompts of 300 and 140) expand both layouts to the same BF16 values
// and keep every sum's order, so the logits must be identical bit for bit. Also that the
// repacking happened (every MoE layer) and the decode step times of both.
bool compare_repacked_experts(const std::string& label, const std::string& dir, int64_t vocab,
                              precision_mode precision) {
  const std::vector<size_t> prompt{300, 140, 20};
  const schedule_result rp = run_schedule(dir, precision, true, prompt, 24, 1024, "bf16", true,
                                          kv_cache_dtype::activations, true, true);
  const schedule_result cp = run_schedule(dir, precision, true, prompt, 24, 1024, "bf16", true,
                                          kv_cache_dtype::activations, true, false);
  const size_t differing = bitwise_differing_steps(rp, cp);
  const logits_distance dist = distance(rp, cp, vocab);
  const bool ok = differing == 0 && rp.expert_sets > 0 &&
                  rp.repacked_expert_sets == rp.expert_sets && cp.repacked_expert_sets == 0 &&
                  rp.graphs == 2;
  std::printf(
      "[gpu-repacked-experts] %-22s %-8s bf16: repacked vs checkpoint experts, %zu steps (3 "
      "prefills + decode, graphs): %zu bitwise-differing (rel %.3g, argmax %.4f); repacked "
      "expert sets %lld of %lld (checkpoint run %lld); graphs=%zu %s\n",
      label.c_str(), std::string(precision_mode_name(precision)).c_str(), rp.logits.size(),
      differing, dist.relative, dist.argmax, (long long)rp.repacked_expert_sets,
      (long long)rp.expert_sets, (long long)cp.repacked_expert_sets, rp.graphs, ok ? "OK" : "FAIL");
  if (rp.prefill_ms.size() > 1)
    std::printf(
        "[gpu-repacked-experts] %-22s prefill of %zu tokens (wall): checkpoint %.2f ms, "
        "repacked %.2f ms\n",
        label.c_str(), prompt[1], cp.prefill_ms[1], rp.prefill_ms[1]);
  for (int b = 1; b < 4; ++b)
    if (!rp.step_ms[b].empty())
      std::printf(
          "[gpu-repacked-experts] %-22s decode step (batch %d, graph, median of %zu): "
          "checkpoint %.3f ms, repacked %.3f ms\n",
          label.c_str(), b, rp.step_ms[b].size(), median(cp.step_ms[b]), median(rp.step_ms[b]));
  return ok;
}

// Dense NVFP4 linears (an all-linear NVFP4 checkpoint) in the repacked layout (runner_options::
// repack_dense, dense_layout.h) against the checkpoint layout, graphs on, bf16 activations:
// linear_decode (decode steps, the 20-token prompt; wo_a grouped from one token) and linear_gemm
// (the 300- and 140-token prefills) read the same values and keep every sum's order, so the
// logits must be identical bit for bit (linear_decode_nvfp4 off: linear_decode_nvfp4_set_mode(0)).
// Also that the repacking happened (every NVFP4 linear the rule takes: > 0) and the decode step
// times of both. With linear_decode_nvfp4 on every matrix it takes (mode 2, beyond the default
// rule: its K split sums wo_b in another order; without a K split, wq_b's sums are
// linear_decode's) the repacked run must stay within twice the distance bf16 activations add to
// f32 ones (the checkpoint layout), as compare_decode_kernels bounds its kernels.
bool compare_repacked_dense(const std::string& label, const std::string& dir, int64_t vocab,
                            precision_mode precision) {
  const std::vector<size_t> prompt{300, 140, 20};
  dsv4::cuda::linear_decode_nvfp4_set_mode(0);
  const schedule_result rp = run_schedule(dir, precision, true, prompt, 24, 1024, "bf16", true,
                                          kv_cache_dtype::activations, true, true, true);
  const schedule_result cp = run_schedule(dir, precision, true, prompt, 24, 1024, "bf16", true,
                                          kv_cache_dtype::activations, true, true, false);
  dsv4::cuda::linear_decode_nvfp4_set_mode(2);
  const schedule_result on = run_schedule(dir, precision, true, prompt, 24, 1024, "bf16", true,
                                          kv_cache_dtype::activations, true, true, true);
  dsv4::cuda::linear_decode_nvfp4_set_mode(-1);
  const schedule_result f32 = run_schedule(dir, precision, true, prompt, 24, 1024, "f32", true,
                                           kv_cache_dtype::activations, true, true, false);
  const logits_distance noise = distance(cp, f32, vocab), d_on = distance(on, cp, vocab);
  const bool on_ok = d_on.relative <= 2 * noise.relative + 1e-3;
  std::printf(
      "[gpu-repacked-dense] %-22s %-8s bf16: repacked with linear_decode_nvfp4 (all) vs "
      "checkpoint: rel "
      "%.3g (bound %.3g: bf16 vs f32 %.3g), argmax %.4f %s\n",
      label.c_str(), std::string(precision_mode_name(precision)).c_str(), d_on.relative,
      2 * noise.relative + 1e-3, noise.relative, d_on.argmax, on_ok ? "OK" : "FAIL");
  const size_t differing = bitwise_differing_steps(rp, cp);
  const logits_distance dist = distance(rp, cp, vocab);
  const bool ok = on_ok && differing == 0 && rp.repacked_dense_linears > 0 &&
                  cp.repacked_dense_linears == 0 && rp.graphs == 2;
  std::printf(
      "[gpu-repacked-dense] %-22s %-8s bf16: repacked vs checkpoint dense NVFP4, %zu steps (3 "
      "prefills + decode, graphs): %zu bitwise-differing (rel %.3g, argmax %.4f); repacked dense "
      "linears %lld of %lld (checkpoint run %lld); graphs=%zu %s\n",
      label.c_str(), std::string(precision_mode_name(precision)).c_str(), rp.logits.size(),
      differing, dist.relative, dist.argmax, (long long)rp.repacked_dense_linears,
      (long long)rp.dense_linears, (long long)cp.repacked_dense_linears, rp.graphs,
      ok ? "OK" : "FAIL");
  if (rp.prefill_ms.size() > 1)
    std::printf(
        "[gpu-repacked-dense] %-22s prefill of %zu tokens (wall): checkpoint %.2f ms, repacked "
        "%.2f ms\n",
        label.c_str(), prompt[1], cp.prefill_ms[1], rp.prefill_ms[1]);
  for (int b = 1; b < 4; ++b)
    if (!rp.step_ms[b].empty())
      std::printf(
          "[gpu-repacked-dense] %-22s decode step (batch %d, graph, median of %zu): checkpoint "
          "%.3f ms, repacked %.3f ms, repacked with linear_decode_nvfp4 (all) %.3f ms\n",
          label.c_str(), b, rp.step_ms[b].size(), median(cp.step_ms[b]), median(rp.step_ms[b]),
          on.step_ms[b].empty() ? 0.0 : median(on.step_ms[b]));
  return ok;
}

// FP8 KV records (cache_options::kv_dtype fp8) against bf16 pools, both with DSV4_ATTENTION_ALT=0
// (the in-turn summation order) and with the default alternate tiles, official precision, bf16
// activations, graphs on (decode steps replay graphs; prefill of 300 / 140 / 20 tokens runs
// attention_decode in 64-token chunks): the official mode already rounds every cached row to
// FP8 (fake_quant_kv_fp8), records store exactly those values (decode(encode(x)) ==
// fake_quant_kv_fp8(x)), attention_decode dequantizes them into the same bf16 tile with the same
// plan, and nothing else reads the pools: the logits must be identical bit for bit, prefill and
// decode. Also the record pools' bytes (584 vs 1024 per row) in the reserved memory, and the
// general-kernel fallback (decode kernels off: records gathered to bf16) against bf16 pools with
// the general kernels, also bit for bit (the gather gives the same bf16 rows).
// Official precision, bf16, graphs: the FP8 projections whose path quantizes its input itself
// (cuda_ops::linear_fp8_input_quantizes: linear_decode_fp8act) reading x, qr, z (wo_b) and h
// (shared w2) unquantized, against the quantized copies / in-place fake quantization made first
// (DSV4_FP8_INPUT_COPY=1, the path before): the same logits bit for bit (ops.h says why), and
// the decode step times of both.

// One backend setting read from the environment at load, over `values` (the first is the
// reference): every run must give the reference's logits bit for bit (only the order of
// independent work or the producer of identical inputs changes), with graphs and no cudaMalloc in
// warm decode steps; the decode step times of every run are printed in run order (official bf16,
// graphs). DSV4_SIDE_BRANCHES: side branches open at once (ops.h).
bool compare_env_variants(const std::string& tag, const std::string& label, const std::string& dir,
                          const char* env, const std::vector<int>& values) {
  const std::vector<size_t> prompt{300, 140, 20};
  std::vector<schedule_result> runs;
  for (int v : values) {
    setenv(env, std::to_string(v).c_str(), 1);
    runs.push_back(
        run_schedule(dir, precision_mode::official, true, prompt, 24, 1024, "bf16", true));
  }
  unsetenv(env);
  bool ok = true;
  for (size_t i = 1; i < runs.size(); ++i) {
    const size_t differing = bitwise_differing_steps(runs[0], runs[i]);
    const bool run_ok =
        differing == 0 && runs[i].graphs == 2 && runs[i].mallocs_in_warm_decode == 0;
    ok = ok && run_ok;
    std::printf(
        "[%s] %-22s official bf16: %s=%d vs %d, %zu steps (3 prefills + decode, graphs): %zu "
        "bitwise-differing, graphs=%zu, mallocs in warm decode %zu %s\n",
        tag.c_str(), label.c_str(), env, values[i], values[0], runs[i].logits.size(), differing,
        runs[i].graphs, runs[i].mallocs_in_warm_decode, run_ok ? "OK" : "FAIL");
  }
  for (int b = 2; b < 4; ++b) {
    std::printf("[%s] %-22s decode step (batch %d, graph, median of %zu), %s:", tag.c_str(),
                label.c_str(), b, runs[0].step_ms[b].size(), env);
    for (size_t i = 0; i < runs.size(); ++i)
      std::printf(" %d: %.3f ms%s", values[i], median(runs[i].step_ms[b]),
                  i + 1 < runs.size() ? "," : "\n");
  }
  return ok;
}

// The FP8 projections' inputs quantized by the caller (DSV4_FP8_INPUT_COPY=1: x, qr, z, h as
// fake-quantized copies) and unquantized into the projections that quantize them themselves:
// bitwise-equal logits.
bool compare_fp8_input_copy(const std::string& label, const std::string& dir) {
  return compare_env_variants("gpu-fp8-input", label, dir, "DSV4_FP8_INPUT_COPY", {1, 0});
}

// plan.tables_early (the decode attention reads the step's tables before its PDL wait; 1, the
// default) against after it (0): the same kernels' values.
bool compare_tables_early(const std::string& label, const std::string& dir) {
  return compare_env_variants("gpu-tables-early", label, dir, "DSV4_ATTENTION_TABLES_EARLY",
                              {0, 1, 0, 1});
}

bool compare_side_branches(const std::string& label, const std::string& dir) {
  return compare_env_variants("gpu-side-branches", label, dir, "DSV4_SIDE_BRANCHES",
                              {1, 2, 3, 4, 1, 4});
}

// hc_post_pre_norm's gates (post, comb) on their own stream beside the next sub-layer
// (DSV4_HC_GATES_APART=1, joined before the next collapse; 2, the default: also at the next
// side-branch join) against the finish launch's gates CTA (0): the same functions' values.
bool compare_hc_gates_apart(const std::string& label, const std::string& dir) {
  return compare_env_variants("gpu-hc-gates", label, dir, "DSV4_HC_GATES_APART",
                              {0, 1, 2, 0, 1, 2});
}

bool compare_kv_records(const std::string& label, const std::string& dir, int64_t vocab) {
  const std::vector<size_t> prompt{300, 140, 20};
  const auto official = precision_mode::official;
  // In turn on both pools first (records: the synchronous kernel).
  setenv("DSV4_ATTENTION_ALT", "0", 1);
  const schedule_result bf16 = run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true);
  const schedule_result fp8 =
      run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true, kv_cache_dtype::fp8);
  const schedule_result bf16_off =
      run_schedule(dir, official, false, prompt, 8, 1024, "bf16", false);
  const schedule_result fp8_off =
      run_schedule(dir, official, false, prompt, 8, 1024, "bf16", false, kv_cache_dtype::fp8);
  unsetenv("DSV4_ATTENTION_ALT");
  // The engine's default: alternate tiles wherever the warp-specialized kernel runs, records
  // included (its producer warpgroup dequantizes them), so both pools again take one order.
  const schedule_result bf16_alt =
      run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true);
  const schedule_result fp8_alt =
      run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true, kv_cache_dtype::fp8);
  const size_t fast = bitwise_differing_steps(fp8, bf16),
               general = bitwise_differing_steps(fp8_off, bf16_off),
               fast_alt = bitwise_differing_steps(fp8_alt, bf16_alt);
  const logits_distance dist = distance(fp8, bf16, vocab);
  const bool ok = fast == 0 && general == 0 && fast_alt == 0 && fp8.graphs == 2 &&
                  fp8.mallocs_in_warm_decode == 0;
  std::printf(
      "[gpu-kv-fp8] %-22s official bf16, alternate tiles (default): fp8 records vs bf16 pools, "
      "%zu steps: %zu bitwise-differing\n",
      label.c_str(), fp8_alt.logits.size(), fast_alt);
  std::printf(
      "[gpu-kv-fp8] %-22s official bf16: fp8 records vs bf16 pools, %zu steps (3 prefills + "
      "decode, graphs): %zu bitwise-differing (rel %.3g, argmax %.4f); general kernels (records "
      "gathered): %zu differing of %zu; graphs=%zu, cudaMallocs in warm decode %zu %s\n",
      label.c_str(), fp8.logits.size(), fast, dist.relative, dist.argmax, general,
      fp8_off.logits.size(), fp8.graphs, fp8.mallocs_in_warm_decode, ok ? "OK" : "FAIL");
  if (general != 0) {
    // Which steps differ and by how much (session 29 saw this check fail now and then on main's
    // binary, eager with the decode kernels off; cause open): step indices (0-2 the prefills)
    // and the logits' distance.
    const logits_distance gd = distance(fp8_off, bf16_off, vocab);
    std::printf("[gpu-kv-fp8] %-22s general kernels: differing steps", label.c_str());
    for (const size_t i : differing_steps(fp8_off, bf16_off)) std::printf(" %zu", i);
    std::printf(" (rel %.3g, argmax %.4f)\n", gd.relative, gd.argmax);
  }
  std::printf(
      "[gpu-kv-fp8] %-22s window + compressed KV pools: bf16 %.2f MiB, fp8 records %.2f MiB "
      "(%.3f); reserved device memory: %.1f vs %.1f MiB\n",
      label.c_str(), double(bf16.kv_pool_bytes) / (1 << 20), double(fp8.kv_pool_bytes) / (1 << 20),
      double(fp8.kv_pool_bytes) / double(bf16.kv_pool_bytes), double(bf16.reserved) / (1 << 20),
      double(fp8.reserved) / (1 << 20));
  for (int b = 1; b < 4; ++b)
    if (!fp8.step_ms[b].empty())
      std::printf(
          "[gpu-kv-fp8] %-22s decode step (batch %d, graph, median of %zu): bf16 pools %.3f ms, "
          "fp8 records %.3f ms\n",
          label.c_str(), b, fp8.step_ms[b].size(), median(bf16.step_ms[b]), median(fp8.step_ms[b]));
  // The engine's default schedule (alternate tiles): the decode step and the three prefills' wall
  // times (300 / 140 / 20 tokens; the first includes the runner's first-step costs).
  for (int b = 1; b < 4; ++b)
    if (!fp8_alt.step_ms[b].empty())
      std::printf(
          "[gpu-kv-fp8] %-22s alternate tiles: decode step (batch %d, graph, median of %zu): bf16 "
          "pools %.3f ms, fp8 records %.3f ms\n",
          label.c_str(), b, fp8_alt.step_ms[b].size(), median(bf16_alt.step_ms[b]),
          median(fp8_alt.step_ms[b]));
  if (bf16_alt.prefill_ms.size() == 3 && fp8_alt.prefill_ms.size() == 3)
    std::printf(
        "[gpu-kv-fp8] %-22s alternate tiles: prefills of 300 / 140 / 20 tokens (wall): bf16 pools "
        "%.2f / %.2f / %.2f ms, fp8 records %.2f / %.2f / %.2f ms\n",
        label.c_str(), bf16_alt.prefill_ms[0], bf16_alt.prefill_ms[1], bf16_alt.prefill_ms[2],
        fp8_alt.prefill_ms[0], fp8_alt.prefill_ms[1], fp8_alt.prefill_ms[2]);
  return ok;
}

// --repeat-general N: the general-kernel schedule of compare_kv_records (eager, decode kernels
// off) N times on each pool type, each run against the first run of its type and against the
// other type's run of the same index (bit for bit): which side varies from run to run, on which
// steps. A diagnostic for the flake of the records-gathered check (session 29); the backend's
// environment switches (DSV4_SIDE_BRANCH, DSV4_HC_GATES_APART, DSV4_PDL_SMALL, ...) and
// CUDA_LAUNCH_BLOCKING are set by the caller.
bool repeat_general_kernels(const std::string& label, const std::string& dir, int64_t vocab,
                            int repeats) {
  const std::vector<size_t> prompt{300, 140, 20};
  const auto official = precision_mode::official;
  std::vector<schedule_result> bf16, fp8;
  size_t varying = 0;
  auto steps_of = [](const std::vector<size_t>& steps) {
    std::string s;
    for (const size_t i : steps) s += " " + std::to_string(i);
    return s.empty() ? std::string(" none") : s;
  };
  for (int r = 0; r < repeats; ++r) {
    bf16.push_back(run_schedule(dir, official, false, prompt, 8, 1024, "bf16", false));
    fp8.push_back(
        run_schedule(dir, official, false, prompt, 8, 1024, "bf16", false, kv_cache_dtype::fp8));
    const auto b = differing_steps(bf16[size_t(r)], bf16[0]);
    const auto f = differing_steps(fp8[size_t(r)], fp8[0]);
    const auto x = differing_steps(fp8[size_t(r)], bf16[size_t(r)]);
    varying += b.size() + f.size();
    const logits_distance dx = distance(fp8[size_t(r)], bf16[size_t(r)], vocab);
    std::printf(
        "[gpu-kv-general] %-22s run %d: bf16 vs run 0, differing steps%s; fp8 vs run 0,%s; "
        "fp8 vs bf16 (this run),%s (rel %.3g)\n",
        label.c_str(), r, steps_of(b).c_str(), steps_of(f).c_str(), steps_of(x).c_str(),
        dx.relative);
  }
  return varying == 0;
}

// FP4 indexer keys (cache_options::indexer_fp4, on by default in the official mode) against the
// bf16 index pool alone, official precision, bf16 activations, graphs on (3 prefills of 300 / 140
// / 20 tokens through the fast indexer in 64-token chunks, then decode steps replaying graphs):
// hadamard_fp4 leaves exactly FP4 keys, the cache stores them exactly, and indexer_topk_fast_fp4
// widens them to the same bf16 MMA operands as the bf16-pool kernel, so the selections and the
// logits must be identical bit for bit.
bool compare_indexer_fp4(const std::string& label, const std::string& dir, int64_t vocab) {
  const std::vector<size_t> prompt{300, 140, 20};
  const auto official = precision_mode::official;
  const schedule_result fp4 = run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true);
  const schedule_result bf16 = run_schedule(dir, official, true, prompt, 24, 1024, "bf16", true,
                                            kv_cache_dtype::activations, false);
  const size_t differing = bitwise_differing_steps(fp4, bf16);
  const logits_distance dist = distance(fp4, bf16, vocab);
  const bool ok = differing == 0 && fp4.index_fp4_bytes > 0 && bf16.index_fp4_bytes == 0 &&
                  fp4.graphs == 2 && fp4.mallocs_in_warm_decode == 0;
  std::printf(
      "[gpu-index-fp4] %-22s official bf16: fp4 indexer keys vs bf16 pool, %zu steps (3 "
      "prefills + decode, graphs): %zu bitwise-differing (rel %.3g, argmax %.4f); fp4 key bytes "
      "%.2f MiB; graphs=%zu, cudaMallocs in warm decode %zu %s\n",
      label.c_str(), fp4.logits.size(), differing, dist.relative, dist.argmax,
      double(fp4.index_fp4_bytes) / (1 << 20), fp4.graphs, fp4.mallocs_in_warm_decode,
      ok ? "OK" : "FAIL");
  for (int b = 1; b < 4; ++b)
    if (!fp4.step_ms[b].empty())
      std::printf(
          "[gpu-index-fp4] %-22s decode step (batch %d, graph, median of %zu): bf16 keys %.3f ms, "
          "fp4 keys %.3f ms\n",
          label.c_str(), b, fp4.step_ms[b].size(), median(bf16.step_ms[b]), median(fp4.step_ms[b]));
  return ok;
}

// V4-Flash layer shapes (hidden 4096, 64 heads x 512, q/o lora 1024, 8 o_groups, indexer 64 x
// 128 top-512, expert intermediate 2048, top-6, window 128), three layers (sliding, CSA 4, HCA
// 128), 16 routed experts and vocab 16384 instead of 256 / 129280 (per-token decode work of the
// layers is unchanged: 6 experts per token either way). Official formats (FP8 + MXFP4 experts).
std::string make_flash_dims_checkpoint() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "dsv4_graph_flash_dims";
  const fs::path src = fs::path(DSV4_TEST_DATA_DIR) / "configs" / "official_small.json";
  nlohmann::json c = nlohmann::json::parse(std::ifstream(src));
  c["hidden_size"] = 4096;
  c["head_dim"] = 512;
  c["index_head_dim"] = 128;
  c["index_n_heads"] = 64;
  c["index_topk"] = 512;
  c["moe_intermediate_size"] = 2048;
  c["n_routed_experts"] = 16;
  c["num_attention_heads"] = 64;
  c["num_experts_per_tok"] = 6;
  c["o_groups"] = 8;
  c["o_lora_rank"] = 1024;
  c["q_lora_rank"] = 1024;
  c["qk_rope_head_dim"] = 64;
  c["sliding_window"] = 128;
  c["vocab_size"] = 16384;
  fs::create_directories(dir);
  const fs::path cfg = dir / "source_config.json";
  std::ofstream(cfg) << c.dump(2);
  make_synthetic_options o;
  o.config_path = cfg.string();
  o.layers = 3;
  o.seed = 7;
  o.out_dir = (dir / "model").string();
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = make_synthetic_checkpoint(o);
  std::printf("[gpu-graph] flash-dims synthetic checkpoint: %lld tensors, %.1f MiB, %.1f s\n",
              (long long)r.tensors, double(r.bytes) / (1 << 20),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return o.out_dir;
}

// The flash-dims checkpoint with every linear the quantizer's all-linear scope names in NVFP4
// (attention projections, wo_a, shared and routed experts; convert_checkpoint_to_nvfp4).
std::string make_flash_dims_nvfp4_checkpoint(const std::string& src) {
  namespace fs = std::filesystem;
  const fs::path out = fs::temp_directory_path() / "dsv4_graph_flash_dims_nvfp4";
  fs::remove_all(out);
  nvfp4_convert_options o;
  o.in_dir = src;
  o.out_dir = out.string();
  o.scope = nvfp4_scope::all_linear;
  const auto t0 = std::chrono::steady_clock::now();
  const nvfp4_convert_result r = convert_checkpoint_to_nvfp4(o);
  std::printf(
      "[gpu-graph] flash-dims NVFP4 all-linear checkpoint: %lld modules quantized, %.1f s\n",
      (long long)r.quantized,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return o.out_dir;
}

// The caching allocator's contract: reuse within a size class without cudaMalloc, private
// pools isolated from the shared cache until released, release_cached returning the cache.
bool allocator_checks() {
  cuda::device_allocator a(0);
  bool ok = true;
  auto expect = [&](bool c, const char* what) {
    if (!c) std::printf("[gpu-alloc] FAIL: %s\n", what);
    ok &= c;
  };
  expect(cuda::device_allocator::size_class(1) == 512 &&
             cuda::device_allocator::size_class(1000) == 1024 &&
             cuda::device_allocator::size_class((1 << 20) + 1) == (size_t(2) << 20) &&
             cuda::device_allocator::size_class((size_t(2) << 20) + 1) == (size_t(4) << 20),
         "size classes");
  auto x = a.allocate(1000);
  void* px = x.get();
  expect(a.allocated_bytes() == 1000 && a.reserved_bytes() == 1024, "stats after one block");
  x.reset();
  expect(a.allocated_bytes() == 0 && a.reserved_bytes() == 1024, "freed block stays reserved");
  auto y = a.allocate(900);  // same class
  expect(y.get() == px && a.malloc_count() == 1, "reuse without cudaMalloc");
  y.reset();
  auto pool = a.new_private_pool();
  void* pc = nullptr;
  {
    cuda::device_allocator::pool_scope scope(a, pool);
    auto c = a.allocate(1000);
    pc = c.get();
    expect(pc != px, "a private pool does not take shared blocks");
  }  // c freed into the private pool
  auto d = a.allocate(1000);
  expect(d.get() == px, "the shared cache does not take private blocks");
  {
    cuda::device_allocator::pool_scope scope(a, pool);
    auto c2 = a.allocate(1000);
    expect(c2.get() == pc, "a private pool reuses its own blocks");
  }
  pool.reset();  // the graph is gone and no block is live: its blocks become shared
  auto e = a.allocate(1000);
  expect(e.get() == pc && a.malloc_count() == 2, "a released pool's blocks join the shared cache");
  // Deferred frees (a side branch): held back until released, nested, also for a pool's blocks.
  void* pd = d.get();
  a.defer_frees();
  d.reset();
  a.defer_frees();
  auto f = a.allocate(1000);
  expect(f.get() != pd && a.malloc_count() == 3, "a deferred free is not handed out");
  a.release_deferred_frees();
  auto g = a.allocate(1000);
  expect(g.get() != pd, "a deferred free stays back until the outer release");
  a.release_deferred_frees();
  auto h = a.allocate(1000);
  expect(h.get() == pd && a.malloc_count() == 4, "released deferred frees are reused");
  auto pool2 = a.new_private_pool();
  void* pp = nullptr;
  a.defer_frees();
  {
    cuda::device_allocator::pool_scope scope(a, pool2);
    auto c3 = a.allocate(1000);
    pp = c3.get();
  }  // c3's free deferred; its pool stays alive through the deferred list
  pool2.reset();
  a.release_deferred_frees();  // the pool's last reference goes here: its blocks become shared
  auto k = a.allocate(1000);
  expect(k.get() == pp, "a deferred block of a released pool joins the shared cache");
  e.reset();
  f.reset();
  g.reset();
  h.reset();
  k.reset();
  a.release_cached();
  expect(a.reserved_bytes() == 0 && a.allocated_bytes() == 0, "release_cached");
  std::printf("[gpu-alloc] caching allocator checks %s\n", ok ? "OK" : "FAIL");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (cuda::list_devices().empty()) {
    std::printf("test_gpu_model: no CUDA device, skipped\n");
    return 0;
  }
  std::string only;
  bool synthetic = true, oracle = true, kv_fp8_only = false, index_fp4_only = false,
       repacked_only = false, repacked_dense_only = false, w8a8_wgmma_only = false;
  int repeat_general = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) only = argv[++i];
    // The routed-MoE decode's launch chain (moe_decode_set_chain) for this run: A/B of a
    // non-default chain under graph replay.
    if (a == "--moe-decode-chain" && i + 1 < argc) cuda::moe_decode_set_chain(std::atoi(argv[++i]));
    if (a == "--no-synthetic") synthetic = false;
    if (a == "--only-kv-fp8") kv_fp8_only = true;
    if (a == "--repeat-general" && i + 1 < argc) repeat_general = std::atoi(argv[++i]);
    if (a == "--only-index-fp4") index_fp4_only = true;
    if (a == "--only-repacked") repacked_only = true;
    if (a == "--only-repacked-dense") repacked_dense_only = true;
    if (a == "--only-w8a8-wgmma") w8a8_wgmma_only = true;
    if (a == "--no-oracle") oracle = false;
    if (a == "--profile-step" && i + 1 < argc) g_profile_step = std::atoi(argv[++i]);
  }
  if (g_profile_step >= 0) {  // one official bf16 run on the flash-dims checkpoint, graphs on
    try {
      const std::string dir = make_flash_dims_checkpoint();
      const schedule_result r =
          run_schedule(dir, precision_mode::official, true, {300, 140, 20}, 24, 1024, "bf16", true);
      std::printf(
          "[gpu-profile] flash-dims-3-layers official bf16: decode step %d profiled; "
          "batch 3 step median %.3f ms (graph)\n",
          g_profile_step, r.step_ms[3].empty() ? 0.0 : median(r.step_ms[3]));
      return 0;
    } catch (const std::exception& e) {
      std::printf("[gpu-profile] FAIL: %s\n", e.what());
      return 1;
    }
  }
  int failures = 0, cases = 1;
  failures += !allocator_checks();
  if (repacked_only) {  // the routed-expert layouts alone (timings without other GPU work)
    try {
      const std::string dir = make_flash_dims_checkpoint();
      ++cases;
      failures += !compare_fp8_input_copy("flash-dims-3-layers", dir);
      for (precision_mode p : {precision_mode::official, precision_mode::exact}) {
        ++cases;
        failures += !compare_repacked_experts("flash-dims-3-layers", dir, 16384, p);
      }
      ++cases;
      failures += !compare_side_branches("flash-dims-3-layers", dir);
      ++cases;
      failures += !compare_hc_gates_apart("flash-dims-3-layers", dir);
      ++cases;
      failures += !compare_tables_early("flash-dims-3-layers", dir);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-repacked-experts] FAIL: %s\n", e.what());
    }
    std::printf("%d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
  }
  if (repacked_dense_only) {  // dense NVFP4 layouts alone (an all-linear NVFP4 checkpoint)
    try {
      const std::string dir = make_flash_dims_nvfp4_checkpoint(make_flash_dims_checkpoint());
      for (precision_mode p : {precision_mode::official, precision_mode::exact}) {
        ++cases;
        failures += !compare_repacked_dense("flash-dims-nvfp4", dir, 16384, p);
      }
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-repacked-dense] FAIL: %s\n", e.what());
    }
    std::printf("%d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
  }
  if (w8a8_wgmma_only) {  // the W8A8 wgmma linear in the model alone
    ++cases;
    try {
      failures += !compare_w8a8_wgmma("flash-dims-3-layers", make_flash_dims_checkpoint(), 16384);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-w8a8-wgmma] FAIL: %s\n", e.what());
    }
    std::printf("%d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
  }
  if (repeat_general > 0) {  // a diagnostic: no other check runs
    try {
      ++cases;
      failures += !repeat_general_kernels("flash-dims-3-layers", make_flash_dims_checkpoint(),
                                          16384, repeat_general);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-kv-general] FAIL: %s\n", e.what());
    }
    std::printf("%d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
  }
  if (kv_fp8_only || index_fp4_only) {
    ++cases;
    try {
      const std::string dir = make_flash_dims_checkpoint();
      failures += kv_fp8_only ? !compare_kv_records("flash-dims-3-layers", dir, 16384)
                              : !compare_indexer_fp4("flash-dims-3-layers", dir, 16384);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-kv-fp8 / index-fp4] FAIL: %s\n", e.what());
    }
    std::printf("%d passed, %d failed\n", cases - failures, failures);
    return failures ? 1 : 0;
  }
  for (const std::string& name : testing::fixture_cases()) {
    if (!only.empty() && name != only) continue;
    const std::string dir = testing::fixture_dir(name);
    for (const char* act : {"f32", "bf16"}) {
      if (!oracle) break;
      try {
        const auto x = testing::load_expected(dir);
        runner_options o;
        o.device = "cuda";
        o.precision = precision_mode::exact;  // the oracle has no fake quantization
        o.activations = act;
        o.cache.max_sequences = 2;
        o.cache.max_context = int64_t(x.ids.size());
        auto runner = model_runner::load(dir, o);
        std::printf("[gpu-model] %-18s %-4s device memory after load: %.1f MiB\n", name.c_str(),
                    act, double(backend_memory_bytes(runner->backend())) / (1 << 20));
        const int64_t n = int64_t(x.ids.size());
        std::vector<int64_t> decode{x.decode_from};
        for (int64_t i = x.decode_from; i < n; ++i) decode.push_back(1);
        const std::pair<const char*, std::pair<const tensor*, std::vector<int64_t>>> modes[] = {
            {"prefill", {&x.prefill, {n}}},
            {"chunked", {&x.chunked, x.chunks}},
            {"decode", {&x.decode, decode}}};
        for (const auto& [mode, spec] : modes) {
          const tensor got = run_chunks(*runner, x.ids, spec.second);
          const auto a = testing::compare_logits(*spec.first, got);
          const bool issue = a.argmax_agreement >= 0.99 && a.mean_kl <= 1e-3;
          const bool bf16 = std::string(act) == "bf16";
          const bool oracle_floor = a.argmax_agreement >= 0.90 && a.mean_kl <= 2.5e-2;
          const bool ok = bf16 && name != "trained_small" ? oracle_floor : issue;
          ++cases;
          failures += !ok;
          std::printf(
              "[gpu-model] %-18s %-4s %-8s n=%lld max|diff|=%.3g mean-KL=%.3g argmax=%.4f %s%s\n",
              name.c_str(), act, mode, (long long)n, a.max_abs_diff, a.mean_kl, a.argmax_agreement,
              ok ? "OK" : "FAIL",
              !bf16                     ? ""
              : name == "trained_small" ? " (asserts the issue criterion)"
              : issue                   ? " (issue-criterion met)"
                                        : " (issue-criterion missed)");
        }
        // The decode mode above ran through graphs (one-token steps, graphs on by default).
        ++cases;
        const bool used = runner->captured_graphs() == 1;
        failures += !used;
        std::printf("[gpu-model] %-18s %-4s decode used %zu graph(s) %s\n", name.c_str(), act,
                    runner->captured_graphs(), used ? "OK" : "FAIL");
      } catch (const std::exception& e) {
        ++cases;
        ++failures;
        std::printf("[gpu-model] %-18s %-4s FAIL: %s\n", name.c_str(), act, e.what());
      }
    }
    // Prompts 500 / 130 / 7 then 48 decode steps: windows cross the 128-row blocks at 128 and 512
    // and the CSA entries (rate 4) their first 128-entry block at 512.
    const std::vector<precision_mode> precisions =
        name == "official_format"
            ? std::vector<precision_mode>{precision_mode::exact, precision_mode::official}
            : std::vector<precision_mode>{precision_mode::exact};
    for (precision_mode p : precisions) {
      ++cases;
      try {
        failures += !compare_graph_decode(name, dir, p, {500, 130, 7}, 48, 600);
      } catch (const std::exception& e) {
        ++failures;
        std::printf("[gpu-graph] %-18s FAIL: %s\n", name.c_str(), e.what());
      }
    }
    // Eighteen sequences: decode batches of 17-18 take linear_gemm (cuBLAS) for this fixture's
    // FP8 projections (<= 512 rows, > 16 tokens: linear_dispatch.h) inside the captured graphs,
    // and linear_decode with K split over warps before the shorter prompts finish.
    if (name == "official_format") {
      ++cases;
      try {
        failures += !compare_graph_decode(
            name + "-18seq", dir, precision_mode::official,
            {40, 9, 17, 3, 25, 11, 5, 30, 2, 14, 21, 8, 33, 6, 19, 12, 27, 4}, 20, 600);
      } catch (const std::exception& e) {
        ++failures;
        std::printf("[gpu-graph] %-18s-18seq FAIL: %s\n", name.c_str(), e.what());
      }
    }
  }
  if (synthetic && only.empty()) {
    ++cases;
    try {
      const std::string dir = make_flash_dims_checkpoint();
      failures += !compare_graph_decode("flash-dims-3-layers", dir, precision_mode::official,
                                        {300, 140, 20}, 40, 1024);
      // Batches of 6 and 5 at Flash dims: linear_decode for every FP8 projection (K split over
      // 1-16 warps per row tile by linear_decode_make_split) inside the graphs.
      ++cases;
      failures += !compare_graph_decode("flash-dims-6seq", dir, precision_mode::official,
                                        {64, 9, 17, 3, 25, 11}, 16, 1024);
      ++cases;
      failures += !compare_decode_kernels("flash-dims-3-layers", dir, 16384, precision_mode::exact);
      ++cases;
      failures +=
          !compare_decode_kernels("flash-dims-3-layers", dir, 16384, precision_mode::official);
      ++cases;
      failures +=
          !compare_repacked_experts("flash-dims-3-layers", dir, 16384, precision_mode::official);
      ++cases;
      failures +=
          !compare_repacked_experts("flash-dims-3-layers", dir, 16384, precision_mode::exact);
      ++cases;
      failures += !compare_kv_records("flash-dims-3-layers", dir, 16384);
      ++cases;
      failures += !compare_indexer_fp4("flash-dims-3-layers", dir, 16384);
      ++cases;
      failures += !compare_fp8_input_copy("flash-dims-3-layers", dir);
      ++cases;
      failures += !compare_w8a8_wgmma("flash-dims-3-layers", dir, 16384);
      ++cases;
      failures += !compare_side_branches("flash-dims-3-layers", dir);
      ++cases;
      failures += !compare_hc_gates_apart("flash-dims-3-layers", dir);
      ++cases;
      failures += !compare_tables_early("flash-dims-3-layers", dir);
    } catch (const std::exception& e) {
      ++failures;
      std::printf("[gpu-graph] flash-dims FAIL: %s\n", e.what());
    }
  }
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures ? 1 : 0;
}
