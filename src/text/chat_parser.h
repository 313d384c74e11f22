// Parsing a DeepSeek-V4 completion (the text generated after the prompt) back into an assistant
// message: reasoning_content (thinking mode: everything before </think>), content, and DSML tool
// calls converted to OpenAI tool_calls whose arguments are a JSON object text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_encoder.h"

namespace dsv4::text {

struct chat_tool_call {
  std::string name;
  std::string arguments;  // JSON object text, as the official parser builds it
};

struct chat_message {
  std::string reasoning_content;
  std::string content;
  std::vector<chat_tool_call> tool_calls;
  // {"role": "assistant", "content", "reasoning_content", "tool_calls": [{"type": "function",
  // "function": {"name", "arguments"}}]}
  nlohmann::ordered_json to_json() const;
};

// The official parse_message_from_completion_text: strict. The text must end with EOS (or with
// the tool-call block); throws dsv4::error describing the first violation.
chat_message parse_completion(std::string_view text, thinking_mode mode);

// Incremental form for streaming: push decoded text as it arrives and get what became certain.
// Text that might be the start of a marker (</think>, EOS, the tool-call block) is held back
// until it is decided; tool calls are reported when their block closes. Lenient at the end: a
// stream that stops without EOS keeps what it had.
class completion_stream_parser {
 public:
  explicit completion_stream_parser(thinking_mode mode);

  struct delta {
    std::string reasoning_content;
    std::string content;
    std::vector<chat_tool_call> tool_calls;
    bool empty() const {
      return reasoning_content.empty() && content.empty() && tool_calls.empty();
    }
  };

  delta push(std::string_view text);
  delta finish();                                      // end of stream: releases held-back text
  bool done() const { return state_ == state::done; }  // EOS seen
  const chat_message& message() const { return message_; }

 private:
  enum class state { reasoning, content, tool_calls, after_tool_calls, done };
  delta advance(bool final);

  state state_;
  std::string buffer_;
  std::size_t pos_ = 0;  // buffer_[0, pos_) is consumed
  chat_message message_;
};

}  // namespace dsv4::text
