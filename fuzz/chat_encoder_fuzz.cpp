// libFuzzer entry point for the prompt encoder (chat_messages_from_request + encode_chat, the path
// of `dsv4 render --messages` and of a chat request): any JSON document must either give a prompt
// or throw dsv4::error; anything else (another exception, a crash, an ASan report, a hang) is a
// finding. Byte 0 holds the options (bit 0 thinking mode, bit 1 drop_thinking, bit 2 add_bos,
// bits 3-4 reasoning effort); the rest is the request. Inputs that are not JSON are skipped.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/chat_encoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  dsv4::text::chat_options options;
  options.mode =
      (data[0] & 1) ? dsv4::text::thinking_mode::thinking : dsv4::text::thinking_mode::chat;
  options.drop_thinking = (data[0] & 2) != 0;
  options.add_bos = (data[0] & 4) != 0;
  const int effort = (data[0] >> 3) & 3;
  options.effort = effort == 1   ? dsv4::text::reasoning_effort::high
                   : effort == 2 ? dsv4::text::reasoning_effort::max
                                 : dsv4::text::reasoning_effort::none;
  const nlohmann::ordered_json request = nlohmann::ordered_json::parse(
      data + 1, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return 0;
  try {
    const nlohmann::ordered_json messages = dsv4::text::chat_messages_from_request(request);
    (void)dsv4::text::encode_chat(messages, options);
  } catch (const dsv4::error&) {
  }
  return 0;
}
