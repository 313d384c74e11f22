#include "text/chat_encoder.h"

#include <algorithm>

#include "core/error.h"
#include "text/chat_format.h"
#include "text/python_json.h"

namespace dsv4::text {
namespace {

using ojson = nlohmann::ordered_json;
namespace fmt_ = chat_format;

// Python truthiness, which the official encoder uses for optional fields ("if tools:").
bool truthy(const ojson* value) {
  if (value == nullptr || value->is_null()) return false;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number()) return value->get<double>() != 0;
  if (value->is_string() || value->is_array() || value->is_object()) return !value->empty();
  return true;
}

const ojson* field(const ojson& message, const char* key) {
  auto it = message.find(key);
  return it == message.end() ? nullptr : &*it;
}

std::string role_of(const ojson& message) {
  const ojson* role = field(message, "role");
  return role && role->is_string() ? role->get<std::string>() : std::string();
}

// A text field: missing or null -> "", a string as is, a list of {"type": "text"} parts joined
// (OpenAI content arrays); anything else is an error.
std::string text_of(const ojson* value, std::string_view what) {
  if (value == nullptr || value->is_null()) return {};
  if (value->is_string()) return value->get<std::string>();
  if (value->is_array()) {
    std::string out;
    for (const auto& part : *value) {
      DSV4_CHECK(part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                     part["text"].is_string(),
                 "{}: only text content parts are supported", what);
      out += part["text"].get<std::string>();
    }
    return out;
  }
  fail("{}: content must be a string", what);
}

std::string render_tools(const ojson& tools, std::string_view what) {
  DSV4_CHECK(tools.is_array(), "{}.tools must be an array", what);
  std::string schemas;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    DSV4_CHECK(tools[i].is_object() && tools[i].contains("function"),
               "{}.tools[{}] must be an OpenAI tool object with a function", what, i);
    if (i) schemas += '\n';
    schemas += python_json_dumps(tools[i]["function"]);
  }
  std::string out(fmt_::tools_template);
  out.replace(out.find("{schemas}"), 9, schemas);
  return out;
}

std::string_view task_token_of(const ojson& task, std::string_view what) {
  DSV4_CHECK(task.is_string(), "{}.task must be a string", what);
  for (const auto& t : fmt_::task_tokens)
    if (t.task == task.get<std::string>()) return t.token;
  fail("{}.task '{}' is not one of action, query, authority, domain, title, read_url", what,
       task.get<std::string>());
}

// DSML parameters of one call: arguments is a JSON object text; a text that does not parse
// becomes one string parameter named "arguments" (as the official encoder does).
std::string dsml_arguments(const ojson& arguments, std::string_view what) {
  ojson parsed;
  bool ok = false;
  if (arguments.is_string()) {
    try {
      parsed = ojson::parse(arguments.get<std::string>());
      ok = true;
    } catch (const ojson::exception&) {
    }
  }
  if (!ok) parsed = ojson{{"arguments", arguments}};
  DSV4_CHECK(parsed.is_object(), "{}: tool call arguments must be a JSON object", what);
  std::string out;
  bool first = true;
  for (const auto& [key, value] : parsed.items()) {
    if (!first) out += '\n';
    first = false;
    const bool is_string = value.is_string();
    out += fmt::format("<{}parameter name=\"{}\" string=\"{}\">{}</{}parameter>", fmt_::dsml, key,
                       is_string ? "true" : "false",
                       is_string ? value.get<std::string>() : python_json_dumps(value), fmt_::dsml);
  }
  return out;
}

std::string render_tool_calls(const ojson& calls, std::string_view what) {
  DSV4_CHECK(calls.is_array(), "{}.tool_calls must be an array", what);
  std::string list;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string call_what = fmt::format("{}.tool_calls[{}]", what, i);
    const ojson& call = calls[i];
    DSV4_CHECK(call.is_object() && call.contains("function") && call["function"].is_object(),
               "{}: must have a function object", call_what);
    const ojson& function = call["function"];
    DSV4_CHECK(function.contains("name") && function["name"].is_string(),
               "{}.function.name must be a string", call_what);
    if (i) list += '\n';
    list += fmt::format(
        "<{}invoke name=\"{}\">\n{}\n</{}invoke>", fmt_::dsml, function["name"].get<std::string>(),
        dsml_arguments(function.value("arguments", ojson("")), call_what), fmt_::dsml);
  }
  return fmt::format("\n\n<{}tool_calls>\n{}\n</{}tool_calls>", fmt_::dsml, list, fmt_::dsml);
}

