#include "text/pre_tokenizer.h"

#include <cctype>
#include <string>

#include "core/error.h"

namespace dsv4::text {
namespace {

// GPT-2's own split, used by ByteLevel when use_regex is true.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

split_behavior parse_behavior(const std::string& name) {
  if (name == "Removed") return split_behavior::removed;
  if (name == "Isolated") return split_behavior::isolated;
  if (name == "MergedWithPrevious") return split_behavior::merged_with_previous;
  if (name == "MergedWithNext") return split_behavior::merged_with_next;
  if (name == "Contiguous") return split_behavior::contiguous;
  fail("pre_tokenizer Split: unknown behavior '{}'", name);
}

// A literal Split pattern matches itself: escape every ASCII punctuation character.
std::string escape_literal(std::string_view text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isalnum(byte) && byte != ' ') out += '\\';
    out += c;
  }
  return out;
}

struct segment {
  std::size_t begin, end;
  bool is_match;
};

// Applies one behaviour to the matched/unmatched segments covering a piece (same folds as
// tokenizers' NormalizedString::split), appending the resulting pieces, made absolute by base.
void apply_behavior(split_behavior behavior, const std::vector<segment>& segments, std::size_t base,
                    std::vector<piece>& out) {
  const std::size_t first = out.size();
  bool previous_match = false;
  switch (behavior) {
    case split_behavior::isolated:
      for (const auto& s : segments) out.emplace_back(base + s.begin, base + s.end);
      return;
    case split_behavior::removed:
      for (const auto& s : segments)
        if (!s.is_match) out.emplace_back(base + s.begin, base + s.end);
      return;
    case split_behavior::merged_with_previous:
      for (const auto& s : segments) {
        if (s.is_match && !previous_match && out.size() > first)
          out.back().second = base + s.end;
        else
          out.emplace_back(base + s.begin, base + s.end);
        previous_match = s.is_match;
      }
      return;
    case split_behavior::merged_with_next: {
      std::vector<piece> reversed;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !reversed.empty())
          reversed.back().first = base + it->begin;
        else
          reversed.emplace_back(base + it->begin, base + it->end);
        previous_match = it->is_match;
      }
      out.insert(out.end(), reversed.rbegin(), reversed.rend());
      return;
    }
    case split_behavior::contiguous:
      for (const auto& s : segments) {
        if (s.is_match == previous_match && out.size() > first)
          out.back().second = base + s.end;
        else
          out.emplace_back(base + s.begin, base + s.end);
        previous_match = s.is_match;
      }
      return;
  }
}

}  // namespace

pre_tokenizer pre_tokenizer::from_json(const nlohmann::json& config) {
  pre_tokenizer result;
  if (!config.is_null()) result.add_config(config);
  return result;
}

void pre_tokenizer::add_config(const nlohmann::json& config) {
  DSV4_CHECK(config.is_object() && config.contains("type"),
             "pre_tokenizer: expected an object with a type");
  const std::string type = config.at("type").get<std::string>();
  if (type == "Sequence") {
    for (const auto& item : config.at("pretokenizers")) add_config(item);
  } else if (type == "Split") {
    const auto& pattern = config.at("pattern");
    std::string source;
    if (pattern.contains("Regex"))
      source = pattern.at("Regex").get<std::string>();
    else if (pattern.contains("String"))
      source = escape_literal(pattern.at("String").get<std::string>());
    else
      fail("pre_tokenizer Split: pattern needs Regex or String");
    steps_.push_back({regex(source), parse_behavior(config.at("behavior").get<std::string>()),
                      config.value("invert", false)});
  } else if (type == "ByteLevel") {
    // The byte -> character mapping itself happens in the BPE model, which works on bytes.
    DSV4_CHECK(!config.value("add_prefix_space", false),
               "pre_tokenizer ByteLevel: add_prefix_space=true is not supported");
    if (config.value("use_regex", true))
      steps_.push_back({regex(gpt2_pattern), split_behavior::isolated, false});
  } else {
    fail("pre_tokenizer: type '{}' is not supported (byte-level BPE needs Split/ByteLevel)", type);
  }
}

void pre_tokenizer::split(std::string_view text, std::vector<piece>& out) const {
  out.clear();
  if (text.empty()) return;
  out.emplace_back(0, text.size());
  std::vector<piece> next;
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  std::vector<segment> segments;
  for (const auto& s : steps_) {
    next.clear();
    for (const auto& [begin, end] : out) {
      const std::string_view subject = text.substr(begin, end - begin);
      matches.clear();
      s.pattern.find_all(subject, matches);
      segments.clear();
      std::size_t previous = 0;
      for (const auto& [match_begin, match_end] : matches) {
        if (match_begin > previous) segments.push_back({previous, match_begin, s.invert});
        segments.push_back({match_begin, match_end, !s.invert});
        previous = match_end;
      }
      if (previous < subject.size()) segments.push_back({previous, subject.size(), s.invert});
      apply_behavior(s.behavior, segments, begin, next);
    }
    out.swap(next);
  }
}

}  // namespace dsv4::text
