#include "text/added_vocabulary.h"

#include <algorithm>

namespace dsv4::text {

void added_vocabulary::trie::insert(std::string_view key, std::int32_t id) {
  if (key.empty()) return;  // an empty token can never be matched
  first_byte[static_cast<unsigned char>(key[0])] = true;
  std::int32_t current = 0;
  for (char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    auto& children = nodes[current].children;
    auto it = std::lower_bound(children.begin(), children.end(), byte,
                               [](const auto& child, unsigned char b) { return child.first < b; });
    if (it != children.end() && it->first == byte) {
      current = it->second;
    } else {
      const auto child = std::int32_t(nodes.size());
      children.insert(it, {byte, child});
      nodes.emplace_back();  // may reallocate: `children` is not used after this
      current = child;
    }
  }
  nodes[current].id = id;
}

std::pair<std::size_t, std::int32_t> added_vocabulary::trie::longest_prefix(
    std::string_view text) const {
  std::pair<std::size_t, std::int32_t> best{0, -1};
  std::int32_t current = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto& children = nodes[current].children;
    auto it = std::lower_bound(children.begin(), children.end(), byte,
                               [](const auto& child, unsigned char b) { return child.first < b; });
    if (it == children.end() || it->first != byte) break;
    current = it->second;
    if (nodes[current].id >= 0) best = {i + 1, nodes[current].id};
  }
  return best;
}

void added_vocabulary::add(added_token token) {
  by_content_[token.content] = token.id;
  (token.normalized ? normalized_ : raw_).insert(token.content, token.id);
  tokens_.push_back(std::move(token));
}

std::optional<std::int32_t> added_vocabulary::id_of(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

void added_vocabulary::split_with(const trie& t, std::string_view text, std::size_t base,
                                  std::vector<text_segment>& out) {
  std::size_t gap = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (!t.first_byte[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [length, id] = t.longest_prefix(text.substr(pos));
    if (length == 0) {
      ++pos;
      continue;
    }
    if (pos > gap) out.push_back({base + gap, base + pos, -1});
    out.push_back({base + pos, base + pos + length, id});
    pos += length;
    gap = pos;
  }
  if (text.size() > gap) out.push_back({base + gap, base + text.size(), -1});
}

void added_vocabulary::split(std::string_view text, std::vector<text_segment>& out) const {
  out.clear();
  if (text.empty()) return;
  if (raw_.empty() && normalized_.empty()) {
    out.push_back({0, text.size(), -1});
    return;
  }
  std::vector<text_segment> first;
  split_with(raw_, text, 0, first);
  for (const auto& s : first) {
    if (s.id >= 0 || normalized_.empty())
      out.push_back(s);
    else
      split_with(normalized_, text.substr(s.begin, s.end - s.begin), s.begin, out);
  }
}

}  // namespace dsv4::text