// OpenAI "tool" messages become tool_result blocks of a user message; a user message right
// after them joins the same turn (unless the earlier user message carries a task).
ojson merge_tool_messages(const ojson& messages) {
  ojson merged = ojson::array();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ojson& message = messages[i];
    const std::string what = fmt::format("messages[{}]", i);
    DSV4_CHECK(message.is_object(), "{} must be an object", what);
    const std::string role = role_of(message);
    const bool previous_user_with_blocks = !merged.empty() && role_of(merged.back()) == "user" &&
                                           merged.back().contains("content_blocks");
    if (role == "tool") {
      const ojson* content = field(message, "content");
      ojson block = {{"type", "tool_result"},
                     {"tool_use_id", message.value("tool_call_id", ojson("")).is_string()
                                         ? message.value("tool_call_id", ojson(""))
                                         : ojson("")},
                     {"content", content && !content->is_null() ? *content : ojson("")}};
      if (previous_user_with_blocks)
        merged.back()["content_blocks"].push_back(std::move(block));
      else
        merged.push_back({{"role", "user"}, {"content_blocks", ojson::array({block})}});
    } else if (role == "user") {
      ojson block = {{"type", "text"}, {"text", text_of(field(message, "content"), what)}};
      const ojson* previous_task = merged.empty() ? nullptr : field(merged.back(), "task");
      if (previous_user_with_blocks && (previous_task == nullptr || previous_task->is_null())) {
        merged.back()["content_blocks"].push_back(std::move(block));
      } else {
        ojson copy = {{"role", "user"},
                      {"content", block["text"]},
                      {"content_blocks", ojson::array({block})}};
        for (const char* key : {"task", "wo_eos", "mask"})
          if (message.contains(key)) copy[key] = message[key];
        merged.push_back(std::move(copy));
      }
    } else {
      merged.push_back(message);
    }
  }
  return merged;
}

// Tool results of one user turn follow the order of the calls that asked for them.
void sort_tool_results_by_call_order(ojson& messages) {
  std::vector<std::pair<std::string, int>> order;
  auto rank_of = [&](const ojson& block) {
    const std::string id = block.value("tool_use_id", ojson("")).is_string()
                               ? block.value("tool_use_id", ojson("")).get<std::string>()
                               : std::string();
    for (const auto& [call_id, rank] : order)
      if (call_id == id) return rank;
    return 0;
  };
  for (auto& message : messages) {
    const std::string role = role_of(message);
    if (role == "assistant" && truthy(field(message, "tool_calls")) &&
        message["tool_calls"].is_array()) {
      order.clear();
      for (std::size_t i = 0; i < message["tool_calls"].size(); ++i) {
        const ojson& call = message["tool_calls"][i];
        std::string id;
        // The call id, else the function's id (as the official encoder looks them up).
        if (call.is_object() && call.contains("id") && call["id"].is_string())
          id = call["id"].get<std::string>();
        if (id.empty() && call.is_object() && call.contains("function") &&
            call["function"].is_object() && call["function"].contains("id") &&
            call["function"]["id"].is_string())
          id = call["function"]["id"].get<std::string>();
        if (!id.empty()) order.emplace_back(id, int(i));
      }
    } else if (role == "user" && truthy(field(message, "content_blocks"))) {
      ojson& blocks = message["content_blocks"];
      std::vector<ojson> results;
      for (const auto& block : blocks)
        if (block.value("type", "") == "tool_result") results.push_back(block);
      if (results.size() <= 1 || order.empty()) continue;
      std::stable_sort(results.begin(), results.end(),
                       [&](const ojson& a, const ojson& b) { return rank_of(a) < rank_of(b); });
      std::size_t next = 0;
      for (auto& block : blocks)
        if (block.value("type", "") == "tool_result") block = results[next++];
    }
  }
}

