// Strict UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF), as Rust's `str`
// and therefore Hugging Face tokenizers understand it. Used to keep invalid bytes away from the
// regex engine, to repair decoded bytes like String::from_utf8_lossy, and to hold back a partial
// character while streaming.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dsv4::text::utf8 {

// Length of the valid character starting at text[0], or 0 when the bytes there do not start a
// valid character (also when text is empty or the character is cut off by the end of text).
std::size_t char_length(std::string_view text);

// Length of the "maximal subpart of an ill-formed subsequence" at text[0] (Unicode ch. 3, the
// rule from_utf8_lossy follows): the bytes that one U+FFFD replaces. Precondition: char_length
// returned 0 and text is not empty. Always >= 1.
std::size_t invalid_length(std::string_view text);

// True when text[0..] is a proper prefix of some valid character (a lead byte followed by fewer
// continuation bytes than it needs, each within range), i.e. more bytes could complete it.
bool is_incomplete_prefix(std::string_view text);

// Length of the longest prefix of text that is valid UTF-8.
std::size_t valid_prefix_length(std::string_view text);

bool is_valid(std::string_view text);

// Copies text, replacing every maximal ill-formed subpart with U+FFFD (from_utf8_lossy).
std::string to_valid_lossy(std::string_view text);

inline constexpr std::string_view replacement_character = "\xEF\xBF\xBD";

}  // namespace dsv4::text::utf8
