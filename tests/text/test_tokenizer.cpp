// Tokenizer tests against the committed Hugging Face `tokenizers` oracle and invariants.
#include <gtest/gtest.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/error.h"
#include "text/stream_decoder.h"
#include "text/unicode_bridge.h"
#include "text/utf8.h"
#include "text_fixtures.h"

namespace dsv4::text {
namespace {

using testing::fixture_dir;
using testing::v4_tokenizer;

struct oracle_case {
  std::string text;
  std::vector<std::int32_t> ids;
};

const std::vector<oracle_case>& oracle_cases() {
  static const std::vector<oracle_case> cases = [] {
    std::vector<oracle_case> out;
    std::ifstream in(fixture_dir() / "deepseek_v4_oracle.jsonl", std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      const auto row = nlohmann::json::parse(line);
      out.push_back({row.at("text").get<std::string>(), row.at("ids").get<std::vector<int>>()});
    }
    return out;
  }();
  return cases;
}

TEST(tokenizer, loads_v4_vocabulary) {
  const auto& tok = v4_tokenizer();
  EXPECT_EQ(tok.id_count(), 129280);
  EXPECT_EQ(tok.token_id("<think>"), 128821);
  EXPECT_EQ(tok.token_id("</think>"), 128822);
  EXPECT_EQ(tok.token_id("｜DSML｜"), 128825);
  EXPECT_EQ(tok.token_id("<｜latest_reminder｜>"), 128828);
  EXPECT_EQ(tok.token_id("<｜User｜>"), 128803);
  EXPECT_EQ(tok.token_id("<｜begin▁of▁sentence｜>"), 0);
  EXPECT_TRUE(tok.is_special(0));
  EXPECT_FALSE(tok.is_special(128803));  // role markers are not special in DeepSeek files
}

// tokenizers' Oniguruma has Unicode 15.1 tables; ours gets Unicode 15.0 from ICU 72 through
// unicode_bridge. Strings with code points ICU does not know (15.1 additions such as CJK Ext I)
// may differ and are counted separately; every other string must match exactly.
bool has_code_point_unknown_to_icu(const std::string& text) {
  for (std::int32_t pos = 0; pos < std::int32_t(text.size());) {
    UChar32 cp;
    U8_NEXT(text.data(), pos, std::int32_t(text.size()), cp);
    if (cp >= 0 && u_charType(cp) == U_UNASSIGNED) return true;
  }
  return false;
}

TEST(tokenizer, matches_hf_oracle_on_every_fixture_string) {
  const auto& cases = oracle_cases();
  ASSERT_GE(cases.size(), 5000u);
  std::size_t mismatches = 0, newer_unicode = 0, newer_unicode_mismatches = 0;
  for (const auto& c : cases) {
    const auto ids = v4_tokenizer().encode(c.text);
    if (has_code_point_unknown_to_icu(c.text)) {
      ++newer_unicode;
      newer_unicode_mismatches += ids != c.ids;
      continue;
    }
    if (ids != c.ids) {
      if (++mismatches <= 10) ADD_FAILURE() << "ids differ for " << nlohmann::json(c.text).dump();
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << cases.size();
  std::printf("oracle: %zu strings, %zu with code points newer than ICU's tables (%zu differ)\n",
              cases.size(), newer_unicode, newer_unicode_mismatches);
}

TEST(tokenizer, decode_inverts_encode_on_fixture_strings) {
  for (const auto& c : oracle_cases()) {
    const auto ids = v4_tokenizer().encode(c.text);
    ASSERT_EQ(v4_tokenizer().decode(ids), c.text);
  }
}

TEST(tokenizer, unicode_bridge_covers_unicode_15) {
  EXPECT_GT(unicode_bridge::get().bridged_count(), 4000u);  // Unicode 15.0 added 4,489
  EXPECT_TRUE(unicode_bridge::get().substitute("a \U0001FAE8").has_value());
  EXPECT_FALSE(unicode_bridge::get().substitute("plain 你好").has_value());
  // The space joins a Unicode 15 symbol or letter as in tokenizers (ids from tokenizers 0.23.3).
  EXPECT_EQ(v4_tokenizer().encode(" \U0001FAE8"), std::vector<std::int32_t>({7351, 107, 104}));
  EXPECT_EQ(v4_tokenizer().encode("a \U00031350b"),
            std::vector<std::int32_t>({67, 86387, 112, 238, 241, 68}));
}

// decode() against tokenizers' decode on random ids and on encodings cut inside characters
// (from_utf8_lossy: one U+FFFD per maximal ill-formed subpart), with and without specials.
TEST(tokenizer, decode_matches_hf_oracle) {
  std::ifstream in(fixture_dir() / "deepseek_v4_decode_oracle.jsonl", std::ios::binary);
  std::size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    const auto row = nlohmann::json::parse(line);
    const auto ids = row.at("ids").get<std::vector<std::int32_t>>();
    EXPECT_EQ(v4_tokenizer().decode(ids), row.at("text").get<std::string>()) << line;
    EXPECT_EQ(v4_tokenizer().decode(ids, true), row.at("text_skip_special").get<std::string>())
        << line;
  }
  EXPECT_GE(count, 900u);
}

// encode() is const and shared: threads racing on the BPE cache must all get the oracle ids.
TEST(tokenizer, concurrent_encode_matches_oracle) {
  const auto& cases = oracle_cases();
  std::atomic<std::size_t> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = std::size_t(t); i < cases.size(); i += 2)
        if (!has_code_point_unknown_to_icu(cases[i].text) &&
            v4_tokenizer().encode(cases[i].text) != cases[i].ids)
          ++mismatches;
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0u);
}

TEST(tokenizer, known_ids) {
  const auto& tok = v4_tokenizer();
  EXPECT_EQ(tok.encode("Hi"), std::vector<std::int32_t>({23166}));
  EXPECT_EQ(tok.encode("1234567 apples"), std::vector<std::int32_t>({6895, 18009, 25, 37679}));
  EXPECT_EQ(tok.encode("你好，世界！こんにちは"),
            std::vector<std::int32_t>({30594, 303, 3427, 1175, 4549, 7245, 2298, 12457, 2841}));
}

TEST(tokenizer, special_text_is_ordinary_without_parse_special) {
  const auto& tok = v4_tokenizer();
  EXPECT_EQ(tok.encode("<think>"), std::vector<std::int32_t>({128821}));
  const auto plain = tok.encode("<think>", /*parse_special=*/false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok.decode(plain), "<think>");
}

TEST(tokenizer, skip_special_tokens_drops_only_special_ids) {
  const auto& tok = v4_tokenizer();
  const auto ids = tok.encode("<｜begin▁of▁sentence｜><｜User｜>Hi<｜end▁of▁sentence｜>");
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "<｜User｜>Hi");
}

