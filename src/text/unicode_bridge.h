// Bridges the Unicode version gap between the system's Oniguruma and the one inside Hugging
// Face tokenizers. Debian 12 ships Oniguruma 6.9.8 with Unicode 14 tables; tokenizers bundles a
// newer Oniguruma (Unicode 15.1), so characters assigned in Unicode 15 (CJK Ext H, Kawi, new
// emoji ...) are "unassigned" (Cn) to ours and split differently. ICU (Debian 12: ICU 72,
// Unicode 15.0) knows them: before the regex pre-tokenizer runs, each such character is
// replaced by a stand-in of the same general category and the same UTF-8 length that
// Oniguruma does know, so the split is the one the newer tables give while byte offsets stay
// valid for the original text (BPE still runs on the original bytes). Characters newer than
// ICU's Unicode version remain a known difference.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dsv4::text {

class unicode_bridge {
 public:
  static const unicode_bridge& get();  // built once per process (about 1.1M lookups)

  // nullopt when valid_text (valid UTF-8) needs no stand-ins; otherwise the substituted copy.
  std::optional<std::string> substitute(std::string_view valid_text) const;

  // Number of code points that get a stand-in (for tests and diagnostics).
  std::size_t bridged_count() const { return bridged_count_; }

 private:
  unicode_bridge();
  std::string newer_;              // one byte per code point: 1 = assigned in ICU, Cn to Oniguruma
  char32_t stand_in_[32][5] = {};  // [ICU general category][UTF-8 length] -> stand-in, 0 = none
  std::size_t bridged_count_ = 0;
};

}  // namespace dsv4::text
