// `dsv4 logits` and `dsv4 generate` end to end through the binary: logits match the oracle
// fixture, generation is deterministic for a seed, and bad input exits 1 with one
// `dsv4: error:` line (never a crash).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/safetensors.h"
#include "model/fixture_model.h"
#include "tools/cli_test.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

using testing::run_result;

class model_cli : public testing::cli_test {
 protected:
  void expect_clean_error(const run_result& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("dsv4: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
};

std::string join(const std::vector<int32_t>& v, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

TEST_F(model_cli, logits_in_chunks_match_the_oracle) {
  const std::string model = testing::fixture_dir("mixed_small");
  const auto x = testing::load_expected(model);
  const std::string ids = join(x.ids, x.ids.size());
  std::string chunks;
  for (int64_t c : x.chunks) {
    if (!chunks.empty()) chunks += ',';
    chunks += std::to_string(c);
  }
  for (const std::string& mode : {std::string(""), " --chunks " + chunks,
                                  " --decode-from " + std::to_string(x.decode_from)}) {
    const fs::path out = dir_ / "logits.safetensors";
    const run_result r =
        run("logits --model '" + model + "' --ids " + ids + mode + " --out '" + out.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto f = safetensors_file::open(out.string());
    const tensor got = tensor::to_f32(f->view(*f->find("logits")));
    const auto a = testing::compare_logits(x.prefill, got);
    EXPECT_LE(a.max_abs_diff, 2e-3) << mode;
  }
}

TEST_F(model_cli, generate_is_deterministic_for_a_seed) {
  const std::string model = testing::fixture_dir("mixed_small");
  const std::string args =
      "generate --model '" + model + "' --prompt-ids 3,1,4,1,5 -n 12 --ignore-eos --seed 9";
  const run_result a = run(args + " --temperature 0.8 --top-p 0.9");
  const run_result b = run(args + " --temperature 0.8 --top-p 0.9");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(std::count(a.out.begin(), a.out.end(), ','), 11) << a.out;
  // Greedy generation equals the argmax of the oracle's logits for the fixture prompt's prefix.
  const auto x = testing::load_expected(model);
  const run_result g = run("generate --model '" + model + "' --prompt-ids " + join(x.ids, 10) +
                           " -n 1 --temperature 0 --ignore-eos");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const int64_t vocab = x.prefill.size(1);
  const float* row = x.prefill.data<float>() + 9 * vocab;
  const int64_t argmax = std::max_element(row, row + vocab) - row;
  EXPECT_EQ(std::stoll(g.out), argmax);
}

TEST_F(model_cli, bad_input_is_a_one_line_error) {
  // fmt rather than "literal" + std::string: g++ 12 warns falsely (-Wrestrict) on the latter.
  const std::string model = fmt::format("'{}'", testing::fixture_dir("mixed_small"));
  const std::string out = fmt::format(" --out '{}'", (dir_ / "x.safetensors").string());
  expect_clean_error(run("logits --model " + model + " --ids 1,2,999999" + out), "out of range");
  expect_clean_error(run("logits --model " + model + " --ids 1,-2" + out), "-2");
  expect_clean_error(run("logits --model " + model + " --ids 1,x" + out), "--ids");
  expect_clean_error(run("logits --model " + model + " --ids ''" + out), "--ids");
  expect_clean_error(run("logits --model " + model + " --ids 1,2 --chunks 1,2" + out), "--chunks");
  expect_clean_error(run("logits --model " + model + " --ids 1,2 --decode-from 3" + out),
                     "--decode-from");
  expect_clean_error(run("logits --model '" + (dir_ / "nope").string() + "' --ids 1" + out),
                     "nope");
  expect_clean_error(run("generate --model " + model + " --prompt-ids 1 --top-p 0"), "top_p");
  expect_clean_error(run("generate --model " + model + " -n 2"), "--prompt");
  expect_clean_error(run("generate --model " + model + " --prompt hi --prompt-ids 1"), "--prompt");
  expect_clean_error(run("generate --model " + model + " --prompt hi"), "tokenizer.json");
  expect_clean_error(run("generate --model " + model + " --prompt-ids 1 --temperature -1"),
                     "temperature");
  // A truncated weight file.
  const fs::path broken = dir_ / "broken";
  fs::create_directories(broken);
  fs::copy_file(testing::fixture_dir("mixed_small") + "/config.json", broken / "config.json");
  {
    std::ifstream in(testing::fixture_dir("mixed_small") + "/model.safetensors", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream o(broken / "model.safetensors", std::ios::binary);
    o.write(bytes.data(), std::streamsize(bytes.size() / 2));
  }
  expect_clean_error(run("logits --model '" + broken.string() + "' --ids 1" + out),
                     "model.safetensors");
}

}  // namespace
}  // namespace dsv4
