// The added tokens of a tokenizer.json (special and control tokens such as <｜User｜>). They are
// found in the input before pre-tokenization and become single ids. Like tokenizers'
// AddedVocabulary, tokens with normalized=false are matched first over the whole text, then
// tokens with normalized=true in the gaps; each pass takes the leftmost, then longest match.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dsv4::text {

struct added_token {
  std::int32_t id = 0;
  std::string content;
  bool special = false;     // dropped by decode(skip_special_tokens)
  bool normalized = false;  // decides the matching pass (see above)
};

// A piece of the input: an added token (id >= 0) or a span of ordinary text (id == -1).
struct text_segment {
  std::size_t begin = 0, end = 0;
  std::int32_t id = -1;
};

class added_vocabulary {
 public:
  void add(added_token token);

  // Splits text into added tokens and the ordinary text between them (empty spans omitted).
  void split(std::string_view text, std::vector<text_segment>& out) const;

  std::optional<std::int32_t> id_of(std::string_view content) const;
  const std::vector<added_token>& tokens() const { return tokens_; }

 private:
  // A byte trie: node 0 is the root; children are kept sorted by byte.
  struct trie {
    struct node {
      std::vector<std::pair<unsigned char, std::int32_t>> children;
      std::int32_t id = -1;
    };
    std::vector<node> nodes{node{}};
    bool first_byte[256] = {};
    void insert(std::string_view key, std::int32_t id);
    // Longest key that is a prefix of text: returns its length and id, or length 0.
    std::pair<std::size_t, std::int32_t> longest_prefix(std::string_view text) const;
    bool empty() const { return nodes.size() == 1; }
  };
  static void split_with(const trie& t, std::string_view text, std::size_t base,
                         std::vector<text_segment>& out);

  std::vector<added_token> tokens_;
  std::unordered_map<std::string, std::int32_t> by_content_;
  trie raw_;         // normalized == false
  trie normalized_;  // normalized == true
};

}  // namespace dsv4::text
