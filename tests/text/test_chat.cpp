// DeepSeek-V4 chat encoding against the official encoder's test pairs, and completion parsing.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "core/error.h"
#include "text/chat_encoder.h"
#include "text/chat_parser.h"
#include "text/stream_decoder.h"
#include "text_fixtures.h"

namespace dsv4::text {
namespace {

using ojson = nlohmann::ordered_json;
using testing::fixture_dir;
using testing::read_file;

std::string render_official(int n, thinking_mode mode) {
  const auto request =
      ojson::parse(read_file(fixture_dir() / "chat" / fmt::format("test_input_{}.json", n)));
  chat_options options;
  options.mode = mode;
  return encode_chat(chat_messages_from_request(request), options);
}

std::string official_output(int n) {
  return read_file(fixture_dir() / "chat" / fmt::format("test_output_{}.txt", n));
}

TEST(chat_encoder, official_pair_1_tools_thinking) {
  EXPECT_EQ(render_official(1, thinking_mode::thinking), official_output(1));
}
TEST(chat_encoder, official_pair_2_multi_turn_thinking) {
  EXPECT_EQ(render_official(2, thinking_mode::thinking), official_output(2));
}
TEST(chat_encoder, official_pair_3_developer_tools_reminder_thinking) {
  EXPECT_EQ(render_official(3, thinking_mode::thinking), official_output(3));
}
TEST(chat_encoder, official_pair_4_task_chat) {
  EXPECT_EQ(render_official(4, thinking_mode::chat), official_output(4));
}

ojson simple_conversation() {
  return ojson::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
}

TEST(chat_encoder, generation_prompt_per_mode) {
  chat_options options;
  options.mode = thinking_mode::chat;
  EXPECT_EQ(encode_chat(simple_conversation(), options),
            "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜></think>");
  options.mode = thinking_mode::thinking;
  EXPECT_EQ(encode_chat(simple_conversation(), options),
            "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜><think>");
}

TEST(chat_encoder, reasoning_effort_max_prefixes_first_message_in_thinking_mode) {
  chat_options options;
  options.effort = reasoning_effort::max;
  const std::string prompt = encode_chat(simple_conversation(), options);
  EXPECT_TRUE(prompt.starts_with("<｜begin▁of▁sentence｜>Reasoning Effort: Absolute maximum"));
  EXPECT_TRUE(prompt.ends_with("unchecked.\n\nS<｜User｜>Hi<｜Assistant｜><think>"));
  options.effort = reasoning_effort::high;  // high adds nothing in this release
  EXPECT_EQ(encode_chat(simple_conversation(), options),
            "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜><think>");
  options.effort = reasoning_effort::max;
  options.mode = thinking_mode::chat;  // no effort prefix in chat mode
  EXPECT_EQ(encode_chat(simple_conversation(), options),
            "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜></think>");
}

TEST(chat_encoder, tool_results_follow_call_order_and_non_string_arguments) {
  const auto messages = ojson::parse(R"([
    {"role": "user", "content": "Q"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"n\": 1, \"x\": [1.5, true]}"}},
      {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "b", "content": "B"},
    {"role": "tool", "tool_call_id": "a", "content": "A"},
    {"role": "user", "content": "more"}])");
  chat_options options;
  options.mode = thinking_mode::chat;
  EXPECT_EQ(encode_chat(messages, options),
            "<｜begin▁of▁sentence｜><｜User｜>Q<｜Assistant｜></think>\n\n<｜DSML｜tool_calls>\n"
            "<｜DSML｜invoke name=\"f\">\n"
            "<｜DSML｜parameter name=\"n\" string=\"false\">1</｜DSML｜parameter>\n"
            "<｜DSML｜parameter name=\"x\" string=\"false\">[1.5, true]</｜DSML｜parameter>\n"
            "</｜DSML｜invoke>\n"
            "<｜DSML｜invoke name=\"g\">\n\n</｜DSML｜invoke>\n"
            "</｜DSML｜tool_calls><｜end▁of▁sentence｜>"
            "<｜User｜><tool_result>A</tool_result>\n\n<tool_result>B</tool_result>\n\nmore"
            "<｜Assistant｜></think>");
}

TEST(chat_encoder, request_tools_go_to_a_system_message) {
  const auto request = ojson::parse(R"({"messages": [{"role": "user", "content": "Hi"}],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})");
  const auto messages = chat_messages_from_request(request);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0]["role"], "system");
  EXPECT_EQ(messages[0]["content"], "");
  chat_options options;
  const std::string prompt = encode_chat(messages, options);
  EXPECT_TRUE(prompt.starts_with("<｜begin▁of▁sentence｜>\n\n## Tools\n"));
  EXPECT_NE(prompt.find("{\"name\": \"f\", \"parameters\": {}}\n\nYou MUST"), std::string::npos);
  EXPECT_TRUE(prompt.ends_with("<｜User｜>Hi<｜Assistant｜><think>"));
}

