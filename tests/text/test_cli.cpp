// The text subcommands of the dsv4 binary: tokenize, detokenize, render.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "text_fixtures.h"

namespace dsv4::text {
namespace {

using testing::fixture_dir;
using testing::read_file;

struct run_result {
  int exit_code;
  std::string out, err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

run_result run_dsv4(const std::string& arguments) {
  const auto err_file = std::filesystem::temp_directory_path() /
                        ("dsv4_test_cli_" + std::to_string(::getpid()) + ".err");
  const std::string command =
      quote(DSV4_BINARY) + " " + arguments + " 2>" + quote(err_file.string());
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  run_result result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, read_file(err_file)};
  std::filesystem::remove(err_file);
  return result;
}

std::string tokenizer_arg() {
  return "--tokenizer " + quote((fixture_dir() / "deepseek_v4_tokenizer.json").string());
}

// A bad-input run: non-zero exit and exactly one line on stderr.
void expect_one_line_error(const run_result& r) {
  EXPECT_NE(r.exit_code, 0);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST(text_cli, tokenize_text) {
  const auto r = run_dsv4("tokenize " + tokenizer_arg() + " --text " + quote("<think>Hi"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\":[128821,23166]}\n");
}

TEST(text_cli, tokenize_jsonl_one_line_per_input) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("dsv4_test_cli_" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(file);
    out << "\"Hi\"\n{\"text\": \"1234567 apples\"}\n\n\"\"\n";
  }
  const auto r = run_dsv4("tokenize " + tokenizer_arg() + " --jsonl " + quote(file.string()));
  std::filesystem::remove(file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\":[23166]}\n{\"ids\":[6895,18009,25,37679]}\n{\"ids\":[]}\n");
}

TEST(text_cli, detokenize) {
  const auto r = run_dsv4("detokenize " + tokenizer_arg() + " --ids 128821,23166");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<think>Hi");
}

TEST(text_cli, render_official_pairs) {
  const std::pair<int, const char*> cases[] = {
      {1, "thinking"}, {2, "thinking"}, {3, "thinking"}, {4, "chat"}};
  for (const auto& [n, mode] : cases) {
    const auto input = fixture_dir() / "chat" / ("test_input_" + std::to_string(n) + ".json");
    const auto r =
        run_dsv4("render --messages " + quote(input.string()) + " --thinking-mode " + mode);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              read_file(fixture_dir() / "chat" / ("test_output_" + std::to_string(n) + ".txt")))
        << "pair " << n;
  }
}

TEST(text_cli, bad_input_fails_with_one_line) {
  expect_one_line_error(run_dsv4("tokenize --tokenizer /nonexistent.json --text x"));
  expect_one_line_error(run_dsv4("tokenize " + tokenizer_arg()));  // neither --text nor --jsonl
  expect_one_line_error(run_dsv4("tokenize " + tokenizer_arg() + " --jsonl /nonexistent.jsonl"));
  expect_one_line_error(run_dsv4("detokenize " + tokenizer_arg() + " --ids 1,x"));
  expect_one_line_error(run_dsv4("detokenize " + tokenizer_arg() + " --ids 999999"));
  expect_one_line_error(run_dsv4("render --messages /nonexistent.json"));
  expect_one_line_error(run_dsv4("render --messages " +
                                 quote((fixture_dir() / "deepseek_v4_oracle.jsonl").string())));
  const auto input = fixture_dir() / "chat" / "test_input_2.json";
  expect_one_line_error(
      run_dsv4("render --messages " + quote(input.string()) + " --thinking-mode fast"));
}

}  // namespace
}  // namespace dsv4::text
