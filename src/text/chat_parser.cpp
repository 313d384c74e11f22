#include "text/chat_parser.h"

#include <optional>

#include "core/error.h"
#include "text/chat_format.h"
#include "text/python_json.h"

namespace dsv4::text {
namespace {

namespace cf = chat_format;

const std::string tool_calls_start = "\n\n<" + std::string(cf::dsml) + "tool_calls";
const std::string tool_calls_end = "</" + std::string(cf::dsml) + "tool_calls>";
const std::string invoke_start = "<" + std::string(cf::dsml) + "invoke";
const std::string invoke_end = "</" + std::string(cf::dsml) + "invoke";
const std::string parameter_start = "<" + std::string(cf::dsml) + "parameter";
const std::string parameter_end = "/" + std::string(cf::dsml) + "parameter";

struct read_result {
  std::size_t next;                      // index after the stop (or the end of text)
  std::string_view before;               // text before the stop
  std::optional<std::string_view> stop;  // which stop was found (the first listed on a tie)
};

// Reads from index to the earliest of the stop strings.
read_result read_until_stop(std::size_t index, std::string_view text,
                            std::initializer_list<std::string_view> stops) {
  std::size_t best = std::string_view::npos;
  std::optional<std::string_view> matched;
  for (std::string_view stop : stops) {
    const std::size_t pos = text.find(stop, index);
    if (pos != std::string_view::npos && (best == std::string_view::npos || pos < best)) {
      best = pos;
      matched = stop;
    }
  }
  if (!matched) return {text.size(), text.substr(std::min(index, text.size())), std::nullopt};
  return {best + matched->size(), text.substr(index, best - index), matched};
}

bool is_python_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The invoke header ` name="NAME">\n` (the official regex ^\s*name="(.*?)">\n$, where $ may
// also stand before one final newline, as in a call without parameters).
std::optional<std::string> match_invoke_name(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_python_space(s[i])) ++i;
  s.remove_prefix(i);
  if (!s.starts_with("name=\"")) return std::nullopt;
  s.remove_prefix(6);
  if (s.ends_with("\">\n\n")) return std::string(s.substr(0, s.size() - 4));
  if (s.ends_with("\">\n")) return std::string(s.substr(0, s.size() - 3));
  return std::nullopt;
}

// A parameter ` name="KEY" string="true|false">VALUE<` (regex
// ^ name="(.*?)" string="(true|false)">(.*?)<$, DOTALL).
std::optional<std::tuple<std::string, bool, std::string>> match_parameter(std::string_view s) {
  if (!s.starts_with(" name=\"")) return std::nullopt;
  s.remove_prefix(7);
  if (s.ends_with("<\n"))
    s.remove_suffix(2);
  else if (s.ends_with("<"))
    s.remove_suffix(1);
  else
    return std::nullopt;
  for (std::size_t p = s.find("\" string=\""); p != std::string_view::npos;
       p = s.find("\" string=\"", p + 1)) {
    const std::string_view rest = s.substr(p + 10);
    for (const auto& [flag, is_string] : {std::pair{"true\">", true}, std::pair{"false\">", false}})
      if (rest.starts_with(flag))
        return std::tuple{std::string(s.substr(0, p)), is_string,
                          std::string(rest.substr(std::string_view(flag).size()))};
  }
  return std::nullopt;
}

// Parses a tool-call block starting right after "\n\n<｜DSML｜tool_calls"; returns the index
// after it and the stop that ended it.
std::size_t parse_tool_calls(std::size_t index, std::string_view text,
                             std::vector<chat_tool_call>& calls,
                             std::optional<std::string_view>& last_stop) {
  while (index < text.size()) {
    auto r = read_until_stop(index, text, {invoke_start, tool_calls_end});
    index = r.next;
    last_stop = r.stop;
    DSV4_CHECK(r.before == ">\n", "tool call format error: expected '>\\n' but got '{}'", r.before);
    if (r.stop == tool_calls_end) break;
    DSV4_CHECK(r.stop.has_value(), "tool call block is not closed");

    r = read_until_stop(index, text, {parameter_start, invoke_end});
    index = r.next;
    const auto name = match_invoke_name(r.before);
    DSV4_CHECK(name.has_value(), "tool name format error: '{}'", r.before);
    std::vector<std::pair<std::string, std::pair<std::string, bool>>> arguments;
    auto stop = r.stop;
    while (stop == parameter_start) {
      r = read_until_stop(index, text, {parameter_end});
      index = r.next;
      auto parameter = match_parameter(r.before);
      DSV4_CHECK(parameter.has_value(), "parameter format error: '{}'", r.before);
      auto& [key, is_string, value] = *parameter;
      for (const auto& existing : arguments)
        DSV4_CHECK(existing.first != key, "duplicate parameter name '{}'", key);
      arguments.push_back({key, {value, is_string}});
      r = read_until_stop(index, text, {parameter_start, invoke_end});
      index = r.next;
      stop = r.stop;
      DSV4_CHECK(r.before == ">\n", "parameter format error: expected '>\\n' but got '{}'",
                 r.before);
    }
    // Arguments text exactly as the official decode_dsml_to_arguments writes it.
    std::string json = "{";
    for (std::size_t i = 0; i < arguments.size(); ++i) {
      const auto& [key, value] = arguments[i];
      if (i) json += ", ";
      json += python_json_string(key) + ": " +
              (value.second ? python_json_string(value.first) : value.first);
    }
    json += "}";
    calls.push_back({*name, std::move(json)});
    last_stop = stop;
  }
  return index;
}

std::size_t held_back_length(std::string_view text, std::initializer_list<std::string_view> stops) {
  // Longest suffix of text that is a proper prefix of some stop.
  std::size_t best = 0;
  for (std::string_view stop : stops)
    for (std::size_t n = std::min(text.size(), stop.size() - 1); n > best; --n)
      if (text.substr(text.size() - n) == stop.substr(0, n)) {
        best = n;
        break;
      }
  return best;
}

}  // namespace

nlohmann::ordered_json chat_message::to_json() const {
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const auto& call : tool_calls)
    calls.push_back(
        {{"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  return {{"role", "assistant"},
          {"content", content},
          {"reasoning_content", reasoning_content},
          {"tool_calls", std::move(calls)}};
}

chat_message parse_completion(std::string_view text, thinking_mode mode) {
  chat_message message;
  std::size_t index = 0;
  if (mode == thinking_mode::thinking) {
    auto r = read_until_stop(index, text, {cf::thinking_end, tool_calls_start});
    DSV4_CHECK(r.stop == cf::thinking_end, "invalid thinking format: missing </think>");
    message.reasoning_content = std::string(r.before);
    index = r.next;
  }
  auto r = read_until_stop(index, text, {cf::eos, tool_calls_start});
  message.content = std::string(r.before);
  index = r.next;
  std::optional<std::string_view> stop = r.stop;
  if (stop == tool_calls_start) {
    index = parse_tool_calls(index, text, message.tool_calls, stop);
    r = read_until_stop(index, text, {cf::eos});
    DSV4_CHECK(r.before.empty(), "unexpected content after tool calls: '{}'", r.before);
    index = r.next;
    stop = r.stop;
  } else {
    DSV4_CHECK(stop == cf::eos, "invalid format: missing EOS token");
  }
  DSV4_CHECK(index == text.size() && (!stop || stop == cf::eos), "unexpected content at end");
  for (std::string_view token : {cf::bos, cf::eos, cf::thinking_start, cf::thinking_end, cf::dsml})
    DSV4_CHECK(message.content.find(token) == std::string::npos &&
                   message.reasoning_content.find(token) == std::string::npos,
               "unexpected special token '{}' in content", token);
  return message;
}

completion_stream_parser::completion_stream_parser(thinking_mode mode)
    : state_(mode == thinking_mode::thinking ? state::reasoning : state::content) {}

completion_stream_parser::delta completion_stream_parser::push(std::string_view text) {
  buffer_ += text;
  return advance(false);
}

completion_stream_parser::delta completion_stream_parser::finish() {
  return advance(true);
}

completion_stream_parser::delta completion_stream_parser::advance(bool final) {
  delta out;
  const std::string_view text = buffer_;
  for (;;) {
    if (state_ == state::reasoning || state_ == state::content) {
      const bool reasoning = state_ == state::reasoning;
      const std::string_view first_stop = reasoning ? cf::thinking_end : cf::eos;
      auto r = read_until_stop(pos_, text, {first_stop, tool_calls_start});
      std::string& sink = reasoning ? out.reasoning_content : out.content;
      std::string& total = reasoning ? message_.reasoning_content : message_.content;
      if (!r.stop) {
        const std::size_t hold =
            final ? 0 : held_back_length(r.before, {first_stop, tool_calls_start});
        const std::string_view ready = r.before.substr(0, r.before.size() - hold);
        sink += ready;
        total += ready;
        pos_ += ready.size();
        return out;
      }
      sink += r.before;
      total += r.before;
      pos_ = r.next;
      if (r.stop == tool_calls_start)
        state_ = state::tool_calls;
      else
        state_ = reasoning ? state::content : state::done;
      continue;
    }
    if (state_ == state::tool_calls) {
      const std::size_t end = text.find(tool_calls_end, pos_);
      if (end == std::string_view::npos) return out;  // wait for the whole block
      std::vector<chat_tool_call> calls;
      std::optional<std::string_view> stop;
      const std::string_view block = text.substr(0, end + tool_calls_end.size());
      pos_ = parse_tool_calls(pos_, block, calls, stop);
      out.tool_calls.insert(out.tool_calls.end(), calls.begin(), calls.end());
      message_.tool_calls.insert(message_.tool_calls.end(), calls.begin(), calls.end());
      state_ = state::after_tool_calls;
      continue;
    }
    if (state_ == state::after_tool_calls) {
      if (text.find(cf::eos, pos_) != std::string_view::npos) state_ = state::done;
      return out;
    }
    return out;  // done: anything after EOS is ignored
  }
}

}  // namespace dsv4::text
