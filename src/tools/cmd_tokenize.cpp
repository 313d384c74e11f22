// dsv4 tokenize: text -> token ids with a tokenizer.json, one JSON object per input line.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/tokenizer.h"
#include "tools/command.h"

namespace dsv4::tools {
namespace {

struct tokenize_options {
  std::string tokenizer;
  std::string text;
  std::string jsonl;
  bool no_special = false;
};

void print_ids(const text::tokenizer& tok, const std::string& input, bool parse_special) {
  const nlohmann::json out = {{"ids", tok.encode(input, parse_special)}};
  std::printf("%s\n", out.dump().c_str());
}

// Each JSONL line is a JSON string or an object with a "text" string; blank lines are skipped.
int run_tokenize(const tokenize_options& o, bool use_jsonl) {
  const auto tok = text::tokenizer::load(o.tokenizer);
  if (!use_jsonl) {
    print_ids(tok, o.text, !o.no_special);
    return 0;
  }
  std::ifstream in(o.jsonl, std::ios::binary);
  DSV4_CHECK(in.good(), "cannot open --jsonl file {}", o.jsonl);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("{}:{}: not JSON: {}", o.jsonl, number, e.what());
    }
    if (row.is_object() && row.contains("text")) row = row["text"];
    DSV4_CHECK(row.is_string(), "{}:{}: expected a JSON string or an object with \"text\"", o.jsonl,
               number);
    print_ids(tok, row.get<std::string>(), !o.no_special);
  }
  return 0;
}

const command_registration registration(
    "tokenize", "Encode text to token ids with a tokenizer.json", [](CLI::App& sub) {
      auto o = std::make_shared<tokenize_options>();
      sub.add_option("--tokenizer", o->tokenizer, "tokenizer.json")->required();
      auto* text = sub.add_option("--text", o->text, "Text to encode");
      auto* jsonl =
          sub.add_option("--jsonl", o->jsonl,
                         "File of JSON lines (strings or {\"text\": ...}), one output line each");
      text->excludes(jsonl);
      sub.add_flag("--no-special", o->no_special,
                   "Treat special-token text as ordinary text (for untrusted input)");
      return [o, text, jsonl] {
        DSV4_CHECK(text->count() + jsonl->count() == 1, "give exactly one of --text and --jsonl");
        return run_tokenize(*o, jsonl->count() == 1);
      };
    });

}  // namespace
}  // namespace dsv4::tools