TEST(chat_encoder, bad_messages_throw) {
  chat_options options;
  EXPECT_THROW(encode_chat(ojson::parse(R"({"role": "user"})"), options), dsv4::error);
  EXPECT_THROW(encode_chat(ojson::parse(R"([{"role": "robot", "content": "x"}])"), options),
               dsv4::error);
  EXPECT_THROW(encode_chat(ojson::parse(R"([{"role": "user", "content": 5}])"), options),
               dsv4::error);
  EXPECT_THROW(encode_chat(ojson::parse(R"([{"role": "developer", "content": ""}])"), options),
               dsv4::error);
  EXPECT_THROW(
      encode_chat(ojson::parse(R"([{"role": "user", "content": "x", "task": "nope"}])"), options),
      dsv4::error);
  EXPECT_THROW(parse_thinking_mode("fast"), dsv4::error);
  EXPECT_THROW(parse_reasoning_effort("low!"), dsv4::error);
}

// Random message-shaped JSON (wrong types in every field) must render or throw dsv4::error,
// never another exception or a crash; random completions likewise for the parsers.
TEST(chat_encoder, random_structures_throw_only_dsv4_errors) {
  std::mt19937 rng(7);
  const char* roles[] = {"system",          "user", "assistant", "tool", "developer",
                         "latest_reminder", "x"};
  const char* keys[] = {"content",       "reasoning_content", "tool_calls", "tools",
                        "task",          "response_format",   "wo_eos",     "tool_call_id",
                        "content_blocks"};
  std::function<ojson(int)> random_value = [&](int depth) -> ojson {
    switch (rng() % (depth > 2 ? 5 : 8)) {
      case 0:
        return nullptr;
      case 1:
        return bool(rng() % 2);
      case 2:
        return int(rng() % 100) - 50;
      case 3:
        return "s<think>" + std::to_string(rng() % 10);
      case 4:
        return "action";
      case 5: {
        ojson a = ojson::array();
        for (int i = int(rng() % 3); i > 0; --i) a.push_back(random_value(depth + 1));
        return a;
      }
      default: {
        ojson o = ojson::object();
        for (int i = int(rng() % 4); i > 0; --i)
          o[i % 2 ? keys[rng() % std::size(keys)] : (rng() % 2 ? "function" : "type")] =
              random_value(depth + 1);
        if (rng() % 2) o["role"] = roles[rng() % std::size(roles)];
        return o;
      }
    }
  };
  int rendered = 0;
  for (int round = 0; round < 3000; ++round) {
    ojson messages = ojson::array();
    for (int i = int(rng() % 5); i > 0; --i) {
      ojson m = {{"role", roles[rng() % std::size(roles)]}};
      for (int k = int(rng() % 4); k > 0; --k) m[keys[rng() % std::size(keys)]] = random_value(0);
      messages.push_back(m);
    }
    if (rng() % 10 == 0) messages.push_back(random_value(0));
    chat_options options;
    options.mode = rng() % 2 ? thinking_mode::chat : thinking_mode::thinking;
    try {
      encode_chat(chat_messages_from_request(messages), options);
      ++rendered;
    } catch (const dsv4::error&) {
    }
  }
  EXPECT_GT(rendered, 100);
}

TEST(chat_parser, random_completions_throw_only_dsv4_errors) {
  std::mt19937 rng(8);
  const std::string pieces[] = {"</think>",
                                "<｜end▁of▁sentence｜>",
                                "\n\n<｜DSML｜tool_calls",
                                ">\n",
                                "<｜DSML｜invoke",
                                " name=\"f\">\n",
                                "<｜DSML｜parameter",
                                " name=\"a\" string=\"true\">",
                                "v<",
                                "/｜DSML｜parameter",
                                "</｜DSML｜invoke",
                                "</｜DSML｜tool_calls>",
                                "x",
                                "<"};
  for (int round = 0; round < 5000; ++round) {
    std::string text;
    for (int i = int(rng() % 12); i > 0; --i) text += pieces[rng() % std::size(pieces)];
    const auto mode = rng() % 2 ? thinking_mode::chat : thinking_mode::thinking;
    try {
      parse_completion(text, mode);
    } catch (const dsv4::error&) {
    }
    completion_stream_parser parser(mode);
    try {
      for (std::size_t pos = 0; pos < text.size(); pos += 3) parser.push(text.substr(pos, 3));
      parser.finish();
    } catch (const dsv4::error&) {
    }
  }
}

// The assistant turns of the official outputs are completions the parser must read back.
constexpr std::string_view tool_completion =
    "The user wants to know the weather in Beijing. I should use the get_weather tool.</think>"
    "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
    "<｜DSML｜parameter name=\"location\" string=\"true\">Beijing</｜DSML｜parameter>\n"
    "<｜DSML｜parameter name=\"unit\" string=\"true\">celsius</｜DSML｜parameter>\n"
    "</｜DSML｜invoke>\n</｜DSML｜tool_calls><｜end▁of▁sentence｜>";

