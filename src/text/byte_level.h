// GPT-2's reversible byte <-> character mapping ("bytes_to_unicode"): printable Latin-1 bytes map
// to themselves, the other 68 bytes to U+0100.. in byte order. Byte-level BPE vocabularies spell
// every token in these characters; the tokenizer converts them to raw bytes once at load time.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dsv4::text::byte_level {

// The code point that stands for `byte`.
char32_t char_of_byte(std::uint8_t byte);

// The UTF-8 spelling of char_of_byte(byte).
const std::string& utf8_of_byte(std::uint8_t byte);

// Converts a token spelled in byte-level characters back to raw bytes; nullopt when some
// character is not one of the 256 (for example an added token such as "<｜User｜>").
std::optional<std::string> to_bytes(std::string_view token);

// Spells raw bytes in byte-level characters (inverse of to_bytes).
std::string from_bytes(std::string_view bytes);

}  // namespace dsv4::text::byte_level
