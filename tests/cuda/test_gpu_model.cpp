// The whole model on the CUDA backend against transformers' logits (the oracle fixtures of
// tests/fixtures/models), in full prefill, chunked prefill and decode, with f32 and with bf16
// activation storage. Not a ctest test (CI has no GPU): run on the GPU machine by
// scripts/gpu_parity.sh.
//
// f32: the issue's thresholds (argmax agreement >= 99%, mean KL(ref || gpu) <= 1e-3); f32 lands
// ~9 orders of magnitude under them.
// bf16: the issue's BF16 criterion is printed per run ("issue-criterion met/missed") but the
// assertion is the oracle's own bf16 noise floor on these fixtures: the tiny random models
// (hidden 32-48, near-tied routers and indexers by construction) amplify one bf16 rounding into
// discrete top-k flips. transformers itself in bf16 against its fp32 logits (prefill, CPU,
// measured 2026-11-22): mixed_small KL 0.022 argmax 93.8%, module_names KL 0.018 argmax 87.5%,
// real_rates_long KL 0.010 argmax 97.3%. dsv4 bf16 must stay within that floor: mean KL <= 2.5e-2
// and argmax >= 90% (a wrong op gives KL ~1 and argmax near 1 / vocab).
#include <cstdio>
#include <string>
#include <vector>

#include "backends/cuda/device_info.h"
#include "core/error.h"
#include "engine/model_runner.h"
#include "model/fixture_model.h"
#include "model/fixture_runner.h"

using namespace dsv4;
using dsv4::testing::run_chunks;

int main() {
  if (cuda::list_devices().empty()) {
    std::printf("test_gpu_model: no CUDA device, skipped\n");
    return 0;
  }
  int failures = 0, cases = 0;
  for (const std::string& name : testing::fixture_cases()) {
    for (const char* act : {"f32", "bf16"}) {
      try {
        const std::string dir = testing::fixture_dir(name);
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
          const bool ok = bf16 ? a.argmax_agreement >= 0.90 && a.mean_kl <= 2.5e-2 : issue;
          ++cases;
          failures += !ok;
          std::printf(
              "[gpu-model] %-18s %-4s %-8s n=%lld max|diff|=%.3g mean-KL=%.3g argmax=%.4f %s%s\n",
              name.c_str(), act, mode, (long long)n, a.max_abs_diff, a.mean_kl, a.argmax_agreement,
              ok ? "OK" : "FAIL",
              bf16 ? (issue ? " (issue-criterion met)" : " (issue-criterion missed)") : "");
        }
      } catch (const std::exception& e) {
        ++cases;
        ++failures;
        std::printf("[gpu-model] %-18s %-4s FAIL: %s\n", name.c_str(), act, e.what());
      }
    }
  }
  std::printf("%d passed, %d failed\n", cases - failures, failures);
  return failures ? 1 : 0;
}