TEST(chat_parser, parses_official_tool_call_turn) {
  ASSERT_NE(official_output(1).find(tool_completion), std::string::npos);
  const auto message = parse_completion(tool_completion, thinking_mode::thinking);
  EXPECT_EQ(message.reasoning_content,
            "The user wants to know the weather in Beijing. I should use the get_weather tool.");
  EXPECT_EQ(message.content, "");
  ASSERT_EQ(message.tool_calls.size(), 1u);
  EXPECT_EQ(message.tool_calls[0].name, "get_weather");
  EXPECT_EQ(message.tool_calls[0].arguments, R"({"location": "Beijing", "unit": "celsius"})");
  const auto json = message.to_json();
  EXPECT_EQ(json["tool_calls"][0]["type"], "function");
  EXPECT_EQ(ojson::parse(json["tool_calls"][0]["function"]["arguments"].get<std::string>())["unit"],
            "celsius");
}

TEST(chat_parser, parses_content_and_non_string_parameters) {
  const auto message = parse_completion(
      "think</think>Answer.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n"
      "<｜DSML｜parameter name=\"n\" string=\"false\">[1, {\"a\": 2}]</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"g\">\n\n</｜DSML｜invoke>\n"
      "</｜DSML｜tool_calls><｜end▁of▁sentence｜>",
      thinking_mode::thinking);
  EXPECT_EQ(message.content, "Answer.");
  ASSERT_EQ(message.tool_calls.size(), 2u);
  EXPECT_EQ(message.tool_calls[0].arguments, R"({"n": [1, {"a": 2}]})");
  EXPECT_EQ(message.tool_calls[1].name, "g");
  EXPECT_EQ(message.tool_calls[1].arguments, "{}");
}

TEST(chat_parser, chat_mode_and_errors) {
  EXPECT_EQ(parse_completion("Hi!<｜end▁of▁sentence｜>", thinking_mode::chat).content, "Hi!");
  EXPECT_THROW(parse_completion("Hi!", thinking_mode::chat), dsv4::error);  // no EOS
  EXPECT_THROW(parse_completion("no end of thinking<｜end▁of▁sentence｜>", thinking_mode::thinking),
               dsv4::error);
  EXPECT_THROW(parse_completion("a</think>b<think><｜end▁of▁sentence｜>", thinking_mode::thinking),
               dsv4::error);
  EXPECT_THROW(parse_completion("x</think>\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke nam",
                                thinking_mode::thinking),
               dsv4::error);
}

// Feeding the completion in pieces of every size gives the same message as the batch parser,
// and reasoning/content are never emitted past a marker that later completes.
TEST(chat_parser, streaming_matches_batch_for_every_chunk_size) {
  const std::string texts[] = {std::string(tool_completion),
                               "r1 < r2 </thin</think>Some <｜end content<｜end▁of▁sentence｜>"};
  for (const std::string& text : texts) {
    const auto expected = parse_completion(text, thinking_mode::thinking);
    for (std::size_t chunk = 1; chunk <= text.size(); chunk += (chunk < 8 ? 1 : 7)) {
      completion_stream_parser parser(thinking_mode::thinking);
      chat_message streamed;
      auto collect = [&](const completion_stream_parser::delta& d) {
        streamed.reasoning_content += d.reasoning_content;
        streamed.content += d.content;
        streamed.tool_calls.insert(streamed.tool_calls.end(), d.tool_calls.begin(),
                                   d.tool_calls.end());
      };
      for (std::size_t pos = 0; pos < text.size(); pos += chunk)
        collect(parser.push(std::string_view(text).substr(pos, chunk)));
      collect(parser.finish());
      EXPECT_TRUE(parser.done());
      EXPECT_EQ(streamed.to_json(), expected.to_json()) << "chunk " << chunk;
      EXPECT_EQ(parser.message().to_json(), expected.to_json());
    }
  }
}

// End to end as in serving: completion token ids -> stream_decoder -> completion_stream_parser.
TEST(chat_parser, token_stream_of_official_turn) {
  const auto& tok = testing::v4_tokenizer();
  const auto ids = tok.encode(tool_completion);
  stream_decoder decoder(tok);
  completion_stream_parser parser(thinking_mode::thinking);
  std::string reasoning;
  std::size_t calls = 0;
  for (std::int32_t id : ids) {
    const auto d = parser.push(decoder.push(id));
    reasoning += d.reasoning_content;
    calls += d.tool_calls.size();
  }
  parser.push(decoder.flush());
  parser.finish();
  EXPECT_TRUE(parser.done());
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(reasoning,
            parse_completion(tool_completion, thinking_mode::thinking).reasoning_content);
  EXPECT_EQ(parser.message().to_json(),
            parse_completion(tool_completion, thinking_mode::thinking).to_json());
}

TEST(chat_parser, stream_without_eos_keeps_text) {
  completion_stream_parser parser(thinking_mode::chat);
  auto d = parser.push("partial <｜end");
  EXPECT_EQ(d.content, "partial ");
  d = parser.finish();
  EXPECT_EQ(d.content, "<｜end");
  EXPECT_FALSE(parser.done());
}

}  // namespace
}  // namespace dsv4::text
