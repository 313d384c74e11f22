#include "text/unicode_bridge.h"

// ICU also defines UChar; keep Oniguruma from redefining it.
#define ONIG_ESCAPE_UCHAR_COLLISION
#include <oniguruma.h>
#include <unicode/uchar.h>

#include <mutex>

#include "text/utf8.h"

namespace dsv4::text {
namespace {

constexpr char32_t code_point_count = 0x110000;

std::size_t utf8_length(char32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

char32_t decode(std::string_view text, std::size_t length) {
  const auto b = [&](std::size_t i) { return char32_t(std::uint8_t(text[i])); };
  switch (length) {
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default:
      return b(0);
  }
}

// Stand-ins must not be characters that tokenizer patterns name explicitly: keep them out of
// ASCII/Latin-1 and out of the CJK and kana blocks (DeepSeek's pattern lists those ranges).
bool may_stand_in(char32_t cp) {
  return cp >= 0x800 && !(cp >= 0x3000 && cp <= 0x30FF) && !(cp >= 0x4E00 && cp <= 0x9FFF) &&
         !(cp >= 0xD800 && cp <= 0xDFFF);
}

}  // namespace

unicode_bridge::unicode_bridge() : newer_(code_point_count, 0) {
  {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);  // idempotent
  }
  OnigEncoding encoding = ONIG_ENCODING_UTF8;
  OnigUChar name[] = "Cn";
  const int unassigned = ONIGENC_PROPERTY_NAME_TO_CTYPE(encoding, name, name + 2);
  if (unassigned < 0) return;  // cannot ask Oniguruma: bridge nothing
  for (char32_t cp = 0; cp < code_point_count; ++cp) {
    const auto category = u_charType(UChar32(cp));
    const bool onig_unassigned = ONIGENC_IS_CODE_CTYPE(encoding, cp, OnigCtype(unassigned));
    if (category == U_UNASSIGNED) continue;
    if (onig_unassigned) {
      newer_[cp] = 1;
      ++bridged_count_;
    } else if (may_stand_in(cp) && category < 32) {
      char32_t& slot = stand_in_[category][utf8_length(cp)];
      if (slot == 0) slot = cp;
    }
  }
}

const unicode_bridge& unicode_bridge::get() {
  static const unicode_bridge instance;
  return instance;
}

std::optional<std::string> unicode_bridge::substitute(std::string_view text) const {
  std::optional<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (std::uint8_t(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const std::size_t length = utf8::char_length(text.substr(pos));
    if (length == 0) return out;  // precondition broken: leave the rest alone
    const char32_t cp = decode(text.substr(pos), length);
    if (newer_[cp]) {
      const auto category = u_charType(UChar32(cp));
      const char32_t stand_in = category < 32 ? stand_in_[category][length] : 0;
      if (stand_in != 0) {
        if (!out) out.emplace(text);
        std::string replacement;
        append_utf8(replacement, stand_in);
        out->replace(pos, length, replacement);
      }
    }
    pos += length;
  }
  return out;
}

}  // namespace dsv4::text
