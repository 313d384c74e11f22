// Incremental detokenizer for streaming output: feed ids one at a time and get text that always
// ends on a character boundary. Bytes that might still become a character are held back; bytes
// that can never be valid become U+FFFD at once, as the full decode would make them.
#pragma once

#include <cstdint>
#include <string>

#include "text/tokenizer.h"

namespace dsv4::text {

class stream_decoder {
 public:
  explicit stream_decoder(const tokenizer& tok, bool skip_special_tokens = false)
      : tokenizer_(&tok), skip_special_(skip_special_tokens) {}

  // Returns the newly complete text (possibly empty). Throws dsv4::error for an unknown id.
  std::string push(std::int32_t id);
  // Returns what is held back, repaired (U+FFFD for a cut-off character), and resets.
  std::string flush();

 private:
  const tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace dsv4::text
