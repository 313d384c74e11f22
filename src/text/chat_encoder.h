// DeepSeek-V4 prompt encoding (no Jinja): messages in OpenAI shape -> the exact prompt text of
// the official encoder's encode_messages(messages, thinking_mode, drop_thinking=True,
// add_default_bos_token=True, reasoning_effort). Roles: system, developer, user, assistant,
// tool (merged into the next user turn as <tool_result>), latest_reminder. Message fields:
// content, reasoning_content, tool_calls, tools, response_format, task, wo_eos.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dsv4::text {

enum class thinking_mode { chat, thinking };
enum class reasoning_effort { none, high, max };  // only max changes the prompt

struct chat_options {
  thinking_mode mode = thinking_mode::thinking;
  reasoning_effort effort = reasoning_effort::none;
  bool drop_thinking = true;  // drop reasoning of turns before the last user turn
  bool add_bos = true;
};

// messages: a JSON array of message objects (ordered_json keeps tool-schema key order, which the
// prompt reproduces). Throws dsv4::error naming the offending message for malformed input.
std::string encode_chat(const nlohmann::ordered_json& messages, const chat_options& options);

// Accepts either a messages array or an object {"messages": [...], "tools": [...]} and returns
// the messages with the top-level tools attached to the first message when it is a system or
// developer message, else to a new empty system message put first.
nlohmann::ordered_json chat_messages_from_request(const nlohmann::ordered_json& request);

thinking_mode parse_thinking_mode(std::string_view name);        // "chat" | "thinking"
reasoning_effort parse_reasoning_effort(std::string_view name);  // "" | "high" | "max"

}  // namespace dsv4::text