TEST(tokenizer, unknown_id_throws) {
  const auto& tok = v4_tokenizer();
  const std::vector<std::int32_t> bad = {-1};
  EXPECT_THROW(tok.decode(bad), dsv4::error);
  const std::vector<std::int32_t> too_big = {tok.id_count()};
  EXPECT_THROW(tok.decode(too_big), dsv4::error);
}

TEST(tokenizer, invalid_utf8_round_trips_bytes) {
  const auto& tok = v4_tokenizer();
  for (std::string text :
       {std::string("\xff"), std::string("a\xc3"), std::string("\xed\xa0\x80x"),
        std::string("ok \xe4\xbd\xa0\xe5 end"), std::string("\xc0\xaf<think>\x80")}) {
    const auto ids = tok.encode(text);
    EXPECT_EQ(tok.decode_bytes(ids), text);
    EXPECT_TRUE(utf8::is_valid(tok.decode(ids)));
  }
}

// Randomised robustness (runs in CI): random bytes and fragments of special tokens must encode
// without crashing and round-trip byte for byte; random ids must decode or throw dsv4::error.
TEST(tokenizer, random_bytes_do_not_crash) {
  const auto& tok = v4_tokenizer();
  std::mt19937 rng(12345);
  const std::string alphabet_pieces[] = {"<",    "｜",       "User", ">",    "think",
                                         "/",    " ",        "\n",   "\xe4", "\xbd",
                                         "\xa0", "\xf0\x9f", "a",    "1",    "\xc2\xa0"};
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    const int length = int(rng() % 64);
    for (int i = 0; i < length; ++i) {
      if (rng() % 2)
        text += char(rng() % 256);
      else
        text += alphabet_pieces[rng() % std::size(alphabet_pieces)];
    }
    const auto ids = tok.encode(text);
    ASSERT_EQ(tok.decode_bytes(ids), text);
    std::vector<std::int32_t> random_ids;
    for (int i = 0; i < 8; ++i) random_ids.push_back(std::int32_t(rng() % 129300) - 10);
    try {
      EXPECT_TRUE(utf8::is_valid(tok.decode(random_ids)));
    } catch (const dsv4::error&) {
    }
  }
}

