// The DeepSeek-V4 chat format: its marker strings and prompt texts, shared by the encoder
// (messages -> prompt) and the parser (completion -> message). Values are those of the official
// encoder, encoding/encoding_dsv4.py of the DeepSeek-V4-Flash release.
#pragma once

#include <string_view>

namespace dsv4::text::chat_format {

inline constexpr std::string_view bos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view eos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view thinking_start = "<think>";
inline constexpr std::string_view thinking_end = "</think>";
inline constexpr std::string_view dsml = "｜DSML｜";
inline constexpr std::string_view user = "<｜User｜>";
inline constexpr std::string_view assistant = "<｜Assistant｜>";
inline constexpr std::string_view latest_reminder = "<｜latest_reminder｜>";

// Prefixed to the first message in thinking mode with reasoning_effort "max".
inline constexpr std::string_view reasoning_effort_max =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to "
    "resolve the root cause, rigorously stress-testing your logic against all potential paths, "
    "edge cases, and adversarial scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, "
    "considered alternative, and rejected hypothesis to ensure absolutely no assumption is left "
    "unchecked.\n\n";

inline constexpr std::string_view response_format_prefix =
    "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

// The tools section; "{schemas}" is replaced by one JSON object per line.
inline constexpr std::string_view tools_template =
    "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can "
    "invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:\n\n"
    "<｜DSML｜tool_calls>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME\">\n"
    "<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE"
    "</｜DSML｜parameter>\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "<｜DSML｜invoke name=\"$TOOL_NAME2\">\n"
    "...\n"
    "</｜DSML｜invoke>\n"
    "</｜DSML｜tool_calls>\n\n"
    "String parameters should be specified as is and set `string=\"true\"`. For all other types "
    "(numbers, booleans, arrays, objects), pass the value in JSON format and set "
    "`string=\"false\"`.\n\n"
    "If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning "
    "inside <think>...</think> BEFORE any tool calls or final response.\n\n"
    "Otherwise, output directly after </think> with tool calls or final response.\n\n"
    "### Available Tool Schemas\n\n"
    "{schemas}\n\n"
    "You MUST strictly follow the above defined tool name and parameter schemas to invoke tool "
    "calls.\n";

// Task tokens of user messages with a "task" field.
struct task_token {
  std::string_view task, token;
};
inline constexpr task_token task_tokens[] = {
    {"action", "<｜action｜>"}, {"query", "<｜query｜>"}, {"authority", "<｜authority｜>"},
    {"domain", "<｜domain｜>"}, {"title", "<｜title｜>"}, {"read_url", "<｜read_url｜>"},
};

}  // namespace dsv4::text::chat_format
