// A byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json (DeepSeek V3/V4, GPT-2,
// Llama 3, Qwen ...): added tokens, then the Split pre-tokenizers, then BPE; decoding maps
// tokens back to bytes. Encoding adds nothing at the ends (no BOS): chat prompts carry their own.
//
// Ids match tokenizers' Tokenizer::encode(text, add_special_tokens=false) for valid UTF-8.
// Invalid UTF-8 cannot reach tokenizers (Rust strings are valid); here each maximal invalid run
// bypasses the pre-tokenizer and becomes its own BPE piece, so decode_bytes(encode(x)) == x for
// every byte string x.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_vocabulary.h"
#include "text/bpe_model.h"
#include "text/pre_tokenizer.h"

namespace dsv4::text {

class tokenizer {
 public:
  // Throws dsv4::error (with the file name) when the file is missing, is not JSON, or uses a
  // feature this implementation does not have (so ids are never silently wrong).
  static tokenizer load(const std::filesystem::path& file);
  static tokenizer from_json_text(std::string_view json_text, std::string_view origin = "json");

  // parse_special=false treats added-token text as ordinary text (for untrusted user input:
  // typing "<｜User｜>" must not inject a role marker).
  std::vector<std::int32_t> encode(std::string_view text, bool parse_special = true) const;

  // Concatenated token bytes; may end inside a character or hold invalid UTF-8.
  // Throws dsv4::error for an id that names no token.
  std::string decode_bytes(std::span<const std::int32_t> ids,
                           bool skip_special_tokens = false) const;
  // decode_bytes repaired like tokenizers' decoder (from_utf8_lossy): always valid UTF-8.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special_tokens = false) const;

  // Raw bytes of one token; throws for an unknown id.
  const std::string& token_bytes(std::int32_t id) const;
  bool is_special(std::int32_t id) const;
  bool contains(std::int32_t id) const;
  std::optional<std::int32_t> token_id(std::string_view token_text) const;

  // One past the largest id (ids below it may still be holes).
  std::int32_t id_count() const { return std::int32_t(tokens_.size()); }

 private:
  struct token_info {
    std::string bytes;
    bool present = false;
    bool special = false;
  };
  tokenizer() = default;
  void encode_ordinary(std::string_view text, std::vector<std::int32_t>& out) const;

  added_vocabulary added_;
  pre_tokenizer pre_tokenizer_;
  std::unique_ptr<bpe_model> model_;
  std::vector<token_info> tokens_;  // indexed by id
};

}  // namespace dsv4::text
