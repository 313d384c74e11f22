// dsv4 chat: an interactive terminal chat. Each user line is appended to the history, the whole
// conversation is rendered with the DeepSeek-V4 chat encoder and tokenized with the model folder's
// tokenizer.json, and the reply streams out as it is decoded (reasoning dimmed on a terminal,
// prefixed with "[thinking] " otherwise). Works the same with stdin a pipe, one line per turn.
//
// The KV state of one sequence is kept across turns: when the new prompt starts with exactly the
// tokens already fed, only the rest is prefilled; otherwise (earlier reasoning dropped from the
// prompt, or the reply re-tokenized differently) the sequence is released and re-prefilled.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/error.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "text/chat_encoder.h"
#include "text/chat_format.h"
#include "text/chat_parser.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"
#include "tools/command.h"
#include "tools/runner_flags.h"
#include "tools/sampling_options.h"

namespace dsv4::tools {
namespace {

struct chat_cli_options {
  std::string model;
  std::optional<std::string> system;
  std::string thinking_mode = "chat";  // the official generate.py default
  std::string reasoning_effort;
  int64_t tokens = 1024;
  int64_t max_context = 8192;
  sampling_params sampling;
  std::string device = "cpu";
  bool cuda_graph = true;
  std::string activations = "auto";
  std::string kv_cache_dtype = "auto";
  bool verbose = false;
  bool no_reuse = false;
};

void write(std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

// Shows one streamed reply. Sections change at most twice (reasoning -> content, then tool
// calls), so the printer only tracks which one is open to emit the switch between them.
class reply_printer {
 public:
  explicit reply_printer(bool terminal) : terminal_(terminal) {}

  void show(const text::completion_stream_parser::delta& d) {
    if (!d.reasoning_content.empty()) {
      enter(section::reasoning);
      write(d.reasoning_content);
    }
    if (!d.content.empty()) {
      enter(section::content);
      write(d.content);
    }
    for (const auto& call : d.tool_calls) {
      enter(section::tool_call);
      write(fmt::format("[tool call] {} {}\n", call.name, call.arguments));
    }
    std::fflush(stdout);
  }

  void end() {
    if (terminal_ && section_ == section::reasoning) write("\x1b[0m");
    if (section_ != section::tool_call) write("\n");
    section_ = section::none;
    std::fflush(stdout);
  }

 private:
  enum class section { none, reasoning, content, tool_call };

  void enter(section next) {
    if (next == section_) return;
    if (section_ == section::reasoning) write(terminal_ ? "\x1b[0m\n" : "\n");
    if (section_ == section::content && next == section::tool_call) write("\n");
    if (next == section::reasoning) write(terminal_ ? "\x1b[2m" : "[thinking] ");
    section_ = next;
  }

  bool terminal_;
  section section_ = section::none;
};

text::completion_stream_parser::delta content_delta(std::string content) {
  text::completion_stream_parser::delta d;
  d.content = std::move(content);
  return d;
}

// The reply text after its reasoning: after the first </think> in thinking mode, else all of it.
std::string text_after_reasoning(const std::string& raw, text::thinking_mode mode) {
  if (mode != text::thinking_mode::thinking) return raw;
  const auto end = raw.find(text::chat_format::thinking_end);
  return end == std::string::npos ? std::string()
                                  : raw.substr(end + text::chat_format::thinking_end.size());
}

class chat_session {
 public:
  chat_session(const chat_cli_options& o, text::tokenizer tok, std::unique_ptr<model_runner> runner)
      : options_(o),
        tokenizer_(std::move(tok)),
        runner_(std::move(runner)),
        sampler_(o.sampling),
        terminal_out_(::isatty(STDOUT_FILENO) != 0) {
    encoder_options_.mode = text::parse_thinking_mode(o.thinking_mode);
    encoder_options_.effort = text::parse_reasoning_effort(o.reasoning_effort);
    // Stop at the model's EOS and at the tokenizer's EOS text, in case the two disagree.
    eos_ids_.push_back(runner_->config().eos_token_id);
    if (auto id = tokenizer_.token_id(text::chat_format::eos)) eos_ids_.push_back(*id);
    reset();
  }

  void reset() {
    messages_ = nlohmann::ordered_json::array();
    if (options_.system) messages_.push_back({{"role", "system"}, {"content", *options_.system}});
    drop_sequence();
  }

  // One user turn: render, prefill what the cache lacks, stream the reply, keep it in the
  // history. On an error the user message is taken back so the history stays well formed.
  void turn(const std::string& user_text) {
    messages_.push_back({{"role", "user"}, {"content", user_text}});
    try {
      generate_reply();
    } catch (...) {
      messages_.erase(messages_.size() - 1);
      throw;
    }
  }

 private:
  void drop_sequence() {
    if (seq_ >= 0) runner_->release_sequence(seq_);
    seq_ = -1;
    fed_.clear();
  }

  void generate_reply() {
    const std::string prompt_text = text::encode_chat(messages_, encoder_options_);
    const std::vector<int32_t> prompt = tokenizer_.encode(prompt_text);
    DSV4_CHECK(int64_t(prompt.size()) < options_.max_context,
               "the conversation is {} tokens, --max-context is {}; /reset starts over",
               prompt.size(), options_.max_context);
    const model_config& cfg = runner_->config();
    for (int32_t id : prompt)
      DSV4_CHECK(id < cfg.vocab_size, "prompt token id {} is outside the model's vocab (0..{})", id,
                 cfg.vocab_size - 1);

    std::vector<int32_t> next;
    if (!options_.no_reuse && seq_ >= 0 && prompt.size() > fed_.size() &&
        std::equal(fed_.begin(), fed_.end(), prompt.begin())) {
      next.assign(prompt.begin() + std::ptrdiff_t(fed_.size()), prompt.end());
    } else {
      drop_sequence();
      seq_ = runner_->add_sequence();
      next = prompt;
    }
    const std::size_t reused = fed_.size();
    const auto start = std::chrono::steady_clock::now();
    int64_t generated = 0;

    text::stream_decoder decoder(tokenizer_, /*skip_special_tokens=*/true);
    text::completion_stream_parser parser(encoder_options_.mode);
    reply_printer printer(terminal_out_);
    std::string raw;            // the reply text, for the fallback when parsing fails
    bool parse_failed = false;  // then the rest of the reply is shown and kept as content
    text::chat_message fallback;
    auto feed_text = [&](const std::string& piece) {
      raw += piece;
      if (parse_failed) {
        fallback.content += piece;
        printer.show(content_delta(piece));
        return;
      }
      try {
        printer.show(parser.push(piece));
      } catch (const error& e) {
        // Malformed DSML from the model is not the user's fault: keep chatting with the text.
        std::fprintf(stderr, "\ndsv4: note: reply not in the chat format (%s); shown as text\n",
                     e.what());
        parse_failed = true;
        fallback.reasoning_content = parser.message().reasoning_content;
        fallback.content = text_after_reasoning(raw, encoder_options_.mode);
        // Show only what the parser has not shown as content already.
        const std::string& shown = parser.message().content;
        printer.show(content_delta(fallback.content.starts_with(shown)
                                       ? fallback.content.substr(shown.size())
                                       : fallback.content));
      }
    };

    try {
      for (int64_t i = 0; i < options_.tokens; ++i) {
        if (int64_t(fed_.size() + next.size()) > options_.max_context) {
          std::fprintf(stderr, "\ndsv4: note: --max-context %lld reached; /reset starts over\n",
                       static_cast<long long>(options_.max_context));
          break;
        }
        tensor logits = runner_->step({sequence_chunk{seq_, next, false}});
        fed_.insert(fed_.end(), next.begin(), next.end());
        const int32_t id = sampler_.sample(logits.data<float>(), cfg.vocab_size);
        if (std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end()) break;
        // An id the tokenizer does not know (random test models) is shown, not fatal.
        feed_text(tokenizer_.contains(id) ? decoder.push(id) : fmt::format("<id {}>", id));
        next = {id};
        ++generated;
      }
    } catch (...) {
      // A failed step may leave the cache half written: start the next turn from scratch.
      drop_sequence();
      throw;
    }
    feed_text(decoder.flush());
    text::chat_message reply;
    if (parse_failed) {
      reply = fallback;
    } else {
      try {
        printer.show(parser.finish());
        reply = parser.message();
      } catch (const error& e) {
        std::fprintf(stderr, "\ndsv4: note: reply not in the chat format (%s)\n", e.what());
        reply = parser.message();
      }
    }
    printer.end();
    messages_.push_back(reply.to_json());
    if (options_.verbose) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr,
                   "dsv4: turn: prompt %zu tokens (%zu reused from the cache), %lld generated, "
                   "%.3f s\n",
                   prompt.size(), reused, static_cast<long long>(generated), seconds);
    }
  }

