// A compiled Oniguruma regex (Ruby syntax, UTF-8, default options: what Hugging Face tokenizers'
// `onig` crate uses), so tokenizer.json patterns run unchanged, including \p{..} classes and
// lookahead. Searches are const and may run from several threads at once.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace dsv4::text {

class regex {
 public:
  // Throws dsv4::error naming the pattern when Oniguruma rejects it.
  explicit regex(std::string_view pattern);
  ~regex();
  regex(regex&&) noexcept;
  regex& operator=(regex&&) noexcept;

  // Appends to `matches` the [begin, end) byte offsets of all non-overlapping matches in
  // subject, left to right, as Rust's find_iter does (an empty match advances by one
  // character). Precondition: subject is valid UTF-8. The subject's end is the end of the
  // string for anchors and lookahead.
  void find_all(std::string_view subject,
                std::vector<std::pair<std::size_t, std::size_t>>& matches) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dsv4::text
