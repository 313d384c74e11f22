#include "text/byte_level.h"

#include "text/utf8.h"

namespace dsv4::text::byte_level {
namespace {

bool is_printable_latin1(unsigned byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

std::string encode_utf8(char32_t code_point) {
  std::string out;
  if (code_point < 0x80) {
    out += char(code_point);
  } else if (code_point < 0x800) {
    out += char(0xC0 | (code_point >> 6));
    out += char(0x80 | (code_point & 0x3F));
  } else {
    out += char(0xE0 | (code_point >> 12));
    out += char(0x80 | ((code_point >> 6) & 0x3F));
    out += char(0x80 | (code_point & 0x3F));
  }
  return out;
}

struct tables {
  std::array<char32_t, 256> char_of{};
  std::array<std::string, 256> utf8_of;
  tables() {
    char32_t next = 256;
    for (unsigned byte = 0; byte < 256; ++byte) {
      char_of[byte] = is_printable_latin1(byte) ? char32_t(byte) : next++;
      utf8_of[byte] = encode_utf8(char_of[byte]);
    }
  }
  // All mapped code points are below U+0144, so a flat array inverts the mapping.
  std::optional<std::uint8_t> byte_of(char32_t code_point) const {
    static const auto inverse = [this] {
      std::array<int, 0x144> table{};
      table.fill(-1);
      for (unsigned byte = 0; byte < 256; ++byte) table[char_of[byte]] = int(byte);
      return table;
    }();
    if (code_point >= inverse.size() || inverse[code_point] < 0) return std::nullopt;
    return std::uint8_t(inverse[code_point]);
  }
};

const tables& get() {
  static const tables instance;
  return instance;
}

char32_t decode_char(std::string_view text, std::size_t length) {
  const auto b = [&](std::size_t i) { return char32_t(std::uint8_t(text[i])); };
  switch (length) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

}  // namespace

char32_t char_of_byte(std::uint8_t byte) {
  return get().char_of[byte];
}

const std::string& utf8_of_byte(std::uint8_t byte) {
  return get().utf8_of[byte];
}

std::optional<std::string> to_bytes(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  std::size_t pos = 0;
  while (pos < token.size()) {
    const std::size_t length = utf8::char_length(token.substr(pos));
    if (length == 0) return std::nullopt;
    const auto byte = get().byte_of(decode_char(token.substr(pos), length));
    if (!byte) return std::nullopt;
    out += char(*byte);
    pos += length;
  }
  return out;
}

std::string from_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += get().utf8_of[std::uint8_t(c)];
  return out;
}

}  // namespace dsv4::text::byte_level
