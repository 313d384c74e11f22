// `dsv4 inspect` on a small checkpoint written here: the reported counts must match the tensors
// written (expected numbers worked out from the shapes and the dtype widths of the safetensors
// format), and bad input must give exit code 1 with one `dsv4: error:` line on stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/tensor.h"
#include "io/safetensors.h"
#include "tools/cli_test.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

using testing::run_result;

class InspectCli : public testing::cli_test {
 protected:
  void SetUp() override {
    cli_test::SetUp();
    fs::create_directories(dir_ / "model");
  }

  void write_config() {
    fs::copy_file(DSV4_TEST_DATA_DIR "/configs/legacy_tiny.json", dir_ / "model" / "config.json",
                  fs::copy_options::overwrite_existing);
  }

  // Tensors of several dtypes, official names of the 3-layer tiny model.
  void write_checkpoint() {
    safetensors_writer w;
    w.add("embed.weight", tensor::zeros(dtype::bf16, {64, 32}).view());
    w.add("layers.0.attn.wq_a.weight", tensor::zeros(dtype::f8_e4m3, {16, 32}).view());
    w.add("layers.0.attn.wq_a.scale", tensor::zeros(dtype::f8_e8m0, {1, 1}).view());
    w.add("layers.0.attn.attn_sink", tensor::zeros(dtype::f32, {2}).view());
    w.add("layers.0.ffn.gate.tid2eid", tensor::zeros(dtype::i64, {64, 2}).view());
    // MXFP4 expert: [16, 32] logical stored as I8 [16, 16] bytes, E8M0 scale [16, 1].
    w.add("layers.0.ffn.experts.0.w1.weight", tensor::zeros(dtype::i8, {16, 16}).view());
    w.add("layers.0.ffn.experts.0.w1.scale", tensor::zeros(dtype::f8_e8m0, {16, 1}).view());
    w.add("mtp.0.enorm.weight", tensor::zeros(dtype::bf16, {32}).view());
    w.write((dir_ / "model" / "model.safetensors").string());
  }
};

TEST_F(InspectCli, JsonCountsMatchTheCheckpoint) {
  write_config();
  write_checkpoint();
  const run_result r = run("inspect --json --model '" + (dir_ / "model").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);

  const auto& ck = j["checkpoint"];
  EXPECT_EQ(ck["tensors"], 8);
  EXPECT_EQ(ck["mtp_tensors"], 1);
  EXPECT_EQ(ck["files"], 1);
  EXPECT_EQ(ck["naming"], "official");
  // BF16: 64*32 + 32 elements, 2 bytes each.
  EXPECT_EQ(ck["by_dtype"]["BF16"]["tensors"], 2);
  EXPECT_EQ(ck["by_dtype"]["BF16"]["parameters"], 2048 + 32);
  EXPECT_EQ(ck["by_dtype"]["BF16"]["bytes"], 2 * (2048 + 32));
  EXPECT_EQ(ck["by_dtype"]["F8_E4M3"]["bytes"], 512);
  EXPECT_EQ(ck["by_dtype"]["F8_E8M0"]["tensors"], 2);
  EXPECT_EQ(ck["by_dtype"]["F8_E8M0"]["bytes"], 1 + 16);
  EXPECT_EQ(ck["by_dtype"]["F32"]["bytes"], 8);
  EXPECT_EQ(ck["by_dtype"]["I64"]["bytes"], 64 * 2 * 8);
  EXPECT_EQ(ck["by_dtype"]["I64"]["parameters"], 128);
  // Packed FP4: 256 bytes hold 512 logical weights.
  EXPECT_EQ(ck["by_dtype"]["I8"]["bytes"], 256);
  EXPECT_EQ(ck["by_dtype"]["I8"]["parameters"], 512);
  const int64_t parameters = 2048 + 32 + 512 + 1 + 2 + 128 + 512 + 16;
  const int64_t bytes = 2 * (2048 + 32) + 512 + 1 + 8 + 1024 + 256 + 16;
  EXPECT_EQ(ck["parameters"], parameters);
  EXPECT_EQ(ck["bytes"], bytes);

  EXPECT_EQ(j["config"]["hidden_size"], 32);
  EXPECT_EQ(j["config"]["num_hidden_layers"], 3);
  EXPECT_EQ(j["config"]["n_routed_experts"], 4);
  EXPECT_EQ(j["schedule"]["attention"], "SCH");
  EXPECT_EQ(j["schedule"]["router"], "hss");
  ASSERT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][1]["attention"], "csa");
  EXPECT_EQ(j["layers"][1]["compress_rate"], 4);
  EXPECT_EQ(j["layers"][2]["compress_rate"], 128);
  EXPECT_EQ(j["layers"][0]["router"], "hash");
  EXPECT_TRUE(j["config"]["rope_compress"]["yarn"]);
  EXPECT_FALSE(j["config"]["rope_main"]["yarn"]);
}

TEST_F(InspectCli, TextOutputHasTotalsAndSchedule) {
  write_config();
  write_checkpoint();
  const run_result r = run("inspect --model '" + (dir_ / "model").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t parameters = 2048 + 32 + 512 + 1 + 2 + 128 + 512 + 16;
  const int64_t bytes = 2 * (2048 + 32) + 512 + 1 + 8 + 1024 + 256 + 16;
  EXPECT_NE(r.out.find("parameters: " + std::to_string(parameters) + "\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bytes: " + std::to_string(bytes) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attention SCH "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("router    hss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 sliding, 1 csa, 1 hca; 1 hash-routed"), std::string::npos) << r.out;
}

void expect_one_error_line(const run_result& r, const std::string& mention) {
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("dsv4: error: ", 0), 0u) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
}

TEST_F(InspectCli, MissingDirectoryFails) {
  const std::string missing = (dir_ / "no_such_model").string();
  expect_one_error_line(run("inspect --model '" + missing + "'"), missing);
}

TEST_F(InspectCli, BadConfigFails) {
  write_checkpoint();
  std::ofstream(dir_ / "model" / "config.json") << R"({"hidden_size": "big"})";
  expect_one_error_line(run("inspect --model '" + (dir_ / "model").string() + "'"),
                        "'hidden_size'");
  std::ofstream(dir_ / "model" / "config.json") << "{ not json";
  expect_one_error_line(run("inspect --model '" + (dir_ / "model").string() + "'"), "config.json");
}

TEST_F(InspectCli, MissingConfigAndWeightsFail) {
  expect_one_error_line(run("inspect --model '" + (dir_ / "model").string() + "'"), "config.json");
  write_config();
  expect_one_error_line(run("inspect --model '" + (dir_ / "model").string() + "'"), "safetensors");
}

}  // namespace
}  // namespace dsv4