int last_user_index(const ojson& messages) {
  for (int i = int(messages.size()) - 1; i >= 0; --i) {
    const std::string role = role_of(messages[std::size_t(i)]);
    if (role == "user" || role == "developer") return i;
  }
  return -1;
}

// Before the last user turn: assistant reasoning is removed and developer messages are dropped.
ojson drop_thinking_messages(const ojson& messages) {
  const int last_user = last_user_index(messages);
  ojson result = ojson::array();
  for (int i = 0; i < int(messages.size()); ++i) {
    const ojson& message = messages[std::size_t(i)];
    const std::string role = role_of(message);
    if (role == "user" || role == "system" || role == "tool" || role == "latest_reminder" ||
        role == "direct_search_results" || i >= last_user) {
      result.push_back(message);
    } else if (role == "assistant") {
      ojson copy = message;
      copy.erase("reasoning_content");
      result.push_back(std::move(copy));
    }
  }
  return result;
}

std::string render_user_blocks(const ojson& blocks, std::string_view what) {
  std::string out;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ojson& block = blocks[i];
    if (i) out += "\n\n";
    const std::string type = block.value("type", "");
    if (type == "text") {
      out += text_of(field(block, "text"), what);
    } else if (type == "tool_result") {
      const ojson* content = field(block, "content");
      std::string text;
      if (content && content->is_array()) {
        for (std::size_t j = 0; j < content->size(); ++j) {
          const ojson& part = (*content)[j];
          if (j) text += "\n\n";
          if (part.value("type", "") == "text")
            text += text_of(field(part, "text"), what);
          else
            text += fmt::format("[Unsupported {}]", part.value("type", ""));
        }
      } else {
        text = text_of(content, what);
      }
      out += fmt::format("<tool_result>{}</tool_result>", text);
    } else {
      out += fmt::format("[Unsupported {}]", type);
    }
  }
  return out;
}

std::string render_message(int index, const ojson& messages, const chat_options& options,
                           bool drop_thinking) {
  const ojson& message = messages[std::size_t(index)];
  const std::string what = fmt::format("messages[{}]", index);
  const std::string role = role_of(message);
  const bool thinking = options.mode == thinking_mode::thinking;
  const int last_user = last_user_index(messages);
  std::string prompt;

  if (index == 0 && thinking && options.effort == reasoning_effort::max)
    prompt += fmt_::reasoning_effort_max;

  auto append_tools_and_format = [&](std::string& out) {
    if (truthy(field(message, "tools"))) out += "\n\n" + render_tools(message["tools"], what);
    if (truthy(field(message, "response_format")))
      out += "\n\n" + std::string(fmt_::response_format_prefix) +
             python_json_dumps(message["response_format"]);
  };

  if (role == "system") {
    prompt += text_of(field(message, "content"), what);
    append_tools_and_format(prompt);
  } else if (role == "developer") {
    const std::string content = text_of(field(message, "content"), what);
    DSV4_CHECK(!content.empty(), "{}: a developer message needs content", what);
    prompt += fmt_::user;
    prompt += content;
    append_tools_and_format(prompt);
  } else if (role == "user") {
    prompt += fmt_::user;
    if (truthy(field(message, "content_blocks")))
      prompt += render_user_blocks(message["content_blocks"], what);
    else
      prompt += text_of(field(message, "content"), what);
  } else if (role == "latest_reminder") {
    prompt += fmt_::latest_reminder;
    prompt += text_of(field(message, "content"), what);
  } else if (role == "assistant") {
    std::string tool_calls;
    if (truthy(field(message, "tool_calls")))
      tool_calls = render_tool_calls(message["tool_calls"], what);
    const bool previous_has_task = index >= 1 &&
                                   field(messages[std::size_t(index - 1)], "task") != nullptr &&
                                   !messages[std::size_t(index - 1)]["task"].is_null();
    std::string thinking_part;
    if (thinking && !previous_has_task && (!drop_thinking || index > last_user))
      thinking_part =
          text_of(field(message, "reasoning_content"), what) + std::string(fmt_::thinking_end);
    prompt += thinking_part;
    prompt += text_of(field(message, "content"), what);
    prompt += tool_calls;
    if (!truthy(field(message, "wo_eos"))) prompt += fmt_::eos;
  } else {
    fail("{}: unknown role '{}'", what, role);
  }

  // What follows the message: nothing when another turn starts; otherwise the generation
  // prompt (Assistant marker and the thinking switch) or a task token.
  if (index + 1 < int(messages.size())) {
    const std::string next_role = role_of(messages[std::size_t(index + 1)]);
    if (next_role != "assistant" && next_role != "latest_reminder") return prompt;
  }
  const ojson* task = field(message, "task");
  if (task != nullptr && !task->is_null()) {
    const std::string_view token = task_token_of(*task, what);
    if (task->get<std::string>() != "action") {
      prompt += token;
    } else {
      prompt += fmt_::assistant;
      prompt += thinking ? fmt_::thinking_start : fmt_::thinking_end;
      prompt += token;
    }
  } else if (role == "user" || role == "developer") {
    prompt += fmt_::assistant;
    const bool open_thinking = thinking && (!drop_thinking || index >= last_user);
    prompt += open_thinking ? fmt_::thinking_start : fmt_::thinking_end;
  }
  return prompt;
}

