// `dsv4 chat` end to end through the binary with stdin a file: a model folder made of a tiny
// fixture model (vocab 256) and tests/fixtures/text/tiny_chat_tokenizer.json (byte tokens and
// the chat format's markers, all ids < 256). Random weights make the replies noise, so the tests
// check the plumbing: turns produce output, a seed fixes it, the KV state reused across turns
// gives what a full re-prefill gives, and bad input exits 1 with one `dsv4: error:` line.
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

class chat_cli : public testing::cli_test {
 protected:
  void SetUp() override {
    cli_test::SetUp();
    model_ = dir_ / "model";
    fs::create_directories(model_);
    const fs::path fixture = fs::path(DSV4_TEST_DATA_DIR) / "models" / "mixed_small";
    for (const char* name : {"config.json", "model.safetensors"})
      fs::copy_file(fixture / name, model_ / name);
    fs::copy_file(fs::path(DSV4_TEST_DATA_DIR) / "text" / "tiny_chat_tokenizer.json",
                  model_ / "tokenizer.json");
  }

  // Runs `dsv4 chat --model <tmp model> ARGS` with `input` as stdin.
  run_result chat(const std::string& input, const std::string& args, const fs::path& model = {}) {
    std::string command = "chat --model '";
    command += (model.empty() ? model_ : model).string();
    command += "' " + args;
    return run(command, input);
  }

  static void expect_clean_error(const run_result& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("dsv4: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }

  fs::path model_;
};

TEST_F(chat_cli, two_turns_through_a_pipe) {
  const run_result r = chat("hello there\nand a second question\n", "-n 12 --seed 1 -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One line per reply at least (each reply ends with a newline), and both turns ran.
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_GT(r.out.size(), 2u);
  size_t turns = 0;
  for (size_t at = 0; (at = r.err.find("dsv4: turn:", at)) != std::string::npos; ++at) ++turns;
  EXPECT_EQ(turns, 2u) << r.err;
}

TEST_F(chat_cli, deterministic_with_a_seed) {
  const std::string input = "hi\nhow are you?\n";
  const run_result a = chat(input, "-n 24 --seed 7");
  const run_result b = chat(input, "-n 24 --seed 7");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  const run_result c = chat(input, "-n 24 --seed 8");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(a.out, c.out) << "another seed should give other noise";
}

TEST_F(chat_cli, thinking_mode_with_a_system_prompt) {
  const run_result r = chat("first\n\n/reset\nsecond\n/exit\nnever sent\n",
                            "--thinking-mode thinking --reasoning-effort max --system 'be brief' "
                            "-n 8 --seed 3 -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Without a </think> from the noise model, all of each reply is reasoning, shown prefixed.
  EXPECT_NE(r.out.find("[thinking] "), std::string::npos) << r.out;
  size_t turns = 0;
  for (size_t at = 0; (at = r.err.find("dsv4: turn:", at)) != std::string::npos; ++at) ++turns;
  EXPECT_EQ(turns, 2u) << "the blank line is skipped and /exit ends the chat: " << r.err;
}

TEST_F(chat_cli, reset_starts_over) {
  const run_result r = chat("same words\n/reset\nsame words\n", "-n 1 --seed 2 -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Both turns see the same prompt, from an empty cache.
  const size_t second = r.err.find("dsv4: turn:", 1);
  ASSERT_NE(second, std::string::npos) << r.err;
  const std::string first_turn = r.err.substr(0, r.err.find(" generated"));
  const std::string second_turn = r.err.substr(second, r.err.find(" generated", second) - second);
  EXPECT_EQ(first_turn, second_turn);
  EXPECT_NE(first_turn.find("(0 reused"), std::string::npos) << r.err;
}

// With one token per reply the fed tokens (the prompt) are always a prefix of the next prompt, so
// turns 2 and 3 continue the cached sequence; their samples must equal a full re-prefill's.
TEST_F(chat_cli, cache_reuse_matches_re_prefill) {
  const std::string input = "one\ntwo\nthree\n";
  const run_result reuse = chat(input, "-n 1 --seed 11 -v");
  const run_result fresh = chat(input, "-n 1 --seed 11 -v --no-reuse");
  ASSERT_EQ(reuse.exit_code, 0) << reuse.err;
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_EQ(reuse.out, fresh.out);
  EXPECT_NE(reuse.err.find("(0 reused"), std::string::npos) << reuse.err;
  EXPECT_EQ(reuse.err.find("(0 reused", reuse.err.find("(0 reused") + 1), std::string::npos)
      << "turns 2 and 3 should reuse the cache: " << reuse.err;
  EXPECT_EQ(std::count(fresh.err.begin(), fresh.err.end(), '\n'), 3) << fresh.err;
  size_t fresh_zero = 0;
  for (size_t at = 0; (at = fresh.err.find("(0 reused", at)) != std::string::npos; ++at)
    ++fresh_zero;
  EXPECT_EQ(fresh_zero, 3u) << fresh.err;
  // Longer replies (re-tokenized text, U+FFFD for noise bytes) take either path; same output.
  EXPECT_EQ(chat(input, "-n 20 --seed 4").out, chat(input, "-n 20 --seed 4 --no-reuse").out);
}

TEST_F(chat_cli, empty_input_exits_cleanly) {
  const run_result r = chat("", "-n 4");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(chat_cli, missing_tokenizer_is_one_error_line) {
  const fs::path bare = dir_ / "bare";
  fs::create_directories(bare);
  for (const char* name : {"config.json", "model.safetensors"})
    fs::copy_file(model_ / name, bare / name);
  const run_result r = chat("hi\n", "-n 4", bare);
  expect_clean_error(r, (bare / "tokenizer.json").string());
  EXPECT_EQ(r.out, "");
}

TEST_F(chat_cli, bad_options_are_one_error_line) {
  expect_clean_error(chat("hi\n", "--thinking-mode sometimes"), "sometimes");
  expect_clean_error(chat("hi\n", "--top-p 2"), "top");
  std::ofstream(model_ / "tokenizer.json") << "{not json";
  expect_clean_error(chat("hi\n", "-n 4"), "tokenizer.json");
}

TEST_F(chat_cli, a_turn_over_the_context_is_reported_and_the_chat_goes_on) {
  // The first prompt (6 tokens) fits in 40, the second (40 more bytes) does not; the third fits
  // again because the failed turn was taken back out of the history.
  const run_result r =
      chat("hi\n" + std::string(40, 'x') + "\nok\n", "-n 2 --seed 1 --max-context 40");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("dsv4: error: the conversation is"), std::string::npos) << r.err;
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
}

}  // namespace
}  // namespace dsv4
