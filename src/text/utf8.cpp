#include "text/utf8.h"

#include <cstdint>

namespace dsv4::text::utf8 {
namespace {

// Number of bytes a character with this lead byte has, 0 for bytes that never lead.
std::size_t sequence_length(std::uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// The allowed range of the second byte depends on the lead (this is what excludes overlongs,
// surrogates and code points above U+10FFFF); later bytes are always 80..BF.
bool second_byte_ok(std::uint8_t lead, std::uint8_t byte) {
  switch (lead) {
    case 0xE0:
      return byte >= 0xA0 && byte <= 0xBF;
    case 0xED:
      return byte >= 0x80 && byte <= 0x9F;
    case 0xF0:
      return byte >= 0x90 && byte <= 0xBF;
    case 0xF4:
      return byte >= 0x80 && byte <= 0x8F;
    default:
      return byte >= 0x80 && byte <= 0xBF;
  }
}

// How many leading bytes of text form a well-formed prefix of a character (up to its length).
std::size_t well_formed_bytes(std::string_view text, std::size_t& needed) {
  const auto lead = static_cast<std::uint8_t>(text[0]);
  needed = sequence_length(lead);
  if (needed == 0) return 0;
  std::size_t count = 1;
  while (count < needed && count < text.size()) {
    const auto byte = static_cast<std::uint8_t>(text[count]);
    const bool ok = count == 1 ? second_byte_ok(lead, byte) : (byte >= 0x80 && byte <= 0xBF);
    if (!ok) break;
    ++count;
  }
  return count;
}

}  // namespace

std::size_t char_length(std::string_view text) {
  if (text.empty()) return 0;
  std::size_t needed = 0;
  const std::size_t count = well_formed_bytes(text, needed);
  return needed != 0 && count == needed ? needed : 0;
}

std::size_t invalid_length(std::string_view text) {
  std::size_t needed = 0;
  const std::size_t count = well_formed_bytes(text, needed);
  return count == 0 ? 1 : count;
}

bool is_incomplete_prefix(std::string_view text) {
  if (text.empty()) return false;
  std::size_t needed = 0;
  const std::size_t count = well_formed_bytes(text, needed);
  return needed > 1 && count == text.size() && count < needed;
}

std::size_t valid_prefix_length(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<std::uint8_t>(text[pos]) < 0x80) {  // ASCII fast path
      ++pos;
      continue;
    }
    const std::size_t length = char_length(text.substr(pos));
    if (length == 0) break;
    pos += length;
  }
  return pos;
}

bool is_valid(std::string_view text) {
  return valid_prefix_length(text) == text.size();
}

std::string to_valid_lossy(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t valid = valid_prefix_length(text.substr(pos));
    out.append(text.substr(pos, valid));
    pos += valid;
    if (pos < text.size()) {
      out.append(replacement_character);
      pos += invalid_length(text.substr(pos));
    }
  }
  return out;
}

}  // namespace dsv4::text::utf8
