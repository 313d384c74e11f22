// Shared test helpers: the committed tokenizer fixtures, loaded once per test binary.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "text/tokenizer.h"

namespace dsv4::text::testing {

inline std::filesystem::path fixture_dir() {
  return std::filesystem::path(DSV4_TEST_DATA_DIR) / "text";
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The DeepSeek-V4 tokenizer.json (see tests/fixtures/text/PROVENANCE.md).
inline const tokenizer& v4_tokenizer() {
  static const tokenizer instance = tokenizer::load(fixture_dir() / "deepseek_v4_tokenizer.json");
  return instance;
}

}  // namespace dsv4::text::testing
