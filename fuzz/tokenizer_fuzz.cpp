// libFuzzer target for the text path with the real DeepSeek-V4 tokenizer
// (tests/fixtures/text/deepseek_v4_tokenizer.json): encoding any bytes round-trips through
// decode_bytes, decoding arbitrary ids either works or throws dsv4::error, the stream decoder
// produces exactly what the full decode produces, and the incremental completion parser agrees
// with itself and with the strict parser. Anything else (another exception, a crash, an ASan
// report, a failed check) is a finding.
//
// Input: byte 0 holds flags (bit 0: thinking mode, bit 1: skip special tokens, bit 2: do not parse
// special-token text), the rest is the payload. For the parser, payload bytes 0x01..0x0E (except
// '\n') expand to the chat format's markers, which random bytes would almost never spell.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "text/chat_parser.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace {

using namespace dsv4::text;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "tokenizer_fuzz: check failed: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond)         \
  do {                           \
    if (!(cond)) finding(#cond); \
  } while (0)

const tokenizer& v4_tokenizer() {
  // Loaded once: the 6 MB tokenizer.json takes far longer to parse than one input to check.
  static const tokenizer tok = tokenizer::load(DSV4_FUZZ_TOKENIZER);
  return tok;
}

std::string expand_markers(std::string_view payload) {
  static constexpr std::string_view markers[] = {
      "",
      "</think>",
      "<｜end▁of▁sentence｜>",
      "\n\n<｜DSML｜tool_calls>\n",
      "</｜DSML｜tool_calls>",
      "<｜DSML｜invoke name=\"",
      "\">\n",
      "<｜DSML｜parameter name=\"",
      "\" string=\"true\">",
      "\" string=\"false\">",
      "\n",  // 0x0A stays a newline
      "</｜DSML｜parameter>\n",
      "</｜DSML｜invoke>\n",
      "\r",  // 0x0D stays a carriage return
      "<think>",
  };
  std::string out;
  for (const char c : payload) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 1 && b < std::size(markers))
      out += markers[b];
    else
      out += c;
  }
  return out;
}

// Streams ids through a stream_decoder; the pieces must add up to the full (lossy) decode.
std::vector<std::string> stream_pieces(const tokenizer& tok, const std::vector<int32_t>& ids,
                                       bool skip_special) {
  stream_decoder decoder(tok, skip_special);
  std::vector<std::string> pieces;
  std::string joined;
  for (int32_t id : ids) {
    pieces.push_back(decoder.push(id));
    FUZZ_CHECK(utf8::is_valid(pieces.back()));
    joined += pieces.back();
  }
  pieces.push_back(decoder.flush());
  FUZZ_CHECK(utf8::is_valid(pieces.back()));
  joined += pieces.back();
  FUZZ_CHECK(joined == tok.decode(ids, skip_special));
  return pieces;
}

void check_round_trip(const tokenizer& tok, std::string_view payload, bool parse_special,
                      bool skip_special) {
  const std::vector<int32_t> ids = tok.encode(payload, parse_special);
  for (int32_t id : ids) FUZZ_CHECK(tok.contains(id));
  FUZZ_CHECK(tok.decode_bytes(ids) == payload);
  FUZZ_CHECK(tok.decode(ids) == utf8::to_valid_lossy(payload));
  stream_pieces(tok, ids, skip_special);
}

// Every three payload bytes make one id, a few past the end of the vocabulary included.
void check_random_ids(const tokenizer& tok, std::string_view payload, bool skip_special) {
  std::vector<int32_t> known;
  for (std::size_t i = 0; i + 3 <= payload.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(payload[i])) << 16 |
                       uint32_t(uint8_t(payload[i + 1])) << 8 | uint32_t(uint8_t(payload[i + 2]));
    const auto id = int32_t(v % uint32_t(tok.id_count() + 8));
    const int32_t one[] = {id};
    if (tok.contains(id)) {
      known.push_back(id);
      FUZZ_CHECK(tok.decode_bytes(one) == tok.token_bytes(id));
      continue;
    }
    bool threw = false;
    try {
      tok.decode_bytes(one);
    } catch (const dsv4::error&) {
      threw = true;
    }
    FUZZ_CHECK(threw);
    threw = false;
    stream_decoder decoder(tok, skip_special);
    try {
      decoder.push(id);
    } catch (const dsv4::error&) {
      threw = true;
    }
    FUZZ_CHECK(threw);
  }
  stream_pieces(tok, known, skip_special);
}

// Feeds the pieces to the incremental parser. Its deltas must add up to its message, and when the
// strict parser accepts the whole text, both must agree.
void check_parser(const std::vector<std::string>& pieces, thinking_mode mode) {
  std::string text;
  for (const auto& p : pieces) text += p;
  completion_stream_parser parser(mode);
  std::string reasoning, content;
  std::vector<chat_tool_call> calls;
  auto take = [&](const completion_stream_parser::delta& d) {
    reasoning += d.reasoning_content;
    content += d.content;
    calls.insert(calls.end(), d.tool_calls.begin(), d.tool_calls.end());
  };
  bool stream_ok = true;
  try {
    for (const auto& p : pieces) take(parser.push(p));
    take(parser.finish());
  } catch (const dsv4::error&) {
    stream_ok = false;
  }
  const chat_message& m = parser.message();
  FUZZ_CHECK(reasoning == m.reasoning_content);
  FUZZ_CHECK(content == m.content);
  FUZZ_CHECK(calls.size() == m.tool_calls.size());
  if (!stream_ok) return;
  chat_message strict;
  try {
    strict = parse_completion(text, mode);
  } catch (const dsv4::error&) {
    return;
  }
  FUZZ_CHECK(strict.reasoning_content == m.reasoning_content);
  FUZZ_CHECK(strict.content == m.content);
  FUZZ_CHECK(strict.tool_calls.size() == m.tool_calls.size());
  for (std::size_t i = 0; i < strict.tool_calls.size(); ++i) {
    FUZZ_CHECK(strict.tool_calls[i].name == m.tool_calls[i].name);
    FUZZ_CHECK(strict.tool_calls[i].arguments == m.tool_calls[i].arguments);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const tokenizer& tok = v4_tokenizer();
  const uint8_t flags = data[0];
  const thinking_mode mode = (flags & 1) ? thinking_mode::thinking : thinking_mode::chat;
  const bool skip_special = (flags & 2) != 0;
  const bool parse_special = (flags & 4) == 0;
  const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);

  check_round_trip(tok, payload, parse_special, skip_special);
  check_random_ids(tok, payload, skip_special);

  // The parser sees text the way the chat command gives it: decoded token by token. EOS is a
  // special token, so the pieces keep specials here (the parser must see its text).
  const std::string expanded = expand_markers(payload);
  check_round_trip(tok, expanded, parse_special, skip_special);
  check_parser(stream_pieces(tok, tok.encode(expanded, parse_special), false), mode);
  return 0;
}
