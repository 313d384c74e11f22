// The pre-tokenizer of a byte-level BPE tokenizer.json: a sequence of regex Split steps, each
// applied to every piece the previous step produced, followed by the ByteLevel step (whose
// byte -> character mapping the BPE model applies implicitly, since it works on raw bytes).
// Pieces are [begin, end) byte offsets into the text, so splitting copies nothing.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "text/regex.h"

namespace dsv4::text {

using piece = std::pair<std::size_t, std::size_t>;

// How a Split step treats the matches of its pattern (tokenizers' SplitDelimiterBehavior).
enum class split_behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

class pre_tokenizer {
 public:
  pre_tokenizer() = default;

  // Builds from the "pre_tokenizer" member of tokenizer.json (null, a Split, a ByteLevel, or a
  // Sequence of those). Throws dsv4::error for types or options it does not implement.
  static pre_tokenizer from_json(const nlohmann::json& config);

  // Splits text (valid UTF-8) into pieces; `out` is cleared first.
  void split(std::string_view text, std::vector<piece>& out) const;

 private:
  struct step {
    regex pattern;
    split_behavior behavior;
    bool invert;
  };
  void add_config(const nlohmann::json& config);
  std::vector<step> steps_;
};

}  // namespace dsv4::text
