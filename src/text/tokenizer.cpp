#include "text/tokenizer.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "text/byte_level.h"
#include "text/unicode_bridge.h"
#include "text/utf8.h"

namespace dsv4::text {
namespace {

using json = nlohmann::json;

void check_normalizer(const json& normalizer) {
  if (normalizer.is_null()) return;
  const std::string type = normalizer.value("type", "");
  DSV4_CHECK(type == "Sequence" && normalizer.value("normalizers", json::array()).empty(),
             "normalizer '{}' is not supported (only none or an empty Sequence)", type);
}

void check_decoder(const json& decoder) {
  if (decoder.is_null()) return;
  const std::string type = decoder.value("type", "");
  DSV4_CHECK(type == "ByteLevel", "decoder '{}' is not supported (only ByteLevel)", type);
}

std::pair<std::string, std::string> parse_merge(const json& merge, std::size_t rank) {
  if (merge.is_array()) {
    DSV4_CHECK(merge.size() == 2, "merge {} is not a pair", rank);
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  const std::string text = merge.get<std::string>();
  const auto space = text.find(' ');
  DSV4_CHECK(space != std::string::npos && text.find(' ', space + 1) == std::string::npos,
             "merge {} '{}' is not two tokens separated by one space", rank, text);
  return {text.substr(0, space), text.substr(space + 1)};
}

}  // namespace

tokenizer tokenizer::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  DSV4_CHECK(in.good(), "cannot open tokenizer file {}", file.string());
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return from_json_text(buffer.str(), file.string());
}

tokenizer tokenizer::from_json_text(std::string_view json_text, std::string_view origin) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", origin, e.what());
  }
  tokenizer result;
  try {
    DSV4_CHECK(root.is_object(), "top level is not an object");
    check_normalizer(root.value("normalizer", json()));
    check_decoder(root.value("decoder", json()));
    const json& model = root.at("model");
    DSV4_CHECK(model.value("type", "BPE") == "BPE", "model type '{}' is not BPE",
               model.value("type", ""));
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
      DSV4_CHECK(!model.contains(key) || model[key].is_null(), "model.{} is not supported", key);
    DSV4_CHECK(!model.value("byte_fallback", false), "model.byte_fallback is not supported");

    // Vocabulary: byte-level spellings -> raw bytes.
    // A spelling with characters outside the byte alphabet (DeepSeek lists its BOS/EOS/PAD in
    // the vocab too) can never come out of BPE; like the ByteLevel decoder, decode it verbatim.
    std::unordered_map<std::string, std::int32_t> vocab;
    std::vector<std::pair<std::string, std::int32_t>> verbatim;
    std::int32_t max_id = -1;
    for (const auto& [spelling, id_json] : model.at("vocab").items()) {
      const auto id = id_json.get<std::int32_t>();
      DSV4_CHECK(id >= 0, "vocab token '{}' has negative id", spelling);
      max_id = std::max(max_id, id);
      if (auto bytes = byte_level::to_bytes(spelling))
        vocab.emplace(std::move(*bytes), id);
      else
        verbatim.emplace_back(spelling, id);
    }
    std::vector<std::pair<std::string, std::string>> merges;
    const json& merges_json = model.at("merges");
    merges.reserve(merges_json.size());
    for (std::size_t rank = 0; rank < merges_json.size(); ++rank) {
      auto [left, right] = parse_merge(merges_json[rank], rank);
      auto left_bytes = byte_level::to_bytes(left), right_bytes = byte_level::to_bytes(right);
      DSV4_CHECK(left_bytes && right_bytes, "merge {} is not byte-level text", rank);
      merges.emplace_back(std::move(*left_bytes), std::move(*right_bytes));
    }

    // Added tokens.
    std::vector<added_token> added;
    for (const auto& entry : root.value("added_tokens", json::array())) {
      for (const char* flag : {"lstrip", "rstrip", "single_word"})
        DSV4_CHECK(!entry.value(flag, false), "added token '{}' sets {}, which is not supported",
                   entry.value("content", ""), flag);
      added_token token;
      token.id = entry.at("id").get<std::int32_t>();
      token.content = entry.at("content").get<std::string>();
      token.special = entry.value("special", false);
      token.normalized = entry.value("normalized", !token.special);
      DSV4_CHECK(token.id >= 0, "added token '{}' has negative id", token.content);
      max_id = std::max(max_id, token.id);
      added.push_back(std::move(token));
    }

    result.tokens_.resize(std::size_t(max_id + 1));
    for (const auto& [bytes, id] : vocab) result.tokens_[id] = {bytes, true, false};
    for (const auto& [spelling, id] : verbatim) result.tokens_[id] = {spelling, true, false};
    for (auto& token : added) {
      result.tokens_[token.id] = {token.content, true, token.special};
      result.added_.add(std::move(token));
    }
    result.pre_tokenizer_ = pre_tokenizer::from_json(root.value("pre_tokenizer", json()));
    result.model_ =
        std::make_unique<bpe_model>(std::move(vocab), merges, model.value("ignore_merges", false));
  } catch (const json::exception& e) {
    fail("{}: unexpected tokenizer.json layout: {}", origin, e.what());
  } catch (const error& e) {
    fail("{}: {}", origin, e.what());
  }
  return result;
}