TEST(stream_decoder, never_emits_partial_characters) {
  const auto& tok = v4_tokenizer();
  for (const auto& c : oracle_cases()) {
    stream_decoder decoder(tok);
    std::string streamed;
    for (std::int32_t id : c.ids) {
      const std::string piece = decoder.push(id);
      ASSERT_TRUE(utf8::is_valid(piece));
      streamed += piece;
    }
    streamed += decoder.flush();
    ASSERT_EQ(streamed, c.text);
  }
}

TEST(stream_decoder, replaces_invalid_bytes_like_full_decode) {
  const auto& tok = v4_tokenizer();
  const std::string text = "a\xff b\xe4\xbd";
  const auto ids = tok.encode(text);
  stream_decoder decoder(tok);
  std::string streamed;
  for (std::int32_t id : ids) streamed += decoder.push(id);
  streamed += decoder.flush();
  EXPECT_EQ(streamed, tok.decode(ids));
}

TEST(tokenizer, bad_files_throw) {
  EXPECT_THROW(tokenizer::load("/nonexistent/tokenizer.json"), dsv4::error);
  EXPECT_THROW(tokenizer::from_json_text("{not json"), dsv4::error);
  EXPECT_THROW(tokenizer::from_json_text("[]"), dsv4::error);
  EXPECT_THROW(tokenizer::from_json_text(R"({"model": {"type": "WordPiece"}})"), dsv4::error);
  EXPECT_THROW(tokenizer::from_json_text(
                   R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})"),
               dsv4::error);
  EXPECT_THROW(
      tokenizer::from_json_text(
          R"({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(("}, "behavior": "Isolated"},
              "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"),
      dsv4::error);
}

// A small hand-made tokenizer: exercises both merge spellings and a ByteLevel regex split.
TEST(tokenizer, loads_minimal_gpt2_style_file) {
  const auto tok = tokenizer::from_json_text(R"({
    "added_tokens": [{"id": 5, "content": "<eos>", "special": true}],
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4},
              "merges": [["a", "b"], "Ġ ab"]}})");
  EXPECT_EQ(tok.encode("ab ab<eos>"), std::vector<std::int32_t>({2, 4, 5}));
  EXPECT_EQ(tok.decode(std::vector<std::int32_t>{2, 4, 5}), "ab ab<eos>");
}

// The V3 tokenizer in the shared reference folder (absent on CI machines: then skipped).
TEST(tokenizer, v3_shared_file_when_present) {
  const std::filesystem::path file =
      std::filesystem::path(DSV4_SHARED_DIR) / "data/tokenizers/deepseek-v3/tokenizer.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "no " << file;
  const auto tok = tokenizer::load(file);
  EXPECT_EQ(tok.id_count(), 128815);
  EXPECT_EQ(tok.encode("1234567 apples"), std::vector<std::int32_t>({6895, 18009, 25, 37679}));
  // Same BPE as V4; only the added tokens differ (<think> is plain text in V3).
  EXPECT_GT(tok.encode("<think>").size(), 1u);
}

}  // namespace
}  // namespace dsv4::text
