// `dsv4 quantize --format nvfp4` end to end through the binary: the output has NVIDIA's layout
// (names, dtypes, shapes, hf_quant_config.json, config.json), the engine loads it on the CPU, and
// its logits stay within the measured quantization error budget of the oracle fixture's
// (official_format: FP8 + MXFP4; mixed_small: F32 save_pretrained names). MXFP4 experts convert
// exactly, so official_format --scope experts must match the oracle as tightly as the original.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/model_runner.h"
#include "io/checkpoint.h"
#include "model/fixture_model.h"
#include "model/fixture_runner.h"
#include "tools/cli_test.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;
using testing::compare_logits;
using testing::fixture_dir;
using testing::load_expected;
using testing::logit_agreement;
using testing::run_chunks;
using testing::run_result;

class quantize_cli : public testing::cli_test {
 protected:
  run_result quantize(const std::string& model, const std::string& scope, const fs::path& out) {
    return run("quantize --model '" + model + "' --out '" + out.string() +
               "' --format nvfp4 --scope " + scope);
  }

  // Logits of the quantized model (prefill of the fixture ids) against the oracle's.
  logit_agreement logits_vs_oracle(const std::string& fixture, const fs::path& quantized,
                                   const std::string& what) {
    const testing::expected_logits x = load_expected(fixture_dir(fixture));
    const int64_t n = int64_t(x.ids.size());
    runner_options o;
    o.cache.max_sequences = 1;
    o.cache.max_context = n;
    o.precision = precision_mode::exact;
    auto runner = model_runner::load(quantized.string(), o);
    const tensor got = run_chunks(*runner, x.ids, {n});
    const logit_agreement a = compare_logits(x.prefill, got);
    std::printf(
        "[quantize] %-28s n=%lld max|diff|=%.4g median-row-max=%.4g mean-KL=%.4g "
        "argmax=%.4f\n",
        what.c_str(), (long long)n, a.max_abs_diff, a.median_row_max_diff, a.mean_kl,
        a.argmax_agreement);
    return a;
  }