void tokenizer::encode_ordinary(std::string_view text, std::vector<std::int32_t>& out) const {
  std::vector<piece> pieces;
  std::size_t pos = 0;
  while (pos < text.size()) {
    // A maximal valid run goes through the regex pre-tokenizer ...
    const std::size_t valid = utf8::valid_prefix_length(text.substr(pos));
    if (valid > 0) {
      const std::string_view run = text.substr(pos, valid);
      const auto stand_in = unicode_bridge::get().substitute(run);
      pre_tokenizer_.split(stand_in ? std::string_view(*stand_in) : run, pieces);
      for (const auto& [begin, end] : pieces)
        model_->encode_piece(run.substr(begin, end - begin), out);
      pos += valid;
    }
    // ... and a maximal invalid run becomes one piece of its own.
    std::size_t invalid = pos;
    while (invalid < text.size() && utf8::char_length(text.substr(invalid)) == 0)
      invalid += utf8::invalid_length(text.substr(invalid));
    if (invalid > pos) {
      model_->encode_piece(text.substr(pos, invalid - pos), out);
      pos = invalid;
    }
  }
}

std::vector<std::int32_t> tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (!parse_special) {
    encode_ordinary(text, ids);
    return ids;
  }
  std::vector<text_segment> segments;
  added_.split(text, segments);
  for (const auto& s : segments) {
    if (s.id >= 0)
      ids.push_back(s.id);
    else
      encode_ordinary(text.substr(s.begin, s.end - s.begin), ids);
  }
  return ids;
}

bool tokenizer::contains(std::int32_t id) const {
  return id >= 0 && id < id_count() && tokens_[std::size_t(id)].present;
}

const std::string& tokenizer::token_bytes(std::int32_t id) const {
  DSV4_CHECK(contains(id), "token id {} is not in the vocabulary (ids 0..{})", id, id_count() - 1);
  return tokens_[std::size_t(id)].bytes;
}

bool tokenizer::is_special(std::int32_t id) const {
  return contains(id) && tokens_[std::size_t(id)].special;
}

std::optional<std::int32_t> tokenizer::token_id(std::string_view token_text) const {
  if (auto id = added_.id_of(token_text)) return id;
  auto bytes = byte_level::to_bytes(token_text);
  if (!bytes) return std::nullopt;
  auto it = model_->vocab().find(*bytes);
  if (it == model_->vocab().end()) return std::nullopt;
  return it->second;
}

std::string tokenizer::decode_bytes(std::span<const std::int32_t> ids,
                                    bool skip_special_tokens) const {
  std::string out;
  for (std::int32_t id : ids) {
    const std::string& bytes = token_bytes(id);
    if (skip_special_tokens && tokens_[std::size_t(id)].special) continue;
    out += bytes;
  }
  return out;
}

std::string tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special_tokens) const {
  return utf8::to_valid_lossy(decode_bytes(ids, skip_special_tokens));
}

}  // namespace dsv4::text