  const chat_cli_options& options_;
  text::chat_options encoder_options_;
  text::tokenizer tokenizer_;
  std::unique_ptr<model_runner> runner_;
  sampler sampler_;
  bool terminal_out_;
  std::vector<int32_t> eos_ids_;
  nlohmann::ordered_json messages_;
  int seq_ = -1;
  std::vector<int32_t> fed_;  // tokens whose KV state the sequence holds
};

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

int run_chat(const chat_cli_options& o) {
  sampler::validate(o.sampling);
  DSV4_CHECK(o.tokens >= 0, "-n must be >= 0, got {}", o.tokens);
  DSV4_CHECK(o.max_context > 0, "--max-context must be > 0, got {}", o.max_context);
  // Check the options the encoder reads before the (slow) model load.
  text::parse_thinking_mode(o.thinking_mode);
  text::parse_reasoning_effort(o.reasoning_effort);
  const auto tokenizer_path = std::filesystem::path(o.model) / "tokenizer.json";
  DSV4_CHECK(std::filesystem::exists(tokenizer_path),
             "chat needs the model folder's tokenizer: {} does not exist", tokenizer_path.string());
  auto tok = text::tokenizer::load(tokenizer_path);

  runner_options ro;
  ro.device = o.device;
  ro.cuda_graph = o.cuda_graph;
  if (o.activations != "auto") ro.activations = o.activations;
  ro.cache.kv_dtype = parse_kv_cache_dtype(o.kv_cache_dtype);
  ro.cache.max_sequences = 1;
  ro.cache.max_context = o.max_context;
  auto runner = model_runner::load(o.model, ro);
  if (const size_t bytes = backend_memory_bytes(runner->backend()))
    std::fprintf(stderr, "dsv4: %s: %.3f GiB of device memory after load\n", o.device.c_str(),
                 double(bytes) / double(1ull << 30));

  chat_session session(o, std::move(tok), std::move(runner));
  const bool interactive = ::isatty(STDIN_FILENO) != 0;
  if (interactive)
    std::fprintf(stderr, "dsv4 chat: /reset clears the history, /exit or end of input quits\n");
  int status = 0;
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    const std::string command = trim(line);
    if (command.empty()) continue;
    if (command == "/exit") break;
    if (command == "/reset") {
      session.reset();
      if (interactive) std::fprintf(stderr, "(history cleared)\n");
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    try {
      session.turn(line);
    } catch (const error& e) {
      // One bad turn (too long, a malformed line) should not end the conversation.
      std::fflush(stdout);
      std::fprintf(stderr, "dsv4: error: %s\n", e.what());
      status = 1;
    }
  }
  if (interactive) std::fputs("\n", stdout);
  return status;
}

const command_registration registration(
    "chat", "Interactive chat with streaming output (stdin lines are user turns)",
    [](CLI::App& sub) {
      auto o = std::make_shared<chat_cli_options>();
      sub.add_option("--model", o->model, "Model directory (with tokenizer.json)")->required();
      sub.add_option("--system", o->system, "System prompt");
      sub.add_option("--thinking-mode", o->thinking_mode, "chat or thinking")
          ->capture_default_str();
      sub.add_option("--reasoning-effort", o->reasoning_effort, "high or max (thinking mode)");
      sub.add_option("-n,--max-tokens", o->tokens, "Most tokens per reply")->capture_default_str();
      sub.add_option("--max-context", o->max_context, "Most tokens of the whole conversation")
          ->capture_default_str();
      add_sampling_options(sub, o->sampling);
      sub.add_option("--device", o->device, "cpu");
      add_cuda_graph_option(sub, o->cuda_graph);
      add_activations_option(sub, o->activations);
      add_kv_cache_dtype_option(sub, o->kv_cache_dtype);
      sub.add_flag("-v,--verbose", o->verbose, "Per turn: prompt tokens, cache reuse, timing");
      sub.add_flag("--no-reuse", o->no_reuse,
                   "Re-prefill the whole conversation every turn (to check the cache reuse)");
      return [o] { return run_chat(*o); };
    });

}  // namespace
}  // namespace dsv4::tools
