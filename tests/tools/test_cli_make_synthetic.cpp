// `dsv4 make-synthetic` end to end on a small official-style config: the written directory
// inspects as the official layout with the schema's counts, and bad input gives exit code 1 with
// one `dsv4: error:` line on stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/cli_test.h"

namespace dsv4 {
namespace {

namespace fs = std::filesystem;

using testing::run_result;

class MakeSyntheticCli : public testing::cli_test {
 protected:
  void expect_one_line_error(const run_result& r) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("dsv4: error:", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }

  const std::string config_ = DSV4_TEST_DATA_DIR "/configs/official_small.json";
};

TEST_F(MakeSyntheticCli, writes_an_official_checkpoint_that_inspects) {
  const std::string model = (dir_ / "model").string();
  const run_result w = run("make-synthetic --config '" + config_ +
                           "' --layers 3 --mtp --seed 5 --out '" + model + "'");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("243 tensors"), std::string::npos) << w.out;
  EXPECT_TRUE(fs::exists(dir_ / "model" / "model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir_ / "model" / "model-00006-of-00006.safetensors"));
  const run_result i = run("inspect --model '" + model + "'");
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("official naming"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("243 in 6 file(s)"), std::string::npos) << i.out;
  EXPECT_NE(i.out.find("63 mtp"), std::string::npos) << i.out;
}

TEST_F(MakeSyntheticCli, bad_input_gives_one_line_error) {
  const std::string out = (dir_ / "m").string();
  expect_one_line_error(
      run("make-synthetic --config '" + config_ + "' --layers 0 --out '" + out + "'"));
  expect_one_line_error(
      run("make-synthetic --config '" + config_ + "' --layers 9 --out '" + out + "'"));
  expect_one_line_error(run("make-synthetic --config '" + (dir_ / "none.json").string() +
                            "' --layers 1 --out '" + out + "'"));
  std::ofstream(dir_ / "file") << "x";
  expect_one_line_error(run("make-synthetic --config '" + config_ + "' --layers 1 --out '" +
                            (dir_ / "file" / "sub").string() + "'"));
  std::ofstream(dir_ / "bad.json") << "{ not json";
  expect_one_line_error(run("make-synthetic --config '" + (dir_ / "bad.json").string() +
                            "' --layers 1 --out '" + out + "'"));
}

}  // namespace
}  // namespace dsv4