  void expect_clean_error(const run_result& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("dsv4: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    // Refused before any module was converted: no table header on stdout.
    EXPECT_EQ(r.out.find("inexact blocks"), std::string::npos) << r.out;
  }
};

nlohmann::json read_json(const fs::path& p) {
  return nlohmann::json::parse(testing::read_text(p));
}

TEST_F(quantize_cli, official_experts_convert_exactly_in_nvidia_layout) {
  const fs::path out = dir_ / "q";
  const run_result r = quantize(fixture_dir("official_format"), "experts", out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // 4 layers + 1 MTP block, 4 experts, 3 projections; MXFP4 sources convert with no error.
  EXPECT_NE(r.out.find("quantized 60 modules"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relative rms: overall 0.0000e+00, worst 0.0000e+00"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("layers.2.ffn.experts.3.w2"), std::string::npos) << r.out;

  const checkpoint q = checkpoint::open(out.string());
  const checkpoint in = checkpoint::open(fixture_dir("official_format"));
  const tensor_view w = q.view("layers.1.ffn.experts.2.w3.weight");
  EXPECT_EQ(w.type, dtype::u8);
  EXPECT_EQ(w.shape, (dims{64, 32}));
  const tensor_view s = q.view("layers.1.ffn.experts.2.w3.weight_scale");
  EXPECT_EQ(s.type, dtype::f8_e4m3);
  EXPECT_EQ(s.shape, (dims{64, 4}));
  const tensor_view s2 = q.view("layers.1.ffn.experts.2.w3.weight_scale_2");
  EXPECT_EQ(s2.type, dtype::f32);
  EXPECT_EQ(s2.shape.rank(), 0);
  // w1 and w3 share the global scale.
  EXPECT_EQ(std::memcmp(s2.data, q.view("layers.1.ffn.experts.2.w1.weight_scale_2").data, 4), 0);
  EXPECT_FALSE(q.has("layers.1.ffn.experts.2.w3.scale"));
  EXPECT_TRUE(q.has("mtp.0.ffn.experts.0.w1.weight_scale"));
  // Everything else byte for byte.
  int64_t copied = 0;
  for (const std::string& name : in.names()) {
    if (name.find(".ffn.experts.") != std::string::npos) continue;
    const tensor_view a = in.view(name), b = q.view(name);
    ASSERT_EQ(a.type, b.type) << name;
    ASSERT_EQ(a.shape, b.shape) << name;
    ASSERT_EQ(std::memcmp(a.data, b.data, a.bytes()), 0) << name;
    ++copied;
  }
  EXPECT_GT(copied, 100);

  const nlohmann::json hq = read_json(out / "hf_quant_config.json");
  EXPECT_EQ(hq["producer"]["name"], "dsv4");
  EXPECT_EQ(hq["quantization"]["quant_algo"], "MIXED_PRECISION");
  EXPECT_EQ(hq["quantization"]["group_size"], 16);
  EXPECT_EQ(hq["quantization"]["quantized_layers"].size(), 60u);
  EXPECT_EQ(hq["quantization"]["quantized_layers"]["layers.3.ffn.experts.0.w2"]["quant_algo"],
            "NVFP4");
  const nlohmann::json cfg = read_json(out / "config.json");
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "fp8");
  EXPECT_EQ(cfg["quantization_config"]["moe_quant_algo"], "NVFP4");
  EXPECT_TRUE(fs::exists(out / "expected.safetensors"));  // other files copied

  // Exact conversion: the oracle parity of the original checkpoint (tolerance of the fixture
  // parity tests, 2e-3; the engine reaches ~2e-5 on the original).
  const logit_agreement a = logits_vs_oracle("official_format", out, "official experts");
  EXPECT_LE(a.max_abs_diff, 2e-3);
  EXPECT_EQ(a.argmax_agreement, 1.0);
}

// Lossy cases: the error budget, measured 2026-11-22 on the CPU (printed by the test; the quantizer
// and the CPU engine are deterministic, so the figures reproduce), prefill logits vs the oracle:
//
//   case                          weight rel. RMS (overall)  mean KL  argmax  max|diff|
//   official_format all-linear    6.8e-2 (MXFP4 part exact)  0.329    0.583   7.03
//   mixed_small experts           9.6e-2                     0.365    0.531   7.01
//   mixed_small all-linear        9.5e-2                     0.593    0.375   7.45
//
// These tiny random models are very sensitive (the official-precision test saw KL 0.13 from FP8
// activations alone). Control, same scopes of mixed_small, Gaussian noise of the same relative RMS
// (9.5%) added to each tensor instead of quantizing (one-off, 3/2 seeds): experts KL 0.41-0.47,
// argmax 0.48-0.53; all-linear KL 0.64-0.73, argmax 0.33-0.41; 30% noise: KL 1.55, argmax 0.22;
// 1% noise: KL 0.03. So NVFP4 costs what its RMS error predicts, no more. Bounds: about 1.5x the
// measured KL (still below the noise level x3), argmax 0.12-0.13 below the measured, max|diff|
// 1.5x: a quantizer no worse than noise of its own RMS passes, a layout or rounding bug fails.
struct lossy_case {
  const char* fixture;
  const char* scope;
  double max_kl;
  double min_argmax;
  double max_abs;
};

void PrintTo(const lossy_case& c, std::ostream* os) {
  *os << c.fixture << " --scope " << c.scope;
}

class quantize_lossy : public quantize_cli, public ::testing::WithParamInterface<lossy_case> {};

TEST_P(quantize_lossy, engine_logits_stay_within_the_measured_budget) {
  const lossy_case c = GetParam();
  const fs::path out = dir_ / "q";
  const run_result r = quantize(fixture_dir(c.fixture), c.scope, out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::printf("%s", r.out.substr(r.out.find("quantized ")).c_str());
  const nlohmann::json hq = read_json(out / "hf_quant_config.json");
  EXPECT_GT(hq["quantization"]["quantized_layers"].size(), 0u);
  const logit_agreement a =
      logits_vs_oracle(c.fixture, out, fmt::format("{} {}", c.fixture, c.scope));
  EXPECT_LE(a.mean_kl, c.max_kl);
  EXPECT_GE(a.argmax_agreement, c.min_argmax);
  EXPECT_LE(a.max_abs_diff, c.max_abs);
}

INSTANTIATE_TEST_SUITE_P(
    fixtures, quantize_lossy,
    ::testing::Values(lossy_case{"official_format", "all-linear", 0.50, 0.46, 10.5},
                      lossy_case{"mixed_small", "experts", 0.55, 0.40, 10.5},
                      lossy_case{"mixed_small", "all-linear", 0.90, 0.25, 11.0}),
    [](const auto& info) {
      std::string name = std::string(info.param.fixture) + "_" + info.param.scope;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// A sharded official checkpoint (make-synthetic: 6 shards + index) comes out with the same shard
// files, an index naming each tensor's shard, and loads and runs in the engine.
TEST_F(quantize_cli, shards_follow_the_input_and_the_engine_runs_the_result) {
  const fs::path model = dir_ / "model", out = dir_ / "q";
  const run_result w = run("make-synthetic --config '" DSV4_TEST_DATA_DIR
                           "/configs/official_small.json' --layers 3 --mtp --seed 5 --out '" +
                           model.string() + "'");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const run_result r = quantize(model.string(), "all-linear", out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("6 shards"), std::string::npos) << r.out;
  for (const auto& e : fs::directory_iterator(model)) {
    if (e.path().extension() == ".safetensors") {
      EXPECT_TRUE(fs::exists(out / e.path().filename())) << e.path();
    }
  }
  const nlohmann::json index = read_json(out / "model.safetensors.index.json");
  const checkpoint q = checkpoint::open(out.string());
  EXPECT_EQ(index["weight_map"].size(), q.names().size());
  for (const auto& [name, shard] : index["weight_map"].items()) {
    const checkpoint_tensor t = q.find(name);
    ASSERT_NE(t.file, nullptr) << name;
    EXPECT_EQ(fs::path(t.file->path()).filename().string(), shard.get<std::string>()) << name;
  }
  EXPECT_EQ(q.view("layers.2.attn.wo_b.weight").type, dtype::u8);
  EXPECT_EQ(q.view("mtp.0.e_proj.weight").type, dtype::u8);
  EXPECT_EQ(q.view("layers.0.ffn.gate.weight").type, dtype::bf16);  // the router stays
  const nlohmann::json cfg = read_json(out / "config.json");
  EXPECT_EQ(cfg["quantization_config"]["quant_method"], "modelopt");  // no FP8 weight remains

  runner_options o;
  o.cache.max_sequences = 1;
  o.cache.max_context = 16;
  auto runner = model_runner::load(out.string(), o);
  const tensor logits = run_chunks(*runner, {1, 5, 9, 2, 7, 3}, {4, 1, 1});
  for (int64_t i = 0; i < logits.numel(); ++i) ASSERT_TRUE(std::isfinite(logits.data<float>()[i]));
}

TEST_F(quantize_cli, bad_input_gives_clear_errors) {
  const std::string model = fixture_dir("official_format");
  expect_clean_error(run("quantize --model '" + (dir_ / "missing").string() + "' --out '" +
                         (dir_ / "o1").string() + "' --format nvfp4"),
                     "not a directory");
  expect_clean_error(
      run("quantize --model '" + model + "' --out '" + (dir_ / "o2").string() + "' --format mxfp8"),
      "unknown quantization format 'mxfp8'");
  expect_clean_error(run("quantize --model '" + model + "' --out '" + (dir_ / "o3").string() +
                         "' --format nvfp4 --scope attention"),
                     "unknown quantization scope 'attention'");
  // Already NVFP4 in scope: refused, nothing written.
  expect_clean_error(run("quantize --model '" + fixture_dir("nvfp4_experts") + "' --out '" +
                         (dir_ / "o4").string() + "' --format nvfp4 --scope experts"),
                     "nothing to quantize in scope experts: 60 in-scope modules already NVFP4");
  EXPECT_FALSE(fs::exists(dir_ / "o4"));
  // transformers module names (stacked experts) are not a supported input spelling.
  expect_clean_error(run("quantize --model '" + fixture_dir("module_names") + "' --out '" +
                         (dir_ / "o6").string() + "' --format nvfp4"),
                     "no linear weights in scope experts");
  // A non-empty output directory is refused.
  fs::create_directories(dir_ / "o5");
  std::ofstream(dir_ / "o5" / "x") << "x";
  expect_clean_error(
      run("quantize --model '" + model + "' --out '" + (dir_ / "o5").string() + "' --format nvfp4"),
      "exists and is not an empty directory");
}

TEST_F(quantize_cli, already_nvfp4_experts_are_copied_when_other_linears_convert) {
  const fs::path out = dir_ / "q";
  const run_result r = quantize(fixture_dir("nvfp4_experts"), "all-linear", out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("60 already nvfp4"), std::string::npos) << r.out;
  const checkpoint in = checkpoint::open(fixture_dir("nvfp4_experts"));
  const checkpoint q = checkpoint::open(out.string());
  for (const char* name :
       {"layers.0.ffn.experts.1.w2.weight", "layers.0.ffn.experts.1.w2.input_scale"}) {
    ASSERT_TRUE(q.has(name)) << name;
    EXPECT_EQ(std::memcmp(in.view(name).data, q.view(name).data, in.view(name).bytes()), 0);
  }
  EXPECT_EQ(q.view("layers.0.attn.wq_a.weight").type, dtype::u8);
  EXPECT_FALSE(q.has("layers.0.attn.wq_a.scale"));
  const nlohmann::json hq = read_json(out / "hf_quant_config.json");
  EXPECT_TRUE(hq["quantization"]["quantized_layers"].contains("layers.0.attn.wq_a"));
  EXPECT_TRUE(hq["quantization"]["quantized_layers"].contains("layers.0.ffn.experts.1.w2"));
}

}  // namespace
}  // namespace dsv4
