// dsv4 render: chat messages -> the exact DeepSeek-V4 prompt text (no newline added).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "text/chat_encoder.h"
#include "tools/command.h"

namespace dsv4::tools {
namespace {

struct render_options {
  std::string messages;
  std::string thinking_mode = "chat";  // the official generate.py default
  std::string reasoning_effort;
  bool no_bos = false;
};

int run_render(const render_options& o) {
  std::ifstream in(o.messages, std::ios::binary);
  DSV4_CHECK(in.good(), "cannot open --messages file {}", o.messages);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  nlohmann::ordered_json request;
  try {
    request = nlohmann::ordered_json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not JSON: {}", o.messages, e.what());
  }
  text::chat_options options;
  options.mode = text::parse_thinking_mode(o.thinking_mode);
  options.effort = text::parse_reasoning_effort(o.reasoning_effort);
  options.add_bos = !o.no_bos;
  std::string prompt;
  try {
    prompt = text::encode_chat(text::chat_messages_from_request(request), options);
  } catch (const error& e) {
    fail("{}: {}", o.messages, e.what());
  }
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

const command_registration registration(
    "render", "Render chat messages to a DeepSeek-V4 prompt", [](CLI::App& sub) {
      auto o = std::make_shared<render_options>();
      sub.add_option("--messages", o->messages,
                     "JSON file: a messages array, or {\"messages\": [...], \"tools\": [...]}")
          ->required();
      sub.add_option("--thinking-mode", o->thinking_mode, "chat or thinking")
          ->capture_default_str();
      sub.add_option("--reasoning-effort", o->reasoning_effort, "high or max (thinking mode)");
      sub.add_flag("--no-bos", o->no_bos, "Leave out the begin-of-sentence text");
      return [o] { return run_render(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