std::string encode_chat_unchecked(const ojson& messages, const chat_options& options) {
  DSV4_CHECK(messages.is_array(), "messages must be a JSON array");
  ojson merged = merge_tool_messages(messages);
  sort_tool_results_by_call_order(merged);

  std::string prompt = options.add_bos ? std::string(fmt_::bos) : std::string();
  // Tools anywhere keep all reasoning: tool-call turns need their thinking.
  bool drop_thinking = options.drop_thinking;
  for (const auto& message : merged)
    if (truthy(field(message, "tools"))) drop_thinking = false;
  if (options.mode == thinking_mode::thinking && drop_thinking)
    merged = drop_thinking_messages(merged);
  for (int i = 0; i < int(merged.size()); ++i)
    prompt += render_message(i, merged, options, drop_thinking);
  return prompt;
}

}  // namespace

std::string encode_chat(const ojson& messages, const chat_options& options) {
  try {
    return encode_chat_unchecked(messages, options);
  } catch (const ojson::exception& e) {
    // A value of an unexpected JSON type deep inside a message (e.g. a block that is a number).
    fail("messages: unexpected structure: {}", e.what());
  }
}

ojson chat_messages_from_request(const ojson& request) {
  if (request.is_array()) return request;
  DSV4_CHECK(request.is_object() && request.contains("messages") && request["messages"].is_array(),
             "expected a messages array or an object with a \"messages\" array");
  ojson messages = request["messages"];
  if (!truthy(field(request, "tools"))) return messages;
  DSV4_CHECK(messages.empty() || messages[0].is_object(), "messages[0] must be an object");
  const std::string first_role = messages.empty() ? "" : role_of(messages[0]);
  if (first_role != "system" && first_role != "developer")
    messages.insert(messages.begin(), ojson{{"role", "system"}, {"content", ""}});
  messages[0]["tools"] = request["tools"];
  return messages;
}

thinking_mode parse_thinking_mode(std::string_view name) {
  if (name == "chat") return thinking_mode::chat;
  if (name == "thinking") return thinking_mode::thinking;
  fail("thinking mode '{}' is not chat or thinking", name);
}

reasoning_effort parse_reasoning_effort(std::string_view name) {
  if (name.empty() || name == "none") return reasoning_effort::none;
  if (name == "high") return reasoning_effort::high;
  if (name == "max") return reasoning_effort::max;
  fail("reasoning effort '{}' is not high or max", name);
}

}  // namespace dsv4::text
